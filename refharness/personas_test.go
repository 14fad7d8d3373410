package refharness

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"testing"
	"time"
)

// Probes of the Extended faults of personas.go and branches.go: each
// checks one behaviour and is broken by exactly its fault.
func init() {
	for f, p := range map[Fault]probe{
		FaultPersonaPatchLost: func(p *probeEnv) error {
			id := p.persona(map[string]any{})
			p.mustOK(p.do("PATCH", "/v1/personas/"+id, map[string]any{"description": "patched"}), "patch persona")
			if d := p.do("GET", "/v1/personas/"+id, nil).str("description"); d != "patched" {
				return fmt.Errorf("persona description after PATCH = %q, want patched", d)
			}
			return nil
		},
		FaultPersonaToolsIgnored: func(p *probeEnv) error {
			id := p.persona(map[string]any{"tools": []string{"conform.granted"}, "capabilities": []string{"fs_write"}})
			for _, st := range []map[string]any{step("tool_call", "tool", "conform.other"), step("tool_call", "tool", "conform.granted", "capability", "network")} {
				task := p.personaTask(id, st)
				p.waitTerminal(task)
				if n := p.artifactsOf(task); n != 0 {
					return fmt.Errorf("a tool call the persona does not grant (%v) left %d artifacts", st, n)
				}
			}
			return nil
		},
		FaultPersonaApprovalSkipped: func(p *probeEnv) error {
			id := p.persona(map[string]any{"autonomy_tier": "act_with_approval", "tools": []string{"*"}})
			task := p.personaTask(id, step("tool_call", "tool", "conform.granted"))
			if st := p.waitAny(task, StatusAuthRequired, StatusCompleted, StatusFailed); st != StatusAuthRequired {
				return fmt.Errorf("act_with_approval: task went %s without asking (artifacts: %d)", st, p.artifactsOf(task))
			}
			if n := p.artifactsOf(task); n != 0 {
				return fmt.Errorf("act_with_approval: %d artifacts before the approval", n)
			}
			return nil
		},
		FaultPersonaShadowActs: func(p *probeEnv) error {
			for _, tier := range []string{"shadow", "suggest"} {
				id := p.persona(map[string]any{"autonomy_tier": tier, "tools": []string{"*"}})
				task := p.personaTask(id, step("tool_call", "tool", "conform.granted"))
				p.waitTerminal(task)
				if n := p.artifactsOf(task); n != 0 {
					return fmt.Errorf("%s: the tool call left %d artifacts", tier, n)
				}
			}
			return nil
		},
		FaultPersonaReceiptSkipped: func(p *probeEnv) error {
			id := p.persona(map[string]any{"receipt_policy": "required"})
			task := p.personaTask(id)
			p.waitTerminal(task)
			if n := len(p.do("GET", "/v1/tasks/"+task+"/receipts", nil).list()); n == 0 {
				return fmt.Errorf("a task of a receipt_policy required persona has no receipt")
			}
			return nil
		},
		FaultWorkspacePatchLost: func(p *probeEnv) error {
			id := ws(p, "").str("id")
			p.mustOK(p.do("PATCH", "/v1/workspaces/"+id, map[string]any{"name": "renamed"}), "patch workspace")
			if n := p.do("GET", "/v1/workspaces/"+id, nil).str("name"); n != "renamed" {
				return fmt.Errorf("workspace name after PATCH = %q, want renamed", n)
			}
			return nil
		},
		FaultBranchWrongWorkspace: func(p *probeEnv) error {
			br := p.branch(p.sessionID(), nil)
			want := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).str("workspace_id")
			if got := br.str("workspace_id"); got != want {
				return fmt.Errorf("branch workspace_id = %q, want the session's %q", got, want)
			}
			return nil
		},
		FaultMessagesNewestFirst: func(p *probeEnv) error {
			sent := p.appendN(p.sessionID(), 3)
			if got := p.messageIDs(p.sessionID()); !slices.Equal(got, sent) {
				return fmt.Errorf("message list %v, want append order %v", got, sent)
			}
			return nil
		},
		FaultTruncateKeepsTurns: func(p *probeEnv) error {
			sent := p.appendN(p.sessionID(), 3)
			p.mustOK(p.do("POST", "/v1/sessions/"+p.sessionID()+"/truncate", map[string]any{"keep_first": 1}), "truncate")
			if got := p.messageIDs(p.sessionID()); !slices.Equal(got, sent[:1]) {
				return fmt.Errorf("after truncate keep_first 1: messages %v, want %v", got, sent[:1])
			}
			return nil
		},
		FaultForkSharesTranscript: func(p *probeEnv) error {
			p.appendN(p.sessionID(), 2)
			fork := p.mustOK(p.do("POST", "/v1/sessions/"+p.sessionID()+"/fork", nil), "fork").str("id")
			p.mustOK(p.do("POST", "/v1/sessions/"+p.sessionID()+"/truncate", map[string]any{"keep_first": 0}), "truncate")
			if got := p.messageIDs(fork); len(got) != 2 {
				return fmt.Errorf("the fork has %d messages after its parent was truncated, want 2", len(got))
			}
			return nil
		},
		FaultBranchNotListed: func(p *probeEnv) error {
			id := p.branch(p.sessionID(), nil).str("id")
			for _, b := range p.do("GET", "/v1/sessions/"+p.sessionID()+"/branches", nil).list() {
				if b["id"] == id {
					return nil
				}
			}
			return fmt.Errorf("branch %s is not in its session's branch list", id)
		},
		FaultTaskBranchDropped: func(p *probeEnv) error {
			id := p.branch(p.sessionID(), nil).str("id")
			body := map[string]any{"branch_id": id, "input": map[string]any{"role": "user", "parts": []any{}}}
			task := p.mustOK(p.do("POST", "/v1/sessions/"+p.sessionID()+"/tasks", body), "submit on a branch").str("id")
			if got := p.do("GET", "/v1/tasks/"+task, nil).str("branch_id"); got != id {
				return fmt.Errorf("task submitted on branch %s has branch_id %q", id, got)
			}
			return nil
		},
		FaultArtifactDigestUnchecked: func(p *probeEnv) error {
			r := p.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "public",
				"content_base64": base64.StdEncoding.EncodeToString([]byte("abc")), "sha256": sha256Of("xyz")})
			return statusIs(r, 400, "an upload whose sha256 is not its bytes'")
		},
		FaultArtifactIdempotencyIgnored: func(p *probeEnv) error {
			if ws(p, "base").str("id") != ws(p, "base").str("id") {
				return nil // no idempotency at all: another probe's business
			}
			body := map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public"}
			a := p.mustOK(p.do("POST", "/v1/artifacts", body, "Idempotency-Key", "art"), "register").str("id")
			if b := p.mustOK(p.do("POST", "/v1/artifacts", body, "Idempotency-Key", "art"), "retry").str("id"); a != b {
				return fmt.Errorf("a retried registration made %s, want %s", b, a)
			}
			return nil
		},
		FaultExtIdempotencyIgnored: func(p *probeEnv) error {
			if ws(p, "base").str("id") != ws(p, "base").str("id") {
				return nil // no idempotency at all: another probe's business
			}
			body := personaBody(map[string]any{})
			a := p.mustOK(p.do("POST", "/v1/personas", body, "Idempotency-Key", "persona"), "create").str("id")
			if b := p.mustOK(p.do("POST", "/v1/personas", body, "Idempotency-Key", "persona"), "retry").str("id"); a != b {
				return fmt.Errorf("a retried persona create made %s, want %s", b, a)
			}
			return nil
		},
		FaultExtIdempotencyKeyRefused: func(p *probeEnv) error {
			id := p.mustOK(p.do("POST", "/v1/personas", personaBody(map[string]any{})), "create").str("id")
			if r := p.do("PATCH", "/v1/personas/"+id, map[string]any{"description": "patched"}, "Idempotency-Key", "patch"); r.Code/100 != 2 {
				return fmt.Errorf("a persona PATCH with an Idempotency-Key: %d, want 2xx", r.Code)
			}
			return nil
		},
		FaultArtifactReuseReplays: func(p *probeEnv) error {
			msg := func(text string) map[string]any {
				return map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}}
			}
			sess := p.sessionID()
			p.do("POST", "/v1/sessions/"+sess+"/messages", msg("one"), "Idempotency-Key", "reuse")
			if p.do("POST", "/v1/sessions/"+sess+"/messages", msg("two"), "Idempotency-Key", "reuse").Code != 409 {
				return nil // no conflict anywhere: another probe's business
			}
			art := func(name string) map[string]any {
				return map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "metadata": map[string]any{"name": name}}
			}
			a := p.do("POST", "/v1/artifacts", art("one"), "Idempotency-Key", "art").str("id")
			if b := p.do("POST", "/v1/artifacts", art("one"), "Idempotency-Key", "art").str("id"); a == "" || a != b {
				return nil // the key is ignored: artifact-idempotency-ignored's probe
			}
			if r := p.do("POST", "/v1/artifacts", art("two"), "Idempotency-Key", "art"); r.Code != 409 {
				return fmt.Errorf("an artifact registration reusing a key with another body: %d, want 409", r.Code)
			}
			return nil
		},
		FaultApprovalIdempotencyIgnored: func(p *probeEnv) error {
			if ws(p, "base").str("id") != ws(p, "base").str("id") {
				return nil // no idempotency at all: another probe's business
			}
			task := p.submit(p.sessionID(), []map[string]any{step("tool_approval")}).str("id")
			p.waitStatus(task, StatusAuthRequired)
			body := map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user",
				"parts": []any{map[string]any{"type": "text", "text": "approve", "visibility": "public"}}}}
			a := p.mustOK(p.do("POST", "/v1/tasks/"+task+"/messages", body, "Idempotency-Key", "approve"), "approve").str("id")
			b := p.do("POST", "/v1/tasks/"+task+"/messages", body, "Idempotency-Key", "approve")
			if b.Code/100 != 2 || b.str("id") != a {
				return fmt.Errorf("a retried approval answered %d with message %q, want the first answer's %s", b.Code, b.str("id"), a)
			}
			return nil
		},
		FaultSkillSchemaNotObject: func(p *probeEnv) error {
			for _, sk := range p.do("GET", "/v1/skills", nil).list() {
				for _, f := range []string{"input_schema", "output_schema"} {
					if v := sk[f]; v != nil {
						if _, ok := v.(map[string]any); !ok {
							return fmt.Errorf("skill %s: %s = %v, want an object or null", sk["id"], f, v)
						}
					}
				}
			}
			return nil
		},
	} {
		probes[f] = p
	}
}

func sha256Of(s string) string { h := sha256.Sum256([]byte(s)); return hex.EncodeToString(h[:]) }

// personaBody is a persona create body with over's members on top.
func personaBody(over map[string]any) map[string]any {
	b := map[string]any{"name": "p", "version": "1", "entry_workflow": "conform.echo", "description": "d",
		"autonomy_tier": "act_auto", "receipt_policy": "optional"}
	for k, v := range over {
		b[k] = v
	}
	return b
}

// persona creates a persona and returns its id.
func (h *harness) persona(over map[string]any) string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/personas", personaBody(over)), "create persona").str("id")
}

// personaTask submits a task naming persona in a new session of the
// persona: the steps, or the echo agent without any.
func (h *harness) personaTask(persona string, steps ...map[string]any) string {
	h.t.Helper()
	wsID := ws(&probeEnv{harness: h}, "").str("id")
	sess := h.mustOK(h.do("POST", "/v1/sessions", map[string]any{"workspace_id": wsID, "persona_id": persona}), "session").str("id")
	body := map[string]any{"persona_id": persona, "input": map[string]any{"role": "user", "parts": []any{}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	return h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/tasks", body), "submit").str("id")
}

// artifactsOf counts the artifacts task owns.
func (h *harness) artifactsOf(task string) int {
	h.t.Helper()
	return len(h.must(200, h.do("GET", "/v1/artifacts?task_id="+task, nil), "artifacts").list())
}

// waitAny waits until task id has one of the statuses and returns it.
func (h *harness) waitAny(id string, want ...string) string {
	h.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		h.s.mu.RLock()
		t, _ := h.s.st.tasks.get(id)
		wake := h.s.notify
		h.s.mu.RUnlock()
		if t != nil && slices.Contains(want, t.Status) {
			return t.Status
		}
		select {
		case <-wake:
		case <-deadline.C:
			h.t.Fatalf("task %s: none of %v within %s", id, want, waitLimit)
		}
	}
}

// branch creates a branch of kind session on sess.
func (h *harness) branch(sess string, over map[string]any) resp {
	h.t.Helper()
	b := map[string]any{"kind": "session", "base_ref": "main"}
	for k, v := range over {
		b[k] = v
	}
	return h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/branches", b), "create branch")
}

// appendN appends n user messages to sess and returns their ids.
func (h *harness) appendN(sess string, n int) []string {
	h.t.Helper()
	var ids []string
	for i := range n {
		m := map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": fmt.Sprint("m", i), "visibility": "public"}}}}
		ids = append(ids, h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/messages", m), "append").str("id"))
	}
	return ids
}

// messageIDs lists sess's messages, every page (of the default size: the
// paging faults are other probes' business).
func (h *harness) messageIDs(sess string) []string {
	h.t.Helper()
	var ids []string
	cursor := ""
	for range 100 {
		r := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages?"+cursor, nil), "messages")
		for _, m := range r.list() {
			ids = append(ids, m["id"].(string))
		}
		pg, _ := r.Body["page"].(map[string]any)
		if pg["has_more"] != true {
			break
		}
		cursor = "cursor=" + pg["next_cursor"].(string)
	}
	return ids
}

func TestPersonaCreatePatchValidates(t *testing.T) {
	h := newHarness(t, Options{})
	wantError(t, h.do("POST", "/v1/personas", personaBody(map[string]any{"autonomy_tier": "yolo"})), 400, "invalid_request", "autonomy_tier")
	r := h.must(201, h.do("POST", "/v1/personas", personaBody(map[string]any{"tools": []string{"a"}, "module_ref": "harn://o/n@1"})), "create")
	if r.str("object") != "persona" || r.Body["tools"].([]any)[0] != "a" || r.str("metadata", "module_ref") != "harn://o/n@1" {
		t.Errorf("created persona %s", r.Raw)
	}
	id := r.str("id")
	wantError(t, h.do("PATCH", "/v1/personas/"+id, map[string]any{"receipt_policy": "sometimes"}), 400, "invalid_request", "receipt_policy")
	p := h.must(200, h.do("PATCH", "/v1/personas/"+id, map[string]any{"autonomy_tier": "shadow", "quota_id": "quota_1"}), "patch")
	if p.str("autonomy_tier") != "shadow" || p.str("quota_id") != "quota_1" || p.str("name") != "p" {
		t.Errorf("patched persona %s", p.Raw)
	}
	wantError(t, h.do("PATCH", "/v1/personas/persona_missing", map[string]any{}), 404, "resource_not_found", "")
}

// The policy of the tool_call step, through the events it leaves.
func TestPersonaPolicyEvents(t *testing.T) {
	h := newHarness(t, Options{})
	p := &probeEnv{harness: h}
	kinds := func(task string) []string { k, _ := h.taskEvents(task); return k }
	auto := h.persona(map[string]any{"tools": []string{"conform.granted"}})
	denied := h.personaTask(auto, step("tool_call", "tool", "conform.other"))
	h.waitStatus(denied, StatusCompleted)
	if k := kinds(denied); !slices.Contains(k, "tool.denied") || slices.Contains(k, "tool.completed") {
		t.Errorf("denied tool: events %v", k)
	}
	ran := h.personaTask(auto, step("tool_call", "tool", "conform.granted", "content", "side effect"))
	h.waitStatus(ran, StatusCompleted)
	if k := kinds(ran); !slices.Contains(k, "tool.completed") || h.artifactsOf(ran) != 1 {
		t.Errorf("granted tool: events %v, %d artifacts", k, h.artifactsOf(ran))
	}
	// Without a persona there is no persona policy.
	free := h.submit(p.sessionID(), []map[string]any{step("tool_call", "tool", "anything")}).str("id")
	h.waitStatus(free, StatusCompleted)
	if h.artifactsOf(free) != 1 {
		t.Errorf("a task without a persona: %d artifacts, want 1", h.artifactsOf(free))
	}
	// act_with_approval: denied answer, no effect.
	ask := h.persona(map[string]any{"autonomy_tier": "act_with_approval", "tools": []string{"*"}})
	task := h.personaTask(ask, step("tool_call", "tool", "x"))
	h.waitStatus(task, StatusAuthRequired)
	h.must(201, h.do("POST", "/v1/tasks/"+task+"/messages", map[string]any{"kind": "tool_confirmation",
		"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "deny", "visibility": "public"}}}}), "deny")
	h.waitStatus(task, StatusCompleted)
	if k := kinds(task); !slices.Contains(k, "tool.approval_required") || !slices.Contains(k, "tool.denied") || h.artifactsOf(task) != 0 {
		t.Errorf("denied approval: events %v, %d artifacts", k, h.artifactsOf(task))
	}
	// receipt_policy disabled: no receipt.
	off := h.personaTask(h.persona(map[string]any{"receipt_policy": "disabled"}))
	h.waitStatus(off, StatusCompleted)
	if r := h.do("GET", "/v1/tasks/"+off, nil); r.Body["receipt_id"] != nil {
		t.Errorf("receipt_policy disabled: receipt_id %v", r.Body["receipt_id"])
	}
}

func TestBranchLineage(t *testing.T) {
	h := newHarness(t, Options{})
	p := &probeEnv{harness: h}
	sess := p.sessionID()
	wantError(t, h.do("POST", "/v1/sessions/"+sess+"/branches", map[string]any{"kind": "tree", "base_ref": "x"}), 400, "invalid_request", "kind")
	br := h.branch(sess, nil)
	if br.str("session_id") != sess || br.str("object") != "branch" || br.Body["parent_branch_id"] != nil {
		t.Errorf("branch %s", br.Raw)
	}
	child := h.branch(sess, map[string]any{"parent_branch_id": br.str("id")})
	if child.str("parent_branch_id") != br.str("id") {
		t.Errorf("child branch %s", child.Raw)
	}
	wantError(t, h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"branch_id": "branch_missing", "input": map[string]any{}}), 404, "resource_not_found", "branch_id")
	// A fork is on a new session branch that names the session it came from;
	// its tasks and artifacts carry that branch.
	h.appendN(sess, 1)
	fork := h.must(201, h.do("POST", "/v1/sessions/"+sess+"/fork", nil), "fork")
	fb := h.must(200, h.do("GET", "/v1/branches/"+fork.str("branch_id"), nil), "fork branch")
	if fb.str("session_id") != sess || fb.str("kind") != "session" {
		t.Errorf("fork branch %s", fb.Raw)
	}
	task := h.submit(fork.str("id"), nil).str("id")
	if got := h.do("GET", "/v1/tasks/"+task, nil).str("branch_id"); got != fork.str("branch_id") {
		t.Errorf("task in the fork: branch_id %q, want %q", got, fork.str("branch_id"))
	}
	art := h.must(201, h.do("POST", "/v1/artifacts", map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "task_id": task}), "artifact")
	if art.str("branch_id") != fork.str("branch_id") {
		t.Errorf("artifact of a fork task: branch_id %q", art.str("branch_id"))
	}
	main := h.submit(sess, nil).str("id")
	if b := h.do("GET", "/v1/tasks/"+main, nil).Body["branch_id"]; b != nil {
		t.Errorf("main-path task has branch_id %v", b)
	}
	listed := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/branches", nil), "branches").list()
	if len(listed) != 3 {
		t.Errorf("session lists %d branches, want 3 (two made, one by the fork)", len(listed))
	}
}

// Personas, branches, forks, truncation and uploads are journaled: a
// restart rebuilds them exactly, and their idempotency records survive.
func TestRestartRebuildsExtended(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	p := &probeEnv{harness: h}
	persona := h.mustOK(h.do("POST", "/v1/personas", personaBody(map[string]any{"tools": []string{"x"}}), "Idempotency-Key", "pk"), "persona").str("id")
	h.must(200, h.do("PATCH", "/v1/personas/"+persona, map[string]any{"description": "patched"}), "patch")
	sess := p.sessionID()
	h.appendN(sess, 3)
	br := h.branch(sess, nil).str("id")
	fork := h.must(201, h.do("POST", "/v1/sessions/"+sess+"/fork", map[string]any{"branch_id": br}), "fork").str("id")
	h.must(200, h.do("POST", "/v1/sessions/"+sess+"/truncate", map[string]any{"keep_first": 1}), "truncate")
	art := h.must(201, h.do("POST", "/v1/artifacts", map[string]any{"kind": "file", "mime_type": "text/plain", "visibility": "public",
		"content_base64": base64.StdEncoding.EncodeToString([]byte("up")), "sha256": sha256Of("up")}), "upload").str("id")
	paths := []string{"/v1/personas/" + persona, "/v1/branches/" + br, "/v1/sessions/" + sess + "/branches", "/v1/sessions/" + fork,
		"/v1/sessions/" + sess + "/messages", "/v1/sessions/" + fork + "/messages", "/v1/artifacts/" + art, "/v1/artifacts/" + art + "/content"}
	before := map[string]string{}
	for _, path := range paths {
		before[path] = string(h.must(200, h.do("GET", path, nil), path).Raw)
	}
	h2 := reopenHarness(t, h, dir)
	for _, path := range paths {
		if got := string(h2.must(200, h2.do("GET", path, nil), path).Raw); got != before[path] {
			t.Errorf("GET %s after restart:\n got %s\nwant %s", path, got, before[path])
		}
	}
	retry := h2.do("POST", "/v1/personas", personaBody(map[string]any{"tools": []string{"x"}}), "Idempotency-Key", "pk")
	if retry.str("id") != persona || retry.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("persona retry after restart = %d %s, want id %s", retry.Code, retry.Raw, persona)
	}
}
