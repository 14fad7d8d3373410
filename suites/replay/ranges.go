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
	"github.com/harn-conform/conform/internal/suite"
)

// Event range reads (RPLY-RANGE-001..003; the narrative's "Conformance
// levels / Replay"): the task, session and global event lists take
// after_event_id and limit and return exactly the events that follow the
// cursor, in order; reading a range again gives the same events (and,
// with --restart-cmd, after a restart of the target too); a cursor the
// server does not know is 410 cursor_expired. A plain text task of the
// target's own agent gives the events: no hook needed.

const remedyRestartRange = "give --restart-cmd CMD (or CONFORM_RESTART_CMD) that restarts the target: conform runs it with sh -c and waits for GET /v1 to answer again (docs/ci.md, \"Durability\")"

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
	var got []string
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
		got = append(got, ids(pg)...)
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

// The durability part of RPLY-RANGE-002 restarts the target: one Serial
// spec, as CORE-DUR's.
var _ = Describe("Event ranges across a restart", Serial, func() {
	It("returns the same events for a range read before and after a restart of the target", suite.Req("RPLY-RANGE-002"), func(ctx SpecContext) {
		needReplay()
		env := suite.Env()
		if env.Restart == nil {
			suite.Unverified("no --restart-cmd given: the suite cannot restart the target to see whether event ranges survive a restart", remedyRestartRange)
		}
		src := submitSource(ctx, "", nil, "conform replay: a range across a restart")
		path := "/v1/tasks/" + client.Seg(src.id) + "/events"
		first := str(src.events[0], "id")
		before, _, err := readRange(ctx, path, first, 5)
		suite.Must("RPLY-RANGE-002", err)
		out, err := env.Restart(ctx)
		if err != nil {
			suite.Unverified(fmt.Sprintf("the restart command failed: %v: %s", err, fxClip([]byte(out))), remedyRestartRange)
		}
		// The command returns once the old process is gone; the new one
		// may still be starting (docs/ci.md, the restart contract).
		if err := env.AwaitDiscovery(ctx, env.Config.Timeouts.Restart); err != nil {
			suite.Unverified(fmt.Sprintf("the target did not answer GET /v1 after the restart: %v", err), remedyRestartRange)
		}
		after, _, err := readRange(ctx, path, first, 5)
		suite.Must("RPLY-RANGE-002", err)
		if jsonOf(before) != jsonOf(after) {
			suite.Check("RPLY-RANGE-002", fmt.Errorf("GET %s?after_event_id=%s&limit=5: %s before the restart, %s after: want the same events", path, first, jsonOf(before), jsonOf(after)))
		}
	})
})
