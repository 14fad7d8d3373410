package extended

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The WebSocket profile, part 3: request frames and their answers
// (EXT-WS-008, EXT-WS-009), resume (EXT-WS-010) and the replayed marker
// (EXT-WS-012). A client cannot make an agent wait for input or approval,
// so the request specs drive tasks with the scenario contract
// (docs/scenarios.md) and are unverified without it; resume and the
// marker work with whatever the target's agent does.

// awaitRequest waits on l for a request frame of task, of one of types,
// after frame number after: first (as long as the task may take) for the
// event frame of one of opening, the Event that opens the wait, then (for
// --stream-timeout) for the request frame, which follows it at once.
// With no opening kinds (a request re-sent from history, whose opening
// event may lie before the cursor) it waits for the request frame alone.
func awaitRequest(ctx context.Context, l *wsLink, after int, task string, opening []string, types ...string) (ws.Frame, string) {
	if len(opening) > 0 {
		if _, why := l.await(ctx, wsProgress(), after, fmt.Sprintf("%v event", opening), eventOf(task, opening...)); why != "" {
			return ws.Frame{}, why
		}
	}
	return l.await(ctx, wsStream(), after, strings.Join(types, " or "), func(f ws.Frame) bool {
		return slices.Contains(types, f.Type) && f.Str("task_id") == task
	})
}

var (
	opensInput    = []string{"task.input_required"}
	opensAuth     = []string{"task.auth_required"}
	opensApproval = []string{"tool.approval_required", "task.auth_required", "tool.requested"}
)

// requestMissing ends a spec whose task should have sent a request frame:
// unverified when the task never reached status (the scenario did not
// run), a failure of req when it did and no frame came.
func requestMissing(ctx context.Context, req, task, status, what, why string) {
	GinkgoHelper()
	if m, ok := xAwaitStatus(ctx, task, status); !ok {
		suite.Unverified(fmt.Sprintf("task %s is %v, not %s, so no %s frame was due (%s)", task, m["status"], status, what, why), "run the scenario steps as docs/scenarios.md says")
	}
	suite.Must(req, fmt.Errorf("task %s is %s (GET /v1/tasks/{id}), but %s", task, status, why))
}

// judgeRequest checks a request frame: it names a request and its task,
// and follows the event frame of the Event that opened the wait (one of
// kinds).
func judgeRequest(l *wsLink, f ws.Frame, kinds ...string) error {
	var errs []string
	if f.Str("request_id") == "" {
		errs = append(errs, fmt.Sprintf("request_id is %v, want the id its answer names", f.Obj["request_id"]))
	}
	ev := f.Str("event_id")
	i := slices.IndexFunc(l.Frames(), func(e ws.Frame) bool { return e.Type == "event" && e.Str("event_id") == ev })
	switch {
	case i < 0:
		errs = append(errs, fmt.Sprintf("event_id %v names no event frame of this connection, want the %v event that opened the wait", f.Obj["event_id"], kinds))
	case l.Frames()[i].Seq > f.Seq:
		errs = append(errs, fmt.Sprintf("it came before the event frame of %s, the Event that opened the wait", ev))
	case !slices.Contains(kinds, l.Frames()[i].EventKind()):
		errs = append(errs, fmt.Sprintf("event_id %s names a %s event, want %v", ev, l.Frames()[i].EventKind(), kinds))
	}
	if len(errs) > 0 {
		return fmt.Errorf("GET %s %s: %s; received: %s", l.Path, f, strings.Join(errs, "; "), bounded(f.Raw))
	}
	return nil
}

// replayedIs lists the frames among fs (event and request frames) whose
// replayed marker is not want.
func replayedIs(fs []ws.Frame, want bool) []string {
	var bad []string
	for _, f := range fs {
		if f.Type != "event" && !strings.HasSuffix(f.Type, "_request") {
			continue
		}
		if v, ok := f.Obj["replayed"].(bool); !ok || v != want {
			bad = append(bad, fmt.Sprintf("%s replayed %v", f, f.Obj["replayed"]))
		}
	}
	return bad
}

// listed shows at most five findings, and how many more there are.
func listed(items []string) string {
	s := strings.Join(items[:min(len(items), 5)], "; ")
	if len(items) > 5 {
		s += fmt.Sprintf("; and %d more", len(items)-5)
	}
	return s
}

// between are the frames of l numbered after+1 … upTo (to the end when
// upTo is 0).
func between(l *wsLink, after, upTo int) []ws.Frame {
	var out []ws.Frame
	for _, f := range l.Frames() {
		if f.Seq > after && (upTo == 0 || f.Seq <= upTo) {
			out = append(out, f)
		}
	}
	return out
}

// idsOnly keeps only the ids of events: resume is judged on which events
// come, once and in order; what they carry is EXT-WS-007's.
func idsOnly(evs []map[string]any) []map[string]any {
	out := make([]map[string]any, len(evs))
	for i, e := range evs {
		out[i] = map[string]any{"id": e["id"]}
	}
	return out
}

// afterCursor is the part of evs after the event cursor; ok is false when
// evs do not hold it.
func afterCursor(evs []map[string]any, cursor string) ([]map[string]any, bool) {
	i := slices.IndexFunc(evs, func(e map[string]any) bool { return xID(e) == cursor })
	if i < 0 {
		return nil, false
	}
	return evs[i+1:], true
}

// judgeResumed waits on l, after frame number after, for the last event of
// want, and wants the event frames up to it to be want's events: each
// once, in order, none missing (EXT-WS-010).
func judgeResumed(ctx context.Context, l *wsLink, after int, what, listName string, want []map[string]any) {
	GinkgoHelper()
	if len(want) == 0 {
		suite.Note(fmt.Sprintf("%s: %s: no event followed the cursor, so the delivery had nothing to resume", reqWSResume, what))
		return
	}
	last := xID(want[len(want)-1])
	lf, why := l.await(ctx, wsStream(), after, "event "+last, withEventID(last))
	frames := between(l, after, lf.Seq)
	if why != "" {
		suite.Check(reqWSResume, fmt.Errorf("%s: %d event frames came, none for %s, the last event after the cursor in %s: %s", what, len(ws.Events(frames)), last, listName, why))
	}
	if err := parity(listName+" after the cursor", idsOnly(want), what, idsOnly(ws.Events(frames))); err != nil {
		suite.Check(reqWSResume, err)
	}
}

var _ = Describe("WebSocket requests (harn-ws.v1)", func() {
	It("sends input_request and authorization_request frames for a waiting task, and the answer frames let it continue", suite.Req(reqWSRequests), func(ctx SpecContext) {
		xHook("no task can be made to wait for input or authorization")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		after := l.Len()
		task := xSubmit(ctx, sess, nil, xStep("input_required", "prompt", "conform ws input"), xStep("auth_required", "reason", "conform ws authorization"),
			xStep("complete", "summary", "answered over WebSocket"))
		cancelAtEnd(ctx, task)

		in, why := awaitRequest(ctx, l, after, task, opensInput, "input_request")
		if why != "" {
			requestMissing(ctx, reqWSRequests, task, check.InputRequired, "input_request", why)
		}
		suite.Check(reqWSRequests, judgeRequest(l, in, "task.input_required"))
		if _, ok := in.Obj["prompt"].(string); !ok {
			suite.Check(reqWSRequests, fmt.Errorf("%s: prompt is %v, want a string saying what is needed", in, in.Obj["prompt"]))
		}
		r, why := l.command(ctx, map[string]any{"type": "input_response", "request_id": in.Str("request_id"), "task_id": task, "message": xText("conform ws input answer")})
		if why != "" {
			suite.Must(reqWSRequests, fmt.Errorf("%s", why))
		}
		_, err := resultOf(r, "input_response", http.StatusCreated)
		suite.Check(reqWSRequests, err)

		au, why := awaitRequest(ctx, l, in.Seq, task, opensAuth, "authorization_request")
		if why != "" {
			requestMissing(ctx, reqWSRequests, task, check.AuthRequired, "authorization_request", why)
		}
		suite.Check(reqWSRequests, judgeRequest(l, au, "task.auth_required"))
		if _, ok := au.Obj["reason"].(string); !ok {
			suite.Check(reqWSRequests, fmt.Errorf("%s: reason is %v, want a string saying what is needed", au, au.Obj["reason"]))
		}
		r, why = l.command(ctx, map[string]any{"type": "authorization_response", "request_id": au.Str("request_id"), "task_id": task, "approved": true, "reason": "conform ws"})
		if why != "" {
			suite.Must(reqWSRequests, fmt.Errorf("%s", why))
		}
		_, err = resultOf(r, "authorization_response", http.StatusOK, http.StatusCreated)
		suite.Check(reqWSRequests, err)

		if _, why := l.await(ctx, wsProgress(), au.Seq, "terminal event", eventOf(task, terminalKinds...)); why != "" {
			suite.Check(reqWSRequests, fmt.Errorf("task %s, answered by input_response and authorization_response frames: %s", task, why))
		}
		m, _ := xAwait(ctx, task, check.Terminal)
		evs := xEvents(ctx, task)
		var errs []string
		if xStr(m, "status") != check.Completed {
			errs = append(errs, fmt.Sprintf("it is %v, want COMPLETED (its scenario completes once answered)", m["status"]))
		}
		for _, from := range []string{check.InputRequired, check.AuthRequired} {
			if !xTransitioned(evs, from, check.Working) {
				errs = append(errs, fmt.Sprintf("it has no task event from %s to WORKING", from))
			}
		}
		if len(errs) > 0 {
			suite.Check(reqWSRequests, fmt.Errorf("task %s, answered by input_response and authorization_response frames: %s (events %v)", task, strings.Join(errs, "; "), xKinds(evs)))
		}
	})

	It("carries tool approval (or host tool) requests when it offers them, and the tool action follows the client's answer", suite.Req(reqWSHost), func(ctx SpecContext) {
		xHook("no task can be made to attempt a tool that needs approval")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		for _, approve := range []bool{false, true} {
			after := l.Len()
			task := xSubmit(ctx, sess, nil, xStep("tool_approval", "tool", "conform.noop", "input", map[string]any{"path": "conform-ws.txt"}),
				xStep("complete", "summary", "tool decided over WebSocket"))
			cancelAtEnd(ctx, task)
			f, why := awaitRequest(ctx, l, after, task, opensApproval, "approval_request", "authorization_request", "tool_request")
			if why != "" {
				suite.NothingToCheck(reqWSHost, fmt.Sprintf("task %s with a tool_approval step: %s", task, why), "send the waiting task's request frame (EXT-WS-008)")
				return
			}
			decided := fmt.Sprintf("task %s, whose tool call was %s by an approval_response frame", task, map[bool]string{true: "approved", false: "denied"}[approve])
			switch f.Type {
			case "authorization_request":
				suite.NotApplicableTo(reqWSHost, fmt.Sprintf("task %s waits for its tool's approval with an authorization_request frame, not an approval_request: the target does not take up the optional approval and tool requests (docs/websocket.md section 3)", task))
				l.command(ctx, map[string]any{"type": "authorization_response", "request_id": f.Str("request_id"), "task_id": task, "approved": true})
				return
			case "tool_request":
				judgeToolRequest(ctx, l, f, task)
				return
			}
			var errs []string
			if f.Str("tool_call_id") == "" || f.Str("name") == "" || f.Member("input") == nil {
				errs = append(errs, fmt.Sprintf("%s: tool_call_id %v, name %v, input %v: want the tool call's id, its tool's name and its input object", f, f.Obj["tool_call_id"], f.Obj["name"], f.Obj["input"]))
			}
			if err := judgeRequest(l, f, "tool.approval_required", "tool.requested", "task.auth_required"); err != nil {
				errs = append(errs, err.Error())
			}
			if len(errs) > 0 {
				suite.Should(reqWSHost, fmt.Errorf("%s", strings.Join(errs, "; ")))
			}
			r, why := l.command(ctx, map[string]any{"type": "approval_response", "request_id": f.Str("request_id"), "task_id": task, "approved": approve,
				"tool_call_id": f.Str("tool_call_id"), "reason": "conform ws"})
			if why != "" {
				suite.Should(reqWSHost, fmt.Errorf("%s", why))
				return
			}
			if _, err := resultOf(r, "approval_response", http.StatusOK, http.StatusCreated); err != nil {
				suite.Should(reqWSHost, err)
				return
			}
			if _, why := l.await(ctx, wsProgress(), r.Seq, "terminal event", eventOf(task, terminalKinds...)); why != "" {
				suite.Should(reqWSHost, fmt.Errorf("%s: %s", decided, why))
				continue
			}
			xAwait(ctx, task, check.Terminal)
			k := xKinds(xEvents(ctx, task))
			switch {
			case approve && (k["tool.denied"] > 0 || k["tool.approved"]+k["tool.completed"] == 0):
				suite.Should(reqWSHost, fmt.Errorf("%s shows %d tool.denied, %d tool.approved and %d tool.completed events, want the tool approved and run (events %v)", decided, k["tool.denied"], k["tool.approved"], k["tool.completed"], k))
			case !approve && (k["tool.denied"] == 0 || k["tool.approved"]+k["tool.completed"] > 0):
				suite.Should(reqWSHost, fmt.Errorf("%s shows %d tool.denied, %d tool.approved and %d tool.completed events, want tool.denied and no side effect (events %v)", decided, k["tool.denied"], k["tool.approved"], k["tool.completed"], k))
			}
		}
	})
})

// judgeToolRequest answers a tool_request (the host runs the tool) and
// wants the task to record the result.
func judgeToolRequest(ctx context.Context, l *wsLink, f ws.Frame, task string) {
	GinkgoHelper()
	if f.Str("tool_call_id") == "" || f.Str("name") == "" || f.Member("input") == nil {
		suite.Should(reqWSHost, fmt.Errorf("%s: tool_call_id %v, name %v, input %v: want the tool call's id, its tool's name and its input object", f, f.Obj["tool_call_id"], f.Obj["name"], f.Obj["input"]))
	}
	r, why := l.command(ctx, map[string]any{"type": "tool_result", "request_id": f.Str("request_id"), "task_id": task, "tool_call_id": f.Str("tool_call_id"),
		"status": "succeeded", "output": map[string]any{"conform": true}})
	if why != "" {
		suite.Should(reqWSHost, fmt.Errorf("%s", why))
		return
	}
	if _, err := resultOf(r, "tool_result", http.StatusCreated); err != nil {
		suite.Should(reqWSHost, err)
		return
	}
	if _, why := l.await(ctx, wsProgress(), r.Seq, "tool.completed event", eventOf(task, "tool.completed")); why != "" {
		suite.Should(reqWSHost, fmt.Errorf("task %s, whose host tool call %s the client ran (tool_result succeeded): %s", task, f.Str("tool_call_id"), why))
	}
}

var _ = Describe("WebSocket resume (harn-ws.v1)", func() {
	It("resumes from a cursor with every later event once, in order, none missing: by header, auth frame or resume frame, and after a connection dropped mid-run", suite.Req(reqWSResume), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		task := xSubmit(ctx, sess, nil)
		xTerminal(ctx, task)
		tl := xRawEvents(ctx, task)
		if len(tl) < 2 {
			suite.Unverified(fmt.Sprintf("task %s has %d events: no cursor inside its history to resume from", task, len(tl)), "emit the task's lifecycle events (CORE-EVT-001)")
		}
		last := xID(tl[len(tl)-1])

		// A cursor into the task's history: on connect, by header and by
		// an auth frame, then by a resume frame on a connection that has
		// delivered it all.
		mid := xID(tl[len(tl)/2-1])
		want := tl[len(tl)/2:]
		for _, way := range []ws.Way{ws.ByHeaders, ws.ByAuthFrame} {
			b := wsOpen(ctx, client.WSDial{Path: taskStream(task), Way: way, Cursor: mid})
			what := fmt.Sprintf("GET %s resuming after %s (%s)", b.Path, mid, way)
			if got := b.ready.Obj["last_event_id"]; got != mid {
				suite.Check(reqWSResume, fmt.Errorf("%s: the ready frame names last_event_id %v, want the cursor taken", what, got))
			}
			judgeResumed(ctx, b, b.ready.Seq, what, "GET /v1/tasks/"+task+"/events", want)
		}
		o := wsOpen(ctx, client.WSDial{Path: taskStream(task), Way: ws.ByHeaders})
		if _, why := o.await(ctx, wsStream(), 0, "event "+last, withEventID(last)); why != "" {
			suite.Unverified("the task stream did not deliver the task's history: "+why, "deliver events as event frames (EXT-WS-007)")
		}
		f, why := o.command(ctx, map[string]any{"type": "resume", "last_event_id": mid})
		if why != "" {
			suite.Check(reqWSResume, fmt.Errorf("a resume frame: %s", why))
		} else if res, err := resultOf(f, "resume", http.StatusOK); err != nil {
			suite.Check(reqWSResume, err)
		} else if res["object"] != "ws.resume" || res["last_event_id"] != mid {
			suite.Check(reqWSResume, fmt.Errorf("a resume frame naming last_event_id %s: the result is %s, want {object: ws.resume, last_event_id: %s}", mid, bounded(f.Raw), mid))
		} else {
			judgeResumed(ctx, o, f.Seq, fmt.Sprintf("GET %s after a resume frame naming %s", o.Path, mid), "GET /v1/tasks/"+task+"/events", want)
		}

		// An unknown cursor is refused, never skipped: on connect (either
		// way) and by a resume frame (o has delivered the whole history,
		// so no event frame of it can pass for one of the refused run).
		bad := "evt_conform_unknown_" + strings.ReplaceAll(suite.Key("cursor"), "-", "_")
		expired := refusal{status: http.StatusGone, code: "cursor_expired", close: 4410, noEvents: true}
		s, resp, err := wsAttempt(ctx, client.WSDial{Path: taskStream(task), Way: ws.ByHeaders, Cursor: bad, Probe: "an unknown cursor"})
		suite.Check(reqWSResume, judgeRefused(ctx, "GET "+taskStream(task)+" with Last-Event-ID "+bad+" (unknown)", s, resp, err, withHTTP(expired), 0, wsStream()))
		s, resp, err = wsAttempt(ctx, client.WSDial{Path: taskStream(task), Way: ws.ByAuthFrame, Cursor: bad, Probe: "an unknown cursor in the auth frame"})
		suite.Check(reqWSResume, judgeRefused(ctx, "an auth frame naming last_event_id "+bad+" (unknown)", s, resp, err, withFrame(expired), 0, wsStream()))
		at := o.Len()
		if err := o.Send(ctx, map[string]any{"type": "resume", "id": o.NewID(), "last_event_id": bad}); err != nil {
			suite.Transport(err)
		}
		byFrame := withFrame(expired)
		byFrame.command = true
		suite.Check(reqWSResume, judgeRefused(ctx, "a resume frame naming last_event_id "+bad+" (unknown)", o.WSSession, nil, nil, byFrame, at, wsStream()))

		// A connection dropped while a task runs: events happen while the
		// client is away and after it is back.
		xHook("no task can be kept running across a dropped connection (resume from a cursor into a finished task's history was checked)")
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		after := l.Len()
		run := xSubmit(ctx, sess, nil, xStep("emit", "count", 2), xStep("input_required", "prompt", "conform ws resume 1"), xStep("emit", "count", 3),
			xStep("input_required", "prompt", "conform ws resume 2"), xStep("emit", "count", 2), xStep("complete"))
		cancelAtEnd(ctx, run)
		if _, why := l.await(ctx, wsProgress(), after, "task.input_required event", eventOf(run, "task.input_required")); why != "" {
			suite.Unverified(fmt.Sprintf("the session stream delivered no task.input_required event of task %s live: %s", run, why), "deliver events as event frames (EXT-WS-007), and run the input_required step as docs/scenarios.md says")
		}
		evs := ws.Events(l.Frames())
		cursor := xID(evs[len(evs)-1])
		l.Drop()
		xTaskInput(ctx, run, "input", xTextPart("conform ws resume 1"), reqWSResume)
		if !awaitKind(ctx, run, "task.input_required", 2) {
			suite.Unverified(fmt.Sprintf("task %s, answered once, did not wait for input a second time within --task-timeout", run), "run the input_required steps as docs/scenarios.md says")
		}
		r := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders, Cursor: cursor})
		if got := r.ready.Obj["last_event_id"]; got != cursor {
			suite.Check(reqWSResume, fmt.Errorf("GET %s with Last-Event-ID %s: the ready frame names last_event_id %v, want the cursor taken", r.Path, cursor, got))
		}
		xTaskInput(ctx, run, "input", xTextPart("conform ws resume 2"), reqWSResume)
		xTerminal(ctx, run)
		rest := sessionEvents(ctx, sess)
		wantRun, ok := afterCursor(rest, cursor)
		if !ok {
			suite.Check(reqWSEvents, fmt.Errorf("GET %s delivered event %s, which GET /v1/sessions/%s/events does not list", l.Path, cursor, sess))
			suite.Unverified("the cursor to resume from is not in the session's event list", "deliver the session's events as the REST list holds them (EXT-WS-007)")
		}
		judgeResumed(ctx, r, r.ready.Seq, fmt.Sprintf("GET %s reconnected with Last-Event-ID %s after a connection dropped mid-run, while task %s went on", r.Path, cursor, run),
			"GET /v1/sessions/"+sess+"/events", wantRun)
	})
})

// awaitKind polls task id's events until n of them are of kind, for up to
// --task-timeout.
func awaitKind(ctx context.Context, id, kind string, n int) bool {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		if xKinds(xEvents(ctx, id))[kind] >= n {
			return true
		}
		if time.Now().After(deadline) || !pace.Wait(ctx) {
			return false
		}
	}
}

var _ = Describe("WebSocket replayed marker (harn-ws.v1)", func() {
	It("marks frames delivered from history replayed: true and frames of live activity replayed: false", suite.Req(reqWSReplayed), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		xTerminal(ctx, xSubmit(ctx, sess, nil))
		hist := sessionEvents(ctx, sess)
		if len(hist) == 0 {
			suite.Unverified(fmt.Sprintf("GET /v1/sessions/%s/events lists no event after a task ran in it: no history to deliver", sess), "record the session's events (CORE-EVT-001)")
		}
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		last := xID(hist[len(hist)-1])
		lf, why := l.await(ctx, wsStream(), 0, "event "+last, withEventID(last))
		if why != "" {
			suite.Unverified("the session stream did not deliver the session's history: "+why, "deliver events as event frames (EXT-WS-007)")
		}
		if bad := replayedIs(between(l, 0, lf.Seq), true); len(bad) > 0 {
			suite.Check(reqWSReplayed, fmt.Errorf("GET %s opened without a cursor delivers the session's history, but these frames are not marked replayed: true: %s", l.Path, listed(bad)))
		}
		live := xSubmit(ctx, sess, nil)
		tf, why := l.await(ctx, wsProgress(), lf.Seq, "terminal event of task "+live, eventOf(live, terminalKinds...))
		if why != "" {
			suite.Unverified(fmt.Sprintf("the session stream delivered no live event of task %s: %s", live, why), "deliver events as event frames (EXT-WS-007)")
		}
		if bad := replayedIs(between(l, lf.Seq, tf.Seq), false); len(bad) > 0 {
			suite.Check(reqWSReplayed, fmt.Errorf("GET %s: task %s ran after the history was delivered, but these frames of its live activity are not marked replayed: false: %s", l.Path, live, listed(bad)))
		}
	})

	It("re-sends a pending input request to a new connection marked replayed: true, while the live one is replayed: false", suite.Req(reqWSReplayed), func(ctx SpecContext) {
		xHook("no task can be made to wait for input")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		after := l.Len()
		task := xSubmit(ctx, sess, nil, xStep("input_required", "prompt", "conform ws replayed"), xStep("complete"))
		cancelAtEnd(ctx, task)
		in, why := awaitRequest(ctx, l, after, task, opensInput, "input_request")
		if why != "" {
			suite.Unverified(fmt.Sprintf("task %s waits for input, but %s", task, why), "send an input_request frame for a task waiting for input (EXT-WS-008)")
		}
		if bad := replayedIs([]ws.Frame{in}, false); len(bad) > 0 {
			suite.Check(reqWSReplayed, fmt.Errorf("GET %s: the input request of task %s, sent live as the task began to wait: %s, want replayed: false", l.Path, task, bad[0]))
		}
		id := in.Str("request_id")
		for _, d := range []client.WSDial{
			{Path: sessionStream(sess), Way: ws.ByAuthFrame},
			{Path: sessionStream(sess), Way: ws.ByHeaders, Cursor: in.Str("event_id")},
		} {
			what := fmt.Sprintf("a new connection to %s (no cursor)", d.Path)
			if d.Cursor != "" {
				what = fmt.Sprintf("a new connection to %s resuming after %s, the event that opened the wait", d.Path, d.Cursor)
			}
			r := wsOpen(ctx, d)
			re, why := awaitRequest(ctx, r, 0, task, nil, "input_request")
			switch {
			case why != "":
				suite.Check(reqWSReplayed, fmt.Errorf("task %s still waits for input (request %s), but %s was not sent it again: %s", task, id, what, why))
			case re.Str("request_id") != id:
				suite.Check(reqWSReplayed, fmt.Errorf("%s: the input request re-sent for task %s names request_id %q, want the pending request %q", what, task, re.Str("request_id"), id))
			default:
				if bad := replayedIs([]ws.Frame{re}, true); len(bad) > 0 {
					suite.Check(reqWSReplayed, fmt.Errorf("%s: the pending input request of task %s, re-sent from history: %s, want replayed: true", what, task, bad[0]))
				}
			}
		}
		// Answered, the task goes on live.
		at := l.Len()
		r, why := l.command(ctx, map[string]any{"type": "input_response", "request_id": id, "task_id": task, "message": xText("conform ws replayed answer")})
		if why != "" || r.Type != "result" {
			suite.Unverified(fmt.Sprintf("the input_response frame for task %s: %s%s", task, why, bounded(r.Raw)), "take input_response frames (EXT-WS-008)")
		}
		tf, why := l.await(ctx, wsProgress(), at, "terminal event of task "+task, eventOf(task, terminalKinds...))
		if why != "" {
			suite.Unverified(fmt.Sprintf("task %s, answered, delivered no terminal event: %s", task, why), "deliver events as event frames (EXT-WS-007)")
		}
		if bad := replayedIs(between(l, at, tf.Seq), false); len(bad) > 0 {
			suite.Check(reqWSReplayed, fmt.Errorf("GET %s: frames of task %s's live activity after its answer are not marked replayed: false: %s", l.Path, task, listed(bad)))
		}
	})
})
