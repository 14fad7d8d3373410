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
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range streamFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "core", tc)
		})
	}
}

// Legal but unusual stream framing and cancel answers must pass.
var streamVariants = []refharness.Variant{refharness.VariantCRLF, refharness.VariantKeepAliveEveryFrame,
	refharness.VariantMultilineData, refharness.VariantCancelTerminalConflict}

func TestStreamVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range streamVariants {
		t.Run(string(v), func(t *testing.T) {
			assertVariantPasses(t, v, "core")
		})
	}
}

// Faults the reference Harness has no switch for, made by rewriting its
// answers (package wrapfault, by name); each must still fail exactly its
// requirements.
var streamWrapFaults = []wrapFault{
	{Name: "events-without-payload", Fails: []string{"CORE-EVT-001"}},
	{Name: "event-ranges-ignore-limit", Fails: []string{"CORE-EVT-004"}},
}

func TestStreamWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range streamWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "core", tc)
		})
	}
}

// SHOULD-level lifecycle behaviour broken by rewriting (package wrapfault,
// by name): each must earn a warning for exactly its requirement and fail
// nothing.
var streamWrapShouldFaults = []struct {
	Name  string
	Warns string
}{
	{"failure-hidden", "CORE-LIFE-003"},
	{"outcome-unreachable", "CORE-OUT-002"},
}

func TestStreamWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range streamWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapShouldRow(t, "core-should", tc)
		})
	}
}

// Readings of the spec that the reference Harness does not take but a
// reasonable implementer could: the suite must pass them too. Each puts a
// small handler in front of the reference Harness that changes one
// behaviour (package wrapfault, by name).
var streamReadings = map[string]string{
	"task streams stay open after the task ended": "hold-streams-open",
	"unknown Last-Event-ID refused with 410":      "refuse-unknown-cursor",
	"every transition is task.status_changed":     "status-changed-only",
}

func TestStreamReadingsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per reading")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for name, wrap := range streamReadings {
		t.Run(name, func(t *testing.T) {
			// The count of changed answers is taken after the target
			// served its last request.
			if used := assertClean(t, name, wrapped(wrap), "core"); used == 0 {
				t.Error("the suite never met the changed behaviour, so this proves nothing")
			}
		})
	}
}
