package refharness

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/jsonv"
	rq "github.com/harn-conform/conform/internal/replay"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: replay override keys.
var (
	FaultReplayKeysUnstable = declare(fault.Fault{Name: "replay-keys-unstable",
		Doc:   "model call override keys embed the task id (llm:<task id>:<call_id>): they differ per run",
		Warns: []string{"RPLY-OVERRIDE-002"}})
	FaultReplayKeysNonstandard = declare(fault.Fault{Name: "replay-keys-nonstandard",
		Doc:   "model call override keys are model:<call_id> instead of llm:<call_id>",
		Warns: []string{"RPLY-OVERRIDE-003"}})
)

// The replay steps of the scenario contract (docs/scenarios.md, "Replay
// steps: recorded dependencies"): each reads one nondeterministic input
// the scenario fixes, emits the events that record it (each carrying its
// override key in payload.override_key) and, in the same commit, the
// dependency record a replay reads.

// dependencyStep runs one replay step of task id.
func (s *Server) dependencyStep(ctx context.Context, id string, st scenario.Step) bool {
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	key, kind := st.Key()
	if st.Op == scenario.OpModelCall {
		switch {
		case s.opts.Faults.Has(FaultReplayKeysUnstable):
			key = "llm:" + id + ":" + st.CallID // the fault: a key no other run shares
		case s.opts.Faults.Has(FaultReplayKeysNonstandard):
			key = "model:" + st.CallID // the fault: not the recommended form
		}
	}
	dep := &depRecord{TaskID: id, Key: key, Op: string(st.Op), Kind: kind, Retained: st.Retained(), AtMs: s.clock().UnixMilli()}
	ev := func(kind string, p map[string]any) *Event {
		return s.newEvent(kind, Pointer{"task", id}, p, t.WorkspaceID, t.SessionID, id, agentActor)
	}
	cm := &commit{}
	var err error
	switch st.Op {
	case scenario.OpClockRead:
		source := st.Source
		if source == "" {
			source = "wall"
		}
		v := *st.ValueMS
		dep.Source = source
		if dep.Value, err = jcs.Transform([]byte(strconv.FormatInt(v, 10))); err != nil {
			break
		}
		cm.Events = append(cm.Events, ev("span.completed", map[string]any{"name": "clock_read", "label": st.Label, "value_ms": v,
			"source": source, "override_key": key}))
	case scenario.OpModelCall:
		request := st.Request
		if request == nil {
			request = json.RawMessage(`{}`)
		}
		if dep.Request, err = jcs.Transform(request); err == nil {
			dep.Value, err = jcs.Transform(st.Response)
		}
		if err != nil {
			break
		}
		var ok bool
		cm, ok = s.agentMessageLocked(t, []map[string]any{{"type": "text", "text": assistantText(dep.Value), "visibility": "public"}},
			map[string]any{"text": assistantText(dep.Value), "call_id": st.CallID, "override_key": key})
		if !ok {
			s.mu.Unlock()
			return false
		}
	case scenario.OpMCPCall:
		tool := st.Tool
		if tool == "" {
			tool = "search"
		}
		args := st.Arguments
		if args == nil {
			args = json.RawMessage(`{}`)
		}
		req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": st.CallID, "method": "tools/call",
			"params": map[string]any{"name": tool, "arguments": args}})
		if dep.Request, err = jcs.Transform(req); err == nil {
			dep.Value, err = jcs.Transform(st.Result)
		}
		if err != nil {
			break
		}
		dep.Server, dep.Tool = st.Server, tool
		cm.Events = append(cm.Events,
			ev("agent.mcp_tool_use", map[string]any{"server": st.Server, "tool_call_id": st.CallID, "name": tool, "input": decodeJSON(args), "override_key": key}),
			ev("agent.tool_result", map[string]any{"tool_call_id": st.CallID, "output": decodeJSON(dep.Value), "status": "ok", "override_key": key}))
	case scenario.OpHostFact:
		program, args := st.Program, st.Args
		if program == "" {
			program = "git"
		}
		if args == nil {
			args = []string{"rev-parse", "HEAD"}
		}
		value, _ := json.Marshal(*st.Value)
		if dep.Value, err = jcs.Transform(value); err != nil {
			break
		}
		dep.Program, dep.Args, dep.Cwd = program, args, workspaceRoot(s, t.WorkspaceID)
		cm.Events = append(cm.Events,
			ev("tool.requested", map[string]any{"tool_call_id": st.CallID, "name": st.Capability}),
			ev("tool.completed", map[string]any{"tool_call_id": st.CallID, "name": st.Capability, "output": *st.Value, "status": "ok", "override_key": key}))
	case scenario.OpSecretRead:
		// The secret is a canary: only its hash is kept and shown.
		dep.SHA256 = rq.BytesHash([]byte(st.Secret))
		call := s.freshID("toolcall")
		name := "secret:" + st.Name
		cm.Events = append(cm.Events,
			ev("tool.requested", map[string]any{"tool_call_id": call, "name": name, "sha256": dep.SHA256, "override_key": key}),
			ev("tool.completed", map[string]any{"tool_call_id": call, "name": name, "output": "[REDACTED]", "status": "ok", "sha256": dep.SHA256, "override_key": key}))
	case scenario.OpMemoryRead:
		p := s.memoryReadLocked(t.WorkspaceID, nil, false)
		p["call_id"] = st.CallID
		cm.Events = append(cm.Events, ev("agent.memory_read", p))
	case scenario.OpCheckpoint:
		cm.Events = append(cm.Events, ev("agent.checkpoint", map[string]any{"checkpoint_id": st.CheckpointID}))
	}
	if err != nil {
		// The values were validated at submit and are JSON; a failure here
		// is a bug, and the worker stops rather than record nonsense.
		s.mu.Unlock()
		return false
	}
	if key != "" {
		if dep.SHA256 == "" {
			dep.SHA256 = rq.BytesHash(dep.Value) // Value is RFC 8785 already
		}
		cm.Deps = append(cm.Deps, dep)
	}
	return s.commitAndWait(cm)
}

// assistantText is the agent's output of a model response (RFC 8785
// bytes): choices[0].message.content when that is a string, else the
// response itself.
func assistantText(resp []byte) string {
	var r struct {
		Choices []struct {
			Message struct {
				Content any `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if json.Unmarshal(resp, &r) == nil && len(r.Choices) > 0 {
		if s, ok := r.Choices[0].Message.Content.(string); ok {
			return s
		}
	}
	return string(resp)
}

// decodeJSON decodes JSON bytes for an event payload, numbers kept exact
// (as the journal's replay decodes them).
func decodeJSON(b []byte) any {
	v, _ := jsonv.Decode(b) // nil when b is not JSON
	return v
}

func workspaceRoot(s *Server, id string) string {
	if w, ok := s.st.workspaces.get(id); ok {
		return w.Root
	}
	return ""
}

// memoryReadLocked is the payload of a memory_read: every Memory of
// workspace ws as it is now, in memory_id order, each with the SHA-256 of
// its content's RFC 8785 bytes, and their contents joined. With recorded
// set (a replay under a fault), the recorded ids are read as they are now
// (refresh) and, with add, memories not recorded are brought in too.
func (s *Server) memoryReadLocked(ws string, recorded []string, add bool) map[string]any {
	var ms []*Memory
	for _, r := range s.st.mg.memories.order {
		m := r.v
		if r.deleted || s.memoryWorkspace(m) != ws {
			continue
		}
		if recorded != nil && !add && !slices.Contains(recorded, m.ID) {
			continue
		}
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b *Memory) int { return strings.Compare(a.ID, b.ID) })
	list, texts := []any{}, []string{}
	for _, m := range ms {
		list = append(list, map[string]any{"memory_id": m.ID, "sha256": jsonProof(m.Content)})
		texts = append(texts, memoryText(m.Content))
	}
	return map[string]any{"memories": list, "text": strings.Join(texts, "\n")}
}

func memoryText(content any) string {
	if s, ok := content.(string); ok {
		return s
	}
	b, err := json.Marshal(content)
	if err != nil {
		return ""
	}
	if c, err := jcs.Transform(b); err == nil {
		return string(c)
	}
	return string(b)
}
