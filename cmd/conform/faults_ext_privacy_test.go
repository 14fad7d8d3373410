package main

// Extended, part 1 (issue 10): privacy and redaction (EXT-PRIV-001..004)
// and the Persona's quota (EXT-PERSONA-005). Each fault row runs the whole
// Extended level against `conform serve --fault F` and must fail exactly
// its requirement. The clean harness passes them all; without the scenario
// hook (which also hides the conform.quotas hook) nothing of these areas
// fails: what needs the hook is unverified, with a remedy naming it.

import (
	"testing"
)

// extPrivacyReqs are the requirements these rows prove; without the hook
// every one of them is unverified (each spec needs something only the
// hook can drive: the agent's own non-public messages, a secret handed to
// it, its reasoning, a redaction, a quota).
var extPrivacyReqs = []string{"EXT-PRIV-001", "EXT-PRIV-002", "EXT-PRIV-003", "EXT-PRIV-004", "EXT-PERSONA-005"}

func init() {
	planProofs("TestExtPrivacyCleanAndHookless", cleanAndHooklessJobs)
}

// The clean harness passes every requirement of these areas; without the
// hook each is unverified with a remedy naming the scenario contract or
// the hook, and none fails or errs.
func TestExtPrivacyCleanAndHookless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite twice")
	}
	startProofs(t)
	t.Parallel()
	assertCleanAndHookless(t, extPrivacyReqs, extPrivacyReqs, "docs/scenarios.md")
}
