package suite_test

// The verdict machinery itself: specs that record failures the way the
// conformance specs do (Check, CheckBlocks, Blocked, Must, Stop, Transport)
// without talking to the target, rolled up by reports.Build as the conform
// binary does. It pins down that every check runs, what a failure blocks
// and how that is worded, that a requirement a spec checked to its end
// passes, and that a transport failure is an error, never a failure.

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/reports"
)

var captured types.Report

var _ = ReportAfterSuite("capture", func(r Report) { captured = r })

func timeout() error {
	return &client.TransportError{Method: "GET", URL: "http://target/v1/tasks", Err: context.DeadlineExceeded}
}

var _ = Describe("verdicts", func() {
	It("must: ends the spec, blocking what has no verdict", suite.Req("CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-READ-005"), func() {
		suite.Check("CORE-READ-001", errors.New("GET /v1/x → 200: first problem"))
		suite.Must("CORE-READ-002", errors.New("GET /v1/y → 500: second problem\nwith a second line"))
		suite.Check("CORE-READ-003", errors.New("never reached"))
	})

	It("check: every check runs and the rest passes", suite.Req("CORE-PAGE-001", "CORE-PAGE-002", "CORE-PAGE-003"), func() {
		suite.Check("CORE-PAGE-001", errors.New("page one bad"))
		suite.Check("CORE-PAGE-001", errors.New("page two bad"))
		if !suite.Check("CORE-PAGE-002", nil) {
			Fail("Check(nil) reported a failure")
		}
		suite.Check("CORE-PAGE-003", nil)
	})

	It("check blocks: names what it keeps from being checked", suite.Req("CORE-IDEM-001", "CORE-IDEM-002", "CORE-IDEM-004"), func() {
		if suite.CheckBlocks("CORE-IDEM-001", errors.New("first submit refused"), "CORE-IDEM-002", "CORE-IDEM-005") {
			Fail("CheckBlocks(err) reported a pass")
		}
		suite.Check("CORE-IDEM-004", nil)
	})

	It("blocked: after a helper's failure", suite.Req("CORE-ERR-001", "CORE-ERR-004", "CORE-ERR-006"), func() {
		suite.Check("CORE-ERR-001", errors.New("GET /v1/tasks/none → 200"))
		suite.Blocked("CORE-ERR-001", "CORE-ERR-004")
		suite.Blocked("CORE-ERR-002") // nothing recorded for it: no effect
	})

	It("stop: ends the spec on a recorded failure", suite.Req("CORE-TASK-001", "CORE-TASK-002", "CORE-TASK-003"), func() {
		suite.Check("CORE-TASK-001", errors.New("POST /v1/sessions/s/tasks → 500"))
		suite.Stop("CORE-PAGE-001", "CORE-TASK-001")
	})

	It("transport: a set-up step that times out is an error", suite.Req("CORE-EVT-001", "CORE-EVT-002"), func() {
		suite.Transport(timeout())
	})

	It("must: a transport failure is an error, and so is what it blocks", suite.Req("CORE-EVT-003", "CORE-EVT-004"), func() {
		suite.Must("CORE-EVT-003", timeout())
	})
})

var _ = Describe("hooks", func() {
	It("a hook for every requirement of the spec", suite.Req("CORE-VER-001", "CORE-VER-002"), func() {
		suite.UsedHook(evidence.HookScenarios, "task t_1 submitted with a conform.scenario")
		suite.UsedHook(evidence.HookScenarios, "task t_2 submitted with a conform.scenario") // the same use: kept once
	})

	It("a hook for some requirements of the spec", suite.Req("CORE-VER-003", "CORE-VER-004"), func() {
		suite.UsedHook(evidence.HookQuotas, "POST /v1/conform/quotas", "CORE-VER-003")
	})

	It("no hook, on a requirement another spec judged with one", suite.Req("CORE-VER-001"), func() {})

	It("a source of kind hook", suite.Req("CORE-SSE-001", "CORE-SSE-002"), func() {
		suite.Evidence(evidence.Source{Kind: evidence.SourceHook, Hook: evidence.HookScenarios, Object: "task t_3 (FAILED)", How: "a task whose scenario fails", Requirements: []string{"CORE-SSE-002"}})
		suite.Evidence(evidence.Source{Kind: evidence.SourceRun, Object: "task t_4 (FAILED)", How: "a plain task", Requirements: []string{"CORE-SSE-001"}})
	})

	It("a hook, then a failure", suite.Req("CORE-SSE-003"), func() {
		suite.UsedHook(evidence.HookConnectors, "POST /v1/conform/connectors")
		suite.Check("CORE-SSE-003", errors.New("GET /v1/sessions/s/events → 200: not an event stream"))
	})
})

type quietT struct{ failed bool }

func (q *quietT) Fail() { q.failed = true }

func TestVerdicts(t *testing.T) {
	if err := suite.Validate(); err != nil {
		t.Fatal(err)
	}
	// The specs record verdicts and never ask the target anything: an
	// environment whose target is never dialled.
	cfg, err := config.Load(config.Sources{Env: func(string) string { return "" }, Flags: map[string]string{"target": "http://127.0.0.1:9"}})
	if err != nil {
		t.Fatal(err)
	}
	env, err := target.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	suite.Install(env)
	defer suite.Shutdown()
	suiteCfg, repCfg := GinkgoConfiguration()
	repCfg.Succinct = true
	RunSpecs(&quietT{}, "suite verdicts", suiteCfg, repCfg)
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	r := reports.Build(reports.Input{Env: suite.Env(), Registry: reg}, captured)
	req := func(id string) reports.ReqResult {
		for _, q := range r.Requirements {
			if q.ID == id {
				return q
			}
		}
		t.Fatalf("no %s in the report", id)
		return reports.ReqResult{}
	}
	want := func(id string, v reports.Verdict, msg string) {
		t.Helper()
		q := req(id)
		if q.Verdict != v {
			t.Errorf("%s = %s (%s), want %s", id, q.Verdict, q.Message, v)
		}
		if !strings.Contains(q.Message, msg) {
			t.Errorf("%s message %q, want it to contain %q", id, q.Message, msg)
		}
		if n := len(q.Evidence); v != reports.Pass && n != 1 {
			t.Errorf("%s has %d pieces of evidence, want 1 (one spec, counted once): %+v", id, n, q.Evidence)
		}
	}

	// Must: the failure lists what it blocks; the blocked are unverified,
	// naming the failure and its first line.
	want("CORE-READ-001", reports.Fail, "first problem")
	want("CORE-READ-002", reports.Fail, "GET /v1/y → 500: second problem\nwith a second line; blocks: CORE-READ-003, CORE-READ-005")
	for _, id := range []string{"CORE-READ-003", "CORE-READ-005"} {
		want(id, reports.Unverified, "not checked: blocked by the failure of CORE-READ-002 (GET /v1/y → 500: second problem)")
		if q := req(id); q.Remedy != suite.RemedyBlocked {
			t.Errorf("%s remedy %q, want %q", id, q.Remedy, suite.RemedyBlocked)
		}
	}

	// Check: the spec ran to its end; what did not fail passed, and a
	// requirement that failed twice is one failure.
	want("CORE-PAGE-001", reports.Fail, "page")
	want("CORE-PAGE-002", reports.Pass, "")
	want("CORE-PAGE-003", reports.Pass, "")

	// CheckBlocks and Blocked block only the spec's own requirements.
	want("CORE-IDEM-001", reports.Fail, "first submit refused; blocks: CORE-IDEM-002")
	want("CORE-IDEM-002", reports.Unverified, "not checked: blocked by the failure of CORE-IDEM-001 (first submit refused)")
	want("CORE-IDEM-004", reports.Pass, "")
	if q := req("CORE-IDEM-005"); strings.Contains(q.Message, "blocked") {
		t.Errorf("CORE-IDEM-005, which the spec does not name, = %s (%s): blocked", q.Verdict, q.Message)
	}
	want("CORE-ERR-001", reports.Fail, "→ 200; blocks: CORE-ERR-004")
	want("CORE-ERR-004", reports.Unverified, "not checked: blocked by the failure of CORE-ERR-001")
	want("CORE-ERR-006", reports.Pass, "")

	// Stop ends the spec on the failure a helper recorded.
	want("CORE-TASK-001", reports.Fail, "blocks: CORE-TASK-002, CORE-TASK-003")
	want("CORE-TASK-002", reports.Unverified, "blocked by the failure of CORE-TASK-001")
	want("CORE-TASK-003", reports.Unverified, "blocked by the failure of CORE-TASK-001")

	// Transport failures: errors for every requirement, never failures.
	for _, id := range []string{"CORE-EVT-001", "CORE-EVT-002", "CORE-EVT-003", "CORE-EVT-004"} {
		want(id, reports.Error, "context deadline exceeded")
	}
	for _, s := range r.Specs {
		if strings.Contains(s.Name, "transport") && s.Verdict != reports.Error {
			t.Errorf("spec %q = %s, want error", s.Name, s.Verdict)
		}
	}

	// Hooks: a verdict rests on every hook a spec that judged it used for
	// it; a requirement is hook-free only when no such spec used one.
	for id, hooks := range map[string][]string{
		"CORE-VER-001": {evidence.HookScenarios}, "CORE-VER-002": {evidence.HookScenarios},
		"CORE-VER-003": {evidence.HookQuotas}, "CORE-VER-004": nil,
		"CORE-SSE-001": nil, "CORE-SSE-002": {evidence.HookScenarios},
		"CORE-SSE-003": {evidence.HookConnectors},
	} {
		q := req(id)
		if !slices.Equal(q.Hooks, hooks) {
			t.Errorf("%s hooks = %v, want %v", id, q.Hooks, hooks)
		}
		if id == "CORE-SSE-003" && (q.Verdict != reports.Fail || len(q.Evidence) != 1 || !slices.Equal(q.Evidence[0].Hooks, hooks)) {
			t.Errorf("CORE-SSE-003 = %s with evidence %+v, want a failure seen through %v", q.Verdict, q.Evidence, hooks)
		}
	}
	for _, s := range r.Specs {
		if s.Name == "hooks a hook for every requirement of the spec" && (len(s.Hooks) != 1 || s.Hooks[0].How != "task t_1 submitted with a conform.scenario") {
			t.Errorf("spec %q hooks = %+v, want the first use, once", s.Name, s.Hooks)
		}
	}
}
