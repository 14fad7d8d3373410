package main

import (
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
)

// Core faults: each must fail exactly the requirements it names. Rows are
// added as the Core suite grows; a test elsewhere keeps every Core fault of
// the reference Harness covered by a row.
var coreFaults = []faultCase{
	{Fault: refharness.FaultSkipVersionCheck, Fails: []string{"CORE-VER-001", "CORE-VER-002"}},
}

func TestCoreFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range coreFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			assertFaultCaught(t, tc, "core")
		})
	}
}

// Every observable MUST of a level with a suite is proven catchable: some
// fault row (a harness fault or a middleware fault) names it in Fails, or
// the registry explains why no target-side fault can break it.
func TestEveryMustHasAFault(t *testing.T) {
	proven := map[string]bool{}
	for _, rows := range [][]faultCase{coreFaults, restFaults, streamFaults, receiptFaults} {
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
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, level := range []requirements.Level{requirements.Core, requirements.Receipts} {
		for _, r := range reg.ByLevel(level) {
			if r.Keyword.Mandatory() && r.Observable && r.Exclusion == "" && !proven[r.ID] && !noTargetFault[r.ID] {
				t.Errorf("%s (%s) has no fault row proving the suite can fail it", r.ID, r.Keyword)
			}
		}
	}
}

// noTargetFault lists MUSTs no target-side fault can break, with the
// reason; each is proven by a Go test of the checker instead.
var noTargetFault = map[string]bool{
	// Offline checks of the fixture corpus: the suite's own verifier must
	// reach each fixture's stated findings. suites/receipts TestVerifyCase
	// shows these specs failing on wrong findings, bytes, keys or chains.
	"RCPT-FIX-001":   true,
	"RCPT-DELTA-001": true, // replay receipts come from the Replay level; checked on fixtures
	"RCPT-DELTA-002": true, // a property of the hashing rule, checked on fixtures
}
