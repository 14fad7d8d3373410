package main

// Extended, part 1 (issue 10): privacy and redaction (EXT-PRIV-001..004)
// and the Persona's quota (EXT-PERSONA-005). Each fault row runs the whole
// Extended level against `conform serve --fault F` and must fail exactly
// its requirement. The clean harness passes them all; without the scenario
// hook (which also hides the conform.quotas hook) nothing of these areas
// fails: what needs the hook is unverified, with a remedy naming it.

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

var extPrivacyFaults = []faultCase{
	{Fault: refharness.FaultPrivMarkedPublic, Fails: []string{"EXT-PRIV-001"}},
	{Fault: refharness.FaultPrivReceiptOnlyServed, Fails: []string{"EXT-PRIV-001"}},
	{Fault: refharness.FaultPrivInternalInEvent, Fails: []string{"EXT-PRIV-001"}},
	{Fault: refharness.FaultPrivSecretInPart, Fails: []string{"EXT-PRIV-002"}},
	{Fault: refharness.FaultPrivReasoningExposed, Fails: []string{"EXT-PRIV-003"}},
	{Fault: refharness.FaultPrivRedactionDeletes, Fails: []string{"EXT-PRIV-004"}},
	{Fault: refharness.FaultPrivRedactionSilent, Fails: []string{"EXT-PRIV-004"}},
	{Fault: refharness.FaultQuotaIgnoresPersona, Fails: []string{"EXT-PERSONA-005"}},
}

// extPrivacyReqs are the requirements these rows prove; without the hook
// every one of them is unverified (each spec needs something only the
// hook can drive: the agent's own non-public messages, a secret handed to
// it, its reasoning, a redaction, a quota).
var extPrivacyReqs = []string{"EXT-PRIV-001", "EXT-PRIV-002", "EXT-PRIV-003", "EXT-PRIV-004", "EXT-PERSONA-005"}

func init() {
	planProofs("TestExtPrivacyCleanAndHookless", func() []proofJob {
		return []proofJob{{spec: targetSpec{}, levels: "extended"}, {spec: variantSpec(refharness.VariantNoScenarioHook), levels: "extended"}}
	})
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
	for _, tc := range []struct {
		name string
		spec targetSpec
	}{{"clean", targetSpec{}}, {"no-scenario-hook", variantSpec(refharness.VariantNoScenarioHook)}} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := proof(t, tc.name, tc.spec, "extended")
			got := map[string]reports.ReqResult{}
			for _, q := range r.Requirements {
				got[q.ID] = q
			}
			for _, id := range extPrivacyReqs {
				q, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: %s has no verdict", tc.name, id)
				case tc.name == "no-scenario-hook":
					if q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, "docs/scenarios.md") {
						t.Errorf("%s: %s is %s (%s; remedy %q), want unverified with a remedy naming the hook", tc.name, id, q.Verdict, q.Message, q.Remedy)
					}
				case q.Verdict != reports.Pass:
					t.Errorf("%s: %s is %s, want pass: %s", tc.name, id, q.Verdict, q.Message)
				}
			}
		})
	}
}
