package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/redact"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

const canary = "sk-canary-report-777"

func entry(t *testing.T, name string, v any) types.ReportEntry {
	t.Helper()
	return types.ReportEntry{Name: name, Value: types.WrapEntryValue(v)}
}

func reg(t *testing.T) *requirements.Registry {
	t.Helper()
	y := ""
	for _, r := range []struct{ id, level, kw, obs string }{
		{"CORE-A-001", "core", "MUST", "true"},
		{"CORE-A-002", "core", "MUST", "true"},
		{"CORE-A-003", "core", "SHOULD", "true"},
		{"CORE-A-004", "core", "MUST", "false\n  reason: server internals"},
		{"RCPT-A-001", "receipts", "MUST", "true"},
	} {
		y += "- id: " + r.id + "\n  level: " + r.level + "\n  keyword: " + r.kw + "\n  source: narrative\n  section: S\n  anchor: s\n  summary: a summary long enough\n  transports: [rest]\n  observable: " + r.obs + "\n"
	}
	g, err := requirements.Parse(map[string][]byte{"t.yaml": []byte(y)})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func env(levels ...target.Selection) *target.Env {
	cfg := config.Defaults()
	cfg.Target, cfg.APIKey = "http://127.0.0.1:9/x", canary
	return &target.Env{Config: cfg, Redactor: redact.New(canary), Levels: levels}
}

func spec(text string, state types.SpecState, msg string, labels []string, entries ...types.ReportEntry) types.SpecReport {
	return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: text, LeafNodeLabels: labels, State: state,
		Failure: types.Failure{Message: msg}, NumAttempts: 1, RunTime: 3 * time.Millisecond, ReportEntries: entries}
}

func run(levels []target.Selection, specs ...types.SpecReport) types.Report {
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	return types.Report{StartTime: now, EndTime: now.Add(time.Second), RunTime: time.Second, SpecReports: specs}
}

var core = target.Selection{Level: requirements.Core, Run: true, Claimed: true, Reason: "core is always checked"}
var rcptOff = target.Selection{Level: requirements.Receipts, Reason: "not claimed in discovery capabilities"}

func TestVerdictsAndRollUp(t *testing.T) {
	tr := evidence.Transcript{Exchanges: []client.Exchange{{Kind: "http", Op: "GET /v1", Method: "GET", URL: "http://h/v1",
		Started: time.Now(), Curl: "curl -sS 'http://h/v1'", ResponseBody: "has " + canary}}}
	gr := run(nil,
		spec("passes A1", types.SpecStatePassed, "", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryLatency, []evidence.LatencySample{{Op: "GET /v1", MS: 1}, {Op: "GET /v1", MS: 9}})),
		spec("fails A2 softly, warns A3", types.SpecStateFailed, "CORE-A-002: bad "+canary, []string{"req:CORE-A-002", "req:CORE-A-003", "req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "status = 200, want 201 " + canary}),
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-003", Verdict: "warn", Message: "no supported list"}),
			entry(t, evidence.EntryTranscript, tr)),
		spec("skipped receipts", types.SpecStateSkipped, "level receipts not checked", []string{"req:RCPT-A-001"}),
	)
	r := Build(Input{Tool: Tool{"conform", "test"}, Env: env(core, rcptOff), Registry: reg(t), Seed: 5}, gr)

	// CORE-A-001 passed in one spec but was not reached in the other:
	// unverified, since a requirement passes only when every spec passed it.
	want := map[string]Verdict{"CORE-A-001": Unverified, "CORE-A-002": Fail, "CORE-A-003": Warn, "CORE-A-004": Skip, "RCPT-A-001": Skip}
	for _, q := range r.Requirements {
		if q.Verdict != want[q.ID] {
			t.Errorf("%s verdict = %s (%s), want %s", q.ID, q.Verdict, q.Message, want[q.ID])
		}
	}
	if r.Levels[0].Status != Nonconformant || r.Levels[1].Status != NotClaimed || r.ExitCode != 1 {
		t.Errorf("levels = %+v, exit %d; want core nonconformant, receipts not claimed, exit 1", r.Levels, r.ExitCode)
	}
	if q := find(r, "CORE-A-002"); len(q.Evidence) != 1 || q.Evidence[0].Curl == "" {
		t.Errorf("CORE-A-002 evidence = %+v, want the failing spec with a curl line", q.Evidence)
	}
	if len(r.Latency) != 1 || r.Latency[0].P50 != 1 || r.Latency[0].P99 != 9 || r.Latency[0].Count != 2 {
		t.Errorf("latency = %+v", r.Latency)
	}
	checkOutputs(t, r)
}

// A requirement passes only when every spec that names it passed it: one
// spec's pass never hides another's skip, "not reached" or failure.
func TestEverySpecMustPass(t *testing.T) {
	na := entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipNotApplicable, Reason: "receipts not advertised"})
	unv := entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: "no hook", Remedy: "implement the hook"})
	pass := spec("p", types.SpecStatePassed, "", []string{"req:CORE-A-001"})
	for _, tc := range []struct {
		name  string
		specs []types.SpecReport
		want  Verdict
	}{
		{"pass and not reached", []types.SpecReport{pass, spec("b", types.SpecStateFailed, "x", []string{"req:CORE-A-002", "req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "x"}))}, Unverified},
		{"pass and hook missing", []types.SpecReport{pass, spec("u", types.SpecStateSkipped, "unverified: no hook", []string{"req:CORE-A-001"}, unv)}, Unverified},
		{"pass and bare skip", []types.SpecReport{pass, spec("s", types.SpecStateSkipped, "whatever", []string{"req:CORE-A-001"})}, Unverified},
		{"pass and not applicable", []types.SpecReport{pass, spec("n", types.SpecStateSkipped, "", []string{"req:CORE-A-001"}, na)}, Pass},
		{"only not applicable", []types.SpecReport{spec("n", types.SpecStateSkipped, "", []string{"req:CORE-A-001"}, na)}, Skip},
		{"nothing to check", []types.SpecReport{spec("v", types.SpecStatePassed, "", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "unverified", Message: "no outcome", Remedy: "r"}))}, Unverified},
		{"filtered out", []types.SpecReport{pass, {LeafNodeType: types.NodeTypeIt, LeafNodeText: "f", LeafNodeLabels: []string{"req:CORE-A-001"}, State: types.SpecStateSkipped}}, Unverified},
		{"pass and not applicable to this requirement", []types.SpecReport{pass, spec("m", types.SpecStatePassed, "", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "skip", Message: "a MAY not taken up"}))}, Pass},
		{"only not applicable to this requirement", []types.SpecReport{spec("m", types.SpecStatePassed, "", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "skip", Message: "a MAY not taken up"}))}, Skip},
		{"pass and warn", []types.SpecReport{pass, spec("w", types.SpecStatePassed, "", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "warn", Message: "w"}))}, Warn},
		{"pass and fail", []types.SpecReport{pass, spec("f", types.SpecStateFailed, "CORE-A-001: bad", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "fail", Message: "bad"}))}, Fail},
	} {
		r := Build(Input{Env: env(core), Registry: reg(t)}, run(nil, tc.specs...))
		if q := find(r, "CORE-A-001"); q.Verdict != tc.want {
			t.Errorf("%s: CORE-A-001 = %s (%s), want %s", tc.name, q.Verdict, q.Message, tc.want)
		}
		checkOutputs(t, r)
	}
}

// No requirement can pass when every spec that names it was skipped, in
// whatever way: every combination of skip kinds over one to three specs.
func TestNoPassWhenAllSpecsSkipped(t *testing.T) {
	kinds := []func(i int) types.SpecReport{
		func(i int) types.SpecReport {
			return spec(fmt.Sprint("bare", i), types.SpecStateSkipped, "skipped", []string{"req:CORE-A-001"})
		},
		func(i int) types.SpecReport {
			return spec(fmt.Sprint("unverified", i), types.SpecStateSkipped, "", []string{"req:CORE-A-001"},
				entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: "no hook"}))
		},
		func(i int) types.SpecReport {
			return spec(fmt.Sprint("na", i), types.SpecStateSkipped, "", []string{"req:CORE-A-001"},
				entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipNotApplicable, Reason: "not claimed"}))
		},
		func(i int) types.SpecReport {
			return types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: fmt.Sprint("filtered", i), LeafNodeLabels: []string{"req:CORE-A-001"}, State: types.SpecStateSkipped}
		},
		func(i int) types.SpecReport {
			return spec(fmt.Sprint("pending", i), types.SpecStatePending, "", []string{"req:CORE-A-001"})
		},
	}
	var combos [][]int
	for n := 1; n <= 3; n++ {
		var rec func(prefix []int)
		rec = func(prefix []int) {
			if len(prefix) == n {
				combos = append(combos, append([]int(nil), prefix...))
				return
			}
			for k := range kinds {
				rec(append(prefix, k))
			}
		}
		rec(nil)
	}
	for _, c := range combos {
		var specs []types.SpecReport
		for i, k := range c {
			specs = append(specs, kinds[k](i))
		}
		r := Build(Input{Env: env(core), Registry: reg(t)}, run(nil, specs...))
		q := find(r, "CORE-A-001")
		if q.Verdict == Pass || q.Verdict == Warn {
			t.Errorf("skip kinds %v: CORE-A-001 = %s, want it never to pass", c, q.Verdict)
		}
		if r.Levels[0].Status == Conformant {
			t.Errorf("skip kinds %v: core is conformant with CORE-A-001 %s", c, q.Verdict)
		}
	}
}

// Offline self-checks of the suite's verifiers are reported apart and are
// no verdict on the target: a passing fixture check does not pass its
// requirement, a failing one does not fail the target.
func TestSelfChecksAreNoVerdict(t *testing.T) {
	r := Build(Input{Env: env(core), Registry: reg(t)}, run(nil,
		spec("fixtures ok", types.SpecStatePassed, "", []string{"offline", "req:CORE-A-001"}),
		spec("fixtures bad", types.SpecStateFailed, "CORE-A-002: wrong finding", []string{"offline", "req:CORE-A-002"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "wrong finding"}))))
	if len(r.SelfChecks) != 2 || len(r.Specs) != 0 {
		t.Fatalf("self checks %d, specs %d; want 2 and 0", len(r.SelfChecks), len(r.Specs))
	}
	for _, id := range []string{"CORE-A-001", "CORE-A-002"} {
		if q := find(r, id); q.Verdict != Unverified {
			t.Errorf("%s = %s, want unverified (no target spec checks it)", id, q.Verdict)
		}
	}
	if !strings.Contains(strings.Join(r.Notes, "\n"), "self-check failed") {
		t.Errorf("a failed self-check is not in the notes: %v", r.Notes)
	}
	checkOutputs(t, r)
}

// The level says what to do about its unverified MUSTs, grouped by remedy.
func TestRemediesGrouped(t *testing.T) {
	unv := func(name, req, remedy string) types.SpecReport {
		return spec(name, types.SpecStateSkipped, "", []string{"req:" + req},
			entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: "why " + name, Remedy: remedy}))
	}
	r := Build(Input{Env: env(core), Registry: reg(t)}, run(nil,
		unv("a", "CORE-A-001", "implement the hook"), unv("b", "CORE-A-002", "implement the hook"),
		unv("c", "CORE-A-003", "sign receipts")))
	lv := r.Levels[0]
	if lv.Status != Partial || len(lv.ToVerify) != 1 || lv.ToVerify[0].Remedy != "implement the hook" ||
		strings.Join(lv.ToVerify[0].Requirements, ",") != "CORE-A-001,CORE-A-002" {
		t.Errorf("core = %s, to verify %+v; want partial with one remedy for A-001 and A-002 (A-003 is a SHOULD)", lv.Status, lv.ToVerify)
	}
	var md bytes.Buffer
	WriteMarkdown(&md, r)
	if !strings.Contains(md.String(), "implement the hook: CORE-A-001, CORE-A-002") {
		t.Errorf("summary.md does not say how to verify:\n%s", md.String())
	}
	checkOutputs(t, r)
}

func TestLevelStatuses(t *testing.T) {
	all := func(state types.SpecState, entries ...types.ReportEntry) types.Report {
		return run(nil,
			spec("one", state, "m", []string{"req:CORE-A-001", "req:CORE-A-002", "req:CORE-A-003"}, entries...))
	}
	for _, tc := range []struct {
		name   string
		gr     types.Report
		status LevelStatus
		exit   int
	}{
		{"all pass", all(types.SpecStatePassed), Conformant, 0},
		{"warn only", all(types.SpecStatePassed, entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-003", Verdict: "warn", Message: "w"})), Conformant, 0},
		{"transport error", all(types.SpecStateFailed, entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "error", Message: "refused"})), Partial, 2},
		{"panic", all(types.SpecStatePanicked), Partial, 2},
		{"skipped MUST", all(types.SpecStateSkipped), Partial, 1},
		{"unattributed failure", all(types.SpecStateFailed), Nonconformant, 1},
	} {
		r := Build(Input{Env: env(core), Registry: reg(t)}, tc.gr)
		if r.Levels[0].Status != tc.status || r.ExitCode != tc.exit {
			t.Errorf("%s: core = %s (%s), exit %d; want %s, exit %d", tc.name, r.Levels[0].Status, r.Levels[0].Why, r.ExitCode, tc.status, tc.exit)
		}
		checkOutputs(t, r)
	}
	// A MUST no spec verifies keeps the level partial.
	r := Build(Input{Env: env(core), Registry: reg(t)}, run(nil, spec("one", types.SpecStatePassed, "", []string{"req:CORE-A-001"})))
	if r.Levels[0].Status != Partial || !strings.Contains(r.Levels[0].Why, "CORE-A-002") {
		t.Errorf("unverified MUST: core = %s (%s), want partial naming CORE-A-002", r.Levels[0].Status, r.Levels[0].Why)
	}
}

func find(r *Report, id string) ReqResult {
	for _, q := range r.Requirements {
		if q.ID == id {
			return q
		}
	}
	return ReqResult{}
}

// checkOutputs renders every format, validates the JSON against the
// project's schema, and makes sure the canary secret appears nowhere.
func checkOutputs(t *testing.T, r *Report) {
	t.Helper()
	var js, ju, jus, md, tb, ht, bd bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&ju, r, JUnitPerRequirement); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&jus, r, JUnitPerSpec); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(&ht, r); err != nil {
		t.Fatal(err)
	}
	for _, l := range r.Levels {
		if err := WriteBadge(&bd, l); err != nil {
			t.Fatal(err)
		}
	}
	WriteTable(&tb, r)
	ValidateJSON(t, js.Bytes())
	for _, b := range [][]byte{ju.Bytes(), jus.Bytes()} {
		var x struct{ XMLName xml.Name }
		if err := xml.Unmarshal(b, &x); err != nil || x.XMLName.Local != "testsuites" {
			t.Errorf("junit.xml does not parse: %v", err)
		}
	}
	for name, b := range map[string][]byte{"json": js.Bytes(), "junit": ju.Bytes(), "junit-spec": jus.Bytes(), "markdown": md.Bytes(),
		"table": tb.Bytes(), "html": ht.Bytes(), "badges": bd.Bytes()} {
		if bytes.Contains(b, []byte(canary)) {
			t.Errorf("%s output leaks the canary secret", name)
		}
	}
}

// ValidateJSON checks a conform.json against fixtures/schemas.
func ValidateJSON(t *testing.T, b []byte) {
	t.Helper()
	s, err := schemas.Compile("conform-report.v1.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if p := schemas.Problems(s, inst); len(p) > 0 {
		t.Errorf("conform.json does not match its schema: %v", p)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["format"] != Format {
		t.Errorf("format = %v", m["format"])
	}
}

// The evidence's curl line reproduces the failing exchange: the last one
// the finding names, up to when it was recorded (a template path, a base
// path prefix, the same request sent again later), else the last exchange
// before it; never the spec's first (setup) request in its place.
func TestEvidenceCurlIsTheFailingExchange(t *testing.T) {
	ex := func(method, path, curl string) client.Exchange {
		return client.Exchange{Kind: "http", Op: method + " " + path, Method: method, URL: "http://h/x" + path, Started: time.Now(), Curl: curl}
	}
	tr := evidence.Transcript{Exchanges: []client.Exchange{
		ex("POST", "/v1/workspaces", "curl setup"),
		ex("POST", "/v1/sessions", "curl sessions 1"),
		ex("GET", "/v1/tasks/task_1", "curl task"),
		ex("POST", "/v1/sessions", "curl sessions 2"),
	}}
	for _, tc := range []struct {
		msg  string
		at   int
		want string
	}{
		{"POST /x/v1/sessions → 200: status = 200, want 201", 0, "curl sessions 2"},
		{"POST /v1/sessions → 200: status = 200, want 201", 2, "curl sessions 1"}, // recorded before the second
		{"OpenAPI: GET /v1/tasks/{task_id} → 200: /status = \"DONE\": not in the enum", 4, "curl task"},
		{"something without a request", 1, "curl setup"},
		{"something without a request", 3, "curl task"},
		{"something without a request", 0, "curl sessions 2"},
		{"DELETE /v1/sessions/s_1 → 500: no such exchange recorded", 4, ""},
	} {
		gr := run(nil, spec("s", types.SpecStateFailed, tc.msg, []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "fail", Message: tc.msg, At: tc.at}),
			entry(t, evidence.EntryTranscript, tr)))
		r := Build(Input{Env: env(core), Registry: reg(t)}, gr)
		if q := find(r, "CORE-A-001"); len(q.Evidence) != 1 || q.Evidence[0].Curl != tc.want {
			t.Errorf("message %q at %d: evidence %+v, want curl %q", tc.msg, tc.at, q.Evidence, tc.want)
		}
	}
}

// A run cut off by --max-duration: the spec interrupted mid-way and the
// specs never started are errors (exit 2), never failures of the target.
func TestCutOffRunIsError(t *testing.T) {
	gr := run(nil,
		spec("done", types.SpecStatePassed, "", []string{"req:CORE-A-001"}),
		spec("cut", types.SpecStateInterrupted, "interrupted by the suite timeout", []string{"req:CORE-A-002"}),
		types.SpecReport{LeafNodeType: types.NodeTypeIt, LeafNodeText: "never ran", LeafNodeLabels: []string{"req:RCPT-A-001", "req:CORE-A-003"}, State: types.SpecStateSkipped})
	gr.SpecialSuiteFailureReasons = []string{"Suite Timeout Elapsed"}
	r := Build(Input{Env: env(core), Registry: reg(t)}, gr)
	for id, want := range map[string]Verdict{"CORE-A-001": Pass, "CORE-A-002": Error, "CORE-A-003": Error} {
		if q := find(r, id); q.Verdict != want {
			t.Errorf("%s = %s (%s), want %s", id, q.Verdict, q.Message, want)
		}
	}
	if r.ExitCode != 2 || len(verdictsOf(r, Fail)) > 0 {
		t.Errorf("exit %d, failures %v; want exit 2 and no failure", r.ExitCode, verdictsOf(r, Fail))
	}
	checkOutputs(t, r)
}

func verdictsOf(r *Report, v Verdict) []string {
	var ids []string
	for _, q := range r.Requirements {
		if q.Verdict == v {
			ids = append(ids, q.ID)
		}
	}
	return ids
}

// TestEvidenceAttached: a document a spec attaches (a FidelityReport) is
// kept on its spec result whatever the verdict, scrubbed like the rest,
// and the report stays valid against its schema.
func TestEvidenceAttached(t *testing.T) {
	att := evidence.Attachment{Name: "fidelity (semantic): source vs replay", Schema: "conform-fidelity-report/v1",
		Content: json.RawMessage(`{"schema":"conform-fidelity-report/v1","status":"equal","note":"` + canary + `"}`)}
	gr := run(nil, spec("passes with evidence", types.SpecStatePassed, "", []string{"req:CORE-A-001"}, entry(t, evidence.EntryEvidence, att)))
	r := Build(Input{Tool: Tool{"conform", "test"}, Env: env(core), Registry: reg(t)}, gr)
	if len(r.Specs) != 1 || len(r.Specs[0].Evidence) != 1 {
		t.Fatalf("specs = %+v, want one with one evidence document", r.Specs)
	}
	got := r.Specs[0].Evidence[0]
	if got.Name != att.Name || got.Schema != att.Schema || !strings.Contains(string(got.Content), `"status":"equal"`) || strings.Contains(string(got.Content), canary) {
		t.Errorf("evidence = %+v (%s), want the document with the secret scrubbed", got, got.Content)
	}
	checkOutputs(t, r)
}

// A level asked for by name that the target does not claim: with nothing
// failed it is not claimed (its unverified checks are the target's not
// offering it), with a failure it is nonconformant.
func TestRequestedUnclaimedLevel(t *testing.T) {
	rcptAsked := target.Selection{Level: requirements.Receipts, Run: true, Explicit: true, Reason: "requested with --levels"}
	unverified := spec("receipts unverified", types.SpecStateSkipped, "unverified: no receipts", []string{"req:RCPT-A-001"},
		entry(t, evidence.EntrySkip, evidence.Skip{Kind: "unverified", Reason: "no receipts"}))
	r := Build(Input{Tool: Tool{"conform", "test"}, Env: env(core, rcptAsked), Registry: reg(t), Seed: 5}, run(nil, unverified))
	if r.Levels[1].Status != NotClaimed {
		t.Errorf("unclaimed receipts, asked for, nothing failed: status %s (%s), want not claimed", r.Levels[1].Status, r.Levels[1].Why)
	}
	failed := spec("receipts fail", types.SpecStateFailed, "RCPT-A-001: bad", []string{"req:RCPT-A-001"},
		entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "RCPT-A-001", Verdict: "fail", Message: "bad"}))
	r = Build(Input{Tool: Tool{"conform", "test"}, Env: env(core, rcptAsked), Registry: reg(t), Seed: 5}, run(nil, failed))
	if r.Levels[1].Status != Nonconformant || r.ExitCode != 1 {
		t.Errorf("unclaimed receipts, asked for, a check failed: status %s, exit %d; want nonconformant, 1", r.Levels[1].Status, r.ExitCode)
	}
}

// Each level counts its observable MUSTs by how they ended and on what
// evidence: verified without any hook only when no spec that judged it
// used one.
func TestMustTally(t *testing.T) {
	hook := func(h string, reqs ...string) types.ReportEntry {
		return entry(t, evidence.EntryHook, evidence.HookUse{Hook: h, How: "POST /v1/tasks with a conform.scenario", Requirements: reqs})
	}
	gr := run(nil,
		spec("A1 plain", types.SpecStatePassed, "", []string{"req:CORE-A-001"}),
		spec("A1 and A3 with the hook", types.SpecStatePassed, "", []string{"req:CORE-A-001", "req:CORE-A-003"}, hook(evidence.HookScenarios)),
		spec("A2 fails", types.SpecStateFailed, "x", []string{"req:CORE-A-002"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "x"}), hook(evidence.HookQuotas, "CORE-A-002")),
		spec("A2 passes with the scenario hook", types.SpecStatePassed, "", []string{"req:CORE-A-002"}, hook(evidence.HookScenarios)),
		spec("R1 with the hook, not applicable", types.SpecStateSkipped, "", []string{"req:RCPT-A-001"}, hook(evidence.HookScenarios),
			entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipNotApplicable, Reason: "no receipts"})),
	)
	rcpt := target.Selection{Level: requirements.Receipts, Run: true, Claimed: true, Reason: "claimed"}
	r := Build(Input{Tool: Tool{"conform", "test"}, Env: env(core, rcpt), Registry: reg(t)}, gr)
	if q := find(r, "CORE-A-001"); !slices.Equal(q.Hooks, []string{evidence.HookScenarios}) || q.Verdict != Pass {
		t.Errorf("CORE-A-001 = %s with hooks %v, want pass with the scenario hook", q.Verdict, q.Hooks)
	}
	// A failure rests on the specs that saw it, not on another's pass.
	if q := find(r, "CORE-A-002"); !slices.Equal(q.Hooks, []string{evidence.HookQuotas}) || q.Verdict != Fail {
		t.Errorf("CORE-A-002 = %s with hooks %v, want a failure seen through the quota hook only", q.Verdict, q.Hooks)
	}
	if q := find(r, "RCPT-A-001"); q.Hooks != nil || q.Verdict != Skip {
		t.Errorf("RCPT-A-001 = %s with hooks %v: a spec not applicable rests on nothing", q.Verdict, q.Hooks)
	}
	want := []MustTally{
		{Observable: 2, VerifiedWithHook: 1, Failed: 1, Hooks: []string{evidence.HookScenarios}}, // A-004 is not observable, A-003 a SHOULD
		{Observable: 1, NotApplicable: 1},
	}
	for i, l := range r.Levels {
		if l.MUSTs == nil || fmt.Sprint(*l.MUSTs) != fmt.Sprint(want[i]) {
			t.Errorf("%s MUSTs = %+v, want %+v", l.Level, l.MUSTs, want[i])
		}
	}
	var tb bytes.Buffer
	WriteTable(&tb, r)
	if !strings.Contains(tb.String(), "NO-HOOK") || !strings.Contains(tb.String(), "(HOOK: conform.scenarios)") {
		t.Errorf("the table does not show the MUSTs' evidence:\n%s", tb.String())
	}
	checkOutputs(t, r)
}

// The gate: failed MUSTs fail it (exit 1) before errors (exit 2); an
// unverified observable MUST fails the default gate and is only listed
// under --fail-on failures; an area left out is not requested — never a
// failure of the gate, never "conformant".
func TestGate(t *testing.T) {
	unv := entry(t, evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipUnverified, Reason: "no hook", Remedy: "implement the hook"})
	fail := entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "GET /v1/x → 500"})
	pass1 := spec("A1", types.SpecStatePassed, "", []string{"req:CORE-A-001"})
	for _, tc := range []struct {
		name                string
		failOn, skipAreas   string
		specs               []types.SpecReport
		exit                int
		status              LevelStatus
		gate                map[string]string // requirement -> its gate mark
		summary, verdict    string
		unverified, optedAt []string
	}{
		{"strict, unverified", config.FailOnUnverified, "", []types.SpecReport{pass1, spec("A2", types.SpecStateSkipped, "", []string{"req:CORE-A-002"}, unv)},
			1, Partial, map[string]string{"CORE-A-002": GateUnverified}, "failed (--fail-on unverified, exit 1): 1 observable MUST(s) unverified: CORE-A-002", "NOT conformant", []string{"CORE-A-002"}, nil},
		{"failures only, unverified", config.FailOnFailures, "", []types.SpecReport{pass1, spec("A2", types.SpecStateSkipped, "", []string{"req:CORE-A-002"}, unv)},
			0, Partial, map[string]string{}, "passed (--fail-on failures): no requirement of the levels checked fails it; 1 observable MUST(s) unverified, which do not fail this gate: CORE-A-002",
			"no failures, but not conformant: 1 unverified MUST (the gate fails on failures only)", []string{"CORE-A-002"}, nil},
		{"failures only, a failure", config.FailOnFailures, "", []types.SpecReport{pass1, spec("A2", types.SpecStateFailed, "x", []string{"req:CORE-A-002"}, fail)},
			1, Nonconformant, map[string]string{"CORE-A-002": GateFail}, "failed (--fail-on failures, exit 1): 1 MUST(s) failed: CORE-A-002", "NOT conformant", nil, nil},
		{"a failure beats an error", config.FailOnUnverified, "", []types.SpecReport{spec("A1", types.SpecStateFailed, "t", []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "error", Message: "timeout"})), spec("A2", types.SpecStateFailed, "x", []string{"req:CORE-A-002"}, fail)},
			1, Nonconformant, map[string]string{"CORE-A-001": GateError, "CORE-A-002": GateFail}, "failed (--fail-on unverified, exit 1): 1 MUST(s) failed: CORE-A-002; 1 requirement(s) could not be checked", "NOT conformant", nil, nil},
		{"an area left out", config.FailOnUnverified, "CORE-A", []types.SpecReport{pass1, spec("A2", types.SpecStateFailed, "x", []string{"req:CORE-A-002"}, fail)},
			0, Partial, map[string]string{}, "passed (--fail-on unverified): no requirement of the levels checked fails it; 2 observable MUST(s) not checked by choice (--areas, --skip-areas): CORE-A-001, CORE-A-002",
			"conformant apart from 2 MUSTs not checked by choice", nil, []string{"CORE-A-001", "CORE-A-002"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := env(core, rcptOff)
			e.Config.FailOn = tc.failOn
			if tc.skipAreas != "" {
				e.Config.SkipAreas = []string{tc.skipAreas}
			}
			r := Build(Input{Tool: Tool{"conform", "test"}, Env: e, Registry: reg(t)}, run(nil, tc.specs...))
			if r.ExitCode != tc.exit || r.Levels[0].Status != tc.status || r.Gate.Passed != (tc.exit == 0) {
				t.Errorf("exit %d, core %s, gate %+v; want exit %d, %s", r.ExitCode, r.Levels[0].Status, r.Gate, tc.exit, tc.status)
			}
			for _, q := range r.Requirements {
				if q.Gate != tc.gate[q.ID] {
					t.Errorf("%s (%s) gate %q, want %q", q.ID, q.Verdict, q.Gate, tc.gate[q.ID])
				}
				if want := slices.Contains(tc.optedAt, q.ID) || tc.skipAreas != "" && q.ID == "CORE-A-003"; q.OptedOut != want || want && (q.Verdict != Skip || !strings.Contains(q.Message, "skipped with --skip-areas")) {
					t.Errorf("%s opted out %v (%s: %s), want %v", q.ID, q.OptedOut, q.Verdict, q.Message, want)
				}
			}
			if !strings.HasPrefix(r.Gate.Summary, tc.summary) || verdictLine(r) != tc.verdict {
				t.Errorf("summary %q\nverdict %q\nwant %q\nand %q", r.Gate.Summary, verdictLine(r), tc.summary, tc.verdict)
			}
			if !slices.Equal(r.Gate.Unverified, tc.unverified) && !(len(tc.unverified) == 0 && len(r.Gate.Unverified) == 0) {
				t.Errorf("gate unverified %v, want %v", r.Gate.Unverified, tc.unverified)
			}
			if tc.optedAt != nil && (r.Levels[0].MUSTs.NotRequested != len(tc.optedAt) || !strings.Contains(r.Levels[0].Why, "not checked by choice")) {
				t.Errorf("core MUSTs %+v, why %q", r.Levels[0].MUSTs, r.Levels[0].Why)
			}
			var tb bytes.Buffer
			WriteTable(&tb, r)
			if !strings.HasPrefix(tb.String(), "GATE "+tc.summary) {
				t.Errorf("the console does not open on the gate:\n%s", tb.String())
			}
			checkOutputs(t, r)
		})
	}
}
