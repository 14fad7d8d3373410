package refharness

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestPublicEndpointsNeedNoHeaderOrKey(t *testing.T) {
	h := newHarness(t, Options{})
	for _, path := range []string{"/v1", "/v1/agent-card"} {
		r := h.do("GET", path, nil, "-"+VersionHeader, "", "-Authorization", "")
		h.must(200, r, "GET "+path+" without header and key")
	}
	d := h.do("GET", "/v1", nil)
	if d.str("object") != "protocol_discovery" || d.str("protocol_family") != "harn_agents_protocol" || d.str("current_version") != ProtocolVersion {
		t.Errorf("discovery = %s", d.Raw)
	}
	caps := d.Body["capabilities"].(map[string]any)
	want := map[string]any{"rest": true, "sse": true, "websocket": false, "receipts": true, "replay": true, "conform.scenarios": "v1",
		VerifySubmittedCapability: true}
	for k, v := range want {
		if caps[k] != v {
			t.Errorf("capabilities[%s] = %v, want %v", k, caps[k], v)
		}
	}
	c := h.do("GET", "/v1/agent-card", nil)
	for _, f := range []string{"id", "name", "description", "protocol_version"} {
		if c.str(f) == "" {
			t.Errorf("agent card lacks %s: %s", f, c.Raw)
		}
	}
	if c.str("object") != "harn_agent_card" {
		t.Errorf("agent card object = %q, want harn_agent_card", c.str("object"))
	}
	if _, ok := c.Body["a2a_card"].(map[string]any); !ok {
		t.Errorf("agent card lacks a2a_card")
	}
	if sk, _ := c.Body["skills"].([]any); len(sk) != 1 {
		t.Errorf("agent card skills = %v, want the conform.scenarios skill", c.Body["skills"])
	}
}

func TestVersionHeader(t *testing.T) {
	h := newHarness(t, Options{})
	for _, tc := range []struct{ name, hdr string }{{"missing", ""}, {"unsupported", "agents-protocol-1999-01-01"}} {
		t.Run(tc.name, func(t *testing.T) {
			r := h.do("GET", "/v1/tasks", nil, VersionHeader, tc.hdr)
			if tc.hdr == "" {
				r = h.do("GET", "/v1/tasks", nil, "-"+VersionHeader, "")
			}
			wantError(t, r, 426, "unsupported_protocol_version", "")
			det := r.Body["error"].(map[string]any)["details"].(map[string]any)
			if v := det["supported_versions"].([]any); len(v) != 1 || v[0] != ProtocolVersion {
				t.Errorf("supported_versions = %v, want [%s]", v, ProtocolVersion)
			}
		})
	}
}

func TestAuthentication(t *testing.T) {
	h := newHarness(t, Options{})
	wantError(t, h.do("GET", "/v1/tasks", nil, "-Authorization", ""), 401, "unauthenticated", "")
	r := h.do("GET", "/v1/tasks", nil, "Authorization", "Bearer secret-canary-value")
	wantError(t, r, 401, "unauthenticated", "")
	if strings.Contains(string(r.Raw), "secret-canary-value") {
		t.Errorf("401 body echoes the key: %s", r.Raw)
	}
	wantError(t, h.do("GET", "/v1/tasks", nil, "Authorization", "Basic abc"), 401, "unauthenticated", "")
	h.must(200, h.do("GET", "/v1/tasks", nil), "list with a good key")

	none := newHarness(t, Options{APIKeys: map[string]string{}})
	wantError(t, none.do("GET", "/v1/tasks", nil, "Authorization", "Bearer "), 401, "unauthenticated", "")
}

func TestRoutingErrors(t *testing.T) {
	h := newHarness(t, Options{})
	// A route nobody defined: 404, with a code of its own (local.go).
	wantError(t, h.do("GET", "/v1/nothing-here", nil), 404, CodeRouteNotFound, "")
	wantError(t, h.do("GET", "/elsewhere", nil), 404, CodeRouteNotFound, "")
	r := h.do("DELETE", "/v1/tasks", nil)
	wantError(t, r, 405, "method_not_allowed", "")
	if got := r.Header.Get("Allow"); got != "GET, POST" {
		t.Errorf("Allow = %q, want \"GET, POST\"", got)
	}
	for _, p := range []string{"/v1/tasks/task_nope", "/v1/sessions/s_nope", "/v1/workspaces/w", "/v1/events/event_000000009999",
		"/v1/events/garbage", "/v1/artifacts/a", "/v1/outcomes/o", "/v1/messages/m", "/v1/personas/p", "/v1/skills/s",
		"/v1/connectors/c", "/v1/quotas/q", "/v1/memories/m", "/v1/tasks/task_nope/events", "/v1/sessions/s_nope/events/stream"} {
		wantError(t, h.do("GET", p, nil), 404, "resource_not_found", "")
	}
}

func TestEmptyCoreListsAreReal(t *testing.T) {
	h := newHarness(t, Options{})
	for _, p := range []string{"connectors", "quotas", "memories", "outcomes", "artifacts", "tasks", "sessions", "workspaces", "events"} {
		r := h.must(200, h.do("GET", "/v1/"+p, nil), p)
		if r.str("object") != "list" || r.Body["page"] == nil || r.Body["data"] == nil {
			t.Errorf("%s: %s is not a list", p, r.Raw)
		}
	}
	if n := len(h.must(200, h.do("GET", "/v1/personas", nil), "personas").list()); n != 1 {
		t.Errorf("personas: %d, want the built-in persona", n)
	}
	h.must(200, h.do("GET", "/v1/skills/skill_conform_scenarios", nil), "scenario skill")
}

func TestRequestValidation(t *testing.T) {
	h := newHarness(t, Options{MaxBodyBytes: 2048})
	sess := h.session()
	cases := []struct {
		name, path string
		body       any
		status     int
		code       string
		param      string
	}{
		{"malformed JSON", "/v1/workspaces", `{"name":`, 400, "invalid_request", ""},
		{"trailing data", "/v1/workspaces", `{"name":"a","root":"b"} x`, 400, "invalid_request", ""},
		{"not an object", "/v1/workspaces", `[1,2]`, 400, "invalid_request", ""},
		{"empty body", "/v1/workspaces", ``, 400, "invalid_request", ""},
		{"missing field", "/v1/workspaces", map[string]any{"root": "/"}, 400, "invalid_request", "name"},
		{"wrong type", "/v1/workspaces", map[string]any{"name": 3, "root": "/"}, 400, "invalid_request", "name"},
		{"metadata not object", "/v1/workspaces", map[string]any{"name": "a", "root": "/", "metadata": []any{}}, 400, "invalid_request", "metadata"},
		{"missing input", "/v1/sessions/" + sess + "/tasks", map[string]any{}, 400, "invalid_request", "input"},
		{"bad role", "/v1/sessions/" + sess + "/tasks", map[string]any{"input": map[string]any{"role": "robot", "parts": []any{}}}, 400, "invalid_request", "input.role"},
		{"bad part", "/v1/sessions/" + sess + "/messages", map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "visibility": "secret", "text": "x"}}}}, 400, "invalid_request", "message.parts[0].visibility"},
		{"unknown part type", "/v1/sessions/" + sess + "/messages", map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "video", "visibility": "public"}}}}, 400, "invalid_request", "message.parts[0].type"},
		{"top-level submit needs session", "/v1/tasks", map[string]any{"input": map[string]any{}}, 400, "invalid_request", "session_id"},
		{"unknown session", "/v1/tasks", map[string]any{"session_id": "session_x", "input": map[string]any{}}, 404, "resource_not_found", "session_id"},
		{"bad scenario op", "/v1/sessions/" + sess + "/tasks", map[string]any{"input": map[string]any{}, "metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{map[string]any{"op": "dance"}}}}}, 400, "invalid_request", "metadata.conform.scenario.steps[0].op"},
		{"artifact kind", "/v1/artifacts", map[string]any{"kind": "movie", "mime_type": "a/b", "visibility": "public"}, 400, "invalid_request", "kind"},
		{"artifact sha", "/v1/artifacts", map[string]any{"kind": "log", "mime_type": "a/b", "visibility": "public", "sha256": "xyz"}, 400, "invalid_request", "sha256"},
		{"too large", "/v1/workspaces", map[string]any{"name": strings.Repeat("x", 4096), "root": "/"}, 413, "payload_too_large", ""},
		{"truncate negative", "/v1/sessions/" + sess + "/truncate", map[string]any{"keep_first": -1}, 400, "invalid_request", "keep_first"},
		// The body is judged against the OpenAPI document before the
		// resource it is sent to is looked up (hostile.go).
		{"task message kind", "/v1/tasks/task_x/messages", map[string]any{"kind": "shout"}, 400, "invalid_request", "kind"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantError(t, h.do("POST", tc.path, tc.body), tc.status, tc.code, tc.param)
		})
	}
	t.Run("limit out of range", func(t *testing.T) {
		wantError(t, h.do("GET", "/v1/tasks?limit=0", nil), 400, "invalid_request", "limit")
		wantError(t, h.do("GET", "/v1/tasks?limit=201", nil), 400, "invalid_request", "limit")
		wantError(t, h.do("GET", "/v1/tasks?cursor=bogus", nil), 400, "invalid_request", "cursor")
	})
}

func TestEchoTaskLifecycle(t *testing.T) {
	h := newHarness(t, Options{IDs: &SeqIDs{}})
	sess := h.session()
	r := h.submit(sess, nil)
	id := r.str("id")
	if r.str("object") != "task" || r.str("status") != StatusSubmitted || r.str("session_id") != sess || r.str("created_by") != "actor_default" {
		t.Fatalf("submit response = %s", r.Raw)
	}
	task := h.waitStatus(id, StatusCompleted)
	if task.OutcomeID == nil || task.CompletedAt == nil || task.StartedAt == nil {
		t.Fatalf("completed task lacks outcome/timestamps: %+v", task)
	}
	o := h.must(200, h.do("GET", "/v1/outcomes/"+*task.OutcomeID, nil), "outcome")
	if o.str("status") != "SUCCEEDED" || o.str("summary") != "echo: hello" || o.str("task_id") != id {
		t.Errorf("outcome = %s", o.Raw)
	}
	kinds, evs := h.taskEvents(id)
	want := []string{"task.submitted", "task.started", "agent.message", "task.completed"}
	if !slices.Equal(kinds, want) {
		t.Errorf("task events = %v, want %v", kinds, want)
	}
	for i, e := range evs { // every event here is about the task resource
		if int(e["sequence"].(float64)) != i {
			t.Errorf("event %d sequence = %v, want %d", i, e["sequence"], i)
		}
		if e["task_id"] != id || e["session_id"] != sess || e["workspace_id"] == nil {
			t.Errorf("event %d lacks ids: %v", i, e)
		}
		res := e["resource"].(map[string]any)
		if res["object"] != "task" || res["id"] != id {
			t.Errorf("event %d resource = %v", i, res)
		}
	}
	msgs := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages", nil), "messages").list()
	if len(msgs) != 1 || msgs[0]["role"] != "agent" {
		t.Errorf("session messages = %v, want one agent message", msgs)
	}
	// The top-level submit path works the same.
	r2 := h.must(202, h.do("POST", "/v1/tasks", map[string]any{"session_id": sess, "input": map[string]any{"text": "hi"}}), "POST /v1/tasks")
	h.waitStatus(r2.str("id"), StatusCompleted)
	l := h.must(200, h.do("GET", "/v1/tasks?session_id="+sess+"&status=COMPLETED", nil), "filtered list").list()
	if len(l) != 2 {
		t.Errorf("filtered task list has %d tasks, want 2", len(l))
	}
}

func TestScenarios(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()

	t.Run("fail", func(t *testing.T) {
		id := h.submit(sess, []map[string]any{step("fail", "code", "boom", "message", "it broke")}).str("id")
		task := h.waitStatus(id, StatusFailed)
		if task.Failure == nil || task.Failure.Code != "boom" || task.Failure.Message != "it broke" {
			t.Errorf("failure = %+v", task.Failure)
		}
		o := h.must(200, h.do("GET", "/v1/outcomes/"+*task.OutcomeID, nil), "outcome")
		if o.str("status") != "FAILED" {
			t.Errorf("outcome status = %s, want FAILED", o.str("status"))
		}
	})
	t.Run("complete with summary", func(t *testing.T) {
		id := h.submit(sess, []map[string]any{step("complete", "summary", "all good")}).str("id")
		task := h.waitStatus(id, StatusCompleted)
		o := h.must(200, h.do("GET", "/v1/outcomes/"+*task.OutcomeID, nil), "outcome")
		if o.str("summary") != "all good" {
			t.Errorf("summary = %q", o.str("summary"))
		}
	})
	t.Run("input_required", func(t *testing.T) {
		id := h.submit(sess, []map[string]any{step("input_required", "prompt", "name?"), step("complete")}).str("id")
		h.waitStatus(id, StatusInputRequired)
		msg := map[string]any{"kind": "input", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "Ada", "visibility": "public"}}}}
		m := h.must(201, h.do("POST", "/v1/tasks/"+id+"/messages", msg), "task input")
		if m.str("object") != "message" || m.str("task_id") != id {
			t.Errorf("task message = %s", m.Raw)
		}
		h.waitStatus(id, StatusCompleted)
		kinds, _ := h.taskEvents(id)
		want := []string{"task.submitted", "task.started", "task.input_required", "user.input_submitted", "task.status_changed", "task.completed"}
		if !slices.Equal(kinds, want) {
			t.Errorf("events = %v, want %v", kinds, want)
		}
		wantError(t, h.do("POST", "/v1/tasks/"+id+"/messages", msg), 409, "conflict", "")
	})
	t.Run("auth_required", func(t *testing.T) {
		id := h.submit(sess, []map[string]any{step("auth_required", "reason", "oauth")}).str("id")
		h.waitStatus(id, StatusAuthRequired)
		msg := map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "ok", "visibility": "public"}}}}
		h.must(201, h.do("POST", "/v1/tasks/"+id+"/messages", msg), "confirmation")
		h.waitStatus(id, StatusCompleted)
	})
	for _, decision := range []string{"approve", "deny"} {
		t.Run("tool_approval "+decision, func(t *testing.T) {
			id := h.submit(sess, []map[string]any{step("tool_approval", "tool", "shell", "input", map[string]any{"cmd": "ls"})}).str("id")
			h.waitStatus(id, StatusAuthRequired)
			msg := map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "json", "value": map[string]any{"decision": decision}, "visibility": "public"}}}}
			h.must(201, h.do("POST", "/v1/tasks/"+id+"/messages", msg), "decision")
			h.waitStatus(id, StatusCompleted)
			kinds, _ := h.taskEvents(id)
			wantKind := map[string]string{"approve": "tool.approved", "deny": "tool.denied"}[decision]
			if !slices.Contains(kinds, "tool.approval_required") || !slices.Contains(kinds, wantKind) {
				t.Errorf("events = %v, want tool.approval_required and %s", kinds, wantKind)
			}
		})
	}
	t.Run("emit and artifact", func(t *testing.T) {
		id := h.submit(sess, []map[string]any{step("emit", "count", 5), step("artifact", "kind", "log", "content", "hello bytes", "name", "x.log")}).str("id")
		task := h.waitStatus(id, StatusCompleted)
		kinds, _ := h.taskEvents(id)
		n := 0
		for _, k := range kinds {
			if k == "agent.message" {
				n++
			}
		}
		if n != 5 {
			t.Errorf("agent.message events = %d, want 5", n)
		}
		arts := h.must(200, h.do("GET", "/v1/artifacts?task_id="+id, nil), "artifacts").list()
		if len(arts) != 1 {
			t.Fatalf("artifacts = %v", arts)
		}
		aid := arts[0]["id"].(string)
		c := h.do("GET", "/v1/artifacts/"+aid+"/content", nil)
		if c.Code != 200 || string(c.Raw) != "hello bytes" || c.Header.Get("Content-Type") != "text/plain" {
			t.Errorf("content = %d %q %q", c.Code, c.Raw, c.Header.Get("Content-Type"))
		}
		if arts[0]["sha256"] != sha256hex([]byte("hello bytes")) {
			t.Errorf("sha256 = %v", arts[0]["sha256"])
		}
		o := h.must(200, h.do("GET", "/v1/outcomes/"+*task.OutcomeID, nil), "outcome")
		if a, _ := o.Body["artifacts"].([]any); len(a) != 1 {
			t.Errorf("outcome artifacts = %v", o.Body["artifacts"])
		}
	})
}

// TestCancel runs in a synctest bubble: the 60 s of work are the bubble's,
// so a worker that ignored the cancel would make a minute pass, whatever
// the machine's load.
func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		sess := h.session()
		id := h.submit(sess, []map[string]any{step("work", "ms", 60000), step("complete")}).str("id")
		h.waitStatus(id, StatusWorking)
		start := time.Now()
		r := h.must(200, h.do("POST", "/v1/tasks/"+id+"/cancel", map[string]any{"reason": "stop"}), "cancel")
		if r.str("status") != StatusCanceled || r.Body["canceled_at"] == nil || r.Body["completed_at"] != nil {
			t.Errorf("cancel response = %s", r.Raw)
		}
		// The worker must stop promptly: Close waits for it. In the bubble
		// no time passes unless the worker sleeps out its 60 s of work.
		h.s.mu.RLock()
		rn := h.s.runners[id]
		h.s.mu.RUnlock()
		if rn != nil {
			h.s.wg.Wait()
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("worker took %v to stop", d)
		}
		before := h.must(200, h.do("GET", "/v1/tasks/"+id, nil), "get").Raw
		wantError(t, h.do("POST", "/v1/tasks/"+id+"/cancel", nil), 400, "invalid_state_transition", "")
		after := h.must(200, h.do("GET", "/v1/tasks/"+id, nil), "get").Raw
		if string(before) != string(after) {
			t.Errorf("rejected cancel changed the task:\n%s\n%s", before, after)
		}
		kinds, _ := h.taskEvents(id)
		if kinds[len(kinds)-1] != "task.canceled" {
			t.Errorf("last event = %s, want task.canceled (%v)", kinds[len(kinds)-1], kinds)
		}

		done := h.submit(sess, nil).str("id")
		h.waitStatus(done, StatusCompleted)
		wantError(t, h.do("POST", "/v1/tasks/"+done+"/cancel", nil), 400, "invalid_state_transition", "")
		if got := h.do("GET", "/v1/tasks/"+done, nil).str("status"); got != StatusCompleted {
			t.Errorf("status after rejected cancel = %s, want COMPLETED", got)
		}

		v := newHarness(t, Options{Variants: Variants{VariantCancelTerminalConflict: true}})
		vs := v.session()
		vd := v.submit(vs, nil).str("id")
		v.waitStatus(vd, StatusCompleted)
		wantError(t, v.do("POST", "/v1/tasks/"+vd+"/cancel", nil), 409, "conflict", "")
	})
}

func TestIdempotency(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	body := map[string]any{"input": map[string]any{"text": "x"}}
	a := h.must(202, h.do("POST", "/v1/sessions/"+sess+"/tasks", body, "Idempotency-Key", "k1"), "first")
	// Same body with other key order and spacing is equivalent.
	b := h.do("POST", "/v1/sessions/"+sess+"/tasks", `{ "input" : {"text":"x"} }`, "Idempotency-Key", "k1")
	h.must(202, b, "retry")
	if a.str("id") != b.str("id") || string(a.Raw) != string(b.Raw) {
		t.Errorf("retry answered %s, want %s", b.Raw, a.Raw)
	}
	wantError(t, h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "y"}}, "Idempotency-Key", "k1"), 409, "idempotency_key_reused", "")
	// A different target is a different scope.
	h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": "a", "root": "/"}, "Idempotency-Key", "k1"), "other target")
	wantError(t, h.do("POST", "/v1/workspaces", map[string]any{"name": "a", "root": "/"}, "Idempotency-Key", strings.Repeat("k", 256)), 400, "invalid_request", "Idempotency-Key")
	wantError(t, h.do("POST", "/v1/workspaces", map[string]any{"name": "a", "root": "/"}, "Idempotency-Key", ""), 400, "invalid_request", "Idempotency-Key")
	h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": "a", "root": "/"}, "Idempotency-Key", strings.Repeat("é", 255)), "255 characters")

	// Concurrent retries create exactly one task.
	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids[i] = h.do("POST", "/v1/sessions/"+sess+"/tasks", body, "Idempotency-Key", "concurrent").str("id")
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id == "" || id != ids[0] {
			t.Fatalf("concurrent retries returned ids %v, want one id", ids)
		}
	}
	n := 0
	for _, tk := range h.must(200, h.do("GET", "/v1/tasks?limit=200", nil), "list").list() {
		if tk["id"] == ids[0] {
			n++
		}
	}
	if n != 1 {
		t.Errorf("task %s listed %d times", ids[0], n)
	}
}

func TestPagination(t *testing.T) {
	h := newHarness(t, Options{})
	var want []string
	for i := 0; i < 7; i++ {
		want = append(want, h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": fmt.Sprint(i), "root": "/"}), "ws").str("id"))
	}
	var got []string
	cursor := ""
	for pages := 0; pages < 10; pages++ {
		r := h.must(200, h.do("GET", "/v1/workspaces?limit=3"+cursor, nil), "page")
		for _, w := range r.list() {
			got = append(got, w["id"].(string))
		}
		page := r.Body["page"].(map[string]any)
		if page["has_more"] != true {
			if page["next_cursor"] != nil {
				t.Errorf("last page next_cursor = %v, want null", page["next_cursor"])
			}
			break
		}
		cursor = "&cursor=" + page["next_cursor"].(string)
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged ids = %v, want %v", got, want)
	}
}

func TestEventRanges(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	id := h.submit(sess, []map[string]any{step("emit", "count", 10)}).str("id")
	h.waitStatus(id, StatusCompleted)
	_, all := h.taskEvents(id)
	if len(all) != 13 {
		t.Fatalf("task has %d events, want 13", len(all))
	}
	var got []string
	after := ""
	for i := 0; i < 20; i++ {
		r := h.must(200, h.do("GET", "/v1/tasks/"+id+"/events?limit=4"+after, nil), "range")
		for _, e := range r.list() {
			got = append(got, e["id"].(string))
		}
		p := r.Body["page"].(map[string]any)
		if p["has_more"] != true {
			break
		}
		after = "&after_event_id=" + p["next_cursor"].(string)
	}
	var want []string
	for _, e := range all {
		want = append(want, e["id"].(string))
	}
	if !slices.Equal(got, want) {
		t.Errorf("ranged ids = %v, want %v", got, want)
	}
	one := h.must(200, h.do("GET", "/v1/events/"+want[3], nil), "event by id")
	if one.str("id") != want[3] || one.str("object") != "event" {
		t.Errorf("event = %s", one.Raw)
	}
	wantError(t, h.do("GET", "/v1/events?after_event_id=event_999999999999", nil), 410, "cursor_expired", "after_event_id")
	wantError(t, h.do("GET", "/v1/tasks/"+id+"/events?after_event_id=nonsense", nil), 410, "cursor_expired", "after_event_id")
	sessEvs := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil), "session events").list()
	if len(sessEvs) < len(all) {
		t.Errorf("session stream has %d events, want at least the task's %d", len(sessEvs), len(all))
	}
	wsFiltered := h.must(200, h.do("GET", "/v1/events?task_id="+id+"&limit=200", nil), "filtered").list()
	if len(wsFiltered) != len(all) {
		t.Errorf("global filtered by task has %d, want %d", len(wsFiltered), len(all))
	}
}

func TestRetentionExpiresCursors(t *testing.T) {
	h := newHarness(t, Options{EventRetention: 5})
	sess := h.session()
	id := h.submit(sess, []map[string]any{step("emit", "count", 10)}).str("id")
	h.waitStatus(id, StatusCompleted)
	wantError(t, h.do("GET", "/v1/events?after_event_id="+eventID(1), nil), 410, "cursor_expired", "after_event_id")
	r := h.must(200, h.do("GET", "/v1/events", nil), "retained")
	if n := len(r.list()); n != 5 {
		t.Errorf("retained %d events, want 5", n)
	}
}

func TestSessionOperations(t *testing.T) {
	h := newHarness(t, Options{})
	ws := h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/"}), "ws").str("id")
	msg := func(text string) map[string]any {
		return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}
	}
	se := h.must(201, h.do("POST", "/v1/sessions", map[string]any{"workspace_id": ws, "initial_messages": []any{msg("a"), msg("b")}}), "session")
	id := se.str("id")
	if se.str("state") != "ACTIVE" {
		t.Errorf("state = %s", se.str("state"))
	}
	m := h.must(201, h.do("POST", "/v1/sessions/"+id+"/messages", map[string]any{"message": msg("c")}), "append")
	h.must(200, h.do("GET", "/v1/messages/"+m.str("id"), nil), "get message")
	p := h.must(200, h.do("PATCH", "/v1/sessions/"+id, map[string]any{"summary": "sum"}), "patch")
	if p.str("summary") != "sum" {
		t.Errorf("patched summary = %q", p.str("summary"))
	}
	f := h.must(201, h.do("POST", "/v1/sessions/"+id+"/fork", nil), "fork")
	if f.str("parent_session_id") != id || f.str("root_session_id") != id {
		t.Errorf("fork = %s", f.Raw)
	}
	if n := len(h.do("GET", "/v1/sessions/"+f.str("id")+"/messages", nil).list()); n != 3 {
		t.Errorf("fork has %d messages, want 3", n)
	}
	tr := h.must(200, h.do("POST", "/v1/sessions/"+id+"/truncate", map[string]any{"keep_first": 1, "reason": "walk back"}), "truncate")
	if tr.str("object") != "session.truncate_result" || tr.Body["kept_turn_count"].(float64) != 1 || tr.Body["removed_turn_count"].(float64) != 2 {
		t.Errorf("truncate = %s", tr.Raw)
	}
	if n := len(h.do("GET", "/v1/sessions/"+id+"/messages", nil).list()); n != 1 {
		t.Errorf("after truncate %d messages, want 1", n)
	}
	wantError(t, h.do("GET", "/v1/messages/"+m.str("id"), nil), 404, "resource_not_found", "")
	c := h.must(200, h.do("POST", "/v1/sessions/"+id+"/close", nil), "close")
	if c.str("state") != "CLOSED" {
		t.Errorf("closed state = %s", c.str("state"))
	}
	wantError(t, h.do("POST", "/v1/sessions/"+id+"/tasks", map[string]any{"input": map[string]any{}}), 409, "conflict", "")
	wantError(t, h.do("POST", "/v1/sessions/"+id+"/messages", map[string]any{"message": msg("d")}), 409, "conflict", "")
	if n := len(h.do("GET", "/v1/sessions?workspace_id="+ws, nil).list()); n != 2 {
		t.Errorf("sessions in workspace = %d, want 2", n)
	}
}

func TestArtifactRegistration(t *testing.T) {
	h := newHarness(t, Options{})
	content := []byte("patch bytes")
	a := h.must(201, h.do("POST", "/v1/artifacts", map[string]any{"kind": "patch", "mime_type": "text/x-diff", "visibility": "public",
		"content_base64": base64.StdEncoding.EncodeToString(content)}), "register")
	if a.str("sha256") != sha256hex(content) || a.Body["uri"] != nil {
		t.Errorf("artifact = %s", a.Raw)
	}
	c := h.do("GET", "/v1/artifacts/"+a.str("id")+"/content", nil)
	if c.Code != 200 || string(c.Raw) != string(content) {
		t.Errorf("content = %d %q", c.Code, c.Raw)
	}
	b := h.must(201, h.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "internal", "uri": "https://example.com/x"}), "register by uri")
	wantError(t, h.do("GET", "/v1/artifacts/"+b.str("id")+"/content", nil), 404, "resource_not_found", "")
	wantError(t, h.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "public",
		"content_base64": base64.StdEncoding.EncodeToString(content), "sha256": strings.Repeat("0", 64)}), 400, "invalid_request", "sha256")
}

func TestTimestampsAndEnvelope(t *testing.T) {
	fixed := time.Date(2026, 4, 25, 19, 0, 0, 0, time.FixedZone("X", 5*3600))
	h := newHarness(t, Options{Clock: func() time.Time { return fixed }, IDs: &SeqIDs{}})
	r := h.must(201, h.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/"}), "ws")
	if r.str("created_at") != "2026-04-25T14:00:00.000Z" || r.str("id") != "workspace_000001" {
		t.Errorf("workspace = %s", r.Raw)
	}
	if _, ok := r.Body["metadata"].(map[string]any); !ok {
		t.Errorf("metadata = %v, want {}", r.Body["metadata"])
	}
	if r.Code != http.StatusCreated {
		t.Errorf("status = %d", r.Code)
	}
}

func TestMountedUnderPrefix(t *testing.T) {
	h := newHarness(t, Options{})
	mux := http.NewServeMux()
	mux.Handle("/harness/", http.StripPrefix("/harness", h.s))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	res, err := http.Get(srv.URL + "/harness/v1/agent-card")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var card struct {
		PublicURL      string                            `json:"public_url"`
		HarnInterfaces []struct{ Transport, URL string } `json:"harn_interfaces"`
	}
	if err := json.NewDecoder(res.Body).Decode(&card); err != nil {
		t.Fatal(err)
	}
	if card.PublicURL != srv.URL+"/harness" || len(card.HarnInterfaces) == 0 || card.HarnInterfaces[0].URL != srv.URL+"/harness/v1" {
		t.Errorf("card under /harness: public_url %q, interfaces %+v", card.PublicURL, card.HarnInterfaces)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/harness/v1/tasks", nil)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 200 {
		t.Errorf("GET /harness/v1/tasks = %d, want 200", r2.StatusCode)
	}
}

func TestIdempotencyWindow(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 4, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := newHarness(t, Options{Clock: clock})
	body := map[string]any{"name": "w", "root": "/"}
	first := h.must(201, h.do("POST", "/v1/workspaces", body, "Idempotency-Key", "win"), "first").str("id")
	// The trailing slash names the same target.
	if id := h.do("POST", "/v1/workspaces/", body, "Idempotency-Key", "win").str("id"); id != first {
		t.Errorf("retry on /v1/workspaces/ created %s, want %s", id, first)
	}
	advance(23*time.Hour + 59*time.Minute)
	if id := h.do("POST", "/v1/workspaces", body, "Idempotency-Key", "win").str("id"); id != first {
		t.Errorf("retry within 24h created %s, want %s", id, first)
	}
	advance(2 * time.Minute)
	if id := h.do("POST", "/v1/workspaces", body, "Idempotency-Key", "win").str("id"); id == first {
		t.Errorf("retry after 24h still answered %s; the window is 24h by default", id)
	}
}

func TestSessionLastEventID(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	id := h.submit(sess, nil).str("id")
	h.waitStatus(id, StatusCompleted)
	evs := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil), "events").list()
	want := evs[len(evs)-1]["id"]
	if got := h.do("GET", "/v1/sessions/"+sess, nil).Body["last_event_id"]; got != want {
		t.Errorf("last_event_id = %v, want %v", got, want)
	}
	for _, se := range h.do("GET", "/v1/sessions", nil).list() {
		if se["id"] == sess && se["last_event_id"] != want {
			t.Errorf("listed last_event_id = %v, want %v", se["last_event_id"], want)
		}
	}
}

// Without the hook the default agent keeps its reply as an artifact of the
// task, with bytes that hash to its sha256, listed by the Outcome: what a
// third-party agent shows a client (docs/scenarios.md, "What a run
// verifies without the hook").
func TestNoHookAgentKeepsItsReply(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantNoScenarioHook: true}})
	sess := h.session()
	id := h.submit(sess, nil).str("id")
	task := h.waitStatus(id, StatusCompleted)
	kinds, _ := h.taskEvents(id)
	if want := []string{"task.submitted", "task.started", "agent.message", "artifact.created", "task.completed"}; !slices.Equal(kinds, want) {
		t.Errorf("task events = %v, want %v", kinds, want)
	}
	arts := h.must(200, h.do("GET", "/v1/artifacts?task_id="+id, nil), "artifacts").list()
	if len(arts) != 1 {
		t.Fatalf("task %s has %d artifacts, want 1: %v", id, len(arts), arts)
	}
	a := arts[0]
	meta, _ := a["metadata"].(map[string]any)
	if a["kind"] != "log" || a["mime_type"] != "text/plain" || a["visibility"] != "public" || meta["name"] != AgentReplyArtifactName {
		t.Errorf("artifact = %v", a)
	}
	content := h.must(200, h.do("GET", "/v1/artifacts/"+a["id"].(string)+"/content", nil), "content")
	if string(content.Raw) != "echo: hello" || a["sha256"] != sha256hex(content.Raw) {
		t.Errorf("content %q, sha256 %v; want the reply and its hash", content.Raw, a["sha256"])
	}
	o := h.must(200, h.do("GET", "/v1/outcomes/"+*task.OutcomeID, nil), "outcome")
	if listed, _ := o.Body["artifacts"].([]any); len(listed) != 1 || listed[0].(map[string]any)["id"] != a["id"] {
		t.Errorf("outcome artifacts = %v, want the reply artifact", o.Body["artifacts"])
	}
	// With the hook the default agent keeps nothing.
	c := newHarness(t, Options{})
	cid := c.submit(c.session(), nil).str("id")
	c.waitStatus(cid, StatusCompleted)
	if got := c.must(200, c.do("GET", "/v1/artifacts?task_id="+cid, nil), "artifacts").list(); len(got) != 0 {
		t.Errorf("with the hook the echo agent made artifacts: %v", got)
	}
}

// The slow agent works SlowAgentWork on a plain task, in WORKING, and
// fails one whose input holds no text; scenario tasks are as their steps
// say. In a synctest bubble the second of work is the bubble's.
func TestSlowAgent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Variants: Variants{VariantSlowAgent: true}})
		sess := h.session()
		start := time.Now()
		id := h.submit(sess, nil).str("id")
		h.waitStatus(id, StatusWorking)
		h.waitStatus(id, StatusCompleted)
		if d := time.Since(start); d < SlowAgentWork {
			t.Errorf("the plain task completed after %s, want at least %s of work", d, SlowAgentWork)
		}

		// A running plain task can be canceled.
		run := h.submit(sess, nil).str("id")
		h.waitStatus(run, StatusWorking)
		if r := h.must(200, h.do("POST", "/v1/tasks/"+run+"/cancel", nil), "cancel"); r.str("status") != StatusCanceled {
			t.Errorf("cancel of the working plain task = %s", r.Raw)
		}

		for name, input := range map[string]map[string]any{
			"empty text":        {"role": "user", "parts": []any{map[string]any{"type": "text", "text": "  ", "visibility": "public"}}},
			"no text part":      {"role": "user", "parts": []any{map[string]any{"type": "json", "value": map[string]any{"a": 1}, "visibility": "public"}}},
			"structured object": {"goal": 7},
		} {
			r := h.must(202, h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": input}), name)
			failed := h.waitStatus(r.str("id"), StatusFailed)
			if failed.Failure == nil || failed.Failure.Code != SlowAgentNoTextCode {
				t.Errorf("%s: failure = %+v, want code %s", name, failed.Failure, SlowAgentNoTextCode)
			}
		}
		// Internal text is text to work on.
		internal := map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "quietly", "visibility": "internal"}}}
		r := h.must(202, h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": internal}), "internal text")
		h.waitStatus(r.str("id"), StatusCompleted)

		// A scenario task does not wait for the slow agent.
		start = time.Now()
		sc := h.submit(sess, []map[string]any{step("complete")}).str("id")
		h.waitStatus(sc, StatusCompleted)
		if d := time.Since(start); d >= SlowAgentWork {
			t.Errorf("a scenario task took %s under the slow agent", d)
		}
	})
}
