package ws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// serve starts a WebSocket server that runs handle on each accepted connection
// and returns its ws:// URL. done is closed when the first handler has returned.
func serve(t *testing.T, handle func(ctx context.Context, c *websocket.Conn)) (url string, done <-chan struct{}) {
	t.Helper()
	finished := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer test-token" {
			http.Error(w, "missing bearer token", http.StatusUnauthorized)
			return
		}
		c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"harn.v1"}})
		if err != nil {
			t.Errorf("server: accept: %v", err)
			return
		}
		defer close(finished)
		defer c.CloseNow()
		handle(r.Context(), c)
	}))
	t.Cleanup(srv.Close)
	return "ws" + strings.TrimPrefix(srv.URL, "http"), finished
}

var auth = Options{Header: http.Header{"Authorization": {"Bearer test-token"}}}

func dial(t *testing.T, url string, opts Options) *Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, _, err := Dial(ctx, url, opts)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	t.Cleanup(func() { _ = c.Close(websocket.StatusNormalClosure, "") })
	return c
}

// next calls Next with a generous deadline, for messages that must arrive.
func next(t *testing.T, c *Conn) (Message, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.Next(ctx)
}

// wait blocks until ch is closed, failing the test after a deadline.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestMessagesInOrder(t *testing.T) {
	const n = 100
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		for i := range n {
			typ := websocket.MessageText
			if i%10 == 9 {
				typ = websocket.MessageBinary
			}
			if err := c.Write(ctx, typ, fmt.Appendf(nil, "m%d", i)); err != nil {
				t.Errorf("server: write: %v", err)
				return
			}
		}
		_, _, _ = c.Read(ctx) // hold the connection open until the client closes
	})
	// Taken before the dial: the reader takes messages in as soon as the
	// connection is up, before Dial has returned.
	before := time.Now()
	c := dial(t, url, auth)
	if got := c.Subprotocol(); got != "" {
		t.Errorf("Subprotocol() = %q without offering one, want \"\"", got)
	}
	for i := range n {
		m, err := next(t, c)
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		want := websocket.MessageText
		if i%10 == 9 {
			want = websocket.MessageBinary
		}
		if string(m.Data) != fmt.Sprintf("m%d", i) || m.Type != want {
			t.Fatalf("message %d = %v %q, want %v %q", i, m.Type, m.Data, want, fmt.Sprintf("m%d", i))
		}
		if m.ArrivedAt.Before(before) {
			t.Errorf("message %d ArrivedAt = %v, before the dial at %v", i, m.ArrivedAt, before)
		}
	}
}

func TestTimeoutKeepsConnection(t *testing.T) {
	release := make(chan struct{})
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		<-release
		_ = c.Write(ctx, websocket.MessageText, []byte("late"))
		// Echo what the client sends, proving writes also still work.
		_, b, err := c.Read(ctx)
		if err == nil {
			_ = c.Write(ctx, websocket.MessageText, b)
		}
		_, _, _ = c.Read(ctx)
	})
	c := dial(t, url, auth)

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	_, err := c.Next(ctx)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Next with nothing sent = %v, want an error wrapping context.DeadlineExceeded", err)
	}
	close(release)
	if m, err := next(t, c); err != nil || string(m.Data) != "late" {
		t.Fatalf("Next after a timeout = %q, %v; want \"late\"", m.Data, err)
	}
	if err := c.WriteJSON(context.Background(), map[string]string{"type": "ping"}); err != nil {
		t.Fatalf("WriteJSON after a timeout: %v", err)
	}
	if m, err := next(t, c); err != nil || string(m.Data) != `{"type":"ping"}` || m.Type != websocket.MessageText {
		t.Fatalf("echo = %v %q, %v; want text {\"type\":\"ping\"}", m.Type, m.Data, err)
	}
}

func TestServerClose(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_ = c.Write(ctx, websocket.MessageText, []byte("last"))
		// The close waits for the client's go-ahead, so that the client's
		// first CloseStatus is asked before any close frame can exist.
		_, _, _ = c.Read(ctx)
		_ = c.Close(websocket.StatusPolicyViolation, "token expired")
	})
	c := dial(t, url, auth)
	if _, _, known := c.CloseStatus(); known {
		t.Errorf("CloseStatus known before the server closed")
	}
	if err := c.WriteJSON(context.Background(), map[string]string{"type": "go"}); err != nil {
		t.Fatal(err)
	}
	// The message sent before the close frame is still delivered.
	if m, err := next(t, c); err != nil || string(m.Data) != "last" {
		t.Fatalf("Next = %q, %v; want \"last\"", m.Data, err)
	}
	_, err := next(t, c)
	if got := websocket.CloseStatus(err); got != websocket.StatusPolicyViolation {
		t.Fatalf("Next after server close = %v (status %d), want status %d", err, got, websocket.StatusPolicyViolation)
	}
	code, reason, known := c.CloseStatus()
	if !known || code != websocket.StatusPolicyViolation || reason != "token expired" {
		t.Errorf("CloseStatus() = %d, %q, %v; want %d, \"token expired\", true", code, reason, known, websocket.StatusPolicyViolation)
	}
	if _, again := next(t, c); again != err {
		t.Errorf("Next again = %v, want the same error %v", again, err)
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("Close after the server closed = %v, want nil", err)
	}
}

func TestOversizeMessage(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_ = c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("a"), 1024))
		_ = c.Write(ctx, websocket.MessageText, bytes.Repeat([]byte("b"), 1025))
		_, _, _ = c.Read(ctx)
	})
	opts := auth
	opts.MaxMessageBytes = 1024
	c := dial(t, url, opts)
	if m, err := next(t, c); err != nil || len(m.Data) != 1024 {
		t.Fatalf("message at the limit = %d bytes, %v; want 1024 bytes", len(m.Data), err)
	}
	if m, err := next(t, c); !errors.Is(err, websocket.ErrMessageTooBig) {
		t.Fatalf("message over the limit = %d bytes, %v; want an error wrapping websocket.ErrMessageTooBig", len(m.Data), err)
	}
}

func TestPings(t *testing.T) {
	pinged := make(chan struct{})
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		ctx = c.CloseRead(ctx) // reads (and so receives pongs) in the background
		for range 3 {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				t.Errorf("server: ping not answered: %v", err)
				return
			}
		}
		close(pinged)
		<-ctx.Done()
	})
	c := dial(t, url, auth)
	wait(t, pinged, "the server's pings to be answered")
	if got := c.Pings(); got != 3 {
		t.Errorf("Pings() = %d, want 3", got)
	}
}

func TestClientPing(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_, _, _ = c.Read(ctx) // answers pings while reading
	})
	c := dial(t, url, auth)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func TestSubprotocol(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_, _, _ = c.Read(ctx)
	})
	opts := auth
	opts.Subprotocols = []string{"harn.v1"}
	c := dial(t, url, opts)
	if got := c.Subprotocol(); got != "harn.v1" {
		t.Errorf("Subprotocol() = %q, want \"harn.v1\"", got)
	}
}

func TestDialRefused(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		t.Error("server: upgraded a request without a token")
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, resp, err := Dial(ctx, url, Options{})
	if err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		t.Fatal("Dial without a token succeeded, want an error")
	}
	if resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("Dial error %v came with response %v, want status 401", err, resp)
	}
	if !strings.Contains(err.Error(), "401") {
		t.Errorf("Dial error %q does not name the status 401", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if got := string(body); got != "missing bearer token\n" {
		t.Errorf("response body = %q, want %q", got, "missing bearer token\n")
	}
}

func TestDialUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	srv.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if c, _, err := Dial(ctx, url, auth); err == nil {
		c.Close(websocket.StatusNormalClosure, "")
		t.Fatal("Dial to a closed port succeeded, want an error")
	}
}

// leftover returns the stacks of goroutines still running code of this package
// or of coder/websocket, goleak-style.
func leftover() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var found []string
	for g := range strings.SplitSeq(string(buf), "\n\n") {
		if strings.Contains(g, "internal/ws.(*Conn)") || strings.Contains(g, "coder/websocket.") {
			found = append(found, g)
		}
	}
	return strings.Join(found, "\n\n")
}

func TestCloseLeavesNoGoroutine(t *testing.T) {
	for _, unread := range []int{0, 3, queued + 5} {
		url, handled := serve(t, func(ctx context.Context, c *websocket.Conn) {
			for range unread {
				if c.Write(ctx, websocket.MessageText, []byte("x")) != nil {
					break
				}
			}
			_, _, _ = c.Read(ctx) // returns when the client's close frame arrives
		})
		c := dial(t, url, auth)
		if unread > 0 {
			if _, err := next(t, c); err != nil {
				t.Fatalf("Next: %v", err)
			}
		}
		// With more than queued messages unread, the reader is blocked handing
		// one over; Close must still stop it.
		if err := c.Close(websocket.StatusNormalClosure, "done"); err != nil {
			t.Errorf("Close with %d messages sent: %v", unread, err)
		}
		if _, err := next(t, c); err == nil {
			t.Errorf("Next after Close returned a nil error")
		}
		wait(t, handled, "the server handler to return")
	}
	deadline := time.Now().Add(5 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s := leftover(); s != ""; s = leftover() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutines still running after Close:\n%s", s)
		}
		<-tick.C
	}
}

func TestServerDropsWithoutCloseFrame(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		_ = c.CloseNow() // TCP close, no close frame
	})
	c := dial(t, url, auth)
	_, err := next(t, c)
	if err == nil || websocket.CloseStatus(err) != -1 {
		t.Fatalf("Next after a dropped connection = %v (status %d), want an error without a close status", err, websocket.CloseStatus(err))
	}
	if code, reason, known := c.CloseStatus(); known {
		t.Errorf("CloseStatus() = %d, %q, true; want not known, no close frame was sent", code, reason)
	}
}

func TestWriteBinaryAndText(t *testing.T) {
	url, _ := serve(t, func(ctx context.Context, c *websocket.Conn) {
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			if c.Write(ctx, typ, b) != nil {
				return
			}
		}
	})
	c := dial(t, url, auth)
	ctx := context.Background()
	if err := c.WriteBinary(ctx, []byte{0, 1, 2}); err != nil {
		t.Fatalf("WriteBinary: %v", err)
	}
	if err := c.WriteText(ctx, []byte("hello")); err != nil {
		t.Fatalf("WriteText: %v", err)
	}
	for _, want := range []Message{{Type: websocket.MessageBinary, Data: []byte{0, 1, 2}}, {Type: websocket.MessageText, Data: []byte("hello")}} {
		m, err := next(t, c)
		if err != nil || m.Type != want.Type || !bytes.Equal(m.Data, want.Data) {
			t.Errorf("echo = %v %q, %v; want %v %q", m.Type, m.Data, err, want.Type, want.Data)
		}
	}
	if err := c.WriteJSON(ctx, func() {}); err == nil {
		t.Errorf("WriteJSON of a func = nil error, want an encoding error")
	}
}

// OnPing is told of each server Ping before the Pong goes back, and Drop
// ends the connection with no close handshake, as a broken network would.
func TestOnPingAndDrop(t *testing.T) {
	serverRead := make(chan error, 1)
	pinged := make(chan error, 1)
	url, done := serve(t, func(ctx context.Context, c *websocket.Conn) {
		go func() {
			_, _, err := c.Read(ctx) // reads the pong, then waits for the client's end
			serverRead <- err
		}()
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		pinged <- c.Ping(pctx)
		<-serverRead
	})
	var calls atomic.Int32
	opts := auth
	opts.OnPing = func() { calls.Add(1) }
	c := dial(t, url, opts)
	select {
	case err := <-pinged:
		if err != nil {
			t.Fatalf("server ping: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server's ping was not answered")
	}
	if n := calls.Load(); n != 1 || c.Pings() != 1 {
		t.Errorf("OnPing called %d times, Pings() = %d; want 1 each", n, c.Pings())
	}
	c.Drop()
	wait(t, done, "the server's handler")
	if _, err := next(t, c); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Next after Drop = %v, want net.ErrClosed", err)
	}
	if _, _, known := c.CloseStatus(); known {
		t.Error("a close status was recorded, but no close frame was exchanged")
	}
	if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
		t.Errorf("Close after Drop = %v, want nil (it does nothing)", err)
	}
}
