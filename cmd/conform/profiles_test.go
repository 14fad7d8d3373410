package main

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/reports"
)

func TestProfileHelpers(t *testing.T) {
	got := withoutFlags([]string{"--profiles", "a,b", "--seed", "3", "-out=x", "--out", "y", "--profiles=c", "--format", "text"}, "profiles", "out")
	if want := []string{"--seed", "3", "--format", "text"}; !reflect.DeepEqual(got, want) {
		t.Errorf("withoutFlags = %q, want %q", got, want)
	}
	for _, tc := range []struct{ a, b, want int }{{0, 0, 0}, {0, 1, 1}, {1, 2, 2}, {2, 1, 2}, {0, 3, 2}, {-1, 0, 2}} {
		if got := worseExit(tc.a, tc.b); got != tc.want {
			t.Errorf("worseExit(%d, %d) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
	for args, want := range map[string]string{"--profile openharness": "openharness", "-profile=x": "x", "--addr :1 --profile y": "y", "--addr :1": "", "-- --profile z": ""} {
		got, ok := profileArg(strings.Fields(args))
		if got != want || ok != (want != "") {
			t.Errorf("profileArg(%q) = %q, %v; want %q", args, got, ok, want)
		}
	}
}

// The profile plumbing on the command line: mistakes are exit 2 with a
// message naming them, and list shows the profile.
func TestProfileUsageErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--profile", "openharness"}, "no target: profile openharness"},
		{[]string{"run", "--profile", "gold", "--target", "http://127.0.0.1:1"}, "unknown profile"},
		{[]string{"run", "--profile", "openharness", "--target", "http://127.0.0.1:1", "--levels", "core"}, "drop levels"},
		{[]string{"run", "--target", "http://127.0.0.1:1", "--", "agent"}, "--profile acp-harbor"},
		{[]string{"run", "--profile", "openharness", "--target", "http://127.0.0.1:1", "--"}, "nothing after --"},
		{[]string{"selftest", "--profiles", "openharness,openharness"}, "listed twice"},
		{[]string{"selftest", "--profiles", "gold"}, "unknown profile"},
		{[]string{"selftest", "--profiles", "openharness,acp-harbor", "--format", "json"}, "--format json prints one report"},
		{[]string{"serve", "--profile", "acp-harbor"}, "openharness only"},
	} {
		args := tc.args
		if args[0] != "serve" { // the report directory goes before any --
			args = append([]string{args[0], "--out", t.TempDir()}, args[1:]...)
		}
		b, err := exec.Command(conformBin, args...).CombinedOutput()
		ee, ok := err.(*exec.ExitError)
		if !ok || ee.ExitCode() != 2 || !strings.Contains(string(b), tc.want) {
			t.Errorf("conform %v: %v, want exit 2 naming %q:\n%s", tc.args, err, tc.want, b)
		}
	}
}

func TestProfileListed(t *testing.T) {
	t.Parallel()
	out, err := exec.Command(conformBin, "list", "--levels", "openharness").Output()
	if err != nil || !strings.Contains(string(out), "OH-VER-004") || !strings.Contains(string(out), "conform run --profile openharness --target URL") {
		t.Errorf("list --levels openharness: %v\n%s", err, out)
	}
	js, err := exec.Command(conformBin, "list", "--format", "json", "--levels", "core").Output()
	if err != nil || strings.Contains(string(js), "OH-") {
		t.Errorf("list --levels core shows a profile's requirements: %v", err)
	}
}

// `conform serve --profile openharness` serves the reference Engine, and
// `conform run --profile openharness` against it is conformant; an
// unreachable Engine is exit 2 with a hint, never a verdict.
func TestServeProfileOpenHarness(t *testing.T) {
	t.Parallel()
	// A backstop that kills the server if the test hangs, not a deadline
	// for the run: on a loaded machine the test has taken four minutes.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	srv := exec.CommandContext(ctx, conformBin, "serve", "--profile", "openharness", "--addr", "127.0.0.1:0")
	srv.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey)
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "conform serve: OpenHarness Engine listening on ")
	if !ok {
		t.Fatalf("serve printed %q", line)
	}
	code, console, r, _ := runConform(t, "run", "--profile", "openharness", "--target", url)
	if code != 0 || r == nil || r.Levels[0].Status != reports.Conformant {
		t.Errorf("run against conform serve --profile openharness: exit %d\n%s", code, console)
	}
	code, console, r, _ = runConform(t, "run", "--profile", "openharness", "--target", "http://127.0.0.1:1/openharness")
	if code != 2 || r == nil || r.Stopped == nil || r.Stopped.Stage != "reach" || !strings.Contains(console, "hint:") {
		t.Errorf("unreachable Engine: exit %d, stopped %+v\n%s", code, r.Stopped, console)
	}
	if strings.Contains(console, testKey) {
		t.Error("the key reached the console")
	}
	var raw map[string]any
	if b, err := json.Marshal(r); err == nil {
		json.Unmarshal(b, &raw)
	}
	if raw["protocol_version"] != "openharness/1.0.0-draft" {
		t.Errorf("a stopped profile run reports protocol_version %v", raw["protocol_version"])
	}
}

// judgeProfileFault checks a profile run against its reference with one
// MUST fault: exactly the row's requirements fail (tolerated ones may),
// nothing errs, and the exit code is 1.
func judgeProfileFault(t *testing.T, code int, r *reports.Report, fails, tolerated []string) {
	t.Helper()
	failed := verdicts(r, reports.Fail)
	for _, id := range fails {
		if !slices.Contains(failed, id) {
			t.Errorf("%s not reported as failed (failed: %v)%s", id, failed, messages(r, fails))
		}
	}
	for _, id := range failed {
		if !slices.Contains(fails, id) && !slices.Contains(tolerated, id) {
			t.Errorf("unrelated requirement %s failed: %s", id, messages(r, []string{id}))
		}
	}
	if errs := verdicts(r, reports.Error); len(errs) > 0 {
		t.Errorf("errors %v: %s", errs, messages(r, errs))
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
}

// judgeProfileShould checks a profile run with one SHOULD fault: its
// requirements warn, nothing fails, errs or stays unverified, exit 0.
func judgeProfileShould(t *testing.T, code int, r *reports.Report, warns ...string) {
	t.Helper()
	warned := verdicts(r, reports.Warn)
	for _, id := range warns {
		if !slices.Contains(warned, id) {
			t.Errorf("%s not reported as a warning (warnings: %v)", id, warned)
		}
	}
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Unverified)...); len(bad) > 0 || code != 0 {
		t.Errorf("a SHOULD fault, but exit %d and %v: %s", code, bad, messages(r, bad))
	}
}

// judgeProfileClean checks a profile run against a conformant target:
// no failure, error, warning or unverified requirement, exit 0.
func judgeProfileClean(t *testing.T, what string, code int, r *reports.Report) {
	t.Helper()
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), append(verdicts(r, reports.Warn), verdicts(r, reports.Unverified)...)...); len(bad) > 0 || code != 0 {
		t.Errorf("%s: exit %d, findings %v: %s", what, code, bad, messages(r, bad))
	}
}
