package core

import (
	"context"
	"fmt"
	"net/url"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Events", func() {
	It("lists a task's events with the required fields and increasing sequences, and serves them by id", suite.Req("CORE-EVT-001", "CORE-EVT-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		path := "/v1/tasks/" + client.Seg(id) + "/events"
		evs, err := f.events(ctx, path)
		suite.Must("CORE-EVT-001", err)
		if len(evs) == 0 {
			suite.Must("CORE-EVT-001", fmt.Errorf("GET %s: the event list of a submitted task is empty; want at least the events of its lifecycle", path))
		}
		suite.Check("CORE-EVT-002", check.Sequences("GET "+path, evs))
		for _, e := range []check.Event{evs[0], evs[len(evs)-1]} {
			resp := roundTrip(ctx, client.Request{Path: "/v1/events/" + client.Seg(e.ID)})
			// Whether the read succeeds and equals the listed event is the
			// resource reads' check (CORE-READ-014); here, its fields.
			if resp.Status != 200 {
				continue
			}
			if _, err := check.DecodeEventJSON(resp.Body); err != nil {
				suite.Check("CORE-EVT-001", fmt.Errorf("%s: %w", resp, err))
			}
		}
	})

	It("lists a session's events with the required fields and increasing sequences per resource", suite.Req("CORE-EVT-001", "CORE-EVT-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		f.awaitTerminal(ctx, f.submit(ctx, nil))
		path := "/v1/sessions/" + client.Seg(f.session) + "/events"
		evs, err := f.events(ctx, path)
		suite.Must("CORE-EVT-001", err)
		suite.Check("CORE-EVT-002", check.Sequences("GET "+path, evs))
	})

	It("reads exactly the events after after_event_id, and refuses an unknown cursor with 410", suite.Req("CORE-EVT-003"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		path := "/v1/tasks/" + client.Seg(id) + "/events"
		all, err := f.events(ctx, path)
		suite.Must("CORE-EVT-001", err)
		if len(all) < 2 {
			suite.Unverified(fmt.Sprintf("GET %s gave %d events; a range read needs at least two", path, len(all)), remedyFewEvents)
		}
		// Every cursor, and every page after it: a range longer than one
		// default page is compared whole, not cut at the page's end.
		for _, cur := range all {
			got, where, err := f.eventsAfter(ctx, path, cur.ID)
			if err != nil {
				suite.Check("CORE-EVT-003", err)
				continue
			}
			suite.Check("CORE-EVT-003", check.Range(where, all, cur.ID, got))
		}
		resp := roundTrip(ctx, client.Request{Path: path, Query: url.Values{"after_event_id": {suite.Key("conform-unknown-cursor")}}})
		suite.Check("CORE-EVT-003", check.Refused(resp, []int{410}, "cursor_expired"))
		if resp.Status >= 400 {
			observeError(resp)
		}
	})

	It("bounds event pages by limit and walks every event once by the page cursors", suite.Req("CORE-EVT-004"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		path := "/v1/tasks/" + client.Seg(id) + "/events"
		all, err := f.events(ctx, path)
		suite.Must("CORE-EVT-001", err)
		if len(all) < 3 {
			suite.Unverified(fmt.Sprintf("GET %s gave %d events; paging needs at least three", path, len(all)), remedyFewEvents)
		}
		const limit = 2
		var pages []check.EventPage
		q := url.Values{"limit": {strconv.Itoa(limit)}}
		// Enough pages for every event plus two, so a walk that never ends
		// is seen as repeating, not waited on.
		for range len(all)/limit + 3 {
			resp := roundTrip(ctx, client.Request{Path: path, Query: q})
			suite.Must("CORE-EVT-004", check.Status(resp, 200))
			p, err := check.Events(resp)
			suite.Must("CORE-EVT-001", err) // the events themselves are malformed
			pages = append(pages, p)
			if !p.HasMore || p.NextCursor == "" {
				break
			}
			q = url.Values{"limit": {strconv.Itoa(limit)}, "after_event_id": {p.NextCursor}}
		}
		suite.Check("CORE-EVT-004", check.Pages("GET "+path+"?limit=2", limit, pages, all))
	})
})

// remedyFewEvents is what a target whose plain tasks make too few events
// can do so that event ranges, paging and resume are verified.
const remedyFewEvents = "let a plain text task produce at least three events (e.g. task.started, an agent.message, task.completed), or implement the conform.scenarios hook (docs/scenarios.md)"

// eventsAfter reads every event after cursor, following the pages. An
// answer that is not a 200 event list is returned as the error (under the
// range requirement: the events after a cursor could not be read).
func (f *flow) eventsAfter(ctx context.Context, path, cursor string) ([]check.Event, string, error) {
	GinkgoHelper()
	var got []check.Event
	where := fmt.Sprintf("GET %s?after_event_id=%s", path, cursor)
	seen := map[string]bool{cursor: true}
	q := url.Values{"after_event_id": {cursor}}
	for range 50 {
		resp := roundTrip(ctx, client.Request{Path: path, Query: q})
		if err := check.Status(resp, 200); err != nil {
			if resp.Status >= 400 {
				observeError(resp)
			}
			return got, where, err
		}
		p, err := check.Events(resp)
		if err != nil {
			suite.Check("CORE-EVT-001", err) // the events themselves are malformed
			return got, where, fmt.Errorf("%s: the events after the cursor could not be decoded", resp)
		}
		got = append(got, p.Events...)
		if !p.HasMore || p.NextCursor == "" {
			return got, where + " (all pages)", nil
		}
		if seen[p.NextCursor] {
			return got, where, fmt.Errorf("%s: the next page cursor %q repeats a cursor already followed; the pages never end", resp, p.NextCursor)
		}
		seen[p.NextCursor] = true
		q = url.Values{"after_event_id": {p.NextCursor}}
	}
	return got, where, fmt.Errorf("%s: more than 50 pages after the cursor; the pages never end", where)
}
