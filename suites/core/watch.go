package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// watch is a session's event stream, opened before the spec submits its
// first task and read in the background for the rest of the spec. Every
// event of the session's tasks — including the first state event — then
// arrives while it happens, on any server: no test hook is needed to see a
// lifecycle live, and a server that only replays history on connect (but
// never delivers live) is seen to do so.
type watch struct {
	path    string
	resp    *client.Response
	changed chan struct{} // a frame arrived or the stream ended (1-buffered)

	mu       sync.Mutex
	events   []check.Event
	frames   int
	noID     error // the first frame without id/event
	badFrame error // the first frame that is not a JSON Event
	ended    error // why reading stopped (io.EOF: the server closed)
}

// watchSession opens the session stream and starts reading it. A stream
// that cannot be opened is returned with notStream set; the streaming specs
// judge that, so the callers only lose the live view.
func watchSession(ctx context.Context, session string) (*watch, error) {
	GinkgoHelper()
	path := "/v1/sessions/" + client.Seg(session) + "/events/stream"
	if why := notWatchable.Load(); why != nil {
		// The target already answered a session stream with something that
		// is not one: asking again in every spec only costs time.
		return nil, errors.New(*why)
	}
	sctx, cancel := context.WithCancel(ctx)
	// Timeout only bounds the body sample of an answer that is not a
	// stream (a 200 text/plain "stream" never ends): the watch is an extra
	// view, so a target that refuses it costs each spec half a second, not
	// a full exchange timeout. The streaming specs judge that answer.
	s, err := suite.Client().Stream(sctx, client.Request{Path: path, Timeout: 500 * time.Millisecond})
	if err != nil {
		cancel()
		suite.Transport(err, suite.SpecReqs()...)
	}
	w := &watch{path: path, resp: s.Response, changed: make(chan struct{}, 1)}
	if err := check.EventStream(s.Response); err != nil {
		s.Close()
		cancel()
		msg := err.Error()
		notWatchable.Store(&msg)
		return nil, err
	}
	done := make(chan struct{})
	DeferCleanup(func() { cancel(); s.Close(); <-done })
	go func() {
		defer close(done)
		w.read(sctx, s)
	}()
	return w, nil
}

// notWatchable remembers, for the rest of the run, that the target does not
// answer session streams with a stream.
var notWatchable atomic.Pointer[string]

func (w *watch) read(ctx context.Context, s *client.Stream) {
	where := "GET " + w.path
	for {
		fr, err := s.NextEvent(ctx)
		w.mu.Lock()
		if err != nil {
			w.ended = err
			w.mu.Unlock()
			w.signal()
			return
		}
		if fr.Event == "error" {
			// Not an event frame: the stream ends here with the target's
			// reason (docs/interpretations.md#stream-error-frame).
			if e, form, err := check.FrameError(where, fr); err == nil {
				w.ended = fmt.Errorf("%s: an error frame (%s): %s: %s", where, form, e.Code, e.Message)
			} else {
				w.ended = err
			}
			w.mu.Unlock()
			w.signal()
			return
		}
		w.frames++
		if err := check.FrameFields(where, fr); err != nil && w.noID == nil {
			w.noID = err
		}
		if e, err := check.FrameEvent(where, fr); err != nil {
			if w.badFrame == nil {
				w.badFrame = err
			}
		} else {
			w.events = append(w.events, e)
		}
		w.mu.Unlock()
		w.signal()
	}
}

func (w *watch) signal() {
	select {
	case w.changed <- struct{}{}:
	default:
	}
}

// snapshot returns what the stream delivered so far.
func (w *watch) snapshot() (evs []check.Event, badFrame, ended error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]check.Event(nil), w.events...), w.badFrame, w.ended
}

// until waits, within the stream timeout, until cond holds for the events
// delivered so far, the stream breaks or ends, or a frame is malformed. It
// returns the events and whether cond held.
func (w *watch) until(ctx context.Context, cond func([]check.Event) bool) ([]check.Event, bool) {
	timer := time.NewTimer(suite.Env().Config.Timeouts.Stream)
	defer timer.Stop()
	for {
		evs, bad, ended := w.snapshot()
		if cond(evs) {
			return evs, true
		}
		if bad != nil || ended != nil {
			return evs, false
		}
		select {
		case <-w.changed:
		case <-timer.C:
			return evs, false
		case <-ctx.Done():
			return evs, false
		}
	}
}

// why describes, for a failure message, why the stream stopped short.
func (w *watch) why() string {
	_, bad, ended := w.snapshot()
	switch {
	case bad != nil:
		return bad.Error()
	case errors.Is(ended, io.EOF):
		return "the server closed the stream"
	case ended != nil:
		return "reading the stream failed: " + ended.Error()
	}
	return fmt.Sprintf("nothing more arrived within the stream timeout %s", suite.Env().Config.Timeouts.Stream)
}

// taskChanges returns the state events the stream delivered for task id.
func taskChanges(id string, evs []check.Event) []check.Change {
	cs, _ := check.Changes(id, evs)
	return cs
}
