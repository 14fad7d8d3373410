package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// conformCmd runs the binary for a command that is not a run.
func conformCmd(t *testing.T, args ...string) (int, string) {
	t.Helper()
	out, err := exec.Command(conformBin, args...).CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, string(out)
}

// The known-failures workflow end to end, as a team adopting conform would
// use it: a failing run, a baseline written from its report, the same
// target passing the gate with that baseline, the fixed target failing it
// until the stale entry is removed, and report diff telling the runs apart.
func TestBaselineWorkflow(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite four times")
	}
	t.Parallel()
	broken := harness(t, refharness.Options{Faults: refharness.Faults{refharness.FaultSkipVersionCheck: true}})
	fixed := harness(t, refharness.Options{})
	run := func(url string, extra ...string) (int, *reports.Report, string) {
		code, console, r, out := runConform(t, append([]string{"run", "--target", url, "--levels", "core"}, extra...)...)
		if r == nil {
			t.Fatalf("no report; exit %d:\n%s", code, console)
		}
		return code, r, out
	}

	code, first, firstOut := run(broken)
	if code != 1 || !slices.Contains(verdicts(first, reports.Fail), "CORE-VER-001") {
		t.Fatalf("the broken target: exit %d, failed %v", code, verdicts(first, reports.Fail))
	}
	file := filepath.Join(t.TempDir(), "baseline.yaml")
	if code, out := conformCmd(t, "baseline", "write", "--report", filepath.Join(firstOut, reports.JSONFile), "--out", file); code != 0 {
		t.Fatalf("baseline write: exit %d:\n%s", code, out)
	}
	b, err := os.ReadFile(file)
	if err != nil || !strings.Contains(string(b), "CORE-VER-001") {
		t.Fatalf("the baseline does not list the failure: %v\n%s", err, b)
	}

	code, second, secondOut := run(broken, "--baseline", file)
	if code != 0 {
		t.Fatalf("the same failures with their baseline: exit %d, want 0 (levels %+v)", code, second.Levels)
	}
	if second.Baseline == nil || !slices.Contains(second.Baseline.Expected, "CORE-VER-001") {
		t.Fatalf("the report does not say which failures were expected: %+v", second.Baseline)
	}
	if !slices.Contains(verdicts(second, reports.Fail), "CORE-VER-001") {
		t.Errorf("an expected failure must keep its real verdict in the report")
	}

	code, third, thirdOut := run(fixed, "--baseline", file)
	if code != 1 || third.Baseline == nil || !slices.Contains(third.Baseline.Stale, "CORE-VER-001") {
		t.Fatalf("a fixed target with a stale baseline entry: exit %d, baseline %+v; want exit 1 and the entry stale", code, third.Baseline)
	}

	if code, out := conformCmd(t, "report", "diff", filepath.Join(thirdOut, reports.JSONFile), filepath.Join(secondOut, reports.JSONFile)); code != 1 || !strings.Contains(out, "CORE-VER-001") {
		t.Errorf("report diff fixed→broken: exit %d, want 1 naming CORE-VER-001:\n%s", code, out)
	}
	if code, out := conformCmd(t, "report", "diff", filepath.Join(secondOut, reports.JSONFile), filepath.Join(thirdOut, reports.JSONFile)); code != 0 {
		t.Errorf("report diff broken→fixed: exit %d, want 0 (nothing got worse):\n%s", code, out)
	}

	// An id that is not in the registry is the user's mistake, found
	// before any check runs.
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("format: conform-baseline/v1\nrequirements: [CORE-NOPE-999]\n"), 0o644)
	code, console, _, _ := runConform(t, "run", "--target", fixed, "--baseline", bad)
	if code != 2 || !strings.Contains(console, "CORE-NOPE-999") {
		t.Errorf("unknown id in a baseline: exit %d, want 2 naming it:\n%s", code, console)
	}
}

// The report files a CI job reads: one JUnit testcase per requirement by
// default (the id in its name), per spec on request; report.html and a
// badge per level; every file readable by others (0644).
func TestReportFiles(t *testing.T) {
	t.Parallel()
	url := harness(t, refharness.Options{})
	_, console, r, out := runConform(t, "run", "--target", url, "--levels", "core", "--label-filter", "req:CORE-VER-001")
	if r == nil {
		t.Fatalf("no report:\n%s", console)
	}
	junit, err := os.ReadFile(filepath.Join(out, reports.JUnitFile))
	if err != nil || !strings.Contains(string(junit), `name="CORE-VER-001: `) {
		t.Fatalf("junit.xml has no testcase named for CORE-VER-001: %v", err)
	}
	for _, f := range []string{reports.JSONFile, reports.JUnitFile, reports.MarkdownFile, reports.HTMLFile, "badge-core.json"} {
		fi, err := os.Stat(filepath.Join(out, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s is written %v, want 0644", f, fi.Mode().Perm())
		}
	}
	_, console, _, out = runConform(t, "run", "--target", url, "--levels", "core", "--label-filter", "req:CORE-VER-001", "--junit", "spec")
	junit, err = os.ReadFile(filepath.Join(out, reports.JUnitFile))
	if err != nil || strings.Contains(string(junit), `name="CORE-VER-001: `) {
		t.Fatalf("--junit spec still writes per-requirement testcases (%v):\n%s", err, console)
	}
}
