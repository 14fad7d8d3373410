package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/coder/websocket"
)

// Feed is the checker's transport seam: one transport's live view of the
// Events of a Session or Task. The SSE stream (Stream) and the harn-ws.v1
// session (WSSession) implement it; a spec that is about the Events a run
// delivers rather than about one transport's framing (transport parity,
// the one-way SSE spec, replay's stream views) reads through it, and a new
// transport is one more implementation (docs/architecture.md, "Recipe: a
// new transport").
type Feed interface {
	// ReadEvent returns the next unit of the transport that stands for an
	// Event (an SSE block with data, a harn-ws.v1 event frame), or the
	// server's error in its place, waiting until ctx ends. When none comes
	// it returns a *WaitError saying why: the wait ran out (the feed stays
	// usable), or the feed ended and how. One goroutine reads a feed.
	ReadEvent(ctx context.Context) (FeedEvent, error)
	// Close ends the feed and its connection; safe to call more than once.
	Close()
}

// Transports that implement Feed.
const (
	TransportSSE       = "sse"
	TransportWebSocket = "websocket"
)

var (
	_ Feed = (*Stream)(nil)
	_ Feed = (*WSSession)(nil)
)

// FeedEvent is one unit a feed delivered that stands for an Event.
type FeedEvent struct {
	// Event is the Event, decoded with numbers as json.Number; nil when the
	// unit carries none, and Problem says why.
	Event map[string]any
	// Problem wraps ErrServerError when the server sent an error in place
	// of events; otherwise it says why the unit's data is not a JSON
	// object.
	Problem error
	// ID is the event id the transport's framing gives it (an SSE id
	// field, a frame's event_id), "" when none; Kind the kind the framing
	// names (an SSE event field; harn-ws.v1 frames name none).
	ID, Kind string
	At       time.Time
	// Data is the unit's payload as received: an SSE block's data, a
	// WebSocket frame's message. Redact it before showing it.
	Data []byte
}

// ErrServerError is wrapped by a FeedEvent's Problem when the server sent
// an error in place of events: an SSE block of event `error`
// (docs/interpretations.md#stream-error-frame), or a harn-ws.v1 error frame
// that answers no command (a connection-level error, which the server
// follows with a close: docs/websocket.md section 8).
var ErrServerError = errors.New("the server sent an error in place of events")

// decodeObject decodes b as one JSON object, keeping numbers as written.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, fmt.Errorf("not a JSON object: %v", err)
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	return m, nil
}

// WaitError says why a wait on a feed found nothing: it ran out with the
// feed still open, or the feed ended first, and how (for a WebSocket, the
// server's close frame when one came).
type WaitError struct {
	Transport string // TransportSSE or TransportWebSocket
	Path      string
	// Waited is how long the wait was given; 0 when the caller's context
	// alone bounded it.
	Waited time.Duration
	// Ended is why the feed ended (nil: it is still open). For SSE, io.EOF
	// is the server ending the stream at a block boundary.
	Ended error
	// Code and Reason are the server's WebSocket close frame, when Closed.
	Code   websocket.StatusCode
	Reason string
	Closed bool
}

func (e *WaitError) what() string {
	if e.Transport == TransportSSE {
		return "the SSE stream " + e.Path
	}
	return "the WebSocket " + e.Path
}

func (e *WaitError) Error() string {
	switch {
	case e.Ended == nil && e.Waited > 0:
		return fmt.Sprintf("none came on %s within %s", e.what(), e.Waited)
	case e.Ended == nil:
		return fmt.Sprintf("none came on %s before the deadline", e.what())
	case e.Closed:
		return fmt.Sprintf("%s was closed first, with code %d reason %q", e.what(), int(e.Code), e.Reason)
	}
	return fmt.Sprintf("%s ended first (%v)", e.what(), e.Ended)
}

// Timeout reports whether the wait ran out with the feed still open.
func (e *WaitError) Timeout() bool { return e.Ended == nil }

// Unwrap is why the feed ended, or ErrStreamTimeout when the wait ran out.
func (e *WaitError) Unwrap() error {
	if e.Ended == nil {
		return ErrStreamTimeout
	}
	return e.Ended
}
