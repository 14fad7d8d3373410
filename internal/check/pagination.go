package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// Page is one decoded page of a list.
type Page struct {
	Items      []map[string]any
	IDs        []string
	HasMore    bool
	NextCursor string // "" when null or absent
}

// ListPage decodes and checks a list answer: {object:"list", data:[objects],
// page:{has_more: boolean, next_cursor: string or null}}, with a next_cursor
// whenever has_more is true.
func ListPage(resp *client.Response) (Page, error) {
	var p Page
	m, err := resp.Object()
	if err != nil {
		return p, err
	}
	var errs []string
	if m["object"] != "list" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"list\"", showValue(m["object"])))
	}
	data, ok := m["data"].([]any)
	if !ok {
		errs = append(errs, fmt.Sprintf("data is %s, want an array", describe(m["data"])))
	}
	for i, d := range data {
		item, ok := d.(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("data[%d] is %s, want an object", i, describe(d)))
			continue
		}
		p.Items = append(p.Items, item)
		id, _ := item["id"].(string)
		p.IDs = append(p.IDs, id)
	}
	pg, ok := m["page"].(map[string]any)
	if !ok {
		errs = append(errs, fmt.Sprintf("page is %s, want {has_more, next_cursor}", describe(m["page"])))
		return p, findings(resp, "list", errs)
	}
	if p.HasMore, ok = pg["has_more"].(bool); !ok {
		errs = append(errs, fmt.Sprintf("page.has_more is %s, want a boolean", describe(pg["has_more"])))
	}
	switch c := pg["next_cursor"].(type) {
	case nil:
	case string:
		p.NextCursor = c
	default:
		errs = append(errs, fmt.Sprintf("page.next_cursor is %s, want a string or null", describe(c)))
	}
	if p.HasMore && p.NextCursor == "" {
		errs = append(errs, "page.has_more is true but page.next_cursor is empty: the rest of the list cannot be reached")
	}
	return p, findings(resp, "list", errs)
}

// Limit checks that a page requested with ?limit=n holds at most n items
// and, when more exist, says so: total is how many items the list holds
// (0 when unknown).
func Limit(resp *client.Response, p Page, n, total int) error {
	if len(p.Items) > n {
		return fmt.Errorf("%s: page holds %d items, want at most %d (the limit asked for)", resp, len(p.Items), n)
	}
	if total > n && !p.HasMore {
		return fmt.Errorf("%s: page holds %d of %d items but has_more is false", resp, len(p.Items), total)
	}
	return nil
}

// Walk checks the ids seen while following next_cursor to the end against
// the ids the list must hold: each exactly once, none missing. Other ids
// (items not created by the check) are allowed only when allowOthers.
func Walk(pages [][]string, want []string, allowOthers bool) error {
	seen := map[string]int{}
	var dups, others []string
	for i, ids := range pages {
		for _, id := range ids {
			if j, ok := seen[id]; ok {
				dups = append(dups, fmt.Sprintf("%q (pages %d and %d)", id, j+1, i+1))
				continue
			}
			seen[id] = i
			if !slices.Contains(want, id) {
				others = append(others, fmt.Sprintf("%q", id))
			}
		}
	}
	var missing []string
	for _, id := range want {
		if _, ok := seen[id]; !ok {
			missing = append(missing, fmt.Sprintf("%q", id))
		}
	}
	var errs []string
	if len(dups) > 0 {
		errs = append(errs, "repeated: "+strings.Join(dups, ", "))
	}
	if len(missing) > 0 {
		errs = append(errs, "never listed: "+strings.Join(missing, ", "))
	}
	if len(others) > 0 && !allowOthers {
		errs = append(errs, "not expected: "+strings.Join(others, ", "))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("walking next_cursor over %d pages: %s", len(pages), strings.Join(errs, "; "))
}
