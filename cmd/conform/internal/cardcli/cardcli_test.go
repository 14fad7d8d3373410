package cardcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/cards"
	"github.com/harn-conform/conform/internal/cardsig"
)

// fixtureDir writes the card fixtures to a temporary directory.
func fixtureDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	cases, err := cards.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		for _, p := range []string{c.File, c.Keys, c.Canonical} {
			if p == "" {
				continue
			}
			b, err := cards.Read(p)
			if err != nil {
				t.Fatal(err)
			}
			os.MkdirAll(filepath.Join(dir, filepath.Dir(p)), 0o755)
			if err := os.WriteFile(filepath.Join(dir, p), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func runCLI(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

// Every fixture case exits as its verdict says: 0 valid, 1 otherwise.
func TestFixtureExitCodes(t *testing.T) {
	dir := fixtureDir(t)
	cases, _ := cards.Cases()
	for _, c := range cases {
		args := []string{"verify", filepath.Join(dir, c.File)}
		if c.Keys != "" {
			args = append(args, "--keys", filepath.Join(dir, c.Keys))
		}
		code, out, errs := runCLI("", args...)
		want := ExitInvalid
		if c.Valid {
			want = ExitValid
		}
		if code != want {
			t.Errorf("%s: exit %d, want %d\n%s%s", c.Name, code, want, out, errs)
		}
		for _, cl := range c.Findings {
			if !strings.Contains(out, " "+cl+": ") {
				t.Errorf("%s: output does not name %s:\n%s", c.Name, cl, out)
			}
		}
	}
}

func TestUncheckedSignatures(t *testing.T) {
	dir := fixtureDir(t)
	signed := filepath.Join(dir, "valid/signed.json")
	code, out, _ := runCLI("", "verify", signed)
	if code != ExitInvalid || !strings.Contains(out, "SIGNATURES NOT CHECKED") {
		t.Errorf("no --keys: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI("", "verify", "--allow-unchecked-signatures", signed)
	if code != ExitValid || !strings.Contains(out, "accepted by --allow-unchecked-signatures") {
		t.Errorf("--allow-unchecked-signatures: exit %d\n%s", code, out)
	}
	// An unsigned card is invalid whatever the flag says.
	code, _, _ = runCLI("", "verify", "--allow-unchecked-signatures", filepath.Join(dir, "invalid/unsigned.json"))
	if code != ExitInvalid {
		t.Errorf("unsigned with --allow-unchecked-signatures: exit %d, want 1", code)
	}
	code, _, _ = runCLI("", "verify", "--allow-unchecked-signatures", "--keys", filepath.Join(dir, "keys/card-keys.json"), filepath.Join(dir, "invalid/unknown-key.json"))
	if code != ExitValid {
		t.Errorf("unknown key with --allow-unchecked-signatures: exit %d, want 0", code)
	}
}

func TestJSONOutCanonicalAndStdin(t *testing.T) {
	dir := fixtureDir(t)
	card, _ := os.ReadFile(filepath.Join(dir, "valid/signed.json"))
	outFile := filepath.Join(dir, "result.json")
	code, out, errs := runCLI(string(card), "verify", "-", "--keys", filepath.Join(dir, "keys/card-keys.json"), "--format", "json", "--canonical", "--out", outFile)
	if code != ExitValid {
		t.Fatalf("exit %d: %s%s", code, out, errs)
	}
	written, err := os.ReadFile(outFile)
	if err != nil || !bytes.Equal(written, []byte(out)) {
		t.Errorf("--out wrote %q (%v), want what stdout got", written, err)
	}
	var doc struct {
		Profile string
		Valid   bool
		Cards   []struct {
			File, Verdict, Canonical string
			Digest                   string `json:"signed_bytes_sha256"`
			Signatures               []cardsig.Signature
		}
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	jcs, _ := os.ReadFile(filepath.Join(dir, "valid/signed.jcs"))
	if !doc.Valid || doc.Profile != cardsig.Profile || len(doc.Cards) != 1 || doc.Cards[0].File != "<stdin>" ||
		doc.Cards[0].Canonical != string(jcs) || doc.Cards[0].Signatures[0].Status != cardsig.StatusVerified || doc.Cards[0].Digest != cardsig.Digest(jcs) {
		t.Errorf("json output = %s", out)
	}
}

func TestUsageAndInputErrors(t *testing.T) {
	dir := fixtureDir(t)
	signed := filepath.Join(dir, "valid/signed.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"-h"}, ExitValid, "usage: conform card verify"},
		{[]string{"help"}, ExitValid, "usage: conform card verify"},
		{[]string{"verify", "--help"}, ExitValid, "--allow-unchecked-signatures"},
		{nil, ExitInput, "missing subcommand"},
		{[]string{"sign"}, ExitInput, "unknown subcommand"},
		{[]string{"verify"}, ExitInput, "no card files"},
		{[]string{"verify", "--format", "xml", signed}, ExitInput, "--format"},
		{[]string{"verify", "--bogus", signed}, ExitInput, "bogus"},
		{[]string{"verify", "-", "-"}, ExitInput, "more than once"},
		{[]string{"verify", filepath.Join(dir, "missing.json")}, ExitInput, "missing.json"},
		{[]string{"verify", dir}, ExitInput, "is a directory"},
		{[]string{"verify", "--keys", filepath.Join(dir, "valid/signed.json"), signed}, ExitInput, "--keys"},
		// 2 wins over 1: an invalid card and an unreadable one.
		{[]string{"verify", filepath.Join(dir, "invalid/unsigned.json"), filepath.Join(dir, "nope.json")}, ExitInput, "nope.json"},
	} {
		code, out, errs := runCLI("", tc.args...)
		if code != tc.code || !strings.Contains(out+errs, tc.want) {
			t.Errorf("conform card %v: exit %d, output %q%q; want %d and %q", tc.args, code, out, errs, tc.code, tc.want)
		}
	}
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, bytes.Repeat([]byte(" "), cardsig.MaxCardBytes+1), 0o644)
	if code, _, errs := runCLI("", "verify", big); code != ExitInput || !strings.Contains(errs, "refusing") {
		t.Errorf("oversize card: exit %d, %s", code, errs)
	}
}

// Main is the exported entry point over os.Stdin.
func TestMainHelp(t *testing.T) {
	var out bytes.Buffer
	if code := Main([]string{"--help"}, &out, &out); code != ExitValid || !strings.Contains(out.String(), cardsig.Profile) {
		t.Errorf("Main --help: %d %s", code, out.String())
	}
}
