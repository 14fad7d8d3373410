package ws

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

// URL is the WebSocket URL of an http(s) URL: ws:// for http://, wss://
// for https://.
func URL(httpURL string) string { return "ws" + strings.TrimPrefix(httpURL, "http") }

// Loopback reports whether host is a loopback address: 127.0.0.0/8, ::1 or
// localhost (docs/interpretations.md#ws-wss).
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// PlainRemote says why a WebSocket URL (ws, wss, http or https) may not
// carry a credential (docs/websocket.md section 1.1): plain ws:// (or
// http://) to a host other than loopback, when the operator has not marked
// the deployment trusted development. "" when it may.
func PlainRemote(raw string, trustedDev bool) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Sprintf("%q is not an absolute URL", raw)
	}
	switch strings.ToLower(u.Scheme) {
	case "wss", "https":
		return ""
	case "ws", "http":
		if Loopback(u.Hostname()) || trustedDev {
			return ""
		}
		return fmt.Sprintf("%s is plain ws:// to %s, which is not a loopback address, and the deployment is not marked trusted development (--ws-trusted-dev)", raw, u.Hostname())
	}
	return fmt.Sprintf("%s is neither wss:// nor ws://", raw)
}
