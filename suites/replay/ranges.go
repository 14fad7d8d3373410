package replay

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/suite"
)

// Event range reads (RPLY-RANGE-001..003; the narrative's "Conformance
// levels / Replay"): the task, session and global event lists take
// after_event_id and limit and return exactly the events that follow the
// cursor, in order; reading a range again gives the same events (and,
// with --restart-cmd, after a restart of the target too); a cursor the
// server does not know is 410 cursor_expired. A plain text task of the
// target's own agent gives the events: no hook needed.

// rangeLists are the three lists of the plain source's events.
func rangeLists(p *plainRun) []struct{ name, path string } {
	return []struct{ name, path string }{
		{"the task's", "/v1/tasks/" + client.Seg(p.src.id) + "/events"},
		{"the session's", "/v1/sessions/" + client.Seg(p.src.session) + "/events"},
		{"the global", "/v1/events"},
	}
}

// readRange reads one page of path after cursor with limit.
func readRange(ctx context.Context, path, cursor string, limit int) ([]map[string]any, *client.Response, error) {
	GinkgoHelper()
	q := url.Values{"after_event_id": {cursor}, "limit": {strconv.Itoa(limit)}}
	resp := suite.Do(ctx, client.Request{Path: path, Query: q})
	if err := check.Status(resp, http.StatusOK); err != nil {
		return nil, resp, err
	}
	pg, err := check.ListPage(resp)
	return pg.Items, resp, err
}

func ids(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, str(e, "id"))
	}
	return out
}

// walk pages through path after cursor, limit at a time, each page read
// after the last id of the page before, until an empty page or upTo events.
func walk(ctx context.Context, path, cursor string, limit, upTo int) ([]string, error) {
	GinkgoHelper()
	evs, err := walkEvents(ctx, path, cursor, limit, upTo)
	return ids(evs), err
}

// walkEvents is walk that keeps the events as they were read.
func walkEvents(ctx context.Context, path, cursor string, limit, upTo int) ([]map[string]any, error) {
	GinkgoHelper()
	var got []map[string]any
	for len(got) < upTo {
		pg, _, err := readRange(ctx, path, cursor, limit)
		if err != nil {
			return got, err
		}
		if len(pg) > limit {
			return got, fmt.Errorf("GET %s?after_event_id=%s&limit=%d: %d events, more than the limit", path, cursor, limit, len(pg))
		}
		if len(pg) == 0 {
			break
		}
		got = append(got, pg...)
		cursor = str(pg[len(pg)-1], "id")
	}
	return got, nil
}

// repeated is the first id that occurs twice in list ("" when none).
func repeated(list []string) string {
	seen := map[string]bool{}
	for _, id := range list {
		if seen[id] {
			return id
		}
		seen[id] = true
	}
	return ""
}

var _ = Describe("Event range reads", func() {
	It("returns exactly the events after after_event_id, limit at a time, on the task, session and global lists", suite.Req("RPLY-RANGE-001"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-RANGE-001"
		p := thePlain(ctx)
		all := p.src.events
		if len(all) < 3 {
			suite.Unverified(fmt.Sprintf("the plain task %s has %d events, too few to read a range after the first", p.src.id, len(all)), suite.RemedyScenarios)
		}
		first := str(all[0], "id")
		for _, l := range rangeLists(p) {
			where := fmt.Sprintf("GET %s?after_event_id=%s (%s list)", l.path, first, l.name)
			// One read of a range: at most limit events, and on the task's
			// list exactly those that follow the cursor.
			a, _, err := readRange(ctx, l.path, first, 4)
			if !suite.Check(req, err) {
				continue
			}
			if len(a) > 4 {
				suite.Check(req, fmt.Errorf("%s&limit=4: %d events, more than the limit", where, len(a)))
				continue
			}
			if l.name == "the task's" {
				if want := ids(all[1:min(len(all), 5)]); jsonOf(ids(a)) != jsonOf(want) {
					suite.Check(req, fmt.Errorf("%s&limit=4: %v, want exactly the events that follow it: %v", where, ids(a), want))
					continue
				}
			}
			// Paging on with the last id returned walks the log with no
			// event missing or repeated: the whole task log (then an empty
			// page), and on the session and global lists the same events
			// as one read of the same range.
			upTo := 8
			if l.name == "the task's" {
				upTo = len(all) + 2
			}
			w, err := walk(ctx, l.path, first, 2, upTo)
			if !suite.Check(req, err) {
				continue
			}
			if id := repeated(w); id != "" {
				suite.Check(req, fmt.Errorf("%s, paged on 2 at a time after the last id returned: %v repeats event %s", where, w, id))
				continue
			}
			var want []string
			switch l.name {
			case "the task's":
				want = ids(all[1:])
			case "the session's":
				want = sessionAfter(ctx, l.path, first)
			}
			if want == nil && len(w) > 0 {
				one, _, err := readRange(ctx, l.path, first, len(w))
				if !suite.Check(req, err) {
					continue
				}
				want = ids(one)
			}
			if l.name != "the task's" {
				want = want[:min(len(want), upTo)]
			}
			if len(w) == 0 || jsonOf(w) != jsonOf(want) {
				suite.Check(req, fmt.Errorf("%s, paged on 2 at a time after the last id returned: %v, want %v (the events that follow it, none missing or repeated)", where, w, want))
			}
		}
	})

	It("returns the same events when the same range is read again", suite.Req("RPLY-RANGE-002"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		first := str(p.src.events[0], "id")
		for _, l := range rangeLists(p)[:2] {
			a, _, err := readRange(ctx, l.path, first, 5)
			if !suite.Check("RPLY-RANGE-002", err) {
				continue
			}
			b, _, err := readRange(ctx, l.path, first, 5)
			if suite.Check("RPLY-RANGE-002", err) && jsonOf(a) != jsonOf(b) {
				suite.Check("RPLY-RANGE-002", fmt.Errorf("GET %s?after_event_id=%s&limit=5 read twice (%s list): %s, then %s; want the same events, ids, order and content", l.path, first, l.name, jsonOf(a), jsonOf(b)))
			}
		}
	})

	It("refuses an unknown after_event_id with 410 cursor_expired", suite.Req("RPLY-RANGE-003"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		unknown := "evt_conform_unknown_" + suite.Key("cur")
		for _, l := range rangeLists(p) {
			resp := suite.Do(ctx, client.Request{Path: l.path, Query: url.Values{"after_event_id": {unknown}, "limit": {"5"}}})
			suite.Check("RPLY-RANGE-003", check.Refused(resp, []int{http.StatusGone}, "cursor_expired"))
		}
	})
})

// sessionAfter is the ids that follow cursor in the session's whole event
// list, read without a cursor (nil when it cannot be read in one page or
// does not hold the cursor: the walk is then compared with one read of the
// range instead).
func sessionAfter(ctx context.Context, path, cursor string) []string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: path, Query: url.Values{"limit": {"200"}}})
	if resp.Status != http.StatusOK {
		return nil
	}
	pg, err := check.ListPage(resp)
	if err != nil || pg.HasMore {
		return nil
	}
	for i, e := range pg.Items {
		if str(e, "id") == cursor {
			return append([]string{}, ids(pg.Items[i+1:])...)
		}
	}
	return nil
}

// The durability parts of RPLY-RANGE-002 and RPLY-RETAIN-001 restart the
// target: one Serial spec, as CORE-DUR's, through the same suite.Restart
// (it waits for GET /v1 and proves the restart). A source task (with
// recorded dependencies when the scenario hook is there, a plain one
// otherwise) and an exact replay of it are made before the restart; after
// it, the same range reads the same events (RPLY-RANGE-002), the source's
// and the replay's whole histories read the same, and the source can still
// be replayed in full: a new exact replay completes with the same output
// (RPLY-RETAIN-001, docs/interpretations.md#replay-retention).
var _ = Describe("Replay across a restart", Serial, func() {
	It("keeps event ranges, histories and replayability across a restart of the target", suite.Req("RPLY-RANGE-002", "RPLY-RETAIN-001"), suite.Late, func(ctx SpecContext) {
		needReplay()
		if suite.Env().Restart == nil {
			suite.Unverified("no --restart-cmd given: the suite cannot restart the target to see whether event ranges and histories survive a restart", suite.RemedyRestart)
		}
		// Observations under way beside the run end before the restart
		// would cut them (suite.Watch).
		if err := suite.AwaitWatches(ctx); err != nil {
			Fail(err.Error()) // the spec was stopped
		}
		const retain = "RPLY-RETAIN-001"
		var steps []any
		if hooked() {
			steps = depSteps()
		}
		src := submitSource(ctx, "", steps, "conform replay: a history across a restart")
		path := "/v1/tasks/" + client.Seg(src.id) + "/events"
		first := str(src.events[0], "id")
		before, _, err := readRange(ctx, path, first, 5)
		suite.Must("RPLY-RANGE-002", err)
		pre := mustReplay(ctx, src.id, map[string]any{"mode": "exact"}, "the exact replay before the restart")
		pre.completed("the exact replay before the restart")

		suite.Restart(ctx, "/v1/sessions/"+client.Seg(src.session)+"/events/stream")

		after, _, err := readRange(ctx, path, first, 5)
		if suite.Check("RPLY-RANGE-002", err) && jsonOf(before) != jsonOf(after) {
			suite.Check("RPLY-RANGE-002", fmt.Errorf("GET %s?after_event_id=%s&limit=5: %s before the restart, %s after: want the same events", path, first, jsonOf(before), jsonOf(after)))
		}
		for _, h := range []struct {
			what, task string
			evs        []map[string]any
		}{{"the source task", src.id, src.events}, {"its exact replay", pre.id, pre.events}} {
			now, err := tgt.events(ctx, h.task)
			switch {
			case err != nil:
				suite.Check(retain, fmt.Errorf("after the restart, the history of %s %s cannot be read: %v", h.what, h.task, err))
			case len(now) < len(h.evs) || jsonOf(now[:len(h.evs)]) != jsonOf(h.evs):
				// (Events after them, a late one of the task's own, may follow.)
				suite.Check(retain, fmt.Errorf("GET /v1/tasks/%s/events (%s): %d events %v before the restart, %d %v after it: want the whole history, the same events", h.task, h.what, len(h.evs), ids(h.evs), len(now), ids(now)))
			}
		}
		r := replayOf(ctx, src.id, map[string]any{"mode": "exact"})
		switch {
		case !r.accepted():
			suite.Check(retain, fmt.Errorf("after the restart, POST /v1/tasks/%s/replay (exact) of a task that ran before it: %s %s, want it replayed: the history is kept for replay, restarts included", src.id, r.resp, fxClip(r.resp.Body)))
		case r.why != "":
			suite.NothingToCheck(retain, "the exact replay after the restart: "+r.why, "let the replay task finish within --task-timeout and serve its events")
		case r.status != check.Completed:
			b, _ := r.task["failure"].(map[string]any)
			suite.Check(retain, fmt.Errorf("after the restart, the exact replay %s of task %s, which ran before it, ended %s (failure %s); the same replay before the restart completed: the history is kept for replay, restarts included", r.id, src.id, r.status, jsonOf(b)))
		default:
			var a, b []string
			for _, e := range pre.output() {
				a = append(a, replaydet.Content(e))
			}
			for _, e := range r.output() {
				b = append(b, replaydet.Content(e))
			}
			if jsonOf(a) != jsonOf(b) {
				suite.Check(retain, fmt.Errorf("the exact replay of task %s replays %s after the restart (task %s), %s before it (task %s): want the same history replayed in full", src.id, jsonOf(b), r.id, jsonOf(a), pre.id))
			}
		}
	})
})
