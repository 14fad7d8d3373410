package main

// Extended, part 2 (issue 11): the WebSocket profile harn-ws.v1
// (docs/websocket.md) and transport parity. Each fault row runs the whole
// Extended level against `conform serve --fault F` and must fail exactly
// its requirement (a SHOULD or MAY row: warn it, fail nothing); the clean
// harness passes every observable WebSocket requirement, and without the
// scenario hook the ones that need a task to wait are unverified with a
// remedy while the rest still pass.

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

var extWSFaults = []faultCase{
	{Fault: refharness.FaultWSUpgradeUnauthenticated, Fails: []string{"EXT-WS-001"}},
	{Fault: refharness.FaultWSAdvertisesPlainRemote, Fails: []string{"EXT-WS-002"}},
	{Fault: refharness.FaultWSBinaryEventFrames, Fails: []string{"EXT-WS-003"}},
	{Fault: refharness.FaultWSMessageNotAppended, Fails: []string{"EXT-WS-004"}},
	// The task works ten minutes and the cancel never takes: the wait for
	// CANCELED (cancellation is cooperative) lasts the whole task timeout,
	// and 3 s is ample for the reference Harness.
	{Fault: refharness.FaultWSCancelIgnored, Fails: []string{"EXT-WS-005"}, Args: []string{"--task-timeout", "3s"}},
	{Fault: refharness.FaultWSTruncateKeepsAll, Fails: []string{"EXT-WS-006"}},
	{Fault: refharness.FaultWSEventFrameDiffers, Fails: []string{"EXT-WS-007"}},
	{Fault: refharness.FaultWSNoInputRequest, Fails: []string{"EXT-WS-008"}},
	{Fault: refharness.FaultWSResumeSkipsEvent, Fails: []string{"EXT-WS-010"}},
	{Fault: refharness.FaultWSReplayedUnmarked, Fails: []string{"EXT-WS-012"}},
}

// extWSShouldFaults break a SHOULD (or a MAY's condition): a warning,
// nothing failed.
var extWSShouldFaults = []struct {
	Fault refharness.Fault
	Warns string
}{
	{refharness.FaultWSNoHeartbeat, "EXT-WS-011"},
	{refharness.FaultWSApprovalAnswerIgnored, "EXT-WS-009"},
	{refharness.FaultWSIdempotencyIgnored, "EXT-WS-013"},
	// SSE alone changes agent messages' text: only parity can see it.
	{refharness.FaultSSEPayloadDrift, "EXT-TRANSPORT-004"},
}

// extWSReqs are the requirements these rows prove, and extWSHooked those
// of them that need the scenario hook (a task that waits for input or
// approval, or runs long enough to be resumed mid-run).
var (
	extWSReqs = []string{"EXT-WS-001", "EXT-WS-002", "EXT-WS-003", "EXT-WS-004", "EXT-WS-005", "EXT-WS-006", "EXT-WS-007",
		"EXT-WS-008", "EXT-WS-009", "EXT-WS-010", "EXT-WS-011", "EXT-WS-012", "EXT-WS-013", "EXT-TRANSPORT-004"}
	extWSHooked = []string{"EXT-WS-005", "EXT-WS-008", "EXT-WS-009", "EXT-WS-010", "EXT-WS-012", "EXT-TRANSPORT-004"}
)

// extWSWrapFaults break the WebSocket transport from outside the harness
// (package wrapfault): ws-silent upgrades and then sends nothing. The run
// must still end within its timeouts, fail the transport's offer
// (EXT-WS-001) and the advertised transport (EXT-TRANSPORT-002), and leave
// the other WebSocket requirements unverified, not failed.
var extWSWrapFaults = []wrapFault{
	{Name: "ws-silent", Fails: []string{"EXT-WS-001", "EXT-TRANSPORT-002"}},
}

func init() {
	planProofs("TestExtWSWrappedFaultsCaught", func() []proofJob { return poolJobs("extended", wrapsOf(extWSWrapFaults)) })
	planProofs("TestExtWSCleanAndHookless", cleanAndHooklessJobs)
}

// The clean harness passes every WebSocket requirement; without the hook
// the ones that need a waiting task are unverified with a remedy, and the
// others still pass. Neither run fails, errs or warns any of them.
func TestExtWSCleanAndHookless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite twice")
	}
	startProofs(t)
	t.Parallel()
	assertCleanAndHookless(t, extWSReqs, extWSHooked, "")
}

func TestExtWSWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range extWSWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "extended", tc)
		})
	}
}
