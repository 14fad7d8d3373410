package main

// Verdicts a third party can trust (issue 9): the reference Harness run as a
// server that is not the reference Harness would be — without the test
// hook, with a chatty agent, without the Workspace API — gets exactly the
// verdicts the docs promise.

import (
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// figureRE finds the figure docs/scenarios.md and the README state for a
// run against a target without the scenario hook.
var figureRE = regexp.MustCompile(`verifies \*\*(\d+) of (\d+)\*\* observable Core MUSTs and \*\*(\d+) of (\d+)\*\* observable Receipts MUSTs`)

// mustCount counts a level's observable MUSTs and how many of them passed.
func mustCount(t *testing.T, r *reports.Report, level requirements.Level) (passed, total int, unverified []string) {
	t.Helper()
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range r.Requirements {
		rq, _ := reg.Lookup(q.ID)
		if rq.Level != level || !rq.Keyword.Mandatory() || !rq.Observable {
			continue
		}
		total++
		switch q.Verdict {
		case reports.Pass:
			passed++
		case reports.Unverified:
			unverified = append(unverified, q.ID)
		}
	}
	sort.Strings(unverified)
	return passed, total, unverified
}

// A third-party-style run: the hook hidden. Nothing fails, errors or warns;
// what it verifies is the figure the docs state, and every MUST it leaves
// unverified is listed in docs/scenarios.md with its reason.
func TestThirdPartyStyleRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	_, r, _ := proof(t, "no hook", targetSpec{Variants: []refharness.Variant{refharness.VariantNoScenarioHook}}, "core,receipts")
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
		t.Fatalf("a conformant target without the hook gets %v: %s", bad, messages(r, bad))
	}
	corePass, coreTotal, coreUnv := mustCount(t, r, requirements.Core)
	rcptPass, rcptTotal, rcptUnv := mustCount(t, r, requirements.Receipts)
	got := []int{corePass, coreTotal, rcptPass, rcptTotal}

	doc, err := os.ReadFile("../../docs/scenarios.md")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string][]byte{"docs/scenarios.md": doc, "README.md": readme} {
		m := figureRE.FindSubmatch(text)
		if m == nil {
			t.Errorf("%s states no figure for a run without the hook (want %q)", name, figureRE)
			continue
		}
		var want []int
		for _, s := range m[1:] {
			n, _ := strconv.Atoi(string(s))
			want = append(want, n)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s says a run without the hook verifies %d of %d Core and %d of %d Receipts MUSTs; the run verified %d of %d and %d of %d",
				name, want[0], want[1], want[2], want[3], got[0], got[1], got[2], got[3])
		}
	}
	for _, id := range append(coreUnv, rcptUnv...) {
		if !strings.Contains(string(doc), "`"+id+"`") {
			t.Errorf("%s is unverified without the hook (%s), but docs/scenarios.md does not list it", id, messages(r, []string{id}))
		}
	}
}

// A chatty agent (more than one default page of events per task) is
// conformant: event ranges and resume follow the pages.
func TestChattyAgentConformant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	assertOnlyUnverified(t, "chatty agent", targetSpec{Variants: []refharness.Variant{refharness.VariantChattyAgent}}, "core", nil)
}

// A Core-only server offers no Workspace API. Given the workspace its
// operator provisioned, it is as conformant as the reference Harness;
// without it the run cannot set up and says so — unverified with the
// remedy, never a failure.
func TestCoreOnlyServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	coreOnly := targetSpec{Variants: []refharness.Variant{refharness.VariantCoreOnly}}
	assertOnlyUnverified(t, "core-only with --workspace-id", coreOnly, "core", nil, "--workspace-id", refharness.ProvisionedWorkspaceID)

	_, r, _ := proof(t, "core-only without --workspace-id", coreOnly, "core")
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("core-only without --workspace-id: %v: %s", bad, messages(r, bad))
	}
	remedy := false
	for _, l := range r.Levels {
		for _, rm := range l.ToVerify {
			remedy = remedy || strings.Contains(rm.Remedy, "--workspace-id")
		}
	}
	if r.Levels[0].Status != reports.Partial || !remedy {
		t.Errorf("core-only without --workspace-id: core %s, to verify %+v; want partial with the --workspace-id remedy", r.Levels[0].Status, r.Levels[0].ToVerify)
	}
}

// noRestart are the MUSTs a proof run leaves unverified whatever the
// target: its runners give no --restart-cmd (durability_test.go proves
// those).
var noRestart = []string{"CORE-DUR-001", "CORE-DUR-002"}

// assertOnlyUnverified checks that a legal target gets no failure, error
// or warning, and leaves no MUST unverified beyond the durability ones and
// allowed.
func assertOnlyUnverified(t *testing.T, name string, spec targetSpec, levels string, allowed []string, extra ...string) {
	t.Helper()
	_, r, _ := proof(t, name, spec, levels, extra...)
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
		t.Errorf("%s is legal but the suite reports %v: %s", name, bad, messages(r, bad))
	}
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range verdicts(r, reports.Unverified) {
		rq, _ := reg.Lookup(id)
		if rq.Keyword.Mandatory() && rq.Observable && !slices.Contains(noRestart, id) && !slices.Contains(allowed, id) {
			t.Errorf("%s: MUST %s is unverified: %s", name, id, messages(r, []string{id}))
		}
	}
}
