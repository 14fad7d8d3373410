package wrapfault

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
)

func init() {
	// A WebSocket transport that completes the harn-ws.v1 upgrade on the
	// stream paths and then says nothing at all: no ready, no ping, no
	// close, until the client goes. The suite must end every wait on it
	// within its own timeouts (a silent server cannot hang a run) and
	// judge it once: the transport is offered but does not work.
	wireFault(fault.Fault{Name: "ws-silent",
		Doc:   "the WebSocket upgrade on the stream paths succeeds, then nothing is ever sent: no ready, no ping, no close",
		Fails: []string{"EXT-WS-001", "EXT-TRANSPORT-002"}},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, stream := refharness.StreamResource(r.URL.Path); !stream || !refharness.IsUpgrade(r) {
					next.ServeHTTP(w, r)
					return
				}
				c, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: []string{"harn-ws.v1"}})
				if err != nil {
					return // Accept has answered the failed handshake
				}
				env.Used()
				defer c.CloseNow()
				c.SetReadLimit(1 << 20)
				for {
					if _, _, err := c.Read(r.Context()); err != nil {
						return
					}
				}
			}), nil
		})

	// The profile as it read before the ws-no-subprotocol ruling: an
	// upgrade that offers no subprotocol (a browser's new WebSocket(url),
	// the upstream TypeScript SDK's connectTaskEventsWebSocket) is refused
	// with 400, which locks those clients out (a SHOULD: EXT-WS-014).
	wireFault(fault.Fault{Name: "ws-requires-subprotocol",
		Doc:   "a WebSocket upgrade that offers no subprotocol is refused with 400 invalid_request",
		Warns: []string{"EXT-WS-014"}},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, stream := refharness.StreamResource(r.URL.Path); !stream || !refharness.IsUpgrade(r) || r.Header.Get("Sec-WebSocket-Protocol") != "" {
					next.ServeHTTP(w, r)
					return
				}
				env.Used()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":{"code":"invalid_request","type":"request_error","param":"Sec-WebSocket-Protocol",`+
					`"message":"the upgrade does not offer the subprotocol harn-ws.v1","request_id":"req_ws_requires_subprotocol",`+
					`"details":{"supported_subprotocols":["harn-ws.v1"]}}}`)
			}), nil
		})
}

func init() {
	// A WebSocket transport that reads the client's commands and answers
	// none: no result, no error, no effect; authentication, the ready
	// frame, events, requests and heartbeats are the Harness's. A relay
	// in front of the Harness drops the command frames (a wire fault: an
	// in-server one would break the probe of every other command fault).
	// Each command's requirement fails once, and the whole run stays
	// quick: after two unanswered commands the suite sends no more
	// (docs/interpretations.md#fail-fast).
	wireFault(fault.Fault{Name: "ws-commands-unacknowledged",
		Doc:       "WebSocket command frames (user_message, cancel_task, truncate_session, input_response, authorization_response, approval_response, tool_result, resume) are read and never answered or acted on",
		Fails:     []string{"EXT-WS-004", "EXT-WS-005", "EXT-WS-006", "EXT-WS-008", "EXT-WS-010"},
		Tolerated: []string{"EXT-WS-015"},
		Why:       "a retried WebSocket command that is never answered cannot be shown to act once (EXT-WS-015): the same silence seen from the idempotency side",
		Warns:     []string{"EXT-WS-009", "EXT-WS-013"}},
		func(next http.Handler, env Env) (http.Handler, error) {
			return relayWS(next, func(b []byte) bool {
				var f struct{ Type string }
				if json.Unmarshal(b, &f) != nil || !commandTypes[f.Type] {
					return false
				}
				env.Used()
				return true
			}), nil
		})
}

// commandTypes are the harn-ws.v1 client frames that ask for an operation
// (docs/websocket.md section 4), and resume.
var commandTypes = map[string]bool{"user_message": true, "cancel_task": true, "truncate_session": true, "input_response": true,
	"authorization_response": true, "approval_response": true, "tool_result": true, "resume": true}

// relayWS serves the WebSocket upgrades of the stream paths through a
// relay: it opens the same upgrade on next (over in-memory connections),
// answers the client as next answered, and then carries every message
// both ways (closes with their codes included), except the client's text
// messages drop says to drop. Everything else goes to next unchanged.
func relayWS(next http.Handler, drop func([]byte) bool) http.Handler {
	inner := servePipes(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, stream := refharness.StreamResource(r.URL.Path); !stream || !refharness.IsUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		ctx := r.Context()
		hdr := http.Header{}
		for _, k := range []string{"Authorization", refharness.VersionHeader, "Last-Event-Id"} {
			if vs := r.Header.Values(k); len(vs) > 0 {
				hdr[http.CanonicalHeaderKey(k)] = vs
			}
		}
		var protos []string
		for _, v := range r.Header.Values("Sec-WebSocket-Protocol") {
			for _, p := range strings.Split(v, ",") {
				if p = strings.TrimSpace(p); p != "" {
					protos = append(protos, p)
				}
			}
		}
		up, resp, err := websocket.Dial(ctx, "ws://harness"+r.URL.RequestURI(), &websocket.DialOptions{HTTPClient: inner, HTTPHeader: hdr, Host: r.Host, Subprotocols: protos})
		if err != nil {
			if resp == nil {
				http.Error(w, "relay: "+err.Error(), http.StatusBadGateway)
				return
			}
			for k, vs := range resp.Header {
				if k != "Connection" && k != "Upgrade" && k != "Content-Length" {
					w.Header()[k] = vs
				}
			}
			w.WriteHeader(resp.StatusCode)
			io.Copy(w, resp.Body)
			return
		}
		defer up.CloseNow()
		var sub []string
		if p := up.Subprotocol(); p != "" {
			sub = []string{p}
		}
		down, err := websocket.Accept(w, r, &websocket.AcceptOptions{Subprotocols: sub})
		if err != nil {
			return // Accept has answered the failed handshake
		}
		defer down.CloseNow()
		up.SetReadLimit(1 << 22)
		down.SetReadLimit(1 << 22)
		done := make(chan struct{})
		go func() {
			defer close(done)
			carry(ctx, up, down, nil)
		}()
		carry(ctx, down, up, drop)
		<-done
	})
}

// carry copies messages from src to dst until src ends, then closes dst
// as src was closed (its code and reason), or at once.
func carry(ctx context.Context, src, dst *websocket.Conn, drop func([]byte) bool) {
	for {
		typ, b, err := src.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				dst.Close(ce.Code, ce.Reason)
			} else {
				dst.CloseNow()
			}
			return
		}
		if typ == websocket.MessageText && drop != nil && drop(b) {
			continue
		}
		if dst.Write(ctx, typ, b) != nil {
			src.CloseNow()
			return
		}
	}
}

// servePipes serves h over in-memory connections and returns a client
// that dials them.
func servePipes(h http.Handler) *http.Client {
	conns := make(chan net.Conn)
	l := &pipeListener{conns: conns, closed: make(chan struct{})}
	go (&http.Server{Handler: h}).Serve(l)
	return &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		a, b := net.Pipe()
		select {
		case conns <- b:
			return a, nil
		case <-ctx.Done():
			a.Close()
			b.Close()
			return nil, ctx.Err()
		}
	}}}
}

// pipeListener is a net.Listener of in-memory connections (servePipes).
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }
