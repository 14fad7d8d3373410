package core

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("SSE resume", func() {
	It("resumes a task stream after Last-Event-ID with exactly the later events", suite.Req("CORE-RESUME-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		f.verifyResume(ctx, "/v1/tasks/"+client.Seg(id)+"/events", "/v1/tasks/"+client.Seg(id)+"/stream")
	})

	It("resumes a session stream after Last-Event-ID with exactly the later events", suite.Req("CORE-RESUME-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		f.awaitTerminal(ctx, f.submit(ctx, nil))
		f.verifyResume(ctx, "/v1/sessions/"+client.Seg(f.session)+"/events", "/v1/sessions/"+client.Seg(f.session)+"/events/stream")
	})

	It("resumes a task stream cut while the task runs with exactly the events it missed", suite.Req("CORE-RESUME-001"), func(ctx SpecContext) {
		f := newFlow(ctx)
		// A plain task of the spec's own first: cut its stream after two
		// events, and it counts if the task had not ended by then.
		var tries []string
		for range plainTries {
			id := f.submit(ctx, nil)
			path := "/v1/tasks/" + client.Seg(id) + "/stream"
			cursor := cutStream(ctx, path)
			if after := f.lastRead(ctx, id); check.Terminal(after) {
				tries = append(tries, fmt.Sprintf("task %s had ended (%s) when its stream was cut", id, after))
				continue
			}
			fromRun("task "+id+" (running when its stream was cut)", "a plain task of the spec, its stream cut after two events while it ran")
			f.awaitTerminal(ctx, id)
			f.verifyResumeFrom(ctx, "/v1/tasks/"+client.Seg(id)+"/events", path, cursor)
			return
		}
		needHook("no plain task was caught running: "+strings.Join(tries, "; "), suite.RemedyRunning)
		id := f.submit(ctx, []any{
			map[string]any{"op": "work", "ms": 10},
			map[string]any{"op": "emit", "count": 4, "interval_ms": 2},
			map[string]any{"op": "complete"},
		})
		fromHook("task "+id, "a task that works, then emits four messages")
		path := "/v1/tasks/" + client.Seg(id) + "/stream"
		// Read the first two events, then hang up while the task goes on.
		cursor := cutStream(ctx, path)
		f.awaitTerminal(ctx, id)
		f.verifyResumeFrom(ctx, "/v1/tasks/"+client.Seg(id)+"/events", path, cursor)
	})

	It("answers an unknown Last-Event-ID with one cursor_expired error event and a close", suite.Req("CORE-RESUME-002"), func(ctx SpecContext) {
		f := newFlow(ctx)
		id := f.submit(ctx, nil)
		f.awaitTerminal(ctx, id)
		for _, path := range []string{"/v1/tasks/" + client.Seg(id) + "/stream", "/v1/sessions/" + client.Seg(f.session) + "/events/stream"} {
			verifyCursorExpired(ctx, path)
		}
	})
})

// cutStream reads the first two events of a task stream and hangs up; it
// returns the id of the last one read, the cursor to resume from.
func cutStream(ctx context.Context, path string) string {
	GinkgoHelper()
	cut := readStream(ctx, path, "", func(rd *stream) bool { return rd.frames >= 2 })
	suite.Must("CORE-SSE-001", cut.notStream)
	if cut.frames == 0 {
		suite.Must("CORE-SSE-001", fmt.Errorf("%s: no event frame within the stream timeout %s", cut.resp, suite.Env().Config.Timeouts.Stream))
	}
	cursor := cut.ids[len(cut.ids)-1]
	if cursor == "" {
		suite.Must("CORE-SSE-002", fmt.Errorf("%s: the last frame read has neither an id field nor data with an event id, so there is no cursor to resume from", cut.resp))
	}
	return cursor
}

// verifyResume resumes the stream from the second event of the resource's
// REST event list and compares what arrives with the rest of that list.
func (f *flow) verifyResume(ctx context.Context, list, path string) {
	GinkgoHelper()
	all, err := f.events(ctx, list)
	if err != nil {
		suite.Check("CORE-EVT-001", err)
		suite.Unverified(fmt.Sprintf("GET %s could not be read: %v", list, err), "fix the event list (see CORE-EVT-001)")
	}
	if len(all) < 3 {
		suite.Unverified(fmt.Sprintf("GET %s gave %d events; a resume check needs at least three", list, len(all)), remedyFewEvents)
	}
	f.verifyResumeFrom(ctx, list, path, all[1].ID)
}

// verifyResumeFrom resumes the stream from cursor and compares what arrives
// with the rest of the resource's REST event list.
func (f *flow) verifyResumeFrom(ctx context.Context, list, path, cursor string) {
	GinkgoHelper()
	all, err := f.events(ctx, list)
	if err != nil {
		suite.Check("CORE-EVT-001", err)
		suite.Unverified(fmt.Sprintf("GET %s could not be read: %v", list, err), "fix the event list (see CORE-EVT-001)")
	}
	after, _ := check.After(all, cursor)
	want := check.IDs(after)
	rd := readStream(ctx, path, cursor, func(rd *stream) bool { return containsAll(rd.ids, want) })
	suite.Must("CORE-SSE-001", rd.notStream)
	suite.Check("CORE-RESUME-001", rd.errFrame) // a valid cursor refused mid-stream
	for _, id := range rd.ids {
		if id == "" {
			suite.Must("CORE-SSE-002", fmt.Errorf("%s: a frame has neither an id field nor data with an event id, so the resume cannot be checked", rd.resp))
		}
	}
	where := fmt.Sprintf("GET %s with Last-Event-ID %s", path, cursor)
	if rd.timedOut {
		where += fmt.Sprintf(" (read for the stream timeout %s)", suite.Env().Config.Timeouts.Stream)
	}
	suite.Check("CORE-RESUME-001", check.Resumed(where, check.IDs(all), cursor, rd.ids))
}

// verifyCursorExpired opens a stream with a cursor the target never issued
// and expects one cursor_expired error event, then the end of the stream
// (or a 410 cursor_expired refusal instead of a stream).
func verifyCursorExpired(ctx context.Context, path string) {
	GinkgoHelper()
	cursor := suite.Key("conform-unknown-cursor")
	timeout := suite.Env().Config.Timeouts.Stream
	sctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	s, err := suite.Client().Stream(sctx, client.Request{Path: path, Header: map[string][]string{"Last-Event-ID": {cursor}}})
	suite.Transport(err, suite.SpecReqs()...)
	defer s.Close()
	where := fmt.Sprintf("GET %s with Last-Event-ID %s", path, cursor)
	switch resp := s.Response; {
	case resp.Status == 410:
		suite.Check("CORE-RESUME-002", check.Refused(resp, []int{410}, "cursor_expired"))
		observeError(resp)
		return
	case resp.Status != 200:
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: status = %d, want a stream with a cursor_expired error event (or 410 cursor_expired)%s", where, resp.Status, hint(resp)))
		if resp.Status >= 400 {
			observeError(resp)
		}
		return
	}
	// Not a stream: nothing to read on this path; the spec's other path is
	// still checked.
	if !suite.CheckBlocks("CORE-SSE-001", check.EventStream(s.Response), "CORE-RESUME-002") {
		return
	}
	fr, err := s.NextEvent(sctx)
	switch {
	case errors.Is(err, io.EOF):
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: the stream closed without an error event; want event: error with cursor_expired", where))
		return
	case err != nil:
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: no error event: %w", where, err))
		return
	}
	if err := check.CursorExpiredFrame(where, fr); err != nil {
		suite.Check("CORE-RESUME-002", err)
		return
	}
	fr, err = s.NextEvent(sctx)
	switch {
	case errors.Is(err, io.EOF):
	case errors.Is(err, client.ErrStreamTimeout):
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: the stream stayed open for %s after the cursor_expired event; want it closed", where, timeout))
	case err != nil:
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: after the cursor_expired event: %w", where, err))
	default:
		suite.Check("CORE-RESUME-002", fmt.Errorf("%s: after the cursor_expired event the stream went on with event %q; want it closed", where, fr.Event))
	}
}
