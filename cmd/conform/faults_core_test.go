package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// Core faults: each must fail exactly the requirements it names. Rows are
// added as the Core suite grows; a test elsewhere keeps every Core fault of
// the reference Harness covered by a row.
var coreFaults = []faultCase{
	{Fault: refharness.FaultSkipVersionCheck, Fails: []string{"CORE-VER-001", "CORE-VER-002"}},
	// Three specs wait for a task whose cancel did nothing (ten minutes of
	// work) to leave WORKING, which it never does: each wait runs to
	// --task-timeout and ends in the expected failure, or in a verdict on
	// another requirement that holds whatever the wait's length, so this
	// row shortens it from the default 30s. The waits of this run that must
	// succeed are for tasks that end by themselves within 5s at most (the
	// longest try of cancelWhileWorking), usually within milliseconds.
	{Fault: refharness.FaultCancelNoop, Fails: []string{"CORE-CANCEL-001"}, Args: []string{"--task-timeout", "10s"}},
	// The run ends at the first task read: no wait runs to its timeout.
	{Fault: refharness.FaultLowercaseStatus, Fails: []string{"CORE-READ-004"}},
	{Fault: refharness.FaultPlainSkipsWork, Fails: []string{"CORE-LIFE-001"}},
	// Probed on every operation of the OpenAPI, not on /v1/tasks alone.
	{Fault: refharness.FaultAuthOnlyOnTasks, Fails: []string{"CORE-AUTH-001"}},
	{Fault: refharness.FaultVersionOnlyOnTasks, Fails: []string{"CORE-VER-001"}},
	{Fault: refharness.FaultClosedTakesTasks, Fails: []string{"CORE-SESSION-001"}},
}

// hooklessFaults are caught on a target without the scenario hook too, as
// a third-party server would be run: the suite judges whatever the
// target's own agent does.
var hooklessFaults = []faultCase{
	{Fault: refharness.FaultPlainSkipsWork, Fails: []string{"CORE-LIFE-001"}},
	{Fault: refharness.FaultIllegalTransition, Fails: []string{"CORE-LIFE-001"}},
	{Fault: refharness.FaultSkipTransitionEvent, Fails: []string{"CORE-LIFE-002"}},
	{Fault: refharness.FaultLowercaseStatus, Fails: []string{"CORE-READ-004"}},
	{Fault: refharness.FaultDropSSEID, Fails: []string{"CORE-SSE-002"}},
	{Fault: refharness.FaultSSEDataNotJSON, Fails: []string{"CORE-SSE-003"}},
	{Fault: refharness.FaultEventsNotScoped, Fails: []string{"CORE-EVT-005"}},
	{Fault: refharness.FaultEventIDsNotMonotonic, Fails: []string{"CORE-EVT-006"}},
	{Fault: refharness.FaultTerminalAcceptsMessage, Fails: []string{"CORE-LIFE-004"}},
	{Fault: refharness.FaultIdempotencyByteCompare, Fails: []string{"CORE-IDEM-001"}},
	{Fault: refharness.FaultAuthOnlyOnTasks, Fails: []string{"CORE-AUTH-001"}},
	{Fault: refharness.FaultVersionOnlyOnTasks, Fails: []string{"CORE-VER-001"}},
	// The artifact checks read the artifact the target's own agent keeps
	// (docs/interpretations.md#evidence-sources).
	{Fault: refharness.FaultArtifactSHAPrefixed, Fails: []string{"CORE-READ-007"}},
}

// hooklessWrapFaults break, from outside, what a target without the hook
// shows of its own: the bytes its agent's artifact is served with.
var hooklessWrapFaults = []wrapFault{
	{Name: "content-not-matching-sha256", Fails: []string{"CORE-READ-013"}},
}

// noHookSlow is a target without the hook whose agent takes a second over
// a plain task and fails one with no text: the run catches its own tasks
// running, canceled and failed.
var noHookSlow = []refharness.Variant{refharness.VariantNoScenarioHook, refharness.VariantSlowAgent}

// slowHooklessFaults are caught on such a target by the checks that need a
// task in a state, judging the target's own tasks caught in it.
var slowHooklessFaults = []faultCase{
	{Fault: refharness.FaultCompletedAfterCancel, Fails: []string{"CORE-CANCEL-001"}},
	{Fault: refharness.FaultCanceledHasCompletedAt, Fails: []string{"CORE-CANCEL-003"}},
	{Fault: refharness.FaultTerminalTaskMutable, Fails: []string{"CORE-CANCEL-002"}},
}

// slowHooklessWrapFaults: a cancel of a plain task that still runs is
// refused (a refusal is right only for a task that had ended).
var slowHooklessWrapFaults = []wrapFault{
	{Name: "cancel-refused-while-running", Fails: []string{"CORE-CANCEL-001"}},
}

func TestHooklessWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range hooklessWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "core-hookless", tc)
		})
	}
}

func TestSlowHooklessFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range slowHooklessFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "core-hookless-slow", tc)
		})
	}
	for _, tc := range slowHooklessWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "core-hookless-slow", tc)
		})
	}
}

func TestHooklessFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range hooklessFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "core-hookless", tc)
		})
	}
}

func TestCoreFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range coreFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "core", tc)
		})
	}
}

// Every observable MUST of a level with a suite is proven catchable: some
// fault row (a harness fault or a middleware fault) names it in Fails, or
// the registry explains why no target-side fault can break it.
func TestEveryMustHasAFault(t *testing.T) {
	proven := map[string]bool{}
	for _, rows := range [][]faultCase{coreFaults, restFaults, streamFaults, receiptFaults, replayFaults} {
		for _, r := range rows {
			for _, id := range r.Fails {
				proven[id] = true
			}
		}
	}
	for _, rows := range [][]wrapFault{restWrapFaults, streamWrapFaults, receiptWrapFaults} {
		for _, r := range rows {
			for _, id := range r.Fails {
				proven[id] = true
			}
		}
	}
	for _, rows := range extendedFaultTables {
		for _, r := range rows {
			for _, id := range r.Fails {
				proven[id] = true
			}
		}
	}
	for _, r := range cardFaultRows {
		proven[r.fails] = true
	}
	for _, id := range openHarnessProven() { // faults_openharness_test.go
		proven[id] = true
	}
	for _, id := range acpHarborProven() { // faults_acpharbor_test.go
		proven[id] = true
	}
	for _, r := range oauthFaultRows {
		for id, v := range r.want {
			if v == reports.Fail {
				proven[id] = true
			}
		}
	}
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	// Extended is judged by what it checks: a MUST with a spec needs a
	// fault (TestCoverageGate requires the specs, area by area; the
	// WebSocket ones come with their own issue).
	specced := map[string]bool{}
	out, err := exec.Command(conformBin, "list", "--format", "json", "--levels", "extended").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID    string
		Specs []string
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		specced[r.ID] = len(r.Specs) > 0
	}
	if len(rows) == 0 {
		t.Fatal("conform list --levels extended listed nothing")
	}
	for _, level := range []requirements.Level{requirements.Core, requirements.Receipts, requirements.Extended, requirements.OpenHarness, requirements.ACPHarbor, requirements.Replay} {
		for _, r := range reg.ByLevel(level) {
			if level == requirements.Extended && !specced[r.ID] {
				continue
			}
			if r.Keyword.Mandatory() && r.Observable && r.Exclusion == "" && !proven[r.ID] && !noTargetFault[r.ID] {
				t.Errorf("%s (%s) has no fault row proving the suite can fail it", r.ID, r.Keyword)
			}
		}
	}
}

// noTargetFault lists MUSTs no target-side fault can break, with the
// reason; each is proven by a Go test of the checker instead.
var noTargetFault = map[string]bool{
	// Durability needs a restart, which the fault-row runners cannot give:
	// TestDurability* (durability_test.go) restarts an in-memory `conform
	// serve` by --restart-cmd and sees exactly these fail, and a harness
	// that keeps a waiting task waiting across a restart fail CORE-DUR-001.
	"CORE-DUR-001": true,
	"CORE-DUR-002": true,
}

// Every fault of the reference Harness has a row that proves the suite
// catches it (a MUST row, a SHOULD row that must warn, or a card or OAuth
// row), and every row names a fault the Harness has: a fault no row runs
// proves nothing.
func TestEveryFaultHasARow(t *testing.T) {
	rowed := map[refharness.Fault]bool{}
	for _, rows := range append([][]faultCase{coreFaults, hooklessFaults, slowHooklessFaults, restFaults, streamFaults, receiptFaults, receiptHooklessFaults, replayFaults}, extendedFaultTables...) {
		for _, r := range rows {
			rowed[r.Fault] = true
		}
	}
	for _, rows := range [][]struct {
		Fault refharness.Fault
		Warns string
	}{restShouldFaults, extendedShouldFaults} {
		for _, r := range rows {
			rowed[r.Fault] = true
		}
	}
	for _, r := range receiptShouldFaults {
		rowed[r.Fault] = true
	}
	for _, r := range replayShouldFaults {
		rowed[r.Fault] = true
	}
	for _, r := range cardFaultRows {
		rowed[r.fault] = true
	}
	for _, r := range oauthFaultRows {
		rowed[r.fault] = true
	}
	all := refharness.AllFaults()
	for _, f := range all {
		if !rowed[f] {
			t.Errorf("fault %s has no row", f)
		}
	}
	for f := range rowed {
		if !slices.Contains(all, f) {
			t.Errorf("a row names %s, which is not in refharness.AllFaults", f)
		}
	}
}
