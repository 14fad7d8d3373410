package main

// The Extended level's fault rows, derived from the declarations of the
// reference Harness's faults (faultrows_test.go): each row runs the whole
// Extended level against the Harness with its fault and must fail exactly
// its requirements; each SHOULD row must warn its requirement and fail
// nothing. The faults_ext_* files (one per group of areas) keep their own
// clean and hook-less runs, whose expectations differ by area.

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// The Extended fault rows, derived from the declarations
// (faultrows_test.go).
func init() {
	planProofs("TestExtendedFaultsCaught", func() []proofJob { return poolJobs("extended") })
	planProofs("TestExtendedShouldFaultsWarn", func() []proofJob { return poolJobs("extended-should") })
}

func TestExtendedFaultsCaught(t *testing.T)     { runPool(t) }
func TestExtendedShouldFaultsWarn(t *testing.T) { runPool(t) }

// cleanAndHooklessJobs are the two Extended runs an area's clean and
// hook-less test collects: the clean harness, and one hiding the scenario
// hook as a third-party server would.
func cleanAndHooklessJobs() []proofJob {
	return []proofJob{{spec: targetSpec{}, levels: "extended"}, {spec: variantSpec(refharness.VariantNoScenarioHook), levels: "extended"}}
}

// assertCleanAndHookless judges a group of areas in those two runs: every
// requirement of reqs has a verdict; on the clean harness each passes;
// without the hook those of hooked are unverified with a remedy (naming
// remedyNames, when given) and the others still pass. Neither run fails,
// errs or warns any of them.
func assertCleanAndHookless(t *testing.T, reqs, hooked []string, remedyNames string) {
	t.Helper()
	for _, tc := range []struct {
		name string
		spec targetSpec
	}{{"clean", targetSpec{}}, {"no-scenario-hook", variantSpec(refharness.VariantNoScenarioHook)}} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := proof(t, tc.name, tc.spec, "extended")
			got := map[string]reports.ReqResult{}
			for _, q := range r.Requirements {
				got[q.ID] = q
			}
			for _, id := range reqs {
				q, ok := got[id]
				want := reports.Pass
				if tc.name == "no-scenario-hook" && slices.Contains(hooked, id) {
					want = reports.Unverified
				}
				switch {
				case !ok:
					t.Errorf("%s: %s has no verdict", tc.name, id)
				case q.Verdict != want:
					t.Errorf("%s: %s is %s, want %s: %s", tc.name, id, q.Verdict, want, q.Message)
				case want == reports.Unverified && (q.Remedy == "" || !strings.Contains(q.Remedy, remedyNames)):
					t.Errorf("%s: %s is unverified with remedy %q, want one naming %q", tc.name, id, q.Remedy, remedyNames)
				}
			}
		})
	}
}
