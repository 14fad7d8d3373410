package tapecli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/fidelity"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func tp(name string) string {
	return filepath.Join("..", "..", "..", "..", "fixtures", "tapes", name, "run.tape")
}

func run(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func checkReport(t *testing.T, b []byte) *fidelity.Report {
	t.Helper()
	s, err := schemas.Compile("fidelity-report.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	if probs := schemas.Problems(s, inst); len(probs) > 0 {
		t.Errorf("report does not match its schema: %v", probs)
	}
	var rep fidelity.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// TestDiffGolden runs diff over the golden pairs in every mode. Each row
// says which modes find divergences; the pairs are built so that a looser
// mode passes where a stricter one fails. The exit status is
// RPLY-ORACLE-008: 2 with divergences, 0 without.
func TestDiffGolden(t *testing.T) {
	all := []fidelity.Mode{fidelity.ByteIdentical, fidelity.PhaseAware, fidelity.Semantic, fidelity.Outcome}
	tests := []struct {
		b        string
		diverges []fidelity.Mode
	}{
		{"all-kinds", nil},
		// Only seq, timestamps, process durations and MCP latency moved.
		{"drift", []fidelity.Mode{fidelity.ByteIdentical, fidelity.PhaseAware}},
		// Only runtime_finalize changed: more clock reads, other timing.
		{"finalize-grew", []fidelity.Mode{fidelity.ByteIdentical, fidelity.Semantic}},
		// LLM responses differ; writes, exit status and call count do not.
		{"stochastic-llm", []fidelity.Mode{fidelity.ByteIdentical, fidelity.PhaseAware, fidelity.Semantic}},
		{"outcome-changed", all},
	}
	for _, tt := range tests {
		for _, mode := range all {
			t.Run(tt.b+"/"+string(mode), func(t *testing.T) {
				code, out, errOut := run("diff", tp("all-kinds"), tp(tt.b), "--mode", string(mode))
				want := ExitOK
				for _, m := range tt.diverges {
					if m == mode {
						want = ExitDiverged
					}
				}
				if code != want {
					t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, want, out, errOut)
				}
				rep := checkReport(t, []byte(out))
				if rep.Mode != mode {
					t.Errorf("report mode %s, want %s", rep.Mode, mode)
				}
			})
		}
	}
}

// --out FILE (and its deprecated spelling --report) writes the report to
// FILE and a summary to stdout; --format picks stdout's form either way.
func TestDiffOutFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fidelity.json")
	for _, flag := range []string{"--out", "--report"} {
		os.Remove(p)
		code, out, errOut := run("diff", "--mode=outcome", tp("all-kinds"), flag, p, tp("outcome-changed"))
		if code != ExitDiverged || !strings.Contains(out, "outcome: 3 divergence(s)") {
			t.Errorf("%s: exit %d, want %d; stdout %s", flag, code, ExitDiverged, out)
		}
		if deprecated := strings.Contains(errOut, "--report is deprecated; use --out"); deprecated != (flag == "--report") {
			t.Errorf("%s: stderr %q", flag, errOut)
		}
		if b, err := os.ReadFile(p); err != nil {
			t.Errorf("%s: %v", flag, err)
		} else {
			checkReport(t, b)
		}
	}
	code, out, _ := run("diff", "--mode=outcome", "--format", "json", "--out", p, tp("all-kinds"), tp("outcome-changed"))
	b, _ := os.ReadFile(p)
	if code != ExitDiverged || out != string(b) {
		t.Errorf("--format json --out: exit %d, stdout is not the report file:\n%s", code, out)
	}
	code, out, _ = run("diff", "--mode=outcome", "--format", "text", tp("all-kinds"), tp("all-kinds"))
	if code != ExitOK || strings.HasPrefix(out, "{") || !strings.Contains(out, "all-kinds") {
		t.Errorf("--format text: exit %d, stdout %q; want a summary", code, out)
	}
}

func TestDiffReportFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "fidelity.json")
	code, out, _ := run("diff", "--mode=outcome", tp("all-kinds"), "--out", p, tp("outcome-changed"))
	if code != ExitDiverged {
		t.Fatalf("exit %d, want %d; stdout %s", code, ExitDiverged, out)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	rep := checkReport(t, b)
	want := map[fidelity.Category]int{fidelity.WriteSetMismatch: 1, fidelity.ExitStatusMismatch: 1, fidelity.LLMCallCountMismatch: 1}
	for c, n := range want {
		if rep.ByCategory[c] != n {
			t.Errorf("by_category[%s] = %d, want %d (%v)", c, rep.ByCategory[c], n, rep.ByCategory)
		}
	}
	for _, s := range []string{"outcome: 3 divergence(s)", "write_set_mismatch: final state of out/report.md", "exit_status_mismatch", "llm_call_count_mismatch"} {
		if !strings.Contains(out, s) {
			t.Errorf("summary %q does not contain %q", out, s)
		}
	}
}

func TestDiffUnreadable(t *testing.T) {
	tests := []struct {
		name, a, b string
		category   fidelity.Category
		stderr     string
	}{
		{"newer version", tp("all-kinds"), tp("newer-version"), fidelity.VersionUnsupported, "version 2 is newer than the supported version 1"},
		{"torn line", tp("torn-line"), tp("all-kinds"), fidelity.UnreadableInput, "torn_line"},
		{"missing file", tp("all-kinds"), tp("no-such-tape"), fidelity.UnreadableInput, "no such file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := run("diff", tt.a, tt.b)
			if code != ExitDiffError {
				t.Errorf("exit %d, want %d", code, ExitDiffError)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q does not contain %q", errOut, tt.stderr)
			}
			rep := checkReport(t, []byte(out))
			if rep.Status != fidelity.StatusError || rep.ByCategory[tt.category] != 1 {
				t.Errorf("status %s, by_category %v; want error with one %s", rep.Status, rep.ByCategory, tt.category)
			}
		})
	}
}

func TestDiffUnknownKind(t *testing.T) {
	// A tape with a kind from a newer producer never compares equal, even
	// to itself: the unknown record is reported, not dropped.
	code, out, _ := run("diff", tp("unknown-kind"), tp("unknown-kind"), "--mode", "outcome")
	if code != ExitDiverged {
		t.Fatalf("exit %d, want %d", code, ExitDiverged)
	}
	rep := checkReport(t, []byte(out))
	if rep.ByCategory[fidelity.UnknownKind] != 2 || rep.A.Unknown != 1 || rep.B.Unknown != 1 {
		t.Errorf("by_category %v, unknown records %d/%d; want 2 unknown_kind, 1/1", rep.ByCategory, rep.A.Unknown, rep.B.Unknown)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		files []string
		code  int
		want  []string
	}{
		{[]string{tp("all-kinds")}, ExitOK, []string{"valid (version 1, 15 records, 3 spilled payloads checked)"}},
		{[]string{tp("unknown-kind")}, ExitOK, []string{"warning: unknown_kind: line 3 (seq 1)", "valid"}},
		{[]string{tp("cas-missing")}, ExitInvalid, []string{"error: cas_missing: line 2 (seq 0)", "invalid"}},
		{[]string{tp("cas-corrupt")}, ExitInvalid, []string{"error: cas_corrupt", "bytes hash to"}},
		{[]string{tp("inline-hash-mismatch")}, ExitInvalid, []string{"inline_hash_mismatch", "[RPLY-TAPE-006]"}},
		{[]string{tp("torn-line")}, ExitInvalid, []string{"invalid: ", "torn_line", "[RPLY-TAPE-001]"}},
		{[]string{tp("seq-not-increasing")}, ExitInvalid, []string{"error: seq_not_increasing: line 4 (seq 1)", "[RPLY-TAPE-002]"}},
		{[]string{tp("inline-too-large")}, ExitInvalid, []string{"error: inline_too_large: line 2 (seq 0)", "[RPLY-TAPE-005]"}},
		{[]string{tp("newer-version")}, ExitError, []string{"unreadable", "version_unsupported"}},
		{[]string{tp("no-such-tape")}, ExitError, []string{"unreadable", "io_error"}},
		{[]string{tp("all-kinds"), tp("torn-line")}, ExitInvalid, []string{"all-kinds/run.tape: valid", "torn-line/run.tape: invalid"}},
		// 2 (could not decide) wins over 1 (invalid).
		{[]string{tp("newer-version"), tp("torn-line")}, ExitError, []string{"newer-version/run.tape: unreadable", "torn-line/run.tape: invalid"}},
	}
	for _, tt := range tests {
		code, out, _ := run(append([]string{"validate"}, tt.files...)...)
		if code != tt.code {
			t.Errorf("validate %v: exit %d, want %d\n%s", tt.files, code, tt.code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("validate %v: output %q does not contain %q", tt.files, out, w)
			}
		}
	}
}

func TestValidateJSONAndOut(t *testing.T) {
	dir := t.TempDir()
	res := filepath.Join(dir, "validate.json")
	code, out, _ := run("validate", "--format", "json", tp("unknown-kind"), tp("cas-missing"), "--out", res, tp("newer-version"))
	if code != ExitError {
		t.Errorf("exit %d, want %d", code, ExitError)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != out {
		t.Errorf("--out file and --format json output differ:\n%s\n---\n%s", b, out)
	}
	var doc struct {
		Valid bool `json:"valid"`
		Tapes []struct {
			File     string `json:"file"`
			Valid    bool   `json:"valid"`
			Verdict  string `json:"verdict"`
			Records  int    `json:"records"`
			Findings []struct {
				Severity, Code, Requirement string
				Line                        int
				Seq                         *int64
			} `json:"findings"`
			Error *struct{ Code string } `json:"error"`
		} `json:"tapes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Valid || len(doc.Tapes) != 3 {
		t.Fatalf("result %+v", doc)
	}
	uk, cm, nv := doc.Tapes[0], doc.Tapes[1], doc.Tapes[2]
	if !uk.Valid || uk.Verdict != VerdictValid || len(uk.Findings) != 1 || uk.Findings[0].Severity != "warning" || uk.Findings[0].Code != "unknown_kind" || uk.Findings[0].Seq == nil {
		t.Errorf("unknown-kind: %+v", uk)
	}
	if cm.Valid || cm.Verdict != VerdictInvalid || len(cm.Findings) == 0 || cm.Findings[0].Code != "cas_missing" || cm.Findings[0].Requirement != "RPLY-TAPE-005" {
		t.Errorf("cas-missing: %+v", cm)
	}
	if nv.Valid || nv.Verdict != VerdictUnreadable || nv.Error == nil || nv.Error.Code != "version_unsupported" {
		t.Errorf("newer-version: %+v", nv)
	}
	// --out alone: the document in the file, the text on stdout.
	code, out, _ = run("validate", "--out", res, tp("all-kinds"))
	if code != ExitOK || !strings.Contains(out, "valid (version 1") {
		t.Errorf("validate --out: exit %d, stdout %q", code, out)
	}
	if b, _ := os.ReadFile(res); !strings.Contains(string(b), `"verdict": "valid"`) {
		t.Errorf("--out file: %s", b)
	}
}

func TestUsage(t *testing.T) {
	tests := []struct {
		args []string
		code int
		want string
	}{
		{nil, ExitError, "missing command"},
		{[]string{"frobnicate"}, ExitError, `unknown command "frobnicate"`},
		{[]string{"diff", tp("all-kinds")}, ExitDiffError, "got 1 tape arguments, want 2"},
		{[]string{"diff", "a", "b", "c"}, ExitDiffError, "got 3 tape arguments"},
		{[]string{"diff", "a", "b", "--mode", "fuzzy"}, ExitDiffError, `unknown mode "fuzzy"`},
		{[]string{"diff", "a", "b", "--mode"}, ExitDiffError, "--mode needs a value"},
		{[]string{"diff", "a", "b", "--mode", "semantic", "--mode", "outcome"}, ExitDiffError, "given twice"},
		{[]string{"diff", "a", "b", "--colour"}, ExitDiffError, `unknown option "--colour"`},
		{[]string{"diff", "a", "b", "--max-divergences", "0"}, ExitDiffError, "positive integer"},
		{[]string{"diff", "a", "b", "--out="}, ExitDiffError, "--out needs a file name"},
		{[]string{"diff", "a", "b", "--report="}, ExitDiffError, "--out needs a file name"},
		{[]string{"diff", "a", "b", "--report", "x", "--out", "y"}, ExitDiffError, "not both --out and --report"},
		{[]string{"diff", "a", "b", "--format", "yaml"}, ExitDiffError, `--format "yaml"`},
		{[]string{"validate"}, ExitError, "at least one tape"},
		{[]string{"validate", "--format", "xml", "a"}, ExitError, `--format "xml"`},
		{[]string{"validate", "--mode", "semantic", "a"}, ExitError, `unknown option "--mode"`},
	}
	for _, tt := range tests {
		code, _, errOut := run(tt.args...)
		if code != tt.code || !strings.Contains(errOut, tt.want) || !strings.Contains(errOut, "usage:") {
			t.Errorf("Main(%q) = %d, stderr %q; want %d, a line containing %q and the usage", tt.args, code, errOut, tt.code, tt.want)
		}
	}
	for _, args := range [][]string{{"help"}, {"--help"}, {"-h"}, {"diff", "-h"}, {"diff", "--help"}, {"diff", "help"}, {"diff", "a", "b", "-h"},
		{"validate", "-h"}, {"validate", "--help"}, {"validate", "help"}} {
		code, out, errOut := run(args...)
		if code != ExitOK || !strings.Contains(out, "exit status of diff") || !strings.Contains(out, "exit status of validate") || errOut != "" {
			t.Errorf("Main(%q) = %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out, errOut)
		}
	}
}

func TestPhaseAwareRefusesPipes(t *testing.T) {
	code, _, errOut := run("diff", tp("all-kinds"), os.DevNull, "--mode", "phase-aware")
	if code != ExitDiffError || !strings.Contains(errOut, "not a regular file") {
		t.Errorf("diff against %s: exit %d, stderr %q; want %d and a line saying it is not a regular file", os.DevNull, code, errOut, ExitDiffError)
	}
}
