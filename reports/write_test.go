package reports

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/target"
)

const hostile = `<script>alert(1)</script>"><img src=x onerror=alert(2)></style></textarea>{{.}}` + "\x1b[31m `|*_[x](javascript:alert(3))"

// sample builds a report with every verdict: A-001 fails (with a hostile
// message, a transcript and a curl line), A-002 is unverified with a
// remedy, A-003 (a SHOULD) warns, A-004 is unobservable, receipts is not
// claimed.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sample(t *testing.T) *Report {
	t.Helper()
	return sampleGate(t, config.FailOnUnverified)
}

// sampleGate is sample under the gate failOn (--fail-on).
func sampleGate(t *testing.T, failOn string) *Report {
	t.Helper()
	tr := evidence.Transcript{Exchanges: []client.Exchange{{Kind: "http", Op: "GET /v1/tasks", Method: "GET", URL: "http://h/v1/tasks",
		RequestHeader: map[string][]string{"Authorization": {"Bearer [REDACTED]"}}, Status: 200,
		ResponseHeader: map[string][]string{"X-Evil": {hostile}}, ResponseBody: `{"x":"` + hostile + `"}`,
		Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Curl: "curl -sS -i 'http://h/v1/tasks' -H 'X: " + hostile + "'"}}}
	gr := run(nil,
		spec("fails A1 "+hostile, types.SpecStateFailed, "CORE-A-001: GET /v1/tasks → 200: "+hostile, []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "fail", Message: "GET /v1/tasks → 200: " + hostile}),
			entry(t, evidence.EntryTranscript, tr)),
		spec("unverified A2", types.SpecStateSkipped, "", []string{"req:CORE-A-002"},
			entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: "no scenario hook", Remedy: "implement the scenario contract"})),
		spec("warns A3", types.SpecStatePassed, "", []string{"req:CORE-A-003"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-003", Verdict: "warn", Message: "no Retry-After"}),
			entry(t, evidence.EntryEvidence, evidence.Attachment{Name: "fidelity: source vs replay " + hostile, Schema: "conform-fidelity-report/v1",
				Content: json.RawMessage(`{"equivalent":true,"note":` + mustJSON(t, hostile) + `}`)})),
	)
	e := env(core, rcptOff)
	e.Config.FailOn = failOn
	return Build(Input{Tool: Tool{"conform", "test"}, Env: e, Registry: reg(t), Seed: 7}, gr)
}

func TestWriteAllFilesAndModes(t *testing.T) {
	r := sample(t)
	dir := filepath.Join(t.TempDir(), "new", "out")
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	want := Files(r)
	// A badge for the level judged, none for the level not run (receipts is
	// not claimed): a badge another run wrote for it stays as it is.
	if !strings.Contains(strings.Join(want, " "), "report.html") || !strings.Contains(strings.Join(want, " "), "badge-core.json") ||
		strings.Contains(strings.Join(want, " "), "badge-receipts.json") {
		t.Errorf("Files = %v", want)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("wrote %d files, want %v (no temporary file left)", len(entries), want)
	}
	for _, name := range want {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s mode = %v, want 0644", name, fi.Mode().Perm())
		}
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o755 {
		t.Errorf("report directory mode = %v (%v), want 0755", fi.Mode().Perm(), err)
	}
	// An existing directory keeps its mode; files are replaced.
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := WriteAllWith(dir, r, WriteOptions{JUnit: JUnitPerSpec}); err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("an existing directory's mode changed to %v", fi.Mode().Perm())
	}
	b, _ := os.ReadFile(filepath.Join(dir, JUnitFile))
	if !strings.Contains(string(b), `classname="conform.core"`) || strings.Contains(string(b), "CORE-A-001: a summary") {
		t.Errorf("--junit spec did not give one testcase per spec:\n%s", b)
	}
	if err := WriteAllWith(dir, r, WriteOptions{JUnit: "bogus"}); err == nil {
		t.Error("an unknown junit granularity was accepted")
	}
	// WriteAll follows the report's own config.
	r.Config["junit"] = JUnitPerSpec
	if err := WriteAll(dir, r); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, JUnitFile)); strings.Contains(string(b), "CORE-A-001: a summary") {
		t.Error("WriteAll ignored the report's junit setting")
	}
}

// Target text is hostile: the HTML report escapes it everywhere, runs only
// its own script and style, loads nothing, and keeps every finding's
// message, transcript, curl line and spec link.
func TestHTMLReport(t *testing.T) {
	r := sample(t)
	r.Notes = append(r.Notes, "note "+hostile)
	r.SuiteDefects = []string{"defect " + hostile}
	r.Requirements[0].Link = "javascript:alert(4)"
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	h := b.String()
	for _, bad := range []string{"<script>alert", "<img", "onerror=alert(2)>", `href="javascript:`, "</textarea>", "</style></"} {
		if strings.Contains(h, bad) {
			t.Errorf("report.html contains %q unescaped", bad)
		}
	}
	if n := strings.Count(h, "<script"); n != 1 {
		t.Errorf("%d script elements, want 1 (the page's own)", n)
	}
	if n := strings.Count(h, "<style"); n != 1 {
		t.Errorf("%d style elements, want 1", n)
	}
	for _, ext := range []string{"<link", "@import", "url(", "http-equiv=\"refresh\""} {
		if strings.Contains(h, ext) {
			t.Errorf("report.html loads or refers to something external: %q", ext)
		}
	}
	if m := regexp.MustCompile(`<[a-z]+[^>]*\s(src|srcset|action|formaction)=`).FindString(h); m != "" {
		t.Errorf("report.html has an element loading something: %s", m)
	}
	// The CSP hashes are those of the inline style and script as written.
	csp := regexp.MustCompile(`http-equiv="Content-Security-Policy" content="([^"]+)"`).FindStringSubmatch(h)
	if csp == nil {
		t.Fatal("no Content-Security-Policy")
	}
	policy := html.UnescapeString(csp[1])
	for _, re := range []string{`(?s)<style>(.*?)</style>`, `(?s)<script>(.*?)</script>`} {
		m := regexp.MustCompile(re).FindStringSubmatch(h)
		if m == nil {
			t.Fatalf("no %s", re)
		}
		sum := sha256.Sum256([]byte(m[1]))
		if want := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"; !strings.Contains(policy, want) {
			t.Errorf("policy %q does not allow the inline content (%s)", policy, want)
		}
	}
	if !strings.Contains(policy, "default-src 'none'") {
		t.Errorf("policy %q does not default to none", policy)
	}
	for _, want := range []string{
		"&lt;script&gt;alert(1)&lt;/script&gt;", // the message, escaped
		`id="f-CORE-A-001"`,                     // the failure's entry
		"curl -sS -i",                           // its reproducer
		`id="spec-1"`, `href="#spec-1"`,         // its transcript, linked
		"X-Evil:", // response headers
		`href="https://harnlang.com/spec/agents-protocol/v1#s"`,        // other links kept
		`data-verdict="unverified"`, "implement the scenario contract", // unverified with its remedy
		`id="q"`, `id="verdict"`, // the filter
		"not claimed",                                                            // the receipts level's status
		`id="evidence"`, `id="doc-1"`, "<code>conform-fidelity-report/v1</code>", // a passing spec's evidence document
		"{\n  &#34;equivalent&#34;: true,",                                      // indented
		`id="req-CORE-A-002"`, `href="#req-CORE-A-002"`, `href="#f-CORE-A-001"`, // problems linked to their rows and details
		`<option value="notpass" selected>`,       // opens on what did not pass
		`id="not-checked"`, `id="req-RCPT-A-001"`, // the level not checked, collapsed
		"they fail the gate (--fail-on unverified)",
	} {
		if !strings.Contains(h, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// Failures first: the gate, then the problems, before the levels and
	// the requirement table.
	gate, problems, levels, reqs := strings.Index(h, `id="gate"`), strings.Index(h, `id="problems"`), strings.Index(h, `id="levels"`), strings.Index(h, `id="requirements"`)
	if gate < 0 || !(gate < problems && problems < levels && levels < reqs) {
		t.Errorf("report.html order: gate %d, problems %d, levels %d, requirements %d", gate, problems, levels, reqs)
	}
	if i := strings.Index(h, `<details id="not-checked">`); i < 0 || strings.Index(h, `id="req-RCPT-A-001"`) < i {
		t.Error("the requirements of the level not checked are not in the collapsed table")
	}
	checkOutputs(t, r)
}

// A document longer than the page shows is cut on a character boundary,
// saying how much is left out; one that is not JSON is shown as it is.
func TestHTMLDocumentCut(t *testing.T) {
	long := `{"s":"` + strings.Repeat("é", maxDocumentBytes) + `"}`
	d := documentOf(evidence.Attachment{Name: "big", Content: json.RawMessage(long)}, "spec", "doc-1")
	if len(d.Text) > maxDocumentBytes || !utf8.ValidString(d.Text) {
		t.Errorf("cut text: %d bytes, valid UTF-8 %v", len(d.Text), utf8.ValidString(d.Text))
	}
	var indented bytes.Buffer
	json.Indent(&indented, []byte(long), "", "  ")
	if d.Cut <= 0 || len(d.Text)+d.Cut != indented.Len() || !strings.HasPrefix(indented.String(), d.Text) {
		t.Errorf("cut %d bytes of %d, shown %d", d.Cut, indented.Len(), len(d.Text))
	}
	d = documentOf(evidence.Attachment{Name: "raw", Content: json.RawMessage("not json")}, "spec", "doc-2")
	if d.Text != "not json" || d.Cut != 0 {
		t.Errorf("a document that is not JSON: %+v", d)
	}
}

func junitOf(t *testing.T, r *Report, granularity string) junitSuites {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, r, granularity); err != nil {
		t.Fatal(err)
	}
	var out junitSuites
	if err := xml.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("junit.xml does not parse: %v\n%s", err, b.String())
	}
	return out
}

func TestJUnitPerRequirement(t *testing.T) {
	r := sample(t)
	out := junitOf(t, r, "")
	cases := map[string]junitCase{}
	for _, s := range out.Suites {
		for _, c := range s.Cases {
			id, _, _ := strings.Cut(c.Name, ":")
			cases[id] = c
		}
	}
	if len(cases) != len(r.Requirements) {
		t.Errorf("%d testcases, want one per requirement (%d)", len(cases), len(r.Requirements))
	}
	for _, tc := range []struct {
		id, class string
		check     func(junitCase) bool
		want      string
	}{
		{"CORE-A-001", "core", func(c junitCase) bool {
			return c.Failure != nil && c.Failure.Type == "nonconformant" && strings.Contains(c.Failure.Text, "curl -sS") &&
				strings.Contains(c.Failure.Text, "https://harnlang.com/spec/agents-protocol/v1#s")
		}, "<failure> with curl line and link"},
		{"CORE-A-002", "core", func(c junitCase) bool {
			return c.Failure != nil && c.Failure.Type == "unverified" && strings.Contains(c.Failure.Message, "no scenario hook") &&
				strings.Contains(c.Failure.Message, "implement the scenario contract") && strings.Contains(c.Failure.Message, "fails the gate")
		}, "<failure type=unverified> with reason and remedy: the strict gate fails on it"},
		{"CORE-A-003", "core", func(c junitCase) bool {
			return c.Failure == nil && c.Skipped == nil && c.Error == nil && strings.Contains(c.SystemOut, "WARN CORE-A-003: no Retry-After")
		}, "a pass with the warning in system-out"},
		{"CORE-A-004", "core", func(c junitCase) bool {
			return c.Skipped != nil && strings.Contains(c.Skipped.Message, "not wire-observable")
		}, "<skipped> not observable"},
		{"RCPT-A-001", "receipts", func(c junitCase) bool { return c.Skipped != nil && strings.Contains(c.Skipped.Message, "not claimed") }, "<skipped> level not claimed"},
	} {
		c, ok := cases[tc.id]
		if !ok {
			t.Errorf("no testcase for %s", tc.id)
			continue
		}
		if c.Name != tc.id+": a summary long enough" || c.Classname != tc.class {
			t.Errorf("%s: name %q classname %q, want %q and %q", tc.id, c.Name, c.Classname, tc.id+": a summary long enough", tc.class)
		}
		if !tc.check(c) {
			t.Errorf("%s: %+v, want %s", tc.id, c, tc.want)
		}
	}
	if out.Tests != len(r.Requirements) || out.Failures != 2 || out.Errors != 0 || out.Skipped != 2 {
		t.Errorf("totals tests %d failures %d errors %d skipped %d", out.Tests, out.Failures, out.Errors, out.Skipped)
	}
	// Under --fail-on failures the unverified MUST does not fail the run:
	// it is <skipped>, with its reason and remedy.
	for _, s := range junitOf(t, sampleGate(t, config.FailOnFailures), JUnitPerRequirement).Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "CORE-A-002:") && (c.Skipped == nil || c.Failure != nil || !strings.Contains(c.Skipped.Message, "implement the scenario contract")) {
				t.Errorf("--fail-on failures: %+v, want <skipped> with the remedy", c)
			}
		}
	}
	// An error is an <error>.
	r.Requirements[0].Verdict = Error
	for _, s := range junitOf(t, r, JUnitPerRequirement).Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "CORE-A-001:") && (c.Error == nil || c.Failure != nil) {
				t.Errorf("error verdict: %+v, want <error>", c)
			}
		}
	}
	if err := WriteJUnit(&bytes.Buffer{}, r, "per-test"); err == nil {
		t.Error("an unknown granularity was accepted")
	}
}

func TestJUnitPerSpec(t *testing.T) {
	r := sample(t)
	out := junitOf(t, r, JUnitPerSpec)
	if out.Tests != len(r.Specs) || out.Failures != 2 || out.Skipped != 0 {
		t.Errorf("per spec: tests %d failures %d skipped %d, want %d, 2, 0", out.Tests, out.Failures, out.Skipped, len(r.Specs))
	}
	if out := junitOf(t, sampleGate(t, config.FailOnFailures), JUnitPerSpec); out.Failures != 1 || out.Skipped != 1 {
		t.Errorf("per spec, --fail-on failures: failures %d skipped %d, want 1, 1", out.Failures, out.Skipped)
	}
	for _, s := range out.Suites {
		for _, c := range s.Cases {
			if len(c.Properties) == 0 || c.Properties[0].Name != "requirement" {
				t.Errorf("spec case %q has no requirement property", c.Name)
			}
		}
	}
}

func TestBadges(t *testing.T) {
	for _, tc := range []struct {
		l            LevelResult
		color, words string
	}{
		{LevelResult{Selection: target.Selection{Level: "core"}, Status: Conformant}, "brightgreen", "conformant"},
		{LevelResult{Selection: target.Selection{Level: "core"}, Status: Conformant, Counts: Counts{Expected: 2}}, "yellowgreen", "conformant (2 known failures)"},
		{LevelResult{Selection: target.Selection{Level: "core"}, Status: Partial}, "yellow", "partial"},
		{LevelResult{Selection: target.Selection{Level: "core"}, Status: Nonconformant}, "red", "nonconformant"},
		{LevelResult{Selection: target.Selection{Level: "receipts"}, Status: NotClaimed}, "lightgrey", "not claimed"},
		{LevelResult{Selection: target.Selection{Level: "replay"}, Status: NotRequested}, "lightgrey", "not requested"},
	} {
		var b bytes.Buffer
		if err := WriteBadge(&b, tc.l); err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatal(err)
		}
		if got["schemaVersion"] != 1.0 || got["label"] != "harn "+string(tc.l.Level) || got["message"] != tc.words || got["color"] != tc.color || len(got) != 4 {
			t.Errorf("%s %s: badge %v, want message %q color %q", tc.l.Level, tc.l.Status, got, tc.words, tc.color)
		}
	}
}

// summary.md lists every failed, unverified and not applicable MUST with
// its reason (and remedy), never cuts a note mid-word, shows a level not
// claimed as such, and escapes what the target said.
func TestMarkdownSummary(t *testing.T) {
	r := sample(t)
	long := strings.Repeat("wordy sentence ", 40) + "tail-end"
	r.Notes = append(r.Notes, long, "line one\nline two "+hostile)
	var b bytes.Buffer
	if err := WriteMarkdown(&b, r); err != nil {
		t.Fatal(err)
	}
	md := b.String()
	for _, want := range []string{
		"**Gate:** failed (--fail-on unverified, exit 1): 1 MUST(s) failed: CORE-A-001; 1 observable MUST(s) unverified: CORE-A-002", // the gate first
		"| receipts | not claimed in discovery capabilities | – |",                                                                   // not "Skip 1"
		"## Failures (1)", "[CORE-A-001](", // the failure
		"## Unverified MUSTs: they fail the gate (1)", "no scenario hook", "To verify them:\n\n- implement the scenario contract: CORE-A-002", // reason and remedy
		"## Not applicable MUSTs (1)", "CORE-A-004", "server internals", // unobservable MUST with its reason
		"## Warnings (1)", "no Retry-After",
		long, // whole
		"line one line two",
		"&lt;script&gt;", `\[x\](javascript:alert(3))`,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("summary.md lacks %q:\n%s", want, md)
		}
	}
	for _, bad := range []string{"<script>", "<img", "\x1b", "| receipts | not\\_claimed | 0 | 0 | 0 | 0 | 1 |"} {
		if strings.Contains(md, bad) {
			t.Errorf("summary.md contains %q", bad)
		}
	}
	// Nothing twice: each remedy, each level's reason, each failure once.
	for _, once := range []string{"implement the scenario contract", "not claimed in discovery capabilities", "[CORE-A-001]("} {
		if n := strings.Count(md, once); n != 1 {
			t.Errorf("summary.md says %q %d times, want once:\n%s", once, n, md)
		}
	}
	// Every table row has as many cells as its header: no pipe in a
	// message splits a cell.
	cols := 0
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			cols = 0
			continue
		}
		n := len(regexp.MustCompile(`(^|[^\\])\|`).FindAllString(line, -1))
		if cols == 0 {
			cols = n
		} else if n != cols {
			t.Errorf("row has %d cells, header %d: %s", n, cols, line)
		}
	}
	checkOutputs(t, r)
}

func TestClipNeverCutsAWord(t *testing.T) {
	for _, tc := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"alpha beta gamma delta", 12, "alpha beta …"},
		{"alpha beta gamma delta", 11, "alpha beta …"},
		{"alpha beta gamma delta", 10, "alpha beta …"},
		{"supercalifragilistic", 8, "supercal…"}, // one word longer than the limit
		{"ééé ééé ééé", 6, "ééé …"},              // runes, not bytes
		{"alpha beta", 5, "alpha …"},
	} {
		got := clip(tc.in, tc.n)
		if got != tc.want {
			t.Errorf("clip(%q, %d) = %q, want %q", tc.in, tc.n, got, tc.want)
		}
		if !utf8.ValidString(got) {
			t.Errorf("clip(%q, %d) is not valid UTF-8", tc.in, tc.n)
		}
	}
}

func TestLocationIsModuleRelative(t *testing.T) {
	root := moduleRoot
	if root == "" {
		t.Fatal("the module root of the build is unknown")
	}
	for _, tc := range []struct{ in, want string }{
		{root + "/suites/core/tasks.go", "suites/core/tasks.go"},
		{"github.com/harn-conform/conform/suites/core/tasks.go", "suites/core/tasks.go"},                         // -trimpath
		{"/root/go/pkg/mod/github.com/harn-conform/conform@v1.2.3/suites/core/tasks.go", "suites/core/tasks.go"}, // module cache
		{"/elsewhere/checkout/suites/receipts/x.go", "suites/receipts/x.go"},
		{`C:\build\conform\suites\core\auth.go`, "suites/core/auth.go"},
		{"/tmp/other/file.go", "file.go"},
		{"suites/core/tasks.go", "suites/core/tasks.go"},
	} {
		if got := RelPath(tc.in); got != tc.want {
			t.Errorf("RelPath(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Location(types.CodeLocation{FileName: root + "/suites/core/tasks.go", LineNumber: 42}); got != "suites/core/tasks.go:42" {
		t.Errorf("Location = %q", got)
	}
	// Build records relative locations.
	gr := run(nil, types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "x", State: types.SpecStatePassed, NumAttempts: 1,
		LeafNodeLabels: []string{"req:CORE-A-001"}, LeafNodeLocation: types.CodeLocation{FileName: root + "/suites/core/x.go", LineNumber: 7}})
	r := Build(Input{Env: env(core), Registry: reg(t)}, gr)
	if r.Specs[0].Location != "suites/core/x.go:7" {
		t.Errorf("spec location = %q", r.Specs[0].Location)
	}
	checkOutputs(t, r)
}

// A report off its schema is written with the defect named in
// suite_defects (the project's proof runs rely on it instead of validating
// every report themselves); a report on its schema gets none.
func TestWriteAllRecordsSchemaProblems(t *testing.T) {
	read := func(dir string) []string {
		b, err := os.ReadFile(filepath.Join(dir, JSONFile))
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			SuiteDefects []string `json:"suite_defects"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		return got.SuiteDefects
	}
	good := t.TempDir()
	if err := WriteAll(good, sample(t)); err != nil {
		t.Fatal(err)
	}
	if d := read(good); len(d) != 0 {
		t.Errorf("a valid report got suite defects %v", d)
	}
	r := sample(t)
	r.Requirements[0].Verdict = "bogus"
	bad := t.TempDir()
	if err := WriteAll(bad, r); err != nil {
		t.Fatal(err)
	}
	d := read(bad)
	if len(d) != 1 || !strings.Contains(d[0], "does not match "+SchemaFile) || !strings.Contains(d[0], "/requirements/0/verdict") {
		t.Errorf("suite defects %v; want the schema problem at /requirements/0/verdict", d)
	}
}

// A run stopped before its specs: honest statuses (undecided, never
// partial or not claimed), no badge, and the requirements it left
// unchecked on one line rather than one problem each.
func TestStoppedRunReports(t *testing.T) {
	r := Build(Input{Tool: Tool{"conform", "test"}, Env: env(core, rcptOff), Registry: reg(t)}, run(nil))
	Stop(r, Stopped{Stage: "reach", Message: "the target did not answer", Hint: "start it first"})
	for _, l := range r.Levels {
		if l.Status != Undecided {
			t.Errorf("%s is %s, want undecided", l.Level, l.Status)
		}
	}
	for _, f := range Files(r) {
		if strings.HasPrefix(f, "badge-") {
			t.Errorf("a stopped run writes %s", f)
		}
	}
	var h, md bytes.Buffer
	if err := WriteHTML(&h, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"report.html": h.String(), "summary.md": md.String()} {
		for _, want := range []string{"not decided (exit 2): the run stopped (reach): the target did not answer", "start it first", "not checked because the run stopped"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
		for _, bad := range []string{"Errors (", "pill s-partial", "**partial**", "g-fail"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s of a stopped run says %q", name, bad)
			}
		}
	}
	if !strings.Contains(h.String(), `class="gate g-undecided"`) {
		t.Error("report.html does not mark the gate undecided")
	}
	checkOutputs(t, r)
}
