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
	"net"
	"net/http"
	"net/http/httptest"
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
	"github.com/harn-conform/conform/reports"
)

var durabilityReqs = []string{"CORE-DUR-001", "CORE-DUR-002"}

// freeAddr picks a loopback address that is free now; the target must keep
// its port across the restart, so it cannot be :0.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
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
	pidFile := filepath.Join(dir, "pid")
	cmd := exec.Command(conformBin, args...)
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
	})
	line, _ := bufio.NewReader(out).ReadString('\n')
	base, ok := strings.CutPrefix(strings.TrimSpace(line), "conform serve: listening on ")
	if !ok {
		t.Fatalf("conform serve printed %q, want its listening line", line)
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
echo "killed conform serve $pid, started it again as $!"
`, pidFile, conformBin, strings.Join(quoted, " "), filepath.Join(dir, "serve.log"))
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

// restartableHarness is an in-test reference Harness over a data directory,
// behind wrap, that a --restart-cmd can restart: the command writes to one
// FIFO and waits for the answer on another while this process closes the
// harness and opens a new one over the same directory. It returns the
// target URL and the --restart-cmd value.
func restartableHarness(t *testing.T, wrap func(http.Handler) http.Handler) (string, string) {
	t.Helper()
	dir := t.TempDir()
	opts := refharness.Options{DataDir: filepath.Join(dir, "data"), APIKeys: map[string]string{testKey: "actor_default"}}
	h, err := refharness.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.RWMutex
	current := func() *refharness.Server { mu.RLock(); defer mu.RUnlock(); return h }
	restart := func() error {
		mu.Lock()
		defer mu.Unlock()
		if err := h.Close(); err != nil {
			return err
		}
		next, err := refharness.New(opts)
		if err != nil {
			return err
		}
		h = next
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("/prefix/", http.StripPrefix("/prefix", wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		current().ServeHTTP(w, r)
	}))))
	srv := httptest.NewServer(mux)

	req, ack := filepath.Join(dir, "restart.req"), filepath.Join(dir, "restart.ack")
	for _, p := range []string{req, ack} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := os.ReadFile(req); err != nil { // blocks until the command writes
				return
			}
			select {
			case <-stop:
				return
			default:
			}
			answer := "restarted the reference harness over its data directory\n"
			if err := restart(); err != nil {
				answer = "restart failed: " + err.Error() + "\n"
			}
			os.WriteFile(ack, []byte(answer), 0o600) // blocks until the command reads
		}
	}()
	t.Cleanup(func() {
		close(stop)
		// Wake the loop wherever it waits: a writer for req, a reader for ack.
		if f, err := os.OpenFile(req, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		if f, err := os.OpenFile(ack, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		<-done
		srv.CloseClientConnections()
		srv.Close()
		current().Close()
	})
	cmd := fmt.Sprintf(`echo restart > '%s' && answer=$(cat '%s') && echo "$answer" && case "$answer" in restarted*) ;; *) exit 1;; esac`, req, ack)
	return srv.URL + "/prefix", cmd
}

// keepsWaiting makes the harness look as if it kept a task that was
// INPUT_REQUIRED (or WORKING, AUTH_REQUIRED) in that state across the
// restart: its task reads answer the status the task had before, without
// the recovery's failure. Its event lists are untouched, so no state event
// announces the status it reads.
var keepsWaiting = rewriting(func(r *http.Request, v any) {
	m, ok := v.(map[string]any)
	if !ok || r.Method != http.MethodGet || m["object"] != "task" {
		return
	}
	f, _ := m["failure"].(map[string]any)
	if f == nil || f["code"] != "harness_restarted" {
		return
	}
	msg, _ := f["message"].(string)
	if i := strings.LastIndex(msg, " was "); i >= 0 {
		m["status"] = msg[i+len(" was "):]
		delete(m, "failure")
		m["completed_at"] = nil
	}
})

// A task waiting for input is still INPUT_REQUIRED after the restart, with
// no state event since: recovered in a state the spec does not allow. Only
// CORE-DUR-001 fails (its WORKING sibling, read back as WORKING, is legal,
// and the idempotency keys survive).
func TestDurabilityRecoveredAsWaiting(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Core suite")
	}
	t.Parallel()
	url, restart := restartableHarness(t, keepsWaiting)
	code, _, r := durabilityRun(t, url, "--restart-cmd", restart)
	if failed := verdicts(r, reports.Fail); !slices.Equal(failed, []string{"CORE-DUR-001"}) {
		t.Errorf("failed = %v, want exactly [CORE-DUR-001]: %s", failed, messages(r, failed))
	}
	if q := reqResult(r, "CORE-DUR-001"); !strings.Contains(q.Message, "was INPUT_REQUIRED before the restart and is still INPUT_REQUIRED after it") {
		t.Errorf("CORE-DUR-001 message %q, want it to name the task kept INPUT_REQUIRED", q.Message)
	}
	// CORE-DUR-002 is checked in the same spec and holds, but a spec that
	// failed records no passes: the report says it was not reached.
	if q := reqResult(r, "CORE-DUR-002"); q.Verdict != reports.Unverified {
		t.Errorf("CORE-DUR-002 = %s (%s), want unverified (its spec failed on CORE-DUR-001)", q.Verdict, q.Message)
	}
	if errs := verdicts(r, reports.Error); len(errs) > 0 {
		t.Errorf("errors %v: %s", errs, messages(r, errs))
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
}

// The in-test restart itself works: the unwrapped harness passes.
func TestDurabilityInTestRestartPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the durability spec")
	}
	t.Parallel()
	url, restart := restartableHarness(t, func(h http.Handler) http.Handler { return h })
	_, _, r := durabilityRun(t, url, "--focus", "Durability", "--restart-cmd", restart)
	for _, id := range durabilityReqs {
		if q := reqResult(r, id); q.Verdict != reports.Pass {
			t.Errorf("%s = %s (%s), want pass", id, q.Verdict, q.Message)
		}
	}
}
