package main

import "testing"

// Core's fault rows, derived from the declarations (faultrows_test.go):
// each fault of the reference Harness that breaks a Core MUST must fail
// exactly its requirements (plus the tolerated ones), on the Harness as it
// is and, for the faults declared Hookless, without the scenario hook too
// (as a third-party server is run: the suite judges whatever the target's
// own agent does), and for those declared SlowHookless on such a target
// whose agent works a second over a task and fails an empty prompt (the
// suite judges the tasks it catches running, canceled and failed); each
// that breaks a SHOULD must warn and fail nothing.

func TestCoreFaultsCaught(t *testing.T)         { runPool(t) }
func TestHooklessFaultsCaught(t *testing.T)     { runPool(t) }
func TestSlowHooklessFaultsCaught(t *testing.T) { runPool(t) }
func TestCoreShouldFaultsWarn(t *testing.T)     { runPool(t) }
