package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/reports"
)

// ACP Harbor profile faults: the reference agent (`conform serve-acp`)
// with one fault must fail exactly the requirements a row names (plus
// tolerated ones that see the same broken answer from another side) and
// exit 1. Each row runs the conform binary with --profile acp-harbor and
// the same binary's serve-acp as the agent command.
var acpHarborFaults = []struct {
	Fault     acpharbor.Fault
	Fails     []string
	Tolerated []string
}{
	{Fault: acpharbor.FaultStdoutLogLine, Fails: []string{"ACP-RPC-001"}},
	{Fault: acpharbor.FaultExtraResponse, Fails: []string{"ACP-RPC-002"}},
	{Fault: acpharbor.FaultErrorCodeString, Fails: []string{"ACP-RPC-003"}},
	{Fault: acpharbor.FaultInitVersionString, Fails: []string{"ACP-INIT-001"}},
	{Fault: acpharbor.FaultInitEchoVersion, Fails: []string{"ACP-INIT-002"}},
	{Fault: acpharbor.FaultCapsCustomRoot, Fails: []string{"ACP-EXT-001"}},
	// Never answered: caught because a later request is (the row sets
	// a short --request-timeout for the wait).
	{Fault: acpharbor.FaultExtUnknownSilent, Fails: []string{"ACP-EXT-002"}},
	{Fault: acpharbor.FaultSessionBadModes, Fails: []string{"ACP-SESS-001"}},
	{Fault: acpharbor.FaultSessionIDReused, Fails: []string{"ACP-SESS-002"}},
	{Fault: acpharbor.FaultPromptBadStop, Fails: []string{"ACP-PROMPT-001"}},
	{Fault: acpharbor.FaultUpdateWrongSess, Fails: []string{"ACP-UPD-001"}},
	{Fault: acpharbor.FaultCancelIgnored, Fails: []string{"ACP-CANCEL-001"}},
	{Fault: acpharbor.FaultCancelLateUpdate, Fails: []string{"ACP-CANCEL-002"}},
	{Fault: acpharbor.FaultBundleInResultMeta, Fails: []string{"ACP-CAP-001"}},
	{Fault: acpharbor.FaultBundleVersionString, Fails: []string{"ACP-CAP-002"}},
	{Fault: acpharbor.FaultDiffMissing, Fails: []string{"ACP-CAP-003"}},
	{Fault: acpharbor.FaultInfoNoUsage, Fails: []string{"ACP-WS-001"}},
	{Fault: acpharbor.FaultListNoChildren, Fails: []string{"ACP-WS-003"}},
	{Fault: acpharbor.FaultFileNoContent, Fails: []string{"ACP-WS-004"}},
	{Fault: acpharbor.FaultDiffDropsFile, Fails: []string{"ACP-WS-005"}},
	{Fault: acpharbor.FaultSnapshotBadProvider, Fails: []string{"ACP-SNAP-001"}},
	{Fault: acpharbor.FaultSnapshotListEmpty, Fails: []string{"ACP-SNAP-002"}},
	{Fault: acpharbor.FaultLockedBranchable, Fails: []string{"ACP-SNAP-004"}},
	{Fault: acpharbor.FaultSnapshotSilent, Fails: []string{"ACP-SNAP-005"}},
	{Fault: acpharbor.FaultBranchNoNewSessions, Fails: []string{"ACP-BRANCH-001"}},
	{Fault: acpharbor.FaultBranchListEmpty, Fails: []string{"ACP-BRANCH-003"}},
	{Fault: acpharbor.FaultBranchDeleteRunning, Fails: []string{"ACP-BRANCH-004"}},
	{Fault: acpharbor.FaultBranchDeleteNoop, Fails: []string{"ACP-BRANCH-005"}},
	{Fault: acpharbor.FaultSessionReuseSilent, Fails: []string{"ACP-BRANCH-006"}},
	{Fault: acpharbor.FaultSeekNoMount, Fails: []string{"ACP-SEEK-002"}},
	{Fault: acpharbor.FaultMultiCountIgnored, Fails: []string{"ACP-MULTI-002"}},
	{Fault: acpharbor.FaultPipelineListEmpty, Fails: []string{"ACP-PIPE-001"}},
	{Fault: acpharbor.FaultPipelineStreamNoID, Fails: []string{"ACP-PIPE-002"}},
	{Fault: acpharbor.FaultPipelineSilent, Fails: []string{"ACP-PIPE-004"}},
	{Fault: acpharbor.FaultStepUnknownID, Fails: []string{"ACP-PIPE-005"}},
	{Fault: acpharbor.FaultCheckpointNoKind, Fails: []string{"ACP-NOTIF-001"}},
	{Fault: acpharbor.FaultProblemStatusString, Fails: []string{"ACP-ERR-001"}},
}

// Faults that break a SHOULD: the profile warns about exactly that
// requirement and fails nothing.
var acpHarborShouldFaults = []struct {
	Fault acpharbor.Fault
	Warns string
}{
	{acpharbor.FaultInitNoInfo, "ACP-INIT-003"},
	{acpharbor.FaultExtUnknownError, "ACP-EXT-003"},
	{acpharbor.FaultUpdateAfterResp, "ACP-UPD-002"},
	{acpharbor.FaultInfoStale, "ACP-WS-002"},
	{acpharbor.FaultSnapshotUnfiltered, "ACP-SNAP-003"},
	{acpharbor.FaultBranchNoTimeline, "ACP-BRANCH-002"},
	{acpharbor.FaultBranchCreatedSilent, "ACP-BRANCH-007"},
	{acpharbor.FaultNoCheckpoints, "ACP-NOTIF-002"},
	{acpharbor.FaultTenantInvalid, "ACP-TENANT-001"},
}

// acpHarborVariants are legal readings of the Harbor text the profile
// must accept: no failure, no error, no unverified requirement, and no
// warning except the one a row names (harbor/… method names are legal
// but use names ACP reserves).
var acpHarborVariants = []struct {
	Variant acpharbor.Variant
	Warns   []string
}{
	{Variant: acpharbor.VariantNestedMeta},
	{Variant: acpharbor.VariantGateAlias},
	{Variant: acpharbor.VariantProblemResults},
	{Variant: acpharbor.VariantCamelCaseFile},
	{Variant: acpharbor.VariantUpdateDiscriminated},
	{Variant: acpharbor.VariantMethodNotifications},
	{Variant: acpharbor.VariantHarborPrefix, Warns: []string{"ACP-NAME-001"}},
}

// acpHarborRun runs the profile against the reference agent with the given
// serve-acp flags and returns the exit code and the report. Short waits:
// a fault that withholds a message costs them, a working agent answers in
// milliseconds.
//
// The agent command comes after -- as a user gives it (runConform appends
// --out at the end, where it would become the agent's, so this runs the
// binary itself).
func acpHarborRun(t *testing.T, agentFlags ...string) (int, *reports.Report) {
	t.Helper()
	defer direct()()
	out := t.TempDir()
	args := []string{"run", "--profile", "acp-harbor", "--request-timeout", "3s", "--stream-timeout", "2s", "--out", out, "--", conformBin, "serve-acp"}
	args = append(args, agentFlags...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // a hang guard
	defer cancel()
	b, err := exec.CommandContext(ctx, conformBin, args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("conform %v hung; output so far:\n%s", args, b)
	}
	raw, _ := os.ReadFile(filepath.Join(out, reports.JSONFile))
	r, problems := reportProblems(args, string(b), raw)
	for _, p := range problems {
		t.Error(p)
	}
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, b)
	}
	return code, r
}

func TestACPHarborCleanAgent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	code, r := acpHarborRun(t)
	judgeProfileClean(t, "the reference agent", code, r)
	for _, q := range r.Requirements {
		if q.Level != string(requirements.ACPHarbor) {
			t.Errorf("a profile run reports %s of level %s", q.ID, q.Level)
		}
	}
	if len(r.Levels) != 1 || r.Levels[0].Level != requirements.ACPHarbor {
		t.Errorf("levels %+v; want the profile's", r.Levels)
	}
}

// An agent that advertises nothing of Harbor: the extensions are not
// claimed (skip), the base protocol is judged and conformant.
func TestACPHarborBaseOnlyAgent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	code, r := acpHarborRun(t, "--variant", string(acpharbor.VariantNoHarbor))
	judgeProfileClean(t, "a base-ACP agent", code, r)
	passed, skipped := verdicts(r, reports.Pass), verdicts(r, reports.Skip)
	for _, id := range []string{"ACP-INIT-001", "ACP-SESS-001", "ACP-PROMPT-001", "ACP-CANCEL-001", "ACP-RPC-001"} {
		if !slices.Contains(passed, id) {
			t.Errorf("%s not passed for a base-ACP agent (passed: %v)", id, passed)
		}
	}
	for _, id := range []string{"ACP-CAP-001", "ACP-SNAP-001", "ACP-BRANCH-004", "ACP-PIPE-004", "ACP-WS-001"} {
		if !slices.Contains(skipped, id) {
			t.Errorf("%s not skipped (not claimed) for an agent without a Harbor bundle (skipped: %v)", id, skipped)
		}
	}
}

func TestACPHarborFaultsCaught(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range acpHarborFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--fault", string(tc.Fault))
			judgeProfileFault(t, code, r, tc.Fails, tc.Tolerated)
		})
	}
}

func TestACPHarborShouldFaultsWarn(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range acpHarborShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--fault", string(tc.Fault))
			judgeProfileShould(t, code, r, tc.Warns)
		})
	}
}

func TestACPHarborVariantsAccepted(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per variant")
	}
	t.Parallel()
	for _, tc := range acpHarborVariants {
		t.Run(string(tc.Variant), func(t *testing.T) {
			t.Parallel()
			code, r := acpHarborRun(t, "--variant", string(tc.Variant))
			if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Unverified)...); len(bad) > 0 || code != 0 {
				t.Errorf("a legal reading, but exit %d and %v: %s", code, bad, messages(r, bad))
			}
			if warned := verdicts(r, reports.Warn); !slices.Equal(warned, tc.Warns) {
				t.Errorf("warnings %v, want %v: %s", warned, tc.Warns, messages(r, warned))
			}
		})
	}
}

// Every fault and variant of the reference agent has exactly one row, and
// every row names one that exists.
func TestEveryACPHarborFaultHasARow(t *testing.T) {
	rowed := map[acpharbor.Fault]int{}
	for _, r := range acpHarborFaults {
		rowed[r.Fault]++
	}
	for _, r := range acpHarborShouldFaults {
		rowed[r.Fault]++
	}
	for _, f := range acpharbor.Faults() {
		if rowed[f] != 1 {
			t.Errorf("fault %s has %d rows, want 1", f, rowed[f])
		}
	}
	for f := range rowed {
		if !slices.Contains(acpharbor.Faults(), f) {
			t.Errorf("a row names %s, which is not in refharness/acpharbor.Faults", f)
		}
	}
	varied := map[acpharbor.Variant]int{acpharbor.VariantNoHarbor: 1} // TestACPHarborBaseOnlyAgent
	for _, r := range acpHarborVariants {
		varied[r.Variant]++
	}
	for _, v := range acpharbor.Variants() {
		if varied[v] != 1 {
			t.Errorf("variant %s has %d rows, want 1", v, varied[v])
		}
	}
}

// acpHarborProven lists the requirements some ACP Harbor fault row fails,
// for TestEveryMustHasAFault.
func acpHarborProven() []string {
	var ids []string
	for _, r := range acpHarborFaults {
		ids = append(ids, r.Fails...)
	}
	return ids
}

// BenchmarkSelftestACPHarbor measures `conform selftest --profiles
// acp-harbor` as a whole process (start, every spec with its own agent
// process, reports) and the run's own duration_ms (docs/performance.md;
// issue 13's target is at most 2 s per profile).
//
//	go test -run XXX -bench SelftestACPHarbor -benchtime 5x ./cmd/conform/
func BenchmarkSelftestACPHarbor(b *testing.B) { benchProfileSelftest(b, "acp-harbor") }
