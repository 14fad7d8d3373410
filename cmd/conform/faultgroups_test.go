package main

// Fault groups: in a run of a whole proof test, up to groupSize faults
// whose rows expect disjoint requirements share one proof run, and each
// fault is in two runs with different partners (two groupings). A row
// passes when, in both of its runs, its own requirements fail (or warn)
// and nothing fails that no fault of the run expects.
//
// Why two groupings prove what one run per fault proves. Let fp(r) be the
// requirements row r names (Fails, Tolerated, Warns), A(r) and B(r) its
// partners in the two groupings. The groupings are built so that, for
// every row, fp(r) is disjoint from every partner's fp, and the partners'
// fps of A(r) are disjoint from those of B(r). Then:
//   - a collateral failure X of fault r (X not in fp(r)) shows in both of
//     r's runs; it can be expected in at most one of them (X in the fp of
//     a partner in A(r) or in B(r), never both), so the other run reports
//     it;
//   - r's requirement failing because of a partner p (and not of r) is a
//     collateral failure of p, caught in p's other run, where fp(r) is
//     not expected (r is in exactly one of p's runs, and that run's other
//     partners' fps are disjoint from fp(r)).
// What this does not cover is faults that act differently together than
// apart (one masks another's collateral in one run and a third masks it
// in the other); rows whose faults are known to interact with others, or
// that need their own flags (Args), run alone. A -run naming rows
// (TestX/row) runs each named row alone, the precise check when a grouped
// row fails.
//
// The groupings are a pure function of the fault declarations (the rows,
// faultrows_test.go, are the declarations sorted by name), so the plan
// (proofPlan) and the rows agree on them without coordination.

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/reports"
)

// groupSize is the most faults a proof run holds. Each grouped fault is in
// two runs, so a pool of n rows takes about 2n/groupSize runs.
const groupSize = 6

// groupRow is one fault row as the groupings see it: a declared fault
// (package fault) of the reference Harness, in-server or on the wire
// (faultrows_test.go derives the rows from the declarations).
type groupRow struct {
	fault.Fault
	args []string // the row's own flags: it runs alone
}

// name is the row's name: its fault's (faults and wire faults share one
// name space, wrapfault keeps it so).
func (r groupRow) name() string { return r.Name }

// alone says the row never shares a run: its declaration says so, or it
// needs flags of its own.
func (r groupRow) alone() bool { return r.Alone || len(r.args) > 0 }

func (r groupRow) footprint() []string { return slices.Concat(r.Fails, r.Tolerated, r.Warns) }

// spec is the target of the row alone: the Harness with its fault, or
// behind its middleware.
func (r groupRow) spec(variants []refharness.Variant) targetSpec {
	if r.Kind == fault.Wire {
		return targetSpec{Wrap: r.Name, Variants: variants, Race: r.Race}
	}
	return targetSpec{Faults: []refharness.Fault{refharness.Fault(r.Name)}, Variants: variants, Race: r.Race}
}

// faultPool is the rows that may share runs: one level, one set of
// variants, and one kind of row (MUST rows and SHOULD rows never mix:
// a SHOULD row's run must have no failure at all).
type faultPool struct {
	levels   string
	variants []refharness.Variant
	rows     func() []groupRow

	once sync.Once
	g    faultGrouping
	rs   []groupRow
}

// faultGrouping is a pool's runs and which runs each fault is in.
type faultGrouping struct {
	runs [][]groupRow
	of   map[string][]int // by row name: one run (alone) or two
}

func pool(name string) *faultPool {
	p := faultPools[name]
	if p == nil {
		panic("no fault pool " + name)
	}
	p.once.Do(func() {
		p.rs = p.rows()
		p.g = groupFaults(p.rs, groupSize)
	})
	return p
}

// groupFaults builds the two groupings of rows (see the file comment).
// Two rows conflict when one's own requirements (Fails, Warns) are in
// the other's footprint; rows that only tolerate the same requirement do
// not, since a tolerated failure proves nothing either way.
func groupFaults(rows []groupRow, k int) faultGrouping {
	fps := make([]map[string]bool, len(rows))
	owns := make([]map[string]bool, len(rows))
	for i, r := range rows {
		fps[i], owns[i] = map[string]bool{}, map[string]bool{}
		for _, id := range r.footprint() {
			fps[i][id] = true
		}
		for _, id := range r.Own() {
			owns[i][id] = true
		}
	}
	meets := func(a, b map[string]bool) bool {
		for id := range a {
			if b[id] {
				return true
			}
		}
		return false
	}
	conflict := func(a, b int) bool {
		return (rows[a].Kind == fault.Wire && rows[b].Kind == fault.Wire) || meets(owns[a], fps[b]) || meets(owns[b], fps[a])
	}
	var eligible []int
	for i, r := range rows {
		if !r.alone() {
			eligible = append(eligible, i)
		}
	}
	// Rows that tolerate the same requirements go together in A: a
	// tolerated requirement a row's A partners share with it masks
	// nothing of its own, and one they hold and it does not would bar the
	// row from every B group holding it too.
	slices.SortStableFunc(eligible, func(a, b int) int {
		return strings.Compare(strings.Join(sortedIDs(rows[a].Tolerated), " "), strings.Join(sortedIDs(rows[b].Tolerated), " "))
	})
	// Grouping A: first fit in that order, in groups of about the root of
	// the pool's size: a B group takes at most one row of each A group, so
	// A's group count bounds B's group size.
	ka := min(k, int(math.Ceil(math.Sqrt(float64(len(eligible))))))
	var ga [][]int
	inA := make([]int, len(rows))
	for _, i := range eligible {
		placed := false
		for g := range ga {
			if len(ga[g]) < ka && slices.IndexFunc(ga[g], func(m int) bool { return conflict(m, i) }) < 0 {
				ga[g] = append(ga[g], i)
				inA[i], placed = g, true
				break
			}
		}
		if !placed {
			inA[i] = len(ga)
			ga = append(ga, []int{i})
		}
	}
	// others(i, g) is what the members of g other than i expect and i
	// does not: where i's collateral failures would be masked.
	others := func(i int, g []int) map[string]bool {
		u := map[string]bool{}
		for _, m := range g {
			if m != i {
				for id := range fps[m] {
					if !fps[i][id] {
						u[id] = true
					}
				}
			}
		}
		return u
	}
	// Grouping B: take A's groups column by column (every group's first
	// row, then every second row, …), so that A's partners come apart,
	// and place each row in the first group that keeps the invariants: no
	// conflict, no A partner, and for every member, what its B partners
	// expect (and it does not) is disjoint from what its A partners do.
	var order []int
	for c := 0; c < k; c++ {
		for _, g := range ga {
			if c < len(g) {
				order = append(order, g[c])
			}
		}
	}
	var gb [][]int
	fits := func(g []int, i int) bool {
		if len(g) >= k {
			return false
		}
		next := append(slices.Clone(g), i)
		for _, m := range next {
			if m != i && (inA[m] == inA[i] || conflict(m, i)) {
				return false
			}
			if meets(others(m, ga[inA[m]]), others(m, next)) {
				return false
			}
		}
		return true
	}
	for _, i := range order {
		placed := false
		for g := range gb {
			if fits(gb[g], i) {
				gb[g] = append(gb[g], i)
				placed = true
				break
			}
		}
		if !placed {
			gb = append(gb, []int{i})
		}
	}
	if len(ga)+len(gb) >= len(eligible) {
		// Sharing runs would not save any: every row runs alone.
		ga, gb = nil, nil
		for _, i := range eligible {
			ga = append(ga, []int{i})
		}
	}
	// The runs: both groupings, a group of one (in both, the same run)
	// once, and every row that runs alone.
	out := faultGrouping{of: map[string][]int{}}
	seen := map[string]int{}
	add := func(members []int) {
		sorted := slices.Clone(members)
		slices.SortFunc(sorted, func(a, b int) int { return strings.Compare(rows[a].name(), rows[b].name()) })
		var names []string
		for _, m := range sorted {
			names = append(names, rows[m].name())
		}
		key := strings.Join(names, ",")
		n, ok := seen[key]
		if !ok {
			n = len(out.runs)
			seen[key] = n
			var rs []groupRow
			for _, m := range sorted {
				rs = append(rs, rows[m])
			}
			out.runs = append(out.runs, rs)
		}
		for _, m := range sorted {
			if f := rows[m].name(); !slices.Contains(out.of[f], n) {
				out.of[f] = append(out.of[f], n)
			}
		}
	}
	for _, g := range ga {
		add(g)
	}
	for _, g := range gb {
		add(g)
	}
	for i, r := range rows {
		if r.alone() {
			add([]int{i})
		}
	}
	return out
}

func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

// job is the proof run of a pool's run n.
func (p *faultPool) job(n int) proofJob {
	rs := p.g.runs[n]
	j := proofJob{spec: targetSpec{Variants: p.variants}, levels: p.levels}
	for _, r := range rs {
		j.spec.Race = j.spec.Race || r.Race
		if r.Kind == fault.Wire {
			j.spec.Wrap = r.Name
		} else {
			j.spec.Faults = append(j.spec.Faults, refharness.Fault(r.Name))
		}
	}
	if len(rs) == 1 {
		j.extra = rs[0].args
	}
	return j
}

// poolJobs is the plan of a pool's proof test: every run of its rows, in
// row order.
func poolJobs(name string) []proofJob {
	p := pool(name)
	var jobs []proofJob
	seen := map[int]bool{}
	for _, r := range p.rs {
		for _, n := range p.g.of[r.name()] {
			if !seen[n] {
				seen[n] = true
				jobs = append(jobs, p.job(n))
			}
		}
	}
	return jobs
}

// grouped reports whether the calling row's test runs its plan (the rows
// share runs), rather than rows named by -run (each alone).
func grouped(t *testing.T) bool {
	top, _, _ := strings.Cut(t.Name(), "/")
	proofs.Lock()
	iter := proofs.iter[top]
	proofs.Unlock()
	return iter > 0 && !strings.Contains(flagValue("test.run"), "/")
}

// assertRow checks a row of pool name: a MUST row's requirements fail
// (and nothing but its tolerated ones), a SHOULD row's requirements warn
// (and nothing fails or errs). Grouped, the row is judged by its runs with
// partners (assertRuns); named by -run, or when its runs cannot show it,
// by a run of its own.
func assertRow(t *testing.T, name string, r groupRow) {
	t.Helper()
	p := pool(name)
	spec := r.spec(p.variants)
	label := "fault " + r.Name
	if r.Kind == fault.Wire {
		label = "wire fault " + r.Name
	}
	alone := func(label string) {
		if len(r.Fails) == 0 {
			assertWarnsOnly(t, label, spec, p.levels, r.Warns, r.args...)
		} else {
			assertCaught(t, label, spec, p.levels, r.Fails, r.Tolerated, r.args...)
		}
	}
	if !grouped(t) || len(p.g.of[r.name()]) == 0 {
		alone(label)
		return
	}
	own := mustFail(r.Fails)
	if len(r.Fails) == 0 {
		own = mustWarn(r.Warns)
	}
	p.assertRuns(t, r.name(), own, func() { alone(label + " alone") })
}

func mustFail(fails []string) func(code int, r *reports.Report) []string {
	return func(code int, r *reports.Report) []string {
		var out []string
		failed := verdicts(r, reports.Fail)
		for _, id := range fails {
			if !slices.Contains(failed, id) {
				out = append(out, fmt.Sprintf("%s not reported as failed (failed: %v)\n%s", id, failed, messages(r, fails)))
			}
		}
		if code != 1 {
			out = append(out, fmt.Sprintf("exit code %d, want 1", code))
		}
		return out
	}
}

func mustWarn(warns []string) func(code int, r *reports.Report) []string {
	return func(code int, r *reports.Report) []string {
		var out []string
		warned := verdicts(r, reports.Warn)
		for _, id := range warns {
			if !slices.Contains(warned, id) {
				out = append(out, fmt.Sprintf("%s not reported as a warning (warnings: %v)", id, warned))
			}
		}
		if errs := verdicts(r, reports.Error); len(errs) > 0 {
			out = append(out, fmt.Sprintf("the run breaks SHOULDs only, but the suite reports errors %v: %s", errs, messages(r, errs)))
		}
		return out
	}
}

// assertRuns collects the runs of row f and judges the row by them: own
// checks what the row itself expects of a run. When a run does not show
// what the row expects (a partner's failure kept its check from running:
// the suite reports requirements a failure blocks as unverified), or when
// a requirement the row could break was blocked by partners in every run
// (so a collateral failure of the row would not show), the row is judged
// by a run of its own instead: alone. Failures no row of a run expects
// are reported either way, saying whether they showed in both of f's runs
// (so they are f's) or in one (another row of that run's, or theirs
// together).
func (p *faultPool) assertRuns(t *testing.T, f string, own func(code int, r *reports.Report) []string, alone func()) {
	t.Helper()
	runs := p.g.of[f]
	unexpected := map[string][]string{} // requirement -> labels of f's runs where it failed unexpected
	msgs := map[string]string{}
	var fp []string
	var why []string              // why the row is judged alone
	blockedIn := map[string]int{} // requirement -> how many of f's runs a partner's failure blocked it in
	for _, n := range runs {
		j := p.job(n)
		var names, expected []string
		for _, r := range p.g.runs[n] {
			names = append(names, r.name())
			expected = append(expected, r.footprint()...)
			if r.name() == f {
				fp = r.footprint()
			}
		}
		label := f
		if len(names) > 1 {
			label = fmt.Sprintf("%s (in a run with %s)", f, strings.Join(names, ", "))
		}
		code, r, _ := proof(t, label, j.spec, j.levels, j.extra...)
		if problems := own(code, r); len(problems) > 0 {
			b := blockedBy(r)
			for _, pr := range problems {
				id, _, _ := strings.Cut(pr, " ")
				why = append(why, fmt.Sprintf("%s [blocked by %q]", firstLine(pr), b[id]))
			}
		}
		for _, id := range verdicts(r, reports.Fail) {
			if !slices.Contains(expected, id) {
				unexpected[id] = append(unexpected[id], label)
				msgs[id] = messages(r, []string{id})
			}
		}
		for id, by := range blockedBy(r) {
			if slices.Contains(expected, by) {
				blockedIn[id]++
			}
		}
	}
	for id, k := range blockedIn {
		if k == len(runs) && !slices.Contains(fp, id) {
			why = append(why, id+" blocked by partners in every run")
		}
	}
	ids := make([]string, 0, len(unexpected))
	for id := range unexpected {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		where := unexpected[id]
		whose := "this row's: it failed in both of its runs"
		if len(runs) > 1 && len(where) == 1 {
			whose = "another row of that run's, or theirs together: it failed in that run only"
		}
		t.Errorf("%s: unrelated requirement %s failed (%s; run `go test ./cmd/conform -proofs -run '%s'` for this row alone):%s",
			strings.Join(where, "; "), id, whose, t.Name(), msgs[id])
	}
	if len(why) > 0 {
		slices.Sort(why)
		t.Logf("%s: judged by a run of its own: %s", f, strings.Join(why, "; "))
		alone()
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// blockedBy maps each requirement a report leaves unverified because
// another's failure (or error) kept it from being checked to that other
// requirement (internal/suite writes the message; see BlockedPrefix).
func blockedBy(r *reports.Report) map[string]string {
	out := map[string]string{}
	for _, q := range r.Requirements {
		if q.Verdict != reports.Unverified && q.Verdict != reports.Error {
			continue
		}
		msgs := []string{q.Message}
		for _, e := range q.Evidence {
			msgs = append(msgs, e.Message)
		}
		for _, m := range msgs {
			_, rest, ok := strings.Cut(m, suite.BlockedPrefix)
			if !ok {
				continue
			}
			if _, rest, ok = strings.Cut(rest, " of "); ok {
				by, _, _ := strings.Cut(rest, " ")
				out[q.ID] = by
			}
		}
	}
	return out
}

// The groupings keep their invariants on every pool: a row's own
// requirements are expected by no partner and it expects none of theirs,
// no requirement is masked for a row in both of its runs, and each run
// holds at most groupSize faults.
func TestFaultGroupsKeepInvariants(t *testing.T) {
	for name := range faultPools {
		p := pool(name)
		rows := p.rs
		for _, r := range rows {
			ns := p.g.of[r.name()]
			if len(ns) == 0 || len(ns) > 2 {
				t.Errorf("%s: row %s is in %d runs, want 1 or 2", name, r.name(), len(ns))
				continue
			}
			own := r.Own()
			masked := make([]map[string]bool, len(ns))
			for k, n := range ns {
				rs := p.g.runs[n]
				if len(rs) > groupSize {
					t.Errorf("%s: a run holds %d faults, more than %d", name, len(rs), groupSize)
				}
				if r.alone() && len(rs) != 1 {
					t.Errorf("%s: fault %s must run alone", name, r.name())
				}
				masked[k] = map[string]bool{}
				for _, m := range rs {
					if m.name() == r.name() {
						continue
					}
					for _, id := range m.footprint() {
						if slices.Contains(own, id) {
							t.Errorf("%s: fault %s shares a run with %s, which also expects %s", name, r.name(), m.name(), id)
						}
						if !slices.Contains(r.footprint(), id) {
							masked[k][id] = true
						}
					}
					for _, id := range m.Own() {
						if slices.Contains(r.footprint(), id) {
							t.Errorf("%s: fault %s shares a run with %s, whose requirement %s it expects too", name, r.name(), m.name(), id)
						}
					}
				}
			}
			if len(ns) == 2 {
				for id := range masked[0] {
					if masked[1][id] {
						t.Errorf("%s: fault %s would fail %s unnoticed: a partner expects it in both runs", name, r.name(), id)
					}
				}
			}
		}
		t.Logf("%s: %d rows in %d runs", name, len(rows), len(p.g.runs))
	}
}
