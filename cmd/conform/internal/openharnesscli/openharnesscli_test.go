package openharnesscli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const corpus = "../../../../fixtures/schemas/testdata/openharness.v1"

func run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := Main(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestValidateExitCodes(t *testing.T) {
	valid := filepath.Join(corpus, "valid/response/document-example.json")
	validReq := filepath.Join(corpus, "valid/request/document-example.json")
	invalid := filepath.Join(corpus, "invalid/response/OH-VER-001-not-semver.json")
	warn := filepath.Join(corpus, "warn/response/OH-EXT-002-vendor-member.json")
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // a substring of stdout
	}{
		{"valid", []string{"validate", valid, validReq}, 0, "valid response"},
		{"warning stays valid", []string{"validate", warn}, 0, "warning OH-EXT-002"},
		{"invalid", []string{"validate", valid, invalid}, 1, "error   OH-VER-001"},
		{"missing file wins", []string{"validate", invalid, "no-such.json"}, 2, "UNREADABLE"},
		{"kind forced", []string{"validate", "--kind", "request", valid}, 1, "OH-REQ-001"},
		{"flags after files", []string{"validate", valid, "--format", "json"}, 0, `"valid": true`},
		{"no files", []string{"validate"}, 2, ""},
		{"bad kind", []string{"validate", "--kind", "x", valid}, 2, ""},
		{"bad format", []string{"validate", "--format", "xml", valid}, 2, ""},
		{"unknown subcommand", []string{"check", valid}, 2, ""},
		{"help", []string{"validate", "-h"}, 0, "usage: conform openharness validate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errb := run(t, "", tc.args...)
			if code != tc.code || !strings.Contains(out, tc.out) {
				t.Errorf("exit %d, want %d; stdout:\n%s\nstderr:\n%s", code, tc.code, out, errb)
			}
		})
	}
}

func TestValidateStdinAndOut(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "result.json")
	code, stdout, _ := run(t, `{"protocol_version":"1.0.0","response":{"status":"error"}}`, "validate", "--out", out, "-")
	if code != 0 || !strings.Contains(stdout, "<stdin>: valid response") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var res output
	if err := json.Unmarshal(b, &res); err != nil || !res.Valid || len(res.Messages) != 1 || res.Messages[0].Findings[0].Req != "OH-ERR-002" {
		t.Errorf("--out: %v %+v", err, res)
	}
	// Not JSON is an invalid message (exit 1), not unreadable input.
	if code, stdout, _ := run(t, "<html>", "validate", "-"); code != 1 || !strings.Contains(stdout, "not JSON") {
		t.Errorf("HTML on stdin: exit %d:\n%s", code, stdout)
	}
	if code, _, _ := run(t, "", "validate", "-", "-"); code != 2 {
		t.Errorf("stdin twice: exit %d, want 2", code)
	}
}

func TestValidateOversize(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(path, bytes.Repeat([]byte(" "), 2<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errb := run(t, "", "validate", path); code != 2 || !strings.Contains(errb, "larger than") {
		t.Errorf("oversize file: exit %d, stderr %q; want 2 naming the bound", code, errb)
	}
}
