package wsadapter

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
)

// TestFramingFaultsClose: after ready, a binary message closes 1003, a
// text message that is not one JSON object 1007, a frame over
// max_frame_bytes 1009, each after its error frame.
func TestFramingFaultsClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		path := "/v1/sessions/" + e.session() + "/events/stream"
		for _, tc := range []struct {
			name   string
			typ    websocket.MessageType
			data   []byte
			status int
			code   string
			close  websocket.StatusCode
		}{
			{"binary", websocket.MessageBinary, []byte(`{"type":"ping","id":"p"}`), 400, "invalid_request", websocket.StatusUnsupportedData},
			{"not JSON", websocket.MessageText, []byte(`ping`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"a scalar", websocket.MessageText, []byte(`42`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"trailing data", websocket.MessageText, []byte(`{"type":"ping","id":"p"} x`), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"not UTF-8", websocket.MessageText, []byte("{\"type\":\"ping\",\"id\":\"\xff\"}"), 400, "invalid_request", websocket.StatusInvalidFramePayloadData},
			{"over 1 MiB", websocket.MessageText, []byte(`{"type":"ping","id":"p","pad":"` + strings.Repeat("x", 1<<20) + `"}`), 413, "payload_too_large", websocket.StatusMessageTooBig},
		} {
			t.Logf("case %s", tc.name)
			c := e.mustDial(path, headers(testKey))
			c.typed("ready")
			c.sendRaw(tc.typ, tc.data)
			ef := c.wantClose(tc.status, tc.code, tc.close)
			if tc.code == "payload_too_large" {
				if d, _ := ef["error"].(map[string]any)["details"].(map[string]any); num(d["max_frame_bytes"]) != 1<<20 {
					t.Errorf("details = %v, want max_frame_bytes 1048576", d)
				}
			}
		}
		// A frame of exactly the limit is taken.
		c := e.mustDial(path, headers(testKey))
		c.typed("ready")
		pre := `{"type":"ping","id":"at-limit","pad":"`
		c.sendRaw(websocket.MessageText, []byte(pre+strings.Repeat("x", 1<<20-len(pre)-2)+`"}`))
		if r := c.reply("at-limit"); r.f["type"] != "pong" {
			t.Errorf("a frame of max_frame_bytes: %s, want its pong", r.raw)
		}
	})
}

// TestBadFramesKeepTheConnection: an unknown type, or missing or mistyped
// members, get error 400 with a JSON Pointer param (in_reply_to the
// frame's id), and the connection stays open.
func TestBadFramesKeepTheConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		task := e.submit(sess, step("work", "ms", 600000))
		c := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		c.typed("ready")
		for _, tc := range []struct {
			frame map[string]any
			id    any // the in_reply_to wanted
			param string
		}{
			{map[string]any{"type": "subscribe", "id": "f1"}, "f1", "/type"},
			{map[string]any{"type": "event", "id": "f2"}, "f2", "/type"},
			{map[string]any{"id": "f3"}, "f3", "/type"},
			{map[string]any{"type": 7, "id": "f4"}, "f4", "/type"},
			{map[string]any{"type": "cancel_task", "task_id": task}, nil, "/id"},
			{map[string]any{"type": "cancel_task", "id": strings.Repeat("i", 129), "task_id": task}, nil, "/id"},
			{map[string]any{"type": "cancel_task", "id": "f5"}, "f5", "/task_id"},
			{map[string]any{"type": "cancel_task", "id": "f6", "task_id": 12}, "f6", "/task_id"},
			{map[string]any{"type": "user_message", "id": "f7", "session_id": sess}, "f7", "/message"},
			{map[string]any{"type": "user_message", "id": "f8", "session_id": sess, "message": map[string]any{"role": "user"}}, "f8", "/message/parts"},
			{map[string]any{"type": "user_message", "id": "f9", "session_id": sess, "message": map[string]any{"role": "user",
				"parts": []any{map[string]any{"type": "text", "visibility": "public"}}}}, "f9", "/message/parts/0/text"},
			{map[string]any{"type": "truncate_session", "id": "f10", "session_id": sess}, "f10", "/keep_first"},
			{map[string]any{"type": "truncate_session", "id": "f11", "session_id": sess, "keep_first": -1}, "f11", "/keep_first"},
			{map[string]any{"type": "cancel_task", "id": "f12", "task_id": task, "idempotency_key": ""}, "f12", "/idempotency_key"},
			{map[string]any{"type": "cancel_task", "id": "f13", "task_id": task, "idempotency_key": strings.Repeat("k", 256)}, "f13", "/idempotency_key"},
			{map[string]any{"type": "resume", "id": "f14"}, "f14", "/last_event_id"},
			{map[string]any{"type": "resume", "id": "f15", "last_event_id": 3}, "f15", "/last_event_id"},
			{map[string]any{"type": "ping"}, nil, "/id"},
			{map[string]any{"type": "authorization_response", "id": "f16", "task_id": task, "request_id": "r"}, "f16", "/approved"},
		} {
			c.send(tc.frame)
			ef := c.typed("error")
			if num(ef.f["status"]) != 400 || errCode(ef.f) != "invalid_request" || ef.f["in_reply_to"] != tc.id {
				t.Errorf("%v: %s, want error 400 invalid_request in reply to %v", tc.frame, ef.raw, tc.id)
			}
			if p := ef.f["error"].(map[string]any)["param"]; p != tc.param {
				t.Errorf("%v: param %v, want %s", tc.frame, p, tc.param)
			}
		}
		c.send(map[string]any{"type": "ping", "id": "alive"})
		c.reply("alive")
		if got := e.status(task); got != "WORKING" {
			t.Errorf("task %s after the refused frames, want WORKING", got)
		}
	})
}

// TestHeartbeats: the server sends a ping frame every heartbeat interval
// (ready says which), and answers a client ping with a pong.
func TestHeartbeats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{HeartbeatInterval: 2 * time.Second}, nil)
		c := e.mustDial("/v1/sessions/"+e.session()+"/events/stream", headers(testKey))
		ready := c.typed("ready")
		start := time.Now()
		if num(ready.f["heartbeat_interval_ms"]) != 2000 || num(ready.f["pong_timeout_ms"]) != 10000 {
			t.Errorf("ready: %s", ready.raw)
		}
		var last time.Time
		for i := 1; i <= 3; i++ {
			p := c.typed("ping")
			if p.f["id"] == "" || p.f["sent_at"] == nil {
				t.Errorf("ping frame %s", p.raw)
			}
			c.send(map[string]any{"type": "pong", "in_reply_to": p.f["id"]})
			last = time.Now()
		}
		if d := last.Sub(start); d != 6*time.Second {
			t.Errorf("three pings took %s, want 3 intervals of 2s", d)
		}
		c.send(map[string]any{"type": "ping", "id": "client-ping"})
		if r := c.reply("client-ping"); r.f["type"] != "pong" {
			t.Errorf("client ping answered %s, want pong", r.raw)
		}
		// The default interval is the recommended 15 s, and the maximum 30 s.
		if New(e.srv, Options{}).opts.HeartbeatInterval != 15*time.Second || New(e.srv, Options{HeartbeatInterval: time.Hour}).opts.HeartbeatInterval != 30*time.Second {
			t.Errorf("heartbeat defaults: want 15s, capped at 30s")
		}
	})
}

// TestSlowReaderClosed1013: a client that stops reading is closed with
// 1013 once a frame waits for it longer than the write timeout, and the
// connection's goroutines end.
func TestSlowReaderClosed1013(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slow atomic.Int64
		e := newEnv(t, Options{WriteTimeout: 3 * time.Second}, func(a *Adapter) { a.onSlow = func() { slow.Add(1) } })
		sess := e.session()
		// A raw connection whose client reads nothing until told to.
		ws, _, err := websocket.Dial(context.Background(), e.wsURL("/v1/sessions/"+sess+"/events/stream"),
			&websocket.DialOptions{HTTPHeader: headers(testKey), Subprotocols: []string{Profile}, HTTPClient: e.hc})
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		// ready and the history fill nothing: the pipe takes no frame
		// until read, so the first write already waits.
		task := e.submit(sess, step("emit", "count", 5))
		e.waitStatus(task, "COMPLETED")
		synctest.Wait()
		if slow.Load() != 0 {
			t.Fatalf("closed as slow before the write timeout")
		}
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if slow.Load() != 1 {
			t.Fatalf("not closed as slow after the write timeout (%d)", slow.Load())
		}
		// Reading again, the client gets what was stuck, then the close.
		var code websocket.StatusCode
		for {
			_, _, err := ws.Read(context.Background())
			if err != nil {
				code = websocket.CloseStatus(err)
				break
			}
		}
		if code != websocket.StatusTryAgainLater {
			t.Errorf("close status %d, want 1013", code)
		}
		synctest.Wait()
		if n := e.a.Open(); n != 0 {
			t.Errorf("%d connections still open", n)
		}
	})
}

// TestShutdownClosesWith1001: the server's Close ends every connection
// with 1001 after a 503 error frame.
func TestShutdownClosesWith1001(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		a := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		a.typed("ready")
		b := e.mustDial("/v1/sessions/"+sess+"/events/stream", nil) // waiting for its auth frame
		synctest.Wait()
		e.srv.Close()
		a.wantClose(http.StatusServiceUnavailable, "service_unavailable", websocket.StatusGoingAway)
		b.wantClose(http.StatusServiceUnavailable, "service_unavailable", websocket.StatusGoingAway)
		e.a.Wait()
	})
}

// TestConnectionsEndCleanly: when clients close (or vanish), each
// connection's goroutines end: nothing stays open, and the bubble ends
// with no goroutine left (synctest.Test fails on a leak).
func TestConnectionsEndCleanly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{HeartbeatInterval: time.Second}, nil)
		sess := e.session()
		task := e.submit(sess, step("work", "ms", 600000))
		var cs []*client
		for _, p := range []string{"/v1/sessions/" + sess + "/events/stream", "/v1/tasks/" + task + "/stream"} {
			for _, hdr := range []http.Header{headers(testKey), nil} {
				c := e.mustDial(p, hdr)
				if hdr == nil {
					c.send(authFrame("a", testKey))
				}
				c.typed("ready")
				cs = append(cs, c)
			}
		}
		half := e.mustDial("/v1/tasks/"+task+"/stream", nil) // never authenticates
		synctest.Wait()
		if n := e.a.Open(); n != 5 {
			t.Fatalf("%d connections open, want 5", n)
		}
		cs[0].c.Close(websocket.StatusNormalClosure, "done")
		cs[1].c.Close(websocket.StatusGoingAway, "leaving")
		cs[2].c.CloseNow() // vanishes without a close frame
		half.c.CloseNow()
		synctest.Wait()
		if n := e.a.Open(); n != 1 {
			t.Errorf("%d connections open, want 1", n)
		}
		cs[3].send(map[string]any{"type": "cancel_task", "id": "c", "task_id": task})
		cs[3].reply("c")
		cs[3].c.Close(websocket.StatusNormalClosure, "")
		synctest.Wait()
		if n := e.a.Open(); n != 0 {
			t.Errorf("%d connections open, want 0", n)
		}
	})
}
