package main

import (
	"testing"

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
