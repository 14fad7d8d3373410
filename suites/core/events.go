package core

import (
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
		if err != nil || len(all) < 2 {
			Skip(fmt.Sprintf("GET %s gave %d readable events (%v); a range read needs at least two (the event specs judge the list)", path, len(all), err))
		}
		for _, cur := range all {
			resp := roundTrip(ctx, client.Request{Path: path, Query: url.Values{"after_event_id": {cur.ID}}})
			if err := check.Status(resp, 200); err != nil {
				suite.Check("CORE-EVT-003", err)
				continue
			}
			p, err := check.Events(resp)
			if err != nil {
				suite.Check("CORE-EVT-001", err) // the events themselves are malformed
				continue
			}
			suite.Check("CORE-EVT-003", check.Range(resp.String(), all, cur.ID, p.Events))
		}
		resp := roundTrip(ctx, client.Request{Path: path, Query: url.Values{"after_event_id": {suite.Key("conform-unknown-cursor")}}})
		suite.Check("CORE-EVT-003", check.Refused(resp, []int{410}, "cursor_expired"))
	})

	It("bounds event pages by limit and walks every event once by the page cursors", suite.Req("CORE-EVT-004"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		path := "/v1/tasks/" + client.Seg(id) + "/events"
		all, err := f.events(ctx, path)
		if err != nil || len(all) < 3 {
			Skip(fmt.Sprintf("GET %s gave %d readable events (%v); paging needs at least three", path, len(all), err))
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
