package target

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/harn-conform/conform/internal/client"
)

// RestartFunc restarts the target and returns what the restart printed (for
// the report's notes; the caller redacts it). It returns once the old
// process has stopped; the new one may still be starting (see
// AwaitDiscovery). Its error means the restart itself failed: that is the
// run's problem, never the target's nonconformance.
type RestartFunc func(ctx context.Context) (output string, err error)

// MaxRestartOutput bounds the restart command's output kept for the report:
// its last bytes, where a failure usually says why.
const MaxRestartOutput = 16 << 10

// CommandRestart runs command with `sh -c` as a RestartFunc. The command
// gets conform's environment, no stdin, and at most timeout; its stdout and
// stderr go to one temporary file (not a pipe: a server the command starts
// in the background may keep the descriptors open, and must not block the
// run or die of a broken pipe when conform stops reading). A non-zero exit,
// a timeout or an interruption is an error.
func CommandRestart(command string, timeout time.Duration) RestartFunc {
	return func(ctx context.Context) (string, error) {
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		f, err := os.CreateTemp("", "conform-restart-*.log")
		if err != nil {
			return "", fmt.Errorf("the restart command could not be started: %w", err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		cmd := exec.CommandContext(ctx, "sh", "-c", command)
		cmd.Stdout, cmd.Stderr = f, f
		ownProcessGroup(cmd)
		runErr := cmd.Run()
		out := tail(f, MaxRestartOutput)
		var ee *exec.ExitError
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			return out, fmt.Errorf("the restart command did not finish within --restart-timeout %s and was killed", timeout)
		case ctx.Err() != nil:
			return out, fmt.Errorf("the restart command was interrupted: %w", ctx.Err())
		case errors.As(runErr, &ee):
			return out, fmt.Errorf("the restart command failed (%s)", ee.ProcessState)
		case runErr != nil:
			return out, fmt.Errorf("the restart command could not be run: %w", runErr)
		}
		return out, nil
	}
}

// tail returns the last limit bytes written to f, saying how much was cut.
func tail(f *os.File, limit int64) string {
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return ""
	}
	from := max(0, size-limit)
	b := make([]byte, size-from)
	n, _ := f.ReadAt(b, from)
	s := string(b[:n])
	if from > 0 {
		s = fmt.Sprintf("[… %d earlier bytes cut]\n", from) + s
	}
	return s
}

// awaitEvery is the interval of discovery polls while a restarted target
// comes back.
const awaitEvery = 50 * time.Millisecond

// AwaitDiscovery polls GET /v1 until it answers 200 or timeout passes. The
// polls use the run's unrecorded client, so a target that takes a while to
// come back does not fill a spec's transcript with refused connections. Its
// error says what the last poll saw.
func (e *Env) AwaitDiscovery(ctx context.Context, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A restarting target refuses connections for a while: the polls
	// keep their own count, apart from the run's.
	polls := e.Client.Detached()
	tick := time.NewTicker(awaitEvery)
	defer tick.Stop()
	last := "no answer"
	for {
		resp, err := polls.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1"})
		switch {
		case err == nil && resp.Status == http.StatusOK:
			// Misses while the target was down were the restart's,
			// not a target that stopped answering.
			e.Client.Health().Reset()
			return nil
		case err != nil && ctx.Err() != nil:
			// our own deadline cut the poll short: keep what the last one saw
		case err != nil:
			last = err.Error()
		default:
			last = resp.String()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the target did not answer GET /v1 with 200 within --restart-timeout %s after the restart (last poll: %s)", timeout, e.Redactor.String(last))
		case <-tick.C:
		}
	}
}
