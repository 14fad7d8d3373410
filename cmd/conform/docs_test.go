package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/harn-conform/conform/reports"
)

// docBlock returns the first fenced code block of lang after the line
// heading in the markdown file path (relative to the repository root): the
// docs' commands, read at test time so that they cannot drift from what
// runs.
func docBlock(t *testing.T, path, heading, lang string) string {
	t.Helper()
	_, section, ok := strings.Cut(readRepoFile(t, path), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no line %q", path, heading)
	}
	for _, f := range fences(section) {
		if f.lang == lang {
			return f.body
		}
	}
	t.Fatalf("%s: no ```%s block after %q", path, lang, heading)
	return ""
}

// shellCommands counts the commands of a shell block: its lines, a
// here-document's body counting with the command that writes it, and a
// line ending in a backslash with the next.
func shellCommands(block string) int {
	n, end, cont := 0, "", false
	for _, line := range strings.Split(block, "\n") {
		switch {
		case end != "":
			if strings.TrimSpace(line) == end {
				end = ""
			}
			continue
		case strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#"):
			continue
		}
		if !cont {
			n++
		}
		cont = strings.HasSuffix(line, "\\")
		if _, tag, ok := strings.Cut(line, "<<'"); ok {
			end, _, _ = strings.Cut(tag, "'")
		}
	}
	return n
}

// docsWorkdir is a directory that looks like the checkout (its module and
// source, linked) for docs' commands that build conform from it; what the
// commands write stays in the directory.
func docsWorkdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n == "go.mod" || n == "go.sum" || e.IsDir() && !strings.HasPrefix(n, ".") && n != "docs" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// docs/ci.md's "From zero to green" reaches conformant on every level
// against conform serve, run verbatim (out of process, its port changed to
// a free one), in at most ten commands.
func TestDocsZeroToGreen(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("builds conform and runs every level")
	}
	t.Parallel()
	block := docBlock(t, "docs/ci.md", "## From zero to green", "sh")
	if n := shellCommands(block); n > 10 {
		t.Errorf("docs/ci.md's zero-to-green path has %d commands, want at most 10", n)
	}
	if !strings.Contains(block, "127.0.0.1:8080") {
		t.Fatalf("the block names no 127.0.0.1:8080 to move to a free port:\n%s", block)
	}
	dir := docsWorkdir(t)
	script := filepath.Join(dir, "zero-to-green.sh")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(block, "127.0.0.1:8080", freeAddr(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*distTimeout) // a build, then every level
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script)
	cmd.Dir, cmd.Env = dir, ciEnv(nil)
	t.Cleanup(func() { // the server the block started, if its own kill did not run
		if b, err := os.ReadFile(filepath.Join(dir, "serve.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "conform exited 0") {
		log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		t.Fatalf("the zero-to-green block: %v\n%.6000s\nserve.log:\n%.3000s", err, out, log)
	}
	b, err := os.ReadFile(filepath.Join(dir, "conform-report", reports.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Levels) != 4 {
		t.Errorf("%d levels in the report, want 4", len(r.Levels))
	}
	for _, l := range r.Levels {
		if l.Status != reports.Conformant {
			t.Errorf("%s: %s (%s), want conformant", l.Level, l.Status, l.Why)
		}
	}
}

// conformDir is a new temporary directory holding the test's binary as
// ./conform, as the docs' commands call it.
func conformDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(conformBin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "conform"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// docReport reads the conform.json a command wrote, failing with the
// command's output when there is none.
func docReport(t testing.TB, path, log string) *reports.Report {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v\n%.6000s", err, log)
	}
	var r reports.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &r
}

// byID is a report's requirements by id.
func byID(r *reports.Report) map[string]reports.ReqResult {
	m := map[string]reports.ReqResult{}
	for _, q := range r.Requirements {
		m[q.ID] = q
	}
	return m
}

// nonLoopbackIPv4 is an IPv4 address of an up interface of this machine
// that is neither loopback nor link-local, or "" when it has none.
func nonLoopbackIPv4() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, ifc := range ifs {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok {
				if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() && !ip.IsLinkLocalUnicast() {
					return ip.String()
				}
			}
		}
	}
	return ""
}

// docs/ci.md's GitLab job with a Harness service, run as GitLab runs it:
// its variables over the template's, the template's script, `conform
// serve` standing in for the service on a non-loopback address of this
// machine (a service reached by name is not loopback either). The job
// marks the CI network trusted, so the WebSocket checks run: nothing
// fails, EXT-WS-002 passes, and what is unverified is only what the job
// gives no settings for (a restart command, more actors, an OAuth2
// client). Without CONFORM_WS_TRUSTED_DEV the same target fails EXT-WS-002:
// the setting is needed.
func TestDocsGitLabServices(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and every claimed level")
	}
	t.Parallel()
	var example struct {
		Conformance struct {
			Extends  string `yaml:"extends"`
			Services []struct {
				Name  string `yaml:"name"`
				Alias string `yaml:"alias"`
			} `yaml:"services"`
			Variables map[string]string `yaml:"variables"`
		} `yaml:"conformance"`
	}
	if err := yaml.Unmarshal([]byte(docBlock(t, "docs/ci.md", "## GitLab CI", "yaml")), &example); err != nil {
		t.Fatalf("docs/ci.md's GitLab job: %v", err)
	}
	job := example.Conformance
	if job.Extends != ".conform" || len(job.Services) != 1 || job.Services[0].Alias != "harness" || job.Variables["CONFORM_TARGET"] != "http://harness:8080" {
		t.Fatalf("docs/ci.md's GitLab job is no longer a .conform job with one service, alias harness, and CONFORM_TARGET http://harness:8080: %+v", job)
	}
	if job.Variables["CONFORM_WS_TRUSTED_DEV"] != "true" {
		t.Errorf("the job does not set CONFORM_WS_TRUSTED_DEV: \"true\": against a service reached by name over plain HTTP EXT-WS-002 fails")
	}
	ip := nonLoopbackIPv4()
	if ip == "" {
		t.Skip("this machine has no up interface with a non-loopback IPv4 address to serve the stand-in service on")
	}
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	service := net.JoinHostPort(ip, port)
	startServe(t, service)
	tpl := gitlabTemplate(t)
	run := func(vars map[string]string) (int, string, *reports.Report) {
		t.Helper()
		env := map[string]string{"CI": "true", "GITLAB_CI": "true"}
		maps.Copy(env, tpl.Variables)
		maps.Copy(env, vars)
		env["CONFORM_SRC"] = repoRoot(t) // a checkout is there already: no clone
		env["CONFORM_API_KEY"] = testKey // the masked CI/CD variable
		env["CONFORM_TARGET"] = strings.Replace(env["CONFORM_TARGET"], "harness:8080", service, 1)
		dir := t.TempDir()
		code, log := runSh(t, dir, ciEnv(env), "-e", "-c", strings.Join(tpl.Script, "\n"))
		noKey(t, testKey, map[string]string{"the job's log": log})
		return code, log, docReport(t, filepath.Join(dir, env["CONFORM_OUT"], reports.JSONFile), log)
	}

	code, log, r := run(job.Variables)
	if code != 1 || r.ExitCode != 1 {
		t.Errorf("exit %d (report %d), want 1: Core is partial without a restart command", code, r.ExitCode)
	}
	vs := byID(r)
	if v := vs["EXT-WS-002"]; v.Verdict != reports.Pass {
		t.Errorf("EXT-WS-002: %s (%s), want pass", v.Verdict, v.Message)
	}
	// What the job gives no settings for, and nothing else.
	remedies := []string{"--restart-cmd", "--second-api-key-file", "--read-only-api-key-file", "--oauth-client-id"}
	for _, q := range r.Requirements {
		switch {
		case q.Verdict == reports.Fail || q.Verdict == reports.Error:
			t.Errorf("%s: %s (%s)", q.ID, q.Verdict, q.Message)
		case strings.HasPrefix(q.ID, "EXT-WS-") && q.Verdict == reports.Unverified:
			t.Errorf("%s unverified (%s): the WebSocket checks did not run", q.ID, q.Message)
		case q.Verdict == reports.Unverified && (q.Keyword == "MUST" || q.Keyword == "MUST NOT") &&
			!slices.ContainsFunc(remedies, func(f string) bool { return strings.Contains(q.Remedy, f) }):
			t.Errorf("%s unverified (%s; remedy %q): want only what the job gives no settings for (%v)", q.ID, q.Message, q.Remedy, remedies)
		}
	}
	for _, id := range []string{"CORE-DUR-001", "CORE-DUR-002"} {
		if v := vs[id]; v.Verdict != reports.Unverified {
			t.Errorf("%s: %s, want unverified (the job gives no restart command)", id, v.Verdict)
		}
	}
	if t.Failed() {
		t.Logf("the job's log:\n%.8000s", log)
	}

	// Without the setting: the WebSocket area alone, for time.
	vars := maps.Clone(job.Variables)
	delete(vars, "CONFORM_WS_TRUSTED_DEV")
	vars["CONFORM_LEVELS"], vars["CONFORM_AREAS"] = "extended", "EXT-WS"
	code, log, r = run(vars)
	if v := byID(r)["EXT-WS-002"]; code != 1 || v.Verdict != reports.Fail || !strings.Contains(v.Message, "--ws-trusted-dev") {
		t.Errorf("without CONFORM_WS_TRUSTED_DEV: exit %d, EXT-WS-002 %s (%s); want exit 1 and EXT-WS-002 failed, naming --ws-trusted-dev\n%.6000s", code, v.Verdict, v.Message, log)
	}
}

// docs/ci.md's plain-script GitHub Actions steps, run in order as a runner
// runs them (bash -eo pipefail in the workspace, RUNNER_TEMP,
// GITHUB_STEP_SUMMARY…; a later step only if: always() after a failure),
// with this repository for GitHub, `conform serve` for ./my-harness and a
// free port: the build step builds the pinned conform, the conformance
// step exits 1 (Core partial: no restart command) with its report, and the
// summary step appends summary.md to the step summary.
func TestDocsPlainScript(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("builds the pinned conform and runs every claimed level")
	}
	t.Parallel()
	block := docBlock(t, "docs/ci.md", "### With a plain script", "yaml")
	var job struct {
		Steps []struct {
			Name string            `yaml:"name"`
			Uses string            `yaml:"uses"`
			If   string            `yaml:"if"`
			Env  map[string]string `yaml:"env"`
			Run  string            `yaml:"run"`
		} `yaml:"steps"`
	}
	if err := yaml.Unmarshal([]byte(block), &job); err != nil {
		t.Fatalf("docs/ci.md's plain-script steps: %v", err)
	}
	steps := job.Steps
	const upstream, harness = "https://github.com/harn-conform/conform", "./my-harness --listen 127.0.0.1:8080"
	pin := regexp.MustCompile(regexp.QuoteMeta(upstream) + ` ([0-9a-f]{40})\b`).FindStringSubmatch(block)
	if pin == nil || !strings.Contains(block, harness) {
		t.Fatalf("the steps no longer fetch conform from %s at a commit and start %q:\n%s", upstream, harness, block)
	}
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "cat-file", "-e", pin[1]+"^{commit}").Run(); err != nil {
		t.Skipf("the pinned commit %s is not in this clone (%v): a shallow clone?", pin[1], err)
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash, the shell of a run: step on GitHub's Linux runners")
	}
	addr := freeAddr(t)
	subst := strings.NewReplacer(upstream, root, harness, "conform serve --addr "+addr, "127.0.0.1:8080", addr)
	r := newGitHubRunner(t)
	r.env["GITHUB_ENV"] = filepath.Join(r.env["RUNNER_TEMP"], "github_env")
	if err := os.WriteFile(r.env["GITHUB_ENV"], nil, 0o600); err != nil {
		t.Fatal(err)
	}
	secret := regexp.MustCompile(`^\$\{\{ secrets\.\w+ \}\}$`)
	type result struct {
		name string
		code int
		log  string
	}
	var ran []result
	failed := false
	for i, st := range steps {
		if st.Run == "" {
			continue // actions/checkout, setup-go (Go is here), upload-artifact
		}
		if failed && !strings.Contains(st.If, "always()") {
			continue
		}
		env := maps.Clone(r.env)
		for k, v := range st.Env {
			if strings.Contains(v, "${{") {
				if !secret.MatchString(v) {
					t.Fatalf("step %d: %s: %q is an expression the test does not stand in for", i, k, v)
				}
				v = testKey // the repository secret
			}
			env[k] = v
		}
		env["CONFORM_SERVE_API_KEY"] = testKey // the stand-in Harness's own configuration
		script := filepath.Join(r.env["RUNNER_TEMP"], fmt.Sprintf("step-%d.sh", i))
		if err := os.WriteFile(script, []byte(subst.Replace(st.Run)), 0o600); err != nil {
			t.Fatal(err)
		}
		// The Harness the step starts in the background lives on, in the
		// step's process group, until the test ends.
		out, err := runGroup(t, fmt.Sprintf("step %q", st.Name), r.workspace, ciEnv(env), bash, "--noprofile", "--norc", "-eo", "pipefail", script)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		failed = failed || code != 0
		ran = append(ran, result{st.Name, code, string(out)})
	}
	want := []result{{name: "build conform"}, {name: "conformance", code: 1}, {name: "conformance summary"}}
	if len(ran) != len(want) {
		t.Fatalf("ran %d steps, want %d: %+v", len(ran), len(want), ran)
	}
	for i, w := range want {
		if ran[i].name != w.name || ran[i].code != w.code {
			log, _ := os.ReadFile(filepath.Join(r.workspace, "harness.log"))
			t.Fatalf("step %q exited %d, want step %q exiting %d:\n%.6000s\nharness.log:\n%.2000s", ran[i].name, ran[i].code, w.name, w.code, ran[i].log, log)
		}
	}
	if b, err := exec.Command(filepath.Join(r.env["RUNNER_TEMP"], "conform"), "version").CombinedOutput(); err != nil {
		t.Errorf("the conform the build step built: %v\n%s", err, b)
	}
	// The pinned conform's report, read as far as this test needs it.
	var rep struct {
		Levels []struct {
			Level, Status string
		} `json:"levels"`
		Requirements []struct {
			ID, Verdict string
		} `json:"requirements"`
	}
	b, err := os.ReadFile(filepath.Join(r.workspace, "conform-report", reports.JSONFile))
	if err != nil || json.Unmarshal(b, &rep) != nil {
		t.Fatalf("the conformance step's report: %v", err)
	}
	for _, l := range rep.Levels {
		if l.Level == "core" && l.Status != "partial" {
			t.Errorf("core: %s, want partial (no restart command)", l.Status)
		}
	}
	for _, q := range rep.Requirements {
		if q.Verdict == "fail" || q.Verdict == "error" || strings.HasPrefix(q.ID, "CORE-DUR-") && q.Verdict != "unverified" {
			t.Errorf("%s: %s", q.ID, q.Verdict)
		}
	}
	md, err := os.ReadFile(filepath.Join(r.workspace, "conform-report", reports.MarkdownFile))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.stepSummary(t); got != string(md) {
		t.Errorf("the step summary is not summary.md:\n%.2000s", got)
	}
	logs := map[string]string{"the step summary": r.stepSummary(t)}
	for _, s := range ran {
		logs["the log of "+s.name] = s.log
	}
	noKey(t, testKey, logs)
}

// docs/ci.md's second-actor block, run verbatim as typed into a shell
// (conform on PATH, the port changed to a free one): conform serve makes
// the three keys, the run reads them from their files and Extended is
// conformant, the authorization checks of the second and read-only actors
// passed, no key in the output or the reports, and the block stops the
// server it started.
func TestDocsSecondActor(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and the Extended suite")
	}
	t.Parallel()
	block := docBlock(t, "docs/ci.md", "## A second actor (`--second-api-key`, `--read-only-api-key`)", "sh")
	if !strings.Contains(block, "127.0.0.1:8080") {
		t.Fatalf("the block names no 127.0.0.1:8080 to move to a free port:\n%s", block)
	}
	dir, script := t.TempDir(), strings.ReplaceAll(block, "127.0.0.1:8080", freeAddr(t))
	out, err := runGroup(t, "the block", dir, ciEnv(nil), "sh", "-c", script) // as typed: no -e; the background server too
	serveLog, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
	if err != nil {
		t.Errorf("the block ended with %v (its last command stops the server it started)", err)
	}
	r := docReport(t, filepath.Join(dir, "conform-report", reports.JSONFile), string(out))
	if r.ExitCode != 0 {
		t.Errorf("conform run exited %d, want 0", r.ExitCode)
	}
	for _, l := range r.Levels {
		if l.Level == "extended" && l.Status != reports.Conformant {
			t.Errorf("extended: %s (%s), want conformant", l.Status, l.Why)
		}
	}
	vs := byID(r)
	for _, id := range []string{"EXT-AUTHZ-001", "EXT-AUTHZ-002", "EXT-AUTHZ-008", "EXT-AUTHZ-009", "EXT-OAUTH-001"} {
		if v := vs[id]; v.Verdict != reports.Pass {
			t.Errorf("%s: %s (%s), want pass: the key files were not used", id, v.Verdict, v.Message)
		}
	}
	texts := map[string]string{"the output": string(out), "serve.log": string(serveLog)}
	for _, f := range []string{reports.JSONFile, reports.MarkdownFile, "junit.xml", "report.html"} {
		b, _ := os.ReadFile(filepath.Join(dir, "conform-report", f))
		texts[f] = string(b)
	}
	for _, f := range []string{"api-key", "second-api-key", "read-only-api-key"} {
		key, err := readKeyLine(filepath.Join(dir, "data", f), f)
		if err != nil {
			t.Fatal(err)
		}
		noKey(t, key, texts)
	}
	if t.Failed() {
		t.Logf("the block's output:\n%.6000s\nserve.log:\n%.2000s", out, serveLog)
	}
}

// The README's first block: its first line, the selftest, runs verbatim
// from the checkout and is conformant; its second, the test command, is
// what .ci/run runs (in its two parts, each a line of the script).
func TestDocsReadmeSelftest(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("builds conform and runs the selftest")
	}
	t.Parallel()
	fs := fences(readRepoFile(t, "README.md"))
	if len(fs) == 0 || fs[0].lang != "sh" {
		t.Fatal("the README's first block is not sh")
	}
	first, _, _ := strings.Cut(fs[0].body, "\n")
	if !strings.HasPrefix(first, "go run ./cmd/conform selftest ") {
		t.Fatalf("the README's first line is %q, not the selftest", first)
	}
	dir := docsWorkdir(t)
	code, out := runSh(t, dir, ciEnv(nil), "-c", first)
	if code != 0 {
		t.Fatalf("%s: exit %d, want 0\n%.6000s", first, code, out)
	}
	r := docReport(t, filepath.Join(dir, "conform-report", reports.JSONFile), out)
	run := 0
	for _, l := range r.Levels {
		if !l.Run {
			continue
		}
		run++
		if l.Status != reports.Conformant {
			t.Errorf("%s: %s (%s), want conformant", l.Level, l.Status, l.Why)
		}
	}
	if run == 0 {
		t.Error("the selftest checked no level")
	}
}

// The README's test command cannot run itself; .ci/run runs it, each part
// of it a line of the script.
func TestDocsReadmeTestCommand(t *testing.T) {
	t.Parallel()
	fs := fences(readRepoFile(t, "README.md"))
	var lines []string
	if len(fs) > 0 {
		lines = strings.Split(fs[0].body, "\n")
	}
	if len(lines) < 2 || !strings.HasPrefix(lines[1], "go test ") {
		t.Fatal("the README's first block's second line is not the test command")
	}
	command, _, _ := strings.Cut(lines[1], "#")
	script := strings.Split(readRepoFile(t, ".ci/run"), "\n")
	for _, part := range strings.Split(strings.TrimSpace(command), " && ") {
		if !slices.Contains(script, part) {
			t.Errorf(".ci/run has no line %q (the README's test command, %q)", part, strings.TrimSpace(command))
		}
	}
}

// commentExample is the example a source file's header comment quotes: the
// comment lines from the one that reads "#   "+first on, each without its
// "#   ", up to the first "#" line that the example does not go on after.
func commentExample(t *testing.T, path, first string) string {
	t.Helper()
	lines := strings.Split(readRepoFile(t, path), "\n")
	start := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "#   "+first) })
	if start < 0 {
		t.Fatalf("%s's header comment quotes no example starting %q", path, first)
	}
	var ex []string
	for i := start; i < len(lines); i++ {
		l := lines[i]
		if l == "#" && i+1 < len(lines) && strings.HasPrefix(lines[i+1], "#   ") {
			ex = append(ex, "")
			continue
		}
		body, ok := strings.CutPrefix(l, "#   ")
		if !ok {
			break
		}
		ex = append(ex, body)
	}
	return strings.Join(ex, "\n") + "\n"
}

// The examples the sources' header comments quote are the docs' blocks,
// word for word: the GitLab template's is docs/ci.md's GitLab job, the
// Dockerfile's docs/ci.md's docker commands, action.yml's the README's use
// of the action.
func TestDocsQuotedCopies(t *testing.T) {
	t.Parallel()
	if got, want := commentExample(t, ".ci/gitlab/conform.gitlab-ci.yml", "include:"), docBlock(t, "docs/ci.md", "## GitLab CI", "yaml"); got != want {
		t.Errorf("the GitLab template's header quotes\n%s\nbut docs/ci.md's GitLab job is\n%s", got, want)
	}
	docker := dockerDocBlock(t)
	if got := commentExample(t, "Dockerfile", "docker build"); docker == "" || got != docker {
		t.Errorf("the Dockerfile's header quotes\n%s\nbut docs/ci.md's docker block is\n%s", got, docker)
	}
	use := commentExample(t, "action.yml", "- uses: harn-conform/conform@")
	if readme := docBlock(t, "README.md", "## Use it as a CI gate", "yaml"); !strings.Contains(readme, use) {
		t.Errorf("action.yml's header quotes\n%s\nwhich the README's use of the action does not contain:\n%s", use, readme)
	}
}

// dockerDocBlock is docs/ci.md's sh block that builds the image, or "".
func dockerDocBlock(t *testing.T) string {
	t.Helper()
	for _, f := range fences(readRepoFile(t, "docs/ci.md")) {
		if f.lang == "sh" && strings.Contains(f.body, "docker build") {
			return f.body
		}
	}
	return ""
}

// runGroup runs name args in dir with env as a process group (what it
// starts in the background too, killed when the test ends) and returns its
// output and error. A run that outlives distTimeout, counted once a process
// slot is taken (direct), not while waiting for one, fails the test as
// what hung.
func runGroup(t *testing.T, what, dir string, env []string, name string, args ...string) ([]byte, error) {
	t.Helper()
	release := direct()
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), distTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		pgid := cmd.Process.Pid
		t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	}
	if ctx.Err() != nil {
		t.Fatalf("%s hung:\n%s", what, out)
	}
	return out, err
}

// docs/ci.md's docker block, run verbatim in the checkout (its port changed
// to a free one) with a stand-in for docker (testdata/fake-docker.sh): the
// build goes through .ci/build.sh with the commit, as the Dockerfile's;
// the image's `conform version` names that commit; and the run, with only
// the -e variables, the -v mount and the caller's --user, reaches `conform
// serve` on the host's loopback, exits 1 (Core partial: no restart
// command) and leaves its reports in the mounted conform-report. A real
// engine's build and run are TestDistDockerImage's.
func TestDocsDocker(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("builds conform and runs every claimed level")
	}
	t.Parallel()
	block := dockerDocBlock(t)
	if !strings.Contains(block, "127.0.0.1:8080") || !strings.Contains(block, "-e CONFORM_API_KEY") {
		t.Fatalf("docs/ci.md's docker block runs no conform run against 127.0.0.1:8080 with -e CONFORM_API_KEY:\n%s", block)
	}
	root := repoRoot(t)
	gitDir, err := exec.Command("git", "-C", root, "rev-parse", "--absolute-git-dir").Output()
	if err != nil {
		t.Skipf("no git checkout here (%v): the block's build names the commit from git", err)
	}
	head, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatal(err)
	}
	dir := docsWorkdir(t)
	for _, f := range []string{".ci", "Dockerfile"} { // the build context
		if err := os.Symlink(filepath.Join(root, f), filepath.Join(dir, f)); err != nil && !os.IsExist(err) {
			t.Fatal(err)
		}
	}
	bin := t.TempDir()
	fake, err := os.ReadFile(filepath.Join("testdata", "fake-docker.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "docker"), fake, 0o755); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	startServe(t, addr)
	env := ciEnv(map[string]string{"FAKE_DOCKER_IMAGES": t.TempDir(), "GIT_DIR": strings.TrimSpace(string(gitDir)), "CONFORM_API_KEY": testKey})
	for i, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			env[i] = "PATH=" + bin + string(os.PathListSeparator) + p
		}
	}
	code, out := runSh(t, dir, env, "-c", strings.ReplaceAll(block, "127.0.0.1:8080", addr))
	if want := "(commit " + strings.TrimSpace(string(head)); !strings.Contains(out, want) {
		t.Errorf("the image's conform version does not say %q:\n%.6000s", want, out)
	}
	if code != 1 {
		t.Fatalf("the block exited %d, want 1 (conform run: Core partial without --restart-cmd):\n%.6000s", code, out)
	}
	r := docReport(t, filepath.Join(dir, "conform-report", reports.JSONFile), out)
	for _, q := range r.Requirements {
		if q.Verdict == reports.Fail || q.Verdict == reports.Error || strings.HasPrefix(q.ID, "CORE-DUR-") && q.Verdict != reports.Unverified {
			t.Errorf("%s: %s (%s)", q.ID, q.Verdict, q.Message)
		}
	}
	noKey(t, testKey, map[string]string{"the output": out})
}

// docs/ci.md's baseline recipe, run verbatim with the test's binary as
// ./conform against `conform serve` (its port changed to a free one, the
// key in CONFORM_API_KEY): the first run's unverified MUSTs go into the
// baseline, and the run with it exits 0, each of them expected.
func TestDocsBaseline(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs every claimed level twice")
	}
	t.Parallel()
	block := docBlock(t, "docs/ci.md", "## Known failures: a baseline", "sh")
	if !strings.Contains(block, "127.0.0.1:8080") {
		t.Fatalf("the block names no 127.0.0.1:8080 to move to a free port:\n%s", block)
	}
	addr := freeAddr(t)
	startServe(t, addr)
	dir := conformDir(t)
	// As typed into a shell: no -e, the last command's exit code.
	code, out := runSh(t, dir, ciEnv(map[string]string{"CONFORM_API_KEY": testKey}), "-c", strings.ReplaceAll(block, "127.0.0.1:8080", addr))
	if code != 0 {
		t.Fatalf("the block exited %d, want 0 (the run with the baseline):\n%.8000s", code, out)
	}
	baseline, err := os.ReadFile(filepath.Join(dir, "conform-baseline.yaml"))
	if err != nil || !strings.Contains(string(baseline), "CORE-DUR-001") {
		t.Errorf("conform-baseline.yaml (%v) does not list CORE-DUR-001, unverified without a restart command:\n%s", err, baseline)
	}
	r := docReport(t, filepath.Join(dir, "conform-report", reports.JSONFile), out)
	if r.Baseline == nil || !slices.Contains(r.Baseline.Expected, "CORE-DUR-001") || len(r.Baseline.Stale) != 0 {
		t.Errorf("the run with the baseline: %+v, want CORE-DUR-001 expected and nothing stale", r.Baseline)
	}
	noKey(t, testKey, map[string]string{"the output": out, "the baseline": string(baseline)})
}

// docs/ci.md's "Choosing the gate" examples, each line run as written
// (its port changed to a free one) with the test's binary as ./conform
// against `conform serve`, which has no restart command: the first exits
// 0 with CORE-DUR opted out and Core partial; the second gates on
// failures only, exits 0 and still lists what is unverified.
func TestDocsChoosingGate(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs every claimed level")
	}
	t.Parallel()
	var lines []string
	for _, l := range strings.Split(docBlock(t, "docs/ci.md", "## Choosing the gate", "sh"), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 2 || !strings.Contains(lines[0], "--skip-areas CORE-DUR") || !strings.Contains(lines[1], "--fail-on failures") {
		t.Fatalf("the block is not the two examples this test knows (--skip-areas CORE-DUR, --fail-on failures):\n%s", strings.Join(lines, "\n"))
	}
	addr := freeAddr(t)
	startServe(t, addr)
	check := []func(*testing.T, *reports.Report){
		func(t *testing.T, r *reports.Report) {
			got := byID(r)
			for _, id := range []string{"CORE-DUR-001", "CORE-DUR-002"} {
				if q := got[id]; !q.OptedOut || q.Verdict != reports.Skip {
					t.Errorf("%s is %s (opted out %v), want skipped by choice", id, q.Verdict, q.OptedOut)
				}
			}
			for _, l := range r.Levels {
				want := map[string]reports.LevelStatus{"core": reports.Partial, "receipts": reports.Conformant}[string(l.Level)]
				if want == "" && l.Run {
					t.Errorf("level %s was checked, want only core and receipts", l.Level)
				}
				if want != "" && l.Status != want {
					t.Errorf("level %s is %s (%s), want %s", l.Level, l.Status, l.Why, want)
				}
			}
		},
		func(t *testing.T, r *reports.Report) {
			if g := r.Gate; g == nil || g.FailOn != "failures" || !g.Passed || !slices.Contains(g.Unverified, "CORE-DUR-001") {
				t.Errorf("gate %+v, want fail_on failures, passed, with the unverified MUSTs listed (CORE-DUR-001 among them: no restart command)", g)
			}
		},
	}
	for i, line := range lines {
		t.Run(strings.Fields(line)[len(strings.Fields(line))-2], func(t *testing.T) {
			t.Parallel()
			if !strings.Contains(line, "127.0.0.1:8080") {
				t.Fatalf("%s names no 127.0.0.1:8080 to move to a free port", line)
			}
			dir := conformDir(t)
			code, out := runSh(t, dir, ciEnv(map[string]string{"CONFORM_API_KEY": testKey}), "-c", strings.ReplaceAll(line, "127.0.0.1:8080", addr))
			if code != 0 {
				t.Fatalf("%s: exit %d, want 0\n%.6000s", line, code, out)
			}
			noKey(t, testKey, map[string]string{"the output": out})
			check[i](t, docReport(t, filepath.Join(dir, "conform-report", reports.JSONFile), out))
		})
	}
}
