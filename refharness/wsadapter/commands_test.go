package wsadapter

import (
	"net/http"
	"slices"
	"testing"
	"testing/synctest"

	"github.com/harn-conform/conform/refharness"
)

// kinds lists the event kinds of events (REST copies).
func kinds(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e["event"].(string))
	}
	return out
}

// eventOf reads frames until an event frame of kind; it returns the event.
func (c *client) eventOf(kind string) map[string]any {
	c.t.Helper()
	m := c.until("a "+kind+" event frame", func(m msg) bool {
		ev, _ := m.f["event"].(map[string]any)
		return m.f["type"] == "event" && ev["event"] == kind
	})
	return m.f["event"].(map[string]any)
}

// opened reads until an event frame of kind and returns its event and the
// frame that came right after it (pings aside).
func (c *client) opened(kind string) (map[string]any, msg) {
	c.t.Helper()
	is := func(m msg) bool {
		ev, _ := m.f["event"].(map[string]any)
		return m.f["type"] == "event" && ev["event"] == kind
	}
	for i, m := range c.held {
		if is(m) {
			c.held = append(c.held[:i:i], c.held[i+1:]...)
			if i < len(c.held) {
				after := c.held[i]
				c.held = append(c.held[:i:i], c.held[i+1:]...)
				return m.f["event"].(map[string]any), after
			}
			return m.f["event"].(map[string]any), c.fresh()
		}
	}
	m := c.until("a "+kind+" event frame", is)
	return m.f["event"].(map[string]any), c.fresh()
}

// fresh receives the next frame off the connection that is no ping.
func (c *client) fresh() msg {
	c.t.Helper()
	for {
		m, ok := c.receive()
		if !ok {
			c.t.Fatalf("the connection ended: %v", c.endErr())
		}
		if m.f["type"] != "ping" {
			return m
		}
	}
}

// command sends frame (with id) and returns its answer.
func (c *client) command(frame map[string]any) msg {
	c.t.Helper()
	c.send(frame)
	return c.reply(frame["id"].(string))
}

func wantResult(t *testing.T, m msg, status int) map[string]any {
	t.Helper()
	if m.f["type"] != "result" || num(m.f["status"]) != status {
		t.Fatalf("answer %s, want result %d", m.raw, status)
	}
	return m.f["result"].(map[string]any)
}

func wantError(t *testing.T, m msg, status int, code string) {
	t.Helper()
	if m.f["type"] != "error" || num(m.f["status"]) != status || errCode(m.f) != code {
		t.Errorf("answer %s, want error %d %s", m.raw, status, code)
	}
}

// TestTruncateSession: truncate_session keeps the first N turns and emits
// session.truncated, as the REST truncate; its result is REST's body.
func TestTruncateSession(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		for _, text := range []string{"one", "two", "three"} {
			e.ok("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": textMessage(text)})
		}
		c := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		c.typed("ready")
		res := wantResult(t, c.command(map[string]any{"type": "truncate_session", "id": "t", "session_id": sess, "keep_first": 1, "reason": "walk back"}), 200)
		if res["object"] != "session.truncate_result" || num(res["kept_turn_count"]) != 1 || num(res["removed_turn_count"]) != 2 {
			t.Errorf("result %v", res)
		}
		msgs := e.ok("GET", "/v1/sessions/"+sess+"/messages", nil)["data"].([]any)
		if len(msgs) != 1 {
			t.Errorf("%d messages listed after keep_first 1, want 1", len(msgs))
		}
		ev := c.eventOf("session.truncated")
		if p := ev["payload"].(map[string]any); num(p["kept_turn_count"]) != 1 || p["reason"] != "walk back" {
			t.Errorf("session.truncated payload %v", p)
		}
		wantError(t, c.command(map[string]any{"type": "truncate_session", "id": "bad", "session_id": sess, "keep_first": "two"}), 400, "invalid_request")
	})
}

// TestCommandsNameTheConnectionsResources: ids that are not the
// connection's resource nor belong to it get 404, even when they exist.
func TestCommandsNameTheConnectionsResources(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess, other := e.session(), e.session()
		task := e.submit(sess, step("work", "ms", 600000))
		otherTask := e.submit(other, step("work", "ms", 600000))
		sibling := e.submit(sess, step("work", "ms", 600000))
		c := e.mustDial("/v1/tasks/"+task+"/stream", headers(testKey))
		c.typed("ready")
		for i, f := range []map[string]any{
			{"type": "cancel_task", "task_id": otherTask},
			{"type": "cancel_task", "task_id": sibling}, // the session's, not this task stream's
			{"type": "user_message", "session_id": other, "message": textMessage("x")},
			{"type": "truncate_session", "session_id": other, "keep_first": 0},
			{"type": "input_response", "task_id": otherTask, "request_id": "inreq_x", "message": textMessage("x")},
		} {
			f["id"] = "o" + string(rune('0'+i))
			wantError(t, c.command(f), 404, "resource_not_found")
		}
		for _, id := range []string{otherTask, sibling} {
			if got := e.status(id); got != "WORKING" {
				t.Errorf("task %s is %s after a refused cancel, want WORKING", id, got)
			}
		}
		// On the session stream, the session's tasks are its own; the
		// task stream takes its session's messages.
		s := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		s.typed("ready")
		wantResult(t, s.command(map[string]any{"type": "cancel_task", "id": "s1", "task_id": sibling}), 200)
		wantResult(t, c.command(map[string]any{"type": "user_message", "id": "u", "session_id": sess, "message": textMessage("x")}), 201)
		// A cancel of a terminal task is answered as REST answers it.
		wantError(t, s.command(map[string]any{"type": "cancel_task", "id": "s2", "task_id": sibling}), 400, "invalid_state_transition")
	})
}

// TestInputAndAuthorizationRequests: a task waiting for input gets an
// input_request right after its task.input_required event frame, an
// input_response lets it continue; then an authorization_request (a
// PermissionRequest) answered by authorization_response; then a tool
// approval as approval_request answered by approval_response; answers to
// requests no longer pending get 409, to unknown ones 404.
func TestInputAndAuthorizationRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		// The session's stream, opened first: every wait is live.
		c := e.mustDial("/v1/sessions/"+sess+"/events/stream", nil)
		c.send(authFrame("a", testKey))
		c.typed("ready")
		task := e.submit(sess, step("input_required", "prompt", "which db?"), step("auth_required", "reason", "deploy"),
			step("tool_approval", "tool", "conform.write", "input", map[string]any{"path": "a.txt"}), step("work", "ms", 600000))

		// Input.
		opened, r := c.opened("task.input_required")
		if r.f["type"] != "input_request" || r.f["event_id"] != opened["id"] || r.f["task_id"] != task || r.f["session_id"] != sess ||
			r.f["prompt"] != "which db?" || r.f["replayed"] != false {
			t.Fatalf("after task.input_required: %s, want its input_request", r.raw)
		}
		reqID := r.f["request_id"].(string)
		wantError(t, c.command(map[string]any{"type": "input_response", "id": "i0", "request_id": "inreq_nope", "task_id": task, "message": textMessage("x")}), 404, "resource_not_found")
		wantError(t, c.command(map[string]any{"type": "authorization_response", "id": "i1", "request_id": reqID, "task_id": task, "approved": true}), 404, "resource_not_found")
		wantError(t, c.command(map[string]any{"type": "tool_result", "id": "i4", "request_id": "toolreq_x", "task_id": task, "tool_call_id": "t", "status": "succeeded", "output": 1}), 404, "resource_not_found")
		res := wantResult(t, c.command(map[string]any{"type": "input_response", "id": "i2", "request_id": reqID, "task_id": task, "message": textMessage("staging")}), 201)
		if res["object"] != "message" {
			t.Errorf("input_response result %v, want the Message", res)
		}
		c.eventOf("user.input_submitted")
		wantError(t, c.command(map[string]any{"type": "input_response", "id": "i3", "request_id": reqID, "task_id": task, "message": textMessage("again")}), 409, "conflict")

		// Authorization, a PermissionRequest: answerable over REST too.
		opened, r = c.opened("task.auth_required")
		if r.f["type"] != "authorization_request" || r.f["event_id"] != opened["id"] || r.f["reason"] != "deploy" || r.f["kind"] != "permission" {
			t.Fatalf("after task.auth_required: %s, want its authorization_request", r.raw)
		}
		perm := r.f["request_id"].(string)
		if pr := e.ok("GET", "/v1/tasks/"+task+"/permission-requests", nil)["data"].([]any); len(pr) != 1 || pr[0].(map[string]any)["id"] != perm {
			t.Errorf("request_id %s is not the task's PermissionRequest %v", perm, pr)
		}
		res = wantResult(t, c.command(map[string]any{"type": "authorization_response", "id": "a1", "request_id": perm, "task_id": task, "approved": true, "reason": "ok"}), 200)
		if res["object"] != "permission_request" || res["status"] != "approved" {
			t.Errorf("authorization_response result %v, want the approved PermissionRequest", res)
		}
		wantError(t, c.command(map[string]any{"type": "authorization_response", "id": "a2", "request_id": perm, "task_id": task, "approved": false}), 409, "conflict")

		// A tool approval: approval_request with the tool call; approved, the tool runs.
		opened, r = c.opened("task.auth_required")
		if r.f["type"] != "approval_request" || r.f["event_id"] != opened["id"] || r.f["name"] != "conform.write" ||
			r.f["input"].(map[string]any)["path"] != "a.txt" || r.f["tool_call_id"] == "" {
			t.Fatalf("after the tool approval's task.auth_required: %s, want its approval_request", r.raw)
		}
		wantResult(t, c.command(map[string]any{"type": "approval_response", "id": "p1", "request_id": r.f["request_id"], "task_id": task,
			"tool_call_id": r.f["tool_call_id"], "approved": true}), 200)
		done := c.eventOf("tool.completed")
		if done["payload"].(map[string]any)["tool_call_id"] != r.f["tool_call_id"] {
			t.Errorf("tool.completed for another call: %v", done)
		}
		ks := kinds(e.events("/v1/tasks/" + task + "/events"))
		for _, k := range []string{"user.input_submitted", "user.tool_confirmation", "tool.approved", "tool.completed"} {
			if !slices.Contains(ks, k) {
				t.Errorf("REST events lack %s: %v", k, ks)
			}
		}
		if got := e.status(task); got != "WORKING" {
			t.Errorf("task %s after the answers, want WORKING", got)
		}
	})
}

// TestApprovalDenied: approval_response approved false denies the call.
func TestApprovalDenied(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		task := e.submit(sess, step("tool_approval", "tool", "conform.write"), step("work", "ms", 600000))
		c := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		r := c.typed("approval_request")
		wantResult(t, c.command(map[string]any{"type": "approval_response", "id": "d", "request_id": r.f["request_id"], "task_id": task, "approved": false, "reason": "not on main"}), 200)
		c.eventOf("tool.denied")
		if slices.Contains(kinds(e.events("/v1/tasks/"+task+"/events")), "tool.completed") {
			t.Errorf("a denied tool call ran")
		}
	})
}

// TestAuthorizationWithoutPermissionRequests: when a wait opens no
// PermissionRequest (FaultPermissionNotListed, a REST fault), the
// authorization_request names the wait itself and its answer becomes a
// tool_confirmation message of the task.
func TestAuthorizationWithoutPermissionRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil, refharness.FaultPermissionNotListed)
		sess := e.session()
		task := e.submit(sess, step("auth_required", "reason", "deploy"), step("work", "ms", 600000))
		c := e.mustDial("/v1/tasks/"+task+"/stream", headers(testKey))
		r := c.typed("authorization_request")
		if r.f["kind"] != "approval" {
			t.Errorf("request %s", r.raw)
		}
		res := wantResult(t, c.command(map[string]any{"type": "authorization_response", "id": "a", "request_id": r.f["request_id"], "task_id": task, "approved": true}), 201)
		if res["object"] != "message" {
			t.Errorf("result %v, want the tool_confirmation Message", res)
		}
		c.eventOf("user.tool_confirmation")
		e.waitStatus(task, "WORKING")
		wantError(t, c.command(map[string]any{"type": "authorization_response", "id": "b", "request_id": r.f["request_id"], "task_id": task, "approved": true}), 409, "conflict")
	})
}

// TestIdempotentCommands: a command repeated with its key and body acts
// once and answers the first answer; another body gets 409
// idempotency_key_reused; keys are shared with REST, both ways.
func TestIdempotentCommands(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, Options{}, nil)
		sess := e.session()
		c := e.mustDial("/v1/sessions/"+sess+"/events/stream", headers(testKey))
		c.typed("ready")
		msg := map[string]any{"type": "user_message", "id": "m1", "idempotency_key": "key-1", "session_id": sess, "message": textMessage("once")}
		first := wantResult(t, c.command(msg), 201)
		msg["id"] = "m2"
		again := wantResult(t, c.command(msg), 201)
		if again["id"] != first["id"] {
			t.Errorf("retry made message %v, want the first, %v", again["id"], first["id"])
		}
		// On another connection too, and over REST with the same key and body.
		d := e.mustDial("/v1/sessions/"+sess+"/events/stream", nil)
		d.send(authFrame("a", testKey))
		d.typed("ready")
		msg["id"] = "m3"
		if r := wantResult(t, d.command(msg), 201); r["id"] != first["id"] {
			t.Errorf("retry on another connection made %v", r["id"])
		}
		if r := e.ok("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": textMessage("once")}, "Idempotency-Key", "key-1"); r["id"] != first["id"] {
			t.Errorf("REST retry of the WS command made %v, want %v", r["id"], first["id"])
		}
		// A REST write retried as a command.
		rest := e.ok("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": textMessage("rest first")}, "Idempotency-Key", "key-2")
		if r := wantResult(t, c.command(map[string]any{"type": "user_message", "id": "m4", "idempotency_key": "key-2", "session_id": sess, "message": textMessage("rest first")}), 201); r["id"] != rest["id"] {
			t.Errorf("the command retrying a REST write made %v, want %v", r["id"], rest["id"])
		}
		// Member order does not matter; a different body is a conflict.
		c.sendRaw(1, []byte(`{"message":{"parts":[{"visibility":"public","text":"once","type":"text"}],"role":"user"},"session_id":"`+sess+`","idempotency_key":"key-1","id":"m5","type":"user_message"}`))
		if r := wantResult(t, c.reply("m5"), 201); r["id"] != first["id"] {
			t.Errorf("reordered retry made %v", r["id"])
		}
		wantError(t, c.command(map[string]any{"type": "user_message", "id": "m6", "idempotency_key": "key-1", "session_id": sess, "message": textMessage("other")}), 409, "idempotency_key_reused")
		// One message per key, one event each.
		texts := 0
		for _, v := range e.ok("GET", "/v1/sessions/"+sess+"/messages", nil)["data"].([]any) {
			if v.(map[string]any)["id"] == first["id"] {
				texts++
			}
		}
		if n := len(e.ok("GET", "/v1/sessions/"+sess+"/messages", nil)["data"].([]any)); n != 2 || texts != 1 {
			t.Errorf("%d messages (%d of the first key), want 2 (1)", n, texts)
		}
		// A cancel retried acts once: the retry answers 200 again, not 400.
		task := e.submit(sess, step("work", "ms", 600000))
		cancel := map[string]any{"type": "cancel_task", "id": "c1", "idempotency_key": "cancel-1", "task_id": task, "reason": "stop"}
		wantResult(t, c.command(cancel), 200)
		cancel["id"] = "c2"
		if r := wantResult(t, c.command(cancel), 200); r["status"] != "CANCELED" {
			t.Errorf("cancel retry result %v", r)
		}
		n := 0
		for _, k := range kinds(e.events("/v1/tasks/" + task + "/events")) {
			if k == "task.canceled" {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d task.canceled events, want 1", n)
		}
		if code, _ := e.rest("POST", "/v1/tasks/"+task+"/cancel", map[string]any{"reason": "stop"}, "Idempotency-Key", "cancel-1"); code != http.StatusOK {
			t.Errorf("REST retry of the WS cancel: %d, want 200 (the first answer)", code)
		}
	})
}
