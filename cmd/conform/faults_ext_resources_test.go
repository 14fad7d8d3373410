package main

// Extended management resources (issue 10, part 1): Memories, Vaults,
// Quotas and Connectors with delivery dedupe. Each fault of the reference
// Harness fails exactly its requirement at the Extended level; the clean
// harness passes every one of them, and the harness without its test
// hooks (no-scenario-hook) fails none: what it cannot show is unverified,
// with a remedy naming the hook.
// Every run is of the whole Extended level: a fault must fail its
// requirement and nothing else anywhere in the level.

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// extResourceReqs are the requirements whose specs live in
// suites/extended/{memories,vaults,quotas,connectors}.go.
var extResourceReqs = []string{
	"EXT-MEMORY-001", "EXT-MEMORY-002",
	"EXT-VAULT-001", "EXT-VAULT-002", "EXT-VAULT-003", "EXT-AUTHZ-005",
	"EXT-QUOTA-001", "EXT-QUOTA-002", "EXT-AUTHZ-006",
	"EXT-CONNECTOR-001", "EXT-CONNECTOR-002", "EXT-CONNECTOR-003", "EXT-CONNECTOR-004",
}

// hookless are the requirements a run without the hooks cannot verify on
// the reference Harness (it has no quota or connector of its own, and
// takes no secret without the hook).
var hookless = []string{"EXT-VAULT-002", "EXT-VAULT-003", "EXT-AUTHZ-005", "EXT-QUOTA-001", "EXT-QUOTA-002", "EXT-AUTHZ-006",
	"EXT-CONNECTOR-001", "EXT-CONNECTOR-002", "EXT-CONNECTOR-003", "EXT-CONNECTOR-004"}

func init() {
	planProofs("TestExtResourcesCleanAndHookless", func() []proofJob {
		return []proofJob{{spec: targetSpec{}, levels: "extended"},
			{spec: variantSpec(refharness.VariantNoScenarioHook), levels: "extended"}}
	})
}

// The clean harness passes every requirement of these areas; without the
// hooks nothing fails, what needs a hook is unverified with a remedy that
// names it, and what needs none still passes.
func TestExtResourcesCleanAndHookless(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite twice")
	}
	startProofs(t)
	t.Parallel()
	for _, tc := range []struct {
		name       string
		spec       targetSpec
		unverified []string
	}{
		{"clean", targetSpec{}, nil},
		{"no-scenario-hook", variantSpec(refharness.VariantNoScenarioHook), hookless},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, r, _ := proof(t, tc.name, tc.spec, "extended")
			got := map[string]reports.ReqResult{}
			for _, q := range r.Requirements {
				got[q.ID] = q
			}
			for _, id := range extResourceReqs {
				q, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: no verdict", id)
				case slices.Contains(tc.unverified, id):
					if q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, "docs/scenarios.md") && !strings.Contains(q.Remedy, "configure a") {
						t.Errorf("%s is %s (%s; remedy %q), want unverified with a remedy naming the hook", id, q.Verdict, q.Message, q.Remedy)
					}
				case q.Verdict != reports.Pass:
					t.Errorf("%s is %s, want pass: %s", id, q.Verdict, q.Message)
				}
			}
			if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
				t.Errorf("%s: the suite reports %v: %s", tc.name, bad, messages(r, bad))
			}
		})
	}
}
