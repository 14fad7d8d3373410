package suite

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
)

// Paged is a list read page by page with a small ?limit=, following
// next_cursor (Paginate), and what the reading found.
type Paged struct {
	Where    string     // "GET /v1/personas?limit=1"
	Pages    [][]string // the ids of each page read, in order
	Items    []map[string]any
	Complete bool // the last page read said has_more false
	// Read: the first page was not a 200 list (the list's own requirement,
	// or the list envelope's); Limit: a page held more than the limit, or
	// said has_more false while items the spec made were still to come;
	// Walk: a page at a next_cursor the target gave was not a 200 list, an
	// id repeated across pages (the cursor not followed) or, the list
	// ended, an id the spec made never listed.
	Read, Limit, Walk error
}

// Paginate reads path (with q) at limit items a page, following
// next_cursor (sent as cursorParam: "cursor", or "after_event_id" for an
// event list), for at most maxPages pages, under reqs. want are ids the
// spec made that the list holds, so the list has at least len(want)
// items whatever earlier specs left behind: with limit below len(want),
// the first page must say has_more and the next page must hold other
// items, in every run (docs/interpretations.md#order-independent-lists).
// Other ids may be listed (a list the spec does not own). A page that
// repeats the page before ends the walk: the cursor was not followed.
func Paginate(ctx context.Context, path string, q url.Values, cursorParam string, limit, maxPages int, want []string, reqs ...string) Paged {
	query := url.Values{}
	for k, v := range q {
		query[k] = slices.Clone(v)
	}
	query.Set("limit", strconv.Itoa(limit))
	p := Paged{Where: fmt.Sprintf("GET %s?%s", path, query.Encode())}
	seen := map[string]bool{}
	for range maxPages {
		resp := Do(ctx, client.Request{Path: path, Query: query}, reqs...)
		page, err := check.ListPage(resp)
		if serr := check.Status(resp, http.StatusOK); serr != nil {
			err = serr
		}
		switch {
		case err != nil && len(p.Pages) == 0:
			p.Read = err
			return p
		case err != nil:
			p.Walk = fmt.Errorf("%s, following next_cursor %q, the target's own, after %d pages: %w", p.Where, query.Get(cursorParam), len(p.Pages), err)
			return p
		}
		toCome := 0
		for _, id := range want {
			if !seen[id] {
				toCome++
			}
		}
		if err := check.Limit(resp, page, limit, toCome); err != nil && p.Limit == nil {
			p.Limit = fmt.Errorf("%w (the spec made %d items this list holds, %d of them not listed before this page)", err, len(want), toCome)
		}
		repeat := len(p.Pages) > 0 && len(page.IDs) > 0 && slices.Equal(page.IDs, p.Pages[len(p.Pages)-1])
		p.Pages = append(p.Pages, page.IDs)
		p.Items = append(p.Items, page.Items...)
		for _, id := range page.IDs {
			seen[id] = true
		}
		if repeat {
			break
		}
		if !page.HasMore || page.NextCursor == "" {
			p.Complete = true
			break
		}
		query.Set(cursorParam, page.NextCursor)
	}
	must := want
	if !p.Complete {
		must = nil // the walk was cut short: only repeats can be told
	}
	if err := check.Walk(p.Pages, must, true); err != nil {
		p.Walk = fmt.Errorf("%s, following next_cursor: %w", p.Where, err)
	}
	return p
}
