package wsadapter

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/coder/websocket"
)

// eventFrames reads n event frames in order (other frames held aside by
// the caller's untils are not events), returning their ids and markers.
func (c *client) eventFrames(n int) (ids []string, replayed []bool) {
	c.t.Helper()
	for len(ids) < n {
		m := c.typed("event")
		ids = append(ids, m.f["event_id"].(string))
		replayed = append(replayed, m.f["replayed"].(bool))
	}
	return ids, replayed
}

func restIDs(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["id"].(string))
	}
	return out
}

// TestResumeOnConnect: a cursor given on connect (Last-Event-ID, or the
// auth frame's last_event_id) starts delivery after it: every later event
// once, in order, from history replayed:true, then live replayed:false.
func TestResumeOnConnect(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		task := e.submit(sess, step("emit", "count", 4))
		e.waitStatus(task, "COMPLETED")
		rest := restIDs(e.events("/v1/sessions/" + sess + "/events"))
		cur := rest[2]
		for _, way := range []string{"header", "auth frame"} {
			var c *client
			if way == "header" {
				h := headers(testKey)
				h.Set("Last-Event-ID", cur)
				c = e.mustDial("/v1/sessions/"+sess+"/events/stream", h)
			} else {
				c = e.mustDial("/v1/sessions/"+sess+"/events/stream", nil)
				f := authFrame("a", testKey)
				f["last_event_id"] = cur
				c.send(f)
			}
			if r := c.typed("ready"); r.f["last_event_id"] != cur {
				t.Errorf("%s: ready.last_event_id = %v, want %s", way, r.f["last_event_id"], cur)
			}
			ids, rep := c.eventFrames(len(rest) - 3)
			if !slices.Equal(ids, rest[3:]) {
				t.Errorf("%s: events after %s: %v, want %v", way, cur, ids, rest[3:])
			}
			for i, r := range rep {
				if !r {
					t.Errorf("%s: history frame %s replayed false", way, ids[i])
				}
			}
			// Live now.
			m := wantResult(t, c.command(map[string]any{"type": "user_message", "id": "u", "session_id": sess, "message": textMessage(way)}), 201)
			ev := c.until("the message's event", func(x msg) bool {
				ev, _ := x.f["event"].(map[string]any)
				p, _ := ev["payload"].(map[string]any)
				return p["message_id"] == m["id"]
			})
			if ev.f["replayed"] != false {
				t.Errorf("%s: live frame %s", way, ev.raw)
			}
		}
	})
}

// TestResumeFrame: a resume frame restarts delivery after its cursor: its
// result, then the history after the cursor and the pending requests
// (including one opened before the cursor) replayed:true, then live
// frames replayed:false; null starts from the beginning.
func TestResumeFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		task := e.submit(sess, step("emit", "count", 2), step("input_required", "prompt", "more?"), step("emit", "count", 1), step("work", "ms", 600000))
		e.waitStatus(task, "INPUT_REQUIRED")
		rest := restIDs(e.events("/v1/tasks/" + task + "/events"))
		c := e.mustDial("/v1/tasks/"+task+"/stream", headers(testKey))
		c.typed("ready")
		ids, _ := c.eventFrames(len(rest))
		first := c.typed("input_request")
		if !slices.Equal(ids, rest) || first.f["replayed"] != true {
			t.Fatalf("first run: %v then %s, want %v then the pending input_request replayed", ids, first.raw, rest)
		}
		// Resume after the last event: the input request, opened at the
		// cursor, is re-sent, replayed.
		last := rest[len(rest)-1]
		c.send(map[string]any{"type": "resume", "id": "r1", "last_event_id": last})
		c.held = nil // frames before the resume's result belong to the first run
		res := c.fresh()
		if res.f["type"] != "result" || res.f["in_reply_to"] != "r1" || res.f["result"].(map[string]any)["object"] != "ws.resume" ||
			res.f["result"].(map[string]any)["last_event_id"] != last {
			t.Fatalf("resume answer %s", res.raw)
		}
		again := c.fresh()
		if again.f["type"] != "input_request" || again.f["replayed"] != true || again.f["request_id"] != first.f["request_id"] {
			t.Fatalf("after the resume result: %s, want the pending input_request replayed", again.raw)
		}
		// Resume from the start: every event again, then the request.
		c.send(map[string]any{"type": "resume", "id": "r2", "last_event_id": nil})
		if res := c.reply("r2"); res.f["result"].(map[string]any)["last_event_id"] != nil {
			t.Errorf("resume null answer %s", res.raw)
		}
		c.held = nil // the previous run's
		ids, reps := c.eventFrames(len(rest))
		if !slices.Equal(ids, rest) {
			t.Errorf("resume from the start: %v, want %v", ids, rest)
		}
		for i, r := range reps {
			if !r {
				t.Errorf("history frame %s replayed false", ids[i])
			}
		}
		c.typed("input_request")
		// The answer is live, and so are its effects.
		wantResult(t, c.command(map[string]any{"type": "input_response", "id": "i", "request_id": first.f["request_id"], "task_id": task, "message": textMessage("yes")}), 201)
		m := c.typed("event")
		if m.f["replayed"] != false {
			t.Errorf("live frame after the answer: %s", m.raw)
		}
		// A resume to a cursor in the middle: what follows it, once.
		c.send(map[string]any{"type": "resume", "id": "r3", "last_event_id": rest[1]})
		c.reply("r3")
		c.held = nil
		now := restIDs(e.events("/v1/tasks/" + task + "/events"))
		got, _ := c.eventFrames(len(now) - 2)
		if !slices.Equal(got, now[2:]) {
			t.Errorf("resume after %s: %v, want %v", rest[1], got, now[2:])
		}
	})
}

// TestCursorExpired: an unknown cursor is never skipped: one error frame,
// 410 cursor_expired, no event frame, close 4410; on connect with no
// ready, in reply to the auth frame (way b) or the resume frame.
func TestCursorExpired(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		path := "/v1/sessions/" + sess + "/events/stream"
		for _, cur := range []string{"event_999999999999", "not-an-event-id"} {
			h := headers(testKey)
			h.Set("Last-Event-ID", cur)
			c := e.mustDial(path, h)
			ef := c.wantClose(http.StatusGone, "cursor_expired", 4410)
			if ef["in_reply_to"] != nil || ef["error"].(map[string]any)["param"] != "Last-Event-ID" {
				t.Errorf("header cursor %s: %v", cur, ef)
			}
			c = e.mustDial(path, nil)
			f := authFrame("a", testKey)
			f["last_event_id"] = cur
			c.send(f)
			if ef := c.wantClose(http.StatusGone, "cursor_expired", 4410); ef["in_reply_to"] != "a" || ef["error"].(map[string]any)["param"] != "/last_event_id" {
				t.Errorf("auth frame cursor %s: %v", cur, ef)
			}
		}
		c := e.mustDial(path, headers(testKey))
		c.typed("ready")
		c.send(map[string]any{"type": "resume", "id": "r", "last_event_id": "event_999999999999"})
		code, _, seen := c.closed()
		var ef map[string]any
		for _, m := range seen {
			if m.f["type"] == "error" {
				ef = m.f
			}
		}
		if code != 4410 || ef == nil || ef["in_reply_to"] != "r" || errCode(ef) != "cursor_expired" {
			t.Errorf("resume with an unknown cursor: close %d, error %v", code, ef)
		}
		_ = websocket.StatusNormalClosure
	})
}
