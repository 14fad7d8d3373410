// Package wsadapter serves the reference Harness's event streams and
// commands over WebSocket, as the harn-ws.v1 frame profile of
// docs/websocket.md says.
//
// It is a thin transport adapter over the Harness's core surface
// (refharness/core.go): it holds no business logic. A connection is
// authorized by refharness.Server.OpenStream (the REST stream route's
// checks), its events are the core's stream reads rendered as REST renders
// them, and every command is its REST operation run in-process through
// the Harness's router (Stream.Exec), so validation, authorization,
// tenancy, idempotency, the journal and the events are REST's own.
//
// Mount it on a Server:
//
//	h, _ := refharness.New(opts)
//	wsadapter.Mount(h, wsadapter.Options{})
//
// after which discovery advertises capabilities.websocket and upgrades on
// /v1/sessions/{id}/events/stream and /v1/tasks/{id}/stream speak the
// profile. The global feed /v1/events/stream serves no WebSocket (the
// profile leaves it optional).
//
// A connection is three goroutines: the handler's, which authenticates
// and then acts on client frames one at a time (a command runs to its
// answer before the next frame is read); a reader, the only one to read
// the socket; and a deliverer, the only writer of ready, event, request
// and ping frames, so that a resume's result is followed by no frame of
// the run it ends. Every write is bounded (Options.WriteTimeout, then
// 1013), and every goroutine ends when the connection closes.
//
// Of the profile's MAYs it leaves out: tool_request frames (the reference
// agent runs its tools itself, so a tool_result names no known request:
// 404), closing a task stream with 1000 task_ended (a client may still
// send commands after the task ends), closing 4408 for a late pong,
// 4429 rate limits, closing 4401 when an OAuth2 token expires (each
// command is authenticated again, so such a command gets error 401), and
// permessage-deflate.
package wsadapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// Options configure the adapter. Zero values take the defaults.
type Options struct {
	// HeartbeatInterval is how often the server sends a ping frame
	// (section 7): 0 means 15 s, the recommended value; it is capped at
	// 30 s, the profile's maximum. Self-test harnesses use a short one
	// (500 ms) so that a suite sees a ping without waiting 15 s.
	HeartbeatInterval time.Duration
	// PongTimeout is advertised as ready.pong_timeout_ms: 0 means 10 s.
	// The server answers client pings within it; it does not close
	// connections whose client is late with a pong (a MAY it leaves out:
	// the ping frame is for the client to notice a dead connection).
	PongTimeout time.Duration
	// WriteTimeout bounds one frame's write: a client that has not taken
	// a frame within it reads too slowly and is closed with 1013. 0
	// means 10 s.
	WriteTimeout time.Duration
	// MaxFrameBytes is the largest client frame accepted
	// (ready.max_frame_bytes); 0 means 1 MiB, the profile's minimum.
	MaxFrameBytes int64
	// AuthTimeout is how long an upgrade without Authorization waits for
	// its auth frame (section 1.3): 0 means 10 s, the profile's maximum,
	// and longer values are cut to it. Self-test harnesses use a short
	// one, so that a suite checking the deadline does not wait 10 s.
	AuthTimeout time.Duration
}

// Defaults of Options and the profile's fixed limits.
const (
	DefaultHeartbeatInterval = 15 * time.Second
	DefaultPongTimeout       = 10 * time.Second
	DefaultWriteTimeout      = 10 * time.Second
	DefaultMaxFrameBytes     = 1 << 20
	maxHeartbeat             = 30 * time.Second
	authFrameLimit           = 64 << 10         // the auth frame's limit (section 1.3)
	authDeadline             = 10 * time.Second // the auth frame's deadline (section 1.3)
	commandTimeout           = 30 * time.Second // a command SHOULD be answered within it (section 7)
	batchSize                = 256              // events read per wake-up, as the SSE stream does
)

// Adapter is the WebSocket transport of one Server: an http.Handler for
// upgrade requests on the stream paths.
type Adapter struct {
	srv  *refharness.Server
	opts Options

	// authTimeout is the auth frame's deadline (Options.AuthTimeout; tests
	// set it directly).
	authTimeout time.Duration
	// onSlow, when set (tests), is called when a connection is found to
	// read too slowly, before it is closed.
	onSlow func()

	wg sync.WaitGroup // one per connection, until all its goroutines ended
	// mu guards stopped and orders wg.Add before Wait: an upgrade that
	// arrives once Wait has begun is refused instead of racing it.
	mu      sync.Mutex
	stopped bool
	open    atomic.Int64
	seq     atomic.Int64 // connection counter, for ping ids
}

var _ http.Handler = (*Adapter)(nil)

// New builds an adapter for srv without mounting it.
func New(srv *refharness.Server, opts Options) *Adapter {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	opts.HeartbeatInterval = min(opts.HeartbeatInterval, maxHeartbeat)
	if opts.PongTimeout <= 0 {
		opts.PongTimeout = DefaultPongTimeout
	}
	if opts.WriteTimeout <= 0 {
		opts.WriteTimeout = DefaultWriteTimeout
	}
	if opts.MaxFrameBytes < DefaultMaxFrameBytes {
		opts.MaxFrameBytes = DefaultMaxFrameBytes
	}
	if opts.AuthTimeout <= 0 || opts.AuthTimeout > authDeadline {
		opts.AuthTimeout = authDeadline
	}
	return &Adapter{srv: srv, opts: opts, authTimeout: opts.AuthTimeout}
}

// Mount builds an adapter for srv and mounts it on the stream paths
// (refharness.Server.SetUpgradeHandler); discovery then advertises
// capabilities.websocket.
func Mount(srv *refharness.Server, opts Options) *Adapter {
	a := New(srv, opts)
	srv.SetUpgradeHandler(a)
	return a
}

// Open is the number of open connections.
func (a *Adapter) Open() int { return int(a.open.Load()) }

// Wait blocks until every connection has ended (the server's Close ends
// them with 1001). Upgrades that arrive after it began are refused with
// 503 service_unavailable.
func (a *Adapter) Wait() {
	a.mu.Lock()
	a.stopped = true
	a.mu.Unlock()
	a.wg.Wait()
}

// track counts a connection about to be accepted, unless Wait has begun.
func (a *Adapter) track() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stopped {
		return false
	}
	a.wg.Add(1)
	return true
}

// ServeHTTP answers a WebSocket upgrade on a stream path: the HTTP checks
// of section 1 before the upgrade, then the connection until it closes.
func (a *Adapter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", "GET")
		a.srv.WriteError(w, r, refharness.NewError(http.StatusMethodNotAllowed, "method_not_allowed", "",
			fmt.Sprintf("method %s not allowed for a WebSocket upgrade, want GET", r.Method), nil))
		return
	}
	if e := handshake(w, r); e != nil {
		// What coder/websocket's Accept would refuse in plain text, refused
		// with the error envelope instead.
		a.srv.WriteError(w, r, e)
		return
	}
	if offered := subprotocols(r); len(offered) > 0 && !slices.Contains(offered, Profile) {
		// An upgrade that offers no subprotocol is a harn-ws.v1 upgrade
		// (a browser's new WebSocket(url), the upstream TypeScript SDK;
		// docs/interpretations.md ws-no-subprotocol): Accept then selects
		// none. One that offers only other profiles is refused.
		a.srv.WriteError(w, r, refharness.NewError(http.StatusBadRequest, "invalid_request", "Sec-WebSocket-Protocol",
			"the upgrade does not offer the subprotocol "+Profile, map[string]any{"supported_subprotocols": []string{Profile}}))
		return
	}
	auth := r.Header.Get("Authorization")
	version := r.Header.Get(refharness.VersionHeader)
	var st *refharness.Stream
	if _, present := r.Header["Authorization"]; present {
		// Way (a): the REST checks, answered over HTTP before the upgrade.
		var e *refharness.Error
		if st, e = a.srv.OpenStream(r, auth, version); e != nil {
			a.srv.WriteError(w, r, e)
			return
		}
	} else if version != "" {
		// Way (b) checks only a version header that is present.
		if e := a.srv.CheckVersion(r, version); e != nil {
			a.srv.WriteError(w, r, e)
			return
		}
	}
	if !a.track() {
		a.srv.WriteError(w, r, refharness.NewError(http.StatusServiceUnavailable, "service_unavailable", "",
			"the server is shutting down", nil))
		return
	}
	defer a.wg.Done()
	ws, err := websocket.Accept(w, r, &websocket.AcceptOptions{
		Subprotocols: []string{Profile},
		// The profile uses no ambient credentials (no cookies), so a
		// page of any origin may connect (section 1.2, Origin).
		OriginPatterns: []string{"*"},
	})
	if err != nil {
		return // Accept has answered the handshake's failure
	}
	// One frame more than the limit is read so that an oversize frame
	// is told from one at the limit; the adapter refuses it itself
	// (error frame, then 1009).
	ws.SetReadLimit(a.opts.MaxFrameBytes + 1)
	a.open.Add(1)
	defer a.open.Add(-1)
	c := newConn(a, ws, r, st)
	c.run(r.Header.Get("Last-Event-ID"), version)
}

// handshake checks the RFC 6455 opening handshake's headers (section
// 4.2.1) that Accept also checks; a request that only says Upgrade:
// websocket is a malformed upgrade, 400 (for another WebSocket version,
// with the version to use in Sec-WebSocket-Version, as RFC 6455 asks; the
// status stays 400, since 426 is unsupported_protocol_version's, the Harn
// protocol version's).
func handshake(w http.ResponseWriter, r *http.Request) *refharness.Error {
	if !hasToken(r.Header.Values("Connection"), "upgrade") {
		return invalid("Connection", "a WebSocket upgrade needs Connection: Upgrade")
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		w.Header().Set("Sec-WebSocket-Version", "13")
		return refharness.NewError(http.StatusBadRequest, "invalid_request", "Sec-WebSocket-Version",
			fmt.Sprintf("Sec-WebSocket-Version %q, want 13 (RFC 6455)", v), nil)
	}
	if r.Header.Get("Sec-WebSocket-Key") == "" {
		return invalid("Sec-WebSocket-Key", "a WebSocket upgrade needs Sec-WebSocket-Key")
	}
	return nil
}

func hasToken(vals []string, tok string) bool {
	for _, v := range vals {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), tok) {
				return true
			}
		}
	}
	return false
}

// subprotocols lists the subprotocols the upgrade offers.
func subprotocols(r *http.Request) []string {
	var out []string
	for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				out = append(out, tok)
			}
		}
	}
	return out
}

// inbound is one client message as read.
type inbound struct {
	binary   bool
	data     []byte
	oversize bool
}

// conn is one connection: a reader goroutine feeding in, the dispatcher
// (the handler's goroutine) acting on client frames, and a deliverer
// goroutine sending events, requests and heartbeats.
type conn struct {
	a   *Adapter
	ws  *websocket.Conn
	req *http.Request // the upgrade request
	st  *refharness.Stream
	id  string

	ctx    context.Context // canceled when the connection is over
	cancel context.CancelFunc
	in     chan inbound
	limit  atomic.Int64 // the frame size limit the reader applies

	resume   chan runReq   // the dispatcher's resume frames, for the deliverer
	done     chan struct{} // closed when the connection starts closing
	doneOnce sync.Once
	closing  atomic.Bool    // a close began: the first one wins
	closed   chan struct{}  // closed when that close is complete
	pings    atomic.Int64   // server pings sent
	wrote    sync.WaitGroup // the reader and deliverer goroutines
}

func newConn(a *Adapter, ws *websocket.Conn, r *http.Request, st *refharness.Stream) *conn {
	ctx, cancel := context.WithCancel(context.Background())
	c := &conn{a: a, ws: ws, req: r, st: st, id: a.srv.NewID("wsc"), ctx: ctx, cancel: cancel,
		in: make(chan inbound), resume: make(chan runReq), done: make(chan struct{}), closed: make(chan struct{})}
	c.limit.Store(a.opts.MaxFrameBytes)
	return c
}

// run serves the connection until it is over; every goroutine it started
// has ended when it returns.
func (c *conn) run(lastEventID, version string) {
	defer c.cancel()
	defer c.wrote.Wait()
	defer c.recover()
	// The server's Close ends every connection: 1001, going away.
	stop := context.AfterFunc(c.serverCtx(), func() {
		c.fail(nil, refharness.NewError(http.StatusServiceUnavailable, "service_unavailable", "", "the server is shutting down; reconnect and resume", nil),
			websocket.StatusGoingAway)
	})
	defer stop()
	c.wrote.Add(1)
	go c.read()

	var authID *string
	if c.st == nil {
		var ok bool
		if c.st, authID, lastEventID, ok = c.authenticate(version); !ok {
			c.closeWith(websocket.StatusPolicyViolation, "")
			c.drain()
			return
		}
	}
	first := runReq{cursor: lastEventID, param: "Last-Event-ID", connect: true, frameID: authID}
	if _, wayA := c.req.Header["Authorization"]; !wayA {
		first.param = "/last_event_id"
	}
	c.wrote.Add(1)
	go c.deliver(first)
	c.dispatch()
	// The client closed, or a close began: make sure it is complete (a
	// later close waits for the first), so that the deliverer sees done
	// and stops.
	c.closeWith(websocket.StatusNormalClosure, "")
}

// serverCtx is canceled when the server closes.
func (c *conn) serverCtx() context.Context {
	ctx, cancel := context.WithCancel(c.ctx)
	go func() {
		select {
		case <-c.a.srv.Done():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx
}

// recover ends a connection whose goroutine panicked with 1011, instead
// of the process: a bug in one connection must not take the server down.
// Deferred first in each of the connection's goroutines.
func (c *conn) recover() {
	if v := recover(); v != nil {
		c.fail(nil, refharness.NewError(http.StatusInternalServerError, "internal_error", "", "internal error", nil), websocket.StatusInternalError)
	}
}

// read is the only reader of the connection: it reads each message (at
// most the current limit plus one byte) and hands it to the dispatcher.
// It stops at the first error, and after a message that closes the
// connection (binary, oversize).
func (c *conn) read() {
	defer c.wrote.Done()
	defer close(c.in)
	defer c.recover()
	for {
		typ, r, err := c.ws.Reader(c.ctx)
		if err != nil {
			return
		}
		limit := c.limit.Load()
		m := inbound{binary: typ == websocket.MessageBinary}
		if !m.binary {
			m.data, err = io.ReadAll(io.LimitReader(r, limit+1))
			if err != nil {
				return
			}
			m.oversize = int64(len(m.data)) > limit
		}
		select {
		case c.in <- m:
		case <-c.done:
			return
		}
		if m.binary || m.oversize {
			return
		}
	}
}

// drain waits for the reader to stop after the connection was closed.
func (c *conn) drain() {
	for range c.in {
	}
}

// authenticate runs way (b): the first frame must be an auth frame within
// the deadline; on success it returns the stream, the auth frame's id and
// its cursor.
func (c *conn) authenticate(version string) (st *refharness.Stream, authID *string, cursor string, ok bool) {
	c.limit.Store(authFrameLimit)
	t := time.NewTimer(c.a.authTimeout)
	defer t.Stop()
	if c.a.srv.Fault(refharness.FaultWSUnauthenticatedSilent) {
		t.Stop() // the deadline is never kept: the connection waits in silence
	}
	var m inbound
	select {
	case m, ok = <-c.in:
		if !ok {
			return nil, nil, "", false
		}
	case <-t.C:
		c.fail(nil, unauthenticated("no auth frame within "+c.a.authTimeout.String()+" of the upgrade"), 4401)
		return nil, nil, "", false
	case <-c.done:
		return nil, nil, "", false
	}
	f, ok := c.framing(m, authFrameLimit)
	if !ok {
		return nil, nil, "", false
	}
	if typ, _ := f["type"].(string); typ != "auth" {
		c.fail(f.replyTo(), unauthenticated("the first frame must be an auth frame (or the upgrade must carry Authorization)"), 4401)
		return nil, nil, "", false
	}
	authID = f.replyTo()
	if id, idOK := f.frameID(); !idOK {
		c.fail(authID, invalid("/id", "member id must be a string of 1 to 128 characters"), 4400)
		return nil, nil, "", false
	} else if id == "" {
		authID = nil
	}
	cred, _ := f["authorization"].(string)
	pv, _ := f["protocol_version"].(string)
	if version != "" && pv != "" && pv != version {
		c.fail(authID, invalid("/protocol_version", "protocol_version %q differs from the upgrade's %s header", pv, refharness.VersionHeader), 4400)
		return nil, nil, "", false
	}
	if cursor, e := f.cursor("last_event_id"); e != nil {
		c.fail(authID, e, 4400)
		return nil, nil, "", false
	} else if st, e := c.a.srv.OpenStream(c.req, cred, pv); e != nil {
		c.fail(authID, e, closeCodeFor(e))
		return nil, nil, "", false
	} else {
		c.limit.Store(c.a.opts.MaxFrameBytes)
		return st, authID, cursor, true
	}
}

func unauthenticated(msg string) *refharness.Error {
	return refharness.NewError(http.StatusUnauthorized, "unauthenticated", "", msg, nil)
}

// closeCodeFor is section 8's close code of a connection-level error.
func closeCodeFor(e *refharness.Error) websocket.StatusCode {
	switch e.Status() {
	case http.StatusRequestEntityTooLarge:
		return websocket.StatusMessageTooBig
	case http.StatusInternalServerError:
		return websocket.StatusInternalError
	case http.StatusServiceUnavailable:
		return websocket.StatusGoingAway
	}
	return websocket.StatusCode(4000 + e.Status())
}

// framing applies section 2 to a message: a binary message is closed 1003,
// an oversize one 1009, one that is not exactly one JSON object 1007.
func (c *conn) framing(m inbound, limit int64) (frame, bool) {
	switch {
	case m.binary:
		c.fail(nil, invalid("", "binary messages are not part of %s; send text frames", Profile), websocket.StatusUnsupportedData)
		return nil, false
	case m.oversize:
		c.fail(nil, refharness.NewError(http.StatusRequestEntityTooLarge, "payload_too_large", "",
			fmt.Sprintf("the frame is larger than %d bytes", limit), map[string]any{"max_frame_bytes": limit}), websocket.StatusMessageTooBig)
		return nil, false
	}
	f, err := decodeFrame(m.data)
	if err != nil {
		c.fail(nil, invalid("", "%v; every frame is exactly one JSON object", err), websocket.StatusInvalidFramePayloadData)
		return nil, false
	}
	return f, true
}

// fail sends an error frame and closes the connection with code; the
// close reason is the error code. Only the first close of a connection
// happens; a later one waits until it is complete.
func (c *conn) fail(inReplyTo *string, e *refharness.Error, code websocket.StatusCode) {
	if !c.begin() {
		<-c.closed
		return
	}
	defer close(c.closed)
	c.write(errorFrame(inReplyTo, e.Status(), c.a.srv.ErrorEnvelope(e)), false)
	c.ws.Close(code, e.Code())
}

// closeWith closes the connection with code and reason, without an error
// frame; as fail, only the first close happens.
func (c *conn) closeWith(code websocket.StatusCode, reason string) {
	if !c.begin() {
		<-c.closed
		return
	}
	defer close(c.closed)
	c.ws.Close(code, reason)
}

// begin claims the connection's close: false when another close began.
// It marks the connection as closing (done) either way, after the claim:
// a goroutine that sees done and then closes must find the close already
// claimed, or its close (say 1008 after an interrupted auth wait) would
// overtake the one that closed done (the server's 1001).
func (c *conn) begin() bool {
	won := !c.closing.Swap(true)
	c.doneOnce.Do(func() { close(c.done) })
	return won
}

// slow closes a connection whose client does not take a frame: 1013 if
// the close is the first (its close frame goes out should the client's
// buffer free up; coder/websocket cuts the connection after 5 s if not),
// or at once if another close is stuck behind the same write.
func (c *conn) slow() {
	if c.a.onSlow != nil {
		c.a.onSlow()
	}
	if !c.begin() {
		c.ws.CloseNow()
		return
	}
	defer close(c.closed)
	c.ws.Close(websocket.StatusTryAgainLater, "slow_reader")
}

// sendError answers a client frame with an error frame; the connection
// stays open.
func (c *conn) sendError(inReplyTo *string, e *refharness.Error) {
	c.write(errorFrame(inReplyTo, e.Status(), c.a.srv.ErrorEnvelope(e)), false)
}

// write sends one frame. A client that does not take it within the write
// timeout reads too slowly: the connection is closed with 1013 (the close
// frame goes out if the client's buffer frees up; coder/websocket cuts the
// TCP connection if it does not within its own 5 s).
func (c *conn) write(data []byte, binary bool) error {
	typ := websocket.MessageText
	if binary {
		typ = websocket.MessageBinary
	}
	slow := time.AfterFunc(c.a.opts.WriteTimeout, c.slow)
	err := c.ws.Write(c.ctx, typ, data)
	slow.Stop()
	return err
}

// over reports whether the connection is closing.
func (c *conn) over() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// errClosing: the connection is closing.
var errClosing = errors.New("wsadapter: connection closing")
