package replay

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// The replay API (RPLY-API-001..005, RPLY-API-007, RPLY-API-008,
// RPLY-LEVEL-001; spec 002, "REST entrypoint"; docs/replay.md, "The replay
// surface a target offers"): POST /v1/tasks/{id}/replay on a finished task
// answers 202 with a new Task naming the source in parent_task_id (in the
// answer and in later reads), in the source's session and workspace (or on
// a Branch whose lineage leads back to it), which goes through the
// ordinary lifecycle; the body is optional; it creates a Task, so it takes
// an Idempotency-Key as every such write; a task that does not exist is
// 404. All of it is checked on a plain text task of the target's own
// agent: no hook needed.

// plainRun is a plain text task (the target's own agent) and one exact
// replay of it, shared by the specs that need no recorded dependency.
type plainRun struct {
	src   *source
	exact *replayRun // {"mode": "exact"}
	gen   int64      // suite.Restarts() when it was made
}

var plainShared *plainRun

// thePlain returns the shared plain source and its exact replay, making
// them on first use. A replay that was refused or did not finish ends the
// spec unverified (the API spec judges the acceptance).
func thePlain(ctx context.Context) *plainRun {
	GinkgoHelper()
	if plainShared == nil || plainShared.gen != suite.Restarts() {
		gen := suite.Restarts()
		src := submitSource(ctx, "", nil, "conform replay: a plain source")
		plainShared = &plainRun{src: src, exact: replayOf(ctx, src.id, map[string]any{"mode": "exact"}), gen: gen}
	}
	p := plainShared
	switch {
	case !p.exact.accepted():
		suite.Unverified(fmt.Sprintf("the exact replay of task %s was refused: %s %s", p.src.id, p.exact.resp, fxClip(p.exact.resp.Body)), "accept POST /v1/tasks/{id}/replay on a finished task (RPLY-API-001)")
	case p.exact.why != "":
		suite.Unverified("the exact replay: "+p.exact.why, "let the replay task finish within --task-timeout and serve its events")
	}
	return p
}

var _ = Describe("Replay API", func() {
	It("answers 202 with a new Task naming the source, in its session and workspace, that goes through the ordinary lifecycle", suite.Req("RPLY-API-001", "RPLY-API-002", "RPLY-API-003", "RPLY-API-004"), func(ctx SpecContext) {
		needReplay()
		src := submitSource(ctx, "", nil, "conform replay: API source")
		r := replayOf(ctx, src.id, map[string]any{"mode": "exact"})
		where := "POST /v1/tasks/" + src.id + "/replay"
		switch {
		case r.resp.Status != http.StatusAccepted:
			suite.Check("RPLY-API-001", fmt.Errorf("%s: %s %s, want 202 with the replay Task", where, r.resp, fxClip(r.resp.Body)))
		case r.id == "" || r.answer["object"] != nil && r.answer["object"] != "task":
			suite.Check("RPLY-API-001", fmt.Errorf("%s: 202 with %s, want a Task (object \"task\", an id)", where, fxClip(r.resp.Body)))
		case r.id == src.id:
			suite.Check("RPLY-API-001", fmt.Errorf("%s: the replay Task has the source's own id %s, want a new task", where, r.id))
		}
		if r.id == "" || r.id == src.id {
			suite.Stop("RPLY-API-001")
		}
		if got := str(r.answer, "parent_task_id"); got != src.id {
			suite.Check("RPLY-API-002", fmt.Errorf("%s: the 202 answer's parent_task_id = %s, want the source task %s", where, jsonOf(r.answer["parent_task_id"]), src.id))
		}
		if r.why != "" {
			suite.Unverified("the replay task: "+r.why, "let the replay task finish within --task-timeout and serve its events")
		}
		if got := str(r.task, "parent_task_id"); got != src.id {
			suite.Check("RPLY-API-002", fmt.Errorf("GET /v1/tasks/%s: parent_task_id = %s, want the source task %s", r.id, jsonOf(r.task["parent_task_id"]), src.id))
		}
		items, _ := listTasks(ctx, src.session)
		for _, t := range items {
			if str(t, "id") == r.id && str(t, "parent_task_id") != src.id {
				suite.Check("RPLY-API-002", fmt.Errorf("GET /v1/sessions/%s/tasks: the replay task %s has parent_task_id %s, want the source task %s", src.session, r.id, jsonOf(t["parent_task_id"]), src.id))
			}
		}
		suite.Check("RPLY-API-003", sameHome(ctx, src, r))
		suite.Check("RPLY-API-004", lifecycle(r))
	})

	It("accepts a replay request with no body, or an empty object, as an exact replay", suite.Req("RPLY-API-005"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		for _, tc := range []struct {
			what string
			body any
		}{{"no body", nil}, {"an empty object {}", map[string]any{}}} {
			r := replayOf(ctx, p.src.id, tc.body)
			if r.resp.Status/100 != 2 || r.id == "" {
				suite.Check("RPLY-API-005", fmt.Errorf("POST /v1/tasks/%s/replay with %s: %s %s, want 202 with an exact replay Task; the body is optional", p.src.id, tc.what, r.resp, fxClip(r.resp.Body)))
				continue
			}
			if m := taskMode(r.answer); m != "" && m != "exact" {
				suite.Check("RPLY-API-005", fmt.Errorf("POST /v1/tasks/%s/replay with %s: metadata.replay.mode = %q, want \"exact\" (the default mode)", p.src.id, tc.what, m))
			}
			for _, e := range r.output() {
				if m := replayMeta(e); m != nil && m["mode"] != nil && m["mode"] != "exact" {
					suite.Check("RPLY-API-005", fmt.Errorf("replay task %s (%s): event %s says replay.mode %s, want \"exact\" (the default mode)", r.id, tc.what, str(e, "id"), jsonOf(m["mode"])))
					break
				}
			}
		}
	})

	It("takes an Idempotency-Key on a replay request: the same key and body give the same replay task, another body 409 idempotency_key_reused", suite.Req("RPLY-API-007"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-API-007"
		p := thePlain(ctx)
		keyed := client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(p.src.id) + "/replay",
			Body: map[string]any{"mode": "exact", "reason": "conform: a keyed replay"}, IdempotencyKey: suite.Key("replay-idem")}
		first := suite.Do(ctx, keyed)
		if first.Status/100 != 2 {
			suite.Unverified(fmt.Sprintf("POST /v1/tasks/%s/replay with an Idempotency-Key: %s %s, so a retry cannot be compared with it", p.src.id, first, fxClip(first.Body)),
				"accept the replay request (RPLY-API-001, RPLY-MODE-001 report it)")
		}
		suite.Check(req, check.Replayed(first, suite.Do(ctx, keyed), "parent_task_id", "session_id"))
		other := keyed
		other.Body = map[string]any{"mode": "exact", "reason": "conform: another body for the same key"}
		suite.Check(req, check.Refused(suite.Do(ctx, other), []int{http.StatusConflict}, "idempotency_key_reused"))
	})

	It("refuses to replay a task that does not exist with 404 resource_not_found", suite.Req("RPLY-API-008"), func(ctx SpecContext) {
		needReplay()
		unknown := "task_conform_unknown_" + suite.Key("rp")
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(unknown) + "/replay", Body: map[string]any{"mode": "exact"}})
		if err := check.Refused(resp, []int{http.StatusNotFound}, "resource_not_found"); err != nil {
			suite.Check("RPLY-API-008", fmt.Errorf("POST /v1/tasks/%s/replay, a task that does not exist: %w", unknown, err))
		}
	})

	It("advertises receipts beside replay", suite.Req("RPLY-LEVEL-001"), func(ctx SpecContext) {
		needReplay()
		if !suite.Env().Discovery.Claims(requirements.Receipts) {
			suite.Should("RPLY-LEVEL-001", fmt.Errorf("discovery advertises replay but not receipts (capabilities.receipts): a production Harness that offers Replay should also offer Receipts"))
		}
	})
})

// taskMode is a Task's metadata.replay.mode ("" when absent).
func taskMode(t map[string]any) string {
	md, _ := t["metadata"].(map[string]any)
	rp, _ := md["replay"].(map[string]any)
	return str(rp, "mode")
}

// listTasks reads a session's task list (first page).
func listTasks(ctx context.Context, session string) ([]map[string]any, error) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: "/v1/sessions/" + client.Seg(session) + "/tasks", Query: url.Values{"limit": {"200"}}})
	if err := check.Status(resp, http.StatusOK); err != nil {
		return nil, err
	}
	p, err := check.ListPage(resp)
	return p.Items, err
}

// sameHome checks that the replay task lives in the source's session and
// workspace, or names a Branch whose lineage leads back to the source.
func sameHome(ctx context.Context, src *source, r *replayRun) error {
	GinkgoHelper()
	t := r.task
	if str(t, "session_id") == src.session && str(t, "workspace_id") == src.workspace {
		return nil
	}
	where := fmt.Sprintf("replay task %s of %s: session_id %s, workspace_id %s, want the source's (%s, %s)", r.id, src.id, jsonOf(t["session_id"]), jsonOf(t["workspace_id"]), src.session, src.workspace)
	b := str(t, "branch_id")
	if b == "" || b == str(src.task, "branch_id") {
		return fmt.Errorf("%s, or a branch_id of its own whose lineage leads back to the source", where)
	}
	resp := suite.Do(ctx, client.Request{Path: "/v1/branches/" + client.Seg(b)})
	if resp.Status != http.StatusOK {
		return fmt.Errorf("%s; it names branch %s, but GET /v1/branches/%s answers %s", where, b, b, resp)
	}
	body := string(resp.Body)
	if !strings.Contains(body, src.session) && !strings.Contains(body, src.id) {
		return fmt.Errorf("%s; its branch %s names neither the source's session nor the source task: no lineage back to the source", where, b)
	}
	return nil
}

// lifecycle checks that the replay task emitted the ordinary task.*
// lifecycle events, task.started included, each transition legal.
func lifecycle(r *replayRun) error {
	var evs []check.Event
	for _, e := range r.events {
		if d, err := check.DecodeEvent(e); err == nil {
			evs = append(evs, d)
		}
	}
	cs, err := check.Changes(r.id, evs)
	where := fmt.Sprintf("replay task %s (events %v)", r.id, kinds(r.events))
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	if err := check.Legal(where, check.Submitted, cs); err != nil {
		return err
	}
	k := kinds(r.events)
	if !slices.Contains(k, "task.started") {
		return fmt.Errorf("%s: no task.started: a replay run goes through the ordinary lifecycle (SUBMITTED → WORKING → terminal)", where)
	}
	final := "task." + strings.ToLower(r.status)
	if !slices.Contains(k, final) {
		return fmt.Errorf("%s: the task ended %s but emitted no %s", where, r.status, final)
	}
	return nil
}
