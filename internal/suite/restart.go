package suite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
)

// Restarts (docs/ci.md, "Durability"; docs/interpretations.md#restart-proof).
// Every spec that restarts the target goes through Restart: the Core
// durability spec and the Replay level's spec across a restart alike. It
// restarts the target, waits for GET /v1 to answer again, and proves that
// the target did restart: an SSE stream opened before the restart (its
// witness) must have ended, since a restarted server's connections end
// with its process. A restart command that returns while the old server
// goes on serving (`--restart-cmd true`) is an error of the run, never a
// verdict on the target.

// restarts counts the restart commands this process ran (Restarts).
var restarts atomic.Int64

// Restarts is how many times this process has restarted the target. A
// spec that shares what it made with later specs (a source task others
// replay) makes it again after a restart, so that what the restart did to
// it is judged by the spec across the restart alone, never by specs that
// happen to run after it in the random order.
func Restarts() int64 { return restarts.Load() }

// RemedyRestart is what an implementer does so that the checks that need
// a restart run.
const RemedyRestart = "give --restart-cmd CMD (or CONFORM_RESTART_CMD) that restarts the target: conform runs it with sh -c, waits for GET /v1 to answer again and checks that a stream opened before the restart ended (docs/ci.md, \"Durability\")"

// remedyWitness is the remedy when no witness stream can be kept open.
const remedyWitness = "serve GET /v1/sessions/{id}/events/stream and keep it open until the client or the server goes away (CORE-SSE-*): conform proves a restart by a stream opened before it ending"

// NotRestarted starts the message of a restart that was not proven.
const NotRestarted = "the restart command returned, but the target did not restart"

// Restart restarts the target in the middle of the current spec and
// returns once the target has restarted and answers GET /v1 again, with
// what the restart printed in the report's notes. witness is the path of
// an SSE stream the target keeps open (a session's stream): it is opened
// before the restart and must have ended after it. A restart command that
// fails or outlives --restart-timeout, a target that does not answer
// again, or one whose witness stream is still open after the restart
// (the command returned, but nothing restarted) ends the spec with an
// error verdict for every requirement it names. The caller checks
// Env().Restart first: without a restart command its checks are
// unverified, with RemedyRestart.
func Restart(ctx context.Context, witness string) {
	GinkgoHelper()
	env := Env()
	if env.Restart == nil {
		Fail("suite.Restart called without a restart command (the spec must check Env().Restart)")
	}
	if err := AwaitWatches(ctx); err != nil {
		Fail(err.Error()) // the spec was stopped
	}
	w := watch(ctx, witness)
	defer w.close()
	if why := w.endedEarly(); why != "" {
		Unverified("the restart could not be proven, so the checks across it did not run: "+why, remedyWitness)
	}
	start := time.Now()
	restarts.Add(1)
	out, err := env.Restart(ctx)
	out = strings.TrimSpace(out)
	if out != "" {
		Note("restart: the restart command printed (its last 16 KiB are kept): " + out)
	}
	if err != nil {
		restartError(err.Error(), out)
	}
	returned := time.Now()
	if err := env.AwaitDiscovery(ctx, env.Config.Timeouts.Restart); err != nil {
		restartError(err.Error(), out)
	}
	answered := time.Now()
	if why := w.proof(ctx, returned, env.Config.Timeouts.Stream); why != "" {
		restartError(NotRestarted+": "+why+"; check that --restart-cmd stops the running server before it returns (docs/ci.md, \"Durability\")", out)
	}
	Note(fmt.Sprintf("restart: the target was restarted (the stream GET %s opened before it ended) and answered GET /v1 again %s after the restart command began",
		witness, answered.Sub(start).Round(time.Millisecond)))
}

// restartError ends the spec with an error verdict for its requirements:
// the restart broke, not the target.
func restartError(why, out string) {
	GinkgoHelper()
	msg := "the checks across a restart did not run: " + why
	if out != "" {
		if len(out) > 1000 {
			out = "…" + out[len(out)-1000:]
		}
		msg += "; the restart command's output ends with: " + out
	}
	msg = Env().Redactor.String(msg)
	for _, id := range SpecReqs() {
		recordMsg(id, evidence.VerdictError, msg, "")
	}
	Fail(msg)
}

// witness is a stream opened before a restart, read to its end by one
// goroutine.
type witness struct {
	path string
	st   *client.Stream
	wake chan struct{} // a frame came or the stream ended (buffered, 1)
	done chan struct{} // closed when the stream ended

	mu        sync.Mutex
	lastFrame time.Time // when its last frame arrived
	ended     time.Time
	endErr    error
	refused   string // why it could not be opened
}

// watch opens the witness stream and starts reading it.
func watch(ctx context.Context, path string) *witness {
	GinkgoHelper()
	w := &witness{path: path, wake: make(chan struct{}, 1), done: make(chan struct{})}
	st, err := Client().Stream(ctx, client.Request{Path: path})
	Transport(err)
	if st.Response.Status/100 != 2 || !client.IsEventStream(st.Response.Header.Get("Content-Type")) {
		w.refused = fmt.Sprintf("GET %s, the stream opened as the restart's witness, answered %s", path, st.Response)
		close(w.done)
		return w
	}
	w.st = st
	go w.read(ctx)
	return w
}

func (w *witness) read(ctx context.Context) {
	defer close(w.done)
	for {
		f, err := w.st.Next(ctx)
		w.mu.Lock()
		if err != nil {
			w.ended, w.endErr = time.Now(), err
		} else {
			w.lastFrame = f.ArrivedAt
		}
		w.mu.Unlock()
		select {
		case w.wake <- struct{}{}:
		default:
		}
		if err != nil {
			return
		}
	}
}

func (w *witness) close() {
	if w.st != nil {
		w.st.Close()
	}
	<-w.done
}

// endedEarly says why the witness cannot prove a restart that has not
// begun yet: it could not be opened, or it has ended already ("" when it
// is open).
func (w *witness) endedEarly() string {
	if w.refused != "" {
		return w.refused
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ended.IsZero() {
		return fmt.Sprintf("the stream GET %s, opened as the restart's witness, ended before the restart began (%v)", w.path, w.endErr)
	}
	return ""
}

// proof waits, at most wait, for the witness to have ended, and says why
// the restart is not proven ("" when it is): the stream is still open, and
// it delivered a frame after the restart command returned, or nothing
// ended it within wait.
func (w *witness) proof(ctx context.Context, returned time.Time, wait time.Duration) string {
	tm := time.NewTimer(wait)
	defer tm.Stop()
	for {
		w.mu.Lock()
		ended, last, endErr := w.ended, w.lastFrame, w.endErr
		w.mu.Unlock()
		switch {
		case !ended.IsZero() && !errors.Is(endErr, client.ErrStreamTimeout):
			return ""
		case last.After(returned):
			return fmt.Sprintf("the SSE stream GET %s, opened before the restart, delivered a frame %s after the restart command returned: the server that answered it is still running",
				w.path, last.Sub(returned).Round(time.Millisecond))
		}
		select {
		case <-w.wake:
		case <-tm.C:
			return fmt.Sprintf("the SSE stream GET %s, opened before the restart, is still open %s after the restart command returned (a restarted server's connections end with it)", w.path, wait)
		case <-ctx.Done():
			return fmt.Sprintf("the run ended while waiting for the SSE stream GET %s, opened before the restart, to end", w.path)
		}
	}
}
