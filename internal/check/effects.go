package check

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// A refused request has no effect (EXT-AUTHZ-001, -002, EXT-OAUTH-002…005,
// EXT-IDEM-004: "the action has no effect"). The suite reads what the
// refused requests could have changed before and after them, and every
// refused request carries a run-unique marker where its body has room
// (a name, a description, metadata, a message's text), so an effect shows
// even in a list other writers add to.

// Effects is what a set of refused requests must leave as it was: a
// snapshot of what they could have changed.
type Effects struct {
	// Objects are resources read by id, by path (nil: it could not be
	// read then, and is not compared).
	Objects map[string]map[string]any
	// Lists are the ids a list held, by list (path and query): lists
	// only the suite's own requests write to, compared exactly. A list
	// that could not be read is absent.
	Lists map[string][]string
	// Texts are what may show the marker, by where it was read: the JSON
	// of every object and list item read, lists other writers share
	// included.
	Texts map[string]string
}

// effectFields are the members a write changes: a refused one changes
// none of them (volatile members a server may move on its own, such as
// usage counters, are not compared).
var effectFields = []string{"name", "description", "state", "status", "summary", "metadata", "content", "transcript",
	"capabilities", "provider", "visibility", "kind", "base_ref", "closed_at", "deleted", "deleted_at", "updated_at"}

// NoEffect compares snapshots taken before and after refused requests that
// each carried marker (what names them, e.g. "writes refused to the
// read-only actor"): every object still reads, with the same effectFields;
// every list holds the same ids; and the marker shows nowhere.
func NoEffect(what string, before, after Effects, marker string) error {
	var errs []string
	for _, p := range sortedObjects(before.Objects) {
		b, a := before.Objects[p], after.Objects[p]
		if b == nil {
			continue
		}
		if a == nil {
			errs = append(errs, fmt.Sprintf("%s no longer reads", p))
			continue
		}
		var diffs []string
		for _, f := range effectFields {
			if !reflect.DeepEqual(b[f], a[f]) {
				diffs = append(diffs, fmt.Sprintf("%s %s → %s", f, compact(b[f]), compact(a[f])))
			}
		}
		if len(diffs) > 0 {
			errs = append(errs, fmt.Sprintf("%s changed: %s", p, strings.Join(diffs, ", ")))
		}
	}
	for _, l := range sortedLists(before.Lists) {
		b := before.Lists[l]
		a, ok := after.Lists[l]
		if !ok {
			continue // not readable after: nothing to compare
		}
		var added, removed []string
		for _, id := range a {
			if !slices.Contains(b, id) {
				added = append(added, id)
			}
		}
		for _, id := range b {
			if !slices.Contains(a, id) {
				removed = append(removed, id)
			}
		}
		if len(added) > 0 {
			errs = append(errs, fmt.Sprintf("%s lists %s it did not list before", l, strings.Join(added, ", ")))
		}
		if len(removed) > 0 {
			errs = append(errs, fmt.Sprintf("%s no longer lists %s", l, strings.Join(removed, ", ")))
		}
	}
	if marker != "" {
		var marked []string
		for _, w := range sortedTexts(after.Texts) {
			if strings.Contains(after.Texts[w], marker) && !strings.Contains(before.Texts[w], marker) {
				marked = append(marked, w)
			}
		}
		if len(marked) > 0 {
			errs = append(errs, fmt.Sprintf("the marker %q the refused requests carried shows in %s", marker, strings.Join(marked, ", ")))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s had an effect: %s", what, strings.Join(errs, "; "))
	}
	return nil
}

func sortedObjects(m map[string]map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedLists(m map[string][]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func sortedTexts(m map[string]string) []string { return sortedKeys(m) }
