package core

import (
	"context"
	"fmt"
	"net/url"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Outcomes", func() {
	It("gives a finished task outcomes in the outcome enum that match its end, one for a completed task", suite.Req("CORE-OUT-001", "CORE-OUT-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		final, task := f.awaitTerminal(ctx, id)
		if !check.Terminal(final) {
			suite.Unverified(fmt.Sprintf("the target's agent did not finish a plain task within %s (last read %s)", suite.Env().Config.Timeouts.Task, final),
				suite.RemedyAgentEnds)
		}
		found := f.verifyOutcomes(ctx, id, final, task)
		if final == check.Completed && len(found) != 1 {
			suite.Should("CORE-OUT-002", fmt.Errorf("GET /v1/tasks/%s: the COMPLETED task has %d outcomes (%v) by its outcome_id and GET /v1/outcomes?task_id=, want exactly one", id, len(found), found))
		}
	})

	It("gives a FAILED task only FAILED outcomes", suite.Req("CORE-OUT-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.failedTask(ctx, []any{map[string]any{"op": "fail", "code": "conform_failure"}})
		task, _ := f.get(ctx, id)
		f.verifyOutcomes(ctx, id, check.Failed, task)
	})

	It("gives a CANCELED task only CANCELED outcomes", suite.Req("CORE-OUT-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id, why := f.cancelPlain(ctx, false)
		if id != "" {
			fromRun("task "+id+" (CANCELED)", "a plain task of the spec, canceled right after its submit while it ran")
		} else {
			needHook(why, suite.RemedyRunning)
			// Work far longer than the spec runs, so only the cancel ends it.
			id = f.submit(ctx, workThenComplete(60000))
			fromHook("task "+id, "a task in a long work step, canceled once WORKING")
			f.driveTo(ctx, id, check.Working)
			f.cancel(ctx, id)
		}
		final, task := f.awaitTerminal(ctx, id)
		if final != check.Canceled {
			suite.Unverified("the cancel did not end the task within the task timeout (read "+final+"); the cancellation specs judge that",
				"fix task cancellation (see CORE-CANCEL-001)")
		}
		f.verifyOutcomes(ctx, id, final, task)
	})
})

// verifyOutcomes finds the task's outcomes (its outcome_id and the outcome
// list filtered by task_id) and checks each against the task's end. It
// returns the outcome ids found. Failures to read them are the resource
// read checks' business.
func (f *flow) verifyOutcomes(ctx context.Context, taskID, final string, task map[string]any) []string {
	GinkgoHelper()
	var ids []string
	seen := map[string]bool{}
	add := func(where string, o map[string]any) {
		oid, _ := o["id"].(string)
		if tid, ok := o["task_id"].(string); ok && tid != taskID {
			return // a list that ignores the filter: not this task's
		}
		if seen[oid] {
			return
		}
		seen[oid] = true
		ids = append(ids, oid)
		suite.Check("CORE-OUT-001", check.OutcomeMatches(where, o, taskID, final))
	}
	if oid, ok := task["outcome_id"].(string); ok && oid != "" {
		resp := roundTrip(ctx, client.Request{Path: "/v1/outcomes/" + client.Seg(oid)})
		if o, err := resp.Object(); err == nil && resp.Status == 200 {
			add(resp.String(), o)
		}
	}
	resp := roundTrip(ctx, client.Request{Path: "/v1/outcomes", Query: url.Values{"task_id": {taskID}}})
	if m, err := resp.Object(); err == nil && resp.Status == 200 {
		data, _ := m["data"].([]any)
		for _, v := range data {
			if o, ok := v.(map[string]any); ok {
				add(resp.String(), o)
			}
		}
	}
	switch {
	case len(ids) > 0:
	case final == check.Completed:
		// A completed task SHOULD have one (CORE-OUT-002 warns); without
		// it there is nothing to judge here.
		suite.NothingToCheck("CORE-OUT-001", fmt.Sprintf("the COMPLETED task %s has no Outcome (no outcome_id, none listed by GET /v1/outcomes?task_id=)", taskID),
			"give completed tasks their Outcome (Task.outcome_id)")
	default:
		// Failed and canceled tasks MAY have an Outcome: none is within the
		// target's rights.
		suite.NotApplicableTo("CORE-OUT-001", fmt.Sprintf("the %s task %s has no Outcome, which a %s task may lack", final, taskID, final))
	}
	return ids
}
