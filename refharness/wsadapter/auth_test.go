package wsadapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// refusal reads an HTTP refusal of an upgrade: status and error code.
func refusal(t *testing.T, resp *http.Response, err error) (int, map[string]any) {
	t.Helper()
	if err == nil {
		t.Fatalf("the upgrade was accepted, want it refused")
	}
	if resp == nil {
		t.Fatalf("no HTTP answer: %v", err)
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	var env map[string]any
	if json.Unmarshal(b, &env) != nil {
		t.Fatalf("status %d: body is not the error envelope: %q", resp.StatusCode, b)
	}
	e, _ := env["error"].(map[string]any)
	return resp.StatusCode, e
}

// TestHeaderAuthRefusals: way (a) makes the REST checks before the upgrade
// and answers each with its HTTP status and the error envelope, never
// naming the credential.
func TestHeaderAuthRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		other := e.ok("POST", "/v1/workspaces", map[string]any{"name": "o", "root": "/tmp/o"}, "Authorization", "Bearer "+secondKey)
		otherSess := e.ok("POST", "/v1/sessions", map[string]any{"workspace_id": other["id"]}, "Authorization", "Bearer "+secondKey)["id"].(string)
		path := "/v1/sessions/" + sess + "/events/stream"
		h := func(kv ...string) http.Header {
			hd := http.Header{}
			for i := 0; i+1 < len(kv); i += 2 {
				hd.Set(kv[i], kv[i+1])
			}
			return hd
		}
		v := refharness.VersionHeader
		for _, tc := range []struct {
			name   string
			path   string
			hdr    http.Header
			protos []string
			status int
			code   string
		}{
			{"another subprotocol", path, headers(testKey), []string{"harn-ws.v2"}, 400, "invalid_request"},
			{"other subprotocols only", path, headers(testKey), []string{"chat", "harn-ws.v2"}, 400, "invalid_request"},
			{"wrong key", path, headers("not-a-key"), []string{Profile}, 401, "unauthenticated"},
			{"empty credential", path, h("Authorization", "", v, refharness.ProtocolVersion), []string{Profile}, 401, "unauthenticated"},
			{"not bearer", path, h("Authorization", "Basic "+testKey, v, refharness.ProtocolVersion), []string{Profile}, 401, "unauthenticated"},
			{"no version", path, h("Authorization", "Bearer "+testKey), []string{Profile}, 426, "unsupported_protocol_version"},
			{"wrong version", path, h("Authorization", "Bearer "+testKey, v, "agents-protocol-1999-01-01"), []string{Profile}, 426, "unsupported_protocol_version"},
			{"missing session", "/v1/sessions/sess_missing/events/stream", headers(testKey), []string{Profile}, 404, "resource_not_found"},
			{"missing task", "/v1/tasks/task_missing/stream", headers(testKey), []string{Profile}, 404, "resource_not_found"},
			{"another tenant's session", "/v1/sessions/" + otherSess + "/events/stream", headers(testKey), []string{Profile}, 404, "resource_not_found"},
		} {
			hdr := tc.hdr
			if tc.name == "empty credential" {
				hdr = http.Header{"Authorization": {""}, v: {refharness.ProtocolVersion}}
			}
			_, resp, err := e.dialWith(tc.path, hdr, tc.protos)
			status, ee := refusal(t, resp, err)
			if status != tc.status || ee["code"] != tc.code {
				t.Errorf("%s: %d %v, want %d %s", tc.name, status, ee["code"], tc.status, tc.code)
			}
			if b, _ := json.Marshal(ee); strings.Contains(string(b), testKey) {
				t.Errorf("%s: the refusal names the credential: %s", tc.name, b)
			}
			switch tc.code {
			case "invalid_request":
				d, _ := ee["details"].(map[string]any)
				if l, _ := d["supported_subprotocols"].([]any); len(l) != 1 || l[0] != Profile {
					t.Errorf("%s: details = %v, want supported_subprotocols [%s]", tc.name, ee["details"], Profile)
				}
			case "unsupported_protocol_version":
				d, _ := ee["details"].(map[string]any)
				if l, _ := d["supported_versions"].([]any); len(l) != 1 || l[0] != refharness.ProtocolVersion {
					t.Errorf("%s: details = %v, want supported_versions", tc.name, ee["details"])
				}
			}
		}
		// A malformed handshake is refused with the error envelope.
		for _, hd := range [][]string{
			{"Upgrade", "websocket"},
			{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version", "8"},
			{"Upgrade", "websocket", "Connection", "Upgrade", "Sec-WebSocket-Version", "13"},
		} {
			if code, body := e.rest("GET", path, nil, hd...); code != 400 || body["error"].(map[string]any)["code"] != "invalid_request" {
				t.Errorf("upgrade with %v: %d %v, want 400 invalid_request", hd, code, body)
			}
		}
		// Way (b) checks a version header that is present.
		_, resp, err := e.dialWith(path, h(v, "agents-protocol-1999-01-01"), []string{Profile})
		if status, ee := refusal(t, resp, err); status != 426 || ee["code"] != "unsupported_protocol_version" {
			t.Errorf("way (b) with an unsupported version header: %d %v, want 426", status, ee)
		}
		// Not a stream path: the global feed serves no WebSocket.
		if _, resp, err := e.dial("/v1/events/stream", headers(testKey)); err == nil || resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
			t.Errorf("global feed: upgraded (%v), want no WebSocket there", err)
		}
	})
}

// TestAuthFrameRefusals: way (b) upgrades, then wants an auth frame; each
// failure is an error frame and its close code.
func TestAuthFrameRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		other := e.ok("POST", "/v1/workspaces", map[string]any{"name": "o", "root": "/tmp/o"}, "Authorization", "Bearer "+secondKey)
		otherSess := e.ok("POST", "/v1/sessions", map[string]any{"workspace_id": other["id"]}, "Authorization", "Bearer "+secondKey)["id"].(string)
		path := "/v1/sessions/" + sess + "/events/stream"
		wrongVersion := authFrame("a", testKey)
		wrongVersion["protocol_version"] = "agents-protocol-1999-01-01"
		noVersion := authFrame("a", testKey)
		delete(noVersion, "protocol_version")
		for _, tc := range []struct {
			name   string
			path   string
			send   any // a frame, or raw bytes as text, or websocket.MessageBinary
			status int
			code   string
			close  websocket.StatusCode
		}{
			{"wrong key", path, authFrame("a", "not-a-key"), 401, "unauthenticated", 4401},
			{"no authorization", path, map[string]any{"type": "auth", "id": "a", "protocol_version": refharness.ProtocolVersion}, 401, "unauthenticated", 4401},
			{"first frame not auth", path, map[string]any{"type": "ping", "id": "p"}, 401, "unauthenticated", 4401},
			{"a command first", path, map[string]any{"type": "cancel_task", "id": "c", "task_id": "t"}, 401, "unauthenticated", 4401},
			{"wrong version", path, wrongVersion, 426, "unsupported_protocol_version", 4426},
			{"no version", path, noVersion, 426, "unsupported_protocol_version", 4426},
			{"missing session", "/v1/sessions/sess_missing/events/stream", authFrame("a", testKey), 404, "resource_not_found", 4404},
			{"another tenant's session", "/v1/sessions/" + otherSess + "/events/stream", authFrame("a", testKey), 404, "resource_not_found", 4404},
			{"oversize auth frame", path, map[string]any{"type": "auth", "id": "a", "authorization": "Bearer " + strings.Repeat("k", 64<<10), "protocol_version": refharness.ProtocolVersion},
				413, "payload_too_large", websocket.StatusMessageTooBig},
			{"binary first", path, websocket.MessageBinary, 400, "invalid_request", websocket.StatusUnsupportedData},
			{"not JSON first", path, []byte(`{"type":"auth"`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"two objects first", path, []byte(`{"type":"auth"} {}`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"an array first", path, []byte(`[1]`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
		} {
			t.Logf("case %s", tc.name) // shown with a failure of this case
			func() {
				c := e.mustDial(tc.path, nil)
				switch v := tc.send.(type) {
				case websocket.MessageType:
					c.sendRaw(v, []byte(`{"type":"auth"}`))
				case []byte:
					c.sendRaw(websocket.MessageText, v)
				default:
					c.send(v)
				}
				ef := c.wantClose(tc.status, tc.code, tc.close)
				if b, _ := json.Marshal(ef); strings.Contains(string(b), testKey) || strings.Contains(string(b), "not-a-key") {
					t.Errorf("the error frame names the credential: %s", b)
				}
				if m, ok := tc.send.(map[string]any); ok && m["type"] == "auth" && tc.code != "payload_too_large" && ef["in_reply_to"] != "a" {
					t.Errorf("in_reply_to = %v, want the auth frame's id a", ef["in_reply_to"])
				}
			}()
		}
		t.Log("case no frame within 10s")
		func() {
			c := e.mustDial(path, nil)
			start := time.Now()
			c.wantClose(401, "unauthenticated", 4401)
			if d := time.Since(start); d < authDeadline || d > authDeadline+time.Second {
				t.Errorf("closed after %s, want the %s deadline", d, authDeadline)
			}
		}()
		t.Log("case an auth frame after authentication")
		func() {
			c := e.mustDial(path, headers(testKey))
			c.typed("ready")
			c.send(authFrame("again", testKey))
			if r := c.reply("again"); r.f["type"] != "error" || num(r.f["status"]) != 400 {
				t.Errorf("second auth: %s, want error 400", r.raw)
			}
			c.send(map[string]any{"type": "ping", "id": "still-open"})
			c.reply("still-open")
		}()
	})
}

// TestOAuthScopes: a token's scopes decide as for REST: one without
// events:read may not open a stream (403 before the upgrade, 4403 after
// an auth frame); one that may read events but not write messages opens
// the stream and gets 403 for a user_message.
func TestOAuthScopes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		token := func(scope string) string {
			form := url.Values{"grant_type": {"client_credentials"}, "client_id": {"actor_default"}, "client_secret": {testKey}, "scope": {scope}}
			req, _ := http.NewRequest("POST", e.base+refharness.OAuthTokenPath, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			resp, err := e.hc.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var tok map[string]any
			if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 200 {
				t.Fatalf("token: %d %v %v", resp.StatusCode, tok, err)
			}
			return tok["access_token"].(string)
		}
		path := "/v1/sessions/" + sess + "/events/stream"
		noEvents := token("sessions:read")
		_, resp, err := e.dial(path, headers(noEvents))
		if status, ee := refusal(t, resp, err); status != 403 || ee["code"] != "permission_denied" {
			t.Errorf("way (a) without events:read: %d %v, want 403", status, ee)
		}
		c := e.mustDial(path, nil)
		c.send(authFrame("a", noEvents))
		c.wantClose(403, "permission_denied", 4403)

		readOnly := token("events:read sessions:read")
		c = e.mustDial(path, nil)
		c.send(authFrame("a", readOnly))
		c.typed("ready")
		c.send(map[string]any{"type": "user_message", "id": "m", "session_id": sess, "message": textMessage("x")})
		if r := c.reply("m"); r.f["type"] != "error" || num(r.f["status"]) != 403 || errCode(r.f) != "permission_denied" {
			t.Errorf("user_message without messages write scope: %s, want error 403", r.raw)
		}
	})
}

// TestStreamHidesItsCredential: a Stream keeps the credential for its
// commands, and no formatting of it shows the credential.
func TestStreamHidesItsCredential(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		r, _ := http.NewRequest("GET", e.base+"/v1/sessions/"+sess+"/events/stream", nil)
		r.RequestURI = r.URL.RequestURI()
		st, rerr := e.srv.OpenStream(r, "Bearer "+testKey, refharness.ProtocolVersion)
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			if s := fmt.Sprintf(verb, st); strings.Contains(s, testKey) {
				t.Errorf("%s of a Stream shows the credential: %s", verb, s)
			}
		}
		// It still acts as its caller.
		rep := st.Exec(context.Background(), refharness.Command{Method: "POST", Path: "/v1/sessions/" + sess + "/messages",
			Body: []byte(`{"message":{"role":"user","parts":[{"type":"text","text":"x","visibility":"public"}]}}`)})
		if rep.Status != 201 {
			t.Errorf("Exec: %d %s", rep.Status, rep.Body)
		}
	})
}

// TestNoSubprotocolIsHarnWSv1: an upgrade that offers no subprotocol (a
// browser's new WebSocket(url); the upstream TypeScript SDK's
// connectTaskEventsWebSocket without protocols) is a harn-ws.v1 upgrade
// (docs/interpretations.md ws-no-subprotocol): completed selecting none,
// on either way in, and the session speaks the profile.
func TestNoSubprotocolIsHarnWSv1(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		path := "/v1/sessions/" + sess + "/events/stream"
		for _, way := range []string{"headers", "auth frame"} {
			var hdr http.Header
			if way == "headers" {
				hdr = headers(testKey)
			}
			c, resp, err := e.dialWith(path, hdr, nil)
			if err != nil {
				t.Fatalf("%s: upgrade without a subprotocol refused: %v (%v)", way, err, resp)
			}
			if got := resp.Header.Get("Sec-WebSocket-Protocol"); got != "" {
				t.Errorf("%s: selected subprotocol %q, none offered", way, got)
			}
			if way == "auth frame" {
				c.send(authFrame("a", testKey))
			}
			r := c.typed("ready")
			if r.f["profile"] != Profile {
				t.Errorf("%s: ready names profile %v, want %s", way, r.f["profile"], Profile)
			}
			c.send(map[string]any{"type": "user_message", "id": "m", "session_id": sess, "message": textMessage("hello")})
			if rep := c.reply("m"); rep.f["type"] != "result" {
				t.Errorf("%s: user_message answered %s, want result", way, rep.raw)
			}
		}
	})
}
