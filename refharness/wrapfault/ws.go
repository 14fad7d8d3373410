package wrapfault

import (
	"io"
	"net/http"

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
