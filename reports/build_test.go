package reports

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
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

	want := map[string]Verdict{"CORE-A-001": Pass, "CORE-A-002": Fail, "CORE-A-003": Warn, "CORE-A-004": Skip, "RCPT-A-001": Skip}
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

// A requirement that one spec passes and another does not reach keeps the
// pass: "not reached" is not a verdict on the target.
func TestNotReachedDoesNotHidePass(t *testing.T) {
	gr := run(nil,
		spec("a", types.SpecStatePassed, "", []string{"req:CORE-A-001", "req:CORE-A-002"}),
		spec("b", types.SpecStateFailed, "x", []string{"req:CORE-A-002", "req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-002", Verdict: "fail", Message: "x"})),
	)
	r := Build(Input{Env: env(core), Registry: reg(t)}, gr)
	if q := find(r, "CORE-A-001"); q.Verdict != Pass {
		t.Errorf("CORE-A-001 = %s, want pass", q.Verdict)
	}
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
	var js, ju, md, tb bytes.Buffer
	if err := WriteJSON(&js, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteJUnit(&ju, r); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	WriteTable(&tb, r)
	ValidateJSON(t, js.Bytes())
	var x struct{ XMLName xml.Name }
	if err := xml.Unmarshal(ju.Bytes(), &x); err != nil || x.XMLName.Local != "testsuites" {
		t.Errorf("junit.xml does not parse: %v", err)
	}
	for name, b := range map[string][]byte{"json": js.Bytes(), "junit": ju.Bytes(), "markdown": md.Bytes(), "table": tb.Bytes()} {
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

// The evidence's curl line reproduces the request the finding names, not
// the spec's first (setup) request.
func TestEvidenceCurlNamesTheFailingRequest(t *testing.T) {
	tr := evidence.Transcript{Exchanges: []client.Exchange{
		{Kind: "http", Op: "POST /v1/workspaces", Method: "POST", URL: "http://h/x/v1/workspaces", Started: time.Now(), Curl: "curl setup"},
		{Kind: "http", Op: "POST /v1/sessions", Method: "POST", URL: "http://h/x/v1/sessions", Started: time.Now(), Curl: "curl sessions"},
	}}
	for _, tc := range []struct{ msg, want string }{
		{"POST /x/v1/sessions → 200: status = 200, want 201", "curl sessions"},
		{"something without a request", "curl setup"},
	} {
		gr := run(nil, spec("s", types.SpecStateFailed, tc.msg, []string{"req:CORE-A-001"},
			entry(t, evidence.EntryVerdict, evidence.Verdict{Req: "CORE-A-001", Verdict: "fail", Message: tc.msg}),
			entry(t, evidence.EntryTranscript, tr)))
		r := Build(Input{Env: env(core), Registry: reg(t)}, gr)
		if q := find(r, "CORE-A-001"); len(q.Evidence) != 1 || q.Evidence[0].Curl != tc.want {
			t.Errorf("message %q: evidence %+v, want curl %q", tc.msg, q.Evidence, tc.want)
		}
	}
}
