package main

// Durability proofs: a real `conform serve` subprocess on a fixed port, and a
// --restart-cmd script that kills it (SIGKILL: a crash, not a clean stop) and
// starts it again. With a data directory the tasks and keys survive and the
// durability MUSTs pass; in memory they are lost and exactly those fail. A
// restart that itself fails is an error of the run, never the target's; no
// --restart-cmd leaves them unverified with the remedy.

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/reports"
)

var durabilityReqs = []string{"CORE-DUR-001", "CORE-DUR-002"}

// freeAddr picks a loopback address that is free now; the target must keep
// its port across the restart (or start after a client began waiting for
// it), so it cannot be :0. The port comes from below the kernel's
// ephemeral range: every other listener of these tests binds :0 and every
// client connection takes its local port from that range, so none of them
// can take this port between now and the moment the target binds it (a
// port freed from :0 once went to a proof harness that answered the
// waiting client 404). Ports handed out in this process are not reused.
func freeAddr(t testing.TB) string {
	t.Helper()
	low := ephemeralLow()
	freePorts.Lock()
	defer freePorts.Unlock()
	for range 200 {
		port := 10000 + rand.IntN(low-10000)
		if freePorts.used[port] {
			continue
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			continue // taken by something else on the machine
		}
		ln.Close()
		freePorts.used[port] = true
		return ln.Addr().String()
	}
	t.Fatalf("no free loopback port in 10000..%d after 200 tries", low)
	return ""
}

var freePorts = struct {
	sync.Mutex
	used map[int]bool
}{used: map[int]bool{}}

// ephemeralLow is the first port of the kernel's ephemeral range (Linux's
// default when it cannot be read).
func ephemeralLow() int {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 11000 {
				low = n
			}
		}
	}
	return low
}

// restartableServe starts `conform serve` (durable with a data directory,
// else in memory) and writes a restart script for it. It returns the target
// URL, the --restart-cmd value and the file holding the serving pid.
func restartableServe(t *testing.T, durable bool) (string, string, string) {
	t.Helper()
	dir := t.TempDir()
	args := []string{"serve", "--addr", freeAddr(t)}
	if durable {
		args = append(args, "--data", filepath.Join(dir, "data"))
	}
	return restartable(t, dir, conformBin, args, "conform serve: listening on ")
}

// restartableWrapped is restartableServe for a durable reference Harness
// set up as spec says (its faults, variants and wrapfault middleware),
// served by wrapserve.
func restartableWrapped(t *testing.T, spec targetSpec) (string, string) {
	t.Helper()
	dir := t.TempDir()
	spec.Data, spec.Addr = filepath.Join(dir, "data"), freeAddr(t)
	url, restart, _ := restartable(t, dir, wrapserveBin, spec.args(), "wrapserve: listening on ")
	return url, restart
}

// restartable starts bin with args, which prints listening (followed by
// the base URL) when it serves, and writes a restart script into dir that
// kills it (SIGKILL) and starts it again with the same arguments.
func restartable(t testing.TB, dir, bin string, args []string, listening string) (string, string, string) {
	t.Helper()
	pidFile := filepath.Join(dir, "pid")
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaps it at once when the script kills it
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		// The harness the script started last is not our child.
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != cmd.Process.Pid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
			t.Logf("output of the restarted %s:\n%s", filepath.Base(bin), b)
		}
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), listening)
	if !ok {
		t.Fatalf("%s printed %q, want its listening line", filepath.Base(bin), line)
	}
	os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)), 0o600)
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + a + "'"
	}
	// The script returns once the old process is gone and the new one is
	// started; the suite's own wait for GET /v1 covers the new one's start.
	script := filepath.Join(dir, "restart.sh")
	body := fmt.Sprintf(`#!/bin/sh
set -e
pid=$(cat '%[1]s')
kill -KILL "$pid"
while kill -0 "$pid" 2>/dev/null; do :; done
CONFORM_SERVE_API_KEY="$CONFORM_API_KEY" '%[2]s' %[3]s >>'%[4]s' 2>&1 &
echo $! > '%[1]s'
echo "killed %[5]s $pid, started it again as $!"
`, pidFile, bin, strings.Join(quoted, " "), filepath.Join(dir, "serve.log"), strings.TrimSuffix(listening, ": listening on "))
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return base, "sh '" + script + "'", pidFile
}

// durabilityRun runs the Core suite with the given extra flags; it returns
// the exit code, the console and every report file's text, and the report.
func durabilityRun(t *testing.T, url string, extra ...string) (int, string, *reports.Report) {
	t.Helper()
	args := append([]string{"run", "--target", url, "--levels", "core", "--stream-timeout", faultStreamTimeout}, extra...)
	code, console, r, out := runConform(t, args...)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		console += "\n" + string(b)
	}
	return code, console, r
}

func reqResult(r *reports.Report, id string) reports.ReqResult {
	for _, q := range r.Requirements {
		if q.ID == id {
			return q
		}
	}
	return reports.ReqResult{}
}

// (a) A durable target killed and restarted keeps its tasks and keys: the
// durability MUSTs pass, and every other spec, before or after the restart
// in the random order, still passes.
func TestDurabilityDurableTargetPasses(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	url, restart, _ := restartableServe(t, true)
	code, output, r := durabilityRun(t, url, "--restart-cmd", restart)
	for _, id := range durabilityReqs {
		if q := reqResult(r, id); q.Verdict != reports.Pass {
			t.Errorf("%s = %s (%s), want pass", id, q.Verdict, q.Message)
		}
	}
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("a durable target restarted mid-run: %v failed or errored: %s", bad, messages(r, bad))
	}
	if code != 0 || r.Levels[0].Status != reports.Conformant {
		t.Errorf("exit %d, core %s (%s); want 0 and conformant\n%.3000s", code, r.Levels[0].Status, r.Levels[0].Why, output)
	}
	if !slices.ContainsFunc(r.Notes, func(n string) bool { return strings.Contains(n, "killed conform serve") }) {
		t.Errorf("the restart script's output is not in the notes: %q", r.Notes)
	}
}

// (b) An in-memory target loses everything on a restart: exactly the
// durability MUSTs fail.
func TestDurabilityForgetfulTarget(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and the Core suite")
	}
	t.Parallel()
	url, restart, _ := restartableServe(t, false)
	code, _, r := durabilityRun(t, url, "--restart-cmd", restart)
	if failed := verdicts(r, reports.Fail); !slices.Equal(failed, durabilityReqs) {
		t.Errorf("failed = %v, want exactly %v: %s", failed, durabilityReqs, messages(r, failed))
	}
	if errs := verdicts(r, reports.Error); len(errs) > 0 {
		t.Errorf("errors %v: %s", errs, messages(r, errs))
	}
	if q := reqResult(r, "CORE-DUR-001"); !strings.Contains(q.Message, "is gone after it") {
		t.Errorf("CORE-DUR-001 message %q, want it to say the task is gone", q.Message)
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// (c) A restart command that fails is the operator's problem: an error
// verdict with its output (redacted), exit 2, never "nonconformant".
func TestDurabilityRestartCommandFails(t *testing.T) {
	proofTier(t)
	t.Parallel()
	url := harness(t, refharness.Options{})
	code, output, r := durabilityRun(t, url, "--focus", "Durability",
		"--restart-cmd", `echo "cannot restart with key $CONFORM_API_KEY" >&2; exit 1`)
	for _, id := range durabilityReqs {
		q := reqResult(r, id)
		if q.Verdict != reports.Error || !strings.Contains(q.Message, "the restart command failed (exit status 1)") || !strings.Contains(q.Message, "cannot restart with key") {
			t.Errorf("%s = %s (%s), want an error naming the exit status and the output", id, q.Verdict, q.Message)
		}
	}
	if len(verdicts(r, reports.Fail)) > 0 || r.Levels[0].Status == reports.Nonconformant {
		t.Errorf("a failed restart is blamed on the target: core %s (%s)", r.Levels[0].Status, r.Levels[0].Why)
	}
	if code != 2 {
		t.Errorf("exit %d, want 2", code)
	}
	if r.Config["restart_cmd"] != "[REDACTED]" {
		t.Errorf("config restart_cmd = %q, want [REDACTED]", r.Config["restart_cmd"])
	}
	if strings.Contains(output, testKey) {
		t.Error("the API key the restart command printed reached the console or a report file")
	}
}

// A target that does not come back after the restart command is an error
// too, with what the command printed; nothing is blamed on the target.
func TestDurabilityTargetNeverComesBack(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve")
	}
	t.Parallel()
	url, _, pidFile := restartableServe(t, true)
	code, _, r := durabilityRun(t, url, "--focus", "Durability", "--restart-timeout", "2s",
		"--restart-cmd", "kill -KILL $(cat '"+pidFile+"') && echo stopped for good")
	for _, id := range durabilityReqs {
		q := reqResult(r, id)
		if q.Verdict != reports.Error || !strings.Contains(q.Message, "did not answer GET /v1 with 200 within --restart-timeout 2s") || !strings.Contains(q.Message, "stopped for good") {
			t.Errorf("%s = %s (%s), want an error saying the target did not come back, with the command's output", id, q.Verdict, q.Message)
		}
	}
	if failed := verdicts(r, reports.Fail); len(failed) > 0 || code != 2 {
		t.Errorf("exit %d, failed %v; want exit 2 and no failure", code, failed)
	}
}

// (d) Without --restart-cmd the durability MUSTs are unverified, with the
// remedy, and Core is partial.
func TestDurabilityWithoutRestartCmdIsUnverified(t *testing.T) {
	proofTier(t)
	t.Parallel()
	url := harness(t, refharness.Options{})
	_, _, r := durabilityRun(t, url, "--focus", "Durability")
	for _, id := range durabilityReqs {
		q := reqResult(r, id)
		if q.Verdict != reports.Unverified || !strings.Contains(q.Message, "no --restart-cmd given") || !strings.Contains(q.Remedy, "--restart-cmd") {
			t.Errorf("%s = %s (%s; remedy %q), want unverified with the --restart-cmd remedy", id, q.Verdict, q.Message, q.Remedy)
		}
	}
	found := false
	for _, rm := range r.Levels[0].ToVerify {
		if strings.Contains(rm.Remedy, "--restart-cmd") && slices.Equal(rm.Requirements, durabilityReqs) {
			found = true
		}
	}
	if !found || r.Levels[0].Status != reports.Partial {
		t.Errorf("core = %s, to verify %+v; want partial listing the --restart-cmd remedy for %v", r.Levels[0].Status, r.Levels[0].ToVerify, durabilityReqs)
	}
}

// restartReqs are, by level, the requirements of the specs that restart
// the target.
var restartReqs = map[string][]string{"core": durabilityReqs, "replay": {"RPLY-RANGE-002", "RPLY-RETAIN-001"}}

// The faults that need a restart (fault.Restart; a wrapfault middleware or
// an in-server fault of a durable wrapserve target whose restart works):
// the run of the fault's level with --restart-cmd fails exactly its
// requirements, saying what restartRows says, and the other requirements
// of the level's restart specs, checked in the same spec after them,
// still pass (every check runs). keeps-waiting: a task waiting for input
// is still INPUT_REQUIRED after the restart, with no state event since:
// recovered in a state the spec does not allow; its WORKING sibling, read
// back as WORKING, is legal, and the idempotency keys survive.
// replay-history-lost-on-restart: a task that ran before the restart can
// no longer be replayed, while its history still reads the same.
func TestRestartFaultsCaught(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs a level's suite per fault")
	}
	t.Parallel()
	for _, f := range runFaults(fault.Restart) {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			spec := targetSpec{Wrap: f.Name}
			if f.Kind == fault.InServer {
				spec = targetSpec{Faults: []refharness.Fault{refharness.Fault(f.Name)}}
			}
			level := levelOf(f)
			url, restart := restartableWrapped(t, spec)
			code, _, r := durabilityRun(t, url, "--restart-cmd", restart, "--levels", level)
			if failed := verdicts(r, reports.Fail); !slices.Equal(failed, sortedIDs(f.Fails)) {
				t.Errorf("failed = %v, want exactly %v: %s", failed, f.Fails, messages(r, failed))
			}
			for _, id := range f.Fails {
				if q := reqResult(r, id); !strings.Contains(q.Message, restartRows[f.Name]) {
					t.Errorf("%s message %q, want it to say %q", id, q.Message, restartRows[f.Name])
				}
			}
			for _, id := range restartReqs[level] {
				if q := reqResult(r, id); !slices.Contains(f.Fails, id) && q.Verdict != reports.Pass {
					t.Errorf("%s = %s (%s), want pass (its checks ran after the failed ones, and held)", id, q.Verdict, q.Message)
				}
			}
			if errs := verdicts(r, reports.Error); len(errs) > 0 {
				t.Errorf("errors %v: %s", errs, messages(r, errs))
			}
			if code != 1 {
				t.Errorf("exit %d, want 1", code)
			}
		})
	}
}

// The restart of a wrapserve target itself works: without a middleware the
// durability MUSTs pass.
func TestDurabilityWrappedRestartPasses(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the durability spec")
	}
	t.Parallel()
	url, restart := restartableWrapped(t, targetSpec{})
	_, _, r := durabilityRun(t, url, "--focus", "Durability", "--restart-cmd", restart)
	for _, id := range durabilityReqs {
		if q := reqResult(r, id); q.Verdict != reports.Pass {
			t.Errorf("%s = %s (%s), want pass", id, q.Verdict, q.Message)
		}
	}
}

// A restart command that returns while the target goes on serving proves
// nothing: `--restart-cmd true` is an error of the run for every
// requirement of every spec that restarts (the Core durability spec and
// the Replay level's), exit 2, never a verdict on the target.
func TestRestartNotProven(t *testing.T) {
	proofTier(t)
	t.Parallel()
	url := harness(t, refharness.Options{})
	code, _, r := durabilityRun(t, url, "--levels", "core,replay", "--focus", "across a restart", "--restart-cmd", "true")
	for _, id := range append(slices.Clone(restartReqs["core"]), restartReqs["replay"]...) {
		if q := reqResult(r, id); q.Verdict != reports.Error || !strings.Contains(q.Message, "the restart command returned, but the target did not restart") {
			t.Errorf("%s = %s (%s), want an error saying the target did not restart", id, q.Verdict, q.Message)
		}
	}
	if failed := verdicts(r, reports.Fail); len(failed) > 0 || code != 2 {
		t.Errorf("exit %d, failed %v; want exit 2 and no failure: %s", code, failed, messages(r, failed))
	}
}

// ciRestartRuns is how many runs TestCIDocRestartScript makes, each with
// its own random --seed (docs/performance.md has the figure of ten).
var ciRestartRuns = flag.Int("ci-restart-runs", 1, "runs of TestCIDocRestartScript, each with its own --seed")

// ciRestartScript is the kill-and-start script of docs/ci.md
// ("Durability"), exactly as the page shows it, so that the page and what
// this test proves cannot drift apart.
func ciRestartScript(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "ci.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```sh\n(#!/bin/sh\n# ci/restart-harness.sh:.*?)```").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/ci.md shows no restart script (a sh block starting #!/bin/sh, # ci/restart-harness.sh:)")
	}
	return string(m[1])
}

// The restart script of docs/ci.md, verbatim, restarts a Harness run out of
// process: `conform serve --data DIR`, which claims every level, stands in
// for the page's ./my-harness (a two-line wrapper that gives it the test's
// port), started as the page starts it. A run of every level with that
// script as --restart-cmd is conformant, its restarts proven (the stream
// opened before each one ended); -ci-restart-runs N makes N runs, each
// with its own seed.
func TestCIDocRestartScript(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs every level against conform serve")
	}
	t.Parallel()
	dir := t.TempDir()
	addr := freeAddr(t)
	if err := os.MkdirAll(filepath.Join(dir, "ci"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "ci", "restart-harness.sh"), []byte(ciRestartScript(t)), 0o755); err != nil {
		t.Fatal(err)
	}
	// The page's Harness is started as ./my-harness --listen ADDR --data
	// DIR; this one is conform serve on the test's free port.
	shim := fmt.Sprintf(`#!/bin/sh
# my-harness --listen ADDR --data DIR: conform serve, on the test's port %[1]s
data=
while [ $# -gt 0 ]; do case "$1" in --data) data=$2; shift;; esac; shift; done
exec '%[2]s' serve --addr %[1]s --data "$data" --ws-heartbeat 1s
`, addr, conformBin)
	if err := os.WriteFile(filepath.Join(dir, "my-harness"), []byte(shim), 0o755); err != nil {
		t.Fatal(err)
	}
	log, err := os.OpenFile(filepath.Join(dir, "harness.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer log.Close()
	cmd := exec.Command("./my-harness", "--listen", "127.0.0.1:8080", "--data", "./harness-data")
	cmd.Dir, cmd.Stderr = dir, log
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }() // reaped at once when the script kills it (else kill -0 sees a zombie)
	pidFile := filepath.Join(dir, "harness.pid")
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if b, err := os.ReadFile(pidFile); err == nil { // the one the script started last
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid != cmd.Process.Pid {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		if t.Failed() {
			b, _ := os.ReadFile(filepath.Join(dir, "harness.log"))
			t.Logf("harness.log:\n%s", b)
		}
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	if !strings.HasPrefix(line, "conform serve: listening on ") {
		t.Fatalf("my-harness printed %q, want its listening line", line)
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "harness-data")
	for i := range *ciRestartRuns {
		seed := strconv.Itoa(1 + rand.IntN(1<<30))
		code, console, r, _ := runConform(t, "run", "--target", "http://"+addr, "--levels", "all", "--wait-for-target", "60s", "--seed", seed,
			"--api-key-file", filepath.Join(data, "api-key"), "--second-api-key-file", filepath.Join(data, "second-api-key"),
			"--read-only-api-key-file", filepath.Join(data, "read-only-api-key"),
			"--oauth-client-id", "actor_default", "--oauth-client-secret-file", filepath.Join(data, "api-key"),
			"--restart-cmd", "cd '"+dir+"' && ./ci/restart-harness.sh")
		if r == nil {
			t.Fatalf("run %d (--seed %s): no report; exit %d:\n%s", i+1, seed, code, console)
		}
		for _, l := range r.Levels {
			if l.Status != reports.Conformant {
				t.Errorf("run %d (--seed %s): %s is %s (%s)", i+1, seed, l.Level, l.Status, l.Why)
			}
		}
		if bad := slices.Concat(verdicts(r, reports.Fail), verdicts(r, reports.Error)); len(bad) > 0 {
			t.Errorf("run %d (--seed %s): %v failed or errored: %s", i+1, seed, bad, messages(r, bad))
		}
		proven := 0
		for _, n := range r.Notes {
			if strings.Contains(n, "restart: the target was restarted (the stream") {
				proven++
			}
		}
		if proven != 2 || code != 0 {
			t.Errorf("run %d (--seed %s): exit %d, %d restarts proven (want 0 and 2: the Core durability spec's and the Replay level's)\n%.3000s", i+1, seed, code, proven, console)
		}
		t.Logf("run %d: --seed %s, exit %d", i+1, seed, code)
	}
}
