package refharness

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// Probes and tests of host-mediated authorization (permission requests),
// the derived tool and span events, the transport fault, the local
// server's routes and the refusal of unoffered routes.

func init() {
	for f, p := range map[Fault]probe{
		FaultPermissionAnswerLost: func(p *probeEnv) error {
			task := p.submit(p.sessionID(), []map[string]any{step("auth_required", "reason", "probe")}).str("id")
			p.waitStatus(task, StatusAuthRequired)
			reqs := p.do("GET", "/v1/tasks/"+task+"/permission-requests", nil).list()
			if len(reqs) == 0 {
				return nil // nothing listed: another probe's business
			}
			id, _ := reqs[0]["id"].(string)
			if r := p.do("POST", "/v1/permission-requests/"+id+"/respond", map[string]any{"approved": true}); r.Code != 200 {
				return fmt.Errorf("respond: status %d: %s", r.Code, r.Raw)
			}
			if st, ok := p.waitFor(task, 5*time.Second, StatusCompleted, StatusFailed); !ok {
				return fmt.Errorf("task %s is still %s after its permission request was approved", task, st)
			}
			return nil
		},
		FaultPermissionNotListed: func(p *probeEnv) error {
			task := p.submit(p.sessionID(), []map[string]any{step("tool_approval")}).str("id")
			p.waitStatus(task, StatusAuthRequired)
			for _, path := range []string{"/v1/tasks/" + task + "/permission-requests", "/v1/permission-requests?task_id=" + task} {
				reqs := p.do("GET", path, nil).list()
				if len(reqs) != 1 || reqs[0]["status"] != PermPending {
					return fmt.Errorf("GET %s while the task waits for its approval: %v, want one pending request", path, reqs)
				}
			}
			return nil
		},
		FaultApprovalDenialIgnored: func(p *probeEnv) error {
			task := p.submit(p.sessionID(), []map[string]any{step("tool_approval")}).str("id")
			p.waitStatus(task, StatusAuthRequired)
			p.mustOK(p.do("POST", "/v1/tasks/"+task+"/messages", confirmation("deny")), "deny")
			p.waitTerminal(task)
			kinds, _ := p.taskEvents(task)
			if !slices.Contains(kinds, "tool.denied") || slices.Contains(kinds, "tool.completed") {
				return fmt.Errorf("a denied tool approval left events %v, want tool.denied and no tool.completed", kinds)
			}
			return nil
		},
		FaultPermissionIdempotencyIgnored: func(p *probeEnv) error {
			if ws(p, "base").str("id") != ws(p, "base").str("id") {
				return nil // no idempotency at all: another probe's business
			}
			task := p.submit(p.sessionID(), []map[string]any{step("auth_required")}).str("id")
			p.waitStatus(task, StatusAuthRequired)
			reqs := p.do("GET", "/v1/tasks/"+task+"/permission-requests", nil).list()
			if len(reqs) == 0 {
				return nil // nothing listed: another probe's business
			}
			path := "/v1/permission-requests/" + reqs[0]["id"].(string) + "/respond"
			a := p.do("POST", path, map[string]any{"approved": true}, "Idempotency-Key", "respond")
			b := p.do("POST", path, map[string]any{"approved": true}, "Idempotency-Key", "respond")
			if a.Code != 200 || b.Code != 200 || a.str("status") != b.str("status") {
				return fmt.Errorf("respond retried with its Idempotency-Key: %d then %d (%s)", a.Code, b.Code, b.Raw)
			}
			return nil
		},
		FaultVendorEventUnprefixed: func(p *probeEnv) error {
			w := ws(p, "").str("id")
			p.mustOK(p.do("PUT", "/v1/workspaces/"+w+"/files?path=a.txt", map[string]any{"content": "x"}), "write file")
			for _, e := range p.do("GET", "/v1/events?workspace_id="+w, nil).list() {
				if k, _ := e["event"].(string); !taxonomyKind(k) && !strings.HasPrefix(k, "vendor.") {
					return fmt.Errorf("event %q is neither in the taxonomy nor vendor-prefixed", k)
				}
			}
			return nil
		},
		FaultToolResultUnpaired: func(p *probeEnv) error {
			evs := p.approvedToolEvents()
			use, res := firstOf(evs, "agent.tool_use"), firstOf(evs, "agent.tool_result")
			if use == nil || res == nil || use["payload"].(map[string]any)["tool_call_id"] != res["payload"].(map[string]any)["tool_call_id"] {
				return fmt.Errorf("agent.tool_use %v and agent.tool_result %v do not pair up", use, res)
			}
			return nil
		},
		FaultSpanUncorrelated: func(p *probeEnv) error {
			evs := p.approvedToolEvents()
			span, tool := firstOf(evs, "span.started"), firstOf(evs, "tool.requested")
			if span == nil || tool == nil || span["span_id"] != tool["span_id"] || span["payload"].(map[string]any)["tool_call_id"] != tool["payload"].(map[string]any)["tool_call_id"] {
				return fmt.Errorf("span.started %v shares no correlation id with tool.requested %v", span, tool)
			}
			return nil
		},
		FaultInputRefusedWhileStreaming: func(p *probeEnv) error {
			task := p.submit(p.sessionID(), []map[string]any{step("input_required")}).str("id")
			p.waitStatus(task, StatusInputRequired)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() {
				defer close(done)
				req := httptest.NewRequestWithContext(ctx, "GET", "/v1/tasks/"+task+"/stream", nil)
				req.Header.Set(VersionHeader, ProtocolVersion)
				req.Header.Set("Authorization", "Bearer "+testKey)
				p.s.ServeHTTP(httptest.NewRecorder(), req)
			}()
			synctest.Wait() // the stream is open and waits for events
			r := p.do("POST", "/v1/tasks/"+task+"/messages", map[string]any{"kind": "input", "message": map[string]any{"role": "user",
				"parts": []any{map[string]any{"type": "text", "text": "here", "visibility": "public"}}}})
			if r.Code/100 != 2 {
				cancel()
				<-done
				return fmt.Errorf("input sent over REST while the task's stream is open: status %d: %s", r.Code, r.Raw)
			}
			p.waitTerminal(task)
			cancel()
			<-done
			return nil
		},
		FaultCardAdvertisesWebSocket: func(p *probeEnv) error {
			// The global feed serves no WebSocket (with or without the
			// adapter on the per-resource stream paths, core.go).
			for _, it := range p.do("GET", "/v1/agent-card", nil).Body["harn_interfaces"].([]any) {
				m := it.(map[string]any)
				if u, _ := m["url"].(string); m["transport"] == "websocket" && strings.HasSuffix(u, "/v1/events/stream") {
					return fmt.Errorf("the card advertises a websocket interface on the global feed %s, which serves none", u)
				}
			}
			return nil
		},
		FaultLocalRuntimeMisshapen: func(p *probeEnv) error {
			r := p.do("GET", "/v1/runtime", nil)
			if n, ok := r.Body["session_count"].(float64); r.str("adapter") == "" || !ok || n < 0 {
				return fmt.Errorf("GET /v1/runtime: %s, want an adapter and a session_count >= 0", r.Raw)
			}
			return nil
		},
	} {
		probes[f] = p
	}
}

// confirmation is a tool_confirmation task message with one text part.
func confirmation(text string) map[string]any {
	return map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}}
}

// waitFor waits up to limit for task id to reach one of want; it returns
// the last status and whether it did.
func (h *harness) waitFor(id string, limit time.Duration, want ...string) (string, bool) {
	h.t.Helper()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		h.s.mu.RLock()
		t, _ := h.s.st.tasks.get(id)
		wake := h.s.notify
		h.s.mu.RUnlock()
		st := ""
		if t != nil {
			st = t.Status
		}
		if slices.Contains(want, st) {
			return st, true
		}
		select {
		case <-wake:
		case <-deadline.C:
			return st, false
		}
	}
}

// approvedToolEvents runs an approved tool_approval step and returns the task's events.
func (p *probeEnv) approvedToolEvents() []map[string]any {
	task := p.submit(p.sessionID(), []map[string]any{step("tool_approval")}).str("id")
	p.waitStatus(task, StatusAuthRequired)
	p.mustOK(p.do("POST", "/v1/tasks/"+task+"/messages", confirmation("approve")), "approve")
	p.waitTerminal(task)
	_, evs := p.taskEvents(task)
	return evs
}

func firstOf(evs []map[string]any, kind string) map[string]any {
	for _, e := range evs {
		if e["event"] == kind {
			return e
		}
	}
	return nil
}

// taxonomyKind reports whether k is an event kind of the spec's taxonomy.
func taxonomyKind(k string) bool {
	for _, p := range []string{"user.", "agent.", "task.", "session.", "branch.", "artifact.", "span.", "tool.", "connector.", "receipt.", "replay."} {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// A task waiting for an approval opens one permission request; answering
// it approves the tool, records one tool_confirmation message and event,
// and survives a restart; a second answer is 409, a keyed retry the first
// answer; a tool_confirmation message resolves a pending request too.
func TestPermissionRequests(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	sess := h.session()
	task := h.submit(sess, []map[string]any{step("tool_approval", "tool", "conform.noop")}).str("id")
	h.waitStatus(task, StatusAuthRequired)
	list := h.must(200, h.do("GET", "/v1/tasks/"+task+"/permission-requests", nil), "task list").list()
	if len(list) != 1 {
		t.Fatalf("task permission requests = %v, want one", list)
	}
	pr := list[0]
	if pr["object"] != "permission_request" || pr["status"] != PermPending || pr["task_id"] != task || pr["session_id"] != sess || pr["source"] != "hitl" {
		t.Fatalf("permission request = %v", pr)
	}
	if a, _ := pr["action"].(map[string]any); a["type"] != "tool_call" || a["name"] != "conform.noop" {
		t.Errorf("action = %v, want the tool call", pr["action"])
	}
	id := pr["id"].(string)
	if got := h.must(200, h.do("GET", "/v1/permission-requests?session_id="+sess+"&status=pending", nil), "list").list(); len(got) != 1 || got[0]["id"] != id {
		t.Errorf("GET /v1/permission-requests?session_id&status=pending = %v", got)
	}
	wantError(t, h.do("POST", "/v1/permission-requests/"+id+"/respond", map[string]any{}), 400, "invalid_request", "approved")
	wantError(t, h.do("POST", "/v1/permission-requests/"+id+"/respond", map[string]any{"approved": true, "outcome": "deny"}), 400, "invalid_request", "outcome")
	wantError(t, h.do("POST", "/v1/permission-requests/permreq_missing/respond", map[string]any{"approved": true}), 404, "resource_not_found", "")
	path := "/v1/permission-requests/" + id + "/respond"
	body := map[string]any{"outcome": "approve", "reviewer": "conform", "reason": "looks fine"}
	a := h.must(200, h.do("POST", path, body, "Idempotency-Key", "k1"), "respond")
	if a.str("status") != PermApproved || a.str("id") != id {
		t.Fatalf("respond answered %s", a.Raw)
	}
	if b := h.must(200, h.do("POST", path, body, "Idempotency-Key", "k1"), "keyed retry"); string(b.Raw) != string(a.Raw) {
		t.Errorf("keyed retry answered %s, want the first answer %s", b.Raw, a.Raw)
	}
	wantError(t, h.do("POST", path, body), 409, "conflict", "")
	h.waitTerminal(task)
	kinds, _ := h.taskEvents(task)
	n := 0
	for _, k := range kinds {
		if k == "user.tool_confirmation" {
			n++
		}
	}
	if n != 1 || !slices.Contains(kinds, "tool.approved") || !slices.Contains(kinds, "tool.completed") {
		t.Errorf("events %v: want one user.tool_confirmation, tool.approved and tool.completed", kinds)
	}
	h.s.Close()

	// After a restart the answered request reads the same.
	h2 := newHarness(t, Options{DataDir: dir})
	got := h2.must(200, h2.do("GET", "/v1/tasks/"+task+"/permission-requests", nil), "after restart").list()
	if len(got) != 1 || got[0]["status"] != PermApproved || got[0]["updated_at"] != a.Body["updated_at"] {
		t.Errorf("after a restart: %v, want the approved request", got)
	}

	// A tool_confirmation message resolves the pending request (a denial here).
	sess2 := h2.session()
	task2 := h2.submit(sess2, []map[string]any{step("auth_required")}).str("id")
	h2.waitStatus(task2, StatusAuthRequired)
	h2.mustOK(h2.do("POST", "/v1/tasks/"+task2+"/messages", confirmation("deny")), "deny by message")
	if got := h2.do("GET", "/v1/tasks/"+task2+"/permission-requests", nil).list(); len(got) != 1 || got[0]["status"] != PermDenied {
		t.Errorf("after a denying tool_confirmation: %v, want the request denied", got)
	}
	h2.waitTerminal(task2)

	// A confirmation queued before the request opens answers it at once.
	task3 := h2.submit(sess2, []map[string]any{step("work", "ms", 20), step("auth_required")}).str("id")
	h2.mustOK(h2.do("POST", "/v1/tasks/"+task3+"/messages", confirmation("approve")), "approve in advance")
	h2.waitTerminal(task3)
	if got := h2.do("GET", "/v1/tasks/"+task3+"/permission-requests", nil).list(); len(got) != 1 || got[0]["status"] != PermApproved {
		t.Errorf("a request answered in advance: %v, want approved", got)
	}
	// A finished task's requests can no longer be answered.
	task4 := h2.submit(sess2, []map[string]any{step("auth_required")}).str("id")
	h2.waitStatus(task4, StatusAuthRequired)
	id4 := h2.do("GET", "/v1/tasks/"+task4+"/permission-requests", nil).list()[0]["id"].(string)
	h2.mustOK(h2.do("POST", "/v1/tasks/"+task4+"/cancel", nil), "cancel")
	wantError(t, h2.do("POST", "/v1/permission-requests/"+id4+"/respond", map[string]any{"approved": true}), 409, "conflict", "")
}

// Tool calls show agent.tool_use/agent.tool_result and span events beside
// the tool events, all correlated by tool call, trace and span ids.
func TestToolEventViews(t *testing.T) {
	h := newHarness(t, Options{})
	task := h.submit(h.session(), []map[string]any{step("tool_approval")}).str("id")
	h.waitStatus(task, StatusAuthRequired)
	h.mustOK(h.do("POST", "/v1/tasks/"+task+"/messages", confirmation("approve")), "approve")
	h.waitTerminal(task)
	kinds, evs := h.taskEvents(task)
	var tools []string
	for _, k := range kinds {
		if strings.HasPrefix(k, "tool.") || strings.HasPrefix(k, "agent.tool") || strings.HasPrefix(k, "span.") {
			tools = append(tools, k)
		}
	}
	want := []string{"agent.tool_use", "span.started", "tool.requested", "tool.approval_required", "tool.approved", "tool.completed", "agent.tool_result", "span.completed"}
	if !slices.Equal(tools, want) {
		t.Errorf("tool events %v, want %v", tools, want)
	}
	var call, span string
	for _, e := range evs {
		if !slices.Contains(want, e["event"].(string)) {
			continue
		}
		id, _ := e["payload"].(map[string]any)["tool_call_id"].(string)
		if call == "" {
			call, span = id, e["span_id"].(string)
		}
		if id != call || e["span_id"] != span || e["trace_id"] == nil {
			t.Errorf("%v: tool_call_id %q span_id %v trace_id %v, want %q and %q", e["event"], id, e["span_id"], e["trace_id"], call, span)
		}
	}
}

// The local server's routes answer in the OpenAPI's shapes, and workspace
// files are read back, listed and kept through a restart.
func TestLocalRoutes(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	for _, p := range []string{"/health", "/version", "/openapi.json"} {
		r := h.must(200, h.do("GET", p, nil, "-Authorization", "", "-"+VersionHeader, ""), p)
		if len(r.Body) == 0 {
			t.Errorf("%s: empty body", p)
		}
	}
	if r := h.do("GET", "/openapi.json", nil); r.str("openapi") != "3.1.0" {
		t.Errorf("openapi.json: openapi = %q", r.str("openapi"))
	}
	h.must(200, h.do("GET", "/v1/runtime", nil), "runtime")
	if r := h.must(200, h.do("GET", "/v1/capabilities", nil), "capabilities"); r.str("object") != "capability_summary" {
		t.Errorf("capabilities: %s", r.Raw)
	}
	tools := h.must(200, h.do("GET", "/v1/tools?limit=2", nil), "tools")
	if len(tools.list()) != 2 || tools.Body["page"].(map[string]any)["has_more"] != true {
		t.Errorf("tools?limit=2: %s", tools.Raw)
	}
	h.must(200, h.do("GET", "/v1/tools/conform.noop", nil), "tool")
	wantError(t, h.do("GET", "/v1/tools/nope", nil), 404, "resource_not_found", "")
	w := ws(h.probe(), "").str("id")
	files := "/v1/workspaces/" + w + "/files"
	h.must(200, h.do("PUT", files+"?path=docs/a.txt", map[string]any{"content": "hello"}), "write")
	h.must(200, h.do("PUT", files, map[string]any{"path": "b.txt", "content": ""}), "write empty, path in body")
	wantError(t, h.do("PUT", files+"?path=../x", map[string]any{"content": "x"}), 400, "invalid_request", "path")
	wantError(t, h.do("PUT", files+"?path=docs", map[string]any{"content": "x"}), 409, "conflict", "")
	wantError(t, h.do("PUT", files+"?path=c", map[string]any{}), 400, "invalid_request", "content")
	wantError(t, h.do("GET", files+"?path=none.txt", nil), 404, "resource_not_found", "")
	h.s.Close()
	h = newHarness(t, Options{DataDir: dir})
	if r := h.must(200, h.do("GET", files+"?path=docs/a.txt", nil), "read"); r.str("content") != "hello" || r.Body["bytes"] != float64(5) {
		t.Errorf("read after restart: %s", r.Raw)
	}
	root := h.must(200, h.do("GET", files, nil), "list root")
	var names []string
	for _, e := range root.Body["entries"].([]any) {
		names = append(names, e.(map[string]any)["name"].(string)+":"+e.(map[string]any)["kind"].(string))
	}
	if root.str("object") != "file_listing" || !slices.Equal(names, []string{"b.txt:file", "docs:directory"}) {
		t.Errorf("root listing: %s", root.Raw)
	}
}

// probe wraps h as a probe env (for the ws helper).
func (h *harness) probe() *probeEnv { return &probeEnv{harness: h} }

// Routes the Harness does not offer get an error of their own: 501
// not_implemented on a protocol path, 404 route_not_found elsewhere, and
// 405 for a known path with another method; a missing resource stays 404
// resource_not_found.
func TestUnofferedRoutes(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantCoreOnly: true}})
	wantError(t, h.do("GET", "/v1/no-such-collection", nil), 404, CodeRouteNotFound, "")
	wantError(t, h.do("GET", "/v1/workspaces", nil), 501, CodeNotImplemented, "")
	wantError(t, newHarness(t, Options{Variants: Variants{VariantNoReplay: true}}).do("POST", "/v1/tasks/task_x/replay", map[string]any{}), 501, CodeNotImplemented, "")
	wantError(t, h.do("POST", "/v1/tasks/task_x/replay", map[string]any{}), 404, "resource_not_found", "")
	wantError(t, h.do("DELETE", "/v1/tasks/task_x", nil), 405, "method_not_allowed", "")
	wantError(t, h.do("GET", "/v1/tasks/task_x", nil), 404, "resource_not_found", "")
	wantError(t, h.do("GET", "/elsewhere", nil), 404, CodeRouteNotFound, "")
	r := h.do("GET", "/v1/workspaces", nil)
	if d, _ := r.Body["error"].(map[string]any)["details"].(map[string]any); d["path"] != "/v1/workspaces" || d["method"] != "GET" {
		t.Errorf("details = %v, want the method and path", d)
	}
}
