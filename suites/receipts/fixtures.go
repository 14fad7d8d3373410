package receipts

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/fixtures/receipts"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// The fixture corpus runs offline: it checks the suite's own verifier, so a
// run against any target (or none) shows that the verifier the live specs
// rely on finds exactly what each fixture case states.

var _ = Describe("Receipt fixtures", suite.Offline, func() {
	It("verifies every fixture case with exactly the findings it states", suite.Req("RCPT-FIX-001"), func() {
		cases, err := receipts.Cases()
		suite.Must("RCPT-FIX-001", err)
		if len(cases) == 0 {
			suite.Must("RCPT-FIX-001", fmt.Errorf("the fixture corpus is empty"))
		}
		for _, c := range cases {
			suite.Check("RCPT-FIX-001", verifyCase(c))
		}
	})

	It("keeps a replay receipt's deltas inside the hashed bytes", suite.Req("RCPT-DELTA-001"), func() {
		raw, err := receipts.Read("valid/replay-segment.json")
		suite.Must("RCPT-DELTA-001", err)
		res := receipt.Verify(raw, receipt.Options{})
		suite.Must("RCPT-DELTA-001", res.Err())
		var m map[string]any
		suite.Must("RCPT-DELTA-001", json.Unmarshal(raw, &m))
		deltas, _ := m["deltas"].([]any)
		if len(deltas) == 0 {
			suite.Must("RCPT-DELTA-001", fmt.Errorf("valid/replay-segment.json has no deltas to check"))
		}
		deltas[0].(map[string]any)["reason"] = "changed after sealing"
		edited, _ := json.Marshal(m)
		if got := receipt.Verify(edited, receipt.Options{}).Classes(); !slices.Equal(got, []string{receipt.ClassHashMismatch}) {
			suite.Check("RCPT-DELTA-001", fmt.Errorf("editing a delta after sealing gives findings %v, want exactly [%s]: deltas must be hashed", got, receipt.ClassHashMismatch))
		}
	})

	It("keeps a batch root inside the hashed bytes and checks it only against a stated root", suite.Req("RCPT-CHAIN-002"), func() {
		raw, err := receipts.Read("valid/task-completed.json")
		suite.Must("RCPT-CHAIN-002", err)
		var m map[string]any
		suite.Must("RCPT-CHAIN-002", json.Unmarshal(raw, &m))
		root, _ := m["chain"].(map[string]any)["merkle_root"].(string)
		if root == "" {
			suite.Must("RCPT-CHAIN-002", fmt.Errorf("valid/task-completed.json has no chain.merkle_root to check"))
		}
		other := receipt.HashPrefix + strings.Repeat("ab", 32)
		for _, tc := range []struct {
			opts receipt.Options
			want []string
		}{
			{receipt.Options{}, nil},
			{receipt.Options{MerkleRoot: root}, nil},
			{receipt.Options{MerkleRoot: other}, []string{receipt.ClassMerkleMismatch}},
		} {
			if got := receipt.Verify(raw, tc.opts).Classes(); !slices.Equal(got, tc.want) {
				suite.Check("RCPT-CHAIN-002", fmt.Errorf("batch root %q: findings %v, want %v", tc.opts.MerkleRoot, got, tc.want))
			}
		}
		m["chain"].(map[string]any)["merkle_root"] = other
		edited, _ := json.Marshal(m)
		if got := receipt.Verify(edited, receipt.Options{}).Classes(); !slices.Equal(got, []string{receipt.ClassHashMismatch}) {
			suite.Check("RCPT-CHAIN-002", fmt.Errorf("changing merkle_root after sealing gives findings %v, want exactly [%s]: the root is hashed", got, receipt.ClassHashMismatch))
		}
	})

	It("leaves signatures out of the canonical bytes and the hash", suite.Req("RCPT-DELTA-002"), func() {
		raw, err := receipts.Read("valid/signed.json")
		suite.Must("RCPT-DELTA-002", err)
		var m map[string]any
		suite.Must("RCPT-DELTA-002", json.Unmarshal(raw, &m))
		base, err := receipt.Canonical(raw)
		suite.Must("RCPT-DELTA-002", err)
		variants := map[string]func(){
			"without signatures":  func() { delete(m, "signatures") },
			"with an empty array": func() { m["signatures"] = []any{} },
			"with another signature": func() {
				m["signatures"] = append(m["signatures"].([]any), map[string]any{"key_id": "other", "algorithm": "ed25519", "signature": "base64:AAAA"})
			},
		}
		names := make([]string, 0, len(variants))
		for n := range variants {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			suite.Must("RCPT-DELTA-002", json.Unmarshal(raw, &m))
			variants[name]()
			b, _ := json.Marshal(m)
			got, err := receipt.Canonical(b)
			suite.Must("RCPT-DELTA-002", err)
			if string(got) != string(base) {
				suite.Check("RCPT-DELTA-002", fmt.Errorf("the signed fixture %s has different canonical bytes: signatures must be excluded", name))
			}
		}
	})
})

// verifyCase verifies one case as cases.json says and compares the finding
// classes of each file with the expected ones.
func verifyCase(c receipts.Case) error {
	opts := receipt.Options{MerkleRoot: c.MerkleRoot}
	if c.Keys != "" {
		b, err := receipts.Read(c.Keys)
		if err != nil {
			return fmt.Errorf("case %s: %v", c.Name, err)
		}
		if opts.Keys, err = receipt.ParseKeySet(b); err != nil {
			return fmt.Errorf("case %s: %v", c.Name, err)
		}
	}
	raws := make([][]byte, len(c.Files))
	for i, f := range c.Files {
		b, err := receipts.Read(f.Path)
		if err != nil {
			return fmt.Errorf("case %s: %v", c.Name, err)
		}
		raws[i] = b
	}
	var results []receipt.Result
	if c.Chain {
		results = receipt.VerifyChain(raws, opts)
	} else {
		for _, b := range raws {
			results = append(results, receipt.Verify(b, opts))
		}
	}
	var errs []string
	for i, f := range c.Files {
		got, want := results[i].Classes(), slices.Clone(f.Findings)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			errs = append(errs, fmt.Sprintf("%s: findings %v, want %v", f.Path, got, want))
		}
		if f.Canonical != "" {
			jcs, err := receipts.Read(f.Canonical)
			if err != nil || string(jcs) != string(results[i].Canonical) {
				errs = append(errs, fmt.Sprintf("%s: canonical bytes differ from %s", f.Path, f.Canonical))
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("case %s: %s", c.Name, strings.Join(errs, "; "))
	}
	return nil
}
