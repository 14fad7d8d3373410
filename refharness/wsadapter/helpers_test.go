package wsadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/refharness"
)

const (
	testKey   = "ws-test-key-0123456789"
	secondKey = "ws-second-key-0123456789"
	readerKey = "ws-reader-key-0123456789"
)

// hang bounds every wait of these tests for something that must happen: a
// guard against a hang, not a speed target (what they wait for takes
// milliseconds, also with both cores busy).
const hang = time.Minute

// env is a reference Harness with the adapter mounted, served by an
// http.Server over in-memory connections (net.Pipe), so that a test runs
// whole in a synctest bubble: the adapter's deadlines and heartbeats, the
// harness's workers and the test's waits all run on the bubble's clock,
// and a pipe's write blocks until the other side reads, as a full TCP
// buffer does.
type env struct {
	t    *testing.T
	srv  *refharness.Server
	a    *Adapter
	base string // http://127.0.0.1
	hc   *http.Client
	// lax: a probe's env, where a broken frame is the probe's to judge,
	// not a test failure.
	lax bool
}

// newEnv starts a harness with three actors (a second tenant, a read-only
// one), faults fs, and the adapter with opts; tweak may shorten its
// unexported deadlines before it serves. Call it in a synctest bubble.
func newEnv(t *testing.T, opts Options, tweak func(*Adapter), fs ...refharness.Fault) *env {
	t.Helper()
	ro := refharness.Options{Faults: refharness.Faults{}}
	for _, f := range fs {
		ro.Faults[f] = true
	}
	return newEnvWith(t, ro, opts, tweak)
}

// newEnvWith is newEnv with the harness's options (its keys and actors
// are set here).
func newEnvWith(t *testing.T, ro refharness.Options, opts Options, tweak func(*Adapter)) *env {
	t.Helper()
	ro.APIKeys = map[string]string{testKey: "actor_default", secondKey: "actor_second", readerKey: "actor_read_only"}
	ro.Tenants = map[string]string{"actor_read_only": "actor_default"}
	ro.ReadOnly = map[string]bool{"actor_read_only": true}
	srv, err := refharness.New(ro)
	if err != nil {
		t.Fatalf("refharness.New: %v", err)
	}
	a := New(srv, opts)
	if tweak != nil {
		tweak(a)
	}
	srv.SetUpgradeHandler(a)
	l := newPipeListener()
	hs := &http.Server{Handler: srv}
	served := make(chan struct{})
	go func() { defer close(served); hs.Serve(l) }()
	tr := &http.Transport{DialContext: l.dial}
	e := &env{t: t, srv: srv, a: a, base: "http://127.0.0.1", hc: &http.Client{Transport: tr}}
	t.Cleanup(func() {
		srv.Close() // ends every WebSocket connection with 1001
		hs.Close()  // and every other connection
		tr.CloseIdleConnections()
		a.Wait()
		<-served
	})
	return e
}

// pipeListener is a net.Listener of in-memory connections.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.closed) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

// dial is the client Transport's DialContext: one end of a new pipe, the
// other accepted by the server.
func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- pipeConn{server}:
		return pipeConn{client}, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "tcp" }
func (pipeAddr) String() string  { return "127.0.0.1:80" }

// pipeConn gives a pipe end loopback addresses, as a local TCP
// connection has.
type pipeConn struct{ net.Conn }

func (pipeConn) LocalAddr() net.Addr  { return pipeAddr{} }
func (pipeConn) RemoteAddr() net.Addr { return pipeAddr{} }

// rest sends a REST request with the version header and the first key
// (hdr: name, value pairs; a value "" removes the header).
func (e *env) rest(method, path string, body any, hdr ...string) (int, map[string]any) {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if hdr[i+1] == "" {
			req.Header.Del(hdr[i])
		} else {
			req.Header.Set(hdr[i], hdr[i+1])
		}
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	var m map[string]any
	if len(bytes.TrimSpace(raw)) > 0 && json.Unmarshal(raw, &m) != nil {
		e.t.Fatalf("%s %s: body is not a JSON object: %s", method, path, raw)
	}
	return resp.StatusCode, m
}

// ok wants a 2xx answer and returns its body.
func (e *env) ok(method, path string, body any, hdr ...string) map[string]any {
	e.t.Helper()
	code, m := e.rest(method, path, body, hdr...)
	if code < 200 || code > 299 {
		e.t.Fatalf("%s %s: status %d, want 2xx: %v", method, path, code, m)
	}
	return m
}

// session creates a workspace and a session.
func (e *env) session() string {
	e.t.Helper()
	ws := e.ok("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/tmp/w"})
	se := e.ok("POST", "/v1/sessions", map[string]any{"workspace_id": ws["id"]})
	return se["id"].(string)
}

// submit submits a task with scenario steps (none: the echo agent).
func (e *env) submit(sess string, steps ...map[string]any) string {
	e.t.Helper()
	body := map[string]any{"input": textMessage("hello")}
	if len(steps) > 0 {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	return e.ok("POST", "/v1/sessions/"+sess+"/tasks", body)["id"].(string)
}

func step(op string, kv ...any) map[string]any {
	m := map[string]any{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return m
}

func textMessage(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}
}

// status reads a task's status over REST.
func (e *env) status(task string) string {
	e.t.Helper()
	return e.ok("GET", "/v1/tasks/"+task, nil)["status"].(string)
}

// waitStatus polls a task's status until it is want (the REST poll is the
// client's view; the deadline is a hang guard).
func (e *env) waitStatus(task, want string) {
	e.t.Helper()
	deadline := time.Now().Add(hang)
	for {
		got := e.status(task)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("task %s: status %s, want %s", task, got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// events lists a resource's events over REST (path: …/events).
func (e *env) events(path string) []map[string]any {
	e.t.Helper()
	var out []map[string]any
	q := "?limit=200"
	for {
		m := e.ok("GET", path+q, nil)
		for _, d := range m["data"].([]any) {
			out = append(out, d.(map[string]any))
		}
		page, _ := m["page"].(map[string]any)
		if more, _ := page["has_more"].(bool); !more {
			return out
		}
		q = "?limit=200&after_event_id=" + page["next_cursor"].(string)
	}
}

// wsURL is the WebSocket URL of a path.
func (e *env) wsURL(path string) string { return "ws" + strings.TrimPrefix(e.base, "http") + path }

// headers builds way (a) upgrade headers for a key.
func headers(key string) http.Header {
	h := http.Header{}
	h.Set("Authorization", "Bearer "+key)
	h.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	return h
}

// client is a test WebSocket client: one reader goroutine feeds msgs
// (coder/websocket closes a connection whose Read hits a deadline, so
// waits time out on the channel instead), and every server frame is
// checked against the profile's schema.
type client struct {
	t    *testing.T
	c    *websocket.Conn
	msgs chan msg
	done chan struct{}
	held []msg // frames an until passed over, for next
	mu   sync.Mutex
	err  error // why the reader stopped
}

type msg struct {
	binary bool
	raw    []byte
	f      map[string]any
}

var (
	schemaOnce sync.Once
	schema     *jsonschema.Schema
	schemaErr  error
)

func serverSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	schemaOnce.Do(func() { schema, schemaErr = schemas.CompileWSFrame(schemas.ServerToClient) })
	if schemaErr != nil {
		t.Fatalf("compile the frame schema: %v", schemaErr)
	}
	return schema
}

// dial upgrades on path with hdr, offering the profile.
func (e *env) dial(path string, hdr http.Header) (*client, *http.Response, error) {
	e.t.Helper()
	return e.dialWith(path, hdr, []string{Profile})
}

func (e *env) dialWith(path string, hdr http.Header, protos []string) (*client, *http.Response, error) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	c, resp, err := websocket.Dial(ctx, e.wsURL(path), &websocket.DialOptions{HTTPHeader: hdr, Subprotocols: protos, HTTPClient: e.hc})
	if err != nil {
		return nil, resp, err
	}
	c.SetReadLimit(8 << 20)
	cl := &client{t: e.t, c: c, msgs: make(chan msg, 1024), done: make(chan struct{})}
	s := serverSchema(e.t)
	go func() {
		defer close(cl.msgs)
		for {
			typ, b, err := c.Read(context.Background())
			if err != nil {
				cl.mu.Lock()
				cl.err = err
				cl.mu.Unlock()
				return
			}
			m := msg{binary: typ == websocket.MessageBinary, raw: b}
			if ps := schemas.FrameProblems(s, m.binary, b); len(ps) > 0 && !m.binary && !e.lax {
				e.t.Errorf("server frame breaks the schema: %v\n%s", ps, b)
			}
			json.Unmarshal(b, &m.f)
			select {
			case cl.msgs <- m:
			case <-cl.done:
				return
			}
		}
	}()
	e.t.Cleanup(cl.close)
	return cl, resp, nil
}

// mustDial dials and fails the test if the upgrade is refused.
func (e *env) mustDial(path string, hdr http.Header) *client {
	e.t.Helper()
	c, resp, err := e.dial(path, hdr)
	if err != nil {
		status := 0
		if resp != nil {
			status = resp.StatusCode
		}
		e.t.Fatalf("dial %s: %v (status %d)", path, err, status)
	}
	return c
}

func (c *client) close() {
	select {
	case <-c.done:
	default:
		close(c.done)
	}
	c.c.CloseNow()
}

// send writes a frame.
func (c *client) send(v any) {
	c.t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	c.sendRaw(websocket.MessageText, b)
}

func (c *client) sendRaw(typ websocket.MessageType, b []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hang)
	defer cancel()
	if err := c.c.Write(ctx, typ, b); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// next returns the next message (a frame an until passed over first);
// ok false when the connection ended.
func (c *client) next() (msg, bool) {
	c.t.Helper()
	if len(c.held) > 0 {
		m := c.held[0]
		c.held = c.held[1:]
		return m, true
	}
	return c.receive()
}

// receive reads the next message off the connection, failing after the
// hang guard.
func (c *client) receive() (msg, bool) {
	c.t.Helper()
	t := time.NewTimer(hang)
	defer t.Stop()
	select {
	case m, ok := <-c.msgs:
		return m, ok
	case <-t.C:
		c.t.Fatalf("no frame within %s", hang)
		return msg{}, false
	}
}

// until returns the first frame that satisfies want, in arrival order;
// the frames it passes over are held, in order, for next and later untils
// (a command's result may come before or after the events it caused).
// It fails if the connection ends first.
func (c *client) until(what string, want func(m msg) bool) msg {
	c.t.Helper()
	for i, m := range c.held {
		if want(m) {
			c.held = append(c.held[:i:i], c.held[i+1:]...)
			return m
		}
	}
	deadline := time.Now().Add(hang)
	for {
		if time.Now().After(deadline) {
			c.t.Fatalf("no %s within %s", what, hang)
		}
		m, ok := c.receive()
		if !ok {
			c.t.Fatalf("connection ended before %s: %v", what, c.endErr())
		}
		if want(m) {
			return m
		}
		if m.f["type"] != "ping" {
			c.held = append(c.held, m)
		}
	}
}

// typed reads until a frame of type typ.
func (c *client) typed(typ string) msg {
	c.t.Helper()
	return c.until("a "+typ+" frame", func(m msg) bool { return m.f["type"] == typ })
}

// reply reads until the frame answering id.
func (c *client) reply(id string) msg {
	c.t.Helper()
	return c.until("the answer to "+id, func(m msg) bool {
		return m.f["in_reply_to"] == id && (m.f["type"] == "result" || m.f["type"] == "error" || m.f["type"] == "pong" || m.f["type"] == "ready")
	})
}

// closed reads until the connection ends and returns its close status
// and the frames before it (those an until passed over included).
func (c *client) closed() (websocket.StatusCode, string, []msg) {
	c.t.Helper()
	seen := c.held
	c.held = nil
	deadline := time.Now().Add(hang)
	for {
		if time.Now().After(deadline) {
			c.t.Fatalf("the connection did not close within %s", hang)
		}
		m, ok := c.receive()
		if !ok {
			err := c.endErr()
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				return ce.Code, ce.Reason, seen
			}
			return -1, err.Error(), seen
		}
		seen = append(seen, m)
	}
}

func (c *client) endErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// wantClose wants an error frame with status and code, then close code cc.
func (c *client) wantClose(status int, code string, cc websocket.StatusCode) map[string]any {
	c.t.Helper()
	got, reason, seen := c.closed()
	var ef map[string]any
	for _, m := range seen {
		if m.f["type"] != "error" {
			continue // events, pings: the connection was open until then
		}
		if ef != nil {
			c.t.Errorf("a second error frame before the close: %s", m.raw)
		}
		ef = m.f
	}
	if ef == nil {
		c.t.Fatalf("no error frame before close %d %q", got, reason)
	}
	if s, _ := ef["status"].(float64); int(s) != status {
		c.t.Errorf("error frame status = %v, want %d: %v", ef["status"], status, ef)
	}
	if e, _ := ef["error"].(map[string]any); e["code"] != code {
		c.t.Errorf("error code = %v, want %s", e["code"], code)
	}
	if got != cc || reason != code {
		c.t.Errorf("close = %d %q, want %d %q", got, reason, cc, code)
	}
	return ef
}

// errCode is an error frame's error.code.
func errCode(f map[string]any) string {
	e, _ := f["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func num(v any) int {
	f, _ := v.(float64)
	return int(f)
}

// authFrame is a way (b) auth frame.
func authFrame(id, key string) map[string]any {
	return map[string]any{"type": "auth", "id": id, "authorization": "Bearer " + key, "protocol_version": refharness.ProtocolVersion}
}
