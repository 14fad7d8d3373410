package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Breadth (issue 9): behaviours a broken server can get wrong while every
// narrower check passes — events leaking between resources, event ids out
// of order, a finished task taking more input, an equivalent retry refused.

var _ = Describe("Event scoping and order", func() {
	It("keeps a task's and a session's event lists and streams to that task or session", suite.Req("CORE-EVT-005"), func(ctx SpecContext) {
		// Two tasks in one session, so a task's list that leaks its
		// siblings' events shows it; a third in another session, so a
		// session's list that leaks shows it too.
		a, b := newFlow(ctx), newFlow(ctx)
		t1, t2 := a.submit(ctx, nil), a.submit(ctx, nil)
		t3 := b.submit(ctx, nil)
		for _, x := range []struct {
			f  *flow
			id string
		}{{a, t1}, {a, t2}, {b, t3}} {
			x.f.awaitTerminal(ctx, x.id)
		}
		judge := func(where string, sc check.Scope, evs []check.Event) {
			own, err := check.Scoped(where, sc, evs)
			suite.Check("CORE-EVT-005", err)
			if err == nil && len(evs) > 0 && own == 0 {
				suite.NothingToCheck("CORE-EVT-005", fmt.Sprintf("%s: none of its %d events names %s (as resource, task_id or session_id), so whether they are its own cannot be told", where, len(evs), sc),
					"give events a task_id and session_id, or the task or session as their resource")
			}
		}
		for _, x := range []struct {
			f  *flow
			id string
		}{{a, t1}, {a, t2}, {b, t3}} {
			sc := check.Scope{Task: x.id, Session: x.f.session}
			list, stream := x.f.taskEventsAndStream(ctx, x.id)
			judge("GET /v1/tasks/"+x.id+"/events", sc, list)
			if stream != nil {
				judge("GET /v1/tasks/"+x.id+"/stream", sc, stream)
			}
		}
		for _, x := range []struct {
			f          *flow
			own, other []string
		}{{a, []string{t1, t2}, []string{t3}}, {b, []string{t3}, []string{t1, t2}}} {
			sc := check.Scope{Session: x.f.session, Tasks: x.own, Elsewhere: x.other}
			list, stream := x.f.sessionEventsAndStream(ctx)
			judge("GET /v1/sessions/"+x.f.session+"/events", sc, list)
			if stream != nil {
				judge("GET "+x.f.watch.path+" (opened before the tasks were submitted)", sc, stream)
			}
		}
	})

	It("gives the events of each event list and stream strictly increasing ids", suite.Req("CORE-EVT-006"), func(ctx SpecContext) {
		f := newFlow(ctx)
		ids := []string{f.submit(ctx, nil), f.submit(ctx, nil)}
		for _, id := range ids {
			f.awaitTerminal(ctx, id)
		}
		judged := 0
		judge := func(where string, evs []check.Event) {
			if len(evs) < 2 {
				return
			}
			judged++
			suite.Check("CORE-EVT-006", check.MonotonicIDs(where, check.IDs(evs)))
		}
		for _, id := range ids {
			list, stream := f.taskEventsAndStream(ctx, id)
			judge("GET /v1/tasks/"+id+"/events (all pages, in order)", list)
			judge("GET /v1/tasks/"+id+"/stream", stream)
		}
		list, stream := f.sessionEventsAndStream(ctx)
		judge("GET /v1/sessions/"+f.session+"/events (all pages, in order)", list)
		if stream != nil {
			judge("GET "+f.watch.path+" (opened before the tasks were submitted)", stream)
		}
		if judged == 0 {
			suite.NothingToCheck("CORE-EVT-006", "no event list or stream of two tasks held two events, so no order of ids could be seen", remedyFewEvents)
		}
	})
})

// taskEventsAndStream reads a task's whole event list and its stream from
// the start, until the stream delivered every listed event, ended or timed
// out. The stream is nil when it could not be read as a stream of JSON
// Events (the SSE requirements judge that).
func (f *flow) taskEventsAndStream(ctx context.Context, id string) (list, streamed []check.Event) {
	GinkgoHelper()
	task := "/v1/tasks/" + client.Seg(id)
	list, err := f.events(ctx, task+"/events")
	if !suite.CheckBlocks("CORE-EVT-001", err, suite.SpecReqs()...) {
		// This task's events are not judged; the spec's other lists are.
		return nil, nil
	}
	want := check.IDs(list)
	rd := readStream(ctx, task+"/stream", "", func(rd *stream) bool { return rd.badFrame != nil || containsAll(rd.ids, want) })
	if rd.notStream != nil || rd.badFrame != nil || rd.errFrame != nil {
		return list, nil
	}
	return list, rd.events
}

// sessionEventsAndStream reads the flow's session event list, and what the
// session stream opened before the first submit delivered until it held
// every listed event (nil when there is no such stream).
func (f *flow) sessionEventsAndStream(ctx context.Context) (list, streamed []check.Event) {
	GinkgoHelper()
	list, err := f.events(ctx, "/v1/sessions/"+client.Seg(f.session)+"/events")
	if !suite.CheckBlocks("CORE-EVT-001", err, suite.SpecReqs()...) {
		return nil, nil
	}
	if f.watch == nil || f.watchErr != nil {
		return list, nil
	}
	want := check.IDs(list)
	streamed, _ = f.watch.until(ctx, func(evs []check.Event) bool { return containsAll(check.IDs(evs), want) })
	if _, bad, _ := f.watch.snapshot(); bad != nil {
		return list, nil
	}
	return list, streamed
}

var _ = Describe("Finished tasks", func() {
	It("refuses input and interrupt messages to a finished task and leaves it as it was", suite.Req("CORE-LIFE-004"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		if final, _ := f.awaitTerminal(ctx, id); !check.Terminal(final) {
			suite.Unverified(fmt.Sprintf("the target's agent did not finish a plain task within %s (last read %s), so there is no finished task to send messages to", suite.Env().Config.Timeouts.Task, final),
				suite.RemedyAgentEnds)
		}
		task := "/v1/tasks/" + client.Seg(id)
		where := "GET " + task
		evsBefore, errBefore := f.events(ctx, task+"/events")
		before, _ := f.get(ctx, id)
		var sent []string
		for _, kind := range []string{"input", "interrupt"} {
			resp := roundTrip(ctx, client.Request{Method: http.MethodPost, Path: task + "/messages",
				Body: map[string]any{"kind": kind, "message": textMessage("user", "conform: a message to a finished task")}})
			suite.Check("CORE-LIFE-004", check.Refused(resp, []int{http.StatusBadRequest, http.StatusConflict}, "invalid_state_transition", "conflict"))
			if resp.Status >= 400 {
				observeError(resp)
			}
			sent = append(sent, resp.String())
		}
		after, _ := f.get(ctx, id)
		suite.Check("CORE-LIFE-004", check.Unchanged(where+" after "+strings.Join(sent, " and "), before, after,
			"status", "updated_at", "completed_at", "outcome_id"))
		evsAfter, errAfter := f.events(ctx, task+"/events")
		if err := errors.Join(errBefore, errAfter); err != nil {
			suite.CheckBlocks("CORE-EVT-001", err, "CORE-LIFE-004")
			return
		}
		csBefore, _ := check.Changes(id, evsBefore)
		csAfter, _ := check.Changes(id, evsAfter)
		suite.Check("CORE-LIFE-004", check.NoNewChanges(where+"/events after "+strings.Join(sent, " and "), csBefore, csAfter))
	})
})

var _ = Describe("Idempotency with equivalent bodies", func() {
	It("replays a Task submit retried with the same JSON body, its keys reordered and spaced", suite.Req("CORE-IDEM-001"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-001")
		path := "/v1/sessions/" + client.Seg(sess) + "/tasks"
		body := echoTask("equivalent bodies")
		body["metadata"] = map[string]any{"conform.a": "first", "conform.b": map[string]any{"x": 1, "y": []any{true, "z"}}}
		raw, err := json.Marshal(body)
		if err != nil {
			Fail("setup: " + err.Error())
		}
		reordered, err := check.Reordered(raw)
		if err != nil {
			Fail("setup: " + err.Error())
		}
		key := suite.Key("idem-equivalent")
		first := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, RawBody: raw, IdempotencyKey: key}, "CORE-IDEM-001")
		suite.Must("CORE-IDEM-001", check.Status(first, http.StatusOK, http.StatusCreated, http.StatusAccepted))
		retry := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, RawBody: reordered, IdempotencyKey: key}, "CORE-IDEM-001")
		if err := check.Replayed(first, retry, "session_id", "input"); err != nil {
			suite.Check("CORE-IDEM-001", fmt.Errorf("the retry's body was the first body's JSON with every object's keys in reverse order and spaces between tokens, an equivalent request body: %w", err))
		}
		if retry.Status >= 400 {
			observeError(retry)
		}
		items, complete, readable := listAll(ctx, "CORE-IDEM-001", path, nil)
		if !readable {
			listFailed("CORE-IDEM-001", "CORE-IDEM-001")
		}
		if complete && len(items) != 1 {
			suite.Check("CORE-IDEM-001", fmt.Errorf("GET %s lists %d tasks after one submit and its equivalent retry, want 1", path, len(items)))
		}
	})
})
