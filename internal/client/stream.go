package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync"
	"time"

	"github.com/harn-conform/conform/internal/sse"
)

// Stream is an open SSE response read frame by frame with the checker's own
// WHATWG reader. One goroutine reads the body; Next waits on it with a
// deadline, so a silent server costs a timeout, never a hang.
type Stream struct {
	// Response carries the status and headers; for a non-200 or non-SSE
	// answer it also carries the (bounded) body, and Next returns an error.
	Response *Response

	path   string
	frames chan frameOrErr
	cancel context.CancelFunc
	body   io.Closer
	once   sync.Once
	rec    *Recorder
	ex     *Exchange
	start  time.Time
	last   error
}

type frameOrErr struct {
	f   sse.Frame
	err error
}

// notStreamSample bounds what is kept of an answer that is not an event
// stream.
const notStreamSample = 64 << 10

// ErrNotEventStream is returned by Next when the answer was not a 200
// text/event-stream; Response says what it was.
var ErrNotEventStream = errors.New("response is not a 200 text/event-stream")

// Stream opens an SSE stream. The context bounds the whole stream's life;
// the client's timeout bounds the wait for response headers. Set
// req.Header "Last-Event-ID" to resume.
func (c *Client) Stream(ctx context.Context, req Request) (*Stream, error) {
	ctx, cancel := context.WithCancel(ctx)
	hr, body, err := c.build(ctx, req)
	if err != nil {
		cancel()
		return nil, err
	}
	hr.Header.Set("Accept", "text/event-stream")
	start := time.Now()
	if err := c.health.check(); err != nil {
		cancel()
		terr := &TransportError{Method: hr.Method, URL: c.Redactor().String(hr.URL.String()), Err: err}
		c.rec.add(c.exchange("sse", hr, body, nil, nil, false, start, terr))
		return nil, terr
	}
	hresp, err := c.hc.Do(hr)
	if err != nil {
		c.health.unanswered(ctx, err)
		cancel()
		terr := &TransportError{Method: hr.Method, URL: c.Redactor().String(hr.URL.String()), Err: scrubErr(c.Redactor(), err)}
		c.rec.add(c.exchange("sse", hr, body, nil, nil, false, start, terr))
		return nil, terr
	}
	c.health.answered()
	resp := &Response{Method: hr.Method, URL: hr.URL.String(), Status: hresp.StatusCode, Header: hresp.Header, Duration: time.Since(start)}
	s := &Stream{Response: resp, path: req.Path, cancel: cancel, body: hresp.Body, rec: c.rec, start: start, frames: make(chan frameOrErr, 64)}
	if hresp.StatusCode != http.StatusOK || !IsEventStream(hresp.Header.Get("Content-Type")) {
		// Not a stream we can read: keep a short, bounded sample of the body
		// for the report. A 200 text/plain "stream" may never end, so the
		// sample is cut by size and by the exchange timeout, not by EOF.
		wait := c.opts.Timeout
		if req.Timeout > 0 {
			wait = req.Timeout
		}
		cut := time.AfterFunc(wait, func() { hresp.Body.Close() })
		b, truncated, _ := readBounded(hresp.Body, min(c.opts.MaxBodyBytes, notStreamSample))
		if !cut.Stop() {
			truncated = true // cut by time: what was read is not the whole body
		}
		resp.Body, resp.Truncated = b, truncated
		hresp.Body.Close()
		cancel()
		s.ex = c.rec.add(c.exchange("sse", hr, body, hresp, b, truncated, start, nil))
		c.observe("sse", req, hr, body, hresp, b, truncated)
		s.last = fmt.Errorf("%s: %w (Content-Type %q)", resp, ErrNotEventStream, hresp.Header.Get("Content-Type"))
		close(s.frames)
		return s, nil
	}
	s.ex = c.rec.add(c.exchange("sse", hr, body, hresp, nil, false, start, nil))
	c.observe("sse", req, hr, body, hresp, nil, false)
	rd := sse.NewReader(hresp.Body, sse.Options{MaxLineBytes: int(min(c.opts.MaxBodyBytes, 1<<20)), MaxFrameBytes: int(min(c.opts.MaxBodyBytes, 4<<20))})
	red := c.Redactor()
	go func() {
		defer close(s.frames)
		for {
			f, err := rd.Next()
			if err == nil {
				s.rec.addFrame(s.ex, red.String(string(f.Raw)))
			}
			select {
			case s.frames <- frameOrErr{f, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return s, nil
}

// IsEventStream reports whether a Content-Type is text/event-stream
// (parameters such as charset allowed).
func IsEventStream(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "text/event-stream"
}

// ErrStreamTimeout is wrapped by Next when no frame arrived in time.
var ErrStreamTimeout = errors.New("no frame before the deadline")

// Next returns the next block (comment-only blocks included). It returns
// io.EOF when the server closed the stream cleanly, an error wrapping
// ErrStreamTimeout when ctx ends first (the stream stays usable), and the
// reader's error (limits, truncation) otherwise.
func (s *Stream) Next(ctx context.Context) (sse.Frame, error) {
	if s.last != nil {
		return sse.Frame{}, s.last
	}
	select {
	case fe, ok := <-s.frames:
		if !ok {
			if s.last == nil {
				s.last = io.EOF
			}
			return sse.Frame{}, s.last
		}
		if fe.err != nil {
			s.last = fe.err
			s.rec.finish(s.ex, nonEOF(fe.err), time.Since(s.start))
		}
		return fe.f, fe.err
	case <-ctx.Done():
		return sse.Frame{}, fmt.Errorf("%s: %w: %v", s.Response, ErrStreamTimeout, ctx.Err())
	}
}

// NextEvent skips blocks a browser would not dispatch (comment-only,
// id-only) and returns the next one with data.
func (s *Stream) NextEvent(ctx context.Context) (sse.Frame, error) {
	for {
		f, err := s.Next(ctx)
		if err != nil || f.HasData {
			return f, err
		}
	}
}

// ReadEvent is NextEvent as a Feed sees it: the next block with data,
// decoded (a block of event `error` is the server's error in place of
// events), or a *WaitError wrapping what Next returned.
func (s *Stream) ReadEvent(ctx context.Context) (FeedEvent, error) {
	f, err := s.NextEvent(ctx)
	if err != nil {
		we := &WaitError{Transport: TransportSSE, Path: s.path}
		if !errors.Is(err, ErrStreamTimeout) {
			we.Ended = err
		}
		return FeedEvent{}, we
	}
	fe := FeedEvent{Kind: f.Event, At: f.ArrivedAt, Data: []byte(f.Data)}
	if f.HasID {
		fe.ID = f.ID
	}
	if f.Event == "error" {
		fe.Problem = ErrServerError
		return fe, nil
	}
	fe.Event, fe.Problem = decodeObject(fe.Data)
	return fe, nil
}

func nonEOF(err error) error {
	if errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil
	}
	return err
}

// Close ends the stream and its reader goroutine.
func (s *Stream) Close() {
	s.once.Do(func() {
		s.cancel()
		s.body.Close()
		s.rec.finish(s.ex, nil, time.Since(s.start))
	})
}
