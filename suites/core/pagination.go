package core

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// pagedSession creates a Session holding n Tasks and returns the Session id
// and the Task ids in submit order.
func pagedSession(ctx SpecContext, req string, n int) (string, []string) {
	GinkgoHelper()
	sess := sessionID(ctx, req)
	ids := make([]string, 0, n)
	for i := range n {
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask(fmt.Sprintf("page item %d", i))}, req)
		ids = append(ids, idOf(succeeded(reqSubmit, resp)))
	}
	return sess, ids
}

var _ = Describe("Pagination", func() {
	It("answers the Core list reads with the list envelope", suite.Req("CORE-PAGE-001"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-PAGE-001")
		for _, path := range []string{"/v1/tasks", "/v1/sessions", "/v1/sessions/" + client.Seg(sess) + "/tasks", "/v1/sessions/" + client.Seg(sess) + "/messages",
			"/v1/artifacts", "/v1/events", "/v1/outcomes"} {
			resp := suite.Do(ctx, client.Request{Path: path, Query: url.Values{"limit": {"5"}}}, "CORE-PAGE-001")
			if err := check.Status(resp, http.StatusOK); err != nil {
				suite.Check("CORE-PAGE-001", err)
				continue
			}
			_, err := check.ListPage(resp)
			suite.Check("CORE-PAGE-001", err)
		}
	})

	It("honours ?limit= and its bounds", suite.Req("CORE-PAGE-002", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		sess, ids := pagedSession(ctx, "CORE-PAGE-002", 5)
		path := "/v1/sessions/" + client.Seg(sess) + "/tasks"
		for _, n := range []int{1, 2} {
			resp := suite.Do(ctx, client.Request{Path: path, Query: url.Values{"limit": {strconv.Itoa(n)}}}, "CORE-PAGE-002")
			if !suite.Check("CORE-PAGE-002", check.Status(resp, http.StatusOK)) {
				continue
			}
			p, err := check.ListPage(resp)
			if !suite.CheckBlocks(reqListShape, err, "CORE-PAGE-002") {
				continue
			}
			suite.Check("CORE-PAGE-002", check.Limit(resp, p, n, len(ids)))
		}
		// Out of range: refused as invalid, or clamped into a valid page.
		for _, v := range []string{"0", "201"} {
			resp := suite.Do(ctx, client.Request{Path: path, Query: url.Values{"limit": {v}}, Probe: "limit out of range"}, "CORE-PAGE-002")
			if resp.Status == http.StatusBadRequest {
				expectError(resp, "CORE-PAGE-002", http.StatusBadRequest, "invalid_request")
				continue
			}
			if err := check.Status(resp, http.StatusOK, http.StatusBadRequest); err != nil {
				suite.Check("CORE-PAGE-002", fmt.Errorf("limit=%s: %w", v, err))
				continue
			}
			p, err := check.ListPage(resp)
			suite.Check(reqListShape, err)
			if err == nil {
				suite.Check("CORE-PAGE-002", check.Limit(resp, p, 200, 0))
			}
		}
	})

	// docs/interpretations.md#order-independent-lists: each list holds at
	// least two items this spec made, and is read one item a page, so its
	// cursor is followed in every run, whatever earlier specs left behind.
	It("follows next_cursor one item a page on the Core lists, each holding items the spec made", suite.Req("CORE-PAGE-002", "CORE-PAGE-003"), func(ctx SpecContext) {
		sess, tasks := pagedSession(ctx, "CORE-PAGE-003", 2)
		base := "/v1/sessions/" + client.Seg(sess)
		var msgs []string
		for i := range 2 {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: base + "/messages", Body: map[string]any{"message": textMessage("user", fmt.Sprintf("page message %d", i))}}, "CORE-PAGE-003")
			msgs = append(msgs, idOf(succeeded(reqAppend, resp)))
		}
		other := sessionID(ctx, "CORE-PAGE-003")
		for _, l := range []struct {
			path     string
			q        url.Values
			want     []string
			maxPages int // a list the spec does not own is read two pages deep
		}{
			{base + "/messages", nil, msgs, 20},
			{"/v1/tasks", url.Values{"session_id": {sess}}, tasks, 20},
			{"/v1/sessions", nil, []string{sess, other}, 2},
		} {
			p := suite.Paginate(ctx, l.path, l.q, "cursor", 1, l.maxPages, l.want, "CORE-PAGE-003")
			if !suite.Check(reqListShape, p.Read) {
				continue
			}
			suite.Check("CORE-PAGE-002", p.Limit)
			suite.Check("CORE-PAGE-003", p.Walk)
		}
	})

	It("visits every item exactly once when following next_cursor", suite.Req("CORE-PAGE-003"), func(ctx SpecContext) {
		sess, ids := pagedSession(ctx, "CORE-PAGE-003", 5)
		path := "/v1/sessions/" + client.Seg(sess) + "/tasks"
		q := url.Values{"limit": {"2"}}
		var pages [][]string
		// 5 items at 2 a page end on page 3; the bound only stops a target
		// whose cursor never ends.
		for range 10 {
			resp := suite.Do(ctx, client.Request{Path: path, Query: q}, "CORE-PAGE-003")
			suite.Must("CORE-PAGE-003", check.Status(resp, http.StatusOK))
			p, err := check.ListPage(resp)
			suite.Must(reqListShape, err)
			pages = append(pages, p.IDs)
			if !p.HasMore {
				suite.Check("CORE-PAGE-003", check.Walk(pages, ids, false))
				return
			}
			q.Set("cursor", p.NextCursor)
		}
		suite.Check("CORE-PAGE-003", fmt.Errorf("GET %s?limit=2: %d pages for %d items and has_more is still true; %v", path, len(pages), len(ids), check.Walk(pages, ids, false)))
	})
})
