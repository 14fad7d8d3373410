package refharness

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
)

// TestSDKJourney is the Go counterpart of the protocol TypeScript SDK's
// acceptance journey: one client drives every operation of the OpenAPI
// document against the reference Harness, as an SDK user would, through
// internal/client. Every exchange is matched to its operation and judged by
// the traffic oracle; each operation must answer one of its documented
// success statuses. The test fails when the document gains an operation the
// journey does not drive, so the Harness and the journey grow with it.
//
// An operation the Harness does not offer would be driven as unoffered (it
// must answer 501 not_implemented, docs/interpretations.md#unoffered-routes);
// since Replay (issue 12) there is none.
func TestSDKJourney(t *testing.T) {
	doc, err := openapi.Default()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Options{APIKeys: map[string]string{testKey: "actor_journey"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	c, err := client.New(client.Options{BaseURL: hs.URL, APIKey: testKey, ProtocolVersion: ProtocolVersion, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	unoffered := map[string]bool{}
	var mu sync.Mutex
	driven := map[string][]int{} // operationId -> statuses seen
	c = c.WithObserver(func(tr client.Traffic) {
		op, ok := doc.Match(tr.Method, tr.Path)
		mu.Lock()
		defer mu.Unlock()
		if !ok {
			if !strings.HasPrefix(tr.Path, "/v1/conform/") { // the test hooks are no operations
				t.Errorf("%s %s matches no operation of the document", tr.Method, tr.Path)
			}
			return
		}
		driven[op.ID] = append(driven[op.ID], tr.Status)
		for _, v := range doc.ValidateTraffic(tr) {
			t.Errorf("%s (%s %s → %d): %v", op.ID, tr.Method, tr.Path, tr.Status, v.Error())
		}
	})
	ctx := context.Background()
	j := &journey{t: t, s: s, c: c, ctx: ctx}

	// Discovery and the local server.
	disc := j.do("GET", "/v1", nil, "", true)
	if caps, _ := disc["capabilities"].(map[string]any); caps["replay"] != true {
		t.Fatalf("discovery capabilities.replay = %v: the journey drives replayTask as an offered operation", caps["replay"])
	}
	j.do("GET", "/v1/agent-card", nil, "", true)
	for _, p := range []string{"/health", "/version", "/openapi.json"} {
		j.do("GET", p, nil, "", true)
	}
	j.do("GET", "/v1/runtime", nil, "", false)
	j.do("GET", "/v1/capabilities", nil, "", false)
	tool := first(j.do("GET", "/v1/tools", nil, "", false))
	j.do("GET", "/v1/tools/"+client.Seg(id(tool)), nil, "", false)

	// Personas, workspaces and their files.
	j.do("GET", "/v1/personas", nil, "", false)
	persona := id(j.do("POST", "/v1/personas", map[string]any{"name": "journey", "version": "1", "entry_workflow": "conform.echo",
		"description": "SDK journey persona", "autonomy_tier": "act_auto", "receipt_policy": "required"}, "persona-1", false))
	j.do("GET", "/v1/personas/"+client.Seg(persona), nil, "", false)
	j.do("PATCH", "/v1/personas/"+client.Seg(persona), map[string]any{"description": "patched by the journey"}, "persona-2", false)
	j.do("GET", "/v1/workspaces", nil, "", false)
	ws := id(j.do("POST", "/v1/workspaces", map[string]any{"name": "journey", "root": "conform://journey"}, "ws-1", false))
	j.do("GET", "/v1/workspaces/"+client.Seg(ws), nil, "", false)
	j.do("PATCH", "/v1/workspaces/"+client.Seg(ws), map[string]any{"name": "journey (renamed)"}, "ws-2", false)
	files := "/v1/workspaces/" + client.Seg(ws) + "/files"
	j.req(client.Request{Method: "PUT", Path: files, Query: url.Values{"path": {"notes/todo.md"}}, Body: map[string]any{"content": "# todo\n"}, IdempotencyKey: "file-1"})
	if got := j.req(client.Request{Path: files, Query: url.Values{"path": {"notes/todo.md"}}}); got["content"] != "# todo\n" {
		t.Errorf("workspace file read back %v", got["content"])
	}

	// Sessions, messages, tasks and their events.
	sess := id(j.do("POST", "/v1/sessions", map[string]any{"workspace_id": ws, "persona_id": persona}, "sess-1", false))
	j.req(client.Request{Path: "/v1/sessions", Query: url.Values{"workspace_id": {ws}}})
	j.do("GET", "/v1/sessions/"+client.Seg(sess), nil, "", false)
	j.do("PATCH", "/v1/sessions/"+client.Seg(sess), map[string]any{"summary": "SDK journey"}, "sess-2", false)
	msg := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/messages", map[string]any{"message": text("hello")}, "msg-1", false))
	j.do("GET", "/v1/sessions/"+client.Seg(sess)+"/messages", nil, "", false)
	j.do("GET", "/v1/messages/"+client.Seg(msg), nil, "", false)
	task := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/tasks", scenarioTask(
		step("input_required", "prompt", "which file?"), step("artifact", "content", "journey log"), step("complete", "summary", "journey done")), "task-1", false))
	j.awaitStatus(task, StatusInputRequired)
	j.do("POST", "/v1/tasks/"+client.Seg(task)+"/messages", map[string]any{"kind": "input", "message": text("notes/todo.md")}, "input-1", false)
	j.awaitStatus(task, StatusCompleted)
	other := id(j.do("POST", "/v1/tasks", map[string]any{"session_id": sess, "input": text("echo me")}, "task-2", false))
	j.awaitStatus(other, StatusCompleted)
	j.do("GET", "/v1/sessions/"+client.Seg(sess)+"/tasks", nil, "", false)
	j.req(client.Request{Path: "/v1/tasks", Query: url.Values{"session_id": {sess}}})
	j.do("GET", "/v1/tasks/"+client.Seg(task), nil, "", false)
	ev := first(j.do("GET", "/v1/tasks/"+client.Seg(task)+"/events", nil, "", false))
	j.do("GET", "/v1/sessions/"+client.Seg(sess)+"/events", nil, "", false)
	j.req(client.Request{Path: "/v1/events", Query: url.Values{"session_id": {sess}}})
	j.do("GET", "/v1/events/"+client.Seg(id(ev)), nil, "", false)
	j.stream("/v1/tasks/" + client.Seg(task) + "/stream")
	j.stream("/v1/sessions/" + client.Seg(sess) + "/events/stream")
	j.stream("/v1/events/stream")
	long := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/tasks", scenarioTask(step("work", "ms", 600000)), "task-3", false))
	j.awaitStatus(long, StatusWorking)
	if got := j.do("POST", "/v1/tasks/"+client.Seg(long)+"/cancel", map[string]any{"reason": "journey"}, "cancel-1", false); got["status"] != StatusCanceled {
		t.Errorf("cancel answered status %v", got["status"])
	}

	// Receipts, outcomes, artifacts.
	rc := first(j.do("GET", "/v1/tasks/"+client.Seg(task)+"/receipts", nil, "", false))
	rid, _ := rc["receipt_id"].(string)
	j.do("GET", "/v1/receipts/"+client.Seg(rid), nil, "", false)
	if v := j.do("POST", "/v1/receipts/"+client.Seg(rid)+"/verify", map[string]any{}, "", false); v["valid"] != true {
		t.Errorf("receipt %s does not verify: %v", rid, v)
	}
	j.do("GET", "/v1/receipt-keys", nil, "", false)
	out := first(j.req(client.Request{Path: "/v1/outcomes", Query: url.Values{"task_id": {task}}}))
	j.do("GET", "/v1/outcomes/"+client.Seg(id(out)), nil, "", false)
	art := first(j.req(client.Request{Path: "/v1/artifacts", Query: url.Values{"task_id": {task}}}))
	j.do("GET", "/v1/artifacts/"+client.Seg(id(art)), nil, "", false)
	if r := j.raw(client.Request{Path: "/v1/artifacts/" + client.Seg(id(art)) + "/content"}); r.Status != http.StatusOK || string(r.Body) != "journey log" {
		t.Errorf("artifact content: %s %q", r, r.Body)
	}
	content := []byte("uploaded by the journey")
	sum := sha256.Sum256(content)
	up := j.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "public", "session_id": sess,
		"content_base64": base64.StdEncoding.EncodeToString(content), "sha256": hex.EncodeToString(sum[:])}, "art-1", false)
	if r := j.raw(client.Request{Path: "/v1/artifacts/" + client.Seg(id(up)) + "/content"}); string(r.Body) != string(content) {
		t.Errorf("uploaded artifact content = %q", r.Body)
	}

	// Host-mediated authorization: permission requests.
	waiting := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/tasks", scenarioTask(step("tool_approval", "tool", "conform.noop")), "task-4", false))
	j.awaitStatus(waiting, StatusAuthRequired)
	pr := first(j.do("GET", "/v1/tasks/"+client.Seg(waiting)+"/permission-requests", nil, "", false))
	j.req(client.Request{Path: "/v1/permission-requests", Query: url.Values{"task_id": {waiting}, "status": {"pending"}}})
	if got := j.do("POST", "/v1/permission-requests/"+client.Seg(id(pr))+"/respond", map[string]any{"approved": true, "reviewer": "journey"}, "respond-1", false); got["status"] != PermApproved {
		t.Errorf("respond answered status %v", got["status"])
	}
	j.awaitStatus(waiting, StatusCompleted)

	// Branches, fork, truncate, close.
	br := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/branches", map[string]any{"kind": "session", "base_ref": "main"}, "br-1", false))
	j.do("GET", "/v1/sessions/"+client.Seg(sess)+"/branches", nil, "", false)
	j.do("GET", "/v1/branches/"+client.Seg(br), nil, "", false)
	fork := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/fork", map[string]any{}, "fork-1", false))
	j.do("POST", "/v1/sessions/"+client.Seg(fork)+"/truncate", map[string]any{"keep_first": 1}, "trunc-1", false)
	j.do("POST", "/v1/sessions/"+client.Seg(fork)+"/close", nil, "close-1", false)

	// Memories, vaults, connectors, skills, quotas.
	mem := id(j.do("POST", "/v1/memories", map[string]any{"scope": "session", "owner_id": sess, "content": "the user likes todo lists",
		"provenance": map[string]any{"task_id": task}}, "mem-1", false))
	j.do("GET", "/v1/memories", nil, "", false)
	j.do("GET", "/v1/memories/"+client.Seg(mem), nil, "", false)
	j.do("DELETE", "/v1/memories/"+client.Seg(mem), nil, "mem-2", false)
	vault := id(j.do("POST", "/v1/vaults", map[string]any{"workspace_id": ws, "provider": "journey", "capabilities": []any{"read"}}, "vault-1", false))
	j.do("GET", "/v1/vaults", nil, "", false)
	j.do("GET", "/v1/vaults/"+client.Seg(vault), nil, "", false)
	conn := id(j.req(client.Request{Method: "POST", Path: "/v1/conform/connectors", Body: map[string]any{"provider": "journey", "target_session_id": sess}}))
	j.do("GET", "/v1/connectors", nil, "", false)
	j.do("GET", "/v1/connectors/"+client.Seg(conn), nil, "", false)
	j.do("GET", "/v1/skills", nil, "", false)
	j.do("GET", "/v1/skills/skill_conform_scenarios", nil, "", false)
	quota := id(j.req(client.Request{Method: "POST", Path: "/v1/conform/quotas", Body: map[string]any{"scope": "workspace", "owner_id": ws, "limits": map[string]any{"tasks": 100}}}))
	j.do("GET", "/v1/quotas", nil, "", false)
	j.do("GET", "/v1/quotas/"+client.Seg(quota), nil, "", false)

	// Replay: an exact replay of the finished task, and a replay with an
	// override of a recorded dependency.
	rep := j.do("POST", "/v1/tasks/"+client.Seg(task)+"/replay", map[string]any{"mode": "exact"}, "replay-1", false)
	if rep["parent_task_id"] != task || rep["session_id"] != sess {
		t.Errorf("replay task = %v, want parent_task_id %s in session %s", rep, task, sess)
	}
	j.awaitStatus(id(rep), StatusCompleted)
	dep := id(j.do("POST", "/v1/sessions/"+client.Seg(sess)+"/tasks", scenarioTask(step("clock_read", "label", "now", "value_ms", 1000)), "task-5", false))
	j.awaitStatus(dep, StatusCompleted)
	over := j.do("POST", "/v1/tasks/"+client.Seg(dep)+"/replay", map[string]any{"mode": "with_overrides",
		"override": map[string]any{"time:now": map[string]any{"kind": "time", "value": 2000}}}, "replay-2", false)
	j.awaitStatus(id(over), StatusCompleted)
	var replayed bool
	for _, ev := range j.do("GET", "/v1/tasks/"+client.Seg(id(over))+"/events", nil, "", false)["data"].([]any) {
		e := ev.(map[string]any)
		if p, _ := e["payload"].(map[string]any); e["replayed"] == true && fmt.Sprint(p["value_ms"]) == "2000" {
			replayed = true
		}
	}
	if !replayed {
		t.Errorf("the override replay has no replayed clock reading of 2000")
	}

	// Every operation was driven, and answered as documented.
	mu.Lock()
	defer mu.Unlock()
	var missing []string
	for _, op := range doc.Operations() {
		got, ok := driven[op.ID]
		switch {
		case !ok:
			missing = append(missing, op.ID)
		case unoffered[op.ID]:
			if slices.ContainsFunc(got, func(st int) bool { return st != http.StatusNotImplemented }) {
				t.Errorf("%s (unoffered) answered %v, want 501 only", op.ID, got)
			}
		default:
			for _, st := range got {
				if !slices.Contains(op.Success, st) {
					t.Errorf("%s answered %d, want one of its documented statuses %v (all: %v)", op.ID, st, op.Success, got)
				}
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("the journey drives no request of these operations of the OpenAPI document (extend it): %v", missing)
	}
}

type journey struct {
	t   *testing.T
	s   *Server
	c   *client.Client
	ctx context.Context
}

// raw sends req and returns the response (a transport error fails the test).
func (j *journey) raw(req client.Request) *client.Response {
	j.t.Helper()
	resp, err := j.c.Do(j.ctx, req)
	if err != nil {
		j.t.Fatalf("%s %s: %v", req.Method, req.Path, err)
	}
	return resp
}

// req sends req and returns the JSON object it answered (nil for a 204).
func (j *journey) req(req client.Request) map[string]any {
	j.t.Helper()
	resp := j.raw(req)
	if resp.Status/100 != 2 {
		j.t.Fatalf("%s: %s", resp, resp.Body)
	}
	if resp.Status == http.StatusNoContent {
		return nil
	}
	m, err := resp.Object()
	if err != nil {
		j.t.Fatalf("%s: %v", resp, err)
	}
	return m
}

func (j *journey) do(method, path string, body any, key string, public bool) map[string]any {
	j.t.Helper()
	return j.req(client.Request{Method: method, Path: path, Body: body, IdempotencyKey: key, NoAuth: public, NoVersion: public})
}

// stream opens an SSE stream and reads one event from it.
func (j *journey) stream(path string) {
	j.t.Helper()
	ctx, cancel := context.WithTimeout(j.ctx, 10*time.Second)
	defer cancel()
	s, err := j.c.Stream(ctx, client.Request{Path: path})
	if err != nil {
		j.t.Fatalf("GET %s: %v", path, err)
	}
	defer s.Close()
	if f, err := s.NextEvent(ctx); err != nil || !f.HasData {
		j.t.Errorf("GET %s: no event: %v", path, err)
	}
}

// awaitStatus waits for task id to reach status want, on the server's
// change notifications (harness.waitStatus): no polling.
func (j *journey) awaitStatus(id, want string) {
	j.t.Helper()
	(&harness{t: j.t, s: j.s}).waitStatus(id, want)
}

func id(m map[string]any) string { s, _ := m["id"].(string); return s }

// first is the first item of a list.
func first(list map[string]any) map[string]any {
	data, _ := list["data"].([]any)
	if len(data) == 0 {
		return map[string]any{}
	}
	m, _ := data[0].(map[string]any)
	return m
}

func text(s string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": s, "visibility": "public"}}}
}

func scenarioTask(steps ...map[string]any) map[string]any {
	return map[string]any{"input": text("journey"), "metadata": map[string]any{"conform.scenario": map[string]any{"steps": steps}}}
}
