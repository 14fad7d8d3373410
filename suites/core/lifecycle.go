package core

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Task lifecycle", func() {
	It("moves a plain task through allowed transitions, each recorded by a task state event", suite.Req("CORE-LIFE-001", "CORE-LIFE-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		final, _ := f.awaitTerminal(ctx, id)
		f.verifyLifecycle(ctx, id, final)
	})

	It("fails a task through allowed transitions and says why", suite.Req("CORE-LIFE-001", "CORE-LIFE-002", "CORE-LIFE-003"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.failedTask(ctx, []any{
			map[string]any{"op": "work", "ms": 1},
			map[string]any{"op": "fail", "code": "conform_failure", "message": "the scenario asked to fail"},
		})
		f.verifyLifecycle(ctx, id, check.Failed)
		suite.Should("CORE-LIFE-003", f.failureVisible(ctx, id))
	})

	It("records a cancel of a WORKING task as an allowed move with its own task state event", suite.Req("CORE-LIFE-001", "CORE-LIFE-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id, why := f.cancelPlain(ctx, true)
		if id != "" {
			fromRun("task "+id+" (CANCELED)", "a plain task of the spec, read WORKING and then canceled")
		} else {
			needHook(why, suite.RemedyRunning)
			// Work far longer than the spec runs, so only the cancel ends it.
			id = f.submit(ctx, workThenComplete(60000))
			f.driveTo(ctx, id, check.Working)
			f.cancel(ctx, id)
			fromHook("task "+id, "a task in a long work step, canceled once WORKING")
		}
		final, _ := f.awaitTerminal(ctx, id)
		f.verifyLifecycle(ctx, id, final)
	})

	It("runs a slow task through WORKING to COMPLETED through allowed transitions", suite.Req("CORE-LIFE-001", "CORE-LIFE-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id, why := f.workingPlain(ctx)
		if id != "" {
			fromRun("task "+id+" (read WORKING)", "a plain task of the spec, read WORKING before it ended")
		} else {
			needHook(why, suite.RemedyRunning)
			id = f.submit(ctx, []any{
				map[string]any{"op": "work", "ms": 30},
				map[string]any{"op": "complete"},
			})
			f.driveTo(ctx, id, check.Completed)
			fromHook("task "+id, "a task in a work step")
		}
		final, _ := f.awaitTerminal(ctx, id)
		f.verifyLifecycle(ctx, id, final)
	})

	Context("driven by the scenario contract", func() {
		BeforeEach(skipWithoutScenarios)

		It("moves through INPUT_REQUIRED and, once given input, to its end, all through allowed transitions", suite.Req("CORE-LIFE-001", "CORE-LIFE-002"), func(ctx SpecContext) {
			f := newFlow(ctx)
			id := f.submit(ctx, []any{
				map[string]any{"op": "input_required", "prompt": "conform: which file?"},
				map[string]any{"op": "complete", "summary": "answered"},
			})
			fromHook("task "+id, "a task whose scenario asks for input")
			f.driveTo(ctx, id, check.InputRequired)
			f.verifyWaiting(ctx, id, check.InputRequired)
			f.answer(ctx, id, "input", map[string]any{"type": "text", "text": "README.md", "visibility": "public"})
			final := f.driveTo(ctx, id, check.Completed)
			f.verifyLifecycle(ctx, id, final)
		})

		It("moves through AUTH_REQUIRED and, once confirmed, to its end, all through allowed transitions", suite.Req("CORE-LIFE-001", "CORE-LIFE-002"), func(ctx SpecContext) {
			f := newFlow(ctx)
			id := f.submit(ctx, []any{
				map[string]any{"op": "auth_required", "reason": "conform: connect the account"},
				map[string]any{"op": "complete"},
			})
			fromHook("task "+id, "a task whose scenario asks for authorization")
			f.driveTo(ctx, id, check.AuthRequired)
			f.verifyWaiting(ctx, id, check.AuthRequired)
			f.answer(ctx, id, "tool_confirmation", map[string]any{"type": "json", "value": map[string]any{"decision": "approve"}, "visibility": "public"})
			final := f.driveTo(ctx, id, check.Completed)
			f.verifyLifecycle(ctx, id, final)
		})
	})
})

// skipWithoutScenarios ends a spec that needs a task in a given state when
// the target does not implement the scenario contract (docs/scenarios.md):
// its requirements are unverified by this spec, never passed by it.
func skipWithoutScenarios() {
	if suite.Env().Discovery.Scenarios() == "" {
		suite.Unverified(`the target does not advertise the conform.scenarios contract (GET /v1 capabilities["conform.scenarios"]), so no task can be driven into this state`,
			suite.RemedyScenarios)
	}
}

// flow is one spec's own workspace, session and tasks, with every task
// status it has read, in order, and a live view of the session's stream.
type flow struct {
	session string
	reads   map[string][]string
	// watch is the session stream, opened before the first submit; nil
	// with watchErr when the target did not answer it with a stream (the
	// streaming specs judge that).
	watch    *watch
	watchErr error
}

// newFlow gets a workspace, creates a session for the spec and opens the
// session's stream before anything is submitted. A target that cannot
// create the session cannot be checked further; the spec fails with the
// reason.
func newFlow(ctx context.Context) *flow {
	GinkgoHelper()
	ws := workspaceFor(ctx, suite.SpecReqs()[0])
	se := created(ctx, client.Request{Method: "POST", Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})
	f := &flow{session: se, reads: map[string][]string{}}
	f.watch, f.watchErr = watchSession(ctx, se)
	return f
}

// initial is the status the task was created in, as its submit answer said
// (SUBMITTED when it said nothing).
func (f *flow) initial(id string) string {
	if r := f.reads[id]; len(r) > 0 && check.KnownStatus(r[0]) {
		return r[0]
	}
	return check.Submitted
}

// roundTrip performs an exchange for the current spec. If the target cannot be
// spoken to, every requirement the spec names gets an error verdict (the
// suite could not observe them), never a failure.
func roundTrip(ctx context.Context, req client.Request) *client.Response {
	GinkgoHelper()
	return suite.Do(ctx, req, suite.SpecReqs()...)
}

// created performs the spec's session create (a setup write) and returns
// the new session's id. The exact success code is other requirements'
// business: any 2xx will do. A session that cannot be created is
// CORE-READ-010's failure, and blocks the spec's own requirements.
func created(ctx context.Context, req client.Request) string {
	GinkgoHelper()
	resp := roundTrip(ctx, req)
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		suite.Must(reqSessionCreate, fmt.Errorf("%s did not create a resource with an id, so this spec cannot run%s", resp, hint(resp)))
	}
	return id
}

func hint(resp *client.Response) string {
	if len(resp.Body) > 200 {
		return fmt.Sprintf(" (body starts %q…)", resp.Body[:200])
	}
	return fmt.Sprintf(" (body %q)", resp.Body)
}

// submit submits a task to the flow's session: with steps, it carries a
// conform.scenarios v1 scenario; without, the target's agent does whatever
// it does with a short text input.
func (f *flow) submit(ctx context.Context, steps []any) string {
	GinkgoHelper()
	body := map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "conform lifecycle probe", "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	id, resp := f.submitBody(ctx, body)
	if id == "" {
		// Submitting is CORE-TASK-001's: the spec's own requirements are
		// blocked by that failure.
		suite.Must(reqSubmit, fmt.Errorf("%s did not accept the task, so this spec cannot run%s", resp, hint(resp)))
	}
	return id
}

// submitBody submits a task body to the flow's session and returns the
// new task's id ("" when the target did not accept it) and the answer.
func (f *flow) submitBody(ctx context.Context, body map[string]any) (string, *client.Response) {
	GinkgoHelper()
	resp := roundTrip(ctx, client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(f.session) + "/tasks", Body: body})
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil {
		return "", resp
	}
	if s, ok := m["status"].(string); ok && id != "" {
		f.reads[id] = append(f.reads[id], s)
	}
	return id, resp
}

// get reads the task once and records its status.
func (f *flow) get(ctx context.Context, id string) (map[string]any, *client.Response) {
	GinkgoHelper()
	resp := roundTrip(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)})
	m, err := resp.Object()
	if resp.Status != 200 || err != nil {
		// Reading a Task by id is CORE-READ-004's (as the OpenAPI oracle
		// maps GET /v1/tasks/{id}); without it nothing can be followed.
		suite.Must("CORE-READ-004", fmt.Errorf("%s: could not read the task%s", resp, hint(resp)))
	}
	if s, ok := m["status"].(string); ok {
		f.reads[id] = append(f.reads[id], s)
	}
	return m, resp
}

// await polls the task until its status satisfies want or the task timeout
// passes; it returns the last task read and whether want was met.
func (f *flow) await(ctx context.Context, id string, want func(string) bool) (map[string]any, bool) {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		m, resp := f.get(ctx, id)
		s, _ := m["status"].(string)
		if want(s) {
			return m, true
		}
		if !check.KnownStatus(s) {
			// No wait can end on a value outside the closed enum: judge it now.
			suite.Must("CORE-READ-004", fmt.Errorf("%s: task status is %s, want one of the seven upper-case lifecycle states (SUBMITTED, WORKING, INPUT_REQUIRED, AUTH_REQUIRED, COMPLETED, FAILED, CANCELED)",
				resp, quote(m["status"])))
		}
		if time.Now().After(deadline) {
			return m, false
		}
		if !pace.Wait(ctx) {
			return m, false
		}
	}
}

// awaitTerminal waits for the task to end. Observation-only checks use it:
// a task that is still running at the deadline is not a failure of theirs,
// they judge what they saw.
func (f *flow) awaitTerminal(ctx context.Context, id string) (string, map[string]any) {
	GinkgoHelper()
	m, _ := f.await(ctx, id, check.Terminal)
	s, _ := m["status"].(string)
	return s, m
}

// driveTo waits for a scenario-driven task to reach status. The scenario
// contract promises it, so not getting there is a lifecycle failure.
func (f *flow) driveTo(ctx context.Context, id, status string) string {
	GinkgoHelper()
	if _, ok := f.await(ctx, id, func(s string) bool { return s == status || check.Terminal(s) }); !ok || f.last(id) != status {
		suite.Must("CORE-LIFE-001", fmt.Errorf("GET /v1/tasks/%s: the scenario drives the task to %s, but within %s it read %s",
			id, status, suite.Env().Config.Timeouts.Task, seqOf(f.reads[id])))
	}
	return status
}

func (f *flow) last(id string) string {
	r := f.reads[id]
	if len(r) == 0 {
		return ""
	}
	return r[len(r)-1]
}

func seqOf(ss []string) string {
	out := ""
	prev := ""
	for _, s := range ss {
		if s == prev {
			continue
		}
		if out != "" {
			out += " → "
		}
		out += s
		prev = s
	}
	if out == "" {
		return "nothing"
	}
	return out
}

// verifyWaiting checks, before a blocked task is answered, that its move
// into the blocked status already has its state event: a client watching
// the events learns that the task waits for it.
func (f *flow) verifyWaiting(ctx context.Context, id, status string) {
	GinkgoHelper()
	cs, ok := f.stateEventsUntil(ctx, id, status)
	if !ok {
		return // stateEventsUntil reported why
	}
	suite.Check("CORE-LIFE-002", check.Recorded("GET /v1/tasks/"+id+"/events (before the answer)", f.initial(id), cs, f.reads[id], status))
}

// answer posts a task message of the given kind with one part.
func (f *flow) answer(ctx context.Context, id, kind string, part map[string]any) {
	GinkgoHelper()
	resp := roundTrip(ctx, client.Request{Method: "POST", Path: "/v1/tasks/" + client.Seg(id) + "/messages",
		Body: map[string]any{"kind": kind, "message": map[string]any{"role": "user", "parts": []any{part}}}})
	if resp.Status/100 != 2 {
		// No Core requirement owns answering a waiting task: what follows
		// the answer is unverified, not failed.
		suite.Unverified(fmt.Sprintf("setup: %s did not take the %s message to the waiting task, so the rest of its lifecycle could not be driven%s", resp, kind, hint(resp)),
			"accept POST /v1/tasks/{id}/messages (kind input or tool_confirmation) for a task waiting in INPUT_REQUIRED or AUTH_REQUIRED")
	}
}

// events reads a task's or session's whole event list (following pages, at
// most a few) and checks every event's shape.
func (f *flow) events(ctx context.Context, path string) ([]check.Event, error) {
	GinkgoHelper()
	var all []check.Event
	q := url.Values{}
	seen := map[string]bool{}
	const maxPages = 100
	for range maxPages {
		resp := roundTrip(ctx, client.Request{Path: path, Query: q})
		p, err := check.Events(resp)
		if err != nil {
			return all, err
		}
		all = append(all, p.Events...)
		if !p.HasMore || p.NextCursor == "" || seen[p.NextCursor] {
			// A repeated cursor ends the read: CORE-EVT-004 judges paging.
			return all, nil
		}
		seen[p.NextCursor] = true
		q = url.Values{"after_event_id": {p.NextCursor}}
	}
	suite.Unverified(fmt.Sprintf("GET %s: more than %d pages of events; the suite reads no further", path, maxPages),
		"keep the events of one conformance task within 100 pages")
	return all, nil
}

// stateEventsUntil reads the task's state events until they reach final (a
// target may append the event a moment after the status changes), within
// the stream timeout. An event list that cannot be read is reported under
// the event requirement, a state event without a status under CORE-LIFE-002;
// either way ok is false.
func (f *flow) stateEventsUntil(ctx context.Context, id, final string) (cs []check.Change, ok bool) {
	GinkgoHelper()
	path := "/v1/tasks/" + client.Seg(id) + "/events"
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Stream)
	var pace suite.Pace
	for {
		evs, err := f.events(ctx, path)
		if !suite.CheckBlocks("CORE-EVT-001", err, "CORE-LIFE-001", "CORE-LIFE-002") {
			return nil, false
		}
		if cs, err = check.Changes(id, evs); err != nil {
			suite.CheckBlocks("CORE-LIFE-002", fmt.Errorf("GET %s: %w", path, err), "CORE-LIFE-001")
			return nil, false
		}
		if !check.KnownStatus(final) || (len(cs) > 0 && cs[len(cs)-1].To == final) || time.Now().After(deadline) {
			return cs, true
		}
		if len(cs) > 0 && (check.Terminal(cs[len(cs)-1].To) || !check.KnownStatus(cs[len(cs)-1].To)) {
			// The events already ended elsewhere (or on a value that is no
			// status): more waiting cannot bring final. Judge what is there.
			return cs, true
		}
		if !pace.Wait(ctx) {
			return cs, true
		}
	}
}

// verifyLifecycle checks a task's observed life three ways: the statuses
// polled, the REST event list, and the task stream from its start.
func (f *flow) verifyLifecycle(ctx context.Context, id, final string) {
	GinkgoHelper()
	f.verifyRecorded(ctx, id, final)
	// The polled statuses are judged last, after one more read, so that a
	// terminal status is seen to hold across the time the checks took.
	f.get(ctx, id)
	suite.Check("CORE-LIFE-001", check.Polled("GET /v1/tasks/"+id, f.reads[id]))
}

// verifyRecorded checks the task's state events on the REST event list and
// on the task stream from its start.
func (f *flow) verifyRecorded(ctx context.Context, id, final string) {
	GinkgoHelper()
	task := "/v1/tasks/" + client.Seg(id)
	cs, ok := f.stateEventsUntil(ctx, id, final)
	if ok {
		suite.Check("CORE-LIFE-001", check.Legal("GET "+task+"/events", f.initial(id), cs))
		suite.Check("CORE-LIFE-002", check.Recorded("GET "+task+"/events", f.initial(id), cs, f.reads[id], final))
	}
	if !check.Terminal(final) {
		// A task still running at the deadline: its streams would not end
		// either. The polled statuses are still judged by the caller.
		suite.NothingToCheck("CORE-LIFE-002", fmt.Sprintf("task %s was still %s after --task-timeout %s, so its streams were not read to the end",
			id, final, suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
		return
	}
	f.verifyLive(ctx, id, final)
	// The same story on the task stream. A stream that is not one, or whose
	// frames cannot be read, is reported under the SSE requirements only.
	rd := readStream(ctx, task+"/stream", "", func(rd *stream) bool {
		scs, _ := check.Changes(id, rd.events)
		return rd.badFrame != nil || len(scs) > 0 && (scs[len(scs)-1].To == final || check.Terminal(scs[len(scs)-1].To))
	})
	if err := errors.Join(rd.notStream, rd.errFrame); err != nil {
		suite.CheckBlocks("CORE-SSE-001", err, "CORE-LIFE-001", "CORE-LIFE-002")
		return
	}
	if rd.badFrame != nil {
		suite.CheckBlocks("CORE-SSE-003", rd.badFrame, "CORE-LIFE-001", "CORE-LIFE-002")
		return
	}
	scs, err := check.Changes(id, rd.events)
	if err != nil {
		suite.CheckBlocks("CORE-LIFE-002", fmt.Errorf("GET %s/stream: %w", task, err), "CORE-LIFE-001")
		return
	}
	suite.Check("CORE-LIFE-001", check.Legal("GET "+task+"/stream", f.initial(id), scs))
	suite.Check("CORE-LIFE-002", check.Recorded("GET "+task+"/stream", f.initial(id), scs, nil, final))
}

// verifyLive checks the task's state events as the session stream, opened
// before the task was submitted, delivered them while they happened: every
// transition, the first included, on any server.
func (f *flow) verifyLive(ctx context.Context, id, final string) {
	GinkgoHelper()
	if f.watch == nil || f.watchErr != nil {
		suite.CheckBlocks("CORE-SSE-001", f.watchErr, "CORE-LIFE-001", "CORE-LIFE-002")
		return
	}
	where := "GET " + f.watch.path + " (opened before the task was submitted)"
	evs, ok := f.watch.until(ctx, func(evs []check.Event) bool {
		cs := taskChanges(id, evs)
		return len(cs) > 0 && check.Terminal(cs[len(cs)-1].To)
	})
	if !ok {
		if _, bad, _ := f.watch.snapshot(); bad != nil {
			suite.CheckBlocks("CORE-SSE-003", bad, "CORE-LIFE-001", "CORE-LIFE-002") // frames that are no Events: their own requirement
			return
		}
		suite.CheckBlocks("CORE-SSE-001", fmt.Errorf("%s: the task ended %s, but the stream did not deliver its state events up to a terminal one: %s (delivered for the task: %s)",
			where, final, f.watch.why(), changeKinds(taskChanges(id, evs))), "CORE-LIFE-001", "CORE-LIFE-002")
		return
	}
	cs, err := check.Changes(id, evs)
	if err != nil {
		suite.CheckBlocks("CORE-LIFE-002", fmt.Errorf("%s: %w", where, err), "CORE-LIFE-001")
		return
	}
	suite.Check("CORE-LIFE-001", check.Legal(where, f.initial(id), cs))
	suite.Check("CORE-LIFE-002", check.Recorded(where, f.initial(id), cs, f.reads[id], final))
}

func changeKinds(cs []check.Change) string {
	if len(cs) == 0 {
		return "none"
	}
	out := ""
	for i, c := range cs {
		if i > 0 {
			out += ", "
		}
		out += c.Kind + "→" + c.To
	}
	return out
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%v", v)
}

// failureVisible looks for why a FAILED task failed: a failure on the task
// or something on its task.failed event.
func (f *flow) failureVisible(ctx context.Context, id string) error {
	GinkgoHelper()
	m, resp := f.get(ctx, id)
	if fl, ok := m["failure"].(map[string]any); ok && len(fl) > 0 {
		return nil
	}
	evs, err := f.events(ctx, "/v1/tasks/"+client.Seg(id)+"/events")
	if err != nil {
		return err
	}
	for _, e := range evs {
		if e.Kind == "task.failed" {
			for _, k := range []string{"failure", "error", "reason", "message"} {
				if v, ok := e.Payload[k]; ok && v != nil && v != "" {
					return nil
				}
			}
		}
	}
	return fmt.Errorf("%s: the task is FAILED but neither its failure field nor its task.failed event says why", resp)
}
