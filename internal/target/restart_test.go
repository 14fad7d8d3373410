//go:build unix

package target

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
)

func TestCommandRestart(t *testing.T) {
	for _, tc := range []struct {
		name, cmd string
		wantErr   string // "" = success
		wantOut   string
	}{
		{"success", "echo restarting; echo done >&2", "", "restarting\ndone\n"},
		{"exit 1", "echo cannot restart; exit 1", "failed (exit status 1)", "cannot restart\n"},
		{"not found", "/nonexistent/restart-harness", "failed (exit status 127)", "not found"},
	} {
		out, err := CommandRestart(tc.cmd, 10*time.Second)(context.Background())
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: error %v, want none", tc.name, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.wantErr)
		}
		if !strings.Contains(out, tc.wantOut) {
			t.Errorf("%s: output %q, want it to contain %q", tc.name, out, tc.wantOut)
		}
	}
}

// A server the command starts in the background keeps the command's output
// descriptors open: the restart still returns when sh does.
func TestCommandRestartLeavesBackgroundChildren(t *testing.T) {
	start := time.Now()
	out, err := CommandRestart("sleep 60 & echo $!", 10*time.Second)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pid, perr := strconv.Atoi(strings.TrimSpace(out))
	if perr != nil {
		t.Fatalf("output %q, want the background pid", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("restart took %s: it waited for the background child", d)
	}
	if syscall.Kill(pid, 0) != nil {
		t.Error("the background child did not survive the restart command")
	}
}

func TestCommandRestartTimeoutKillsTheGroup(t *testing.T) {
	pidFile := t.TempDir() + "/pid"
	start := time.Now()
	out, err := CommandRestart("sleep 60 & echo $! > "+pidFile+"; echo waiting; wait", time.Second)(context.Background())
	if err == nil || !strings.Contains(err.Error(), "did not finish within --restart-timeout 1s") {
		t.Errorf("error %v, want a timeout", err)
	}
	if !strings.Contains(out, "waiting") {
		t.Errorf("output %q, want what the command printed before the timeout", out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("a 1s timeout took %s", d)
	}
	b, _ := os.ReadFile(pidFile)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if pid == 0 {
		t.Fatal("no pid written")
	}
	// The child was sent SIGKILL with its group. Delivery is asynchronous:
	// on a busy machine it may still show as running for a moment, then as
	// a zombie of init (which Kill(pid, 0) still sees). Wait for that
	// condition, with a bound that only a child that truly survived the
	// kill reaches.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break // gone, or dead and waiting to be reaped
		}
		if time.Now().After(deadline) {
			syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("the command's background child %d outlived the timeout: %s", pid, st)
		}
		<-time.After(5 * time.Millisecond) // a poll interval, not a timing assumption
	}
}

func TestCommandRestartOutputIsBounded(t *testing.T) {
	out, err := CommandRestart("i=0; while [ $i -lt 3000 ]; do echo line-$i-xxxxxxxxxx; i=$((i+1)); done", 10*time.Second)(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(out) > MaxRestartOutput+100 || !strings.Contains(out, "earlier bytes cut") || !strings.HasSuffix(out, "line-2999-xxxxxxxxxx\n") {
		t.Errorf("output of %d bytes starting %.60q, want the last %d bytes with a note of the cut", len(out), out, MaxRestartOutput)
	}
}

func TestOpenSetsRestartFromConfig(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) }))
	defer srv.Close()
	cfg := config.Defaults()
	cfg.Target = srv.URL
	env, err := Open(context.Background(), cfg)
	if err != nil || env.Restart != nil {
		t.Fatalf("Open without restart_cmd: restart %v, err %v; want none", env.Restart != nil, err)
	}
	cfg.RestartCmd = "echo ok"
	env, err = Open(context.Background(), cfg)
	if err != nil || env.Restart == nil {
		t.Fatalf("Open with restart_cmd: restart %v, err %v", env.Restart != nil, err)
	}
	if out, err := env.Restart(context.Background()); err != nil || out != "ok\n" {
		t.Errorf("Restart() = %q, %v", out, err)
	}
}

func TestAwaitDiscovery(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 4 {
			http.Error(w, "starting", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := config.Defaults()
	cfg.Target = srv.URL
	env, err := Open(context.Background(), cfg) // the first poll: 503
	if err != nil {
		t.Fatal(err)
	}
	if err := env.AwaitDiscovery(context.Background(), 10*time.Second); err != nil || polls.Load() != 4 {
		t.Errorf("AwaitDiscovery = %v after %d polls, want nil after 4", err, polls.Load())
	}

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusBadGateway) }))
	defer down.Close()
	cfg.Target = down.URL
	env, err = Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = env.AwaitDiscovery(context.Background(), 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "within --restart-timeout 300ms") || !strings.Contains(err.Error(), "502") {
		t.Errorf("AwaitDiscovery against a 502 = %v, want a timeout naming the last answer", err)
	}
}

// A restarting target refuses connections for a while: those misses are
// the restart's, so the wait gets past them and the run's client is not
// taken for stopped afterwards.
func TestAwaitDiscoveryThroughRefusedConnections(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) <= 3*client.StoppedAfter {
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close() // as a server that is not listening yet
			return
		}
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	cfg := config.Defaults()
	cfg.Target = srv.URL
	env, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The run's own exchanges saw the target go down, too.
	for i := 0; i < client.StoppedAfter; i++ {
		env.Client.Do(context.Background(), client.Request{Path: "/v1"})
	}
	if env.Client.Health().Stopped() == "" {
		t.Fatal("precondition: the run's client took the target for stopped")
	}
	if err := env.AwaitDiscovery(context.Background(), time.Minute); err != nil {
		t.Fatalf("AwaitDiscovery through refused connections: %v", err)
	}
	if why := env.Client.Health().Stopped(); why != "" {
		t.Fatalf("after the restart the run's client still takes the target for stopped: %s", why)
	}
}
