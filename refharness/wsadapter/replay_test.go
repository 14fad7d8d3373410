package wsadapter

import (
	"testing"
	"testing/synctest"
)

// TestReplayedEventsOverWebSocket: events a replay produces reach a
// WebSocket client live with their own replayed: true and replay metadata
// (the REST copy), while the frame's replayed marker says live delivery
// (docs/websocket.md 6.2; RPLY-MARK-001 on every transport).
func TestReplayedEventsOverWebSocket(t *testing.T) { synctest.Test(t, testReplayedEventsOverWebSocket) }

func testReplayedEventsOverWebSocket(t *testing.T) {
	e := newEnv(t, Options{}, nil)
	sess := e.session()
	src := e.submit(sess, step("clock_read", "label", "t0", "value_ms", 7), step("model_call", "call_id", "c1",
		"response", map[string]any{"choices": []any{map[string]any{"message": map[string]any{"content": "hi"}}}}))
	e.waitStatus(src, "COMPLETED")
	c := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
	c.typed("ready")
	// Drain the history: the source's run.
	for {
		m, _ := c.next()
		if m.f["type"] == "event" && m.f["replayed"] == false {
			t.Fatalf("a history frame is marked live: %v", m.f)
		}
		ev, _ := m.f["event"].(map[string]any)
		if ev["event"] == "task.completed" && ev["task_id"] == src {
			break
		}
	}
	rep := e.ok("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "with_overrides",
		"override": map[string]any{"time:t0": map[string]any{"kind": "time", "value": 8}}})
	id := rep["id"].(string)
	seen := 0
	for {
		m := c.typed("event")
		ev, _ := m.f["event"].(map[string]any)
		if ev["task_id"] != id {
			continue
		}
		if m.f["replayed"] != false {
			t.Errorf("live frame of %s marked replayed %v", ev["event"], m.f["replayed"])
		}
		if meta, ok := ev["replay"].(map[string]any); ok {
			seen++
			if ev["replayed"] != true || meta["source_task_id"] != src || meta["replay_task_id"] != id || meta["original_event_id"] == nil {
				t.Errorf("replayed event over WebSocket: %v", ev)
			}
			if p, _ := ev["payload"].(map[string]any); ev["event"] == "span.completed" && (meta["override_key"] != "time:t0" || p["value_ms"] != float64(8)) {
				t.Errorf("the overridden clock reading over WebSocket: %v", ev)
			}
		} else if ev["replayed"] != false {
			t.Errorf("live event %s has replayed %v", ev["event"], ev["replayed"])
		}
		if ev["event"] == "task.completed" {
			break
		}
	}
	if seen != 2 {
		t.Errorf("%d replayed events over WebSocket, want 2", seen)
	}
	c.close()
}
