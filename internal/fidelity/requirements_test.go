package fidelity

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
)

// oracleProof is one comparison of golden tapes (A = a, B = b) that shows
// the oracle keeps a requirement of spec 003: the status it must reach
// and, for a divergence, a category it must report.
type oracleProof struct {
	a, b     string
	mode     Mode
	status   Status
	category Category
}

// oracleProofs are, per RPLY-ORACLE requirement (internal/requirements/
// tapes.yaml), the golden comparisons that prove conform's oracle keeps it:
// each rule has an input it must flag and, where the rule is a leniency,
// one it must let pass (docs/tapes.md, "Requirements").
var oracleProofs = map[string][]oracleProof{
	"RPLY-ORACLE-001": {{"all-kinds", "newer-version", ByteIdentical, StatusError, VersionUnsupported}},
	"RPLY-ORACLE-002": {
		{"all-kinds", "unknown-kind", ByteIdentical, StatusDiverged, UnknownKind},
		{"all-kinds", "unknown-kind", Semantic, StatusDiverged, UnknownKind},
		{"all-kinds", "unknown-kind", PhaseAware, StatusDiverged, UnknownKind},
		{"unknown-kind", "unknown-kind", Outcome, StatusDiverged, UnknownKind},
	},
	"RPLY-ORACLE-003": {
		{"all-kinds", "all-kinds", ByteIdentical, StatusEqual, ""},
		{"all-kinds", "drift", ByteIdentical, StatusDiverged, TimingDrift},
		{"all-kinds", "drift", ByteIdentical, StatusDiverged, SeqMismatch},
		{"all-kinds", "stochastic-llm", ByteIdentical, StatusDiverged, PayloadHashMismatch},
	},
	"RPLY-ORACLE-004": {
		{"all-kinds", "drift", Semantic, StatusEqual, ""},
		{"all-kinds", "stochastic-llm", Semantic, StatusDiverged, PayloadHashMismatch},
	},
	"RPLY-ORACLE-005": {
		{"all-kinds", "stochastic-llm", Outcome, StatusEqual, ""},
		{"all-kinds", "outcome-changed", Outcome, StatusDiverged, WriteSetMismatch},
		{"all-kinds", "outcome-changed", Outcome, StatusDiverged, ExitStatusMismatch},
		{"all-kinds", "outcome-changed", Outcome, StatusDiverged, LLMCallCountMismatch},
	},
	"RPLY-ORACLE-006": {
		{"all-kinds", "finalize-grew", PhaseAware, StatusEqual, ""},
		{"all-kinds", "drift", PhaseAware, StatusDiverged, TimingDrift},
	},
	// Hashes only: a sidecar that is missing or altered is never opened.
	"RPLY-ORACLE-007": {
		{"cas-missing", "cas-missing", ByteIdentical, StatusEqual, ""},
		{"cas-corrupt", "cas-corrupt", ByteIdentical, StatusEqual, ""},
		{"all-kinds", "finalize-grew", ByteIdentical, StatusDiverged, TimingDrift},
	},
}

// Every RPLY-ORACLE requirement is proven on the golden tapes, except the
// exit status, which is the command's (cmd/conform/internal/tapecli,
// TestDiffGolden).
func TestOracleRequirementsProven(t *testing.T) {
	for id, proofs := range oracleProofs {
		for _, p := range proofs {
			rep, _ := Compare(golden(p.a), golden(p.b), Options{Mode: p.mode})
			if rep == nil {
				t.Fatalf("%s: %s vs %s (%s): no report", id, p.a, p.b, p.mode)
			}
			checkSchema(t, rep)
			if rep.Status != p.status || (p.category != "" && rep.ByCategory[p.category] == 0) {
				t.Errorf("%s: %s vs %s (%s): status %s, categories %v; want %s with %q", id, p.a, p.b, p.mode, rep.Status, rep.ByCategory, p.status, p.category)
			}
		}
	}
	for _, r := range requirements.MustDefault().ByLevel(requirements.Replay) {
		if !strings.HasPrefix(r.ID, "RPLY-ORACLE-") || r.ID == "RPLY-ORACLE-008" {
			continue
		}
		if len(oracleProofs[r.ID]) == 0 {
			t.Errorf("%s has no golden comparison that proves it", r.ID)
		}
	}
}
