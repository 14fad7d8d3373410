package core

import (
	"context"
	"errors"
	"fmt"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Task cancellation", func() {
	It("refuses to cancel a finished task and leaves it exactly as it was", suite.Req("CORE-CANCEL-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		final, before := f.awaitTerminal(ctx, id)
		if !check.Terminal(final) {
			suite.Unverified(fmt.Sprintf("the target's agent did not finish a plain task within %s (last read %s), so there is no terminal task to cancel", suite.Env().Config.Timeouts.Task, final),
				suite.RemedyAgentEnds)
		}
		f.refuseTerminalCancel(ctx, id, before)
	})

	It("never shows COMPLETED after CANCELED when a cancel races a short task", suite.Req("CORE-CANCEL-001", "CORE-CANCEL-002", "CORE-CANCEL-003"), func(ctx SpecContext) {
		f := newFlow(ctx)
		// Submit and cancel at once: each round lands before, during or after
		// the task's end; every outcome is legal but the ones checked below.
		const rounds = 5
		ids := make([]string, rounds)
		took := make([]bool, rounds)
		for i := range ids {
			ids[i] = f.submit(ctx, nil)
			resp, body := f.cancel(ctx, ids[i])
			if resp.Status == 200 {
				took[i] = true
				suite.Check("CORE-CANCEL-003", check.NoCompletedAt(resp.String(), body))
				continue
			}
			// A refusal is right only for a task that had already ended.
			suite.Check("CORE-CANCEL-001", check.CancelRefusal(resp, f.lastRead(ctx, ids[i])))
		}
		// A fence: a task submitted after every cancel, run to its end, gives
		// the raced tasks time to (wrongly) finish after their cancel.
		f.awaitTerminal(ctx, f.submit(ctx, nil))
		accepted, canceled := 0, 0
		for i, id := range ids {
			final, _ := f.awaitTerminal(ctx, id)
			if took[i] && !check.Terminal(final) {
				suite.Check("CORE-CANCEL-001", fmt.Errorf("GET /v1/tasks/%s: the cancel was answered 200, but %s later the task is still %s; want it ended",
					id, suite.Env().Config.Timeouts.Task, final))
			}
			if took[i] {
				accepted++
				if final == check.Canceled {
					canceled++
				}
			}
			f.verifyCanceledHolds(ctx, id)
		}
		// Cancellation is cooperative, so one task may finish first; but a
		// server that accepts every cancel of a task it has not finished
		// and never cancels one cannot cancel at all.
		// (When every task finished first, the refusals above were the
		// CORE-CANCEL-001 checks of this spec; the scenario specs cancel a
		// task that is sure to be running.)
		if accepted >= 2 && canceled == 0 {
			suite.Check("CORE-CANCEL-001", fmt.Errorf("POST /v1/tasks/{id}/cancel: %d of %d cancels, each sent right after the submit, were answered 200 and none of the tasks %v ended CANCELED (reads: %v); a cancel the server accepts must cancel the task unless it had already finished",
				accepted, rounds, ids, f.reads))
		}
	})

	It("cancels a running task with 200 and the Task, and nothing replaces CANCELED", suite.Req("CORE-CANCEL-001", "CORE-CANCEL-003"), func(ctx SpecContext) {
		f := newFlow(ctx)
		if id, why := f.cancelPlain(ctx, false); id == "" {
			needHook(why, suite.RemedyRunning)
		} else {
			fromRun("task "+id+" (CANCELED)", "a plain task of the spec, canceled right after its submit while it ran")
			// The fence: a plain task submitted after the cancel ends after
			// the canceled one would have ended had the cancel not held.
			f.awaitTerminal(ctx, f.submit(ctx, nil))
			f.verifyCanceledHolds(ctx, id)
			return
		}
		id, ms := f.cancelWhileWorking(ctx)
		fromHook("task "+id, "a task in a work step, canceled once WORKING")
		final, _ := f.awaitTerminal(ctx, id)
		if !check.Terminal(final) {
			// Whatever it became, nothing may replace CANCELED: still checked below.
			suite.Check("CORE-CANCEL-001", fmt.Errorf("GET /v1/tasks/%s: the cancel was answered 200, but %s later the task is still %s; want it CANCELED",
				id, suite.Env().Config.Timeouts.Task, final))
		}
		if final == check.Completed && !slices.Contains(f.reads[id], check.Canceled) {
			// Cancellation is cooperative: the task may finish first (on
			// a loaded machine, after both tries of cancelWhileWorking).
			suite.Unverified("the task completed before the cancel took effect on every try; nothing was canceled to check",
				"run again on a less loaded machine, or raise --task-timeout")
		}
		// The fence: the same work and a margin, started after the
		// cancel, ends after the canceled task would have ended had the
		// cancel not held.
		f.awaitTerminal(ctx, f.submit(ctx, workThenComplete(ms+30)))
		f.verifyCanceledHolds(ctx, id)
	})

	It("ends a long-running task with CANCELED once it accepts the cancel", suite.Req("CORE-CANCEL-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		if id, why := f.cancelPlain(ctx, true); id == "" {
			needHook(why, suite.RemedyRunning)
		} else {
			// cancelPlain saw the accepted cancel end the task CANCELED.
			fromRun("task "+id+" (CANCELED)", "a plain task of the spec, read WORKING and then canceled")
			f.awaitTerminal(ctx, f.submit(ctx, nil)) // the fence
			f.verifyCanceledHolds(ctx, id)
			return
		}
		// Ten minutes of work: within the task timeout only the cancel can
		// end it, so an accepted cancel that does nothing is seen.
		id := f.submit(ctx, workThenComplete(600000))
		fromHook("task "+id, "a task in a ten-minute work step, canceled once WORKING")
		f.driveTo(ctx, id, check.Working)
		resp, _ := f.cancel(ctx, id)
		suite.Must("CORE-CANCEL-001", check.Status(resp, 200))
		final, _ := f.awaitTerminal(ctx, id)
		if final != check.Canceled {
			suite.Check("CORE-CANCEL-001", fmt.Errorf("%s: the cancel of the WORKING task was accepted, but %s later the task is %s (reads: %s); want CANCELED — its work cannot have finished",
				resp, suite.Env().Config.Timeouts.Task, final, seqOf(f.reads[id])))
		}
		f.verifyCanceledHolds(ctx, id)
	})

	It("refuses to cancel a FAILED task and leaves it exactly as it was", suite.Req("CORE-CANCEL-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.failedTask(ctx, []any{map[string]any{"op": "fail", "code": "conform_failure"}})
		before, _ := f.get(ctx, id)
		f.refuseTerminalCancel(ctx, id, before)
	})
})

func workThenComplete(ms int) []any {
	return []any{map[string]any{"op": "work", "ms": ms}, map[string]any{"op": "complete", "summary": "worked"}}
}

// cancel asks to cancel a task; a 200 body's status joins the task's reads.
func (f *flow) cancel(ctx context.Context, id string) (*client.Response, map[string]any) {
	GinkgoHelper()
	resp := roundTrip(ctx, client.Request{Method: "POST", Path: "/v1/tasks/" + client.Seg(id) + "/cancel", Body: map[string]any{"reason": "conform cancel probe"}})
	body, _ := resp.Object()
	if s, ok := body["status"].(string); ok && resp.Status == 200 {
		f.reads[id] = append(f.reads[id], s)
	}
	return resp, body
}

// cancelWhileWorking submits a task that works for a while, waits until it
// is WORKING and cancels it, checking the cancel answer. If the task ends
// before the cancel arrives (a loaded machine), it tries once more with
// longer work. It returns the task and its work duration.
func (f *flow) cancelWhileWorking(ctx context.Context) (string, int) {
	GinkgoHelper()
	for _, ms := range []int{60, 1000, 5000} {
		id := f.submit(ctx, workThenComplete(ms))
		if _, ok := f.await(ctx, id, func(s string) bool { return s == check.Working || check.Terminal(s) }); !ok || f.last(id) != check.Working {
			continue
		}
		resp, body := f.cancel(ctx, id)
		if resp.Status != 200 && check.Terminal(f.lastRead(ctx, id)) && f.last(id) != check.Canceled {
			continue // it finished first; cancellation is cooperative
		}
		// A refused cancel leaves nothing canceled to check.
		suite.Must("CORE-CANCEL-001", check.Status(resp, 200))
		if got, _ := body["id"].(string); got != id {
			suite.Check("CORE-CANCEL-001", fmt.Errorf("%s: the answer's id is %q, want the Task %s", resp, got, id))
		}
		suite.Check("CORE-CANCEL-003", check.NoCompletedAt(resp.String(), body))
		return id, ms
	}
	// Not seeing WORKING is the lifecycle specs' to judge (CORE-LIFE-001);
	// here it only means there was nothing running to cancel.
	suite.Unverified("setup: could not catch a scenario task WORKING to cancel it (reads: "+fmt.Sprint(f.reads)+")",
		"run again on a less loaded machine, or raise --task-timeout; if the tasks never read WORKING, see CORE-LIFE-001")
	return "", 0
}

func (f *flow) lastRead(ctx context.Context, id string) string {
	GinkgoHelper()
	f.get(ctx, id)
	return f.last(id)
}

// verifyCanceledHolds checks a task after its cancel settled: once CANCELED
// was seen (in a read or an event), nothing else follows; a CANCELED task
// has no completed_at and no success Outcome; and no cancel moved an
// already-finished task.
func (f *flow) verifyCanceledHolds(ctx context.Context, id string) {
	GinkgoHelper()
	m, resp := f.get(ctx, id)
	task := "/v1/tasks/" + client.Seg(id)
	where := "GET " + task
	suite.Check("CORE-CANCEL-001", check.StaysCanceled(where, f.reads[id]))
	suite.Check("CORE-CANCEL-003", check.NoCompletedAt(where, m))
	evs, err := f.events(ctx, task+"/events")
	if !suite.CheckBlocks("CORE-EVT-001", err, "CORE-CANCEL-001", "CORE-CANCEL-002") {
		return
	}
	cs, err := check.Changes(id, evs)
	if err != nil {
		suite.CheckBlocks("CORE-LIFE-002", fmt.Errorf("%s/events: %w", where, err), "CORE-CANCEL-001", "CORE-CANCEL-002")
		return
	}
	suite.Check("CORE-CANCEL-001", check.StaysCanceled(where+"/events", check.ChangeStatuses(cs)))
	suite.Check("CORE-CANCEL-002", check.CanceledAfterEnd(where+"/events", cs))
	if m["status"] == check.Canceled {
		if oid, ok := m["outcome_id"].(string); ok && oid != "" {
			o := roundTrip(ctx, client.Request{Path: "/v1/outcomes/" + client.Seg(oid)})
			if om, err := o.Object(); err == nil && o.Status == 200 && om["status"] == "SUCCEEDED" {
				suite.Check("CORE-CANCEL-001", fmt.Errorf("%s: the CANCELED task's outcome %s is SUCCEEDED; no success Outcome may replace CANCELED (%s)", where, oid, resp))
			}
		}
	}
}

// refuseTerminalCancel asks to cancel a terminal task and checks the refusal
// and that neither the task nor its events changed.
func (f *flow) refuseTerminalCancel(ctx context.Context, id string, before map[string]any) {
	GinkgoHelper()
	task := "/v1/tasks/" + client.Seg(id)
	where := "GET " + task
	evsBefore, errBefore := f.events(ctx, task+"/events")
	resp, _ := f.cancel(ctx, id)
	suite.Check("CORE-CANCEL-002", check.Refused(resp, []int{400, 409}, "invalid_state_transition", "conflict"))
	if resp.Status >= 400 {
		observeError(resp)
	}
	after, _ := f.get(ctx, id)
	suite.Check("CORE-CANCEL-002", check.Unchanged(where+" after "+resp.String(), before, after,
		"status", "updated_at", "completed_at", "canceled_at", "outcome_id"))
	evsAfter, errAfter := f.events(ctx, task+"/events")
	if err := errors.Join(errBefore, errAfter); err != nil {
		suite.CheckBlocks("CORE-EVT-001", err, "CORE-CANCEL-002")
		return
	}
	csBefore, _ := check.Changes(id, evsBefore)
	csAfter, _ := check.Changes(id, evsAfter)
	if len(csAfter) > len(csBefore) {
		suite.Check("CORE-CANCEL-002", fmt.Errorf("%s/events: after %s a new task state event appeared (%s); a refused cancel changes nothing",
			where, resp, csAfter[len(csBefore)]))
	}
}
