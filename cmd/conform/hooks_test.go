package main

// Hook-attested evidence (issue 21, item 5): every verdict says whether it
// rests on a conform.* test hook, and each level counts its observable
// MUSTs verified without any hook, with one, or not at all. The counts are
// right when they agree with what the same target does without its hooks:
// a MUST the report calls verified without a hook is verified by a run
// against the reference Harness with its hooks hidden, and a run against
// that Harness calls nothing hook-attested.

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// hookPairs are the runs TestHookAttestedCounts judges: each level with the
// hooks (conform serve as it is, and with its slow agent) and the same
// level against the Harness with them hidden. All but the first are runs
// other proof tests make too (they are shared).
var hookPairs = []struct {
	name           string
	hooked, hidden targetSpec
	levels         string // of the hooked run
	hiddenLevels   string
}{
	{"core and receipts", targetSpec{}, targetSpec{Variants: noHook}, "core,receipts", "core,receipts"},
	{"core, slow agent", variantSpec(refharness.VariantSlowAgent), targetSpec{Variants: noHookSlow}, "core", "core,receipts"},
	{"extended", targetSpec{}, variantSpec(refharness.VariantNoScenarioHook), "extended", "extended"},
	{"replay", targetSpec{}, variantSpec(refharness.VariantNoScenarioHook), "replay", "replay"},
}

func init() {
	planProofs("TestHookAttestedCounts", func() []proofJob {
		var jobs []proofJob
		for _, p := range hookPairs {
			jobs = append(jobs, proofJob{spec: p.hooked, levels: p.levels}, proofJob{spec: p.hidden, levels: p.hiddenLevels})
		}
		return jobs
	})
}

func TestHookAttestedCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range hookPairs {
		t.Run(p.name, func(t *testing.T) {
			_, hooked, _ := proof(t, p.name+" with the hooks", p.hooked, p.levels)
			_, hidden, _ := proof(t, p.name+" with the hooks hidden", p.hidden, p.hiddenLevels)
			assertTallies(t, "with the hooks", hooked, reg)
			assertTallies(t, "hooks hidden", hidden, reg)

			// Hidden hooks: nothing rests on one.
			for _, q := range hidden.Requirements {
				if len(q.Hooks) > 0 {
					t.Errorf("hooks hidden: %s (%s) rests on %v", q.ID, q.Verdict, q.Hooks)
				}
			}
			for _, s := range hidden.Specs {
				if len(s.Hooks) > 0 {
					t.Errorf("hooks hidden: spec %q used %+v", s.Name, s.Hooks)
				}
			}
			for _, l := range hidden.Levels {
				if l.MUSTs != nil && l.MUSTs.VerifiedWithHook != 0 {
					t.Errorf("hooks hidden: %s counts %d MUSTs verified with a hook", l.Level, l.MUSTs.VerifiedWithHook)
				}
			}

			// With the hooks: what the report calls verified without one is
			// verified without one — unless the target's own task showed the
			// state this time and not in the other run (an instant agent's
			// task caught running is luck: docs/scenarios.md).
			passedHidden := map[string]bool{}
			for _, q := range hidden.Requirements {
				passedHidden[q.ID] = q.Verdict == reports.Pass
			}
			withHook := 0
			for _, q := range hooked.Requirements {
				rq, _ := reg.Lookup(q.ID)
				if !rq.Keyword.Mandatory() || !rq.Observable || q.Verdict != reports.Pass || !hooked.Levels[levelIndex(hooked, q.Level)].Run {
					continue
				}
				if len(q.Hooks) > 0 {
					withHook++
					continue
				}
				if !passedHidden[q.ID] && !ownTaskSource(hooked, q.ID) {
					t.Errorf("%s is verified without a hook with the hooks, but not with them hidden (%s): %s", q.ID, verdictOf(hidden, q.ID), messages(hidden, []string{q.ID}))
				}
			}
			if withHook == 0 {
				t.Errorf("with the hooks no observable MUST of %s is hook-attested; the hooks drive some of them (docs/scenarios.md)", p.levels)
			}
		})
	}
}

// assertTallies checks each run level's MUST tally against its
// requirements.
func assertTallies(t *testing.T, name string, r *reports.Report, reg *requirements.Registry) {
	t.Helper()
	for _, l := range r.Levels {
		if !l.Run {
			if l.MUSTs != nil {
				t.Errorf("%s: %s was not run but counts MUSTs %+v", name, l.Level, l.MUSTs)
			}
			continue
		}
		m := l.MUSTs
		if m == nil {
			t.Errorf("%s: %s has no MUST tally", name, l.Level)
			continue
		}
		var want reports.MustTally
		for _, q := range r.Requirements {
			rq, _ := reg.Lookup(q.ID)
			if q.Level != string(l.Level) || !rq.Keyword.Mandatory() || !rq.Observable {
				continue
			}
			want.Observable++
			for _, h := range q.Hooks {
				if !slices.Contains(evidence.Hooks, h) {
					t.Errorf("%s: %s rests on %q, which is no test hook", name, q.ID, h)
				}
			}
			switch {
			case q.Verdict == reports.Pass && len(q.Hooks) == 0:
				want.VerifiedWithoutHook++
			case q.Verdict == reports.Pass:
				want.VerifiedWithHook++
			case q.Verdict == reports.Fail:
				want.Failed++
			case q.Verdict == reports.Skip:
				want.NotApplicable++
			default:
				want.NotVerified++
			}
		}
		got := *m
		got.Hooks = nil
		if fmt.Sprintf("%+v", got) != fmt.Sprintf("%+v", want) {
			t.Errorf("%s: %s MUSTs = %+v, want %+v", name, l.Level, got, want)
		}
	}
}

// ownTaskSource reports whether a spec that judged id found its object
// among the target's own (an evidence source of kind run or target).
func ownTaskSource(r *reports.Report, id string) bool {
	for _, s := range r.Specs {
		if !slices.Contains(s.Requirements, id) {
			continue
		}
		for _, a := range s.Evidence {
			var src evidence.Source
			if a.Schema != evidence.SourceSchema || json.Unmarshal(a.Content, &src) != nil {
				continue
			}
			if (src.Kind == evidence.SourceRun || src.Kind == evidence.SourceTarget) && (len(src.Requirements) == 0 || slices.Contains(src.Requirements, id)) {
				return true
			}
		}
	}
	return false
}

func levelIndex(r *reports.Report, level string) int {
	for i, l := range r.Levels {
		if string(l.Level) == level {
			return i
		}
	}
	return 0
}

func verdictOf(r *reports.Report, id string) reports.Verdict {
	for _, q := range r.Requirements {
		if q.ID == id {
			return q.Verdict
		}
	}
	return ""
}
