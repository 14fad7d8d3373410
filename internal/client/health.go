package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrTargetStopped is the error of every exchange after the target stopped
// answering (see Health): the run ends with errors, fast, instead of
// waiting out a timeout per remaining check.
var ErrTargetStopped = errors.New("not sent: the target stopped answering")

// StoppedAfter is how many exchanges in a row may get no HTTP answer at all
// (a timeout, a refused or broken connection) before the target is taken
// for gone. One such exchange can be the target's answer to a hostile probe
// (closing the connection on an oversize body); several in a row, with no
// answer between them, are a dead or hung target.
const StoppedAfter = 3

// Health follows whether the target still answers. It is shared by every
// copy of a client (WithRecorder, WithObserver), so all specs of a run see
// one verdict.
type Health struct {
	mu      sync.Mutex
	inARow  int
	stopped string // the last failure, once the target is taken for gone
}

// answered records an HTTP answer of any status.
func (h *Health) answered() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped == "" {
		h.inARow = 0
	}
}

// unanswered records an exchange that got no HTTP answer. A context the
// caller itself cancelled (a spec that stopped waiting) says nothing about
// the target and is not counted.
func (h *Health) unanswered(ctx context.Context, err error) {
	if h == nil || ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) && !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped != "" {
		return
	}
	h.inARow++
	if h.inARow >= StoppedAfter {
		h.stopped = err.Error()
	}
}

// check returns ErrTargetStopped (with the last failure) once the target
// is taken for gone.
func (h *Health) check() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped != "" {
		return fmt.Errorf("%w (%d exchanges in a row got no answer; last: %s)", ErrTargetStopped, StoppedAfter, h.stopped)
	}
	return nil
}

// Stopped returns why the target was taken for gone, or "".
func (h *Health) Stopped() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stopped
}

// Health returns the client's health tracker.
func (c *Client) Health() *Health { return c.health }

// Reset forgets past misses: the run restarted the target on purpose, and
// it answers again.
func (h *Health) Reset() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.inARow, h.stopped = 0, ""
}

// Detached returns a copy of c that keeps no count of misses, for polls
// that expect no answer for a while (a target starting or restarting):
// their misses must not stop the run, and they must keep being sent.
func (c *Client) Detached() *Client {
	cp := *c
	cp.health = nil
	return &cp
}
