package wsadapter

import (
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// TestDiscoveryAdvertisesWebSocket: capabilities.websocket is true exactly
// when the adapter is mounted.
func TestDiscoveryAdvertisesWebSocket(t *testing.T) {
	synctest.Test(t, testDiscoveryAdvertisesWebSocket)
}

func testDiscoveryAdvertisesWebSocket(t *testing.T) {
	e := newEnv(t, Options{}, nil)
	caps := func() any { return e.ok("GET", "/v1", nil)["capabilities"].(map[string]any)["websocket"] }
	if got := caps(); got != true {
		t.Errorf("mounted: capabilities.websocket = %v, want true", got)
	}
	e.srv.SetUpgradeHandler(nil)
	if got := caps(); got != false {
		t.Errorf("unmounted: capabilities.websocket = %v, want false", got)
	}
	// Unmounted, an upgrade is an ordinary request again (SSE answers it).
	sess := e.session()
	if _, resp, err := e.dial("/v1/sessions/"+sess+"/events/stream", headers(testKey)); err == nil || resp == nil || resp.StatusCode != http.StatusOK {
		t.Errorf("unmounted upgrade: err %v, resp %v; want the SSE answer (200, no upgrade)", err, resp)
	}
}

// TestBothPathsBothWays: ready, the resource's events as event frames
// (the REST copies), user_message and cancel_task, on the session stream
// and the task stream, authenticated by headers and by the auth frame.
func TestBothPathsBothWays(t *testing.T) {
	for _, tc := range []struct {
		name   string
		task   bool
		header bool
	}{{"session/headers", false, true}, {"session/auth-frame", false, false}, {"task/headers", true, true}, {"task/auth-frame", true, false}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, Options{}, nil)
				sess := e.session()
				task := e.submit(sess, step("emit", "count", 2), step("work", "ms", 600000))
				path, res := "/v1/sessions/"+sess+"/events/stream", refharness.Resource{Object: "session", ID: sess}
				if tc.task {
					path, res = "/v1/tasks/"+task+"/stream", refharness.Resource{Object: "task", ID: task}
				}
				var c *client
				if tc.header {
					c = e.mustDial(path, headers(testKey))
				} else {
					c = e.mustDial(path, nil)
					c.send(authFrame("c-auth", testKey))
				}
				if got := c.c.Subprotocol(); got != Profile {
					t.Errorf("subprotocol = %q, want %s", got, Profile)
				}
				ready, _ := c.next()
				if ready.f["type"] != "ready" {
					t.Fatalf("first frame %s, want ready", ready.raw)
				}
				if r := ready.f["resource"].(map[string]any); r["object"] != res.Object || r["id"] != res.ID {
					t.Errorf("ready.resource = %v, want %v", r, res)
				}
				if !tc.header && ready.f["in_reply_to"] != "c-auth" {
					t.Errorf("ready.in_reply_to = %v, want c-auth", ready.f["in_reply_to"])
				}
				if ready.f["last_event_id"] != nil || num(ready.f["max_frame_bytes"]) != 1<<20 || num(ready.f["heartbeat_interval_ms"]) != 15000 {
					t.Errorf("ready = %s", ready.raw)
				}
				// The history, as REST lists it, up to the second agent message.
				c.until("the second agent.message", func(m msg) bool {
					ev, _ := m.f["event"].(map[string]any)
					p, _ := ev["payload"].(map[string]any)
					return ev["event"] == "agent.message" && p["index"] == float64(1)
				})
				msgID := "c-msg"
				c.send(map[string]any{"type": "user_message", "id": msgID, "session_id": sess, "message": textMessage("from ws " + tc.name)})
				r := c.reply(msgID)
				if r.f["type"] != "result" || num(r.f["status"]) != http.StatusCreated {
					t.Fatalf("user_message answer %s, want result 201", r.raw)
				}
				mid := r.f["result"].(map[string]any)["id"]
				listed := e.ok("GET", "/v1/sessions/"+sess+"/messages?limit=200", nil)["data"].([]any)
				if !slices.ContainsFunc(listed, func(v any) bool { return v.(map[string]any)["id"] == mid }) {
					t.Errorf("message %v not listed by GET /v1/sessions/{id}/messages", mid)
				}
				if !tc.task { // a session message is a session event, not the task's
					c.until("session.message_appended", func(m msg) bool {
						ev, _ := m.f["event"].(map[string]any)
						p, _ := ev["payload"].(map[string]any)
						return m.f["type"] == "event" && p["message_id"] == mid
					})
				}
				c.send(map[string]any{"type": "cancel_task", "id": "c-cancel", "task_id": task, "reason": "ws test"})
				r = c.reply("c-cancel")
				if r.f["type"] != "result" || num(r.f["status"]) != 200 || r.f["result"].(map[string]any)["status"] != "CANCELED" {
					t.Fatalf("cancel_task answer %s, want result 200 CANCELED", r.raw)
				}
				if got := e.status(task); got != "CANCELED" {
					t.Errorf("task status over REST = %s, want CANCELED", got)
				}
				c.until("task.canceled", func(m msg) bool {
					ev, _ := m.f["event"].(map[string]any)
					return ev["event"] == "task.canceled"
				})
				// Every event frame so far is the REST copy, in REST's order.
				c.c.Close(websocket.StatusNormalClosure, "")
			})
		})
	}
}

// TestEventFramesAreTheRESTEvents: every event the REST list holds arrives
// once, in order, byte-equivalent to the REST copy, event_id = event.id.
func TestEventFramesAreTheRESTEvents(t *testing.T) { synctest.Test(t, testEventFramesAreTheRESTEvents) }

func testEventFramesAreTheRESTEvents(t *testing.T) {
	e := newEnv(t, Options{}, nil)
	sess := e.session()
	task := e.submit(sess, step("emit", "count", 3))
	e.waitStatus(task, "COMPLETED")
	for _, path := range []string{"/v1/sessions/" + sess, "/v1/tasks/" + task} {
		stream := path + "/events/stream"
		if path != "/v1/sessions/"+sess {
			stream = path + "/stream"
		}
		rest := e.events(path + "/events")
		c := e.mustDial(stream, headers(testKey))
		c.typed("ready")
		for i, want := range rest {
			m := c.typed("event")
			if m.f["event_id"] != want["id"] || m.f["replayed"] != true {
				t.Fatalf("%s frame %d: event_id %v replayed %v, want %v replayed true", stream, i, m.f["event_id"], m.f["replayed"], want["id"])
			}
			wb, _ := json.Marshal(want)
			gb, _ := json.Marshal(m.f["event"])
			if string(wb) != string(gb) {
				t.Errorf("%s frame %d differs from the REST copy:\n got %s\nwant %s", stream, i, gb, wb)
			}
		}
	}
}
