package refharness

import (
	"fmt"
	"strings"
	"testing"
)

// Tests of memories.go, vaults.go, quotas.go and connectors.go, and the
// probes of their faults (registered with the others in faults_test.go).

const vaultCanary = "conform-vaultCanary-s3cr3t-9f2c1d7a"

func init() {
	for f, p := range mgmtProbes {
		probes[f] = p
	}
}

// workspace creates a workspace and returns its id.
func (h *harness) workspace() string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/tmp/w"}), "create workspace").str("id")
}

// sessionIn creates a session in workspace ws.
func (h *harness) sessionIn(ws string) string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/sessions", map[string]any{"workspace_id": ws}), "create session").str("id")
}

func (h *harness) vault(caps []string, secrets map[string]any) string {
	h.t.Helper()
	body := map[string]any{"provider": "conform-test", "capabilities": caps}
	if secrets != nil {
		body["secrets"] = secrets
	}
	return h.mustOK(h.do("POST", "/v1/vaults", body), "create vault").str("id")
}

func (h *harness) quota(ws string, limit, usage float64) string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/conform/quotas", map[string]any{"scope": "workspace", "owner_id": ws,
		"limits": map[string]any{"tasks": limit}, "usage": map[string]any{"tasks": usage}}), "create quota").str("id")
}

func (h *harness) connector(sess string) string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/conform/connectors", map[string]any{"provider": "github", "target_session_id": sess}), "create connector").str("id")
}

func (h *harness) deliver(conn, delivery string) resp {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/conform/connectors/"+conn+"/deliveries", map[string]any{"delivery_id": delivery,
		"event_kind": "issue.opened", "payload": map[string]any{"number": 7}}), "deliver")
}

func (h *harness) sessionTasks(sess string) []map[string]any {
	h.t.Helper()
	return h.must(200, h.do("GET", "/v1/sessions/"+sess+"/tasks?limit=200", nil), "session tasks").list()
}

func vaultTask(vault string) []map[string]any {
	return []map[string]any{step("use_vault_secret", "vault_id", vault, "name", "token")}
}

var mgmtProbes = map[Fault]probe{
	FaultMemoryDeleteKeeps: func(p *probeEnv) error {
		id := p.mustOK(p.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": p.workspace(),
			"content": "note", "provenance": map[string]any{"actor": "probe"}}), "create memory").str("id")
		p.mustOK(p.do("DELETE", "/v1/memories/"+id, nil), "delete memory")
		if r := p.do("GET", "/v1/memories/"+id, nil); r.Code/100 == 2 {
			return fmt.Errorf("GET of a deleted memory: status %d", r.Code)
		}
		return nil
	},
	FaultMemoryInTranscript: func(p *probeEnv) error {
		sess := p.session()
		p.mustOK(p.do("POST", "/v1/memories", map[string]any{"scope": "session", "owner_id": sess,
			"content": "remember this", "provenance": map[string]any{"actor": "probe"}}), "create memory")
		if msgs := p.must(200, p.do("GET", "/v1/sessions/"+sess+"/messages", nil), "messages").list(); len(msgs) != 0 {
			return fmt.Errorf("a session memory added %d messages to the session", len(msgs))
		}
		return nil
	},
	FaultVaultNotReadable: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/vaults/"+p.vault([]string{"use"}, nil), nil), 200, "GET of a created vault")
	},
	FaultVaultReadLeaks: func(p *probeEnv) error {
		id := p.vault([]string{"use"}, map[string]any{"token": vaultCanary})
		if r := p.do("GET", "/v1/vaults/"+id, nil); strings.Contains(string(r.Raw), vaultCanary) {
			return fmt.Errorf("GET /v1/vaults/%s shows the secret", id)
		}
		return nil
	},
	FaultVaultListLeaksUnfiltered: func(p *probeEnv) error {
		p.vault([]string{"use"}, map[string]any{"token": vaultCanary})
		for _, path := range []string{"/v1/vaults", "/v1/vaults?limit=1"} {
			if r := p.do("GET", path, nil); strings.Contains(string(r.Raw), vaultCanary) {
				return fmt.Errorf("GET %s shows the secret", path)
			}
		}
		return nil
	},
	FaultVaultSecretInEvent: func(p *probeEnv) error {
		sess := p.sessionID()
		id := p.submit(sess, vaultTask(p.vault([]string{"use"}, map[string]any{"token": vaultCanary}))).str("id")
		p.waitTerminal(id)
		if r := p.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil); strings.Contains(string(r.Raw), vaultCanary) {
			return fmt.Errorf("the session's events show the vault secret")
		}
		return nil
	},
	FaultVaultPolicyIgnored: func(p *probeEnv) error {
		id := p.submit(p.sessionID(), vaultTask(p.vault([]string{"list"}, map[string]any{"token": vaultCanary}))).str("id")
		p.waitTerminal(id)
		if kinds, _ := p.taskEvents(id); contains(kinds, "tool.completed") {
			return fmt.Errorf("a vault without the use capability lent its secret: %v", kinds)
		}
		return nil
	},
	FaultQuotaNotListed: func(p *probeEnv) error {
		id := p.quota(p.workspace(), 5, 0)
		for _, q := range p.must(200, p.do("GET", "/v1/quotas?limit=200", nil), "quotas").list() {
			if q["id"] == id {
				return nil
			}
		}
		return fmt.Errorf("quota %s is not listed", id)
	},
	FaultQuotaCheckedLate: func(p *probeEnv) error {
		ws := p.workspace()
		sess := p.sessionIn(ws)
		p.quota(ws, 1, 1)
		r := p.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "over quota"}})
		if r.Code/100 != 2 {
			return nil // refused before anything started
		}
		p.waitTerminal(r.str("id"))
		if kinds, _ := p.taskEvents(r.str("id")); contains(kinds, "task.started") || contains(kinds, "agent.message") {
			return fmt.Errorf("a task under an exhausted hard quota started work: %v", kinds)
		}
		return nil
	},
	FaultQuotaRefusedAs409: func(p *probeEnv) error {
		ws := p.workspace()
		sess := p.sessionIn(ws)
		p.quota(ws, 1, 1)
		r := p.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "over quota"}})
		if r.Code/100 == 2 || r.Code == 422 || r.Code == 429 || r.Code == 403 {
			return nil // accepted: whether work started is quota-checked-late's
		}
		return fmt.Errorf("an exhausted quota refused the submit with %d, want 422, 429 or 403", r.Code)
	},
	FaultConnectorNotReadable: func(p *probeEnv) error {
		return statusIs(p.do("GET", "/v1/connectors/"+p.connector(p.sessionID()), nil), 200, "GET of a connector")
	},
	FaultConnectorNoDedupe: func(p *probeEnv) error {
		sess := p.session()
		conn := p.connector(sess)
		p.deliver(conn, "d-1")
		p.deliver(conn, "d-1")
		if n := len(p.sessionTasks(sess)); n != 1 {
			return fmt.Errorf("one delivery, delivered twice, made %d tasks", n)
		}
		return nil
	},
	FaultConnectorKeyIgnoresID: func(p *probeEnv) error {
		sess := p.session()
		conn := p.connector(sess)
		a, b := p.deliver(conn, "d-1").str("dedupe_key"), p.deliver(conn, "d-2").str("dedupe_key")
		if a == b {
			return fmt.Errorf("two deliveries share the dedupe key %q", a)
		}
		return nil
	},
	FaultConnectorTaskNoKey: func(p *probeEnv) error {
		sess := p.session()
		task := p.deliver(p.connector(sess), "d-1").str("task_id")
		for _, e := range func() []map[string]any { _, evs := p.taskEvents(task); return evs }() {
			if e["event"] == "task.submitted" && e["idempotency_key"] == nil {
				return fmt.Errorf("the connector's task.submitted carries no idempotency key")
			}
		}
		return nil
	},
}

func TestMemories(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	body := map[string]any{"scope": "session", "owner_id": sess, "content": map[string]any{"fact": "blue"}, "provenance": map[string]any{"actor": "me"}}
	first := h.must(201, h.do("POST", "/v1/memories", body, "Idempotency-Key", "m-1"), "create")
	if retry := h.do("POST", "/v1/memories", body, "Idempotency-Key", "m-1"); retry.str("id") != first.str("id") {
		t.Errorf("retry created %s, want %s", retry.str("id"), first.str("id"))
	}
	body["content"] = "other"
	wantError(t, h.do("POST", "/v1/memories", body, "Idempotency-Key", "m-1"), 409, "idempotency_key_reused", "Idempotency-Key")
	id := first.str("id")
	if first.str("object") != "memory" || first.str("scope") != "session" || first.str("owner_id") != sess {
		t.Errorf("created memory = %s", first.Raw)
	}
	if l := h.must(200, h.do("GET", "/v1/memories?session_id="+sess, nil), "list").list(); len(l) != 1 || l[0]["id"] != id {
		t.Errorf("list by session = %v", l)
	}
	if l := h.must(200, h.do("GET", "/v1/memories?session_id=other", nil), "list").list(); len(l) != 0 {
		t.Errorf("list by another session = %v", l)
	}
	wantError(t, h.do("POST", "/v1/memories", map[string]any{"scope": "session", "owner_id": "session_nope", "content": "x", "provenance": map[string]any{}}), 404, "resource_not_found", "owner_id")
	wantError(t, h.do("POST", "/v1/memories", map[string]any{"scope": "session", "owner_id": sess, "content": 7, "provenance": map[string]any{}}), 400, "invalid_request", "content")
	del := h.do("DELETE", "/v1/memories/"+id, nil)
	if del.Code != 204 || len(del.Raw) != 0 {
		t.Errorf("DELETE = %d %q, want 204 without a body", del.Code, del.Raw)
	}
	wantError(t, h.do("GET", "/v1/memories/"+id, nil), 404, "resource_not_found", "")
	wantError(t, h.do("DELETE", "/v1/memories/"+id, nil), 404, "resource_not_found", "")
	if msgs := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages", nil), "messages").list(); len(msgs) != 0 {
		t.Errorf("memories reached the transcript: %v", msgs)
	}
}

// Secret values are write-only: no answer carries them, the create's
// included, nor an error about them.
func TestVaultSecretsWriteOnly(t *testing.T) {
	h := newHarness(t, Options{})
	ws := h.workspace()
	created := h.must(201, h.do("POST", "/v1/vaults", map[string]any{"provider": "p", "capabilities": []string{"use"}, "workspace_id": ws,
		"secrets": map[string]any{"token": vaultCanary}}, "Idempotency-Key", "v-1"), "create")
	id := created.str("id")
	bad := h.do("POST", "/v1/vaults", map[string]any{"provider": "p", "capabilities": []string{}, "secrets": map[string]any{"token": vaultCanary, "n": 5}})
	wantError(t, bad, 400, "invalid_request", "secrets.n")
	retry := h.do("POST", "/v1/vaults", map[string]any{"provider": "p", "capabilities": []string{"use"}, "workspace_id": ws,
		"secrets": map[string]any{"token": vaultCanary}}, "Idempotency-Key", "v-1")
	for name, r := range map[string]resp{"create": created, "bad create": bad, "retry": retry,
		"get": h.must(200, h.do("GET", "/v1/vaults/"+id, nil), "get"), "list": h.must(200, h.do("GET", "/v1/vaults?workspace_id="+ws, nil), "list")} {
		if strings.Contains(string(r.Raw), vaultCanary) {
			t.Errorf("%s shows the secret: %s", name, r.Raw)
		}
	}
	if retry.str("id") != id {
		t.Errorf("retry id %s, want %s", retry.str("id"), id)
	}
	sess := h.sessionIn(ws)
	done := h.submit(sess, vaultTask(id)).str("id")
	h.waitStatus(done, StatusCompleted)
	if r := h.do("GET", "/v1/events?limit=200", nil); strings.Contains(string(r.Raw), vaultCanary) {
		t.Errorf("events show the secret")
	}
	// A vault whose capabilities do not allow use refuses its secret.
	refused := h.submit(sess, vaultTask(h.vault([]string{"list"}, map[string]any{"token": vaultCanary}))).str("id")
	if f := h.waitStatus(refused, StatusFailed).Failure; f == nil || f.Code != "policy_violation" {
		t.Errorf("failure = %+v, want policy_violation", f)
	}
	// A step naming a missing secret is refused at submit.
	r := h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "x"},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{step("use_vault_secret", "vault_id", id, "name", "nope")}}}})
	wantError(t, r, 404, "resource_not_found", "metadata.conform.scenario.steps[0].name")
}

func TestQuotaRefusesBeforeWork(t *testing.T) {
	h := newHarness(t, Options{})
	ws := h.workspace()
	sess := h.sessionIn(ws)
	q := h.quota(ws, 1, 0)
	if got := h.must(200, h.do("GET", "/v1/workspaces/"+ws, nil), "workspace").str("quota_id"); got != q {
		t.Errorf("workspace quota_id = %q, want %s", got, q)
	}
	first := h.submit(sess, nil)
	if first.str("quota_id") != q {
		t.Errorf("task quota_id = %q, want %s", first.str("quota_id"), q)
	}
	h.waitStatus(first.str("id"), StatusCompleted)
	r := h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "x"}})
	wantError(t, r, 422, "policy_violation", "")
	if n := len(h.sessionTasks(sess)); n != 1 {
		t.Errorf("%d tasks after the refusal, want 1", n)
	}
	quota := h.must(200, h.do("GET", "/v1/quotas/"+q, nil), "quota")
	if u := quota.Body["usage"].(map[string]any)["tasks"]; u != 1.0 {
		t.Errorf("usage.tasks = %v, want 1", u)
	}
}

func TestConnectorDedupe(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	conn := h.connector(sess)
	first, again, other := h.deliver(conn, "d-1"), h.deliver(conn, "d-1"), h.deliver(conn, "d-2")
	if first.Body["deduplicated"] != false || again.Body["deduplicated"] != true || other.Body["deduplicated"] != false {
		t.Errorf("deduplicated = %v, %v, %v, want false, true, false", first.Body["deduplicated"], again.Body["deduplicated"], other.Body["deduplicated"])
	}
	if first.str("dedupe_key") != again.str("dedupe_key") || first.str("dedupe_key") == other.str("dedupe_key") {
		t.Errorf("dedupe keys %q, %q, %q", first.str("dedupe_key"), again.str("dedupe_key"), other.str("dedupe_key"))
	}
	if again.str("task_id") != first.str("task_id") {
		t.Errorf("redelivery names task %q, want %q", again.str("task_id"), first.str("task_id"))
	}
	if n := len(h.sessionTasks(sess)); n != 2 {
		t.Errorf("%d tasks, want 2", n)
	}
	var kinds []string
	for _, e := range h.must(200, h.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil), "events").list() {
		if strings.HasPrefix(e["event"].(string), "connector.") {
			kinds = append(kinds, e["event"].(string))
		}
	}
	want := "connector.delivery_received connector.normalized connector.task_submitted connector.delivery_received connector.delivery_deduped connector.delivery_received connector.normalized connector.task_submitted"
	if strings.Join(kinds, " ") != want {
		t.Errorf("connector events %v, want %s", kinds, want)
	}
	if c := h.must(200, h.do("GET", "/v1/connectors/"+conn, nil), "connector"); c.str("status") != "ACTIVE" || c.str("workspace_id") == "" {
		t.Errorf("connector = %s", c.Raw)
	}
}

// The hooks are a test contract: a server without them (the variant)
// neither advertises nor serves them, and keeps no secret it was sent.
func TestMgmtHooksHidden(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantNoScenarioHook: true}})
	caps := h.must(200, h.do("GET", "/v1", nil), "discovery").Body["capabilities"].(map[string]any)
	for _, k := range []string{VaultSecretsCapability, QuotasCapability, ConnectorsCapability} {
		if _, ok := caps[k]; ok {
			t.Errorf("discovery advertises %s", k)
		}
	}
	if r := h.do("POST", "/v1/conform/quotas", map[string]any{}); r.Code != 404 {
		t.Errorf("hook route answers %d, want 404", r.Code)
	}
	id := h.vault([]string{"use"}, map[string]any{"token": vaultCanary})
	h.s.mu.RLock()
	n := len(h.s.st.mg.secrets[id])
	h.s.mu.RUnlock()
	if n != 0 {
		t.Errorf("a server without the hook stored %d secrets", n)
	}
}

func TestMgmtRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	ws := h.workspace()
	sess := h.sessionIn(ws)
	mem := h.must(201, h.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "kept", "provenance": map[string]any{"actor": "me"}}), "memory").str("id")
	gone := h.must(201, h.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "dropped", "provenance": map[string]any{}}), "memory").str("id")
	h.must(204, h.do("DELETE", "/v1/memories/"+gone, nil), "delete")
	vault := h.vault([]string{"use"}, map[string]any{"token": vaultCanary})
	q := h.quota(ws, 2, 0)
	conn := h.connector(sess)
	task := h.deliver(conn, "d-1").str("task_id")
	h.waitStatus(task, StatusCompleted)
	paths := []string{"/v1/memories", "/v1/memories/" + mem, "/v1/vaults/" + vault, "/v1/quotas/" + q, "/v1/connectors/" + conn, "/v1/workspaces/" + ws}
	before := map[string]string{}
	for _, p := range paths {
		before[p] = string(h.must(200, h.do("GET", p, nil), p).Raw)
	}

	h2 := reopenHarness(t, h, dir)
	for _, p := range paths {
		if got := string(h2.must(200, h2.do("GET", p, nil), p).Raw); got != before[p] {
			t.Errorf("GET %s after restart:\n got %s\nwant %s", p, got, before[p])
		}
	}
	wantError(t, h2.do("GET", "/v1/memories/"+gone, nil), 404, "resource_not_found", "")
	// The dedupe record survives: a redelivery submits nothing.
	if again := h2.deliver(conn, "d-1"); again.Body["deduplicated"] != true || again.str("task_id") != task {
		t.Errorf("redelivery after restart = %s", again.Raw)
	}
	// The secret is still usable, and the quota's usage (1 of 2) still counts.
	used := h2.submit(sess, vaultTask(vault)).str("id")
	h2.waitStatus(used, StatusCompleted)
	wantError(t, h2.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "x"}}), 422, "policy_violation", "")
	if n := len(h2.sessionTasks(sess)); n != 2 {
		t.Errorf("%d tasks, want 2", n)
	}
}
