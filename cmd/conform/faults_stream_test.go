package main

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// Lifecycle, cancellation, outcome, event and SSE faults: each must fail
// exactly the requirements it names (plus the tolerated ones, which observe
// the same broken behaviour from another side).
var streamFaults = []faultCase{
	{Fault: refharness.FaultIllegalTransition, Fails: []string{"CORE-LIFE-001"}},
	{Fault: refharness.FaultSkipTransitionEvent, Fails: []string{"CORE-LIFE-002"}},
	// A completed task turned CANCELED keeps its completed_at: the same
	// broken cancel, seen on the task's fields.
	{Fault: refharness.FaultTerminalTaskMutable, Fails: []string{"CORE-CANCEL-002"}, Tolerated: []string{"CORE-CANCEL-003"}},
	{Fault: refharness.FaultCompletedAfterCancel, Fails: []string{"CORE-CANCEL-001"}},
	{Fault: refharness.FaultCanceledHasCompletedAt, Fails: []string{"CORE-CANCEL-003"}},
	{Fault: refharness.FaultOutcomeUsesTaskStatus, Fails: []string{"CORE-OUT-001"}},
	{Fault: refharness.FaultSequenceNotIncreasing, Fails: []string{"CORE-EVT-002"}},
	{Fault: refharness.FaultDropSSEID, Fails: []string{"CORE-SSE-002"}},
	{Fault: refharness.FaultSSEWrongContentType, Fails: []string{"CORE-SSE-001"}},
	{Fault: refharness.FaultSSEDataNotJSON, Fails: []string{"CORE-SSE-003"}},
	{Fault: refharness.FaultResumeRepeatsEvent, Fails: []string{"CORE-RESUME-001"}},
	{Fault: refharness.FaultNoCursorExpiredFrame, Fails: []string{"CORE-RESUME-002"}},
	{Fault: refharness.FaultIgnoreLastEventID, Fails: []string{"CORE-RESUME-001"}},
	// A range read that ignores its cursor also makes the page walk repeat.
	{Fault: refharness.FaultEventsRepeatOnRange, Fails: []string{"CORE-EVT-003"}, Tolerated: []string{"CORE-EVT-004"}},
}

func TestStreamFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range streamFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			assertFaultCaught(t, tc, "core")
		})
	}
}

// Legal but unusual stream framing and cancel answers must pass.
func TestStreamVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, v := range []refharness.Variant{refharness.VariantCRLF, refharness.VariantKeepAliveEveryFrame,
		refharness.VariantMultilineData, refharness.VariantCancelTerminalConflict} {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			assertVariantPasses(t, v, "core")
		})
	}
}
