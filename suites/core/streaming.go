package core

import (
	"context"
	"errors"
	"fmt"
	"io"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("SSE streams", func() {
	It("serves a task's events on the task stream as framed JSON Events", suite.Req("CORE-SSE-001", "CORE-SSE-002", "CORE-SSE-003", "CORE-EVT-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		want, _ := f.events(ctx, "/v1/tasks/"+client.Seg(id)+"/events")
		f.verifyStream(ctx, "/v1/tasks/"+client.Seg(id)+"/stream", want)
	})

	It("serves a session's events on the session stream as framed JSON Events", suite.Req("CORE-SSE-001", "CORE-SSE-002", "CORE-SSE-003", "CORE-EVT-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		f.awaitTerminal(ctx, f.submit(ctx, nil))
		want, _ := f.events(ctx, "/v1/sessions/"+client.Seg(f.session)+"/events")
		f.verifyStream(ctx, "/v1/sessions/"+client.Seg(f.session)+"/events/stream", want)
	})

	It("delivers a task's events live on a session stream opened before the task was submitted", suite.Req("CORE-SSE-001", "CORE-SSE-002", "CORE-SSE-003"), func(ctx SpecContext) {
		f := newFlow(ctx) // opens the session stream before any submit
		suite.Must("CORE-SSE-001", f.watchErr)
		id := f.submit(ctx, nil)
		final, _ := f.awaitTerminal(ctx, id)
		if !check.Terminal(final) {
			suite.Unverified(fmt.Sprintf("the target's agent did not finish a plain task within %s (last read %s)", suite.Env().Config.Timeouts.Task, final), suite.RemedyAgentEnds)
		}
		want, err := f.events(ctx, "/v1/tasks/"+client.Seg(id)+"/events")
		suite.Must("CORE-EVT-001", err)
		ids := check.IDs(want)
		evs, ok := f.watch.until(ctx, func(evs []check.Event) bool { return containsAll(check.IDs(evs), ids) })
		f.watch.mu.Lock()
		noID, badFrame := f.watch.noID, f.watch.badFrame
		f.watch.mu.Unlock()
		suite.Check("CORE-SSE-002", noID)
		suite.Check("CORE-SSE-003", badFrame)
		if !ok && badFrame == nil {
			suite.Check("CORE-SSE-001", fmt.Errorf("GET %s: opened before task %s was submitted, the stream delivered %d of the task's %d events (missing %v) while the task ran to %s: %s",
				f.watch.path, id, len(ids)-len(missing(ids, check.IDs(evs))), len(ids), missing(ids, check.IDs(evs)), final, f.watch.why()))
		}
	})
})

// verifyStream reads a stream from its start until every wanted event
// arrived (or, without wanted events, until done says so or the first
// frame) and checks its framing.
func (f *flow) verifyStream(ctx context.Context, path string, want []check.Event, done ...func(*stream) bool) *stream {
	GinkgoHelper()
	ids := check.IDs(want)
	stop := func(rd *stream) bool {
		if len(done) > 0 {
			return done[0](rd)
		}
		if len(ids) == 0 {
			return rd.frames > 0
		}
		return containsAll(rd.ids, ids)
	}
	rd := readStream(ctx, path, "", stop)
	suite.Must("CORE-SSE-001", rd.notStream)
	suite.Must("CORE-SSE-001", rd.errFrame)
	if rd.frames == 0 {
		how := "stayed silent"
		if rd.closed {
			how = "closed"
		}
		suite.Must("CORE-SSE-001", fmt.Errorf("%s: no event frame within the stream timeout %s (the stream %s); want the resource's events",
			rd.resp, suite.Env().Config.Timeouts.Stream, how))
	}
	suite.Check("CORE-SSE-002", rd.noID)
	suite.Check("CORE-SSE-003", rd.badFrame)
	if rd.badFrame == nil {
		suite.Check("CORE-EVT-002", check.Sequences("GET "+path, rd.events))
	}
	return rd
}

// missing lists the ids of want that have does not hold.
func missing(want, have []string) []string {
	set := map[string]bool{}
	for _, h := range have {
		set[h] = true
	}
	var out []string
	for _, w := range want {
		if !set[w] {
			out = append(out, w)
		}
	}
	return out
}

// containsAll reports whether have holds every id of want, each as often as
// want does: a target that gives several events one id (a race fault's
// symptom) has not delivered them all when the first copy arrives, and a
// wait that stopped there would judge a stream cut short.
func containsAll(have, want []string) bool {
	count := map[string]int{}
	for _, h := range have {
		count[h]++
	}
	for _, w := range want {
		if count[w]--; count[w] < 0 {
			return false
		}
	}
	return true
}

// stream is what a bounded read of an SSE stream saw.
type stream struct {
	resp      *client.Response
	frames    int           // data frames read
	events    []check.Event // their decoded Events, when all decoded
	ids       []string      // the event id each data frame stands for
	noID      error         // the first framing failure (id/event missing)
	badFrame  error         // the first data failure (not a JSON Event of the frame)
	notStream error         // the answer was not a 200 event stream
	errFrame  error         // the target sent an event: error frame instead of the events
	closed    bool          // the server ended the stream
	timedOut  bool          // the stream timeout passed first
}

// readStream opens an SSE stream (resuming from lastID when set) and reads
// data frames until done (asked after each frame) says enough, the server
// closes, or the stream timeout passes. Transport failures end the spec with an error verdict.
func readStream(ctx context.Context, path, lastID string, done func(*stream) bool) *stream {
	GinkgoHelper()
	req := client.Request{Path: path}
	if lastID != "" {
		req.Header = map[string][]string{"Last-Event-ID": {lastID}}
	}
	sctx, cancel := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
	defer cancel()
	s, err := suite.Client().Stream(sctx, req)
	suite.Transport(err, suite.SpecReqs()...)
	defer s.Close()
	rd := &stream{resp: s.Response}
	if err := check.EventStream(s.Response); err != nil {
		rd.notStream = err
		return rd
	}
	where := "GET " + path
	for {
		fr, err := s.NextEvent(sctx)
		switch {
		case errors.Is(err, io.EOF):
			rd.closed = true
			return rd
		case errors.Is(err, client.ErrStreamTimeout):
			rd.timedOut = true
			return rd
		case err != nil:
			rd.badFrame = fmt.Errorf("%s: reading the stream: %w", where, err)
			return rd
		}
		if fr.Event == "error" {
			// docs/interpretations.md#stream-error-frame: not an event
			// frame (no id or Event needed), but the target could not
			// deliver; the requirement that expected the events fails.
			e, form, err := check.FrameError(where, fr)
			if err != nil {
				rd.errFrame = err
			} else {
				rd.errFrame = fmt.Errorf("%s: the stream sent an error frame (%s) instead of the events: %s: %s", where, form, e.Code, e.Message)
			}
			return rd
		}
		rd.frames++
		rd.ids = append(rd.ids, check.FrameID(fr))
		if err := check.FrameFields(where, fr); err != nil && rd.noID == nil {
			rd.noID = err
		}
		e, err := check.FrameEvent(where, fr)
		if err != nil {
			if rd.badFrame == nil {
				rd.badFrame = err
			}
		} else if rd.badFrame == nil {
			rd.events = append(rd.events, e)
		}
		if done != nil && done(rd) {
			return rd
		}
	}
}
