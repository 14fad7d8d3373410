package wsadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// TestIndependentClient drives a whole session the way a third-party
// client would, from docs/websocket.md alone: coder/websocket over real
// TCP, raw text frames, its own few lines of JSON handling (none of this
// package's test helpers, nor conform's internal/ws or internal/client):
// connect with an auth frame, send a user message, watch events, answer
// an input request, drop the connection, resume after the last event seen
// and cancel the task.
func TestIndependentClient(t *testing.T) {
	const key = "independent-client-key-0123456789"
	srv, err := refharness.New(refharness.Options{APIKeys: map[string]string{key: "actor_default"}})
	if err != nil {
		t.Fatal(err)
	}
	Mount(srv, Options{HeartbeatInterval: 200 * time.Millisecond})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	post := func(path string, body any) map[string]any {
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest("POST", hs.URL+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Harn-Agents-Protocol-Version", "agents-protocol-2026-04-25")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		raw, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
		}
		return out
	}
	ws := post("/v1/workspaces", map[string]any{"name": "independent", "root": "/tmp/independent"})
	sess := post("/v1/sessions", map[string]any{"workspace_id": ws["id"]})["id"].(string)

	// A connection: one goroutine reads text frames into a channel, so
	// that a wait times out on the channel, not on the socket.
	type conn struct {
		ws     *websocket.Conn
		frames chan map[string]any
	}
	open := func(cursor any) *conn {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		u := "ws" + strings.TrimPrefix(hs.URL, "http") + "/v1/sessions/" + sess + "/events/stream"
		w, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{Subprotocols: []string{"harn-ws.v1"}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		if w.Subprotocol() != "harn-ws.v1" {
			t.Fatalf("subprotocol %q", w.Subprotocol())
		}
		w.SetReadLimit(4 << 20) // the profile: a client accepts frames up to 4 MiB
		c := &conn{ws: w, frames: make(chan map[string]any, 4096)}
		go func() {
			defer close(c.frames)
			for {
				typ, b, err := w.Read(context.Background())
				if err != nil {
					return
				}
				var f map[string]any
				if typ != websocket.MessageText || json.Unmarshal(b, &f) != nil {
					t.Errorf("a frame that is not one JSON object in a text message: %d %q", typ, b)
					return
				}
				if f["type"] == "ping" { // the heartbeat: answer it
					pong, _ := json.Marshal(map[string]any{"type": "pong", "in_reply_to": f["id"]})
					w.Write(context.Background(), websocket.MessageText, pong)
				}
				c.frames <- f
			}
		}()
		auth, _ := json.Marshal(map[string]any{"type": "auth", "id": "hello", "authorization": "Bearer " + key,
			"protocol_version": "agents-protocol-2026-04-25", "last_event_id": cursor})
		if err := w.Write(ctx, websocket.MessageText, auth); err != nil {
			t.Fatal(err)
		}
		return c
	}
	var lastSeen string
	var seen []map[string]any // every event frame, in order (a result may come before or after the events it caused)
	wait := func(c *conn, what string, want func(f map[string]any) bool) map[string]any {
		t.Helper()
		for _, f := range seen {
			if f["waited"] == nil && want(f) {
				f["waited"] = true
				return f
			}
		}
		deadline := time.NewTimer(time.Minute)
		defer deadline.Stop()
		for {
			select {
			case f, ok := <-c.frames:
				if !ok {
					t.Fatalf("connection closed while waiting for %s", what)
				}
				if f["type"] == "event" {
					lastSeen = f["event_id"].(string)
					seen = append(seen, f)
				}
				if want(f) {
					f["waited"] = true
					return f
				}
			case <-deadline.C:
				t.Fatalf("no %s within a minute", what)
			}
		}
	}
	send := func(c *conn, v map[string]any) {
		b, _ := json.Marshal(v)
		if err := c.ws.Write(context.Background(), websocket.MessageText, b); err != nil {
			t.Fatal(err)
		}
	}
	answer := func(c *conn, id string) map[string]any {
		return wait(c, "the answer to "+id, func(f map[string]any) bool {
			return f["in_reply_to"] == id && (f["type"] == "result" || f["type"] == "error")
		})
	}
	eventIs := func(kind string) func(map[string]any) bool {
		return func(f map[string]any) bool {
			ev, _ := f["event"].(map[string]any)
			return f["type"] == "event" && ev["event"] == kind
		}
	}

	c := open(nil)
	ready := wait(c, "ready", func(f map[string]any) bool { return f["type"] == "ready" })
	if ready["in_reply_to"] != "hello" || ready["profile"] != "harn-ws.v1" {
		t.Fatalf("ready: %v", ready)
	}
	wait(c, "session.created", eventIs("session.created"))

	send(c, map[string]any{"type": "user_message", "id": "m1", "session_id": sess,
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi", "visibility": "public"}}}})
	if r := answer(c, "m1"); r["type"] != "result" || r["status"] != 201.0 {
		t.Fatalf("user_message: %v", r)
	}

	task := post("/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "go", "visibility": "public"}}},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{
			map[string]any{"op": "input_required", "prompt": "which branch?"},
			map[string]any{"op": "emit", "count": 3},
			map[string]any{"op": "work", "ms": 600000}}}}})["id"].(string)
	req := wait(c, "the input request", func(f map[string]any) bool { return f["type"] == "input_request" })
	if req["task_id"] != task || req["prompt"] != "which branch?" {
		t.Fatalf("input_request: %v", req)
	}
	send(c, map[string]any{"type": "input_response", "id": "i1", "request_id": req["request_id"], "task_id": task,
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "main", "visibility": "public"}}}})
	if r := answer(c, "i1"); r["type"] != "result" || r["status"] != 201.0 {
		t.Fatalf("input_response: %v", r)
	}
	// The first agent message after the answer, then the connection drops.
	wait(c, "an agent message", eventIs("agent.message"))
	dropped := lastSeen
	c.ws.CloseNow()
	for range c.frames {
	}
	seen = nil

	// Resume after the last event seen: nothing missing, nothing twice.
	c = open(dropped)
	if r := wait(c, "ready", func(f map[string]any) bool { return f["type"] == "ready" }); r["last_event_id"] != dropped {
		t.Fatalf("ready after the drop: %v", r)
	}
	// Cancel, then read until the task.canceled event: every event after
	// the cursor arrives once, in the REST list's order, history first
	// (replayed) and then live (the agent may still be emitting).
	send(c, map[string]any{"type": "cancel_task", "id": "c1", "task_id": task, "reason": "done here"})
	if r := answer(c, "c1"); r["type"] != "result" || r["result"].(map[string]any)["status"] != "CANCELED" {
		t.Fatalf("cancel_task: %v", r)
	}
	if canceled := wait(c, "task.canceled", eventIs("task.canceled")); canceled["replayed"] != false {
		t.Errorf("the cancel's event is live, got %v", canceled["replayed"])
	}
	req2, _ := http.NewRequest("GET", hs.URL+"/v1/sessions/"+sess+"/events?limit=200&after_event_id="+dropped, nil)
	req2.Header.Set("Authorization", "Bearer "+key)
	req2.Header.Set("Harn-Agents-Protocol-Version", "agents-protocol-2026-04-25")
	resp, err := http.DefaultClient.Do(req2)
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if len(list.Data) == 0 {
		t.Fatalf("REST lists no event after %s", dropped)
	}
	// The frames for every event REST lists after the cursor (the wait
	// for the last one reads whatever has not arrived yet).
	wait(c, "the last event REST lists", func(f map[string]any) bool { return f["event_id"] == list.Data[len(list.Data)-1].ID })
	live := false
	for i, f := range seen {
		if i >= len(list.Data) || f["event_id"] != list.Data[i].ID {
			t.Fatalf("after the resume, event frame %d is %v; REST after %s lists %v", i, f["event_id"], dropped, list.Data)
		}
		if f["replayed"] == false {
			live = true
		} else if live {
			t.Errorf("event frame %v from history after a live one", f["event_id"])
		}
	}
	if len(seen) != len(list.Data) {
		t.Errorf("%d event frames after the resume, REST lists %d", len(seen), len(list.Data))
	}
	c.ws.Close(websocket.StatusNormalClosure, "bye")
}
