package receipts

import (
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/receipts"
	"github.com/harn-conform/conform/internal/receipt"
)

// verifyCase must pass the corpus as stated and fail a case whose stated
// findings, canonical bytes or keys are wrong: the fixture spec can fail.
func TestVerifyCase(t *testing.T) {
	cases, err := receipts.Cases()
	if err != nil || len(cases) == 0 {
		t.Fatalf("cases: %v (%d)", err, len(cases))
	}
	byName := map[string]receipts.Case{}
	for _, c := range cases {
		if err := verifyCase(c); err != nil {
			t.Errorf("corpus case fails: %v", err)
		}
		byName[c.Name] = c
	}
	wrongFindings := byName["wrong-hash"]
	wrongFindings.Files = []receipts.File{{Path: wrongFindings.Files[0].Path, Findings: []string{receipt.ClassSchemaInvalid}}}
	wrongCanonical := byName["task-completed"]
	wrongCanonical.Files = []receipts.File{{Path: "valid/task-completed.json", Canonical: "valid/task-failed.jcs"}}
	noKeys := byName["signed"]
	noKeys.Keys = "keys/missing.json"
	brokenChain := byName["chain-of-three"]
	brokenChain.Files = []receipts.File{brokenChain.Files[0], brokenChain.Files[2]}
	for name, tc := range map[string]struct {
		c    receipts.Case
		want string
	}{
		"stated findings differ":   {wrongFindings, "findings [hash_mismatch], want [schema_invalid]"},
		"canonical bytes differ":   {wrongCanonical, "canonical bytes differ"},
		"key directory missing":    {noKeys, "keys/missing.json"},
		"chain with a gap is read": {brokenChain, "chain_broken"},
	} {
		err := verifyCase(tc.c)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: verifyCase = %v, want an error saying %q", name, err, tc.want)
		}
	}
}
