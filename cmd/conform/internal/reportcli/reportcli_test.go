package reportcli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/baseline"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/reports"
)

type req struct {
	id, kw string
	v      reports.Verdict
}

// report makes a minimal conform.json: core with the given requirements,
// receipts not claimed.
func report(status reports.LevelStatus, exit int, reqs ...req) *reports.Report {
	r := &reports.Report{Format: reports.Format, Tool: reports.Tool{Name: "conform", Version: "test"}, Target: "http://h",
		StartedAt: "2026-01-01T00:00:00Z", Config: map[string]string{}, ExitCode: exit,
		Levels: []reports.LevelResult{
			{Selection: target.Selection{Level: "core", Run: true, Claimed: true}, Status: status},
			{Selection: target.Selection{Level: "receipts"}, Status: reports.NotClaimed},
		},
		Specs: []reports.SpecResult{{Name: "s", Verdict: reports.Pass}}}
	for _, q := range reqs {
		kw := q.kw
		if kw == "" {
			kw = "MUST"
		}
		r.Requirements = append(r.Requirements, reports.ReqResult{ID: q.id, Level: "core", Keyword: kw, Verdict: q.v, Message: "msg of " + q.id, Specs: []string{}})
	}
	return r
}

func save(t *testing.T, dir, name string, r any) string {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCLI(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := Main(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestDiff(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name             string
		a, b             *reports.Report
		exit             int
		changes          string // id:change,...
		failing, passing string
		levels           string
	}{
		{"identical", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}), report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}),
			0, "", "", "", ""},
		{"regression", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}, req{"CORE-AUTH-002", "", reports.Unverified}),
			report(reports.Nonconformant, 1, req{"CORE-AUTH-001", "", reports.Fail}, req{"CORE-AUTH-002", "", reports.Pass}),
			1, "CORE-AUTH-001:worse,CORE-AUTH-002:better", "CORE-AUTH-001", "CORE-AUTH-002", "core:worse"},
		{"only better", report(reports.Partial, 1, req{"CORE-AUTH-001", "", reports.Fail}, req{"CORE-AUTH-002", "", reports.Warn}),
			report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Unverified}, req{"CORE-AUTH-002", "", reports.Pass}),
			0, "CORE-AUTH-001:better,CORE-AUTH-002:better", "", "CORE-AUTH-002", "core:better"},
		{"pass to not applicable", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}),
			report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Skip}), 0, "CORE-AUTH-001:changed", "", "", ""},
		{"added and removed", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}),
			report(reports.Conformant, 0, req{"CORE-AUTH-002", "", reports.Pass}, req{"CORE-AUTH-003", "", reports.Unverified}),
			1, "CORE-AUTH-003:worse,CORE-AUTH-002:added,CORE-AUTH-001:removed", "", "CORE-AUTH-002", ""},
		{"unknown verdict is never a pass", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}),
			report(reports.Conformant, 0, req{"CORE-AUTH-001", "", "flaky"}), 1, "CORE-AUTH-001:worse", "", "", ""},
		{"error to fail", report(reports.Partial, 2, req{"CORE-AUTH-001", "", reports.Error}),
			report(reports.Nonconformant, 1, req{"CORE-AUTH-001", "", reports.Fail}), 1, "CORE-AUTH-001:worse", "CORE-AUTH-001", "", "core:worse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pa, pb := save(t, dir, "a.json", tc.a), save(t, dir, "b.json", tc.b)
			code, out, errs := runCLI("report", "diff", pa, pb, "--format", "json")
			if code != tc.exit {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.exit, errs)
			}
			var d Diff
			if err := json.Unmarshal([]byte(out), &d); err != nil {
				t.Fatalf("json output: %v\n%s", err, out)
			}
			var ch []string
			for _, q := range d.Requirements {
				ch = append(ch, q.ID+":"+q.Change)
			}
			var lv []string
			for _, l := range d.Levels {
				lv = append(lv, l.Level+":"+l.Change)
			}
			if strings.Join(ch, ",") != tc.changes || strings.Join(d.NewlyFailing, ",") != tc.failing ||
				strings.Join(d.NewlyPassing, ",") != tc.passing || strings.Join(lv, ",") != tc.levels {
				t.Errorf("changes %v failing %v passing %v levels %v; want %s / %s / %s / %s", ch, d.NewlyFailing, d.NewlyPassing, lv,
					tc.changes, tc.failing, tc.passing, tc.levels)
			}
			if d.Format != DiffFormat || d.Regressed != (tc.exit == 1) || d.ExitCode != tc.exit || d.A.File != pa {
				t.Errorf("diff head = %+v", d)
			}
			code2, text, _ := runCLI("report", "diff", pa, pb)
			if code2 != code || !strings.Contains(text, "result: ") {
				t.Errorf("text: exit %d\n%s", code2, text)
			}
			for _, id := range d.NewlyFailing {
				if !strings.Contains(text, "newly failing (1): "+id) {
					t.Errorf("text does not list %s as newly failing:\n%s", id, text)
				}
			}
		})
	}
}

// Reports are hostile: escape sequences, bidi overrides and newlines in a
// message never reach the terminal.
func TestDiffTextIsTerminalSafe(t *testing.T) {
	dir := t.TempDir()
	a := report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass})
	b := report(reports.Nonconformant, 1, req{"CORE-AUTH-001", "", reports.Fail})
	b.Requirements[0].Message = "\x1b]0;pwned\x07\x1b[2J evil\u202eoverride\nsecond line\r" + strings.Repeat("long ", 100)
	b.Target = "http://h/\x1b[31m"
	code, out, _ := runCLI("report", "diff", save(t, dir, "a.json", a), save(t, dir, "b.json", b))
	if code != 1 {
		t.Errorf("exit %d", code)
	}
	if strings.ContainsAny(out, "\x1b\x07\r\u202e") {
		t.Errorf("text output carries control characters: %q", out)
	}
	if !strings.Contains(out, "evil override second line") && !strings.Contains(out, "eviloverride second line") {
		t.Errorf("message not kept on one line: %q", out)
	}
	for _, line := range strings.Split(out, "\n") {
		if len([]rune(line)) > 400 {
			t.Errorf("line not clipped: %d runes", len([]rune(line)))
		}
	}
}

func TestDiffUnreadableInput(t *testing.T) {
	dir := t.TempDir()
	good := save(t, dir, "good.json", report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}))
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	dup := report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass}, req{"CORE-AUTH-001", "", reports.Fail})
	badID := report(reports.Conformant, 0, req{"../../etc", "", reports.Pass})
	old := MaxReportBytes
	defer func() { MaxReportBytes = old }()
	MaxReportBytes = 4 << 10
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "nope.json"), "nope.json"},
		{"not json", write("text.json", "hello"), "invalid JSON"},
		{"array", write("array.json", "[1,2]"), "not a JSON object"},
		{"truncated", write("cut.json", `{"format":"conform-report/v1","requirements":[{"id":"CORE`), "ends early"},
		{"wrong format", write("fmt.json", `{"format":"conform-fidelity-report/v1"}`), `format "conform-fidelity-report/v1"`},
		{"no format", write("nofmt.json", `{}`), `format ""`},
		{"wrong type", write("type.json", `{"format":"conform-report/v1","requirements":{"id":1}}`), "field requirements"},
		{"trailing data", write("trail.json", `{"format":"conform-report/v1"} {}`), "data after"},
		{"duplicate id", save(t, dir, "dup.json", dup), "listed twice"},
		{"bad id", save(t, dir, "badid.json", badID), "has id"},
		{"huge", write("huge.json", `{"format":"conform-report/v1","specs":[`+strings.Repeat(`{"name":"x"},`, 2000)+`{}]}`), "larger than 4096 bytes"},
		{"huge string", write("hugestr.json", `{"format":"conform-report/v1","notes":["`+strings.Repeat("x", 10<<10)+`"]}`), "larger than"},
		{"directory", dir, dir},
	} {
		for _, order := range [][]string{{tc.path, good}, {good, tc.path}} {
			code, out, errs := runCLI("report", "diff", order[0], order[1])
			if code != 2 || out != "" || !strings.Contains(errs, tc.want) || !strings.Contains(errs, tc.path) {
				t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 2 naming the file and %q", tc.name, code, out, errs, tc.want)
			}
		}
	}
	// Specs and transcripts are streamed past, not kept: a report within the
	// bound with a large spec section reads.
	MaxReportBytes = 1 << 20
	big := report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass})
	for i := 0; i < 2000; i++ {
		big.Specs = append(big.Specs, reports.SpecResult{Name: strings.Repeat("s", 100), Verdict: reports.Pass})
	}
	if code, _, errs := runCLI("report", "diff", save(t, dir, "big.json", big), good); code != 0 {
		t.Errorf("a large valid report: exit %d: %s", code, errs)
	}
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		exit int
		out  string // substring of stdout (exit 0) or stderr
	}{
		{[]string{"report", "-h"}, 0, "conform report diff A.json B.json"},
		{[]string{"baseline", "--help"}, 0, "conform baseline write"},
		{[]string{"report", "diff", "-h"}, 0, "exit status"},
		{[]string{"baseline", "write", "-h"}, 0, "exit status"},
		{[]string{"help"}, 0, "usage"},
		{nil, 2, "missing command"},
		{[]string{"report"}, 2, "missing subcommand"},
		{[]string{"report", "merge"}, 2, `unknown command "report merge"`},
		{[]string{"report", "diff", "a.json"}, 2, "want two reports"},
		{[]string{"report", "diff", "a", "b", "c"}, 2, "want two reports"},
		{[]string{"report", "diff", "a", "b", "--format", "xml"}, 2, `--format "xml"`},
		{[]string{"report", "diff", "--bogus", "a", "b"}, 2, "bogus"},
		{[]string{"baseline", "write"}, 2, "--report FILE is required"},
		{[]string{"baseline", "write", "--report", "x", "extra"}, 2, `unexpected argument "extra"`},
	} {
		code, out, errs := runCLI(tc.args...)
		got := errs
		if tc.exit == 0 {
			got = out
		}
		if code != tc.exit || !strings.Contains(got, tc.out) {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit %d with %q", tc.args, code, out, errs, tc.exit, tc.out)
		}
	}
}

func TestBaselineWrite(t *testing.T) {
	dir := t.TempDir()
	r := report(reports.Nonconformant, 1,
		req{"CORE-AUTH-001", "", reports.Pass}, req{"CORE-AUTH-002", "", reports.Fail}, req{"CORE-AUTH-003", "", reports.Unverified},
		req{"CORE-AUTH-004", "SHOULD", reports.Fail}, req{"CORE-VER-001", "", reports.Error}, req{"CORE-VER-002", "", reports.Skip})
	r.Requirements[1].Message = "GET /v1/tasks → 200\n\x1b[31m: `evil` #x"
	path := save(t, dir, "conform.json", r)
	out := filepath.Join(dir, "known.yaml")
	code, stdout, errs := runCLI("baseline", "write", "--report", path, "--out", out)
	if code != 0 || stdout != "" || !strings.Contains(errs, "2 requirement(s) written to "+out) {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
	if fi, _ := os.Stat(out); fi.Mode().Perm() != 0o644 {
		t.Errorf("baseline mode = %v", fi.Mode().Perm())
	}
	f, err := baseline.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.IDs(), ","); got != "CORE-AUTH-002,CORE-AUTH-003" {
		t.Errorf("ids = %s, want the failing and the unverified MUST", got)
	}
	if reason, _ := f.Reason("CORE-AUTH-002"); reason != "fail: GET /v1/tasks → 200 [31m: `evil` #x" {
		t.Errorf("reason = %q, want the verdict and message on one line", reason)
	}
	if reason, _ := f.Reason("CORE-AUTH-002"); strings.ContainsAny(reason, "\n\x1b") {
		t.Errorf("reason keeps control characters: %q", reason)
	}
	// Flags in any order; stdout without --out.
	code, stdout, _ = runCLI("baseline", "write", "--report", path)
	if code != 0 || !strings.Contains(stdout, "format: conform-baseline/v1") || !strings.Contains(stdout, "CORE-AUTH-003") {
		t.Errorf("to stdout: exit %d\n%s", code, stdout)
	}
	// A narrowed run is named.
	r.Config["label_filter"] = "req:CORE-AUTH-002"
	if _, _, errs := runCLI("baseline", "write", "--report", save(t, dir, "narrow.json", r)); !strings.Contains(errs, "narrowed run") {
		t.Errorf("no warning for a narrowed run: %q", errs)
	}
	// Unknown ids in the report and unreadable reports exit 2, naming them.
	r.Requirements[1].ID = "CORE-NOPE-999"
	if code, _, errs := runCLI("baseline", "write", "--report", save(t, dir, "unknown.json", r)); code != 2 || !strings.Contains(errs, "CORE-NOPE-999") {
		t.Errorf("unknown id: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("baseline", "write", "--report", filepath.Join(dir, "missing.json")); code != 2 || !strings.Contains(errs, "missing.json") {
		t.Errorf("missing report: exit %d, %q", code, errs)
	}
	if code, _, errs := runCLI("baseline", "write", "--report", path, "--out", filepath.Join(dir, "no", "such", "dir.yaml")); code != 2 || !strings.Contains(errs, "dir.yaml") {
		t.Errorf("unwritable out: exit %d, %q", code, errs)
	}
}

// baseline prune and update bring a baseline up to date with a later
// report, keeping the reasons written; --format json says what changed;
// reasons carry no volatile ids; a mistyped subcommand gets a suggestion.
func TestBaselinePruneUpdate(t *testing.T) {
	dir := t.TempDir()
	first := report(reports.Nonconformant, 1,
		req{"CORE-AUTH-001", "", reports.Fail}, req{"CORE-AUTH-002", "", reports.Fail}, req{"CORE-AUTH-003", "", reports.Pass})
	first.Requirements[0].Message = "GET http://127.0.0.1:40123/v1/tasks/task_01JDZQXKHMBVWPRSTNAGFCYEDA answered 500 at 2026-11-27T14:16:22Z"
	known := filepath.Join(dir, "known.yaml")
	code, stdout, errs := runCLI("baseline", "write", "--report", save(t, dir, "first.json", first), "--out", known, "--format", "json")
	var res struct {
		Requirements []baseline.Entry
		Added        []string
		Out          string
	}
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil {
		t.Fatalf("write --format json: exit %d, %v, %q %q", code, err, stdout, errs)
	}
	if res.Out != known || strings.Join(res.Added, ",") != "CORE-AUTH-001,CORE-AUTH-002" {
		t.Errorf("write --format json: %+v", res)
	}
	if want := "fail: GET http://127.0.0.1:<port>/v1/tasks/task_<id> answered 500 at <time>"; res.Requirements[0].Reason != want {
		t.Errorf("reason %q, want %q", res.Requirements[0].Reason, want)
	}
	// A person edits a reason; then AUTH-001 passes and AUTH-003 fails.
	b, _ := os.ReadFile(known)
	os.WriteFile(known, []byte(strings.Replace(string(b), "fail: GET http", "ours: TICKET-7, GET http", 1)), 0o644)
	later := report(reports.Nonconformant, 1,
		req{"CORE-AUTH-001", "", reports.Pass}, req{"CORE-AUTH-002", "", reports.Fail}, req{"CORE-AUTH-003", "", reports.Unverified})
	laterPath := save(t, dir, "later.json", later)
	code, stdout, errs = runCLI("baseline", "prune", "--baseline", known, "--report", laterPath, "--out", "-")
	if code != 0 || !strings.Contains(stdout, "CORE-AUTH-002") || strings.Contains(stdout, "CORE-AUTH-001") || strings.Contains(stdout, "CORE-AUTH-003") {
		t.Errorf("prune to stdout: exit %d\n%s%s", code, stdout, errs)
	}
	code, _, errs = runCLI("baseline", "update", "--baseline", known, "--report", laterPath)
	if code != 0 || !strings.Contains(errs, "1 kept, 1 removed, 1 added") {
		t.Errorf("update: exit %d, %q", code, errs)
	}
	f, err := baseline.Load(known)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.IDs(), ","); got != "CORE-AUTH-002,CORE-AUTH-003" {
		t.Errorf("updated ids %s", got)
	}
	for _, args := range [][]string{{"baseline", "prune", "--report", laterPath}, {"baseline", "update", "--baseline", known}, {"baseline", "write", "--report", laterPath, "--format", "yaml"}} {
		if code, _, _ := runCLI(args...); code != 2 {
			t.Errorf("%q: exit %d, want 2", args, code)
		}
	}
	if _, _, errs := runCLI("baseline", "prnue"); !strings.Contains(errs, `did you mean "baseline prune"?`) {
		t.Errorf("no suggestion for a mistyped subcommand: %q", errs)
	}
	if _, _, errs := runCLI("baseline", "write", "--reprot", laterPath); !strings.Contains(errs, "did you mean --report?") {
		t.Errorf("no suggestion for a mistyped flag: %q", errs)
	}
}

// --out FILE writes the diff as JSON whatever --format prints.
func TestDiffOut(t *testing.T) {
	dir := t.TempDir()
	r := report(reports.Conformant, 0, req{"CORE-AUTH-001", "", reports.Pass})
	a, b := save(t, dir, "a.json", r), save(t, dir, "b.json", r)
	out := filepath.Join(dir, "diff.json")
	if code, _, stderr := runCLI("report", "diff", "--out", out, a, b); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	raw, err := os.ReadFile(out)
	if err != nil || !json.Valid(raw) {
		t.Fatalf("--out wrote no JSON: %v\n%s", err, raw)
	}
}
