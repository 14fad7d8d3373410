package refharness

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: tool events, transports and the agent card's
// interfaces.
var (
	FaultToolResultUnpaired = declare(fault.Fault{Name: "tool-result-unpaired",
		Doc:   "agent.tool_result names a tool call id other than its agent.tool_use's",
		Warns: []string{"EXT-EVENT-002"}})
	FaultSpanUncorrelated = declare(fault.Fault{Name: "span-uncorrelated",
		Doc:   "a tool call's span events share no correlation id with its tool events (a MAY's condition)",
		Warns: []string{"EXT-EVENT-003"}})
	FaultInputRefusedWhileStreaming = declare(fault.Fault{Name: "input-refused-while-streaming",
		Doc:   "while a task's SSE stream is open, REST input and cancel for it are refused 423 resource_locked",
		Fails: []string{"EXT-TRANSPORT-003"}})
	FaultCardAdvertisesWebSocket = declare(fault.Fault{Name: "card-advertises-websocket",
		Doc:   "the agent card lists a websocket interface on the global feed /v1/events/stream, which serves no WebSocket",
		Fails: []string{"EXT-TRANSPORT-002"}})
)

// Tool events seen three ways (issue 10, EXT-EVENT-002 and EXT-EVENT-003).
// The spec's taxonomy has the agent's view of a tool call (agent.tool_use,
// agent.tool_result, aligned with provider tool-use shapes), the user-facing
// tool.* events, and span.* events for timing; a server may emit all of them
// for one action if they share correlation ids. The scenario steps emit the
// tool.* events; expandToolEventsLocked derives the other two views from
// them in the same commit, so every step that calls a tool (tool_approval,
// tool_call, use_secret, use_vault_secret) shows all three alike:
//
//   - before tool.requested: agent.tool_use {tool_call_id, name, input} and
//     span.started {tool_call_id, name};
//   - after tool.completed, tool.failed or tool.denied: agent.tool_result
//     {tool_call_id, output, status} and span.completed or span.failed.
//
// Every one of these events carries the call's trace_id and span_id (the
// tool.* events too), and the span's payload names the tool_call_id.

// expandToolEventsLocked rewrites c.Events with the derived tool events.
// The commit is new (commitLocked runs it before ids are assigned), so its
// events may still change.
func (s *Server) expandToolEventsLocked(c *commit) {
	if !slices.ContainsFunc(c.Events, func(e *Event) bool { return strings.HasPrefix(e.Event, "tool.") }) {
		return
	}
	out := make([]*Event, 0, len(c.Events)+4)
	for _, e := range c.Events {
		id, _ := e.Payload["tool_call_id"].(string)
		// A replayed tool event (replay_run.go) comes with its replayed
		// views already: the source's were replayed beside it.
		if !strings.HasPrefix(e.Event, "tool.") || id == "" || e.Replay != nil {
			out = append(out, e)
			continue
		}
		trace, span := "trace_"+id, "span_"+id
		e.TraceID, e.SpanID = ptr(trace), ptr(span)
		derive := func(kind string, payload map[string]any) *Event {
			d := &Event{Envelope: e.Envelope, Event: kind, Resource: e.Resource, Payload: payload, SessionID: e.SessionID,
				TaskID: e.TaskID, WorkspaceID: e.WorkspaceID, Actor: e.Actor, TraceID: ptr(trace), SpanID: ptr(span)}
			d.Metadata = map[string]any{}
			return d
		}
		name := e.Payload["name"]
		spanPayload := map[string]any{"tool_call_id": id, "name": name, "kind": "tool"}
		if s.opts.Faults.Has(FaultSpanUncorrelated) {
			// The bug: the span is minted on its own, sharing no id with the call.
			spanPayload = map[string]any{"name": name, "kind": "tool"}
		}
		spanEv := func(kind string) *Event {
			d := derive(kind, spanPayload)
			if s.opts.Faults.Has(FaultSpanUncorrelated) {
				d.TraceID, d.SpanID = ptr("trace_unrelated_"+id), ptr("span_unrelated_"+id)
			}
			return d
		}
		switch e.Event {
		case "tool.requested":
			out = append(out, derive("agent.tool_use", map[string]any{"tool_call_id": id, "name": name, "input": e.Payload["input"]}), spanEv("span.started"), e)
		case "tool.completed", "tool.failed", "tool.denied":
			status := map[string]string{"tool.completed": "ok", "tool.failed": "error", "tool.denied": "denied"}[e.Event]
			resultID := id
			if s.opts.Faults.Has(FaultToolResultUnpaired) {
				resultID = "unpaired_" + id
			}
			spanKind := "span.completed"
			if e.Event != "tool.completed" {
				spanKind = "span.failed"
			}
			result := map[string]any{"tool_call_id": resultID, "output": e.Payload["output"], "status": status}
			if k, ok := e.Payload["override_key"]; ok {
				// The result carries the dependency the call recorded
				// (a replay step's, replay_steps.go): a replay substitutes
				// its output too.
				result["override_key"] = k
			}
			out = append(out, e, derive("agent.tool_result", result), spanEv(spanKind))
		default:
			out = append(out, e)
		}
	}
	c.Events = out
}

// streamOpened counts an open SSE stream of task id (for
// FaultInputRefusedWhileStreaming) and returns its closer.
func (s *Server) streamOpened(id string) func() {
	if !s.opts.Faults.Has(FaultInputRefusedWhileStreaming) {
		return func() {}
	}
	s.mu.Lock()
	s.st.pr.streams[id]++
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		if s.st.pr.streams[id]--; s.st.pr.streams[id] <= 0 {
			delete(s.st.pr.streams, id)
		}
		s.mu.Unlock()
	}
}

// gateWrite runs write rt under the lock (s.mu is held), except that
// FaultInputRefusedWhileStreaming refuses a task's input and cancel while
// a stream of the task is open: the bug of a server that takes an open
// SSE stream for the task's input channel (EXT-TRANSPORT-003).
func (s *Server) gateWrite(c *call, rt route) (*result, *apiError) {
	w := rt.method + " " + rt.pattern
	if s.opts.Faults.Has(FaultInputRefusedWhileStreaming) && (w == "POST tasks/{}/messages" || w == "POST tasks/{}/cancel") && s.st.pr.streams[c.params[0]] > 0 {
		return nil, &apiError{Status: http.StatusLocked, Code: "resource_locked",
			Message: "task " + c.params[0] + " is attached to an open event stream; send input over the stream"}
	}
	return rt.write(c)
}

// cardInterfaces are the transports the agent card advertises: REST and
// SSE, the ones the Harness serves at one URL each (EXT-TRANSPORT-002).
// WebSocket, when mounted, is claimed by discovery's
// capabilities.websocket instead: its URLs are the per-resource stream
// paths, which no single interface URL names.
func (s *Server) cardInterfaces(base string) []any {
	its := []any{
		map[string]any{"transport": "rest", "url": base + "/v1"},
		map[string]any{"transport": "sse", "url": base + "/v1/events/stream"},
	}
	if s.opts.Faults.Has(FaultCardAdvertisesWebSocket) {
		// The bug: a transport advertised where nothing serves it. The
		// global feed serves no WebSocket, whether or not the WebSocket
		// adapter is mounted on the per-resource stream paths (core.go).
		its = append(its, map[string]any{"transport": "websocket", "url": strings.Replace(base, "http", "ws", 1) + "/v1/events/stream"})
	}
	if s.opts.Faults.Has(FaultWSAdvertisesPlainRemote) {
		// The bug (EXT-WS-002): a plain ws:// URL for a host that is no
		// loopback address, so a client would send its credential in the
		// clear. The card otherwise advertises no websocket interface:
		// the profile's URLs are per resource, and discovery's
		// capabilities.websocket claims them (docs/websocket.md 1.1).
		prefix := ""
		if u, err := url.Parse(base); err == nil {
			prefix = u.Path
		}
		its = append(its, map[string]any{"transport": "websocket", "url": "ws://harness.example.com" + prefix + "/v1/sessions/{session_id}/events/stream"})
	}
	return its
}
