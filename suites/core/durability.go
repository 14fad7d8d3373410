package core

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// recoveredAs are the statuses a task that was not yet terminal may be
// recovered in after a restart (narrative spec, "Task").
var recoveredAs = []string{check.Submitted, check.Working, check.Failed, check.Canceled}

// The durability spec restarts the target in the middle of one spec, so it
// is one It (no spec depends on another) and Serial (under ginkgo -p no
// other spec runs while the target is down). Specs that run after it simply
// talk to the restarted target: each builds its own state.
var _ = Describe("Durability across a restart", Serial, func() {
	It("keeps accepted tasks, in a legal state, and idempotency keys' first responses across a restart", suite.Req("CORE-DUR-001", "CORE-DUR-002"), suite.Late, func(ctx SpecContext) {
		env := suite.Env()
		if env.Restart == nil {
			suite.Unverified("no --restart-cmd given: the suite cannot restart the target to see whether accepted tasks and idempotency keys survive a restart", suite.RemedyRestart)
		}
		// Observations under way beside the run end before the restart
		// would cut them, and before the tasks it catches are started.
		if err := suite.AwaitWatches(ctx); err != nil {
			Fail(err.Error()) // the spec was stopped
		}
		d := newDurability(ctx)
		d.prepare(ctx)
		d.restart(ctx)
		d.checkTasks(ctx)
		d.checkKeys(ctx)
	})
})

// kept is one task accepted before the restart, as it was last seen then.
type kept struct {
	id, label string
	before    map[string]any  // the task read after its events were
	status    string          // before["status"]
	events    map[string]bool // ids of its events before the restart; nil if unreadable
}

// keyed is one idempotent write made before the restart.
type keyed struct {
	what      string         // "Task submit", "Message append"
	req       client.Request // the first request, replayed after the restart
	other     any            // a different body for the same key
	first     *client.Response
	fields    []string // immutable fields compared on a replay
	task      bool     // the write creates a task, which is tracked too
	replays   bool     // before the restart, a retry replayed the first response
	conflicts bool     // before the restart, another body got 409 idempotency_key_reused
}

type durability struct {
	f     *flow
	tasks []*kept
	keys  []*keyed
}

// newDurability makes the spec's own workspace and session (whose stream
// is the restart's witness, suite.Restart).
func newDurability(ctx context.Context) *durability {
	GinkgoHelper()
	ws := workspaceFor(ctx, "CORE-DUR-001")
	se := created(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})
	d := &durability{f: &flow{session: se, reads: map[string][]string{}}}
	DeferCleanup(d.cleanup)
	return d
}

// prepare submits the tasks and makes the idempotent writes the restart
// will be judged on, and reads each as it stands just before the restart.
func (d *durability) prepare(ctx context.Context) {
	GinkgoHelper()
	f := d.f
	// A task that has ended: its terminal state must survive unchanged.
	done := f.submit(ctx, nil)
	f.awaitTerminal(ctx, done)
	d.track(ctx, done, "a plain task awaited to its end")
	if suite.Env().Discovery.Scenarios() != "" {
		// A task in the middle of its work, and one waiting for input.
		working := f.submit(ctx, []any{map[string]any{"op": "work", "ms": 600000}, map[string]any{"op": "complete"}})
		f.await(ctx, working, func(s string) bool { return s == check.Working || check.Terminal(s) })
		d.track(ctx, working, "a scenario task in the middle of a long work step")
		waiting := f.submit(ctx, []any{
			map[string]any{"op": "input_required", "prompt": "conform: durability probe"},
			map[string]any{"op": "complete"},
		})
		f.await(ctx, waiting, func(s string) bool { return s == check.InputRequired || check.Terminal(s) })
		d.track(ctx, waiting, "a scenario task waiting in INPUT_REQUIRED")
	} else {
		suite.Note(`durability: the target does not advertise conform.scenarios, so only plain tasks (no task held WORKING or INPUT_REQUIRED) are carried across the restart`)
	}

	sess := "/v1/sessions/" + client.Seg(f.session)
	d.keys = []*keyed{
		{what: "Task submit", task: true, fields: []string{"session_id", "input"}, other: echoTask("conform durability: another body"),
			req: client.Request{Method: http.MethodPost, Path: sess + "/tasks", Body: echoTask("conform durability: keyed submit"), IdempotencyKey: suite.Key("dur-task")}},
		{what: "Message append", fields: []string{"role", "parts"}, other: map[string]any{"message": textMessage("user", "conform durability: another message")},
			req: client.Request{Method: http.MethodPost, Path: sess + "/messages", Body: map[string]any{"message": textMessage("user", "conform durability: keyed message")}, IdempotencyKey: suite.Key("dur-msg")}},
	}
	for _, k := range d.keys {
		k.first = roundTrip(ctx, k.req)
		m, err := k.first.Object()
		if k.first.Status/100 != 2 || err != nil || idOf(m) == "" {
			owner := reqAppend
			if k.task {
				owner = reqSubmit
			}
			suite.Must(owner, fmt.Errorf("the keyed %s %s did not succeed with a resource id, so this spec cannot run%s", k.what, k.first, hint(k.first)))
		}
		// Only what holds before the restart is judged after it: a key that
		// never replays is CORE-IDEM-*'s failure, not a durability one.
		k.replays = check.Replayed(k.first, roundTrip(ctx, k.req), k.fields...) == nil
		k.conflicts = check.Refused(roundTrip(ctx, k.withOtherBody()), []int{http.StatusConflict}, "idempotency_key_reused") == nil
		if k.task {
			d.track(ctx, idOf(m), "a task submitted with an Idempotency-Key")
		}
	}
	// Last, a task submitted just before the restart: on a target whose
	// agent takes a moment it is still SUBMITTED or WORKING when it begins.
	d.track(ctx, f.submit(ctx, nil), "a plain task submitted just before the restart")
}

// withOtherBody is the key's request with a different body.
func (k *keyed) withOtherBody() client.Request {
	r := k.req
	r.Body = k.other
	return r
}

// track reads a task's events and then the task itself, in that order: an
// event missing from the snapshot happened after the status was read, so a
// task seen to move on later can be told from one recovered in a state the
// spec does not allow.
func (d *durability) track(ctx context.Context, id, label string) {
	GinkgoHelper()
	t := &kept{id: id, label: label}
	if evs, err := d.f.events(ctx, "/v1/tasks/"+client.Seg(id)+"/events"); err == nil {
		t.events = map[string]bool{}
		for _, e := range evs {
			t.events[e.ID] = true
		}
	}
	t.before, _ = d.f.get(ctx, id)
	t.status, _ = t.before["status"].(string)
	d.tasks = append(d.tasks, t)
}

// restart restarts the target through suite.Restart, which waits for it
// to answer again and proves that it restarted (the session's stream,
// opened before, has ended). A restart that fails, a target that does not
// come back, or one that did not restart is an error of the run (the
// operator's restart broke), never the target's failure.
func (d *durability) restart(ctx context.Context) {
	GinkgoHelper()
	var states []string
	for _, t := range d.tasks {
		states = append(states, t.id+" "+t.status)
	}
	suite.Note("durability: tasks before the restart: " + strings.Join(states, ", "))
	suite.Restart(ctx, "/v1/sessions/"+client.Seg(d.f.session)+"/events/stream")
}

// checkTasks reads every task accepted before the restart (CORE-DUR-001).
func (d *durability) checkTasks(ctx context.Context) {
	GinkgoHelper()
	for _, t := range d.tasks {
		suite.Check("CORE-DUR-001", d.recovered(ctx, t))
	}
}

// recovered judges one task after the restart: still there, still itself,
// a terminal state unchanged, otherwise recovered as SUBMITTED, WORKING,
// FAILED or CANCELED — or moved on from there, as its events since the
// snapshot show.
func (d *durability) recovered(ctx context.Context, t *kept) error {
	GinkgoHelper()
	resp := roundTrip(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(t.id)})
	if resp.Status == http.StatusNotFound || resp.Status == http.StatusGone {
		return fmt.Errorf("%s: %s (%s before the restart) is gone after it%s", resp, t.label, t.status, hint(resp))
	}
	if resp.Status != http.StatusOK {
		return fmt.Errorf("%s: want 200 with %s (%s before the restart)%s", resp, t.label, t.status, hint(resp))
	}
	after, err := resp.Object()
	if err != nil {
		return err
	}
	if err := check.Unchanged(resp.String()+" ("+t.label+", across the restart)", t.before, after, "id", "session_id"); err != nil {
		return err
	}
	now, _ := after["status"].(string)
	d.f.reads[t.id] = append(d.f.reads[t.id], now)
	switch {
	case !check.KnownStatus(now):
		return fmt.Errorf("%s: %s reads status %s after the restart, which is not a task status", resp, t.label, quote(after["status"]))
	case check.Terminal(t.status) && now != t.status:
		return fmt.Errorf("%s: %s was %s before the restart and is %s after it: a terminal state must not change", resp, t.label, t.status, now)
	case check.Terminal(t.status), slices.Contains(recoveredAs, now):
		return nil
	}
	// INPUT_REQUIRED, AUTH_REQUIRED or COMPLETED: legal only as a move made
	// since the snapshot (before the restart, or after a legal recovery),
	// which the task's state events record.
	if t.events == nil {
		suite.NothingToCheck("CORE-DUR-001", fmt.Sprintf("%s: %s was %s before the restart and is %s after it; its event list could not be read, so whether it was recovered as %s and moved on cannot be told",
			resp, t.label, t.status, now, strings.Join(recoveredAs, ", ")), "make GET /v1/tasks/{id}/events readable (CORE-EVT-*)")
		return nil
	}
	evs, err := d.f.events(ctx, "/v1/tasks/"+client.Seg(t.id)+"/events")
	if err != nil {
		suite.NothingToCheck("CORE-DUR-001", fmt.Sprintf("%s: %s is %s after the restart, but its event list could not be read: %v", resp, t.label, now, err),
			"make GET /v1/tasks/{id}/events readable (CORE-EVT-*)")
		return nil
	}
	cs, _ := check.Changes(t.id, evs)
	for _, c := range cs {
		if !t.events[c.EventID] && c.To == now {
			return nil
		}
	}
	return fmt.Errorf("%s: %s was %s before the restart and is still %s after it, with no state event since: a task that was not terminal must be recovered as %s",
		resp, t.label, t.status, now, strings.Join(recoveredAs, ", "))
}

// checkKeys retries every idempotent write after the restart (CORE-DUR-002):
// the same body gets the first response, another body 409.
func (d *durability) checkKeys(ctx context.Context) {
	GinkgoHelper()
	for _, k := range d.keys {
		if !k.replays {
			suite.NothingToCheck("CORE-DUR-002", fmt.Sprintf("the keyed %s did not replay its first response even before the restart, so its survival cannot be judged", k.what),
				"make retries with the same Idempotency-Key and body return the first response (CORE-IDEM-001, CORE-IDEM-004)")
		} else if err := check.Replayed(k.first, roundTrip(ctx, k.req), k.fields...); err != nil {
			suite.Check("CORE-DUR-002", fmt.Errorf("after the restart, the %s retried with the same Idempotency-Key and body: %w", k.what, err))
		}
		if !k.conflicts {
			suite.NothingToCheck("CORE-DUR-002", fmt.Sprintf("the keyed %s's key reused with another body was not refused with 409 even before the restart", k.what),
				"refuse a key reused with a different body with 409 idempotency_key_reused (CORE-IDEM-002, CORE-IDEM-005)")
		} else if err := check.Refused(roundTrip(ctx, k.withOtherBody()), []int{http.StatusConflict}, "idempotency_key_reused"); err != nil {
			suite.Check("CORE-DUR-002", fmt.Errorf("after the restart, the %s's Idempotency-Key reused with another body: %w", k.what, err))
		}
	}
}

// cleanup cancels the spec's tasks that may still run (the long work step,
// the task waiting for input, on a target that kept them going), so they
// do not outlive the spec. Best effort: its answers are not judged.
func (d *durability) cleanup(ctx SpecContext) {
	for _, t := range d.tasks {
		if r := d.f.reads[t.id]; len(r) > 0 && check.Terminal(r[len(r)-1]) {
			continue
		}
		suite.Client().Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(t.id) + "/cancel",
			Body: map[string]any{"reason": "conform durability probe done"}})
	}
}
