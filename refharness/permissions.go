package refharness

import (
	"fmt"
	"net/http"
	"time"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: host-mediated input and authorization (permission
// requests).
var (
	FaultPermissionAnswerLost = declare(fault.Fault{Name: "permission-answer-lost",
		Doc:         "respondPermissionRequest answers 200 and records the decision, but the waiting task never receives it",
		Fails:       []string{"EXT-HOST-001"},
		Tolerated:   []string{"EXT-WS-008"},
		Why:         "the task never leaves AUTH_REQUIRED, so every wait for it lasts the whole task timeout (3 s is ample for the reference Harness); a WebSocket answer is the REST answer (docs/websocket.md section 4), so it is lost too: EXT-WS-008 may fail with it",
		TaskTimeout: 3 * time.Second})
	FaultPermissionNotListed = declare(fault.Fault{Name: "permission-request-not-listed",
		Doc:   "a task waiting for an approval opens no permission request: the lists stay empty",
		Fails: []string{"EXT-HOST-001"}})
	FaultApprovalDenialIgnored = declare(fault.Fault{Name: "approval-denial-ignored",
		Doc:   "a denied tool approval runs the tool anyway (tool.approved, the side effect)",
		Fails: []string{"EXT-AUTHZ-007"}})
)

// Host-mediated authorization (issue 10): permission requests, the later
// OpenAPI revision's listPermissionRequests, listTaskPermissionRequests and
// respondPermissionRequest.
//
// Every move of a task to AUTH_REQUIRED opens one PermissionRequest in the
// same commit (a tool approval of the tool_approval or tool_call steps, or
// the auth_required step), so a host that sees the task waiting finds the
// request listed. It is answered either way the protocol offers, and both
// ways are one decision recorded once:
//
//   - POST /v1/permission-requests/{id}/respond records the decision as a
//     tool_confirmation message of the task (transcript and EventLog see it,
//     as the OpenAPI says: "the same runtime path as … harn.hitl.respond"),
//     resolves the request and hands the message to the waiting task;
//   - a tool_confirmation sent with POST /v1/tasks/{id}/messages resolves
//     the task's oldest pending request in its own commit (one queued
//     before the request exists resolves it when it opens).
//
// A resolved request is answered once: a second response is 409 conflict,
// unless it is a retry with the first one's Idempotency-Key, which the
// idempotency layer (routes.go) answers with the first response.

// PermissionRequest is a host-mediated approval a task waits for.
type PermissionRequest struct {
	Envelope
	SessionID *string `json:"session_id"`
	TaskID    *string `json:"task_id"`
	Status    string  `json:"status"` // pending, approved, denied
	Source    string  `json:"source"` // hitl: the Harness's own human-in-the-loop request
	Action    any     `json:"action"`
	Request   any     `json:"request"`
	Response  any     `json:"response"`
}

// Permission request statuses.
const (
	PermPending  = "pending"
	PermApproved = "approved"
	PermDenied   = "denied"
)

// permState is the projection of the permission requests and of the
// workspace files (local.go).
type permState struct {
	reqs   *table[PermissionRequest]
	byTask map[string][]string                  // task id -> request ids, in creation order
	files  map[string]map[string]*WorkspaceFile // workspace id -> path -> file
	// streams counts open SSE streams by task id: runtime state, not part
	// of the projection (FaultInputRefusedWhileStreaming, hostev.go).
	streams map[string]int
	// openedBy and opens link a request to the task.auth_required event
	// of the same commit, the Event that opened the wait (core.go: a
	// transport's request frames name it); toolInput is the input of the
	// tool call a tool approval waits on (from its tool.requested event).
	openedBy  map[string]string // request id -> event id
	opens     map[string]string // event id -> request id
	toolInput map[string]any    // request id -> tool call input
}

func newPermState() permState {
	return permState{reqs: newTable[PermissionRequest](), byTask: map[string][]string{}, files: map[string]map[string]*WorkspaceFile{}, streams: map[string]int{},
		openedBy: map[string]string{}, opens: map[string]string{}, toolInput: map[string]any{}}
}

func (p *permState) apply(c *commit) {
	for _, f := range c.Files {
		if p.files[f.WorkspaceID] == nil {
			p.files[f.WorkspaceID] = map[string]*WorkspaceFile{}
		}
		p.files[f.WorkspaceID][f.Path] = f
	}
	for _, pr := range c.Perms {
		if _, ok := p.reqs.rows[pr.ID]; !ok && pr.TaskID != nil {
			p.byTask[*pr.TaskID] = append(p.byTask[*pr.TaskID], pr.ID)
			p.linkOpening(pr, c.Events)
		}
		p.reqs.put(pr.ID, pr)
	}
}

// linkOpening records which event of its commit opened the new request pr.
func (p *permState) linkOpening(pr *PermissionRequest, evs []*Event) {
	action, _ := pr.Action.(map[string]any)
	call, _ := action["tool_call_id"].(string)
	for _, e := range evs {
		if e.TaskID == nil || *e.TaskID != *pr.TaskID {
			continue
		}
		switch {
		case e.Event == "task.auth_required":
			p.openedBy[pr.ID], p.opens[e.ID] = e.ID, pr.ID
		case e.Event == "tool.requested" && call != "" && e.Payload["tool_call_id"] == call:
			p.toolInput[pr.ID] = e.Payload["input"]
		}
	}
}

func (p *permState) used(id string) bool { return p.reqs.rows[id] != nil }

// pendingOf is the oldest pending request of task id, or nil.
func (p *permState) pendingOf(id string) *PermissionRequest {
	for _, rid := range p.byTask[id] {
		if pr, ok := p.reqs.get(rid); ok && pr.Status == PermPending {
			return pr
		}
	}
	return nil
}

func (s *Server) permissionRoutes() []route {
	return []route{
		{method: "GET", pattern: "permission-requests", get: s.listPermissionRequests},
		{method: "GET", pattern: "tasks/{}/permission-requests", get: s.listTaskPermissionRequests},
		{method: "POST", pattern: "permission-requests/{}/respond", write: s.respondPermissionRequest},
	}
}

func (s *Server) listPermissionRequests(c *call) (any, *apiError) {
	sess, task, status := c.q.Get("session_id"), c.q.Get("task_id"), c.q.Get("status")
	return listPage(s, c, s.st.pr.reqs, func(pr *PermissionRequest) bool {
		return eqOpt(pr.SessionID, sess) && eqOpt(pr.TaskID, task) && (status == "" || pr.Status == status)
	})
}

func (s *Server) listTaskPermissionRequests(c *call) (any, *apiError) {
	id := c.params[0]
	if _, ok := s.st.tasks.get(id); !ok {
		return nil, notFound("task", id)
	}
	if s.opts.Faults.Has(FaultPermissionNotListed) {
		return s.emptyList(c)
	}
	return listPage(s, c, s.st.pr.reqs, func(pr *PermissionRequest) bool { return eqOpt(pr.TaskID, id) })
}

// openPermissionLocked adds the PermissionRequest of task t's move to
// AUTH_REQUIRED (payload: the transition event's payload) to cm. A
// tool_confirmation already queued for the task answers it at once.
func (s *Server) openPermissionLocked(cm *commit, t *Task, payload map[string]any) {
	action := map[string]any{"type": "authorization", "reason": payload["reason"]}
	if id, ok := payload["tool_call_id"].(string); ok {
		action = map[string]any{"type": "tool_call", "tool_call_id": id, "name": payload["name"]}
	}
	pr := &PermissionRequest{Envelope: s.envelope("permreq", "permission_request", nil), SessionID: ptr(t.SessionID), TaskID: ptr(t.ID),
		Status: PermPending, Source: "hitl", Action: action,
		Request: map[string]any{"reason": payload["reason"], "prompt": fmt.Sprintf("task %s asks for approval (%v)", t.ID, payload["reason"])}}
	if rn := s.runners[t.ID]; rn != nil {
		for i, k := range rn.kinds {
			if k == "tool_confirmation" {
				s.resolvePermission(pr, rn.inbox[i], "", nil)
				break
			}
		}
	}
	cm.Perms = append(cm.Perms, pr)
}

// resolveByMessageLocked resolves task t's oldest pending request with the
// tool_confirmation msg (POST /v1/tasks/{id}/messages) into cm.
func (s *Server) resolveByMessageLocked(cm *commit, t *Task, msg *Message) {
	if pr := s.st.pr.pendingOf(t.ID); pr != nil {
		cp := *pr
		s.resolvePermission(&cp, msg, "", nil)
		cm.Perms = append(cm.Perms, &cp)
	}
}

// resolvePermission sets pr's status and response from the confirmation msg.
func (s *Server) resolvePermission(pr *PermissionRequest, msg *Message, actor string, extra map[string]any) {
	pr.Status = PermApproved
	if denied(msg) {
		pr.Status = PermDenied
	}
	resp := map[string]any{"approved": pr.Status == PermApproved, "message_id": msg.ID}
	for k, v := range extra {
		resp[k] = v
	}
	if actor != "" {
		resp["responded_by"] = actor
	}
	pr.Response = resp
	pr.UpdatedAt = s.now()
}

// decision reads a PermissionResponseRequest: approved (boolean), or the
// ACP-style outcome; both present must agree.
func decision(b obj) (bool, *apiError) {
	var fromBool, fromOutcome *bool
	if v, ok := b.m["approved"]; ok && v != nil {
		a, isBool := v.(bool)
		if !isBool {
			return false, badRequest("approved", "field approved: got %s, want a boolean", jsonv.AKind(v))
		}
		fromBool = &a
	}
	out, ok, e := b.enum("outcome", false, "approved", "approve", "selected", "denied", "deny", "rejected")
	if e != nil {
		return false, e
	}
	if ok {
		a := out == "approved" || out == "approve" || out == "selected"
		fromOutcome = &a
	}
	switch {
	case fromBool != nil && fromOutcome != nil && *fromBool != *fromOutcome:
		return false, badRequest("outcome", "approved = %v and outcome = %q disagree", *fromBool, out)
	case fromBool != nil:
		return *fromBool, nil
	case fromOutcome != nil:
		return *fromOutcome, nil
	}
	return false, badRequest("approved", "missing the decision: send approved (boolean) or outcome")
}

func (s *Server) respondPermissionRequest(c *call) (*result, *apiError) {
	old, ok := s.st.pr.reqs.get(c.params[0])
	if !ok {
		return nil, notFound("permission request", c.params[0])
	}
	approved, e := decision(c.body)
	if e != nil {
		return nil, e
	}
	extra := map[string]any{}
	for _, f := range []string{"reviewer", "reason"} {
		v, ok, e := c.body.str(f, false)
		if e != nil {
			return nil, e
		}
		if ok {
			extra[f] = v
		}
	}
	if v, ok := c.body.m["answer"]; ok {
		extra["answer"] = v
	}
	if v, ok := c.body.m["outcome"]; ok {
		extra["outcome"] = v
	}
	if old.Status != PermPending {
		return nil, conflict("permission request %s is already %s", old.ID, old.Status)
	}
	t, ok := s.st.tasks.get(*old.TaskID)
	if !ok {
		return nil, internal(fmt.Errorf("permission request %s names missing task %s", old.ID, *old.TaskID))
	}
	if Terminal(t.Status) {
		return nil, conflict("task %s is %s; its permission request %s can no longer be answered", t.ID, t.Status, old.ID)
	}
	se, ok := s.st.sessions.get(t.SessionID)
	if !ok {
		return nil, internal(fmt.Errorf("task %s names missing session %s", t.ID, t.SessionID))
	}
	word := "approve"
	if !approved {
		word = "deny"
	}
	value := map[string]any{"decision": word, "approved": approved, "permission_request_id": old.ID}
	for k, v := range extra {
		value[k] = v
	}
	cp := *se
	cm := &commit{}
	msg := s.appendMessage(cm, &cp, t.ID, "user", []map[string]any{{"type": "json", "value": value, "visibility": "public"}}, nil, c.actor)
	cm.Puts = append(cm.Puts, put{Session: &cp})
	cm.Events = append(cm.Events, s.newEvent("user.tool_confirmation", Pointer{"task", t.ID},
		map[string]any{"message_id": msg.ID, "kind": "tool_confirmation", "permission_request_id": old.ID, "decision": word},
		t.WorkspaceID, t.SessionID, t.ID, c.actor))
	pr := *old
	s.resolvePermission(&pr, msg, c.actor, extra)
	cm.Perms = append(cm.Perms, &pr)
	rn := s.runners[t.ID]
	return &result{status: http.StatusOK, body: &pr, c: cm, after: func() {
		if s.opts.Faults.Has(FaultPermissionAnswerLost) {
			return // the bug: the decision is recorded, and the waiting task never hears of it
		}
		s.deliver(rn, msg, "tool_confirmation")
	}}, nil
}

// deliver queues msg (of kind) for the task worker rn, if there is one.
func (s *Server) deliver(rn *runner, msg *Message, kind string) {
	if rn == nil {
		return
	}
	s.mu.Lock()
	rn.inbox = append(rn.inbox, msg)
	rn.kinds = append(rn.kinds, kind)
	s.mu.Unlock()
	select {
	case rn.signal <- struct{}{}:
	default:
	}
}

// ignoresDenial reports whether FaultApprovalDenialIgnored turns the
// tool_confirmation msg into an approval: a denied side effect runs anyway.
func (s *Server) ignoresDenial(msg *Message) bool {
	return s.opts.Faults.Has(FaultApprovalDenialIgnored) && denied(msg)
}
