package receiptcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/receipts"
)

// fixture copies a fixture file into a temp dir and returns its path, so
// the command reads real files the way a user's shell would pass them.
func fixture(t *testing.T, dir, path string) string {
	t.Helper()
	b, err := receipts.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, filepath.Base(path))
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func run(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestVerifyExitCodes(t *testing.T) {
	dir := t.TempDir()
	valid := fixture(t, dir, "valid/task-completed.json")
	tampered := fixture(t, dir, "invalid/tampered.json")
	signed := fixture(t, dir, "valid/signed.json")
	keys := fixture(t, dir, "keys/fixture-keys.json")
	unknownKey := fixture(t, dir, "invalid/unknown-key.json")
	c1 := fixture(t, dir, "valid/chain-1.json")
	c2 := fixture(t, dir, "valid/chain-2.json")
	c3 := fixture(t, dir, "valid/chain-3.json")
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, bytes.Repeat([]byte(" "), MaxReceiptBytes+1), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want int
	}{
		{"one valid", []string{"verify", valid}, 0},
		{"flags after files", []string{"verify", valid, "--format", "json"}, 0},
		{"one invalid among valid", []string{"verify", valid, tampered}, 1},
		{"signed with keys", []string{"verify", "--keys", keys, signed}, 0},
		{"unknown key", []string{"verify", "--keys", keys, unknownKey}, 1},
		{"chain in order", []string{"verify", "--chain", c1, c2, c3}, 0},
		{"chain out of order", []string{"verify", "--chain", c1, c3, c2}, 1},
		{"chain start demanded", []string{"verify", "--previous", "null", c1}, 0},
		{"missing file", []string{"verify", filepath.Join(dir, "nope.json")}, 2},
		{"missing file wins over invalid", []string{"verify", tampered, filepath.Join(dir, "nope.json")}, 2},
		{"directory", []string{"verify", dir}, 2},
		{"too large", []string{"verify", huge}, 2},
		{"no files", []string{"verify"}, 2},
		{"no subcommand", nil, 2},
		{"unknown subcommand", []string{"sign", valid}, 2},
		{"bad format", []string{"verify", "--format", "xml", valid}, 2},
		{"bad merkle root", []string{"verify", "--merkle-root", "sha256:XYZ", valid}, 2},
		{"unreadable keys", []string{"verify", "--keys", filepath.Join(dir, "nokeys.json"), valid}, 2},
		{"keys not a directory document", []string{"verify", "--keys", valid, signed}, 2},
		{"stdin twice", []string{"verify", "-", "-"}, 2},
		{"stdin for keys and receipt", []string{"verify", "--keys", "-", "-"}, 2},
		{"help", []string{"verify", "-h"}, 0},
		{"help after files", []string{"verify", valid, "--help"}, 0},
		{"lone help word", []string{"verify", "help"}, 0},
		{"receipt help", []string{"help"}, 0},
		{"receipt -h", []string{"-h"}, 0},
		{"receipt --help", []string{"--help"}, 0},
		{"signed without keys", []string{"verify", signed}, 1},
		{"signed without keys, allowed", []string{"verify", "--allow-unchecked-signatures", signed}, 0},
		{"signed without keys among valid", []string{"verify", valid, signed}, 1},
		{"unsigned, allowance irrelevant", []string{"verify", "--allow-unchecked-signatures", tampered}, 1},
		{"out is a directory", []string{"verify", "--out", dir, valid}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, out, errs := run(t, "", c.args...)
			if code != c.want {
				t.Errorf("Main(%q) = %d, want %d\nstdout:\n%s\nstderr:\n%s", c.args, code, c.want, out, errs)
			}
		})
	}
}

func TestVerifyStdin(t *testing.T) {
	raw, err := receipts.Read("valid/task-failed.json")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := run(t, string(raw), "verify", "-")
	if code != 0 || !strings.Contains(out, "<stdin>") || !strings.Contains(out, "VALID") {
		t.Errorf("verify - = %d, output:\n%s", code, out)
	}
	code, out, _ = run(t, "{not json", "verify", "-")
	if code != 1 || !strings.Contains(out, "json_invalid") {
		t.Errorf("verify - on garbage = %d, want 1 with json_invalid; output:\n%s", code, out)
	}
}

// TestHashMismatchShowsBothHashes is the debugging promise of the command.
func TestHashMismatchShowsBothHashes(t *testing.T) {
	dir := t.TempDir()
	p := fixture(t, dir, "invalid/tampered.json")
	code, out, _ := run(t, "", "verify", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	for _, want := range []string{"FAIL  hash", "hash_mismatch", "stored hash:   sha256:", "computed hash: sha256:"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestCanonicalFlagPrintsHashedBytes(t *testing.T) {
	dir := t.TempDir()
	p := fixture(t, dir, "valid/numbers.json")
	want, err := receipts.Read("valid/numbers.jcs")
	if err != nil {
		t.Fatal(err)
	}
	_, out, _ := run(t, "", "verify", "--canonical", p)
	if !strings.Contains(out, "\n"+string(want)+"\n") {
		t.Errorf("text output does not carry the canonical bytes on their own line:\n%s", out)
	}
	_, out, _ = run(t, "", "verify", "--canonical", "--format", "json", p)
	var doc struct {
		Valid    bool `json:"valid"`
		Receipts []struct {
			File      string `json:"file"`
			Valid     bool   `json:"valid"`
			Canonical string `json:"canonical"`
			Computed  string `json:"computed_hash"`
			Steps     []struct {
				Name string `json:"name"`
				OK   bool   `json:"ok"`
			} `json:"steps"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("json output: %v\n%s", err, out)
	}
	if !doc.Valid || len(doc.Receipts) != 1 || doc.Receipts[0].Canonical != string(want) || len(doc.Receipts[0].Steps) != 7 {
		t.Errorf("json output = %+v", doc)
	}
}

func TestJSONFindings(t *testing.T) {
	dir := t.TempDir()
	p := fixture(t, dir, "invalid/missing-hash.json")
	code, out, _ := run(t, "", "verify", "--format=json", p)
	if code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	var doc struct {
		Receipts []struct {
			Findings []struct{ Class, Step, Message string } `json:"findings"`
		} `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	classes := map[string]bool{}
	for _, f := range doc.Receipts[0].Findings {
		classes[f.Class] = true
		if f.Step == "" || f.Message == "" {
			t.Errorf("finding without step or message: %+v", f)
		}
	}
	if !classes["hash_missing"] || !classes["schema_invalid"] {
		t.Errorf("classes = %v, want hash_missing and schema_invalid", classes)
	}
}

// A signed receipt whose signatures were not checked is never called VALID
// without saying so, and without --allow-unchecked-signatures it is not
// valid at all (exit 1): "valid" must not vouch for unchecked signatures.
func TestUncheckedSignatures(t *testing.T) {
	dir := t.TempDir()
	signed := fixture(t, dir, "valid/signed.json")
	keys := fixture(t, dir, "keys/fixture-keys.json")

	code, out, _ := run(t, "", "verify", signed)
	if code != ExitInvalid || strings.Contains(out, ": VALID") || !strings.Contains(out, "SIGNATURES NOT CHECKED") ||
		!strings.Contains(out, "1 signature NOT checked: no public keys given; give --keys FILE") || !strings.Contains(out, "--allow-unchecked-signatures") ||
		!strings.Contains(out, "0 valid, 0 invalid, 1 with no signature checked") {
		t.Errorf("signed, no keys: exit %d, output:\n%s", code, out)
	}
	code, out, _ = run(t, "", "verify", "--allow-unchecked-signatures", signed)
	if code != ExitValid || !strings.Contains(out, "VALID (everything but signatures: 1 signature NOT checked") {
		t.Errorf("signed, no keys, allowed: exit %d, output:\n%s", code, out)
	}
	code, out, _ = run(t, "", "verify", "--keys", keys, signed)
	if code != ExitValid || !strings.Contains(out, ": VALID\n") || strings.Contains(out, "NOT checked") {
		t.Errorf("signed with keys: exit %d, output:\n%s", code, out)
	}

	var doc struct {
		Valid    bool `json:"valid"`
		Receipts []struct {
			Valid               bool   `json:"valid"`
			Verdict             string `json:"verdict"`
			Signatures          int    `json:"signatures"`
			SignaturesUnchecked int    `json:"signatures_unchecked"`
			UncheckedReason     string `json:"unchecked_reason"`
		} `json:"receipts"`
	}
	for _, tc := range []struct {
		args      []string
		code      int
		valid     bool
		verdict   string
		unchecked int
	}{
		{[]string{signed}, ExitInvalid, false, VerdictUnchecked, 1},
		{[]string{"--allow-unchecked-signatures", signed}, ExitValid, true, VerdictValid, 1},
		{[]string{"--keys", keys, signed}, ExitValid, true, VerdictValid, 0},
	} {
		code, out, _ := run(t, "", append([]string{"verify", "--format", "json"}, tc.args...)...)
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatalf("%v: %v\n%s", tc.args, err, out)
		}
		r := doc.Receipts[0]
		if code != tc.code || doc.Valid != tc.valid || r.Valid != tc.valid || r.Verdict != tc.verdict || r.Signatures != 1 || r.SignaturesUnchecked != tc.unchecked {
			t.Errorf("%v: exit %d, %+v %+v; want exit %d, valid %v, verdict %s, 1 signature, %d unchecked", tc.args, code, doc.Valid, r, tc.code, tc.valid, tc.verdict, tc.unchecked)
		}
	}
}

// --out FILE writes the JSON document whatever --format says; standard
// output keeps the chosen format.
func TestOutFile(t *testing.T) {
	dir := t.TempDir()
	valid := fixture(t, dir, "valid/task-completed.json")
	tampered := fixture(t, dir, "invalid/tampered.json")
	res := filepath.Join(dir, "result.json")
	code, out, _ := run(t, "", "verify", "--out", res, valid, tampered)
	if code != ExitInvalid || !strings.Contains(out, "INVALID") {
		t.Fatalf("exit %d, stdout:\n%s", code, out)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Valid    bool              `json:"valid"`
		Receipts []json.RawMessage `json:"receipts"`
	}
	if err := json.Unmarshal(b, &doc); err != nil || doc.Valid || len(doc.Receipts) != 2 {
		t.Errorf("--out file: %v, %+v\n%s", err, doc, b)
	}
}

func TestHelpGoesToStdout(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}, {"verify", "-h"}, {"verify", "--help"}, {"verify", "help"}} {
		code, out, errs := run(t, "", args...)
		if code != 0 || !strings.Contains(out, "usage: conform receipt verify") || !strings.Contains(out, "--keys FILE") ||
			!strings.Contains(out, "--allow-unchecked-signatures") || !strings.Contains(out, "Exit status: 0") || errs != "" {
			t.Errorf("%q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
	}
}
