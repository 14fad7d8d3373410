package main

// The Replay level's fault rows, derived from the declarations of the
// reference Harness's replay faults (refharness/replay*.go, events.go):
// each row runs the whole Replay level against the Harness with its fault
// and must fail exactly its requirement; each SHOULD row must warn its
// requirement and fail nothing. The no-replay variant leaves
// the level unclaimed, and the clean and hook-less runs show what is
// verified with and without the scenario hook.

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// The Replay fault rows, derived from the declarations (faultrows_test.go).
func init() {
	planProofs("TestReplayFaultsCaught", func() []proofJob { return poolJobs("replay") })
	planProofs("TestReplayShouldFaultsWarn", func() []proofJob { return poolJobs("replay-should") })
}

func TestReplayFaultsCaught(t *testing.T)     { runPool(t) }
func TestReplayShouldFaultsWarn(t *testing.T) { runPool(t) }

func init() {
	planProofs("TestReplayCleanAndHookless", func() []proofJob {
		return []proofJob{{spec: targetSpec{}, levels: "replay"}, {spec: variantSpec(refharness.VariantNoScenarioHook), levels: "replay"},
			{spec: variantSpec(refharness.VariantNoReplay), levels: "replay"}}
	})
}

// replayHooked are the observable Replay requirements a run without the
// scenario hook leaves unverified (docs/scenarios.md, "What a run verifies
// without the hook"), and those it verifies without it; RPLY-RANGE-002 and
// RPLY-RETAIN-001 need --restart-cmd, which the proof runs do not give.
var (
	replayHooked = []string{"RPLY-MODE-002", "RPLY-MODE-003", "RPLY-MODE-005", "RPLY-MODE-001", "RPLY-OVERRIDE-001", "RPLY-META-001", "RPLY-META-002",
		"RPLY-META-003", "RPLY-META-004", "RPLY-META-005", "RPLY-META-006", "RPLY-LOG-001", "RPLY-FAIL-001", "RPLY-REFRESH-001", "RPLY-REFRESH-002",
		"RPLY-DELTA-001", "RPLY-DELTA-002", "RPLY-DELTA-003", "RPLY-DELTA-004", "RPLY-DELTA-005", "RPLY-DELTA-006", "RPLY-DET-001", "RPLY-DET-002",
		"RPLY-OVERRIDE-006", "RPLY-TAPE-001", "RPLY-TAPE-002", "RPLY-TAPE-005", "RPLY-TAPE-006"}
	replayPlain = []string{"RPLY-RANGE-001", "RPLY-RANGE-003", "RPLY-API-001", "RPLY-API-002", "RPLY-API-003", "RPLY-API-004", "RPLY-API-005",
		"RPLY-API-007", "RPLY-API-008", "RPLY-MODE-004", "RPLY-MARK-001", "RPLY-LOG-002"}
)

// The clean harness passes every Replay MUST (RPLY-RANGE-002 and
// RPLY-RETAIN-001 are unverified: their restart part needs --restart-cmd); without the hook those needing it
// are unverified with the hook's remedy and the plain ones still pass;
// the no-replay variant does not claim the level and nothing passes or
// fails.
func TestReplayCleanAndHookless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite three times")
	}
	startProofs(t)
	t.Parallel()
	for _, tc := range []struct {
		name string
		spec targetSpec
	}{{"clean", targetSpec{}}, {"no-scenario-hook", variantSpec(refharness.VariantNoScenarioHook)}, {"no-replay", variantSpec(refharness.VariantNoReplay)}} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := proof(t, tc.name, tc.spec, "replay")
			got := map[string]reports.ReqResult{}
			for _, q := range r.Requirements {
				got[q.ID] = q
			}
			for _, q := range r.Requirements {
				if strings.HasPrefix(q.ID, "RPLY-") && (q.Verdict == reports.Fail || q.Verdict == reports.Error) {
					t.Errorf("%s: %s is %s: %s", tc.name, q.ID, q.Verdict, q.Message)
				}
				if tc.name == "no-replay" && strings.HasPrefix(q.ID, "RPLY-") && q.Verdict == reports.Pass {
					t.Errorf("no-replay: %s passed, but the target does not claim replay", q.ID)
				}
			}
			if tc.name == "no-replay" {
				return
			}
			for _, id := range slices.Concat(replayHooked, replayPlain) {
				want := reports.Pass
				if tc.name == "no-scenario-hook" && slices.Contains(replayHooked, id) {
					want = reports.Unverified
				}
				q, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: %s has no verdict", tc.name, id)
				case q.Verdict != want:
					t.Errorf("%s: %s is %s, want %s: %s", tc.name, id, q.Verdict, want, q.Message)
				case want == reports.Unverified && q.Remedy == "":
					t.Errorf("%s: %s is unverified with no remedy", tc.name, id)
				}
			}
			for _, id := range []string{"RPLY-RANGE-002", "RPLY-RETAIN-001"} {
				if q := got[id]; q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, "--restart-cmd") {
					t.Errorf("%s: %s is %s (remedy %q), want unverified naming --restart-cmd", tc.name, id, q.Verdict, q.Remedy)
				}
			}
		})
	}
}
