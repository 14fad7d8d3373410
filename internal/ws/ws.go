// Package ws is the checker's WebSocket client: it dials a WebSocket and
// hands its messages out one at a time, with caller-side timeouts that leave
// the connection usable (Conn), and reads them as frames of the harn-ws.v1
// profile (frame.go: the frame types, a server frame decoded and judged
// against the profile's schema, the two ways to authenticate and the auth
// frame; scheme.go: where a credential may travel). The recorded session a
// spec works with, and the event feed over it, are client.WSSession.
//
// coder/websocket closes the connection when a Read hits its context deadline, so
// a Conn runs one reader goroutine that reads without a deadline and feeds a
// channel; Next times out on the channel instead.
package ws

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Message is one data message as received.
type Message struct {
	Type      websocket.MessageType
	Data      []byte
	ArrivedAt time.Time
}

// Options configure Dial. Zero values take the defaults.
type Options struct {
	Header          http.Header  // sent with the upgrade request (for example Authorization)
	MaxMessageBytes int64        // 0 = 4 MiB; a larger message fails Next and closes with 1009
	Subprotocols    []string     // offered in Sec-WebSocket-Protocol
	HTTPClient      *http.Client // nil = http.DefaultClient
	// OnPing, when set, is called (on the reader goroutine, so it must be
	// quick) each time the server sends an RFC 6455 Ping control frame, after
	// Pings counts it: a heartbeat check waits on it instead of polling.
	OnPing func()
}

// queued is how many received messages wait for Next before the reader stops
// reading. While it waits it also stops answering pings, so keep calling Next.
const queued = 16

// Conn is a dialled WebSocket. Next, the writers and Close are safe to call from
// different goroutines.
type Conn struct {
	conn   *websocket.Conn
	msgs   chan Message  // fed by the reader goroutine, closed when it stops
	done   chan struct{} // closed by Close to stop the reader
	exited chan struct{} // closed when the reader goroutine has returned
	pings  atomic.Int64

	mu     sync.Mutex
	err    error // why the reader stopped; set before msgs is closed
	status websocket.StatusCode
	reason string
	known  bool // a close frame was received

	closeOnce sync.Once
	closeErr  error
}

// Dial performs the opening handshake with url (ws, wss, http or https). When the
// server refuses the upgrade, the error comes with the server's response (status,
// headers and at most the first 1024 bytes of its body) for diagnostics.
func Dial(ctx context.Context, url string, opts Options) (*Conn, *http.Response, error) {
	c := &Conn{
		msgs:   make(chan Message, queued),
		done:   make(chan struct{}),
		exited: make(chan struct{}),
	}
	wc, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{
		HTTPClient:   opts.HTTPClient,
		HTTPHeader:   opts.Header,
		Subprotocols: opts.Subprotocols,
		OnPingReceived: func(context.Context, []byte) bool {
			c.pings.Add(1)
			if opts.OnPing != nil {
				opts.OnPing()
			}
			return true // answer with a pong, as any client must
		},
	})
	if err != nil {
		if resp != nil {
			return nil, resp, fmt.Errorf("ws: upgrade refused with HTTP status %q: %w", resp.Status, err)
		}
		return nil, nil, fmt.Errorf("ws: dial: %w", err)
	}
	limit := opts.MaxMessageBytes
	if limit <= 0 {
		limit = 4 << 20
	}
	wc.SetReadLimit(limit)
	c.conn = wc
	go c.read()
	return c, resp, nil
}

// read is the one goroutine that reads the connection. It never uses a deadline:
// a timed-out Read would close the connection.
func (c *Conn) read() {
	defer close(c.exited)
	defer close(c.msgs)
	for {
		typ, data, err := c.conn.Read(context.Background())
		if err != nil {
			c.stop(err)
			return
		}
		select {
		case c.msgs <- Message{Type: typ, Data: data, ArrivedAt: time.Now()}:
		case <-c.done:
			c.stop(net.ErrClosed)
			return
		}
	}
}

// stop records why reading ended and, if the server sent a close frame, its status.
func (c *Conn) stop(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var ce websocket.CloseError
	if errors.As(err, &ce) {
		c.status, c.reason, c.known = ce.Code, ce.Reason, true
		c.err = fmt.Errorf("ws: connection closed by the server with status %d (%s) reason %q: %w",
			int(ce.Code), ce.Code, ce.Reason, err)
		return
	}
	select {
	case <-c.done:
		c.err = fmt.Errorf("ws: connection closed by the client: %w", net.ErrClosed)
	default:
		c.err = fmt.Errorf("ws: read: %w", err)
	}
}

// Next returns the next message. If ctx ends first it returns an error wrapping
// ctx's error, and the connection stays open for the next call. Once the
// connection has ended and every queued message was returned, Next returns why it
// ended (for a server close, websocket.CloseStatus of the error is its status).
// After Close, Next returns an error wrapping net.ErrClosed.
func (c *Conn) Next(ctx context.Context) (Message, error) {
	select {
	case <-c.done:
		return Message{}, fmt.Errorf("ws: Next after Close: %w", net.ErrClosed)
	default:
	}
	// A message already here wins over an expired ctx, so results do not depend
	// on select's random choice.
	select {
	case m, ok := <-c.msgs:
		return c.received(m, ok)
	default:
	}
	select {
	case m, ok := <-c.msgs:
		return c.received(m, ok)
	case <-ctx.Done():
		return Message{}, fmt.Errorf("ws: no message before the caller's deadline: %w", context.Cause(ctx))
	}
}

func (c *Conn) received(m Message, ok bool) (Message, error) {
	if ok {
		return m, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return Message{}, c.err
}

// WriteJSON sends v as one JSON text message. As with every write, a ctx that
// ends mid-write closes the connection (coder/websocket cannot resume a frame).
func (c *Conn) WriteJSON(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("ws: encode JSON message: %w", err)
	}
	return c.WriteText(ctx, b)
}

// WriteText sends b as one text message, as is (even if it is not valid UTF-8,
// so a checker can test how a server handles that).
func (c *Conn) WriteText(ctx context.Context, b []byte) error {
	return c.write(ctx, websocket.MessageText, b)
}

// WriteBinary sends b as one binary message.
func (c *Conn) WriteBinary(ctx context.Context, b []byte) error {
	return c.write(ctx, websocket.MessageBinary, b)
}

func (c *Conn) write(ctx context.Context, typ websocket.MessageType, b []byte) error {
	if err := c.conn.Write(ctx, typ, b); err != nil {
		return fmt.Errorf("ws: write %s message of %d bytes: %w", typ, len(b), err)
	}
	return nil
}

// Ping sends a ping and waits for the server's pong (the reader goroutine
// receives it).
func (c *Conn) Ping(ctx context.Context) error {
	if err := c.conn.Ping(ctx); err != nil {
		return fmt.Errorf("ws: ping: %w", err)
	}
	return nil
}

// Pings returns how many pings the server has sent so far.
func (c *Conn) Pings() int { return int(c.pings.Load()) }

// Subprotocol returns the subprotocol the server selected, "" if none.
func (c *Conn) Subprotocol() string { return c.conn.Subprotocol() }

// Close sends a close frame with code and reason, waits (at most about 5 s) for
// the server's, and returns once the reader goroutine has stopped. Closing a
// connection the server already closed is not an error; later calls return the
// first call's result.
func (c *Conn) Close(code websocket.StatusCode, reason string) error {
	c.closeOnce.Do(func() {
		close(c.done)
		err := c.conn.Close(code, reason)
		<-c.exited
		if err != nil && !errors.Is(err, net.ErrClosed) {
			c.closeErr = fmt.Errorf("ws: close: %w", err)
		}
	})
	return c.closeErr
}

// Drop ends the connection at once, without the close handshake, as a
// broken network would (a client testing resume drops it this way), and
// returns once the reader goroutine has stopped. Later Close calls do
// nothing.
func (c *Conn) Drop() {
	c.closeOnce.Do(func() {
		close(c.done)
		_ = c.conn.CloseNow()
		<-c.exited
	})
}

// CloseStatus returns the status code and reason of the server's close frame,
// and whether one was received.
func (c *Conn) CloseStatus() (websocket.StatusCode, string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status, c.reason, c.known
}
