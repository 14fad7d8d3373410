package wrapfault

import (
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

}
