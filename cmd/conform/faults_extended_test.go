package main

// The Extended level's fault rows, from the tables of the faults_ext_*
// files (one per group of areas): each row runs the whole Extended level
// against `conform serve --fault F` and must fail exactly its
// requirements; each SHOULD row must warn its requirement and fail
// nothing. Each file keeps its own clean and hook-less runs, whose
// expectations differ by area.

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// extendedFaultTables are the Extended fault rows, one table per file.
var extendedFaultTables = [][]faultCase{extSessionFaults, extResourceFaults, extAuthzFaults, extHostFaults, extPrivacyFaults, extWSFaults}

// extendedShouldFaults are the Extended rows that break a SHOULD (or a
// MAY's condition).
var extendedShouldFaults = slices.Concat(extSessionShouldFaults, extResourceShouldFaults, extHostShouldFaults, extWSShouldFaults)

func init() {
	planProofs("TestExtendedFaultsCaught", func() []proofJob {
		return poolJobs("extended", faultsOf(slices.Concat(extendedFaultTables...)))
	})
	planProofs("TestExtendedShouldFaultsWarn", func() []proofJob {
		return poolJobs("extended-should", shouldFaultsOf(extendedShouldFaults))
	})
}

func TestExtendedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, rows := range extendedFaultTables {
		for _, tc := range rows {
			t.Run(string(tc.Fault), func(t *testing.T) {
				assertFaultRow(t, "extended", tc)
			})
		}
	}
}

func TestExtendedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range extendedShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertShouldRow(t, "extended-should", tc)
		})
	}
}

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
