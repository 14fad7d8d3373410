package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/internal/redact"
	"github.com/harn-conform/conform/internal/ws"
)

// wsServer serves harn-ws.v1 upgrades (with the configured key, or none
// for a browser's upgrade) and runs handle on each connection; it refuses
// anything else with 401 and an error envelope.
func wsServer(t *testing.T, handle func(ctx context.Context, c *websocket.Conn)) *Client {
	t.Helper()
	return wsServerWithRequest(t, func(ctx context.Context, _ *http.Request, c *websocket.Conn) { handle(ctx, c) })
}

// wsServerWithRequest is wsServer whose handler also sees the upgrade
// request.
func wsServerWithRequest(t *testing.T, handle func(ctx context.Context, r *http.Request, c *websocket.Conn)) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" && a != "Bearer "+key {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			io.WriteString(w, `{"error":{"code":"unauthenticated","message":"wrong key","type":"authentication_error"}}`)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"harn-ws.v1"}})
		if err != nil {
			return
		}
		defer c.CloseNow()
		if c.Subprotocol() != "harn-ws.v1" {
			c.Close(websocket.StatusPolicyViolation, "harn-ws.v1 not offered")
			return
		}
		handle(r.Context(), r, c)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL, APIKey: key, ProtocolVersion: "v-test", Timeout: 5 * time.Second, Redactor: redact.New(key)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// read reads one client message on the server side, with a deadline far
// above need.
func read(ctx context.Context, t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, b, err := c.Read(ctx)
	if err != nil {
		t.Errorf("server: read: %v", err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Errorf("server: client frame %q is not a JSON object", b)
	}
	return m
}

func write(ctx context.Context, c *websocket.Conn, typ websocket.MessageType, s string) {
	_ = c.Write(ctx, typ, []byte(s))
}

// drain reads until the client closes, so that its close handshake is
// answered at once.
func drain(ctx context.Context, c *websocket.Conn) {
	for {
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
	}
}

const readyFrame = `{"type":"ready","profile":"harn-ws.v1","protocol_version":"v-test","connection_id":"wsc_1","resource":{"object":"session","id":"s1"},"heartbeat_interval_ms":15000,"pong_timeout_ms":10000,"max_frame_bytes":1048576,"last_event_id":null}`

const eventFrame = `{"type":"event","event_id":"evt_1","replayed":true,"event":{"id":"evt_1","object":"event","event":"task.started","resource":{"object":"task","id":"t1"},"created_at":"2026-04-25T19:00:01Z","updated_at":"2026-04-25T19:00:01Z","metadata":{},"sequence":1,"payload":{"status":"WORKING"}}}`

func wait(t *testing.T, s *WSSession, n int) {
	t.Helper()
	if _, err := s.Await(context.Background(), 10*time.Second, n-1, func(ws.Frame) bool { return true }); err != nil {
		t.Fatalf("frame %d did not come: %v", n, err)
	}
}

func TestWSSessionRecordsRedactsAndJudges(t *testing.T) {
	const wrong = "Bearer not-the-configured-key-42"
	gotAuth := make(chan map[string]any, 2)
	gotPong := make(chan map[string]any, 1)
	c := wsServer(t, func(ctx context.Context, ws *websocket.Conn) {
		gotAuth <- read(ctx, t, ws) // the auth frame
		gotAuth <- read(ctx, t, ws) // a second one, with a wrong credential
		write(ctx, ws, websocket.MessageText, readyFrame)
		write(ctx, ws, websocket.MessageText, eventFrame)
		write(ctx, ws, websocket.MessageBinary, eventFrame)                              // 003: binary
		write(ctx, ws, websocket.MessageText, `not json`)                                // 003: not JSON
		write(ctx, ws, websocket.MessageText, `{"type":"ready","profile":"harn-ws.v1"}`) // schema: members missing
		write(ctx, ws, websocket.MessageText, `{"type":"error","status":401,"error":{"code":"unauthenticated","message":"echo `+key+`","type":"authentication_error"}}`)
		write(ctx, ws, websocket.MessageText, `{"type":"ping","id":"s-ping-1"}`)
		gotPong <- read(ctx, t, ws)
		ws.Close(websocket.StatusCode(4401), "unauthenticated")
	})
	var obs observed
	rec := NewRecorder()
	cl := c.WithRecorder(rec).WithObserver(obs.see)
	ctx := context.Background()
	s, resp, err := cl.OpenWS(ctx, WSDial{Path: "/v1/sessions/s1/events/stream", Way: ws.ByAuthFrame, NoAuth: true, Probe: "browser"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if resp.Status != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade status %d", resp.Status)
	}
	for _, a := range []string{"Bearer " + key, wrong} {
		if err := s.Send(ctx, map[string]any{"type": "auth", "id": s.NewID(), "authorization": a, "protocol_version": "v-test"}); err != nil {
			t.Fatal(err)
		}
	}
	// The server gets the credentials as sent.
	for _, want := range []string{"Bearer " + key, wrong} {
		if m := <-gotAuth; m["authorization"] != want {
			t.Errorf("server got authorization %v, want %q", m["authorization"], want)
		}
	}
	// The ping is answered without the caller asking.
	select {
	case m := <-gotPong:
		if m["type"] != "pong" || m["in_reply_to"] != "s-ping-1" {
			t.Errorf("answer to the server's ping = %v, want pong in reply to s-ping-1", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's ping was not answered")
	}
	// The close and its code.
	_, err = s.Await(ctx, 10*time.Second, 7, func(ws.Frame) bool { return true })
	var we *WaitError
	if !errors.As(err, &we) || !we.Closed || we.Code != 4401 || we.Reason != "unauthenticated" || we.Timeout() {
		t.Fatalf("Await after the server's close = %v, want a WaitError naming close 4401", err)
	}

	fs := s.Frames()
	if len(fs) != 7 {
		t.Fatalf("%d server frames, want 7", len(fs))
	}
	for i, want := range []struct {
		typ      string
		problems string // a substring of the first problem, "" for none
	}{
		{"ready", ""}, {"event", ""}, {"event", "binary message"}, {"", "not JSON"}, {"ready", "missing properties"}, {"error", ""}, {"ping", ""},
	} {
		f := fs[i]
		if f.Seq != i+1 || f.Type != want.typ {
			t.Errorf("frame %d: seq %d type %q, want %d %q", i+1, f.Seq, f.Type, i+1, want.typ)
		}
		switch {
		case want.problems == "" && len(f.Problems) > 0:
			t.Errorf("frame %d (%s): problems %v, want none", i+1, f.Raw, f.Problems)
		case want.problems != "" && (len(f.Problems) == 0 || !strings.Contains(f.Problems[0].Message, want.problems)):
			t.Errorf("frame %d (%s): problems %v, want one saying %q", i+1, f.Raw, f.Problems, want.problems)
		}
	}
	if fs[2].Obj == nil || fs[2].Str("event_id") != "evt_1" || !fs[2].Binary {
		t.Errorf("the binary event frame is not decoded for what it says: %+v", fs[2])
	}

	ex, _ := rec.Exchanges()
	if len(ex) != 1 || ex[0].Kind != "websocket" || ex[0].Status != http.StatusSwitchingProtocols {
		t.Fatalf("transcript = %+v, want one websocket exchange", ex)
	}
	all := strings.Join(ex[0].Frames, "\n")
	if strings.Contains(all, key) || strings.Contains(all, "not-the-configured-key-42") {
		t.Errorf("a credential reached the transcript:\n%s", all)
	}
	var sent, received int
	for _, f := range ex[0].Frames {
		switch {
		case strings.HasPrefix(f, WSSent):
			sent++
		case strings.HasPrefix(f, WSReceived):
			received++
		default:
			t.Errorf("frame without a direction mark: %q", f)
		}
	}
	if sent != 3 || received != 7 {
		t.Errorf("%d sent and %d received frames in the transcript, want 3 (two auth, one pong) and 7:\n%s", sent, received, all)
	}
	if !strings.HasPrefix(ex[0].Frames[0], WSSent+`{"authorization":"Bearer [REDACTED]"`) {
		t.Errorf("the auth frame is recorded as %q, want its credential as an Authorization header is: the scheme, then [REDACTED]", ex[0].Frames[0])
	}
	if !strings.Contains(all, "< [binary, ") {
		t.Errorf("the binary frame is not marked binary:\n%s", all)
	}
	if !strings.Contains(all, `"message":"echo [REDACTED]"`) {
		t.Errorf("the server's echo of the key is not redacted:\n%s", all)
	}
	// The upgrade and the Event of each event frame reach the observer.
	var events []Traffic
	for _, tr := range obs.all() {
		if tr.Kind == KindWSFrame {
			events = append(events, tr)
		}
	}
	if len(events) != 2 || events[0].Component != "Event" || !strings.Contains(string(events[0].ResponseBody), `"id":"evt_1"`) ||
		events[0].Path != "/v1/sessions/s1/events/stream" || !strings.Contains(events[0].Label, "frame 2") {
		t.Errorf("observed event frames = %+v, want the two frames' Events", events)
	}
	if ts := obs.all(); ts[0].Kind != "websocket" || ts[0].Status != 101 || ts[0].Probe != "browser" || ts[0].RequestHeader.Get("Authorization") != "" {
		t.Errorf("observed upgrade = %+v", ts[0])
	}
}

func TestWSSessionBoundsTheTranscript(t *testing.T) {
	const n = maxFramesPerExch + 10
	big := strings.Repeat("x", maxFrameInReport+100)
	c := wsServer(t, func(ctx context.Context, ws *websocket.Conn) {
		write(ctx, ws, websocket.MessageText, `{"type":"ping","id":"`+big+`"}`)
		for i := 1; i < n; i++ {
			write(ctx, ws, websocket.MessageText, `{"type":"pong","in_reply_to":"c-1"}`)
		}
		drain(ctx, ws)
	})
	rec := NewRecorder()
	s, _, err := c.WithRecorder(rec).OpenWS(context.Background(), WSDial{Path: "/v1/tasks/t1/stream"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, s, n)
	s.Close()
	ex, _ := rec.Exchanges()
	// n received frames, and the pong that answered the first: the first
	// and the last halves of the limit, and a line saying how many are
	// not shown between them.
	fs := ex[0].Frames
	dropped := n + 1 - maxFramesPerExch
	if len(fs) != maxFramesPerExch+1 || ex[0].FramesDropped != dropped {
		t.Fatalf("%d frames kept, %d dropped; want %d and a marker, and %d", len(fs), ex[0].FramesDropped, maxFramesPerExch, dropped)
	}
	if fs[1] != WSSent+`{"in_reply_to":"`+big[:maxFrameInReport-len(WSSent)-len(`{"in_reply_to":"`)]+"…[truncated]" {
		t.Errorf("frame 2 = %.80q…, want the pong answering the first ping (cut)", fs[1])
	}
	if want := fmt.Sprintf("… %d frames not shown …", dropped); fs[wsHead] != want {
		t.Errorf("frame %d = %q, want %q", wsHead+1, fs[wsHead], want)
	}
	for _, f := range fs[wsHead+1:] {
		if f != WSReceived+`{"type":"pong","in_reply_to":"c-1"}` {
			t.Errorf("a frame of the tail is %q, want the last pongs", f)
		}
	}
	if f := ex[0].Frames[0]; len(f) > maxFrameInReport+len(WSReceived)+len("…[truncated]") || !strings.HasSuffix(f, "…[truncated]") {
		t.Errorf("a %d-byte frame is kept as %d bytes, want it cut at %d", len(big), len(f), maxFrameInReport)
	}
	if len(s.Frames()) != n {
		t.Errorf("the session kept %d frames, want all %d (the bound is the transcript's)", len(s.Frames()), n)
	}
}

func TestWSSessionAwaitAndCommand(t *testing.T) {
	release := make(chan struct{})
	c := wsServer(t, func(ctx context.Context, ws *websocket.Conn) {
		write(ctx, ws, websocket.MessageText, readyFrame)
		m := read(ctx, t, ws)
		// An event, then the answer: Await finds the answer after it.
		write(ctx, ws, websocket.MessageText, eventFrame)
		write(ctx, ws, websocket.MessageText, `{"type":"result","in_reply_to":"`+m["id"].(string)+`","status":201,"result":{"id":"msg_1","object":"message"}}`)
		<-release
		drain(ctx, ws)
	})
	ctx := context.Background()
	s, _, err := c.OpenWS(ctx, WSDial{Path: "/v1/sessions/s1/events/stream"})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { close(release); s.Close() }()
	wait(t, s, 1)
	f, err := s.Command(ctx, 10*time.Second, map[string]any{"type": "user_message", "session_id": "s1", "message": map[string]any{"role": "user", "parts": []any{}}})
	if err != nil || f.Type != "result" || f.Str("in_reply_to") != "c-1" || s.SentType("c-1") != "user_message" {
		t.Fatalf("Command = %+v, %v; want the result in reply to c-1", f, err)
	}
	// Frames are not consumed: the event before the answer is still found.
	if e, err := s.Await(ctx, time.Second, 1, func(f ws.Frame) bool { return f.Type == "event" }); err != nil || e.Seq != 2 {
		t.Errorf("Await for the event after frame 1 = %+v, %v", e, err)
	}
	// Nothing more comes: a deadline, not a hang, and the session stays open.
	_, err = s.Await(ctx, 50*time.Millisecond, s.Len(), func(ws.Frame) bool { return true })
	var we *WaitError
	if !errors.As(err, &we) || !we.Timeout() || !strings.Contains(err.Error(), "within 50ms") {
		t.Errorf("Await on a silent server = %v, want a timeout", err)
	}
	if s.Ended() != nil {
		t.Errorf("the session ended after a timed-out wait: %v", s.Ended())
	}
	// The caller's context wins.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Await(cctx, time.Minute, s.Len(), func(ws.Frame) bool { return true }); !errors.Is(err, context.Canceled) {
		t.Errorf("Await with a canceled context = %v", err)
	}
}

func TestWSSessionHeartbeats(t *testing.T) {
	pinged := make(chan struct{})
	c := wsServer(t, func(ctx context.Context, ws *websocket.Conn) {
		drained := make(chan struct{})
		go func() { drain(ctx, ws); close(drained) }() // control frames are read by a reader
		defer func() { <-drained }()
		write(ctx, ws, websocket.MessageText, readyFrame)
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := ws.Ping(pctx); err != nil {
			t.Errorf("server: control ping: %v", err)
		}
		close(pinged)
		write(ctx, ws, websocket.MessageText, `{"type":"ping","id":"s-1"}`)
	})
	ctx := context.Background()
	s, _, err := c.OpenWS(ctx, WSDial{Path: "/v1/sessions/s1/events/stream"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	wait(t, s, 1)
	ready := s.Frames()[0].At
	// The control Ping first (the server sends its ping frame only once
	// the control Ping was answered), whenever the waiter looks.
	<-pinged
	wait(t, s, 2)
	f, at, ok := s.AwaitHeartbeat(ctx, 10*time.Second, ready)
	if !ok || f.Seq != 0 || !at.After(ready) {
		t.Fatalf("first heartbeat = %+v at %v ok %v, want the control Ping", f, at, ok)
	}
	if ps := s.ControlPings(); len(ps) != 1 || !ps[0].Equal(at) {
		t.Errorf("control pings at %v, want one, at %v", ps, at)
	}
	f, at2, ok := s.AwaitHeartbeat(ctx, 10*time.Second, at)
	if !ok || f.Type != "ping" || f.Str("id") != "s-1" || at2.Before(at) {
		t.Errorf("second heartbeat = %+v at %v ok %v, want the ping frame", f, at2, ok)
	}
	if _, _, ok := s.AwaitHeartbeat(ctx, 20*time.Millisecond, at2); ok {
		t.Error("a heartbeat was found where none came")
	}
}

func TestOpenWSRefused(t *testing.T) {
	c := wsServer(t, func(context.Context, *websocket.Conn) {})
	rec := NewRecorder()
	var obs observed
	s, resp, err := c.WithRecorder(rec).WithObserver(obs.see).OpenWS(context.Background(), WSDial{Path: "/v1/tasks/t1/stream", Authorization: "Bearer wrong-credential-77"})
	if s != nil || !errors.Is(err, ErrUpgradeRefused) || resp == nil || resp.Status != http.StatusUnauthorized {
		t.Fatalf("OpenWS with a wrong key = %v, %+v, %v; want the 401 refusal", s, resp, err)
	}
	if !strings.Contains(string(resp.Body), "unauthenticated") {
		t.Errorf("refusal body %q, want the error envelope", resp.Body)
	}
	ex, _ := rec.Exchanges()
	if len(ex) != 1 || ex[0].Status != 401 || !strings.Contains(ex[0].ResponseBody, "unauthenticated") || strings.Contains(ex[0].RequestHeader["Authorization"][0], "wrong-credential") {
		t.Errorf("transcript = %+v", ex)
	}
	ts := obs.all()
	if len(ts) != 1 || !ts[0].BodyRead() || !strings.Contains(string(ts[0].ResponseBody), "unauthenticated") {
		t.Errorf("observed refusal = %+v, want its body for the oracle", ts)
	}
	// Nothing listening: a transport error.
	dead, err := New(Options{BaseURL: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err = dead.OpenWS(context.Background(), WSDial{Path: "/v1/tasks/t1/stream"})
	var te *TransportError
	if resp != nil || !errors.As(err, &te) {
		t.Errorf("OpenWS to a closed port = %+v, %v; want a TransportError", resp, err)
	}
}

// Frames sent while the reader answers pings concurrently stay whole.
func TestWSSessionConcurrentSends(t *testing.T) {
	const n = 50
	var mu sync.Mutex
	var got []string
	done := make(chan struct{})
	c := wsServer(t, func(ctx context.Context, ws *websocket.Conn) {
		for i := range n {
			write(ctx, ws, websocket.MessageText, `{"type":"ping","id":"s-`+string(rune('a'+i%26))+`"}`)
		}
		for range 2 * n {
			m := read(ctx, t, ws)
			mu.Lock()
			got = append(got, m["type"].(string))
			mu.Unlock()
		}
		close(done)
		drain(ctx, ws)
	})
	ctx := context.Background()
	s, _, err := c.OpenWS(ctx, WSDial{Path: "/v1/sessions/s1/events/stream"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for range n {
		if err := s.Send(ctx, map[string]any{"type": "ping", "id": s.NewID()}); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the server did not get every frame")
	}
	mu.Lock()
	defer mu.Unlock()
	if pings, pongs := count(got, "ping"), count(got, "pong"); pings != n || pongs != n {
		t.Errorf("server got %d pings and %d pongs, want %d of each", pings, pongs, n)
	}
}

func count(ss []string, s string) int {
	return len(slices.DeleteFunc(slices.Clone(ss), func(x string) bool { return x != s }))
}
