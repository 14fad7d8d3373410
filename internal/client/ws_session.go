package client

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/ws"
)

// A WSSession is one harn-ws.v1 connection (docs/websocket.md) recorded
// into the client's transcript: the upgrade is an Exchange of kind
// "websocket" and every frame either way is one of its Frames, "> " for
// what the suite sent and "< " for what the server sent, redacted (an auth
// frame's credential keeps only its scheme, as an Authorization header
// does) and bounded like SSE frames: each cut at 2 KiB, and of a long
// session the first and the last 25 kept, the ones between counted in
// FramesDropped. One goroutine reads the connection for
// the session's whole life, so the server's ping frames are answered with
// pong at once even while the caller is busy elsewhere, and a caller waits
// on what was read with a deadline of its own: a silent server costs a
// timeout, never a hang.
//
// Each server frame is decoded and judged against the profile's
// server-to-client schema (ws.Judge, ws.Frame.Problems); what the
// judgement means is the caller's to say. The Event of each event frame is
// shown to the client's Observer (Traffic of KindWSFrame, Component
// "Event") as SSE events are, so the OpenAPI oracle judges it.
//
// A session is also a Feed (ReadEvent): its event frames, and the
// connection-level error frames, in order.
type WSSession struct {
	// Path is the protocol path the session was opened on.
	Path string
	// Response is the upgrade's answer (101): status and headers.
	Response *Response
	// AuthID is the id of the auth frame OpenWS sent (way ws.ByAuthFrame),
	// "" when it sent none.
	AuthID string

	conn  *ws.Conn
	c     *Client
	rec   *Recorder
	ex    *Exchange
	start time.Time

	mu      sync.Mutex
	frames  []ws.Frame
	feedAt  int           // frames ReadEvent has looked at
	changed chan struct{} // closed and replaced whenever frames or ended change
	ended   error         // why reading stopped; nil while it goes on
	pings   []time.Time   // when RFC 6455 Ping control frames came (at most maxSessionFrames)
	sent    map[string]string
	nextID  int

	writeMu   sync.Mutex
	pumpDone  chan struct{}
	closeOnce sync.Once
}

// Frame directions in the transcript.
const (
	WSSent     = "> "
	WSReceived = "< "
)

// maxWSFrame is the largest frame a client must accept (section 2); a
// larger one ends the connection (close 1009) and the session says so.
const maxWSFrame = 4 << 20

// maxSessionFrames bounds what one session keeps in memory: a server that
// floods past it has its connection closed, and the session says why.
const maxSessionFrames = 10000

// ErrUpgradeRefused is wrapped by OpenWS's error when the server answered
// the upgrade with anything but 101 Switching Protocols; the Response then
// carries its status, headers and at most the first 1 KiB of its body.
var ErrUpgradeRefused = errors.New("WebSocket upgrade refused")

// WSDial says how to open a harn-ws.v1 session (docs/websocket.md
// section 1.3).
type WSDial struct {
	Path string
	Way  ws.Way
	// Cursor resumes on connect: Last-Event-ID (ws.ByHeaders) or the auth
	// frame's last_event_id (ws.ByAuthFrame).
	Cursor string
	// Authorization is the credential sent ("" = the configured key);
	// NoAuth sends none (ws.ByHeaders: no header; ws.ByAuthFrame: no auth
	// frame, the caller sends the first frame itself).
	Authorization string
	NoAuth        bool
	// Version is the protocol version sent ("" = the configured one).
	Version string
	// Probe marks an upgrade that is a deliberate negative probe, with why
	// (Request.Probe). A browser's upgrade is marked as one by default.
	Probe string
	// NoSubprotocol offers no subprotocol, as a browser's new
	// WebSocket(url) and the upstream TypeScript SDK's
	// connectTaskEventsWebSocket without protocols do (EXT-WS-014,
	// docs/interpretations.md ws-no-subprotocol).
	NoSubprotocol bool
}

// subprotocols is what the upgrade of d offers.
func (d WSDial) subprotocols() []string {
	if d.NoSubprotocol {
		return nil
	}
	return []string{schemas.WSProfile}
}

// request is the upgrade request of d.
func (d WSDial) request() Request {
	req := Request{Path: d.Path, Probe: d.Probe}
	if d.Way == ws.ByAuthFrame {
		// A browser's upgrade: neither header (the credential and the
		// version travel in the auth frame).
		req.NoAuth, req.NoVersion = true, true
		if d.Probe == "" {
			req.Probe = "a browser's WebSocket upgrade: the credential and version travel in the auth frame (docs/websocket.md section 1.3)"
		}
		return req
	}
	req.NoAuth, req.Authorization, req.Version = d.NoAuth, d.Authorization, d.Version
	if d.Cursor != "" {
		req.Header = http.Header{"Last-Event-ID": {d.Cursor}}
	}
	return req
}

// OpenWS upgrades d.Path to a WebSocket offering the harn-ws.v1
// subprotocol (none with d.NoSubprotocol) and authenticates the way d says: with the credential and
// version headers on the upgrade, or with a browser's upgrade and then an
// auth frame (sent here unless d.NoAuth; AuthID names it). The context
// bounds the handshake and the auth frame only; the session lives until
// Close.
//
// The error is a *TransportError when no HTTP answer came, and wraps
// ErrUpgradeRefused when the answer was not 101 (the Response says what it
// was). Either way the exchange is in the transcript. When the auth frame
// could not be sent, the session is returned with the error.
func (c *Client) OpenWS(ctx context.Context, d WSDial) (*WSSession, *Response, error) {
	s, resp, err := c.upgradeWS(ctx, d.request(), d.subprotocols())
	if err != nil || d.Way != ws.ByAuthFrame || d.NoAuth {
		return s, resp, err
	}
	s.AuthID = s.NewID()
	auth := d.Authorization
	if auth == "" {
		auth = "Bearer " + c.opts.APIKey
	}
	version := d.Version
	if version == "" {
		version = c.opts.ProtocolVersion
	}
	return s, resp, s.Send(ctx, ws.AuthFrame(s.AuthID, auth, version, d.Cursor))
}

// upgradeWS performs the upgrade of req, offering subprotocols.
func (c *Client) upgradeWS(ctx context.Context, req Request, subprotocols []string) (*WSSession, *Response, error) {
	hr, _, err := c.build(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	u := ws.URL(c.URL(req))
	h := hr.Header.Clone()
	h.Del("Accept")
	h.Del("Content-Type")
	start := time.Now()
	red := c.Redactor()
	if err := c.health.check(); err != nil {
		c.rec.add(c.exchange("websocket", hr, nil, nil, nil, false, start, err))
		return nil, nil, &TransportError{Method: http.MethodGet, URL: red.String(u), Err: err}
	}
	s := &WSSession{Path: req.Path, c: c, rec: c.rec, start: start, changed: make(chan struct{}), sent: map[string]string{}, pumpDone: make(chan struct{})}
	dctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	conn, hresp, err := ws.Dial(dctx, u, ws.Options{Header: h, MaxMessageBytes: maxWSFrame,
		Subprotocols: subprotocols, HTTPClient: c.hc, OnPing: s.controlPing})
	if hresp == nil {
		if err == nil {
			err = errors.New("no HTTP answer")
		}
		c.health.unanswered(ctx, err)
		terr := &TransportError{Method: http.MethodGet, URL: red.String(u), Err: scrubErr(red, err)}
		c.rec.add(c.exchange("websocket", hr, nil, nil, nil, false, start, terr))
		return nil, nil, terr
	}
	c.health.answered()
	resp := &Response{Method: http.MethodGet, URL: hr.URL.String(), Status: hresp.StatusCode, Header: hresp.Header, Duration: time.Since(start)}
	if err != nil {
		// coder/websocket leaves the refusal's first 1 KiB readable.
		var body []byte
		truncated := false
		if hresp.Body != nil {
			body, truncated, _ = readBounded(hresp.Body, 1024)
			hresp.Body.Close()
			truncated = truncated || len(body) == 1024
		}
		resp.Body, resp.Truncated = body, truncated
		rerr := fmt.Errorf("%s: %w: %v", resp, ErrUpgradeRefused, scrubErr(red, err))
		c.rec.add(c.exchange("websocket", hr, nil, hresp, body, truncated, start, rerr))
		if body == nil {
			body = []byte{}
		}
		c.observe("websocket", req, hr, nil, hresp, body, truncated)
		return nil, resp, rerr
	}
	s.conn, s.Response = conn, resp
	s.ex = c.rec.add(c.exchange("websocket", hr, nil, hresp, nil, false, start, nil))
	c.observe("websocket", req, hr, nil, hresp, nil, false)
	go s.pump()
	return s, resp, nil
}

// controlPing counts an RFC 6455 Ping (the ws package answers it).
func (s *WSSession) controlPing() {
	s.mu.Lock()
	if len(s.pings) < maxSessionFrames {
		s.pings = append(s.pings, time.Now())
	}
	s.broadcast()
	s.mu.Unlock()
}

// broadcast wakes every waiter; s.mu is held.
func (s *WSSession) broadcast() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// pump reads every message until the connection ends.
func (s *WSSession) pump() {
	defer close(s.pumpDone)
	red := s.c.Redactor()
	for {
		m, err := s.conn.Next(context.Background())
		if err != nil {
			s.mu.Lock()
			s.ended = scrubErr(red, err)
			s.broadcast()
			s.mu.Unlock()
			s.rec.finish(s.ex, endError(err), time.Since(s.start))
			return
		}
		f := ws.Judge(m)
		s.rec.addWSFrame(s.ex, WSReceived+describeData(red, f.Binary, m.Data))
		s.mu.Lock()
		if len(s.frames) >= maxSessionFrames {
			s.mu.Unlock()
			s.conn.Drop()
			s.mu.Lock()
			s.ended = fmt.Errorf("the server sent more than %d frames: the suite stopped reading and closed the connection", maxSessionFrames)
			s.broadcast()
			s.mu.Unlock()
			return
		}
		f.Seq = len(s.frames) + 1
		s.frames = append(s.frames, f)
		s.broadcast()
		s.mu.Unlock()
		if f.Type == ws.TypeEvent {
			s.observeEvent(f)
		}
		if id, ok := f.Obj["id"].(string); ok && f.Type == ws.TypePing {
			// The client answers every ping (section 7); a write that fails
			// shows as the connection's end.
			ctx, cancel := context.WithTimeout(context.Background(), s.c.opts.Timeout)
			_ = s.Send(ctx, map[string]any{"type": ws.TypePong, "in_reply_to": id})
			cancel()
		}
	}
}

// endError is what the transcript records when reading stopped: nothing
// for the client's own close.
func endError(err error) error {
	if errors.Is(err, net.ErrClosed) {
		return nil
	}
	return err
}

// observeEvent shows the Event of an event frame to the observer.
func (s *WSSession) observeEvent(f ws.Frame) {
	if s.c.obs == nil {
		return
	}
	ev, ok := f.Obj["event"]
	if !ok {
		return // the schema reports the missing member
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return
	}
	s.c.obs(Traffic{Kind: KindWSFrame, Method: http.MethodGet, Path: s.Path, Component: "Event",
		Label: fmt.Sprintf("GET %s %s", s.Path, f), ResponseBody: b})
}

// describeData renders a message for the transcript: text as is, a binary
// message marked (as text when it is UTF-8, else base64), both redacted.
func describeData(red interface{ String(string) string }, binary bool, data []byte) string {
	if !binary {
		return red.String(string(data))
	}
	if utf8.Valid(data) {
		return fmt.Sprintf("[binary, %d bytes] %s", len(data), red.String(string(data)))
	}
	return fmt.Sprintf("[binary, %d bytes, base64] %s", len(data), red.String(base64.StdEncoding.EncodeToString(data)))
}

// NewID returns a frame id unique on this session ("c-1", "c-2", …).
func (s *WSSession) NewID() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	return fmt.Sprintf("c-%d", s.nextID)
}

// Send writes one frame as a JSON text message and records it. An auth
// frame's authorization member is recorded as an Authorization header is,
// keeping only its scheme.
func (s *WSSession) Send(ctx context.Context, frame map[string]any) error {
	b, err := json.Marshal(frame)
	if err != nil {
		return fmt.Errorf("encoding a %v frame: %w", frame["type"], err)
	}
	shown := b
	if a, ok := frame["authorization"].(string); ok {
		cp := make(map[string]any, len(frame))
		for k, v := range frame {
			cp[k] = v
		}
		cp["authorization"] = s.c.Redactor().Header(http.Header{"Authorization": {a}}).Get("Authorization")
		shown, _ = json.Marshal(cp)
	}
	if id, ok := frame["id"].(string); ok {
		t, _ := frame["type"].(string)
		s.mu.Lock()
		s.sent[id] = t
		s.mu.Unlock()
	}
	return s.write(ctx, false, b, string(shown))
}

// SendRaw writes data as one text or binary message, as is (for the
// profile's framing faults), and records it.
func (s *WSSession) SendRaw(ctx context.Context, binary bool, data []byte) error {
	return s.write(ctx, binary, data, describeData(s.c.Redactor(), binary, data))
}

func (s *WSSession) write(ctx context.Context, binary bool, data []byte, shown string) error {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, s.c.opts.Timeout)
	defer cancel()
	s.rec.addWSFrame(s.ex, WSSent+s.c.Redactor().String(shown))
	var err error
	if binary {
		err = s.conn.WriteBinary(ctx, data)
	} else {
		err = s.conn.WriteText(ctx, data)
	}
	if err != nil {
		return &TransportError{Method: http.MethodGet, URL: s.Path + " (WebSocket)", Err: scrubErr(s.c.Redactor(), err)}
	}
	return nil
}

// SentType is the type of the frame the suite sent with id ("" if none).
func (s *WSSession) SentType(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent[id]
}

// Len is how many server frames have arrived so far.
func (s *WSSession) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.frames)
}

// Frames returns every server frame so far, in order.
func (s *WSSession) Frames() []ws.Frame {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ws.Frame(nil), s.frames...)
}

// ControlPings says when the server sent RFC 6455 Ping control frames.
func (s *WSSession) ControlPings() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Time(nil), s.pings...)
}

// waitError says why a wait of d found nothing: ended, or (nil) it ran out.
func (s *WSSession) waitError(d time.Duration, ended error) *WaitError {
	e := &WaitError{Transport: TransportWebSocket, Path: s.Path, Waited: d, Ended: ended}
	if ended != nil {
		e.Code, e.Reason, e.Closed = s.CloseStatus()
	}
	return e
}

// ReadEvent is the session as a Feed: the next event frame after the last
// one it returned, as a FeedEvent (event_id its ID), or a connection-level
// error frame (one that answers no command the suite sent: the server
// follows it with a close) as ErrServerError. An event frame whose event
// is not an object carries no Event to show and is passed over: the frame
// schema judges it wherever it is read (EXT-WS-007). When ctx ends first,
// or the connection ended and every frame was looked at, the error is a
// *WaitError. Await and the other waits keep positions of their own.
func (s *WSSession) ReadEvent(ctx context.Context) (FeedEvent, error) {
	for {
		s.mu.Lock()
		for s.feedAt < len(s.frames) {
			f := s.frames[s.feedAt]
			s.feedAt++
			if fe, ok := s.feedEvent(f); ok {
				s.mu.Unlock()
				return fe, nil
			}
		}
		ended, changed := s.ended, s.changed
		s.mu.Unlock()
		if ended != nil {
			return FeedEvent{}, s.waitError(0, ended)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return FeedEvent{}, s.waitError(0, nil)
		}
	}
}

// feedEvent is what ReadEvent shows of f; s.mu is held.
func (s *WSSession) feedEvent(f ws.Frame) (FeedEvent, bool) {
	fe := FeedEvent{ID: f.Str("event_id"), At: f.At, Data: f.Raw}
	switch f.Type {
	case ws.TypeEvent:
		fe.Event = f.Event()
		return fe, fe.Event != nil
	case ws.TypeError:
		if slices.Contains(ws.CommandTypes, s.sent[f.Str("in_reply_to")]) {
			return FeedEvent{}, false // a command's answer
		}
		fe.ID, fe.Problem = "", ErrServerError
		return fe, true
	}
	return FeedEvent{}, false
}

// Await returns the first server frame after frame number after (0: from
// the first) that satisfies want, waiting up to d. Frames before it are not
// consumed: callers keep their own positions (a frame's Seq). The error is a
// *WaitError, or ctx's when the caller gave up.
func (s *WSSession) Await(ctx context.Context, d time.Duration, after int, want func(ws.Frame) bool) (ws.Frame, error) {
	t := time.NewTimer(d)
	defer t.Stop()
	next := after
	for {
		s.mu.Lock()
		for next < len(s.frames) {
			f := s.frames[next]
			next++
			if want(f) {
				s.mu.Unlock()
				return f, nil
			}
		}
		ended, changed := s.ended, s.changed
		s.mu.Unlock()
		if ended != nil {
			return ws.Frame{}, s.waitError(d, ended)
		}
		select {
		case <-changed:
		case <-t.C:
			return ws.Frame{}, s.waitError(d, nil)
		case <-ctx.Done():
			return ws.Frame{}, context.Cause(ctx)
		}
	}
}

// AwaitEnd waits up to d for the connection to end and returns why
// (a *WaitError whose Ended is nil when it is still open).
func (s *WSSession) AwaitEnd(ctx context.Context, d time.Duration) *WaitError {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		ended, changed := s.ended, s.changed
		s.mu.Unlock()
		if ended != nil {
			return s.waitError(d, ended)
		}
		select {
		case <-changed:
		case <-t.C:
			return s.waitError(d, nil)
		case <-ctx.Done():
			return s.waitError(d, nil)
		}
	}
}

// AwaitHeartbeat waits up to d for the server's first heartbeat after
// since: a ping frame, or an RFC 6455 Ping control frame, whichever came
// first. It returns the ping frame (the zero frame for a control Ping) and
// when the heartbeat came; ok is false when none came in time or the
// connection ended first.
func (s *WSSession) AwaitHeartbeat(ctx context.Context, d time.Duration, since time.Time) (f ws.Frame, at time.Time, ok bool) {
	t := time.NewTimer(d)
	defer t.Stop()
	for {
		s.mu.Lock()
		var frame ws.Frame
		for _, fr := range s.frames {
			if fr.Type == "ping" && fr.At.After(since) {
				frame = fr
				break
			}
		}
		var ctl time.Time
		for _, p := range s.pings {
			if p.After(since) {
				ctl = p
				break
			}
		}
		ended, changed := s.ended, s.changed
		s.mu.Unlock()
		switch {
		case frame.Seq > 0 && (ctl.IsZero() || !ctl.Before(frame.At)):
			return frame, frame.At, true
		case !ctl.IsZero():
			return ws.Frame{}, ctl, true
		case ended != nil:
			return ws.Frame{}, time.Time{}, false
		}
		select {
		case <-changed:
		case <-t.C:
			return ws.Frame{}, time.Time{}, false
		case <-ctx.Done():
			return ws.Frame{}, time.Time{}, false
		}
	}
}

// Command sends frame (with an id of its own unless it has one) and waits
// up to d for the result or error frame naming it in in_reply_to.
func (s *WSSession) Command(ctx context.Context, d time.Duration, frame map[string]any) (ws.Frame, error) {
	id, _ := frame["id"].(string)
	if id == "" {
		id = s.NewID()
		frame["id"] = id
	}
	after := s.Len()
	if err := s.Send(ctx, frame); err != nil {
		return ws.Frame{}, err
	}
	return s.Await(ctx, d, after, func(f ws.Frame) bool {
		return (f.Type == "result" || f.Type == "error") && f.Str("in_reply_to") == id
	})
}

// CloseStatus is the server's close frame, if one came.
func (s *WSSession) CloseStatus() (websocket.StatusCode, string, bool) {
	return s.conn.CloseStatus()
}

// Ended says why reading stopped (nil while the connection is open).
func (s *WSSession) Ended() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// Close ends the session with a normal closure and waits for its reader.
// It is safe to call more than once, and after the server closed.
func (s *WSSession) Close() {
	s.closeOnce.Do(func() {
		_ = s.conn.Close(websocket.StatusNormalClosure, "conform: done")
		<-s.pumpDone
		s.rec.finish(s.ex, nil, time.Since(s.start))
	})
}

// Drop ends the session without a close handshake, as a broken network
// would, and waits for its reader.
func (s *WSSession) Drop() {
	s.closeOnce.Do(func() {
		s.conn.Drop()
		<-s.pumpDone
		s.rec.finish(s.ex, nil, time.Since(s.start))
	})
}
