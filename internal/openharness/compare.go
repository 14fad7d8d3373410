package openharness

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Answers to compare for OH-EXT-001 and OH-CAP-001 ("unknown fields MUST be
// ignored", "recipients MUST ignore capability keys they do not
// understand"; docs/interpretations.md#oh-unknown-fields): the request with
// something to ignore must get the whole answer the same request without
// it gets, not only the same status. An Engine that acts on an unknown
// member (adds a directive, drops one, changes a risk tier) does not
// ignore it.
type Answers struct {
	// Plain and Again answer the request without the members to ignore,
	// sent before and after Probe (each with fresh identifiers): where the
	// two differ, the answer varies anyway (a timestamp, a run counter, an
	// echoed identifier), and Probe may differ too.
	Plain, Again map[string]any
	// Probe answers the same request with the members to ignore.
	Probe map[string]any
	// Ignored are the capability keys the probe asked for that the Engine
	// cannot know: a capability_denials entry naming one of them is
	// accepted in Probe (docs/interpretations.md#oh-unknown-capabilities).
	Ignored []string
}

// echoes are the members an answer carries for its own request (OH-ID-001,
// OH-ID-003 judge them) or as a timing hint ("engine_latency_ms:
// Round-trip processing time at the Engine (hint)"): they differ between
// any two answers and are not compared.
var echoes = map[string]bool{"/request_id": true, "/correlation_id": true, "/response/engine_latency_ms": true}

// diff is one place where two answers differ.
type diff struct {
	path         string
	plain, probe string // what each answer holds there, shown
}

// CheckSameAnswer is the OH-EXT-001 / OH-CAP-001 judgement on a: nil when
// Probe is Plain's answer everywhere Plain and Again agree.
func CheckSameAnswer(a Answers, what string) error {
	probe := jsonv.Copy(a.Probe).(map[string]any)
	if len(a.Ignored) > 0 {
		if ds, ok := probe["capability_denials"].([]any); ok {
			probe["capability_denials"] = slices.DeleteFunc(slices.Clone(ds), func(d any) bool {
				m, _ := d.(map[string]any)
				c, _ := m["capability"].(string)
				return slices.Contains(a.Ignored, c)
			})
		}
	}
	var volatile, got []diff
	diffs(a.Plain, a.Again, "", &volatile)
	diffs(a.Plain, probe, "", &got)
	var bad []string
	for _, d := range got {
		if varies(d.path, volatile) {
			continue
		}
		bad = append(bad, fmt.Sprintf("%s is %s, want %s", ptrOr(d.path), d.probe, d.plain))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("the request with %s got another answer than the same request without them (the members must be ignored, not acted on): %s", what, strings.Join(limit(bad, 5), "; "))
}

// varies reports whether path lies in (or is) a part of the answer that
// differs between two answers to the same request.
func varies(path string, volatile []diff) bool {
	for _, v := range volatile {
		if path == v.path || strings.HasPrefix(path, v.path+"/") {
			return true
		}
	}
	return false
}

// diffs appends every place where a and b differ below path: members of
// objects by name, items of arrays by position (a length difference is one
// diff at the array, and each extra item another), other values by their
// JSON. echoes are skipped.
func diffs(a, b any, path string, out *[]diff) {
	if echoes[path] {
		return
	}
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			break
		}
		keys := slices.Sorted(maps.Keys(x))
		for _, k := range slices.Sorted(maps.Keys(y)) {
			if _, ok := x[k]; !ok {
				keys = append(keys, k)
			}
		}
		for _, k := range keys {
			p := path + "/" + jsonv.Token(k)
			xv, inX := x[k]
			yv, inY := y[k]
			switch {
			case inX && inY:
				diffs(xv, yv, p, out)
			case echoes[p]:
			case inX:
				*out = append(*out, diff{p, show(xv), "absent"})
			default:
				*out = append(*out, diff{p, "absent", show(yv)})
			}
		}
		return
	case []any:
		y, ok := b.([]any)
		if !ok {
			break
		}
		for i := range min(len(x), len(y)) {
			diffs(x[i], y[i], fmt.Sprintf("%s/%d", path, i), out)
		}
		if len(x) != len(y) {
			*out = append(*out, diff{path, fmt.Sprintf("%d items", len(x)), fmt.Sprintf("%d items", len(y))})
			for i := len(x); i < len(y); i++ {
				*out = append(*out, diff{fmt.Sprintf("%s/%d", path, i), "absent", show(y[i])})
			}
			for i := len(y); i < len(x); i++ {
				*out = append(*out, diff{fmt.Sprintf("%s/%d", path, i), show(x[i]), "absent"})
			}
		}
		return
	}
	if !jsonEqual(a, b) {
		*out = append(*out, diff{path, show(a), show(b)})
	}
}
