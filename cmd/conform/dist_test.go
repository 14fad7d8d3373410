package main

// Distribution: what makes conform a CI gate people adopt — LICENSE,
// CHANGELOG.md, the build script and the Dockerfile, the GitHub Action
// (action.yml, .ci/action/*), the GitLab template and docs/ci.md. The CI
// scripts are run the way a runner runs them (GITHUB_OUTPUT,
// GITHUB_STEP_SUMMARY, RUNNER_TEMP… as temporary files, conform on PATH)
// against a real `conform serve` or an in-test reference Harness.

import (
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/hex"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// distTimeout bounds one CI script: a hang guard, not a speed target.
const distTimeout = 5 * time.Minute

// repoRoot is the module root (go test runs in cmd/conform).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("no go.mod at %s: %v", root, err)
	}
	return root
}

func readRepoFile(t *testing.T, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// goMinor is the Go release go.mod names, e.g. "1.26".
func goMinor(t *testing.T) string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(readRepoFile(t, "go.mod"))
	if m == nil {
		t.Fatal("go.mod has no go line")
	}
	return m[1]
}

// ciEnv is a CI script's environment: this process's without anything that
// steers the scripts (CONFORM_*, GITHUB_*, INPUT_*, RUNNER_*, GITLAB_CI,
// CI), the test binary's directory first on PATH (it holds only
// `conform`), and extra.
func ciEnv(extra map[string]string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "CONFORM_") || strings.HasPrefix(k, "GITHUB_") || strings.HasPrefix(k, "INPUT_") ||
			strings.HasPrefix(k, "RUNNER_") || k == "GITLAB_CI" || k == "CI" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+filepath.Dir(conformBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	for k, v := range extra {
		env = append(env, k+"="+v)
	}
	return env
}

// runSh runs a shell script file (or, with -c, a command string) in dir
// and returns its exit code and combined output.
func runSh(t *testing.T, dir string, env []string, args ...string) (int, string) {
	t.Helper()
	release := direct() // first: the hang guard below times the script, not the wait for a slot
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), distTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", args...)
	cmd.Dir, cmd.Env = dir, env
	b, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("sh %v hung; output so far:\n%s", args, b)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}

// ghRunner is a GitHub Actions runner as the action's scripts see it.
type ghRunner struct {
	workspace, output, summary, path string
	env                              map[string]string
}

func newGitHubRunner(t *testing.T) *ghRunner {
	t.Helper()
	tmp := t.TempDir()
	r := &ghRunner{
		workspace: t.TempDir(),
		output:    filepath.Join(tmp, "github_output"),
		summary:   filepath.Join(tmp, "step_summary.md"),
		path:      filepath.Join(tmp, "github_path"),
	}
	for _, f := range []string{r.output, r.summary, r.path} {
		if err := os.WriteFile(f, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r.env = map[string]string{
		"CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "push",
		"GITHUB_WORKSPACE": r.workspace, "RUNNER_TEMP": tmp, "GITHUB_ACTION_PATH": repoRoot(t),
		"GITHUB_OUTPUT": r.output, "GITHUB_STEP_SUMMARY": r.summary, "GITHUB_PATH": r.path,
	}
	return r
}

// runEnv is the run step's environment: action.yml passes each input as
// INPUT_<NAME> (upper case, - as _).
func (r *ghRunner) runEnv(inputs map[string]string) []string {
	env := map[string]string{}
	for k, v := range r.env {
		env[k] = v
	}
	for k, v := range inputs {
		env["INPUT_"+strings.ToUpper(strings.ReplaceAll(k, "-", "_"))] = v
	}
	return ciEnv(env)
}

// run runs the action's run step (.ci/action/github.sh) in the workspace.
func (r *ghRunner) run(t *testing.T, inputs map[string]string) (int, string) {
	t.Helper()
	return runSh(t, r.workspace, r.runEnv(inputs), filepath.Join(repoRoot(t), ".ci", "action", "github.sh"))
}

// outputs parses $GITHUB_OUTPUT (single-line KEY=VALUE entries; a later one
// wins, as on GitHub).
func (r *ghRunner) outputs(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(r.output)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if line == "" {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.Contains(k, "<<") {
			t.Fatalf("GITHUB_OUTPUT line %q is not KEY=VALUE", line)
		}
		out[k] = v
	}
	return out
}

func (r *ghRunner) stepSummary(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(r.summary)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// annotation is one ::error / ::warning workflow command, unescaped.
type annotation struct{ kind, title, message string }

var annotationLine = regexp.MustCompile(`^::(error|warning|notice)( [^:]*)?::(.*)$`)

func unescapeData(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%25", "%").Replace(s)
}

func unescapeProperty(s string) string {
	return strings.NewReplacer("%0D", "\r", "%0A", "\n", "%3A", ":", "%2C", ",", "%25", "%").Replace(s)
}

// annotations parses the workflow commands of a step's log, failing on a
// malformed one (an unescaped newline would split it: every line that
// starts with :: must parse).
func annotations(t *testing.T, log string) []annotation {
	t.Helper()
	var as []annotation
	for _, line := range strings.Split(log, "\n") {
		if !strings.HasPrefix(line, "::") {
			continue
		}
		m := annotationLine.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("malformed workflow command %q", line)
			continue
		}
		a := annotation{kind: m[1], message: unescapeData(m[3])}
		for _, p := range strings.Split(strings.TrimSpace(m[2]), ",") {
			if k, v, ok := strings.Cut(p, "="); ok && k == "title" {
				a.title = unescapeProperty(v)
			}
		}
		as = append(as, a)
	}
	return as
}

func ofKind(as []annotation, kind string) []annotation {
	var out []annotation
	for _, a := range as {
		if a.kind == kind {
			out = append(out, a)
		}
	}
	return out
}

// noKey fails if the API key shows anywhere a CI reader would see it.
func noKey(t *testing.T, key string, texts map[string]string) {
	t.Helper()
	for name, text := range texts {
		if strings.Contains(text, key) {
			t.Errorf("the API key appears in %s", name)
		}
	}
}

// lineWatcher is a command's combined output that closes seen once the
// output contains want.
type lineWatcher struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *lineWatcher) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *lineWatcher) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// startServe starts `conform serve` on addr with the test key and extra
// flags, killed at cleanup.
func startServe(t *testing.T, addr string, flags ...string) {
	t.Helper()
	cmd := exec.Command(conformBin, append([]string{"serve", "--addr", addr}, flags...)...)
	cmd.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey)
	out := &lineWatcher{seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("conform serve --addr %s %v said:\n%s", addr, flags, out)
		}
	})
}

// The action against a conformant target: a durable `conform serve` that
// the workflow's CONFORM_RESTART_CMD restarts (given as job env, with the
// key as an input). Exit 0, the step summary is summary.md, the outputs say
// conformant, no error annotation, and the key is nowhere.
func TestDistActionConformant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	url, restart, pidFile := restartableServe(t, true)
	r := newGitHubRunner(t)
	r.env["CONFORM_RESTART_CMD"] = restart
	code, log := r.run(t, map[string]string{"target": url, "api-key": testKey, "levels": "core"})
	if code != 0 {
		serveLog, _ := os.ReadFile(filepath.Join(filepath.Dir(pidFile), "serve.log"))
		t.Fatalf("exit %d, want 0; log:\n%s\nthe restarted server's log:\n%s", code, log, serveLog)
	}
	out := r.outputs(t)
	want := map[string]string{"exit-code": "0", "result": "conformant", "core": "conformant", "failed": "", "errored": "", "stopped": "",
		"report-dir": filepath.Join(r.workspace, "conform-report")}
	for k, v := range want {
		if got, ok := out[k]; !ok || got != v {
			t.Errorf("output %s = %q (set: %v), want %q", k, got, ok, v)
		}
	}
	if !strings.Contains(out["levels"], "core=conformant") {
		t.Errorf("output levels = %q, want core=conformant in it", out["levels"])
	}
	md, err := os.ReadFile(filepath.Join(r.workspace, "conform-report", reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if sum := r.stepSummary(t); sum != string(md) || !regexp.MustCompile(`\| core \| \**conformant\**`).MatchString(sum) {
		t.Errorf("step summary is not summary.md of a conformant run:\n%s", sum)
	}
	if errs := ofKind(annotations(t, log), "error"); len(errs) > 0 {
		t.Errorf("a conformant run annotated errors: %v", errs)
	}
	for _, f := range []string{"conform.json", "junit.xml", "summary.md", "report.html", "badge-core.json"} { // as docs/ci.md lists them
		if _, err := os.Stat(filepath.Join(r.workspace, "conform-report", f)); err != nil {
			t.Errorf("report file: %v", err)
		}
	}
	noKey(t, testKey, map[string]string{"the log": log, "the step summary": r.stepSummary(t), "the outputs": fmt.Sprint(out)})
}

// The action started before its target, as a job that launches its Harness
// in the background does: the run waits (--wait-for-target) until the
// server, started only once conform says it is waiting, answers. The target
// breaks CORE-READ-004: exit 1, an ::error naming the requirement with its
// link, every output action.yml declares is written, and the summary lists
// the failure. Then the baseline round trip: `conform baseline write` from
// that report, and the action with the baseline input exits 0 with the
// failure as an expected ::warning.
func TestDistActionWaitsAndAnnotates(t *testing.T) {
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	addr := freeAddr(t)
	r := newGitHubRunner(t)
	inputs := map[string]string{"target": "http://" + addr, "api-key": testKey, "levels": "core", "wait-for-target": "2m"}

	ctx, cancel := context.WithTimeout(context.Background(), distTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", filepath.Join(repoRoot(t), ".ci", "action", "github.sh"))
	cmd.Dir, cmd.Env = r.workspace, r.runEnv(inputs)
	w := &lineWatcher{want: "waiting up to", seen: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = w, w
	defer direct()()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case <-w.seen:
		startServe(t, addr, "--fault", string(refharness.FaultLowercaseStatus))
		err = <-done
	case err = <-done:
		t.Fatalf("the action ended before conform said it was waiting for the target (%v):\n%s", err, w.String())
	}
	log := w.String()
	if ctx.Err() != nil {
		t.Fatalf("the action hung:\n%s", log)
	}
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	}
	if code != 1 {
		t.Fatalf("exit %d, want 1; log:\n%s", code, log)
	}
	if !strings.Contains(log, "--wait-for-target 2m") {
		t.Errorf("the logged command line has no --wait-for-target 2m:\n%.2000s", log)
	}
	out := r.outputs(t)
	for k, v := range map[string]string{"exit-code": "1", "result": "nonconformant", "core": "nonconformant", "failed": "CORE-READ-004"} {
		if out[k] != v {
			t.Errorf("output %s = %q, want %q", k, out[k], v)
		}
	}
	var meta actionMeta
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "action.yml")), &meta); err != nil {
		t.Fatal(err)
	}
	for name := range meta.Outputs {
		if _, ok := out[name]; !ok {
			t.Errorf("action.yml declares output %q, but the run step never writes it", name)
		}
	}
	as := annotations(t, log)
	i := slices.IndexFunc(as, func(a annotation) bool { return a.kind == "error" && a.title == "CORE-READ-004 (MUST, core)" })
	if i < 0 {
		t.Fatalf("no ::error for CORE-READ-004 in %v", as)
	}
	if !strings.Contains(as[i].message, "https://") || !strings.Contains(as[i].message, "/status") {
		t.Errorf("CORE-READ-004 annotation %q lacks the finding or the spec link", as[i].message)
	}
	if !slices.ContainsFunc(as, func(a annotation) bool { return a.kind == "error" && strings.Contains(a.title, "not conformant") }) {
		t.Errorf("no overall ::error saying the target is not conformant: %v", as)
	}
	if n := len(ofKind(as, "error")); n > 10 {
		t.Errorf("%d error annotations: GitHub shows 10 per step", n)
	}
	sum := r.stepSummary(t)
	if !strings.Contains(sum, "## Failures") || !strings.Contains(sum, "CORE-READ-004") {
		t.Errorf("step summary lacks the failure:\n%s", sum)
	}
	noKey(t, testKey, map[string]string{"the log": log, "the step summary": sum, "the outputs": fmt.Sprint(out)})

	t.Run("baseline", func(t *testing.T) {
		if c, help := runSh(t, r.workspace, ciEnv(nil), "-c", `conform baseline write -h`); c != 0 {
			t.Skipf("conform baseline write is not wired in yet (exit %d): %.300s", c, help)
		}
		// The docs' command, as written there.
		c, blog := runSh(t, r.workspace, ciEnv(nil), "-c", "conform baseline write --report conform-report/conform.json --out conform-baseline.yaml")
		if c != 0 {
			t.Fatalf("baseline write: exit %d:\n%s", c, blog)
		}
		r2 := newGitHubRunner(t)
		r2.workspace = r.workspace
		code, log := r2.run(t, map[string]string{"target": "http://" + addr, "api-key": testKey, "levels": "core", "baseline": "conform-baseline.yaml", "out": "with-baseline"})
		if code != 0 {
			t.Fatalf("with the baseline: exit %d, want 0:\n%s", code, log)
		}
		out := r2.outputs(t)
		if out["failed"] != "" || !strings.Contains(out["expected"], "CORE-READ-004") || out["stale"] != "" {
			t.Errorf("outputs failed=%q expected=%q stale=%q; want CORE-READ-004 expected, nothing failed or stale", out["failed"], out["expected"], out["stale"])
		}
		as := annotations(t, log)
		if errs := ofKind(as, "error"); len(errs) > 0 {
			t.Errorf("expected failures annotated as errors: %v", errs)
		}
		if !slices.ContainsFunc(ofKind(as, "warning"), func(a annotation) bool {
			return a.title == "CORE-READ-004 (MUST, core)" && strings.Contains(a.message, "baseline")
		}) {
			t.Errorf("no ::warning calling CORE-READ-004 an expected failure: %v", as)
		}
	})
}

// The action where it cannot run conform, or conform cannot start: exit 2
// (never "not conformant"), one ::error saying why, outputs and summary
// written, and never the key.
func TestDistActionCannotRun(t *testing.T) {
	t.Parallel()
	closed := "http://" + freeAddr(t) // nothing listens there

	t.Run("empty key on a fork's pull request", func(t *testing.T) {
		t.Parallel()
		r := newGitHubRunner(t)
		r.env["GITHUB_EVENT_NAME"] = "pull_request"
		code, log := r.run(t, map[string]string{"target": closed, "api-key": ""})
		if code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, log)
		}
		errs := ofKind(annotations(t, log), "error")
		if len(errs) != 1 || !strings.Contains(errs[0].message, "api-key input is empty") ||
			!strings.Contains(errs[0].message, "secrets.HARNESS_API_KEY") || !strings.Contains(errs[0].message, "fork") {
			t.Errorf("want one ::error naming the empty api-key input, the secret and forks; got %v", errs)
		}
		// The condition it suggests must not skip the gate on push (where
		// github.event.pull_request is empty): the docs' condition.
		if len(errs) == 1 && !strings.Contains(errs[0].message, "if: github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository") {
			t.Errorf("the fork hint's if: would skip the gate on push: %q", errs[0].message)
		}
		if docs := readRepoFile(t, "docs/ci.md"); !strings.Contains(docs, "if: github.event_name != 'pull_request' || github.event.pull_request.head.repo.full_name == github.repository") {
			t.Error("docs/ci.md's fork condition is not the one the action suggests")
		}
		out := r.outputs(t)
		if out["exit-code"] != "2" || out["result"] != "inconclusive" {
			t.Errorf("outputs %v, want exit-code 2, result inconclusive", out)
		}
		if sum := r.stepSummary(t); !strings.Contains(sum, "no API key") {
			t.Errorf("step summary lacks the reason:\n%s", sum)
		}
		if _, err := os.Stat(filepath.Join(r.workspace, "conform-report")); err == nil {
			t.Error("conform ran without a key")
		}
	})

	t.Run("empty key on a push", func(t *testing.T) {
		t.Parallel()
		r := newGitHubRunner(t)
		code, log := r.run(t, map[string]string{"target": closed})
		if code != 2 || !strings.Contains(log, "api-key input is empty") || strings.Contains(log, "fork") {
			t.Errorf("exit %d, want 2 and the empty-input message without the fork hint:\n%s", code, log)
		}
	})

	t.Run("empty key on GitLab", func(t *testing.T) {
		t.Parallel()
		env := ciEnv(map[string]string{"GITLAB_CI": "true", "CI": "true", "CONFORM_TARGET": closed})
		code, log := runSh(t, t.TempDir(), env, filepath.Join(repoRoot(t), ".ci", "action", "run.sh"))
		if code != 2 || !strings.Contains(log, "masked CI/CD variable") {
			t.Errorf("exit %d, want 2 and the CI/CD variable hint:\n%s", code, log)
		}
		if strings.Contains(log, "::error") {
			t.Errorf("GitHub workflow commands in a GitLab log:\n%s", log)
		}
	})

	// The key from the job's env (no api-key input) reaches conform; the
	// target never answers: the report's stopped stage is the one error.
	t.Run("unreachable target, key from the job env", func(t *testing.T) {
		t.Parallel()
		r := newGitHubRunner(t)
		r.env["CONFORM_API_KEY"] = testKey
		code, log := r.run(t, map[string]string{"target": closed, "wait-for-target": "0", "levels": "core"})
		if code != 2 {
			t.Fatalf("exit %d, want 2:\n%s", code, log)
		}
		if strings.Contains(log, "api-key input is empty") {
			t.Fatalf("the job's CONFORM_API_KEY was overridden by the empty input:\n%s", log)
		}
		out := r.outputs(t)
		if out["result"] != "inconclusive" || out["failed"] != "" {
			t.Errorf("outputs %v: want inconclusive, nothing failed", out)
		}
		errs := ofKind(annotations(t, log), "error")
		if len(errs) != 1 {
			t.Fatalf("want one ::error for a run that could not start, got %d: %v", len(errs), errs)
		}
		if out["stopped"] != "reach" || errs[0].title != "conform could not decide (reach)" || !strings.Contains(errs[0].message, "answer") {
			t.Errorf("stopped = %q, ::error %+v; want the preflight's stage (reach) and its reason", out["stopped"], errs[0])
		}
		noKey(t, testKey, map[string]string{"the log": log, "the step summary": r.stepSummary(t)})
	})

	t.Run("key in extra-args is hidden", func(t *testing.T) {
		t.Parallel()
		const key = "sk-extra-args-secret-81a7"
		r := newGitHubRunner(t)
		code, log := r.run(t, map[string]string{"target": closed, "extra-args": "--api-key " + key + " --wait-for-target 0"})
		if code != 2 || !strings.Contains(log, "--api-key [REDACTED]") {
			t.Errorf("exit %d, want 2 and the logged command with the key hidden:\n%s", code, log)
		}
		noKey(t, key, map[string]string{"the log": log, "the step summary": r.stepSummary(t)})
	})

	t.Run("conform missing", func(t *testing.T) {
		t.Parallel()
		r := newGitHubRunner(t)
		r.env["CONFORM_BIN"] = filepath.Join(t.TempDir(), "conform")
		code, log := r.run(t, map[string]string{"target": closed, "api-key": testKey})
		if code != 2 || !strings.Contains(log, "not on PATH") {
			t.Errorf("exit %d, want 2 and 'not on PATH':\n%s", code, log)
		}
	})
}

// report.awk against reports.WriteJSON's real output, under every awk on
// this machine: hostile messages (quotes, backslashes, newlines, %, : and
// , in titles, HTML characters, non-ASCII) come out as GitHub decodes
// them; expected failures warn, stale entries error, and past ten of a kind
// the last names the rest.
func TestDistReportAwk(t *testing.T) {
	t.Parallel()
	hostile := "got \"SUBMITTED\\n\" <b>&amp;</b>\n100% wrong: a, b\tc ✓ \u2028after"
	want := strings.ReplaceAll(hostile, "\u2028", "\n")
	level := func(l string, s reports.LevelStatus) reports.LevelResult {
		return reports.LevelResult{Selection: target.Selection{Level: requirements.Level(l), Run: true}, Status: s}
	}
	r := &reports.Report{
		Format: "conform-report/v1",
		Levels: []reports.LevelResult{level("core", reports.Nonconformant), level("receipts", reports.NotClaimed)},
		Requirements: []reports.ReqResult{
			{ID: "CORE-READ-004", Level: "core", Keyword: "MUST", Link: "https://example.test/spec#task", Verdict: reports.Fail, Message: hostile},
			{ID: "CORE-AUTH-002", Level: "core", Keyword: "MUST", Verdict: reports.Fail, Message: "known", Expected: true},
			{ID: "CORE-VER-001", Level: "core", Keyword: "MUST", Verdict: reports.Pass, Stale: true},
			{ID: "CORE-VER-003", Level: "core", Keyword: "SHOULD", Verdict: reports.Warn, Message: "should"},
			{ID: "CORE-ERR-001", Level: "core", Keyword: "MUST", Verdict: reports.Error, Message: "timeout"},
			{ID: "CORE-ERR-002", Level: "core", Keyword: "MUST", Verdict: reports.Unverified, Message: "no hook"},
		},
	}
	for i := 1; i <= 11; i++ {
		r.Requirements = append(r.Requirements, reports.ReqResult{ID: fmt.Sprintf("CORE-PAGE-%03d", i), Level: "core", Keyword: "MUST", Verdict: reports.Fail, Message: "page"})
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "conform.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteJSON(f, r); err != nil {
		t.Fatal(err)
	}
	f.Close()
	stopped := *r
	stopped.Stopped = &reports.Stopped{Stage: "reach", Message: "the target did not answer: dial tcp, refused", Hint: "is it started?"}
	stoppedPath := filepath.Join(dir, "stopped.json")
	if f, err = os.Create(stoppedPath); err != nil {
		t.Fatal(err)
	}
	if err := reports.WriteJSON(f, &stopped); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The gate: an unverified MUST fails the default gate (an error with
	// its remedy); under --fail-on failures it is a warning, and listed.
	gateReport := func(name, failOn string) string {
		g := &reports.Report{Format: "conform-report/v1", Levels: []reports.LevelResult{level("core", reports.Partial)},
			Requirements: []reports.ReqResult{{ID: "CORE-DUR-001", Level: "core", Keyword: "MUST", Link: "https://example.test/spec#dur", Verdict: reports.Unverified,
				Message: "no restart command", Remedy: "give --restart-cmd"}},
			Gate: &reports.Gate{FailOn: failOn, Summary: "gate " + failOn + ": 1 observable MUST(s) unverified: CORE-DUR-001", Failed: []string{}, Errored: []string{},
				Unverified: []string{"CORE-DUR-001"}, Stale: []string{}}}
		if failOn == "unverified" {
			g.Requirements[0].Gate = reports.GateUnverified
		}
		p := filepath.Join(dir, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := reports.WriteJSON(f, g); err != nil {
			t.Fatal(err)
		}
		f.Close()
		return p
	}
	strictPath, failuresPath := gateReport("strict.json", "unverified"), gateReport("failures.json", "failures")

	script := filepath.Join(repoRoot(t), ".ci", "action", "report.awk")
	awks := map[string][]string{}
	for _, a := range [][]string{{"awk"}, {"mawk"}, {"gawk", "--posix"}, {"original-awk"}, {"nawk"}, {"busybox", "awk"}} {
		p, err := exec.LookPath(a[0])
		if err != nil {
			continue
		}
		if a[0] == "busybox" && exec.Command(p, "awk", "BEGIN{}").Run() != nil {
			continue
		}
		if real, err := filepath.EvalSymlinks(p); err == nil && a[0] != "busybox" {
			p = real
		}
		awks[strings.TrimSpace(p+" "+strings.Join(a[1:], " "))] = append([]string{p}, a[1:]...)
	}
	if len(awks) == 0 {
		t.Skip("no awk on PATH")
	}
	for name, argv := range awks {
		t.Run(filepath.Base(name), func(t *testing.T) {
			run := func(mode, file string) string {
				args := append(argv[1:], "-v", "mode="+mode, "-v", "max=10", "-f", script, file)
				b, err := exec.Command(argv[0], args...).CombinedOutput()
				if err != nil {
					t.Fatalf("%s: %v\n%s", name, err, b)
				}
				return string(b)
			}
			outs := map[string]string{}
			for _, line := range strings.Split(strings.TrimRight(run("outputs", path), "\n"), "\n") {
				k, v, _ := strings.Cut(line, "=")
				outs[k] = v
			}
			wantOuts := map[string]string{
				"core": "nonconformant", "receipts": "not_claimed", "levels": "core=nonconformant,receipts=not_claimed",
				"failed":  "CORE-READ-004,CORE-PAGE-001,CORE-PAGE-002,CORE-PAGE-003,CORE-PAGE-004,CORE-PAGE-005,CORE-PAGE-006,CORE-PAGE-007,CORE-PAGE-008,CORE-PAGE-009,CORE-PAGE-010,CORE-PAGE-011",
				"errored": "CORE-ERR-001", "warned": "CORE-VER-003", "expected": "CORE-AUTH-002", "stale": "CORE-VER-001", "stopped": "",
			}
			for k, v := range wantOuts {
				if outs[k] != v {
					t.Errorf("output %s = %q, want %q", k, outs[k], v)
				}
			}

			as := annotations(t, run("annotations", path))
			errs, warns := ofKind(as, "error"), ofKind(as, "warning")
			if len(errs) != 10 {
				t.Fatalf("%d errors, want 10 (9 and one naming the rest): %v", len(errs), errs)
			}
			if errs[0].title != "CORE-READ-004 (MUST, core)" || errs[0].message != want+"\nhttps://example.test/spec#task" {
				t.Errorf("first error = %+v\nwant title CORE-READ-004 (MUST, core), message %q", errs[0], want+"\nhttps://example.test/spec#task")
			}
			if errs[1].title != "CORE-VER-001 (MUST, core)" || !strings.Contains(errs[1].message, "stale baseline entry") {
				t.Errorf("second error = %+v, want the stale entry", errs[1])
			}
			if errs[2].title != "CORE-ERR-001 (MUST, core)" || !strings.Contains(errs[2].message, "timeout") {
				t.Errorf("third error = %+v, want the suite error", errs[2])
			}
			last := errs[9]
			// 14 errors: CORE-READ-004, the stale entry, the suite error and
			// CORE-PAGE-001 to 006 on their own, the tenth names the last five.
			if last.title != "5 more" || !strings.Contains(last.message, "CORE-PAGE-007") || !strings.Contains(last.message, "CORE-PAGE-011") || strings.Contains(last.message, "CORE-PAGE-006") {
				t.Errorf("last error = %+v, want '5 more' naming CORE-PAGE-007 to 011", last)
			}
			if len(warns) != 2 || warns[0].title != "CORE-AUTH-002 (MUST, core)" || !strings.Contains(warns[0].message, "expected failure") ||
				warns[1].title != "CORE-VER-003 (SHOULD, core)" {
				t.Errorf("warnings = %+v, want the expected failure and the SHOULD", warns)
			}

			as = annotations(t, run("annotations", stoppedPath))
			if len(as) == 0 || as[0].title != "conform could not decide (reach)" || as[0].message != "the target did not answer: dial tcp, refused\nhint: is it started?" {
				t.Errorf("stopped run: first annotation %+v, want the stop reason and hint", as)
			}
			if slices.ContainsFunc(as, func(a annotation) bool { return a.title == "CORE-ERR-001 (MUST, core)" }) {
				t.Errorf("a stopped run annotates each undecided requirement: %v", as)
			}

			for _, tc := range []struct{ path, kind, says string }{
				{strictPath, "error", "the gate fails on it (--fail-on unverified)"},
				{failuresPath, "warning", "the gate lets it through (--fail-on failures)"},
			} {
				as := annotations(t, run("annotations", tc.path))
				if len(as) != 1 || as[0].kind != tc.kind || as[0].title != "CORE-DUR-001 (MUST, core)" || !strings.Contains(as[0].message, tc.says) ||
					!strings.Contains(as[0].message, "no restart command\nto verify: give --restart-cmd\nhttps://example.test/spec#dur") {
					t.Errorf("%s: annotations %+v, want one %s saying %q with the reason, the remedy and the link", filepath.Base(tc.path), as, tc.kind, tc.says)
				}
				outs := run("outputs", tc.path)
				for _, want := range []string{"unverified=CORE-DUR-001\n", "gate=gate ", "fail-on="} {
					if !strings.Contains(outs, want) {
						t.Errorf("%s: outputs lack %q:\n%s", filepath.Base(tc.path), want, outs)
					}
				}
			}
		})
	}
}

// The build script builds what the Dockerfile and the action ship: static,
// -trimpath, stripped, the commit stamped and the version the source's;
// VERSION, which once stamped a version, is refused; the action's build
// step stamps its ref when that is a commit and puts the binary on
// GITHUB_PATH; a commit that would break the ldflags is refused.
func TestDistBuildScripts(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles conform with the release flags")
	}
	t.Parallel()
	root := repoRoot(t)
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "out", "conform")
	code, log := runSh(t, tmp, ciEnv(map[string]string{"COMMIT": "0123456789abcdef"}), filepath.Join(root, ".ci", "build.sh"), bin)
	if code != 0 {
		t.Fatalf("build.sh: exit %d:\n%s", code, log)
	}
	v, err := exec.Command(bin, "version").CombinedOutput()
	if want := "conform " + releaseVersion + " (commit 0123456789abcdef, "; err != nil || !strings.HasPrefix(string(v), want) || !strings.Contains(log, want) {
		t.Errorf("conform version = %q (%v), build.sh said %q; want %q", v, err, log, want)
	}
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	// (Go records no -ldflags under -trimpath: the ELF shows -s -w below.)
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("build settings CGO_ENABLED=%q -trimpath=%q; want 0 and true", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	if runtime.GOOS == "linux" {
		ef, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer ef.Close()
		for _, p := range ef.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has an ELF interpreter: not static")
			}
		}
		for _, s := range ef.Sections {
			if s.Name == ".symtab" || strings.HasPrefix(s.Name, ".debug") || strings.HasPrefix(s.Name, ".zdebug") {
				t.Errorf("the binary has section %s: not stripped (-s -w)", s.Name)
			}
		}
	}

	// The action's build step, as the runner runs it, used at a commit
	// (`uses: harn-conform/conform@<sha>`) and at a tag.
	for ref, want := range map[string]string{
		"a808f5703305f067368d05218f2fa79f07766b4b": "conform " + releaseVersion + " (commit a808f5703305f067368d05218f2fa79f07766b4b, ",
		"v0.2.0": "conform " + releaseVersion + " (",
	} {
		r := newGitHubRunner(t)
		r.env["CONFORM_ACTION_REF"] = ref
		r.env["GITHUB_ACTION_PATH"] = copyActionCheckout(t)
		code, log = runSh(t, r.workspace, ciEnv(r.env), filepath.Join(r.env["GITHUB_ACTION_PATH"], ".ci", "action", "build.sh"))
		if code != 0 {
			t.Fatalf("action build.sh: exit %d:\n%s", code, log)
		}
		ghPath, _ := os.ReadFile(r.path)
		dir := strings.TrimSpace(string(ghPath))
		if dir == "" {
			t.Fatal("the build step added nothing to GITHUB_PATH")
		}
		v, err := exec.Command(filepath.Join(dir, "conform"), "version").CombinedOutput()
		if err != nil || !strings.HasPrefix(string(v), want) || (!strings.Contains(want, "commit") && strings.Contains(string(v), "commit")) {
			t.Errorf("used at %s: conform version = %q (%v), want %q…", ref, v, err, want)
		}
	}

	code, log = runSh(t, tmp, ciEnv(map[string]string{"COMMIT": "c1 -X main.evil=1"}), filepath.Join(root, ".ci", "build.sh"), bin)
	if code != 2 || !strings.Contains(log, "COMMIT may hold") {
		t.Errorf("a COMMIT with spaces: exit %d, want 2 and a refusal:\n%s", code, log)
	}
	code, log = runSh(t, tmp, ciEnv(map[string]string{"VERSION": "v9.9.9"}), filepath.Join(root, ".ci", "build.sh"), bin)
	if code != 2 || !strings.Contains(log, "cmd/conform/version.go") {
		t.Errorf("VERSION set: exit %d, want 2 and the pointer to the source's version:\n%s", code, log)
	}
}

// copyActionCheckout is the action as the runner downloads it: the
// repository's files without .git (so build.sh cannot ask git for the
// commit), here the module's sources and the CI scripts.
func copyActionCheckout(t *testing.T) string {
	t.Helper()
	root := repoRoot(t)
	dst := t.TempDir()
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() {
			switch d.Name() {
			case ".git", "dist", "conform-report", "node_modules":
				return filepath.SkipDir
			}
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if !d.Type().IsRegular() || d.Name() == ".git" {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// The Dockerfile builds through .ci/build.sh with the version and commit as
// build arguments, on the Go release go.mod names, into a non-root static
// image whose entrypoint is conform; .dockerignore keeps reports, binaries
// and .git out of the context but not what the build needs.
func TestDistDockerfile(t *testing.T) {
	t.Parallel()
	df := readRepoFile(t, "Dockerfile")
	for _, want := range []string{
		"ARG GO_VERSION=" + goMinor(t) + "\n",
		"FROM golang:${GO_VERSION} AS build",
		"ARG COMMIT",
		`COMMIT="${COMMIT}" sh .ci/build.sh /out/conform`,
		"FROM gcr.io/distroless/static:debug-nonroot", // busybox: --restart-cmd runs sh -c
		"WORKDIR /work", "USER 65532:65532",
		`ENTRYPOINT ["conform"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	if regexp.MustCompile(`\bVERSION\b`).MatchString(df) {
		t.Error("the Dockerfile still passes a VERSION: the version is the source's")
	}
	if build := readRepoFile(t, ".ci/build.sh"); !strings.Contains(build, `CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags"`) || !strings.Contains(build, `ldflags="-s -w"`) {
		t.Error(".ci/build.sh no longer builds with CGO_ENABLED=0 -trimpath -ldflags \"-s -w …\"")
	}
	var patterns []string
	for _, line := range strings.Split(readRepoFile(t, ".dockerignore"), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimPrefix(line, "/"))
		}
	}
	ignored := func(p string) bool {
		for _, pat := range patterns {
			for _, cand := range []string{p, strings.SplitN(p, "/", 2)[0]} {
				if ok, _ := filepath.Match(pat, cand); ok {
					return true
				}
			}
			if strings.HasPrefix(pat, "**/") {
				if ok, _ := filepath.Match(strings.TrimPrefix(pat, "**/"), filepath.Base(p)); ok {
					return true
				}
			}
		}
		return false
	}
	for _, p := range []string{".git", "conform-report", "conform", "openapi.test", "bin", "cmd/conform/conform.test", "dist"} {
		if !ignored(p) {
			t.Errorf(".dockerignore does not exclude %s", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", ".ci/build.sh", "cmd/conform/main.go", "fixtures/schemas/conform-report.v1.schema.json", "LICENSE"} {
		if ignored(p) {
			t.Errorf(".dockerignore excludes %s, which the build needs", p)
		}
	}
}

// The image itself, where a container engine answers: it builds, runs
// `conform version` with the stamped version, as the non-root user in
// /work. Skipped, with the reason, where none does.
func TestDistDockerImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a container image")
	}
	engine := ""
	for _, e := range []string{"docker", "podman", "buildah"} {
		if _, err := exec.LookPath(e); err == nil {
			engine = e
			break
		}
	}
	if engine == "" {
		t.Skip("no docker, podman or buildah on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	if b, err := exec.CommandContext(ctx, engine, "info").CombinedOutput(); err != nil {
		t.Skipf("%s is on PATH but does not answer (%v): %.300s", engine, err, b)
	}
	tag := fmt.Sprintf("localhost/conform-disttest:%d", os.Getpid())
	build := []string{"build", "--build-arg", "COMMIT=feedface", "-t", tag, repoRoot(t)}
	if engine == "buildah" {
		build[0] = "bud"
	}
	if b, err := exec.CommandContext(ctx, engine, build...).CombinedOutput(); err != nil {
		t.Fatalf("%s build: %v\n%s", engine, err, b)
	}
	t.Cleanup(func() { exec.Command(engine, "rmi", "-f", tag).Run() })
	if engine == "buildah" {
		t.Log("buildah builds but does not run images: the image was built, not run")
		return
	}
	b, err := exec.CommandContext(ctx, engine, "run", "--rm", tag, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(b), "conform "+releaseVersion+" (commit feedface") {
		t.Errorf("%s run %s version = %q (%v), want the stamped version and commit", engine, tag, b, err)
	}
	b, err = exec.CommandContext(ctx, engine, "image", "inspect", "--format", "{{.Config.User}} {{.Config.WorkingDir}}", tag).CombinedOutput()
	if err != nil || strings.TrimSpace(string(b)) != "65532:65532 /work" {
		t.Errorf("image user and workdir = %q (%v), want 65532:65532 /work", b, err)
	}
}

// actionMeta is what the tests read of action.yml.
type actionMeta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Inputs      map[string]struct {
		Description string `yaml:"description"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Outputs map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Runs struct {
		Using string `yaml:"using"`
		Steps []struct {
			ID    string            `yaml:"id"`
			If    string            `yaml:"if"`
			Uses  string            `yaml:"uses"`
			Shell string            `yaml:"shell"`
			Run   string            `yaml:"run"`
			With  map[string]string `yaml:"with"`
			Env   map[string]string `yaml:"env"`
		} `yaml:"steps"`
	} `yaml:"runs"`
}

// action.yml is a composite action whose inputs reach the scripts only as
// environment variables (never spliced into a script), whose scripts exist,
// whose outputs come from the run step, and which uploads the reports
// whatever the verdict.
func TestDistActionMetadata(t *testing.T) {
	t.Parallel()
	raw := readRepoFile(t, "action.yml")
	var a actionMeta
	if err := yaml.Unmarshal([]byte(raw), &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Name == "" || a.Description == "" || a.Runs.Using != "composite" {
		t.Errorf("name %q, description %q, runs.using %q: want both set and composite", a.Name, a.Description, a.Runs.Using)
	}
	for _, in := range []string{"target", "api-key", "levels", "wait-for-target", "baseline", "out", "extra-args", "conform-ref"} {
		if _, ok := a.Inputs[in]; !ok {
			t.Errorf("no input %q", in)
		}
	}
	if d := a.Inputs["wait-for-target"].Default; d != "60s" {
		t.Errorf("wait-for-target defaults to %q, want 60s", d)
	}
	if d := a.Inputs["api-key"].Description; !strings.Contains(d, "secret") {
		t.Errorf("the api-key input does not say to pass a secret: %q", d)
	}
	github := readRepoFile(t, ".ci/action/github.sh")
	used := map[string]bool{}
	var uploads, setupGo, cache bool
	for i, s := range a.Runs.Steps {
		if strings.Contains(s.Run, "${{") {
			t.Errorf("step %d splices an expression into its script (pass it through env): %q", i, s.Run)
		}
		if s.Run != "" && s.Shell == "" {
			t.Errorf("step %d runs a script without a shell", i)
		}
		for _, m := range regexp.MustCompile(`\$GITHUB_ACTION_PATH/([^"\s]+)`).FindAllStringSubmatch(s.Run, -1) {
			if _, err := os.Stat(filepath.Join(repoRoot(t), m[1])); err != nil {
				t.Errorf("step %d runs %s: %v", i, m[1], err)
			}
		}
		for k, v := range s.Env {
			for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(v, -1) {
				used[m[1]] = true
				if want := "INPUT_" + strings.ToUpper(strings.ReplaceAll(m[1], "-", "_")); s.ID == "run" && k != want {
					t.Errorf("run step passes input %s as %s, want %s", m[1], k, want)
				}
			}
			if s.ID == "run" && !strings.Contains(github, k) {
				t.Errorf("github.sh never reads %s", k)
			}
		}
		for _, text := range append(append([]string{s.If}, mapValues(s.With)...), mapValues(s.Env)...) {
			for _, m := range regexp.MustCompile(`inputs\.([a-z-]+)`).FindAllStringSubmatch(text, -1) {
				used[m[1]] = true
			}
		}
		if strings.HasPrefix(s.Uses, "actions/setup-go@") {
			setupGo = true
			// setup-go's cache keys on files inside the workspace: pointed
			// at the action's go.sum it cannot cache and warns every run.
			if s.With["cache"] != "false" || s.With["cache-dependency-path"] != "" {
				t.Errorf("setup-go with %v: want cache: false (the cache step keeps the Go caches)", s.With)
			}
		}
		if strings.HasPrefix(s.Uses, "actions/cache@") {
			cache = true
			if s.If != "steps.cache.outputs.key != ''" || s.With["key"] != "${{ steps.cache.outputs.key }}" ||
				!strings.Contains(s.With["path"], "${{ steps.cache.outputs.gomodcache }}") || !strings.Contains(s.With["path"], "${{ steps.cache.outputs.gocache }}") {
				t.Errorf("actions/cache step if %q with %v: want the cache step's key and directories", s.If, s.With)
			}
		}
		if strings.HasPrefix(s.Uses, "actions/upload-artifact@") {
			uploads = true
			if !strings.Contains(s.If, "always()") {
				t.Errorf("the upload step runs only on success: if %q", s.If)
			}
		}
	}
	for in := range a.Inputs {
		if !used[in] {
			t.Errorf("input %q is declared but no step uses it", in)
		}
	}
	if !setupGo || !uploads || !cache {
		t.Errorf("setup-go step %v, cache step %v, upload-artifact step %v: want all three", setupGo, cache, uploads)
	}
	// result: every value run.sh writes, and only those, documented.
	script := readRepoFile(t, ".ci/action/run.sh")
	for _, v := range []string{"conformant", "passed", "nonconformant", "inconclusive"} {
		if !regexp.MustCompile(`(echo |result=)` + v + `\b`).MatchString(script) {
			t.Errorf(".ci/action/run.sh never writes result %s", v)
		}
		if !regexp.MustCompile(`\b` + v + ` \(`).MatchString(a.Outputs["result"].Description) {
			t.Errorf("action.yml does not document result %s (with what it means): %q", v, a.Outputs["result"].Description)
		}
	}
	if strings.Contains(raw, "result=error") {
		t.Error("action.yml documents result=error, which run.sh never writes")
	}
	for name, o := range a.Outputs {
		if o.Value != "${{ steps.run.outputs."+name+" }}" || o.Description == "" {
			t.Errorf("output %s = %q (%q), want the run step's output of that name, described", name, o.Value, o.Description)
		}
	}
}

func mapValues(m map[string]string) []string {
	var vs []string
	for _, v := range m {
		vs = append(vs, v)
	}
	return vs
}

// gitlabJob is what the tests read of a GitLab job.
type gitlabJob struct {
	Image     string            `yaml:"image"`
	Variables map[string]string `yaml:"variables"`
	Script    []string          `yaml:"script"`
	Artifacts struct {
		When    string   `yaml:"when"`
		Paths   []string `yaml:"paths"`
		Reports struct {
			JUnit string `yaml:"junit"`
		} `yaml:"reports"`
	} `yaml:"artifacts"`
}

// gitlabTemplate is the GitLab template's hidden job .conform.
func gitlabTemplate(t *testing.T) gitlabJob {
	t.Helper()
	var tpl map[string]gitlabJob
	if err := yaml.Unmarshal([]byte(readRepoFile(t, ".ci/gitlab/conform.gitlab-ci.yml")), &tpl); err != nil {
		t.Fatalf("the GitLab template: %v", err)
	}
	job, ok := tpl[".conform"]
	if !ok {
		t.Fatalf("no hidden job .conform in the template (have %v)", mapKeys(tpl))
	}
	return job
}

// The GitLab template is a hidden job to extend, on the Go release go.mod
// names, keeping the reports and the JUnit report whatever the verdict;
// its script, run as GitLab runs it (one shell, conform already on PATH,
// the checkout in CONFORM_SRC), gates on a broken target with exit 1 and
// leaves the files its artifacts name.
func TestDistGitLabTemplate(t *testing.T) {
	t.Parallel()
	job := gitlabTemplate(t)
	out := job.Variables["CONFORM_OUT"]
	if job.Image != "golang:"+goMinor(t) || out == "" || job.Artifacts.When != "always" ||
		!slices.Contains(job.Artifacts.Paths, out+"/") || job.Artifacts.Reports.JUnit != out+"/junit.xml" || len(job.Script) == 0 {
		t.Fatalf("job .conform: image %q, CONFORM_OUT %q, artifacts %+v, %d script lines; want golang:%s, the report directory always kept, its junit.xml as the JUnit report",
			job.Image, out, job.Artifacts, len(job.Script), goMinor(t))
	}

	if job.Variables["CONFORM_REF"] != "" {
		t.Errorf("CONFORM_REF defaults to %q: a template cannot name the commit it is in, so the user gives the include's", job.Variables["CONFORM_REF"])
	}

	// The checkout step: without CONFORM_REF it stops with exit 2 and
	// says what to set; with a commit it fetches exactly that commit (here
	// from this clone, as from GitHub).
	fetch := func(ref string) (int, string, string) {
		src := filepath.Join(t.TempDir(), "conform-src")
		vars := map[string]string{"CI": "true", "GITLAB_CI": "true"}
		for k, v := range job.Variables {
			vars[k] = v
		}
		vars["CONFORM_SRC"], vars["CONFORM_REPOSITORY"], vars["CONFORM_REF"] = src, repoRoot(t), ref
		code, log := runSh(t, t.TempDir(), ciEnv(vars), "-e", "-c", job.Script[0])
		return code, log, src
	}
	if code, log, _ := fetch(""); code != 2 || !strings.Contains(log, "set CONFORM_REF") {
		t.Errorf("no CONFORM_REF: exit %d, want 2 and what to set:\n%s", code, log)
	}
	head, err := exec.Command("git", "-C", repoRoot(t), "rev-parse", "HEAD^").Output()
	if err != nil {
		t.Logf("no git history here (%v): the fetch by commit is not tried", err)
	} else {
		sha := strings.TrimSpace(string(head))
		code, log, src := fetch(sha)
		got, _ := exec.Command("git", "-C", src, "rev-parse", "HEAD").Output()
		if code != 0 || strings.TrimSpace(string(got)) != sha {
			t.Errorf("CONFORM_REF=%s: exit %d, checked out %q:\n%s", sha, code, got, log)
		}
	}

	if testing.Short() {
		t.Skip("runs the Core suite")
	}
	url := harness(t, refharness.Options{Faults: refharness.Faults{refharness.FaultLowercaseStatus: true}})
	vars := map[string]string{"CI": "true", "GITLAB_CI": "true"}
	for k, v := range job.Variables {
		vars[k] = v
	}
	vars["CONFORM_SRC"] = repoRoot(t) // a checkout is there already: no clone
	vars["CONFORM_TARGET"], vars["CONFORM_API_KEY"], vars["CONFORM_LEVELS"] = url, testKey, "core"
	dir := t.TempDir()
	code, log := runSh(t, dir, ciEnv(vars), "-e", "-c", strings.Join(job.Script, "\n"))
	if code != 1 {
		t.Fatalf("exit %d, want 1 (the target breaks CORE-READ-004):\n%s", code, log)
	}
	if strings.Contains(log, "::error") || strings.Contains(log, "::warning") {
		t.Errorf("GitHub workflow commands in a GitLab log")
	}
	b, err := os.ReadFile(filepath.Join(dir, job.Artifacts.Reports.JUnit))
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		XMLName  xml.Name `xml:"testsuites"`
		Failures int      `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Failures == 0 {
		t.Errorf("junit.xml: %v, %d failures; want a parseable report with the failure", err, suites.Failures)
	}
	noKey(t, testKey, map[string]string{"the log": log})
}

func mapKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// fence is one fenced code block of a markdown file.
type fence struct {
	lang, body string
	line       int
}

func fences(md string) []fence {
	var fs []fence
	var cur *fence
	for i, line := range strings.Split(md, "\n") {
		switch {
		case cur == nil && strings.HasPrefix(line, "```"):
			cur = &fence{lang: strings.TrimPrefix(line, "```"), line: i + 1}
		case cur != nil && line == "```":
			fs = append(fs, *cur)
			cur = nil
		case cur != nil:
			cur.body += line + "\n"
		}
	}
	return fs
}

// docs/ci.md and the README as pasted: every YAML snippet parses, every use
// of the action gives only inputs action.yml declares, every GitLab job
// extends the template's job, and every conform command line uses only
// commands and flags conform has.
func TestDistDocsSnippets(t *testing.T) {
	t.Parallel()
	var a actionMeta
	if err := yaml.Unmarshal([]byte(readRepoFile(t, "action.yml")), &a); err != nil {
		t.Fatal(err)
	}
	helps := map[string]string{}
	help := func(cmd string) string {
		if h, ok := helps[cmd]; ok {
			return h
		}
		b, _ := exec.Command(conformBin, append(strings.Fields(cmd), "-h")...).CombinedOutput()
		helps[cmd] = string(b)
		return helps[cmd]
	}
	var actionUses, gitlabJobs, commands int
	for _, doc := range []string{"docs/ci.md", "README.md"} {
		md := readRepoFile(t, doc)
		snippets(t, doc, md, a, help, &actionUses, &gitlabJobs, &commands)
	}
	if actionUses < 2 || gitlabJobs == 0 || commands == 0 {
		t.Errorf("found %d uses of the action, %d GitLab jobs, %d conform commands: the snippets moved?", actionUses, gitlabJobs, commands)
	}
	if md := readRepoFile(t, "docs/ci.md"); !strings.Contains(md, "go build -o conform ./cmd/conform") || !strings.Contains(md, "does not work") {
		t.Error("docs/ci.md no longer says to build from a checkout (go install …@latest does not work)")
	}
}

// snippets checks the fenced blocks of one markdown file (see
// TestDistDocsSnippets), counting what it found.
func snippets(t *testing.T, doc, md string, a actionMeta, help func(string) string, actionUses, gitlabJobs, commands *int) {
	t.Helper()
	for _, f := range fences(md) {
		switch f.lang {
		case "yaml":
			var parsed any
			if err := yaml.Unmarshal([]byte(f.body), &parsed); err != nil {
				t.Errorf("%s:%d: YAML does not parse: %v", doc, f.line, err)
				continue
			}
			walkYAML(parsed, func(m map[string]any) {
				if uses, _ := m["uses"].(string); strings.HasPrefix(uses, "harn-conform/conform@") {
					*actionUses++
					with, _ := m["with"].(map[string]any)
					for k := range with {
						if _, ok := a.Inputs[k]; !ok {
							t.Errorf("%s:%d: the action has no input %q", doc, f.line, k)
						}
					}
				}
				if ext, ok := m["extends"]; ok {
					*gitlabJobs++
					if ext != ".conform" {
						t.Errorf("%s:%d: extends %v, want .conform", doc, f.line, ext)
					}
				}
			})
			if strings.Contains(f.body, "include:") && !strings.Contains(f.body, "/.ci/gitlab/conform.gitlab-ci.yml") {
				t.Errorf("%s:%d: the include does not name the template", doc, f.line)
			}
		case "sh":
			body := strings.ReplaceAll(f.body, "\\\n", " ")
			for _, line := range strings.Split(body, "\n") {
				words := strings.Fields(line)
				for i, w := range words {
					if (w != "conform" && !strings.HasSuffix(w, "/conform") && !strings.HasSuffix(w, "/conform\"")) || i+1 >= len(words) {
						continue
					}
					cmd := words[i+1]
					switch cmd {
					case "run", "serve", "selftest", "version":
					case "baseline", "report":
						if i+2 < len(words) {
							cmd += " " + words[i+2]
						}
					default:
						continue
					}
					*commands++
					h := help(cmd)
					if strings.Contains(h, "unknown command") {
						t.Errorf("%s:%d: conform has no command %q", doc, f.line, cmd)
						continue
					}
					for _, flag := range words[i+2:] {
						if slices.Contains([]string{"&&", "||", "|", ";", "&", "#"}, flag) || strings.HasPrefix(flag, ">") {
							break // the next command, a redirection or a comment
						}
						if !strings.HasPrefix(flag, "--") {
							continue
						}
						name, _, _ := strings.Cut(strings.TrimPrefix(flag, "--"), "=")
						if !regexp.MustCompile(`(^|[\s\[])--?` + regexp.QuoteMeta(name) + `\b`).MatchString(h) {
							t.Errorf("%s:%d: conform %s has no flag --%s", doc, f.line, cmd, name)
						}
					}
				}
			}
		}
	}
}

func walkYAML(v any, visit func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		visit(v)
		for _, c := range v {
			walkYAML(c, visit)
		}
	case []any:
		for _, c := range v {
			walkYAML(c, visit)
		}
	}
}

// docs/ci.md's "Try the gate locally" runs as written, with the test's
// binary as ./conform and a free port for 8080: the server starts in the
// background, the run waits for it and exits 1 (Core partial: no
// --restart-cmd), and the snippet stops the server.
func TestDistDocsTryLocally(t *testing.T) {
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	md := readRepoFile(t, "docs/ci.md")
	_, section, ok := strings.Cut(md, "## Try the gate locally")
	if !ok {
		t.Fatal("docs/ci.md has no 'Try the gate locally' section")
	}
	fs := fences(section)
	if len(fs) == 0 || fs[0].lang != "sh" {
		t.Fatal("the section's first block is not sh")
	}
	script := strings.ReplaceAll(fs[0].body, "127.0.0.1:8080", freeAddr(t))
	dir := conformDir(t)
	out, err := runGroup(t, "the snippet", dir, ciEnv(nil), "sh", "-c", script) // as typed into a shell: no -e; the background server too
	if err != nil {
		t.Fatalf("the snippet failed (%v):\n%s", err, out)
	}
	if !strings.Contains(string(out), "conform exited 1") {
		t.Errorf("the snippet did not say 'conform exited 1', as the docs do:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "conform-report", reports.JSONFile)); err != nil {
		t.Errorf("no report: %v", err)
	}
}

// LICENSE is the Apache License 2.0, verbatim, with the copyright line of
// its appendix filled in.
func TestDistLicense(t *testing.T) {
	t.Parallel()
	text := readRepoFile(t, "LICENSE")
	const filled = "   Copyright 2026 the conform authors\n"
	if !strings.Contains(text, filled) {
		t.Fatalf("LICENSE lacks %q", filled)
	}
	// SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt.
	const apache20 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
	sum := sha256.Sum256([]byte(strings.Replace(text, filled, "   Copyright [yyyy] [name of copyright owner]\n", 1)))
	if got := hex.EncodeToString(sum[:]); got != apache20 {
		t.Errorf("LICENSE is not the verbatim Apache License 2.0 text (sha256 %s)", got)
	}
}

// CHANGELOG.md follows Keep a Changelog: an Unreleased section, released
// versions as [x.y.z] with their link references, only the standard kinds
// of change.
func TestDistChangelog(t *testing.T) {
	t.Parallel()
	text := readRepoFile(t, "CHANGELOG.md")
	versions := regexp.MustCompile(`(?m)^## \[([^\]]+)\]`).FindAllStringSubmatch(text, -1)
	if len(versions) < 2 || versions[0][1] != "Unreleased" {
		t.Fatalf("want ## [Unreleased] first, then versions; got %v", versions)
	}
	semver := regexp.MustCompile(`^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	for _, v := range versions {
		if v[1] != "Unreleased" && !semver.MatchString(v[1]) {
			t.Errorf("version %q is not a semantic version", v[1])
		}
		// A release commit cannot name itself: the newest version's link
		// comes with the pins, in the commit after it (docs/releasing.md).
		if !regexp.MustCompile(`(?m)^\[`+regexp.QuoteMeta(v[1])+`\]: https://`).MatchString(text) && v[1] != releaseVersion {
			t.Errorf("no link reference for [%s]", v[1])
		}
	}
	if !strings.Contains(text, "## [0.1.0]") {
		t.Error("no 0.1.0 entry")
	}
	kinds := []string{"Added", "Changed", "Deprecated", "Removed", "Fixed", "Security"}
	for _, m := range regexp.MustCompile(`(?m)^### (.+)$`).FindAllStringSubmatch(text, -1) {
		if !slices.Contains(kinds, m[1]) {
			t.Errorf("### %s is not a Keep a Changelog kind of change %v", m[1], kinds)
		}
	}
}
