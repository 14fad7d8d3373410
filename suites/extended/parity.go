package extended

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// Transport parity (EXT-TRANSPORT-004, a SHOULD): one run observed at the
// same time through REST polling, the SSE task and session streams and
// the WebSocket task and session streams must show the same Events (ids,
// kinds, order, payloads) and end in the same outcome; a command sent over
// one transport (a user message, an answer to an input request, a cancel)
// shows up identically on the others. A divergence is a warning naming
// both transports and the first differing event (check.Parity). An
// advertised transport that breaks during the run (its upgrade or stream
// refused, the stream ending before the task's terminal event, nothing
// within --stream-timeout) fails EXT-TRANSPORT-002 instead and is left out
// of the comparison, so one fault is judged once. The reading is
// docs/interpretations.md#transport-parity.
//
// The tape oracle (internal/fidelity) is not used: a seed-003 tape records
// a Harn script's non-deterministic inputs in a closed set of record kinds,
// and an Event fits none of them honestly (internal/check/parity.go says
// more).

const reqParity = "EXT-TRANSPORT-004" // SHOULD: one run looks the same over every transport

// Remedies of the parity specs.
const (
	remedyTwoTransports = "serve the SSE streams (capabilities.sse) or the harn-ws.v1 WebSocket profile (capabilities.websocket) beside REST, so one run can be observed over two transports"
	remedyBrokenFeed    = "make every advertised transport carry the run to its end (EXT-TRANSPORT-002); parity is compared over the transports that do"
)

// pFeed is one transport's live view of a Session's or Task's events.
type pFeed struct {
	transport string // client.TransportSSE or client.TransportWebSocket
	name      string // what it reads: "SSE GET /v1/tasks/t1/stream"
	session   bool   // a session stream (filtered to the task for the task's views)
	src       *parView
	broken    error            // the transport failed (EXT-TRANSPORT-002): not compared
	snap      []map[string]any // the events compared (settle takes them)
	left      string           // why it is left out without a failure (not advertised…)
}

// parView is what one feed delivered of a run: its Events, read as they
// come until the spec ends, why the feed ended (nil while open), and a
// wait for the next change.
type parView struct {
	mu      sync.Mutex
	evs     []map[string]any
	end     error
	changed chan struct{} // closed and replaced on every change
}

// parMaxEvents bounds what one view keeps, as the WebSocket session
// bounds its frames: a server that floods past it has its stream read no
// further, and the view says why.
const parMaxEvents = 10000

func (v *parView) events() []map[string]any {
	v.mu.Lock()
	defer v.mu.Unlock()
	return slices.Clone(v.evs)
}

func (v *parView) ended() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.end
}

// wait reports whether something changed (an event came, or the end)
// before d passed or ctx ended; callers look again either way.
func (v *parView) wait(ctx context.Context, d time.Duration) bool {
	v.mu.Lock()
	ch, done := v.changed, v.end != nil
	v.mu.Unlock()
	if done {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
}

func (v *parView) add(e map[string]any, end error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if e != nil {
		v.evs = append(v.evs, e)
	}
	if end != nil && v.end == nil {
		v.end = end
	}
	close(v.changed)
	v.changed = make(chan struct{})
}

// errParFrame marks a feed that delivered something other than a JSON
// Event (or the server's error in its place): the transport does not carry
// the run (EXT-TRANSPORT-002).
var errParFrame = errors.New("a frame that is not a JSON Event")

// parRead reads fd into a view until it ends or the spec does, and closes
// it when the spec ends.
func parRead(ctx context.Context, fd client.Feed) *parView {
	GinkgoHelper()
	v := &parView{changed: make(chan struct{})}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	DeferCleanup(func() { cancel(); fd.Close(); <-done })
	// Frame text in a finding is redacted before it is cut to size, so a
	// secret cut in half cannot slip past the redactor.
	red := suite.Env().Redactor
	shown := func(b []byte) string { return parBounded(red.String(string(b))) }
	go func() {
		defer close(done)
		n := 0
		for {
			fe, err := fd.ReadEvent(rctx)
			switch {
			case err != nil:
				v.add(nil, err)
				return
			case errors.Is(fe.Problem, client.ErrServerError):
				v.add(nil, fmt.Errorf("%w: an error frame %q", errParFrame, shown(fe.Data)))
				return
			case fe.Problem != nil:
				v.add(nil, fmt.Errorf("%w: its data is %v (%q)", errParFrame, fe.Problem, shown(fe.Data)))
				return
			}
			if n++; n > parMaxEvents {
				v.add(nil, fmt.Errorf("the stream sent more than %d events; the suite read no further", parMaxEvents))
				return
			}
			v.add(fe.Event, nil)
		}
	}()
	return v
}

func parBounded(s string) string {
	if r := []rune(s); len(r) > 160 {
		return string(r[:160]) + "…"
	}
	return s
}

// parOpenSSE opens an SSE stream of path. A refused or non-SSE answer is a
// broken feed.
func parOpenSSE(ctx context.Context, _ *parityRun, path string, f *pFeed) client.Feed {
	GinkgoHelper()
	st, err := suite.Client().Stream(ctx, client.Request{Path: path})
	if err != nil {
		suite.Transport(err, reqParity)
	}
	if err := check.EventStream(st.Response); err != nil {
		st.Close()
		f.broken = fmt.Errorf("the advertised sse transport: %w", err)
		return nil
	}
	return st
}

// parOpenWS opens a harn-ws.v1 session on path; the run sends its
// commands over the session streams' sessions. A refused upgrade is a
// broken feed.
func parOpenWS(ctx context.Context, r *parityRun, path string, f *pFeed) client.Feed {
	GinkgoHelper()
	if err := wsReadyBreaker.Open(); err != nil {
		f.broken = fmt.Errorf("the advertised websocket transport: not opened on %s: %w", path, err)
		return nil
	}
	s, resp, err := suite.Client().OpenWS(ctx, client.WSDial{Path: path})
	if err != nil {
		if errors.Is(err, client.ErrUpgradeRefused) {
			f.broken = fmt.Errorf("the advertised websocket transport: the harn-ws.v1 upgrade of %s was refused: %s%s, want 101 Switching Protocols", path, resp, xHint(resp))
			return nil
		}
		suite.Transport(err, reqParity)
	}
	// Every frame counts wherever it is read (EXT-WS-003, EXT-WS-007):
	// the session is closed and its frames judged when the spec ends.
	suite.AtSpecEnd(func() { s.Close(); judgeFrames(s) })
	if f.session {
		r.wsSess = s
	} else {
		r.wsTask = s
	}
	return s
}

// parOpen opens every advertised transport's feed of a stream path (a
// transport the suite may not open is left out with the reason).
func (r *parityRun) parOpen(ctx context.Context, path string, session bool, caps map[string]bool) {
	GinkgoHelper()
	for _, t := range streamTransports {
		if !caps[t.name] {
			if session {
				r.notes = append(r.notes, t.name+": not advertised (discovery capabilities, agent card), left out")
			}
			continue
		}
		f := &pFeed{transport: t.name, name: t.label + " GET " + path, session: session}
		if t.blocked != nil {
			f.left = t.blocked()
		}
		if f.left == "" {
			if fd := t.open(ctx, r, path, f); fd != nil {
				f.src = parRead(ctx, fd)
			}
		}
		r.add(f)
	}
}

// parTaskOwns reports whether e is task id's event: its resource is the task
// or its task_id names it (docs/interpretations.md#event-scoping).
func parTaskOwns(e map[string]any, id string) bool {
	if r, _ := e["resource"].(map[string]any); r["object"] == "task" && r["id"] == id {
		return true
	}
	return e["task_id"] == id
}

func parOnlyTask(evs []map[string]any, id string) []map[string]any {
	return slices.DeleteFunc(slices.Clone(evs), func(e map[string]any) bool { return !parTaskOwns(e, id) })
}

// parFinalStatus is the status the last state event of task id in evs
// reports ("" when none does).
func parFinalStatus(evs []map[string]any, id string) string {
	for i := len(evs) - 1; i >= 0; i-- {
		if r, _ := evs[i]["resource"].(map[string]any); r["object"] == "task" && r["id"] == id {
			if s, ok := xPayload(evs[i])["status"].(string); ok && s != "" {
				return s
			}
		}
	}
	return ""
}

func parHasID(evs []map[string]any, id string) bool {
	return slices.ContainsFunc(evs, func(e map[string]any) bool { return xID(e) == id })
}

// parLog reads an event list by polling, page by page with its cursor,
// as a client without a stream follows a run.
type parLog struct {
	path, what string
	evs        []map[string]any
	last       string // the last event id read: where the next poll starts
}

// poll reads every event after the last one read.
func (r *parLog) poll(ctx context.Context) {
	GinkgoHelper()
	q := url.Values{"limit": {"50"}}
	if r.last != "" {
		q.Set("after_event_id", r.last)
	}
	for range 100 {
		resp := suite.Do(ctx, client.Request{Path: r.path, Query: q}, reqParity)
		m, err := resp.Object()
		data, ok := m["data"].([]any)
		if resp.Status != http.StatusOK || err != nil || !ok {
			xPrereq(r.what, resp, "CORE-EVT-001")
		}
		for _, v := range data {
			if e, ok := v.(map[string]any); ok {
				r.evs = append(r.evs, e)
				if id := xID(e); id != "" {
					r.last = id
				}
			}
		}
		pg, _ := m["page"].(map[string]any)
		next, _ := pg["next_cursor"].(string)
		if more, _ := pg["has_more"].(bool); !more || next == "" {
			return
		}
		q.Set("after_event_id", next)
	}
}

// parityRun is one run observed through every transport the target
// advertises.
type parityRun struct {
	sess, task string
	feeds      []*pFeed
	rest       *parLog // the task's events, polled: the reference view
	sessLog    *parLog // the session's events, read at the end
	wsTask     *client.WSSession
	wsSess     *client.WSSession
	notes      []string
}

// parObserve opens the session's streams (before the task exists, so
// they see it from its first event).
func parObserve(ctx context.Context, sess string, caps map[string]bool) *parityRun {
	GinkgoHelper()
	r := &parityRun{sess: sess, sessLog: &parLog{path: "/v1/sessions/" + client.Seg(sess) + "/events", what: "reading the session's events (GET /v1/sessions/{id}/events)"}}
	r.parOpen(ctx, "/v1/sessions/"+client.Seg(sess)+"/events/stream", true, caps)
	return r
}

// observeTask opens the task's streams and starts polling its events.
func (r *parityRun) observeTask(ctx context.Context, task string, caps map[string]bool) {
	GinkgoHelper()
	r.task = task
	r.rest = &parLog{path: "/v1/tasks/" + client.Seg(task) + "/events", what: "polling the task's events (GET /v1/tasks/{id}/events)"}
	r.parOpen(ctx, "/v1/tasks/"+client.Seg(task)+"/stream", false, caps)
	r.rest.poll(ctx)
}

// until polls the task's events until cond holds of them or the task
// timeout passes.
func (r *parityRun) until(ctx context.Context, cond func([]map[string]any) bool) bool {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		r.rest.poll(ctx)
		if cond(r.rest.evs) {
			return true
		}
		if time.Now().After(deadline) || !pace.Wait(ctx) {
			return false
		}
	}
}

// parTaskEnded reports whether evs hold task id's terminal state event.
func parTaskEnded(id string) func([]map[string]any) bool {
	return func(evs []map[string]any) bool {
		return slices.ContainsFunc(evs, func(e map[string]any) bool {
			r, _ := e["resource"].(map[string]any)
			s, _ := xPayload(e)["status"].(string)
			return r["object"] == "task" && r["id"] == id && check.Terminal(s)
		})
	}
}

// view is what a feed shows of the run's task (its own events, a session
// stream filtered to them) or of its session.
func (r *parityRun) view(f *pFeed, task bool) check.View {
	evs := f.snap
	name := f.name
	if task && f.session {
		evs, name = parOnlyTask(evs, r.task), f.name+" (the task's events)"
	}
	return check.View{Transport: f.transport, Name: name, Events: evs}
}

// settle waits, after the task ended, until every open feed has delivered
// what REST lists (or --stream-timeout passes), re-reading REST until it
// stops growing. A feed that ended, or went silent, before the task's
// terminal event is broken: EXT-TRANSPORT-002.
func (r *parityRun) settle(ctx context.Context) {
	GinkgoHelper()
	timeout := suite.Env().Config.Timeouts.Stream
	r.sessLog.poll(ctx)
	for range 4 {
		taskLast, sessLast := r.rest.last, r.sessLog.last
		// One deadline for every feed of the round: a silent server costs
		// --stream-timeout once, not once per stream.
		deadline := time.Now().Add(timeout)
		for _, f := range r.feeds {
			if f.src == nil || f.broken != nil {
				continue
			}
			want := taskLast
			if f.session {
				want = sessLast
			}
			for !parHasID(f.src.events(), want) && f.src.ended() == nil {
				left := time.Until(deadline)
				if left <= 0 || !f.src.wait(ctx, left) {
					break
				}
			}
		}
		// What the feeds hold now is compared with REST read after it:
		// an event a feed holds existed before that read, so REST lists it
		// if it is part of the run; if REST grew meanwhile, the feeds get
		// another round to catch up.
		for _, f := range r.feeds {
			if f.src != nil {
				f.snap = f.src.events()
			}
		}
		r.rest.poll(ctx)
		r.sessLog.poll(ctx)
		if r.rest.last == taskLast && r.sessLog.last == sessLast {
			break
		}
	}
	for _, f := range r.feeds {
		if f.src == nil || f.broken != nil {
			continue
		}
		evs := parOnlyTask(f.snap, r.task)
		if parCarried(r.rest.evs, r.task, evs) {
			continue // what it holds is compared
		}
		why := fmt.Sprintf("nothing more within --stream-timeout %s", timeout)
		if err := f.src.ended(); err != nil {
			why = fmt.Sprintf("then the stream ended (%v)", err)
			if errors.Is(err, errParFrame) {
				why = fmt.Sprintf("then it sent %v", err)
			}
		}
		r.broke(f, fmt.Errorf("the advertised %s transport did not carry task %s to its end: %s delivered %d of the task's events and not its terminal state event (REST lists it), %s",
			f.transport, r.task, f.name, len(evs), why))
	}
}

// parCarried reports whether a view got carried task id's run to its end:
// it delivered the task's terminal state event as ref (the REST view)
// lists it, or an event ref lists after it. Events are matched by id, so
// an event that arrives changed is the comparison's to report, not a
// broken transport.
func parCarried(ref []map[string]any, id string, got []map[string]any) bool {
	end := slices.IndexFunc(ref, func(e map[string]any) bool { return parTaskEnded(id)([]map[string]any{e}) })
	if end < 0 {
		return false
	}
	after := map[string]bool{}
	for _, e := range ref[end:] {
		after[xID(e)] = true
	}
	return slices.ContainsFunc(got, func(e map[string]any) bool { return after[xID(e)] })
}

// add keeps a feed of the run; one whose transport failed as it opened is
// recorded at once (broke).
func (r *parityRun) add(f *pFeed) {
	r.feeds = append(r.feeds, f)
	if f.broken != nil {
		r.broke(f, f.broken)
	}
}

// broke records that an advertised transport failed (EXT-TRANSPORT-002)
// and leaves its feed out of the comparison.
func (r *parityRun) broke(f *pFeed, err error) {
	f.broken = err
	suite.Check(reqAdvertised, err)
	r.notes = append(r.notes, fmt.Sprintf("%s: left out of the comparison, broken (EXT-TRANSPORT-002)", f.name))
}

// judge compares the views of the task and of the session, and the
// outcome each shows with the task as REST reads it.
func (r *parityRun) judge(ctx context.Context) {
	GinkgoHelper()
	var usable []*pFeed
	remedy := remedyTwoTransports
	for _, f := range r.feeds {
		switch {
		case f.broken != nil:
			remedy = remedyBrokenFeed // the failure is recorded (broke)
		case f.left != "":
			r.notes = append(r.notes, fmt.Sprintf("%s: left out: %s", f.name, f.left))
		default:
			usable = append(usable, f)
		}
	}
	transports := map[string]bool{"rest": true}
	for _, f := range usable {
		transports[f.transport] = true
	}
	if len(transports) < 2 {
		suite.NothingToCheck(reqParity, fmt.Sprintf("task %s could be observed over REST only (%s)", r.task, strings.Join(r.notes, "; ")), remedy)
		return
	}
	red := suite.Env().Redactor.String
	taskViews := []check.View{{Transport: "rest", Name: "REST polling GET " + r.rest.path, Events: r.rest.evs}}
	sessViews := []check.View{{Transport: "rest", Name: "REST GET " + r.sessLog.path, Events: r.sessLog.evs}}
	for _, f := range usable {
		taskViews = append(taskViews, r.view(f, true))
		if f.session {
			sessViews = append(sessViews, r.view(f, false))
		}
	}
	var divs []check.Divergence
	divs = append(divs, check.Parity(taskViews, check.ParityOptions{Redact: red})...)
	if len(sessViews) > 1 {
		divs = append(divs, check.Parity(sessViews, check.ParityOptions{Redact: red})...)
	}
	for _, d := range divs {
		suite.Should(reqParity, fmt.Errorf("one run looks different over two transports: %w", d))
	}
	// The same outcome: the task as REST reads it at the end is what the
	// last state event of the run says. Every view that did not diverge
	// holds the reference's events, so the reference speaks for them; a
	// view that diverged was reported above.
	m := xRead(ctx, "reading the Task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(r.task), nil)
	status := xStr(m, "status")
	if got := parFinalStatus(r.rest.evs, r.task); got != status {
		suite.Should(reqParity, fmt.Errorf("task %s is %s as GET /v1/tasks/{id} reads it, but the last state event of it that REST polling and every transport agreeing with it delivered says %q: the outcome a client sees depends on how it reads the run", r.task, status, got))
	}
	sizes := make([]string, 0, len(taskViews)+len(sessViews))
	for _, v := range append(taskViews, sessViews[1:]...) {
		sizes = append(sizes, fmt.Sprintf("%s: %d", v.Name, len(v.Events)))
	}
	r.notes = append(r.notes, fmt.Sprintf("compared %d views of task %s and %d of session %s (events each: %s); %d divergent",
		len(taskViews), r.task, len(sessViews), r.sess, strings.Join(sizes, ", "), len(divs)))
	suite.Note(reqParity + ": " + strings.Join(r.notes, "; "))
}

// sendUserMessage appends a user message to the session over the
// WebSocket when one is open on the session (user_message), else over
// REST, and returns the Message id and the transport used.
func (r *parityRun) sendUserMessage(ctx context.Context, text string) (string, string) {
	GinkgoHelper()
	msg := xText(text)
	if r.wsSess != nil {
		f, err := wsCommand(ctx, r.wsSess, map[string]any{"type": ws.TypeUserMessage, "session_id": r.sess, "message": msg})
		if err == nil && f.Type == ws.TypeResult {
			if id := xID(f.Member("result")); id != "" {
				return id, "websocket"
			}
		}
		var te *client.TransportError
		if errors.As(err, &te) {
			suite.Transport(err, reqParity)
		}
		// The command's own failure is EXT-WS-004's to judge.
		r.notes = append(r.notes, fmt.Sprintf("the user_message command on the WebSocket session stream got no result with a Message (%v %v): the message went over REST instead", parFrame(f), err))
	}
	m := xSetup(ctx, "appending a Message (POST /v1/sessions/{id}/messages)", "CORE-READ-011", client.Request{Method: http.MethodPost,
		Path: "/v1/sessions/" + client.Seg(r.sess) + "/messages", Body: map[string]any{"message": msg}})
	return xID(m), "rest"
}

func parFrame(f ws.Frame) string {
	if f.Seq == 0 {
		return "no frame"
	}
	return f.String()
}

// answerInput answers the task's input request over the WebSocket task
// stream when one is open (input_response to its input_request frame),
// else over REST; it returns the transport used.
func (r *parityRun) answerInput(ctx context.Context, text string) string {
	GinkgoHelper()
	msg := map[string]any{"role": "user", "parts": []any{xTextPart(text)}}
	if r.wsTask != nil {
		d := suite.Env().Config.Timeouts.Stream
		req, err := r.wsTask.Await(ctx, d, 0, func(f ws.Frame) bool { return f.Type == ws.TypeInputRequest && f.Str("task_id") == r.task })
		if err == nil {
			f, err := wsCommand(ctx, r.wsTask, map[string]any{"type": ws.TypeInputResponse, "request_id": req.Str("request_id"), "task_id": r.task, "message": msg})
			if err == nil && f.Type == ws.TypeResult {
				return "websocket"
			}
			var te *client.TransportError
			if errors.As(err, &te) {
				suite.Transport(err, reqParity)
			}
			r.notes = append(r.notes, fmt.Sprintf("the input_response command got no result (%s, %v): the input went over REST instead", parFrame(f), err))
		} else {
			r.notes = append(r.notes, fmt.Sprintf("no input_request frame on the WebSocket task stream (%v; EXT-WS-008's to judge): the input went over REST instead", err))
		}
	}
	resp := xTaskInput(ctx, r.task, "input", xTextPart(text), reqParity)
	if resp.Status/100 != 2 {
		xPrereq("answering the task's input request (POST /v1/tasks/{id}/messages, kind input)", resp, "EXT-HOST-001; with streams open, EXT-TRANSPORT-003")
	}
	return "rest"
}

// commandShown checks that the event a command caused (the first of kind
// whose payload names ref under member, or any of kind when member is "")
// is in the reference view; the comparison then says whether every
// transport shows it alike. It notes where the command's event is.
func (r *parityRun) commandShown(what, via string, evs []map[string]any, kind, member, ref string) {
	i := slices.IndexFunc(evs, func(e map[string]any) bool {
		return e["event"] == kind && (member == "" || xPayload(e)[member] == ref)
	})
	if i < 0 {
		r.notes = append(r.notes, fmt.Sprintf("%s sent over %s: no %s event in the REST view (whether it must emit one is another requirement's); the comparison covers the rest of the run", what, via, kind))
		return
	}
	r.notes = append(r.notes, fmt.Sprintf("%s sent over %s shows as %s %s, event %d of the REST view", what, via, kind, xID(evs[i]), i+1))
}

// parTransports are the transports a target advertises, and ends the
// spec unverified when it advertises no stream transport beside REST.
func parTransports(ctx context.Context) map[string]bool {
	GinkgoHelper()
	caps, _ := advertised(ctx)
	if !slices.ContainsFunc(streamTransports, func(t streamTransport) bool { return caps[t.name] }) {
		suite.Unverified("the target advertises neither sse nor websocket (discovery capabilities, agent card harn_interfaces): a run can be observed over REST only, so there is nothing to compare", remedyTwoTransports)
	}
	return caps
}

var _ = Describe("Transport parity", func() {
	It("delivers one run the same over REST polling, SSE and WebSocket, a user message sent over one included", suite.Req(reqParity), func(ctx SpecContext) {
		caps := parTransports(ctx)
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		run := parObserve(ctx, sess, caps)
		var steps []map[string]any
		if suite.Env().Discovery.Scenarios() != "" {
			// A run with a few agent messages and a pause, so the streams
			// see it live; without the hook, the target's own agent runs.
			steps = []map[string]any{xStep("emit", "count", 3), xStep("work", "ms", 50), xStep("emit", "count", 2, "interval_ms", 10), xStep("complete", "summary", "conform parity")}
		} else {
			run.notes = append(run.notes, "no scenario hook: the run is the target's own agent answering a plain task")
		}
		run.observeTask(ctx, xSubmit(ctx, sess, nil, steps...), caps)
		msgID, via := run.sendUserMessage(ctx, "conform parity: a user message during the run")
		if !run.until(ctx, parTaskEnded(run.task)) {
			suite.Unverified(fmt.Sprintf("task %s did not end within --task-timeout %s (no terminal state event in GET /v1/tasks/{id}/events)", run.task, suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
		}
		run.settle(ctx)
		run.commandShown("a user message", via, run.sessLog.evs, "session.message_appended", "message_id", msgID)
		run.judge(ctx)
	})

	It("shows an input answered over one transport and a cancel over REST the same on every transport", suite.Req(reqParity), func(ctx SpecContext) {
		xHook("no task can be made to wait for input and then run until it is canceled")
		caps := parTransports(ctx)
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		run := parObserve(ctx, sess, caps)
		run.observeTask(ctx, xSubmit(ctx, sess, nil, xStep("emit", "count", 1), xStep("input_required", "prompt", "conform parity"), xStep("emit", "count", 1), xStep("work", "ms", 600000)), caps)
		waits := func(evs []map[string]any) bool {
			return slices.ContainsFunc(evs, func(e map[string]any) bool { return e["event"] == "task.input_required" }) || parTaskEnded(run.task)(evs)
		}
		if !run.until(ctx, waits) || parTaskEnded(run.task)(run.rest.evs) {
			suite.Unverified(fmt.Sprintf("task %s with an input_required step emitted no task.input_required within --task-timeout", run.task), "run the input_required step as docs/scenarios.md says (EXT-HOST-001)")
		}
		via := run.answerInput(ctx, "conform parity input")
		back := func(evs []map[string]any) bool {
			return slices.ContainsFunc(evs, func(e map[string]any) bool {
				return e["event"] == "user.input_submitted"
			}) && parTransitioned(evs, run.task, check.InputRequired, check.Working)
		}
		if !run.until(ctx, back) {
			suite.Unverified(fmt.Sprintf("task %s did not go back to WORKING with user.input_submitted within --task-timeout after its input was answered over %s", run.task, via), "take the host's answer and resume the task (EXT-HOST-001)")
		}
		cancel := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(run.task) + "/cancel", Body: map[string]any{"reason": "conform parity"}}, reqParity)
		if cancel.Status/100 != 2 {
			xPrereq("canceling the running task (POST /v1/tasks/{id}/cancel)", cancel, "CORE-CANCEL-001")
		}
		if !run.until(ctx, parTaskEnded(run.task)) {
			suite.Unverified(fmt.Sprintf("task %s, canceled, emitted no terminal state event within --task-timeout", run.task), "record a cancel at once with task.canceled (CORE-CANCEL-001)")
		}
		run.settle(ctx)
		run.commandShown("the input", via, run.rest.evs, "user.input_submitted", "", "")
		run.commandShown("a cancel", "rest", run.rest.evs, "task.canceled", "", "")
		run.judge(ctx)
	})
})

// parTransitioned reports whether evs hold a state event of task id
// moving from → to.
func parTransitioned(evs []map[string]any, id, from, to string) bool {
	return slices.ContainsFunc(evs, func(e map[string]any) bool {
		r, _ := e["resource"].(map[string]any)
		p := xPayload(e)
		return r["object"] == "task" && r["id"] == id && p["previous_status"] == from && p["status"] == to
	})
}
