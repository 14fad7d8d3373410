package client

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/ws"
)

// DialWS upgrades a protocol path (for example /v1/tasks/{id}/stream) to a
// WebSocket with the configured credentials and version header. The failed
// upgrade's HTTP response is recorded for diagnosis.
func (c *Client) DialWS(ctx context.Context, req Request) (*ws.Conn, *http.Response, error) {
	hr, _, err := c.build(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	u := c.URL(req)
	u = "ws" + strings.TrimPrefix(u, "http")
	h := hr.Header.Clone()
	h.Del("Accept")
	h.Del("Content-Type")
	start := time.Now()
	if err := c.health.check(); err != nil {
		c.rec.add(c.exchange("websocket", hr, nil, nil, nil, false, start, err))
		return nil, nil, &TransportError{Method: "GET", URL: c.Redactor().String(u), Err: err}
	}
	conn, resp, err := ws.Dial(ctx, u, ws.Options{Header: h, MaxMessageBytes: c.opts.MaxBodyBytes, HTTPClient: c.hc})
	if resp != nil {
		c.health.answered()
	} else if err != nil {
		c.health.unanswered(ctx, err)
	}
	e := c.exchange("websocket", hr, nil, resp, nil, false, start, err)
	c.rec.add(e)
	c.observe("websocket", req, hr, nil, resp, nil, false)
	if err != nil {
		return nil, resp, &TransportError{Method: "GET", URL: c.Redactor().String(u), Err: scrubErr(c.Redactor(), err)}
	}
	return conn, resp, nil
}
