package refharness

import (
	"fmt"
	"strings"
	"testing"
)

// Probes of the privacy faults (privacy.go) and of the persona quota
// (quotas.go): each checks one behaviour and is broken by exactly its fault.
func init() {
	for f, p := range map[Fault]probe{
		FaultPrivMarkedPublic: func(p *probeEnv) error {
			id := p.privateMessage(p.sessionID(), "marked-canary-1")
			m := p.messageIn(p.sessionID(), id)
			for i, want := range []string{"public", "internal", "receipt_only"} {
				if got := partVisibility(m, i); want != "public" && got == "public" {
					return fmt.Errorf("part %d, created %s, reads back as public", i, want)
				}
			}
			a := p.mustOK(p.do("POST", "/v1/artifacts", map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "internal"}), "register artifact")
			if v := p.do("GET", "/v1/artifacts/"+a.str("id"), nil).str("visibility"); v == "public" {
				return fmt.Errorf("an artifact registered internal reads back as public")
			}
			return nil
		},
		FaultPrivReceiptOnlyServed: func(p *probeEnv) error {
			const canary = "receipt-only-canary-2"
			p.privateMessage(p.sessionID(), canary)
			if r := p.do("GET", "/v1/sessions/"+p.sessionID()+"/messages?limit=200", nil); strings.Contains(string(r.Raw), "receipt "+canary) {
				return fmt.Errorf("the session's message list serves receipt_only content")
			}
			task := p.mustOK(p.do("POST", "/v1/sessions/"+p.sessionID()+"/tasks", map[string]any{"input": privateInput(canary)}), "submit").str("id")
			if r := p.do("GET", "/v1/tasks/"+task, nil); strings.Contains(string(r.Raw), "receipt "+canary) {
				return fmt.Errorf("the task's input serves receipt_only content")
			}
			p.waitTerminal(task)
			return nil
		},
		FaultPrivInternalInEvent: func(p *probeEnv) error {
			const canary = "internal-canary-in-event-3"
			task := p.submit(p.sessionID(), []map[string]any{step("emit", "count", 1, "text", canary, "visibility", "internal")}).str("id")
			p.waitTerminal(task)
			if r := p.do("GET", "/v1/tasks/"+task+"/events?limit=200", nil); strings.Contains(string(r.Raw), canary) {
				return fmt.Errorf("an event carries the text of an internal message")
			}
			return nil
		},
		FaultPrivSecretInPart: func(p *probeEnv) error {
			const canary = "sk-canary-secret-in-part-4"
			task := p.submit(p.sessionID(), []map[string]any{step("use_secret", "secret", canary)}).str("id")
			p.waitTerminal(task)
			if r := p.do("GET", "/v1/sessions/"+p.sessionID()+"/messages?limit=200", nil); strings.Contains(string(r.Raw), canary) {
				return fmt.Errorf("a message part names the use_secret step's credential")
			}
			return nil
		},
		FaultPrivReasoningExposed: func(p *probeEnv) error {
			const canary = "hidden-reasoning-canary-5"
			task := p.submit(p.sessionID(), []map[string]any{step("reason", "text", canary, "summary", "weighed the options")}).str("id")
			p.waitTerminal(task)
			if r := p.do("GET", "/v1/tasks/"+task+"/events?limit=200", nil); strings.Contains(string(r.Raw), canary) {
				return fmt.Errorf("an event shows the hidden reasoning")
			}
			return nil
		},
		FaultPrivRedactionDeletes: func(p *probeEnv) error {
			art := p.redactedArtifact()
			r := p.do("GET", "/v1/artifacts/"+art, nil)
			if r.Code != 200 || r.str("kind") != "log" || r.str("mime_type") != "text/plain" || r.str("visibility") != "public" {
				return fmt.Errorf("the redacted artifact reads %d %s, want 200 with its kind, mime_type and visibility", r.Code, r.Raw)
			}
			return nil
		},
		FaultPrivRedactionSilent: func(p *probeEnv) error {
			art := p.redactedArtifact()
			r := p.do("GET", "/v1/events?limit=200", nil)
			for _, e := range r.list() {
				if e["event"] == "artifact.redacted" && strings.Contains(fmt.Sprint(e["resource"]), art) {
					return nil
				}
			}
			return fmt.Errorf("no artifact.redacted event names artifact %s", art)
		},
		FaultQuotaIgnoresPersona: func(p *probeEnv) error {
			persona := p.persona(map[string]any{})
			q := p.mustOK(p.do("POST", "/v1/conform/quotas", map[string]any{"scope": "persona", "owner_id": persona,
				"limits": map[string]any{"tasks": 1}, "usage": map[string]any{"tasks": 1}}), "create persona quota").str("id")
			sess := p.sessionIn(p.workspace())
			r := p.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"persona_id": persona, "input": map[string]any{"text": "over the persona's quota"}})
			if r.Code/100 != 2 {
				return nil // refused
			}
			p.waitTerminal(r.str("id"))
			if got := r.str("quota_id"); got != q {
				// Whether an accepted task did work is quota-checked-late's.
				return fmt.Errorf("a task naming a persona whose hard quota is exhausted was accepted and counted against %q, not the persona's quota %s", got, q)
			}
			return nil
		},
	} {
		probes[f] = p
	}
}

// privateInput is a user message with a public, an internal and a
// receipt_only part; the last two hold canary.
func privateInput(canary string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{
		map[string]any{"type": "text", "text": "public words", "visibility": "public"},
		map[string]any{"type": "text", "text": "internal " + canary, "visibility": "internal"},
		map[string]any{"type": "json", "value": map[string]any{"note": "receipt " + canary}, "visibility": "receipt_only"},
	}}
}

// privateMessage appends privateInput(canary) to sess and returns its id.
func (h *harness) privateMessage(sess, canary string) string {
	h.t.Helper()
	return h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": privateInput(canary)}), "append").str("id")
}

// messageIn finds message id in sess's message list.
func (h *harness) messageIn(sess, id string) map[string]any {
	h.t.Helper()
	for _, m := range h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages?limit=200", nil), "messages").list() {
		if m["id"] == id {
			return m
		}
	}
	h.t.Fatalf("message %s is not in session %s's list", id, sess)
	return nil
}

func partVisibility(m map[string]any, i int) string {
	parts, _ := m["parts"].([]any)
	if i >= len(parts) {
		return ""
	}
	pm, _ := parts[i].(map[string]any)
	v, _ := pm["visibility"].(string)
	return v
}

// redactedArtifact runs a task that makes an artifact and redacts it, and
// returns the artifact's id.
func (p *probeEnv) redactedArtifact() string {
	p.t.Helper()
	task := p.submit(p.sessionID(), []map[string]any{step("artifact", "name", "x.log", "content", "artifact-canary-6"), step("redact", "name", "x.log")}).str("id")
	p.waitTerminal(task)
	for _, e := range p.must(200, p.do("GET", "/v1/events?limit=200", nil), "events").list() {
		if e["event"] == "artifact.created" && e["task_id"] == task {
			return e["resource"].(map[string]any)["id"].(string)
		}
	}
	p.t.Fatalf("task %s made no artifact", task)
	return ""
}

// A receipt_only part is served as a descriptor in its place (type and
// visibility kept, content replaced, the original's hash recorded); an
// internal part is served marked internal; the order is kept.
func TestPrivateParts(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	created := h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/messages", map[string]any{"message": privateInput("canary-7")}), "append")
	if !strings.Contains(string(created.Raw), "canary-7") || strings.Count(string(created.Raw), "canary-7") != 1 {
		t.Errorf("the create answer should hold the internal part only: %s", created.Raw)
	}
	for _, path := range []string{"/v1/messages/" + created.str("id"), "/v1/sessions/" + sess + "/messages"} {
		r := h.must(200, h.do("GET", path, nil), path)
		if strings.Contains(string(r.Raw), "receipt canary-7") {
			t.Errorf("%s serves receipt_only content: %s", path, r.Raw)
		}
	}
	m := h.messageIn(sess, created.str("id"))
	parts := m["parts"].([]any)
	if len(parts) != 3 {
		t.Fatalf("parts = %v, want 3", parts)
	}
	in := parts[1].(map[string]any)
	if in["visibility"] != "internal" || in["text"] != "internal canary-7" {
		t.Errorf("internal part = %v, want it as sent", in)
	}
	ro := parts[2].(map[string]any)
	red, _ := ro["redaction"].(map[string]any)
	if ro["type"] != "json" || ro["visibility"] != "receipt_only" || red == nil || len(fmt.Sprint(red["sha256"])) != 64 {
		t.Errorf("receipt_only part = %v, want a json descriptor with a redaction and its hash", ro)
	}
	if v, _ := ro["value"].(map[string]any); len(v) != 0 {
		t.Errorf("receipt_only part value = %v, want it emptied", ro["value"])
	}
}

// The echo agent repeats public input only; internal and receipt_only
// content reaches no public part and no event.
func TestEchoRepeatsPublicInputOnly(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	id := h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": privateInput("canary-8")}), "submit").str("id")
	h.waitStatus(id, StatusCompleted)
	_, evs := h.taskEvents(id)
	for _, e := range evs {
		if strings.Contains(fmt.Sprint(e), "canary-8") {
			t.Errorf("event %v holds non-public input", e)
		}
	}
	for _, m := range h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages", nil), "messages").list() {
		for i, p := range m["parts"].([]any) {
			if pm := p.(map[string]any); pm["visibility"] == "public" && strings.Contains(fmt.Sprint(pm), "canary-8") {
				t.Errorf("message %v part %d is public and holds non-public input", m["id"], i)
			}
		}
	}
	if got := h.do("GET", "/v1/tasks/"+id, nil); strings.Contains(string(got.Raw), "receipt canary-8") {
		t.Errorf("the task's input serves receipt_only content: %s", got.Raw)
	}
}

// The redact step keeps the artifact readable with its envelope, replaces
// its bytes by a marker its sha256 describes, records the original hash
// and emits artifact.redacted; reasoning shows only as its summary.
func TestRedactAndReasonSteps(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	id := h.submit(sess, []map[string]any{step("artifact", "name", "r.log", "content", "secret-bytes-9"),
		step("reason", "text", "hidden-reasoning-9", "summary", "chose a path"), step("redact", "name", "r.log", "reason", "test")}).str("id")
	h.waitStatus(id, StatusCompleted)
	arts := h.must(200, h.do("GET", "/v1/artifacts?task_id="+id, nil), "artifacts").list()
	if len(arts) != 1 {
		t.Fatalf("artifacts = %v, want 1", arts)
	}
	a := arts[0]
	content := h.must(200, h.do("GET", "/v1/artifacts/"+a["id"].(string)+"/content", nil), "content")
	if string(content.Raw) != redactedText || a["sha256"] != sha256Of(redactedText) {
		t.Errorf("content %q sha256 %v, want the marker and its hash", content.Raw, a["sha256"])
	}
	red, _ := a["metadata"].(map[string]any)["redaction"].(map[string]any)
	if red["original_sha256"] != sha256Of("secret-bytes-9") || red["reason"] != "test" {
		t.Errorf("metadata.redaction = %v", red)
	}
	kinds, evs := h.taskEvents(id)
	if !contains(kinds, "artifact.redacted") || !contains(kinds, "agent.reasoning_summary") {
		t.Errorf("events %v, want artifact.redacted and agent.reasoning_summary", kinds)
	}
	for _, e := range evs {
		if strings.Contains(fmt.Sprint(e), "hidden-reasoning-9") || strings.Contains(fmt.Sprint(e), "secret-bytes-9") {
			t.Errorf("event %v shows hidden reasoning or redacted bytes", e)
		}
	}
	// No artifact of that name: the task fails, saying why.
	bad := h.submit(sess, []map[string]any{step("redact", "name", "missing.log")}).str("id")
	got := h.waitStatus(bad, StatusFailed)
	if got.Failure == nil || got.Failure.Code != "scenario_error" {
		t.Errorf("redact of a missing artifact: failure %+v, want scenario_error", got.Failure)
	}
}
