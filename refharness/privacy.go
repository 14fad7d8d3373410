package refharness

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: privacy and redaction (EXT-PRIV-001..004).
var (
	FaultPrivMarkedPublic = declare(fault.Fault{Name: "priv-marked-public",
		Doc:   "internal and receipt_only parts and artifacts are stored, and read back, as public",
		Fails: []string{"EXT-PRIV-001"}})
	FaultPrivReceiptOnlyServed = declare(fault.Fault{Name: "priv-receipt-only-served",
		Doc:   "receipt_only parts keep their content in message reads, lists and task inputs",
		Fails: []string{"EXT-PRIV-001"}})
	FaultPrivInternalInEvent = declare(fault.Fault{Name: "priv-internal-in-event",
		Doc:   "the agent.message event of an internal message carries its text",
		Fails: []string{"EXT-PRIV-001"}})
	FaultPrivSecretInPart = declare(fault.Fault{Name: "priv-secret-in-part",
		Doc:   "after a use_secret step the agent names the credential in a public message part",
		Fails: []string{"EXT-PRIV-002"}})
	FaultPrivReasoningExposed = declare(fault.Fault{Name: "priv-reasoning-exposed",
		Doc:   "a reason step publishes the hidden reasoning itself as agent.reasoning_summary",
		Fails: []string{"EXT-PRIV-003"}})
	FaultPrivRedactionDeletes = declare(fault.Fault{Name: "priv-redaction-deletes",
		Doc:   "a redact step deletes the artifact (404 by id, gone from lists) instead of redacting it",
		Fails: []string{"EXT-PRIV-004"}})
	FaultPrivRedactionSilent = declare(fault.Fault{Name: "priv-redaction-silent",
		Doc:   "a redact step redacts the artifact but emits no artifact.redacted event",
		Fails: []string{"EXT-PRIV-004"}})
)

// Privacy and redaction (EXT-PRIV-001..004; docs/interpretations.md#privacy-audiences).
// Content is public, internal or receipt_only. This Harness serves
// internal content to the callers of its tenant (authz.go hides it from
// everyone else), always marked internal, and never in an event, which
// marks nothing; receipt_only content belongs in receipts alone, so a
// receipt_only part is stored and served as a redacted descriptor (its
// type, visibility and ids kept, its content replaced, the SHA-256 of the
// original part recorded) and never reaches a read, list, event or
// stream. Hidden reasoning (the reason step) is never stored or shown: at
// most its summary is published. A redacted artifact (the redact step)
// stays readable by id with its envelope, its bytes replaced by a marker,
// and an artifact.redacted event records the redaction.

// redactedText stands in for withheld content.
const redactedText = "[REDACTED]"

// partDescriptive are the Part members that describe content rather than
// carry it; a redacted part keeps them.
var partDescriptive = map[string]bool{"type": true, "visibility": true, "tool_call_id": true, "artifact_id": true,
	"mime_type": true, "status": true, "name": true}

// redactPart is the descriptor that replaces a receipt_only part: every
// content member is replaced by an empty value of its JSON type (so the
// part keeps its schema), and "redaction" says why and proves what was
// there by the SHA-256 of the original part's JSON.
func redactPart(p map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range p {
		if partDescriptive[k] {
			out[k] = v
			continue
		}
		switch v.(type) {
		case string:
			out[k] = redactedText
		case map[string]any:
			out[k] = map[string]any{}
		case []any:
			out[k] = []any{}
		default:
			out[k] = nil
		}
	}
	raw, _ := json.Marshal(p) // map keys sorted: the same part hashes the same
	out["redaction"] = map[string]any{"reason": "receipt_only", "sha256": sha256hex(raw)}
	return out
}

// privateParts is how message parts are stored: receipt_only parts as
// redacted descriptors (FaultPrivReceiptOnlyServed keeps their content),
// the others as sent (FaultPrivMarkedPublic relabels every part public).
func (s *Server) privateParts(parts []map[string]any) []map[string]any {
	out := make([]map[string]any, len(parts))
	for i, p := range parts {
		vis, _ := p["visibility"].(string)
		if vis == "receipt_only" && !s.opts.Faults.Has(FaultPrivReceiptOnlyServed) {
			p = redactPart(p)
		}
		if vis != "public" && s.opts.Faults.Has(FaultPrivMarkedPublic) {
			cp := make(map[string]any, len(p))
			for k, v := range p {
				cp[k] = v
			}
			cp["visibility"] = "public"
			p = cp
		}
		out[i] = p
	}
	return out
}

// privateInput is a task's input as stored: its parts, when it is a
// message, through privateParts.
func (s *Server) privateInput(in map[string]any) map[string]any {
	raw, ok := in["parts"].([]any)
	if !ok {
		return in
	}
	parts := make([]map[string]any, 0, len(raw))
	for _, p := range raw {
		pm, ok := p.(map[string]any)
		if !ok {
			return in // not a message after all: kept as sent
		}
		parts = append(parts, pm)
	}
	out := make(map[string]any, len(in))
	for k, v := range in {
		out[k] = v
	}
	list := make([]any, 0, len(parts))
	for _, p := range s.privateParts(parts) {
		list = append(list, p)
	}
	out["parts"] = list
	return out
}

// storedVisibility is the visibility an artifact registered with vis is
// stored with (FaultPrivMarkedPublic: public).
func (s *Server) storedVisibility(vis string) string {
	if s.opts.Faults.Has(FaultPrivMarkedPublic) {
		return "public"
	}
	return vis
}

// publicInputText is what the echo agent repeats: the text of the input's
// public parts only (internal and receipt_only content is not the agent's
// to publish), or the input as inputText renders it when it has no parts.
func publicInputText(input any) string {
	m, _ := input.(map[string]any)
	parts, ok := m["parts"].([]any)
	if !ok {
		return inputText(input)
	}
	var texts []string
	for _, p := range parts {
		pm, _ := p.(map[string]any)
		if txt, ok := pm["text"].(string); ok && pm["visibility"] == "public" {
			texts = append(texts, txt)
		}
	}
	return strings.Join(texts, " ")
}

// agentMessageLocked appends an agent message with parts to task t's
// session, announced by an agent.message event with payload.
func (s *Server) agentMessageLocked(t *Task, parts []map[string]any, payload map[string]any) (*commit, bool) {
	se, ok := s.st.sessions.get(t.SessionID)
	if !ok {
		return nil, false
	}
	cp := *se
	cm := &commit{}
	msg := s.appendMessage(cm, &cp, t.ID, "agent", parts, nil, agentActor)
	cm.Puts = append(cm.Puts, put{Session: &cp})
	payload["message_id"] = msg.ID
	cm.Events = append(cm.Events, s.newEvent("agent.message", Pointer{"task", t.ID}, payload, t.WorkspaceID, t.SessionID, t.ID, agentActor))
	return cm, true
}

// runningLocked is task id while the worker may still act on it.
func (s *Server) runningLocked(ctx context.Context, id string) (*Task, bool) {
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		return nil, false
	}
	return t, true
}

// commitAndWait commits cm (s.mu held on entry, released on return) and
// waits until it is durable.
func (s *Server) commitAndWait(cm *commit) bool {
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

// emitPrivate is the emit step for an internal or receipt_only message:
// the part carries the class, and its agent.message event carries no
// text, since an event marks no class (FaultPrivInternalInEvent: the
// text of an internal message rides in the event).
func (s *Server) emitPrivate(ctx context.Context, id string, i, n int, text, vis string) bool {
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	payload := map[string]any{"index": i, "count": n, "visibility": vis}
	if vis == "internal" && s.opts.Faults.Has(FaultPrivInternalInEvent) {
		payload["text"] = text
	}
	cm, ok := s.agentMessageLocked(t, []map[string]any{{"type": "text", "text": text, "visibility": vis}}, payload)
	if !ok {
		s.mu.Unlock()
		return false
	}
	return s.commitAndWait(cm)
}

// narrateSecret follows a use_secret step: the clean agent says nothing
// more; under FaultPrivSecretInPart it announces the call in a public part
// that names the credential (its agent.message event names only the
// message, so only the part leaks).
func (s *Server) narrateSecret(ctx context.Context, id string, st scenario.Step) bool {
	if !s.opts.Faults.Has(FaultPrivSecretInPart) {
		return true
	}
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	text := "called the tool with credential " + st.Secret
	cm, ok := s.agentMessageLocked(t, []map[string]any{{"type": "text", "text": text, "visibility": "public"}}, map[string]any{"index": 0, "count": 1})
	if !ok {
		s.mu.Unlock()
		return false
	}
	return s.commitAndWait(cm)
}

// reason runs a reason step: the agent thinks st.Text, which nothing
// stores or shows, and publishes st.Summary, when set, as an
// agent.reasoning_summary event (FaultPrivReasoningExposed: the reasoning
// itself is published as the summary).
func (s *Server) reason(ctx context.Context, id string, st scenario.Step) bool {
	summary := st.Summary
	if s.opts.Faults.Has(FaultPrivReasoningExposed) {
		summary = st.Text
	}
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	if summary == "" {
		s.mu.Unlock()
		return true
	}
	cm := &commit{Events: []*Event{s.newEvent("agent.reasoning_summary", Pointer{"task", id},
		map[string]any{"summary": summary, "redacted": true}, t.WorkspaceID, t.SessionID, id, agentActor)}}
	return s.commitAndWait(cm)
}

// redact runs a redact step: this task's artifact named st.Name (its
// latest without a name) keeps its id and envelope (kind, mime_type,
// visibility), its bytes are replaced by a marker that its sha256 and
// size_bytes then describe, metadata.redaction records the reason, time
// and the original hash, and an artifact.redacted event says so.
// FaultPrivRedactionDeletes deletes the artifact instead;
// FaultPrivRedactionSilent emits no event. No such artifact fails the task.
func (s *Server) redact(ctx context.Context, id string, st scenario.Step, rn *runner) bool {
	reason := st.Reason
	if reason == "" {
		reason = "redacted by the agent"
	}
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	at := -1
	for i, a := range rn.artifacts {
		if name, _ := a.Metadata["name"].(string); st.Name == "" || name == st.Name {
			at = i
		}
	}
	if at < 0 {
		s.mu.Unlock()
		msg := fmt.Sprintf("redact: the task has no artifact named %q", st.Name)
		s.move(ctx, id, StatusFailed, nil, &ending{summary: "scenario_error: " + msg, failure: &Failure{Code: "scenario_error", Message: msg}})
		return false
	}
	cur, ok := s.st.artifacts.get(rn.artifacts[at].ID)
	if !ok {
		s.mu.Unlock()
		return false
	}
	now := s.now()
	marker := []byte(redactedText)
	a := *cur
	a.Metadata = map[string]any{}
	for k, v := range cur.Metadata {
		a.Metadata[k] = v
	}
	a.Metadata["redaction"] = map[string]any{"reason": reason, "redacted_at": now, "original_sha256": nullableStr(cur.SHA256)}
	a.SHA256, a.SizeBytes, a.URI, a.UpdatedAt = ptr(sha256hex(marker)), ptr(int64(len(marker))), nil, now
	cm := &commit{Puts: []put{{Artifact: &a}}, Blobs: map[string][]byte{a.ID: marker}}
	rn.artifacts[at] = &a
	if s.opts.Faults.Has(FaultPrivRedactionDeletes) {
		cm = &commit{Deletes: []Pointer{{"artifact", a.ID}}}
		rn.artifacts = append(rn.artifacts[:at:at], rn.artifacts[at+1:]...)
	}
	if !s.opts.Faults.Has(FaultPrivRedactionSilent) {
		cm.Events = append(cm.Events, s.newEvent("artifact.redacted", Pointer{"artifact", a.ID},
			map[string]any{"artifact_id": a.ID, "reason": reason, "kind": a.Kind, "sha256": a.SHA256}, t.WorkspaceID, t.SessionID, id, agentActor))
	}
	return s.commitAndWait(cm)
}

func nullableStr(p *string) any {
	if p == nil {
		return nil
	}
	return *p
}
