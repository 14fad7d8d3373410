package extended

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// Events (EXT-EVENT-001..003), transports (EXT-TRANSPORT-002, -003; REST
// and SSE, WebSocket only as far as an advertised interface must open a
// harn-ws.v1 session: the profile itself is websocket*.go's) and the later
// OpenAPI revision's local-server routes (EXT-LOCAL-001).

const (
	reqVendorEvents = "EXT-EVENT-001"     // SHOULD: a kind outside the taxonomy has a reverse-DNS or vendor. prefix
	reqToolShape    = "EXT-EVENT-002"     // SHOULD: tool uses and results carry and pair tool call ids
	reqSpanTool     = "EXT-EVENT-003"     // MAY: span.* and tool.* of one action share correlation ids
	reqAdvertised   = "EXT-TRANSPORT-002" // an advertised transport is implemented
	reqSSEOneWay    = "EXT-TRANSPORT-003" // input, approval and cancel over REST while a stream is open
	reqLocal        = "EXT-LOCAL-001"     // a served local-server route answers as documented
)

// taxonomy is every event kind the spec's Event taxonomy names.
var taxonomy = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`user.message user.input_submitted user.tool_confirmation user.cancel_requested
		agent.message agent.reasoning_summary agent.tool_use agent.tool_result agent.mcp_tool_use agent.handoff agent.memory_read agent.memory_write
		task.submitted task.started task.input_required task.auth_required task.completed task.failed task.canceled task.status_changed
		session.created session.closed session.message_appended session.compacted session.truncated session.thread_forked session.thread_merged session.replayed
		branch.created branch.updated branch.merged branch.abandoned
		artifact.created artifact.updated artifact.linked artifact.redacted
		span.started span.updated span.completed span.failed tool.requested tool.approval_required tool.approved tool.denied tool.completed tool.failed
		connector.delivery_received connector.delivery_deduped connector.normalized connector.task_submitted connector.failed
		receipt.issued receipt.verified receipt.verification_failed replay.started replay.event_replayed replay.completed replay.failed`) {
		taxonomy[k] = true
	}
}

// reverseDNS is a reverse-DNS name of at least three labels (com.example.x).
var reverseDNS = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[A-Za-z0-9_-]+){2,}$`)

// vendorNamed reports whether kind, outside the taxonomy, is named as the
// spec asks of vendor events: a vendor. prefix, or a reverse-DNS name whose
// first label is not one of the taxonomy's groups (task.x.y is not one).
func vendorNamed(kind string) bool {
	if strings.HasPrefix(kind, "vendor.") && len(kind) > len("vendor.") {
		return true
	}
	group, _, _ := strings.Cut(kind, ".")
	for k := range taxonomy {
		if strings.HasPrefix(k, group+".") {
			return false
		}
	}
	return reverseDNS.MatchString(kind)
}

// xRawEvents reads every event of task id as JSON objects (for members
// check.Event does not keep: trace_id, span_id).
func xRawEvents(ctx context.Context, id string) []map[string]any {
	GinkgoHelper()
	return xPrereqList(ctx, "reading the task's events (GET /v1/tasks/{id}/events)", "CORE-EVT-001", "/v1/tasks/"+client.Seg(id)+"/events", nil)
}

func xPayload(e map[string]any) map[string]any { p, _ := e["payload"].(map[string]any); return p }

// xToolTask runs a task with an approved tool_approval step (the hook) and
// returns its events.
func xToolTask(ctx context.Context, sess string) (string, []map[string]any) {
	GinkgoHelper()
	id := xSubmit(ctx, sess, nil, xStep("tool_approval", "tool", "conform.noop", "input", map[string]any{"path": "conform.txt"}))
	if _, ok := xAwaitStatus(ctx, id, check.AuthRequired); ok {
		xTaskInput(ctx, id, "tool_confirmation", xDecision("approve"), suite.SpecReqs()[0])
	}
	xTerminal(ctx, id)
	return id, xRawEvents(ctx, id)
}

var _ = Describe("Event naming and tool events", func() {
	It("names every event kind outside the taxonomy with a reverse-DNS or vendor. prefix", suite.Req(reqVendorEvents), func(ctx SpecContext) {
		ws := xID(xSetup(ctx, "creating a Workspace (POST /v1/workspaces)", reqWorkspace, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
			Body: map[string]any{"name": suite.Key("conform-events"), "root": "conform://events"}}))
		sess := xID(xSession(ctx, ws, ""))
		xTerminal(ctx, xSubmit(ctx, sess, nil))
		if suite.Env().Discovery.Scenarios() != "" {
			xToolTask(ctx, sess)
		}
		// A local-server file write, where offered, is the Harness's own
		// activity beside the agent's.
		suite.Do(ctx, client.Request{Method: http.MethodPut, Path: "/v1/workspaces/" + client.Seg(ws) + "/files", Query: url.Values{"path": {"conform-events.txt"}},
			Body: map[string]any{"content": "conform"}}, reqVendorEvents)
		evs := xPrereqList(ctx, "reading the workspace's events (GET /v1/events?workspace_id=)", "CORE-EVT-001", "/v1/events", url.Values{"workspace_id": {ws}})
		seen, bad := map[string]bool{}, []string{}
		for _, e := range evs {
			k, _ := e["event"].(string)
			if taxonomy[k] || seen[k] {
				continue
			}
			seen[k] = true
			if !vendorNamed(k) {
				bad = append(bad, k)
			}
		}
		if len(seen) == 0 {
			suite.NotApplicableTo(reqVendorEvents, fmt.Sprintf("the %d events of workspace %s are all of the spec's taxonomy: the target added no vendor event to name", len(evs), ws))
			return
		}
		if len(bad) > 0 {
			suite.Should(reqVendorEvents, fmt.Errorf("GET /v1/events?workspace_id=%s: event kinds outside the spec's taxonomy without a reverse-DNS (com.example.x) or vendor. prefix: %v", ws, bad))
		}
	})

	It("gives tool uses and results tool call ids that pair up, and correlates span and tool events of one action", suite.Req(reqToolShape, reqSpanTool), func(ctx SpecContext) {
		xHook("no task can be made to call a tool")
		id, evs := xToolTask(ctx, xID(xSession(ctx, xWorkspace(ctx), "")))
		suite.Should(reqToolShape, toolPairing(id, evs))
		judgeSpans(id, evs)
	})
})

// toolPairing judges the tool events of task id: every use (agent.tool_use,
// tool.requested) names a tool call id, its name and an input object, and
// every later tool event and agent.tool_result names the id of a use.
func toolPairing(id string, evs []map[string]any) error {
	uses := map[string]bool{}
	var errs []string
	n := 0
	for _, e := range evs {
		k, _ := e["event"].(string)
		if !strings.HasPrefix(k, "tool.") && k != "agent.tool_use" && k != "agent.tool_result" {
			continue
		}
		n++
		p := xPayload(e)
		call, _ := p["tool_call_id"].(string)
		switch k {
		case "agent.tool_use", "tool.requested":
			_, isObj := p["input"].(map[string]any)
			if name, _ := p["name"].(string); call == "" || name == "" || !isObj {
				errs = append(errs, fmt.Sprintf("%s %v: tool_call_id %v, name %v, input %v: want a tool call id, the tool's name and its input object", k, e["id"], p["tool_call_id"], p["name"], p["input"]))
			}
			if call != "" {
				uses[call] = true
			}
		default:
			if !uses[call] {
				errs = append(errs, fmt.Sprintf("%s %v names tool_call_id %v, which no earlier agent.tool_use or tool.requested named", k, e["id"], p["tool_call_id"]))
			}
		}
	}
	if n == 0 {
		return fmt.Errorf("task %s called a tool (the tool_approval step) and emitted no tool event", id)
	}
	if len(errs) > 0 {
		return fmt.Errorf("task %s: %s", id, strings.Join(errs, "; "))
	}
	return nil
}

// judgeSpans judges EXT-EVENT-003 on task id's events: where span.* and
// tool.* events are both emitted, a span about a tool (payload naming a
// tool call, a tool kind or a called tool's name) shares an id with the
// tool's events: its span_id, or its payload's tool_call_id.
func judgeSpans(id string, evs []map[string]any) {
	calls, spans, names := map[string]bool{}, map[string]bool{}, map[string]bool{}
	var spanEvs []map[string]any
	for _, e := range evs {
		k, _ := e["event"].(string)
		switch {
		case strings.HasPrefix(k, "tool.") || strings.HasPrefix(k, "agent.tool_"):
			if c, _ := xPayload(e)["tool_call_id"].(string); c != "" {
				calls[c] = true
			}
			if s, _ := e["span_id"].(string); s != "" {
				spans[s] = true
			}
			if n, _ := xPayload(e)["name"].(string); n != "" {
				names[n] = true
			}
		case strings.HasPrefix(k, "span."):
			spanEvs = append(spanEvs, e)
		}
	}
	if len(spanEvs) == 0 || len(calls) == 0 {
		suite.NotApplicableTo(reqSpanTool, fmt.Sprintf("task %s emitted %d span events beside its tool events: the target does not emit both for one action", id, len(spanEvs)))
		return
	}
	var bad []string
	judged := 0
	for _, e := range spanEvs {
		p := xPayload(e)
		c, _ := p["tool_call_id"].(string)
		n, _ := p["name"].(string)
		if c == "" && p["kind"] != "tool" && !names[n] {
			continue // a span of something else (a model call, a step)
		}
		judged++
		if s, _ := e["span_id"].(string); !(s != "" && spans[s]) && !calls[c] {
			bad = append(bad, fmt.Sprintf("%v %v (span_id %v, payload %v)", e["event"], e["id"], e["span_id"], p))
		}
	}
	if judged == 0 {
		suite.NotApplicableTo(reqSpanTool, fmt.Sprintf("none of task %s's %d span events is about its tool call", id, len(spanEvs)))
		return
	}
	if len(bad) > 0 {
		suite.Should(reqSpanTool, fmt.Errorf("task %s emits span and tool events for its tool call, but these spans share no correlation id (span_id, tool_call_id) with the tool events %v: %s", id, slices.Sorted(maps.Keys(calls)), strings.Join(bad, "; ")))
	}
}

// ---- transports ----

// streamTransport is a transport that pushes a Session's or Task's Events
// beside REST, as the transport specs use it: EXT-TRANSPORT-002 opens each
// one advertised (works), parity observes a run through each
// (EXT-TRANSPORT-004, open: its client.Feed). The specs of the transport's
// own profile are files of their own (the core suite's streaming.go,
// websocket*.go here).
type streamTransport struct {
	name  string // the capability and card transport that advertise it (client.Transport*)
	label string // how a view names it: "SSE GET /v1/tasks/t1/stream"
	// blocked says why the suite may not open it on this target ("" when
	// it may); nil when nothing can.
	blocked func() string
	// works opens path and wants it to deliver (EXT-TRANSPORT-002).
	works func(ctx context.Context, path string) error
	// open opens a feed of path for a parity run, or says in f why there
	// is none (broken, or left out).
	open func(ctx context.Context, r *parityRun, path string, f *pFeed) client.Feed
}

// streamTransports are the stream transports, in the order the specs
// judge them. A new transport is one more entry (docs/architecture.md,
// "Recipe: a new transport").
var streamTransports = []streamTransport{
	{name: client.TransportSSE, label: "SSE", works: sseWorks, open: parOpenSSE},
	{name: client.TransportWebSocket, label: "WebSocket", blocked: wsBlocked, works: upgrades, open: parOpenWS},
}

// transportNames are "rest" and the stream transports' names.
func transportNames() []string {
	names := []string{"rest"}
	for _, t := range streamTransports {
		names = append(names, t.name)
	}
	return names
}

// advertised lists the transports the target advertises: discovery's
// capabilities, and the agent card's harn_interfaces (with their URLs).
func advertised(ctx context.Context) (map[string]bool, map[string][]string) {
	GinkgoHelper()
	caps := map[string]bool{}
	for _, t := range transportNames() {
		if v, _ := suite.Env().Discovery.Capabilities[t].(bool); v {
			caps[t] = true
		}
	}
	urls := map[string][]string{}
	card := suite.Do(ctx, client.Request{Path: "/v1/agent-card", NoAuth: true}, reqAdvertised)
	if m, err := card.Object(); err == nil && card.Status == http.StatusOK {
		its, _ := m["harn_interfaces"].([]any)
		for _, it := range its {
			o, _ := it.(map[string]any)
			t, _ := o["transport"].(string)
			u, _ := o["url"].(string)
			caps[t] = true
			urls[t] = append(urls[t], u)
		}
	}
	return caps, urls
}

// localPath turns an advertised URL under the suite's base URL into a
// request path; "" when it points elsewhere.
func localPath(u string) string {
	base := suite.Client().Options().BaseURL
	for _, b := range []string{base, ws.URL(base)} {
		if rest, ok := strings.CutPrefix(u, strings.TrimRight(b, "/")); ok && strings.HasPrefix(rest, "/") {
			if p, _, _ := strings.Cut(rest, "?"); p != "" {
				return p
			}
		}
	}
	return ""
}

// openStream opens an SSE stream, closed when the spec ends.
func openStream(ctx context.Context, path, req string) *client.Stream {
	GinkgoHelper()
	s, err := suite.Client().Stream(ctx, client.Request{Path: path})
	if err != nil {
		suite.Transport(err, req)
	}
	DeferCleanup(s.Close)
	return s
}

// awaitEvent reads f (the feed of path) until an Event satisfies want, or
// says why none came: --stream-timeout passed, or the feed ended (and
// how). Units that are no Event are passed over: they are Core's to judge
// (CORE-SSE-*).
func awaitEvent(ctx context.Context, f client.Feed, path string, want func(check.Event) bool) (check.Event, string) {
	wctx, cancel := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
	defer cancel()
	for {
		fe, err := f.ReadEvent(wctx)
		var we *client.WaitError
		switch {
		case errors.As(err, &we) && !we.Timeout():
			return check.Event{}, fmt.Sprintf("the stream %s ended first (%v)", path, we.Ended)
		case err != nil && ctx.Err() != nil:
			return check.Event{}, fmt.Sprintf("the spec ended while waiting on %s", path)
		case err != nil:
			return check.Event{}, fmt.Sprintf("none came on %s within --stream-timeout", path)
		}
		if e, err := check.FeedEvent(path, fe); err == nil && want(e) {
			return e, ""
		}
	}
}

func kindIs(kinds ...string) func(check.Event) bool {
	return func(e check.Event) bool { return slices.Contains(kinds, e.Kind) }
}

var _ = Describe("Transports", func() {
	It("implements every transport it advertises", suite.Req(reqAdvertised), func(ctx SpecContext) {
		caps, urls := advertised(ctx)
		judged := 0
		if caps["rest"] {
			judged++
			resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}}, reqAdvertised)
			if suite.Check(reqAdvertised, check.Status(resp, http.StatusOK)) {
				_, err := check.ListPage(resp)
				suite.Check(reqAdvertised, err)
			}
		}
		if slices.ContainsFunc(streamTransports, func(t streamTransport) bool { return caps[t.name] }) {
			sess := xID(xSession(ctx, xWorkspace(ctx), ""))
			task := xSubmit(ctx, sess, nil)
			for _, t := range streamTransports {
				if !caps[t.name] {
					continue
				}
				paths := []string{"/v1/tasks/" + client.Seg(task) + "/stream"}
				for _, u := range urls[t.name] {
					if p := localPath(u); p != "" && !slices.Contains(paths, p) {
						paths = append(paths, p)
					} else if p == "" {
						suite.Note(fmt.Sprintf("%s: the card's %s interface %q is not under the target's base URL; it is not opened", reqAdvertised, t.name, u))
					}
				}
				if t.blocked != nil {
					if why := t.blocked(); why != "" {
						// The scheme is the transport's own requirement to judge.
						suite.Note(fmt.Sprintf("%s: the %s transport is not opened: %s", reqAdvertised, t.name, why))
						continue
					}
				}
				for _, p := range paths {
					judged++
					suite.Check(reqAdvertised, t.works(ctx, p))
				}
			}
		}
		for t := range caps {
			if !slices.Contains(transportNames(), t) {
				suite.Note(fmt.Sprintf("%s: the card advertises a %q interface, another protocol's transport that this suite does not check", reqAdvertised, t))
			}
		}
		if judged == 0 {
			suite.NothingToCheck(reqAdvertised, "neither discovery's capabilities nor the agent card's harn_interfaces advertise rest, sse or websocket",
				"advertise the transports the Harness implements (discovery capabilities, or harn_interfaces in the agent card)")
		}
	})

	It("takes input, approval and cancellation over REST while an SSE stream is open, and the stream shows their effects", suite.Req(reqSSEOneWay), func(ctx SpecContext) {
		xHook("no task can be made to wait for input and approval while its stream is open")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		id := xSubmit(ctx, sess, nil, xStep("input_required", "prompt", "conform stream"), xStep("auth_required", "reason", "conform stream"), xStep("work", "ms", 600000))
		path := "/v1/tasks/" + client.Seg(id) + "/stream"
		s := openStream(ctx, path, reqSSEOneWay)
		if err := check.EventStream(s.Response); err != nil {
			xPrereq("opening the task's SSE stream (GET /v1/tasks/{id}/stream)", s.Response, "CORE-SSE-001")
		}
		steps := []struct {
			wait, what string
			send       func() *client.Response
			effect     []string
		}{
			{"task.input_required", "input (POST /v1/tasks/{id}/messages, kind input)",
				func() *client.Response { return xTaskInput(ctx, id, "input", xTextPart("conform.txt"), reqSSEOneWay) },
				[]string{"user.input_submitted"}},
			{"task.auth_required", "an approval (POST /v1/tasks/{id}/messages, kind tool_confirmation)",
				func() *client.Response {
					return xTaskInput(ctx, id, "tool_confirmation", xDecision("approve"), reqSSEOneWay)
				},
				[]string{"user.tool_confirmation"}},
			{"", "a cancel (POST /v1/tasks/{id}/cancel)",
				func() *client.Response {
					return suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/cancel", Body: map[string]any{"reason": "conform stream"}}, reqSSEOneWay)
				},
				[]string{"task.canceled"}},
		}
		for _, st := range steps {
			if st.wait != "" {
				if _, why := awaitEvent(ctx, s, path, kindIs(st.wait)); why != "" {
					suite.Unverified(fmt.Sprintf("no %s event: %s; so %s cannot be sent while the task waits", st.wait, why, st.what),
						"stream a task's state events live (CORE-SSE-001) and run the scenario steps as docs/scenarios.md says")
				}
			} else if _, why := awaitEvent(ctx, s, path, func(e check.Event) bool { return xTransitionFrame(e, check.AuthRequired, check.Working) }); why != "" {
				suite.Unverified(fmt.Sprintf("no return to WORKING after the approval: %s", why), "stream a task's state events live (CORE-SSE-001)")
			}
			resp := st.send()
			if resp.Status/100 != 2 {
				suite.Check(reqSSEOneWay, fmt.Errorf("%s sent over REST while the task's SSE stream is open: %s%s, want it accepted (SSE carries no client input; REST must)", st.what, resp, xHint(resp)))
				return
			}
			if _, why := awaitEvent(ctx, s, path, kindIs(st.effect...)); why != "" {
				suite.Check(reqSSEOneWay, fmt.Errorf("%s was accepted (%s), but the open stream showed no %v: %s", st.what, resp, st.effect, why))
				return
			}
		}
	})
})

// xTransitionFrame reports whether e is a task event moving from → to.
func xTransitionFrame(e check.Event, from, to string) bool {
	return strings.HasPrefix(e.Kind, "task.") && e.Payload["previous_status"] == from && e.Payload["status"] == to
}

// sseWorks opens path and wants a 200 text/event-stream that delivers an event.
func sseWorks(ctx context.Context, path string) error {
	GinkgoHelper()
	sctx, cancel := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
	defer cancel()
	s, err := suite.Client().Stream(sctx, client.Request{Path: path})
	if err != nil {
		suite.Transport(err, reqAdvertised)
	}
	defer s.Close()
	if err := check.EventStream(s.Response); err != nil {
		return fmt.Errorf("the advertised sse transport: %w", err)
	}
	f, err := s.NextEvent(sctx)
	if err != nil {
		return fmt.Errorf("the advertised sse transport: GET %s delivered no event within --stream-timeout: %v", path, err)
	}
	if _, err := check.FrameEvent(path, f); err != nil {
		return fmt.Errorf("the advertised sse transport: %w", err)
	}
	return nil
}

// upgrades opens a harn-ws.v1 session on path (docs/websocket.md) and
// wants the upgrade accepted and the session opened with a ready frame.
func upgrades(ctx context.Context, path string) error {
	GinkgoHelper()
	s, resp, err := suite.Client().OpenWS(ctx, client.WSDial{Path: path})
	if s != nil {
		suite.AtSpecEnd(func() { s.Close(); judgeFrames(s) })
		if _, err := wsReady(ctx, s); err != nil {
			return fmt.Errorf("the advertised websocket transport: GET %s was upgraded, but %v", path, err)
		}
		s.Close()
		return nil
	}
	var te *client.TransportError
	if resp == nil && errors.As(err, &te) {
		suite.Transport(err, reqAdvertised)
	}
	status := 0
	if resp != nil {
		status = resp.Status
	}
	return fmt.Errorf("the advertised websocket transport: a harn-ws.v1 upgrade on %s was not accepted (status %d, want 101): %v", path, status, err)
}

// ---- local-server routes ----

// localRead is one read of the local server's routes: known names what
// its path names that the spec has just read, listed or written, shown
// where the route is shown to be served (docs/interpretations.md#offered-by-evidence).
type localRead struct {
	op, path     string
	public       bool
	q            url.Values
	known, shown []string
}

var _ = Describe("Local-server routes", func() {
	It("answers the local-server routes it serves with the documented status and shape", suite.Req(reqLocal), func(ctx SpecContext) {
		served, absent := []string{}, []string{}
		// offered decides by evidence whether the route is served; a
		// refusal the evidence contradicts is recorded as reqLocal's
		// failure, and the answer is then not judged again.
		offered := func(op string, o suite.Offering) bool {
			ok, why := xOffered(ctx, reqLocal, o)
			if !ok {
				absent = append(absent, fmt.Sprintf("%s (%s)", op, why))
				return false
			}
			served = append(served, op)
			return !check.UnofferedStatus(o.Answer.Status)
		}
		read := func(r localRead) *client.Response {
			req := client.Request{Path: r.path, Query: r.q, NoAuth: r.public, NoVersion: r.public}
			resp := suite.Do(ctx, req, reqLocal)
			if !offered(r.op, suite.Offering{Request: req, Answer: resp, Known: r.known, Shown: r.shown}) {
				return nil
			}
			suite.Check(reqLocal, check.Status(resp, http.StatusOK))
			return resp
		}
		for _, r := range []localRead{{op: "getHealth", path: "/health", public: true}, {op: "getVersion", path: "/version", public: true},
			{op: "getRuntime", path: "/v1/runtime"}, {op: "listCapabilities", path: "/v1/capabilities"}} {
			read(r)
		}
		if resp := read(localRead{op: "getOpenApiDocument", path: "/openapi.json", public: true}); resp != nil && resp.Status == http.StatusOK {
			var doc struct {
				OpenAPI string         `json:"openapi"`
				Paths   map[string]any `json:"paths"`
			}
			if err := json.Unmarshal(resp.Body, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") || doc.Paths["/v1/tasks"] == nil {
				suite.Check(reqLocal, fmt.Errorf("%s: want an OpenAPI 3.x document of the protocol (openapi 3.x, paths naming /v1/tasks): openapi %q, %d paths, %v", resp, doc.OpenAPI, len(doc.Paths), err))
			}
		}
		if resp := read(localRead{op: "listTools", path: "/v1/tools"}); resp != nil && resp.Status == http.StatusOK {
			if p, err := check.ListPage(resp); suite.Check(reqLocal, err) && len(p.Items) > 0 {
				id := xID(p.Items[0])
				listed := fmt.Sprintf("%s lists tool %q", resp, id)
				if got := read(localRead{op: "getTool", path: "/v1/tools/" + client.Seg(id), known: []string{"tool " + id}, shown: []string{listed}}); got != nil {
					if m, err := got.Object(); suite.Check(reqLocal, err) && xID(m) != id {
						suite.Check(reqLocal, fmt.Errorf("%s: answered tool %q, want %q (listed by GET /v1/tools)", got, xID(m), id))
					}
				}
			}
		}
		ws := xWorkspace(ctx)
		files := "/v1/workspaces/" + client.Seg(ws) + "/files"
		name, content := suite.Key("conform-file")+".txt", "conform local file "+suite.Env().RunID
		write := client.Request{Method: http.MethodPut, Path: files, Query: url.Values{"path": {name}}, Body: map[string]any{"content": content}, IdempotencyKey: suite.Key("conform-file")}
		put := suite.Do(ctx, write, reqLocal)
		if offered("writeWorkspaceFile", suite.Offering{Request: write, Answer: put, Known: []string{"workspace " + ws}}) && suite.Check(reqLocal, check.Status(put, http.StatusOK)) {
			wrote := fmt.Sprintf("%s wrote the file %s", put, name)
			if got := read(localRead{op: "readWorkspaceFile", path: files, q: url.Values{"path": {name}}, known: []string{"workspace " + ws, "file " + name + " (just written)"}, shown: []string{wrote}}); got != nil {
				if m, err := got.Object(); suite.Check(reqLocal, err) && (m["content"] != content || xStr(m, "path") != name) {
					suite.Check(reqLocal, fmt.Errorf("%s: the file just written reads path %v, content %q, want %s and %q", got, m["path"], m["content"], name, content))
				}
			}
		}
		if len(absent) > 0 {
			suite.Note(fmt.Sprintf("%s: not offered: %s", reqLocal, strings.Join(absent, "; ")))
		}
		if len(served) == 0 {
			suite.NotApplicableTo(reqLocal, "the target serves none of the OpenAPI's local-server routes (each may be left out)")
		}
	})
})
