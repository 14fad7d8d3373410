package refharness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: personas, skills, and the idempotency of Extended
// writes.
var (
	FaultPersonaPatchLost = declare(fault.Fault{Name: "persona-patch-lost",
		Doc:   "PATCH /v1/personas/{id} answers the change but does not store it",
		Fails: []string{"EXT-PERSONA-001"}})
	FaultPersonaToolsIgnored = declare(fault.Fault{Name: "persona-tools-ignored",
		Doc:   "tasks run tools and capabilities their Persona does not grant",
		Fails: []string{"EXT-PERSONA-002"}})
	// Acting without the approval also breaks the authorization rule that side
	// effects needing approval wait for it (EXT-AUTHZ-007).
	FaultPersonaApprovalSkipped = declare(fault.Fault{Name: "persona-approval-skipped",
		Doc:   "under act_with_approval a tool runs without waiting for an approval",
		Fails: []string{"EXT-AUTHZ-007", "EXT-PERSONA-003"}})
	FaultPersonaShadowActs = declare(fault.Fault{Name: "persona-shadow-acts",
		Doc:   "under shadow and suggest a tool's side effect is carried out",
		Fails: []string{"EXT-PERSONA-003"}})
	FaultPersonaReceiptSkipped = declare(fault.Fault{Name: "persona-receipt-skipped",
		Doc:   "tasks naming a Persona whose receipt_policy is required end without a receipt",
		Fails: []string{"EXT-PERSONA-004"}})
	FaultArtifactIdempotencyIgnored = declare(fault.Fault{Name: "artifact-idempotency-ignored",
		Doc:       "POST /v1/artifacts ignores Idempotency-Key: a retry registers a second artifact",
		Fails:     []string{"EXT-IDEM-001", "EXT-IDEM-006", "EXT-IDEM-007"},
		Tolerated: []string{"EXT-IDEM-004"},
		Why:       "a write that ignores the key also carries out the key reused with another body, which EXT-IDEM-004 wants refused"})
	FaultExtIdempotencyIgnored = declare(fault.Fault{Name: "ext-idempotency-ignored",
		Doc:       "persona create/patch, branch create, fork and truncate ignore Idempotency-Key",
		Fails:     []string{"EXT-IDEM-003", "EXT-IDEM-006", "EXT-IDEM-007"},
		Tolerated: []string{"EXT-IDEM-004"},
		Why:       "a write that ignores the key also carries out the key reused with another body, which EXT-IDEM-004 wants refused"})
	FaultExtIdempotencyKeyRefused = declare(fault.Fault{Name: "ext-idempotency-key-refused",
		Doc:       "PATCH persona, PATCH workspace and fork answer 400 invalid_request \"does not take an Idempotency-Key\" (no param) to a write carrying one, and carry it out without",
		Fails:     []string{"EXT-IDEM-003"},
		Tolerated: []string{"EXT-IDEM-006", "EXT-IDEM-007"},
		Why:       "the same 400 answers the keyed retries fired at once, which EXT-IDEM-006 and EXT-IDEM-007 want acted on once or refused with 409"})
	FaultArtifactReuseReplays = declare(fault.Fault{Name: "artifact-idempotency-reuse-replays",
		Doc:       "POST /v1/artifacts with a reused Idempotency-Key and another body replays the first answer instead of 409 idempotency_key_reused",
		Fails:     []string{"EXT-IDEM-004"},
		Tolerated: []string{"EXT-IDEM-007"},
		Why:       "the same replay answers a different body fired at once with the key, which EXT-IDEM-007 wants refused with 409"})
	FaultApprovalIdempotencyIgnored = declare(fault.Fault{Name: "approval-idempotency-ignored",
		Doc:   "a retried tool_confirmation with the same Idempotency-Key is recorded twice",
		Fails: []string{"EXT-IDEM-002", "EXT-IDEM-006", "EXT-IDEM-007"}})
	FaultSkillSchemaNotObject = declare(fault.Fault{Name: "skill-schema-not-object",
		Doc:   "skills render output_schema as a string, not a JSON Schema object or null",
		Fails: []string{"EXT-SKILL-001"}})
	FaultPermissionIdempotencyIgnored = declare(fault.Fault{Name: "permission-respond-idempotency-ignored",
		Doc:   "respondPermissionRequest ignores Idempotency-Key: the retry of an answer is refused 409",
		Fails: []string{"EXT-IDEM-002"}})
	// The race of FaultDuplicateOnConcurrentRetry (routes.go) on the
	// Extended writes: extWriteRoutes.
	FaultExtDuplicateOnConcurrentRetry = declare(fault.Fault{Name: "ext-duplicate-on-concurrent-retry",
		Doc:   "Extended writes look their Idempotency-Key up on arrival and record it once the write is durable: retries fired at once all act; sequential retries work",
		Fails: []string{"EXT-IDEM-006", "EXT-IDEM-007"}, Race: true})
)

// extWriteRoutes are the Extended writes FaultExtDuplicateOnConcurrentRetry
// races (method and route pattern).
var extWriteRoutes = map[string]bool{
	"POST artifacts": true, "POST permission-requests/{}/respond": true, "POST tasks/{}/messages": true,
	"POST personas": true, "PATCH personas/{}": true, "POST workspaces": true, "PATCH workspaces/{}": true,
	"POST sessions/{}/branches": true, "POST sessions/{}/fork": true, "POST sessions/{}/truncate": true,
	"POST memories": true, "POST vaults": true,
}

// Personas (EXT-PERSONA-001…004) are policy: the tools and capabilities a
// Task naming one may use, its autonomy tier and its receipt policy. The
// policy is enforced where a task acts: the scenario step tool_call
// (docs/scenarios.md), whose side effect is an artifact owned by the task.
//
//   - A tool not in tools, or a capability not in capabilities ("*" grants
//     all), is denied: tool.denied with reason policy_violation, no effect.
//   - act_auto runs the tool; act_with_approval asks first
//     (tool.approval_required, AUTH_REQUIRED) and runs it only when approved;
//     shadow and suggest never carry out a side effect (tool.denied with
//     reason autonomy_tier).
//   - receipt_policy disabled issues no receipt; required and optional get
//     the receipt every task of this harness gets.
//
// A task without a Persona is under no persona policy (the echo agent).

var (
	autonomyTiers  = []string{"shadow", "suggest", "act_with_approval", "act_auto"}
	receiptPolicys = []string{"required", "optional", "disabled"}
)

func (s *Server) createPersona(c *call) (*result, *apiError) {
	b := c.body
	p := &Persona{}
	for _, f := range []struct {
		name string
		dst  *string
	}{{"name", &p.Name}, {"version", &p.Version}, {"entry_workflow", &p.EntryWorkflow}, {"description", &p.Description}} {
		v, _, e := b.str(f.name, true)
		if e != nil {
			return nil, e
		}
		*f.dst = v
	}
	var e *apiError
	if p.AutonomyTier, _, e = b.enum("autonomy_tier", true, autonomyTiers...); e != nil {
		return nil, e
	}
	if p.ReceiptPolicy, _, e = b.enum("receipt_policy", true, receiptPolicys...); e != nil {
		return nil, e
	}
	if e := personaPolicy(b, p); e != nil {
		return nil, e
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	if ref, ok, e := b.str("module_ref", false); e != nil {
		return nil, e
	} else if ok {
		meta["module_ref"] = ref // kept where a client can read it back
	}
	if p.Tools == nil {
		p.Tools = []string{}
	}
	if p.Capabilities == nil {
		p.Capabilities = []string{}
	}
	p.Envelope = s.envelope("persona", "persona", meta)
	return &result{status: http.StatusCreated, body: p, c: &commit{Puts: []put{{Persona: p}}}}, nil
}

// personaPolicy reads the policy members a create or a PATCH may set:
// tools, capabilities and quota_id (and, on PATCH, the tiers, which the
// caller reads). The OpenAPI's request schemas do not list tools and
// capabilities; they are the Persona's own fields, taken as extensions.
func personaPolicy(b obj, p *Persona) *apiError {
	if v, ok, e := b.strings("tools"); e != nil {
		return e
	} else if ok {
		p.Tools = v
	}
	if v, ok, e := b.strings("capabilities"); e != nil {
		return e
	} else if ok {
		p.Capabilities = v
	}
	if q, ok, e := b.str("quota_id", false); e != nil {
		return e
	} else if ok {
		p.QuotaID = ptr(q)
	} else if b.has("quota_id") {
		p.QuotaID = nil
	}
	return nil
}

func (s *Server) patchPersona(c *call) (*result, *apiError) {
	old, ok := s.st.personas.get(c.params[0])
	if !ok {
		return nil, notFound("persona", c.params[0])
	}
	p := *old
	b := c.body
	if v, ok, e := b.str("description", false); e != nil {
		return nil, e
	} else if ok {
		p.Description = v
	}
	if v, ok, e := b.enum("receipt_policy", false, receiptPolicys...); e != nil {
		return nil, e
	} else if ok {
		p.ReceiptPolicy = v
	}
	if v, ok, e := b.enum("autonomy_tier", false, autonomyTiers...); e != nil {
		return nil, e
	} else if ok {
		p.AutonomyTier = v
	}
	if e := personaPolicy(b, &p); e != nil {
		return nil, e
	}
	if b.has("metadata") {
		meta, e := b.metadata()
		if e != nil {
			return nil, e
		}
		p.Metadata = meta
	}
	p.UpdatedAt = s.now()
	if s.opts.Faults.Has(FaultPersonaPatchLost) {
		return &result{status: http.StatusOK, body: &p}, nil
	}
	return &result{status: http.StatusOK, body: &p, c: &commit{Puts: []put{{Persona: &p}}}}, nil
}

// grants reports whether a persona's list grants name ("*" grants all).
func grants(list []string, name string) bool {
	return slices.Contains(list, name) || slices.Contains(list, "*")
}

// taskPersonaLocked is the Persona task t names, if any.
func (s *Server) taskPersonaLocked(t *Task) *Persona {
	if t == nil || t.PersonaID == nil {
		return nil
	}
	p, _ := s.st.personas.get(*t.PersonaID)
	return p
}

// noReceiptLocked reports whether task t ends without a receipt: its
// Persona's receipt_policy is disabled (or, under
// FaultPersonaReceiptSkipped, required).
func (s *Server) noReceiptLocked(t *Task) bool {
	p := s.taskPersonaLocked(t)
	if p == nil {
		return false
	}
	return p.ReceiptPolicy == "disabled" || p.ReceiptPolicy == "required" && s.opts.Faults.Has(FaultPersonaReceiptSkipped)
}

// toolCall runs a tool_call step under the task's persona policy.
func (s *Server) toolCall(ctx context.Context, id string, st scenario.Step, rn *runner) bool {
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	callID := s.ids.NewID("toolcall")
	s.mu.RLock()
	t, ok := s.st.tasks.get(id)
	var p *Persona
	if ok {
		p = s.taskPersonaLocked(t)
	}
	s.mu.RUnlock()
	if !ok {
		return false
	}
	ev := func(kind string, pl map[string]any) *Event {
		pl["tool_call_id"], pl["name"] = callID, st.Tool
		return s.newEvent(kind, Pointer{"task", id}, pl, t.WorkspaceID, t.SessionID, id, agentActor)
	}
	requested := ev("tool.requested", map[string]any{"input": input, "capability": nullable(st.Capability)})
	tier := "act_auto"
	if p != nil {
		tier = p.AutonomyTier
		var why string
		switch {
		case s.opts.Faults.Has(FaultPersonaToolsIgnored):
		case !grants(p.Tools, st.Tool):
			why = fmt.Sprintf("persona %s does not grant tool %q", p.ID, st.Tool)
		case st.Capability != "" && !grants(p.Capabilities, st.Capability):
			why = fmt.Sprintf("persona %s does not grant capability %q", p.ID, st.Capability)
		}
		if why != "" {
			return s.taskEvents(ctx, id, requested, ev("tool.denied", map[string]any{"reason": "policy_violation", "message": why}))
		}
	}
	switch tier {
	case "shadow", "suggest":
		if !s.opts.Faults.Has(FaultPersonaShadowActs) {
			return s.taskEvents(ctx, id, requested, ev("tool.denied", map[string]any{"reason": "autonomy_tier", "autonomy_tier": tier,
				"message": fmt.Sprintf("autonomy tier %s carries out no side effect", tier)}))
		}
	case "act_with_approval":
		if s.opts.Faults.Has(FaultPersonaApprovalSkipped) {
			break
		}
		if !s.move(ctx, id, StatusAuthRequired, map[string]any{"reason": "tool_approval", "tool_call_id": callID, "name": st.Tool}, nil,
			requested, ev("tool.approval_required", map[string]any{})) {
			return false
		}
		msg, ok := s.await(ctx, rn, "tool_confirmation")
		if !ok {
			return false
		}
		if denied(msg) && !s.ignoresDenial(msg) {
			return s.move(ctx, id, StatusWorking, nil, nil, ev("tool.denied", map[string]any{"reason": "user_denied", "message_id": msg.ID}))
		}
		if !s.move(ctx, id, StatusWorking, nil, nil, ev("tool.approved", map[string]any{"message_id": msg.ID})) {
			return false
		}
		return s.toolEffect(ctx, id, st, callID, rn, ev)
	}
	if !s.taskEvents(ctx, id, requested) {
		return false
	}
	return s.toolEffect(ctx, id, st, callID, rn, ev)
}

// taskEvents commits events of running task id.
func (s *Server) taskEvents(ctx context.Context, id string, evs ...*Event) bool {
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	seq, err := s.commitLocked(&commit{Events: evs})
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

// toolEffect carries out a tool call's side effect: the tool writes an
// artifact owned by the task (metadata.tool_call_id names the call), then
// tool.completed names it.
func (s *Server) toolEffect(ctx context.Context, id string, st scenario.Step, callID string, rn *runner, ev func(string, map[string]any) *Event) bool {
	content := []byte(st.Content)
	if len(content) == 0 {
		content = []byte("written by " + st.Tool)
	}
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	sum := sha256hex(content)
	a := &Artifact{Envelope: s.envelope("artifact", "artifact", map[string]any{"tool_call_id": callID, "tool": st.Tool}), Kind: "file",
		MimeType: "text/plain", Visibility: "public", SHA256: ptr(sum), SizeBytes: ptr(int64(len(content))),
		WorkspaceID: ptr(t.WorkspaceID), SessionID: ptr(t.SessionID), TaskID: ptr(id), BranchID: t.BranchID}
	cm := &commit{Puts: []put{{Artifact: a}}, Blobs: map[string][]byte{a.ID: content}, Events: []*Event{
		s.newEvent("artifact.created", Pointer{"artifact", a.ID}, map[string]any{"kind": a.Kind, "sha256": sum}, t.WorkspaceID, t.SessionID, id, agentActor),
		ev("tool.completed", map[string]any{"output": map[string]any{"artifact_id": a.ID}, "status": "ok"}),
	}}
	rn.artifacts = append(rn.artifacts, a)
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

// keyRefused is FaultExtIdempotencyKeyRefused's answer to a write of
// route rt that carries an Idempotency-Key (nil when it takes the key).
func (s *Server) keyRefused(c *call, rt route) *apiError {
	w := rt.method + " " + rt.pattern
	if c.idem == "" || !s.opts.Faults.Has(FaultExtIdempotencyKeyRefused) ||
		!slices.Contains([]string{"PATCH personas/{}", "PATCH workspaces/{}", "POST sessions/{}/fork"}, w) {
		return nil
	}
	if _, _, found := s.findLocked(strings.Split(rt.pattern, "/")[0], c.params[0]); !found {
		return nil // the handler's 404: the fault's check sits after the lookup
	}
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request", Message: c.r.Method + " " + c.target + " does not take an Idempotency-Key"}
}

// reuseReplays reports whether FaultArtifactReuseReplays makes route rt
// replay a key's first answer to a request with another body.
func (s *Server) reuseReplays(rt route) bool {
	return s.opts.Faults.Has(FaultArtifactReuseReplays) && rt.method == http.MethodPost && rt.pattern == "artifacts"
}

// keyIgnored reports whether a fault makes route rt ignore Idempotency-Key.
func (s *Server) keyIgnored(c *call, rt route) bool {
	w := rt.method + " " + rt.pattern
	switch {
	case s.opts.Faults.Has(FaultArtifactIdempotencyIgnored) && w == "POST artifacts":
		return true
	case s.opts.Faults.Has(FaultExtIdempotencyIgnored):
		return slices.Contains([]string{"POST personas", "PATCH personas/{}", "POST sessions/{}/branches", "POST sessions/{}/fork", "POST sessions/{}/truncate"}, w)
	case s.opts.Faults.Has(FaultPermissionIdempotencyIgnored) && w == "POST permission-requests/{}/respond":
		return true
	case s.opts.Faults.Has(FaultApprovalIdempotencyIgnored) && w == "POST tasks/{}/messages":
		return c.body.m["kind"] == "tool_confirmation"
	case s.opts.Faults.Has(FaultReplayIdempotencyIgnored) && w == "POST tasks/{}/replay":
		return true
	}
	return false
}

// faultyMessageList is a session's message list under
// FaultMessagesNewestFirst (newest first), FaultForkSharesTranscript (a
// fork reads its parent's live transcript) or FaultTranscriptIndexedLate
// (the session's transcript index, written after each append: handlers.go). Cursors are positions in it.
func (s *Server) faultyMessageList(c *call, id string) (any, *apiError) {
	if se, _ := s.st.sessions.get(id); s.opts.Faults.Has(FaultForkSharesTranscript) && se.ParentSessionID != nil {
		id = *se.ParentSessionID
	}
	ids := slices.Clone(s.st.sessMsgs[id])
	if s.opts.Faults.Has(FaultMessagesNewestFirst) {
		slices.Reverse(ids)
	}
	limit, after, e := s.pageArgs(c)
	if e != nil {
		return nil, e
	}
	l := &List{Object: "list", Data: []any{}}
	for i := after + 1; i < len(ids); i++ {
		if len(l.Data) == limit {
			l.Page = Page{HasMore: true, NextCursor: ptr(encodeCursor(i - 1))}
			break
		}
		if m, ok := s.st.messages.get(ids[i]); ok {
			l.Data = append(l.Data, m)
		}
	}
	return l, nil
}

// skillView renders a skill; FaultSkillSchemaNotObject gives it an
// output_schema that is neither a JSON Schema object nor null.
func (s *Server) skillView(sk *Skill) any {
	if !s.opts.Faults.Has(FaultSkillSchemaNotObject) {
		return sk
	}
	b, err := json.Marshal(sk)
	if err != nil {
		return sk
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return sk
	}
	m["output_schema"] = "none"
	return m
}
