package negative

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// maxShrinkSteps bounds the requests one finding's shrinking sends.
const maxShrinkSteps = 24

// shrink makes pl as small as still fails (pred sends a candidate and says
// whether it still fails the same way): one mutation instead of several,
// the base's optional members left out, a sized value as small as still
// fails. A candidate that would write what the document allows is never
// sent. It returns the smallest request, its answer, and what it started
// from ("" when nothing could be taken away).
func (r *run) shrink(ctx context.Context, t *Target, pl Planned, s *shot, pred func(Planned) (*shot, bool)) (Planned, *shot, string) {
	start := pl
	steps := 0
	try := func(c Planned) bool {
		if steps >= maxShrinkSteps || r.sent >= r.Budget || r.over(ctx) || !r.allowed(c, start) {
			return false
		}
		steps++
		cs, ok := pred(c)
		if ok {
			pl, s = c, cs
		}
		return ok
	}
	// 1. Fewer mutations: each one alone, the others dropped.
	if n := len(pl.Built.Muts); n > 1 {
		for i := range n {
			if try(r.rebuild(pl, pl.Base, []Mutation{pl.Built.Muts[i]})) {
				break
			}
		}
	}
	// 2. The base's optional members no mutation touches, left out (the
	// outer ones first).
	for _, ptr := range r.optional(pl) {
		body, _ := remove(jsonvCopy(pl.Base.Body), ptr).(map[string]any)
		b := pl.Base
		b.Body = body
		try(r.rebuild(pl, b, pl.Built.Muts))
	}
	// 3. Sizes, halved while the failure stays.
	for i, m := range pl.Built.Muts {
		if !m.Class.sized() || m.Size <= 1 {
			continue
		}
		lo, hi := 1, m.Size // hi fails
		for lo < hi {
			mid := lo + (hi-lo)/2
			ms := slices.Clone(pl.Built.Muts)
			ms[i].Size = mid
			if try(r.rebuild(pl, pl.Base, ms)) {
				hi = mid
			} else {
				if steps >= maxShrinkSteps || r.sent >= r.Budget || r.over(ctx) {
					break
				}
				lo = mid + 1
			}
		}
	}
	return pl, s, describeFrom(start, pl)
}

// rebuild is pl's kind of request made of base and muts.
func (r *run) rebuild(pl Planned, base Base, muts []Mutation) Planned {
	b := Apply(base, muts)
	e, _ := Classify(r.Doc, b)
	anchored := pl.Anchored && len(muts) == len(pl.Built.Muts) && len(muts) > 1
	if pl.Expect == Accept && e != Accept {
		e = pl.Expect
	}
	return Planned{Base: base, Built: b, Expect: e, Anchored: anchored}
}

// allowed reports whether a shrink candidate may be sent: to an operation
// that writes, only what the document declares invalid (or, shrinking an
// accept test, what it allows), so nothing a target keeps is stored.
func (r *run) allowed(c, start Planned) bool {
	if !writes(c.Built.Op) {
		return true
	}
	for _, m := range c.Built.Muts {
		if m.In == InPath {
			return true
		}
	}
	return c.Expect == start.Expect
}

// optional lists the base body's members the schema does not require and
// no mutation touches (nor holds a member a mutation touches), outer ones
// first, at most three levels deep.
func (r *run) optional(pl Planned) [][]string {
	s, ok := r.Doc.RequestSchema(pl.Built.Op.ID)
	if !ok || pl.Base.Body == nil {
		return nil
	}
	var out [][]string
	var walk func(ptr []string, v map[string]any, sh shape)
	walk = func(ptr []string, v map[string]any, sh shape) {
		if len(ptr) >= 3 {
			return
		}
		if len(sh.alts) > 0 {
			if b, ok := sh.branch(r.Doc, v); ok {
				sh = b
			}
		}
		var deeper []string
		for _, k := range sortedKeys(v) {
			p := appendTok(ptr, k)
			if touches(pl.Built.Muts, p) {
				deeper = append(deeper, k)
				continue
			}
			if !contains(sh.required, k) {
				out = append(out, p)
			} else {
				deeper = append(deeper, k)
			}
		}
		for _, k := range deeper {
			if m, ok := v[k].(map[string]any); ok && sh.props[k] != nil {
				walk(appendTok(ptr, k), m, shapeOf(r.Doc, sh.props[k]))
			}
		}
	}
	walk(nil, pl.Base.Body, shapeOf(r.Doc, s))
	return out
}

// touches reports whether a mutation acts at ptr or inside it, or at one
// of its parents.
func touches(muts []Mutation, ptr []string) bool {
	for _, m := range muts {
		if m.In != InBody || m.Whole != "" && m.Class != DuplicateKey || m.Body != nil {
			if m.In == InBody {
				return true // a change of the whole body: keep the body as it is
			}
			continue
		}
		n := min(len(m.Ptr), len(ptr))
		if slices.Equal(m.Ptr[:n], ptr[:n]) {
			return true
		}
	}
	return false
}

func jsonvCopy(m map[string]any) any { return jsonv.Copy(m) }

// describeFrom says what the shrinking took away.
func describeFrom(start, end Planned) string {
	var parts []string
	if a, b := len(start.Built.Muts), len(end.Built.Muts); a > b {
		parts = append(parts, fmt.Sprintf("%d mutations", a))
	}
	if a, b := len(start.Built.Body), len(end.Built.Body); a > b {
		parts = append(parts, fmt.Sprintf("a %d-byte body", a))
	}
	for i, m := range start.Built.Muts {
		for _, n := range end.Built.Muts {
			if m.Class == n.Class && m.Member() == n.Member() && m.Size > n.Size && i >= 0 {
				parts = append(parts, fmt.Sprintf("size %d", m.Size))
			}
		}
	}
	return strings.Join(parts, ", ")
}
