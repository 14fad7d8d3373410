package main

// Durability proofs: a real `conform serve` subprocess on a fixed port, and a
// --restart-cmd script that kills it (SIGKILL: a crash, not a clean stop) and
// starts it again. With a data directory the tasks and keys survive and the
// durability MUSTs pass; in memory they are lost and exactly those fail. A
// restart that itself fails is an error of the run, never the target's; no
// --restart-cmd leaves them unverified with the remedy.

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
func freeAddr(t *testing.T) string {
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
// behind the named wrapfault middleware, served by wrapserve.
func restartableWrapped(t *testing.T, wrap string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	spec := targetSpec{Wrap: wrap, Data: filepath.Join(dir, "data"), Addr: freeAddr(t)}
	url, restart, _ := restartable(t, dir, wrapserveBin, spec.args(), "wrapserve: listening on ")
	return url, restart
}

// restartable starts bin with args, which prints listening (followed by
// the base URL) when it serves, and writes a restart script into dir that
// kills it (SIGKILL) and starts it again with the same arguments.
func restartable(t *testing.T, dir, bin string, args []string, listening string) (string, string, string) {
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

// The faults that need a restart (fault.Restart; each a middleware in
// front of a wrapserve target whose restart works): each fails exactly
// its requirements, saying what restartRows says, and the other
// durability MUSTs, checked in the same spec after them, still pass
// (every check runs). keeps-waiting: a task waiting for input is still
// INPUT_REQUIRED after the restart, with no state event since: recovered
// in a state the spec does not allow; its WORKING sibling, read back as
// WORKING, is legal, and the idempotency keys survive.
func TestDurabilityRecoveredAsWaiting(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the Core suite")
	}
	t.Parallel()
	for _, f := range runFaults(fault.Restart) {
		t.Run(f.Name, func(t *testing.T) {
			t.Parallel()
			url, restart := restartableWrapped(t, f.Name)
			code, _, r := durabilityRun(t, url, "--restart-cmd", restart)
			if failed := verdicts(r, reports.Fail); !slices.Equal(failed, sortedIDs(f.Fails)) {
				t.Errorf("failed = %v, want exactly %v: %s", failed, f.Fails, messages(r, failed))
			}
			for _, id := range f.Fails {
				if q := reqResult(r, id); !strings.Contains(q.Message, restartRows[f.Name]) {
					t.Errorf("%s message %q, want it to say %q", id, q.Message, restartRows[f.Name])
				}
			}
			for _, id := range durabilityReqs {
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
	url, restart := restartableWrapped(t, "")
	_, _, r := durabilityRun(t, url, "--focus", "Durability", "--restart-cmd", restart)
	for _, id := range durabilityReqs {
		if q := reqResult(r, id); q.Verdict != reports.Pass {
			t.Errorf("%s = %s (%s), want pass", id, q.Verdict, q.Message)
		}
	}
}

// (h) The Replay level's range across a restart waits, as the durability
// specs do, for the restarted target to answer GET /v1 before it reads
// again: against conform serve restarted out of process by a kill-and-start
// script (which returns before the new process listens), RPLY-RANGE-002
// passes and the run goes on.
func TestReplayRangeAcrossOutOfProcessRestart(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs conform serve and the Replay suite")
	}
	t.Parallel()
	url, restart, _ := restartableServe(t, true)
	code, console, r, _ := runConform(t, "run", "--target", url, "--levels", "replay", "--label-filter", "req:RPLY-RANGE-002", "--restart-cmd", restart)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if q := reqResult(r, "RPLY-RANGE-002"); q.Verdict != reports.Pass {
		t.Errorf("RPLY-RANGE-002 = %s (%s), want pass\n%.3000s", q.Verdict, q.Message, console)
	}
	if r.Stopped != nil {
		t.Errorf("the run stopped: %+v", r.Stopped)
	}
}
