package refharness

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: sessions, messages, outcomes, workspaces and
// artifacts.
var (
	FaultOutcomeNotListed = declare(fault.Fault{Name: "outcome-not-listed",
		Doc:   "GET /v1/outcomes is always empty (outcomes still readable by id)",
		Fails: []string{"CORE-READ-008"}})
	FaultMessageNotReadable = declare(fault.Fault{Name: "message-not-readable",
		Doc:   "GET /v1/messages/{id} answers 404 for appended messages",
		Fails: []string{"CORE-READ-011"}})
	FaultWorkspacePatchLost = declare(fault.Fault{Name: "workspace-patch-lost",
		Doc:   "PATCH /v1/workspaces/{id} answers the change but does not store it",
		Fails: []string{"EXT-WORKSPACE-001"}})
	// A race: the transcript is an index the append maintains in a second
	// write, once the Message and its event are durable. Sequential appends
	// are indexed in the order they were written; appends fired at once are
	// indexed in whatever order their second writes come, and the
	// transcript disagrees with the event list.
	FaultTranscriptIndexedLate = declare(fault.Fault{Name: "transcript-indexed-late",
		Doc:   "a Message append is added to its Session's transcript by a second write once the first is durable: appends fired at once are listed in another order than their events",
		Fails: []string{"CORE-ORDER-001"}, Race: true})
	FaultMessagesNewestFirst = declare(fault.Fault{Name: "messages-newest-first",
		Doc:   "a session's message list is served newest first",
		Fails: []string{"EXT-SESSION-001"}})
	FaultTruncateKeepsTurns = declare(fault.Fault{Name: "truncate-keeps-turns",
		Doc:       "truncate answers its counts but removes no message",
		Fails:     []string{"EXT-SESSION-003"},
		Tolerated: []string{"EXT-WS-006"},
		Why:       "a truncate_session frame is the REST truncate (docs/websocket.md section 4), so it keeps the turns too: EXT-WS-006 may fail with it"})
	FaultForkSharesTranscript = declare(fault.Fault{Name: "fork-shares-transcript",
		Doc:   "a fork reads its parent's live transcript, so truncating the parent empties the fork",
		Fails: []string{"EXT-SESSION-006"}})
	FaultArtifactDigestUnchecked = declare(fault.Fault{Name: "artifact-digest-unchecked",
		Doc:   "an upload whose sha256 does not match its bytes is stored with the stated hash",
		Fails: []string{"EXT-ARTIFACT-001"}})
)

// ---- discovery and agent card (public) ----

func (s *Server) discovery() map[string]any {
	d := s.discoveryDoc()
	if s.opts.Variants.Has(VariantNoScenarioHook) {
		delete(d["capabilities"].(map[string]any), "conform.scenarios")
	}
	s.advertiseMgmtHooks(d["capabilities"].(map[string]any)) // mgmt.go
	return d
}

func (s *Server) discoveryDoc() map[string]any {
	return map[string]any{
		"object":             "protocol_discovery",
		"protocol_family":    "harn_agents_protocol",
		"current_version":    ProtocolVersion,
		"supported_versions": []string{ProtocolVersion},
		"capabilities": map[string]any{
			"rest": true, "sse": true, "receipts": true,
			// POST /v1/tasks/{id}/replay and replay metadata (replay.go,
			// docs/replay.md), unless VariantNoReplay takes them away.
			"replay": s.replayOffered(),
			// The harn-ws.v1 profile (docs/websocket.md) is served when a
			// WebSocket adapter is mounted (core.go, package wsadapter).
			"websocket":               s.upgradeHandler() != nil,
			VerifySubmittedCapability: true, // docs/receipts.md: verify checks a submitted copy
			// The scenario contract of docs/scenarios.md: tasks obey metadata["conform.scenario"].
			"conform.scenarios": scenario.Version,
			// docs/interpretations.md#payload-limit: the configured request
			// size limit, so a client can probe it without guessing.
			"conform.max_request_bytes": s.opts.MaxBodyBytes,
		},
	}
}

// scenarioSkill describes the scenario contract as a Skill; it is listed by
// /v1/skills and in the agent card.
func scenarioSkill(env Envelope) *Skill {
	env.ID = "skill_conform_scenarios"
	return &Skill{Envelope: env, Name: "conform.scenarios",
		Description: "Runs a task as the conform.scenario steps in its metadata (docs/scenarios.md), or echoes the input.",
		InputSchema: map[string]any{"type": "object"}, OutputSchema: nil,
		Source: ptr("refharness"), Version: ptr(scenario.Version)}
}

// baseURL is the absolute URL of the harness's mount point: the request's
// Host plus whatever a wrapping http.StripPrefix removed from the path
// (RequestURI keeps the original path), so the card is right under any prefix.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	prefix := ""
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && strings.HasSuffix(u.Path, r.URL.Path) {
		prefix = strings.TrimSuffix(u.Path, r.URL.Path)
	}
	host := r.Host
	if host == "" {
		host = "localhost"
	}
	return scheme + "://" + host + prefix
}

func (s *Server) agentCard(base string) map[string]any {
	s.mu.RLock()
	sk, _ := s.st.skills.get("skill_conform_scenarios")
	s.mu.RUnlock()
	skills := []any{}
	created := s.now()
	if sk != nil {
		skills = append(skills, sk)
		created = sk.CreatedAt
	}
	desc := "Reference Harness of the conform suite: Harn Agents Protocol v1 Core over REST and SSE, with the conform.scenarios task contract."
	return map[string]any{
		"id": "agent_card_conform_refharness", "object": "harn_agent_card",
		"created_at": created, "updated_at": created, "metadata": map[string]any{},
		"name": "conform reference harness", "description": desc,
		"protocol_version": ProtocolVersion,
		"skills":           skills,
		"capabilities":     s.cardCapabilities(),
		"auth_schemes":     s.authSchemes(),
		"persona_ids":      s.personaIDs(),
		"receipt_policy":   "required",
		"public_url":       base,
		"harn_interfaces":  s.cardInterfaces(base), // hostev.go
		"a2a_card": map[string]any{
			"name": "conform reference harness", "description": desc, "version": "1",
			"supportedInterfaces": []any{map[string]any{"url": base + "/v1", "protocolBinding": "HTTP+JSON", "protocolVersion": ProtocolVersion}},
			"capabilities":        map[string]any{"streaming": true, "pushNotifications": false},
			"securitySchemes":     s.securitySchemes(base), // oauth.go
			"security":            []any{map[string]any{"bearer": []any{}}, map[string]any{oauthScheme: []any{}}},
			"defaultInputModes":   []string{"text/plain", "application/json"},
			"defaultOutputModes":  []string{"text/plain", "application/json"},
			"skills": []any{map[string]any{"id": "conform.scenarios", "name": "conform.scenarios",
				"description": "Scenario-driven deterministic agent (docs/scenarios.md).", "tags": []string{"conformance", "testing"}}},
		},
	}
}

func (s *Server) cardCapabilities() []string {
	caps := []string{"rest", "sse"}
	if s.upgradeHandler() != nil { // as discovery says (CORE-CARD-003)
		caps = append(caps, "websocket")
	}
	caps = append(caps, "receipts")
	if s.replayOffered() { // as discovery says
		caps = append(caps, "replay")
	}
	if !s.opts.Variants.Has(VariantNoScenarioHook) {
		caps = append(caps, "conform.scenarios")
	}
	return caps
}

func (s *Server) personaIDs() []string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ids := []string{}
	for _, r := range s.st.personas.order {
		ids = append(ids, r.v.ID)
	}
	return ids
}

// ---- workspaces ----

func (s *Server) listWorkspaces(c *call) (any, *apiError) {
	return listPage(s, c, s.st.workspaces, nil)
}

func (s *Server) getWorkspace(c *call) (any, *apiError) {
	if w, ok := s.st.workspaces.get(c.params[0]); ok {
		return w, nil
	}
	return nil, notFound("workspace", c.params[0])
}

func (s *Server) createWorkspace(c *call) (*result, *apiError) {
	b := c.body
	name, _, e := b.str("name", true)
	if e != nil {
		return nil, e
	}
	root, _, e := b.str("root", true)
	if e != nil {
		return nil, e
	}
	caps, _, e := b.strings("capabilities")
	if e != nil {
		return nil, e
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	if caps == nil {
		caps = []string{}
	}
	w := &Workspace{Envelope: s.envelope("workspace", "workspace", meta), Name: name, Root: root, Capabilities: caps}
	return &result{status: http.StatusCreated, body: w, c: &commit{Puts: []put{{Workspace: w}}}}, nil
}

func (s *Server) patchWorkspace(c *call) (*result, *apiError) {
	old, ok := s.st.workspaces.get(c.params[0])
	if !ok {
		return nil, notFound("workspace", c.params[0])
	}
	w := *old
	b := c.body
	if name, ok, e := b.str("name", false); e != nil {
		return nil, e
	} else if ok {
		w.Name = name
	}
	if caps, ok, e := b.strings("capabilities"); e != nil {
		return nil, e
	} else if ok {
		w.Capabilities = caps
	}
	if q, ok, e := b.str("quota_id", false); e != nil {
		return nil, e
	} else if ok {
		w.QuotaID = ptr(q)
	} else if b.has("quota_id") {
		w.QuotaID = nil
	}
	if b.has("metadata") {
		meta, e := b.metadata()
		if e != nil {
			return nil, e
		}
		w.Metadata = meta
	}
	w.UpdatedAt = s.now()
	if s.opts.Faults.Has(FaultWorkspacePatchLost) {
		return &result{status: http.StatusOK, body: &w}, nil
	}
	return &result{status: http.StatusOK, body: &w, c: &commit{Puts: []put{{Workspace: &w}}}}, nil
}

// ---- sessions ----

func (s *Server) listSessions(c *call) (any, *apiError) {
	ws := c.q.Get("workspace_id")
	l, e := listPage(s, c, s.st.sessions, func(x *Session) bool { return ws == "" || x.WorkspaceID == ws })
	if e == nil {
		for i, v := range l.Data {
			l.Data[i] = s.sessionView(v.(*Session))
		}
	}
	return l, e
}

func (s *Server) getSession(c *call) (any, *apiError) {
	if x, ok := s.st.sessions.get(c.params[0]); ok {
		return s.sessionView(x), nil
	}
	return nil, notFound("session", c.params[0])
}

// sessionView fills in last_event_id, a derived field: the newest retained
// event of the session's stream, a ready resume cursor.
func (s *Server) sessionView(se *Session) *Session {
	pos := s.st.bySession[se.ID]
	if len(pos) == 0 || pos[len(pos)-1] < s.st.firstPos {
		return se
	}
	cp := *se
	cp.LastEventID = ptr(s.st.eventID(pos[len(pos)-1]))
	return &cp
}

func (s *Server) createSession(c *call) (*result, *apiError) {
	b := c.body
	wsID, _, e := b.str("workspace_id", true)
	if e != nil {
		return nil, e
	}
	if _, ok := s.st.workspaces.get(wsID); !ok {
		e := notFound("workspace", wsID)
		e.Param = "workspace_id"
		return nil, e
	}
	persona, e := s.optionalPersona(b)
	if e != nil {
		return nil, e
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	initial, _, e := b.array("initial_messages", false)
	if e != nil {
		return nil, e
	}
	se := &Session{Envelope: s.envelope("session", "session", meta), WorkspaceID: wsID, State: "ACTIVE", PersonaID: persona}
	res := Pointer{"session", se.ID}
	cm := &commit{Events: []*Event{s.newEvent("session.created", res, map[string]any{"workspace_id": wsID}, wsID, se.ID, "", c.actor)}}
	for i, v := range initial {
		p := fmt.Sprintf("initial_messages[%d]", i)
		m, ok := v.(map[string]any)
		if !ok {
			return nil, badRequest(p, "field %s: got %s, want an object", p, jsonv.AKind(v))
		}
		role, parts, mmeta, e := messageInput(obj{m: m, prefix: p})
		if e != nil {
			return nil, e
		}
		msg := s.appendMessage(cm, se, "", role, parts, mmeta, c.actor)
		_ = msg
	}
	cm.Puts = append([]put{{Session: se}}, cm.Puts...)
	return &result{status: http.StatusCreated, body: se, c: cm}, nil
}

func (s *Server) optionalPersona(b obj) (*string, *apiError) {
	id, ok, e := b.str("persona_id", false)
	if e != nil || !ok {
		return nil, e
	}
	if _, found := s.st.personas.get(id); !found {
		e := notFound("persona", id)
		e.Param = "persona_id"
		return nil, e
	}
	return ptr(id), nil
}

// appendMessage adds a message to session se (updating se in place, which the
// caller must have copied) and records it in cm. Messages a task exchanges are
// announced by the task's own event (agent.message, user.input_submitted…);
// other messages get a session.message_appended event.
func (s *Server) appendMessage(cm *commit, se *Session, taskID, role string, parts []map[string]any, meta map[string]any, actor string) *Message {
	msg := &Message{Envelope: s.envelope("message", "message", meta), SessionID: ptr(se.ID), Role: role, Parts: s.privateParts(parts)} // privacy.go
	if taskID != "" {
		msg.TaskID = ptr(taskID)
	}
	se.Transcript.MessageCount++
	se.Transcript.TurnCount++
	se.Transcript.LastMessageID = ptr(msg.ID)
	se.UpdatedAt = msg.CreatedAt
	cm.Puts = append(cm.Puts, put{Message: msg})
	if taskID == "" {
		cm.Events = append(cm.Events, s.newEvent("session.message_appended", Pointer{"session", se.ID},
			map[string]any{"message_id": msg.ID, "role": role}, se.WorkspaceID, se.ID, "", actor))
	}
	return msg
}

func (s *Server) patchSession(c *call) (*result, *apiError) {
	old, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	se := *old
	if sum, ok, e := c.body.str("summary", false); e != nil {
		return nil, e
	} else if ok {
		se.Summary = ptr(sum)
	} else if c.body.has("summary") {
		se.Summary = nil
	}
	if c.body.has("metadata") {
		meta, e := c.body.metadata()
		if e != nil {
			return nil, e
		}
		se.Metadata = meta
	}
	se.UpdatedAt = s.now()
	return &result{status: http.StatusOK, body: &se, c: &commit{Puts: []put{{Session: &se}}}}, nil
}

func (s *Server) closeSession(c *call) (*result, *apiError) {
	old, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	if old.State == "CLOSED" {
		return &result{status: http.StatusOK, body: old}, nil // closing is naturally idempotent
	}
	se := *old
	se.State = "CLOSED"
	se.UpdatedAt = s.now()
	ev := s.newEvent("session.closed", Pointer{"session", se.ID}, map[string]any{"state": "CLOSED"}, se.WorkspaceID, se.ID, "", c.actor)
	return &result{status: http.StatusOK, body: &se, c: &commit{Puts: []put{{Session: &se}}, Events: []*Event{ev}}}, nil
}

func (s *Server) forkSession(c *call) (*result, *apiError) {
	src, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	b := c.body
	at := uint64(0)
	atID, hasAt, e := b.str("at_event_id", false)
	if e != nil {
		return nil, e
	}
	if hasAt {
		pos, ok := s.st.cursorValid(atID)
		if !ok {
			return nil, badRequest("at_event_id", "at_event_id %q is not a known event", atID)
		}
		at = pos
	}
	branch, _, e := b.str("branch_id", false)
	if e != nil {
		return nil, e
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	root := src.ID
	if src.RootSessionID != nil {
		root = *src.RootSessionID
	}
	ns := &Session{Envelope: s.envelope("session", "session", meta), WorkspaceID: src.WorkspaceID, State: "ACTIVE",
		PersonaID: src.PersonaID, RootSessionID: ptr(root), ParentSessionID: ptr(src.ID)}
	cm := &commit{}
	// The fork's lineage: the Branch it is on (branches.go).
	if e := s.forkBranchLocked(cm, c, src, ns, branch, atID); e != nil {
		return nil, e
	}
	copied := 0
	for _, id := range s.st.sessMsgs[src.ID] {
		if s.opts.Faults.Has(FaultForkSharesTranscript) {
			break // the fault: the fork reads its parent's transcript instead
		}
		m, ok := s.st.messages.get(id)
		if !ok {
			continue
		}
		if hasAt && s.st.msgPos[id] > at {
			break
		}
		cp := &Message{Envelope: s.envelope("message", "message", m.Metadata), SessionID: ptr(ns.ID), Role: m.Role, Parts: m.Parts}
		ns.Transcript.MessageCount++
		ns.Transcript.TurnCount++
		ns.Transcript.LastMessageID = ptr(cp.ID)
		cm.Puts = append(cm.Puts, put{Message: cp})
		copied++
	}
	cm.Puts = append([]put{{Session: ns}}, cm.Puts...)
	cm.Events = append(cm.Events,
		s.newEvent("session.created", Pointer{"session", ns.ID}, map[string]any{"workspace_id": ns.WorkspaceID, "parent_session_id": src.ID}, ns.WorkspaceID, ns.ID, "", c.actor),
		s.newEvent("session.thread_forked", Pointer{"session", src.ID}, map[string]any{"forked_session_id": ns.ID, "at_event_id": nullable(atID), "copied_message_count": copied}, src.WorkspaceID, src.ID, "", c.actor),
	)
	return &result{status: http.StatusCreated, body: ns, c: cm}, nil
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// truncateSession keeps the first keep_first turns. A turn is one message.
func (s *Server) truncateSession(c *call) (*result, *apiError) {
	old, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	keep, _, e := c.body.integer("keep_first", true)
	if e != nil {
		return nil, e
	}
	if keep < 0 {
		return nil, badRequest("keep_first", "keep_first = %d, want >= 0", keep)
	}
	reason, _, e := c.body.str("reason", false)
	if e != nil {
		return nil, e
	}
	ids := s.st.sessMsgs[old.ID]
	if keep > int64(len(ids)) {
		keep = int64(len(ids))
	}
	se := *old
	cm := &commit{}
	for _, id := range ids[keep:] {
		if s.opts.Faults.Has(FaultTruncateKeepsTurns) {
			break // the fault: counts are answered, nothing is removed
		}
		cm.Deletes = append(cm.Deletes, Pointer{"message", id})
	}
	se.Transcript.MessageCount = int(keep)
	se.Transcript.TurnCount = int(keep)
	se.Transcript.LastMessageID = nil
	if keep > 0 {
		se.Transcript.LastMessageID = ptr(ids[keep-1])
	}
	se.UpdatedAt = s.now()
	removed := len(ids) - int(keep)
	cm.Puts = []put{{Session: &se}}
	cm.Events = []*Event{s.newEvent("session.truncated", Pointer{"session", se.ID},
		map[string]any{"kept_turn_count": keep, "removed_turn_count": removed, "reason": nullable(reason)}, se.WorkspaceID, se.ID, "", c.actor)}
	body := map[string]any{"object": "session.truncate_result", "session_id": se.ID, "kept_turn_count": keep,
		"removed_turn_count": removed, "new_tip_turn_id": se.Transcript.LastMessageID, "session": &se}
	return &result{status: http.StatusOK, body: body, c: cm}, nil
}

// ---- messages ----

func (s *Server) listSessionMessages(c *call) (any, *apiError) {
	id := c.params[0]
	if _, ok := s.st.sessions.get(id); !ok {
		return nil, notFound("session", id)
	}
	if s.opts.Faults.Has(FaultMessagesNewestFirst) || s.opts.Faults.Has(FaultForkSharesTranscript) || s.opts.Faults.Has(FaultTranscriptIndexedLate) {
		return s.faultyMessageList(c, id) // personas.go
	}
	return listPage(s, c, s.st.messages, func(m *Message) bool { return m.SessionID != nil && *m.SessionID == id })
}

func (s *Server) getMessage(c *call) (any, *apiError) {
	if m, ok := s.st.messages.get(c.params[0]); ok && !s.opts.Faults.Has(FaultMessageNotReadable) {
		return m, nil
	}
	return nil, notFound("message", c.params[0])
}

func (s *Server) appendSessionMessage(c *call) (*result, *apiError) {
	old, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	if old.State == "CLOSED" {
		return nil, conflict("session %s is CLOSED; messages cannot be appended", old.ID)
	}
	mo, _, e := c.body.object("message", true)
	if e != nil {
		return nil, e
	}
	role, parts, meta, e := messageInput(mo)
	if e != nil {
		return nil, e
	}
	se := *old
	cm := &commit{}
	msg := s.appendMessage(cm, &se, "", role, parts, meta, c.actor)
	cm.Puts = append(cm.Puts, put{Session: &se})
	res := &result{status: http.StatusCreated, body: msg, c: cm}
	if s.opts.Faults.Has(FaultTranscriptIndexedLate) {
		msg.indexLate = true
		res.after = func() { // the second write, once the first is durable
			time.Sleep(indexDelay(msg.ID))
			s.mu.Lock()
			s.st.sessMsgs[se.ID] = append(s.st.sessMsgs[se.ID], msg.ID)
			s.mu.Unlock()
		}
	}
	return res, nil
}

// indexDelay is how long FaultTranscriptIndexedLate's second write of
// message id takes: up to twice raceGap, varying by message (as a real
// index write's latency does), so appends indexed at once land in an order
// of their own.
func indexDelay(id string) time.Duration {
	h := fnv.New32a()
	h.Write([]byte(id))
	return time.Duration(h.Sum32()%10+1) * raceGap / 5
}

// ---- artifacts ----

var hex64 = regexp.MustCompile(`^[a-fA-F0-9]{64}$`)

func (s *Server) listArtifacts(c *call) (any, *apiError) {
	ws, se, t := c.q.Get("workspace_id"), c.q.Get("session_id"), c.q.Get("task_id")
	return listPage(s, c, s.st.artifacts, func(a *Artifact) bool {
		return eqOpt(a.WorkspaceID, ws) && eqOpt(a.SessionID, se) && eqOpt(a.TaskID, t)
	})
}

func eqOpt(p *string, want string) bool { return want == "" || (p != nil && *p == want) }

func (s *Server) getArtifact(c *call) (any, *apiError) {
	if a, ok := s.st.artifacts.get(c.params[0]); ok {
		return a, nil
	}
	return nil, notFound("artifact", c.params[0])
}

func (s *Server) registerArtifact(c *call) (*result, *apiError) {
	b := c.body
	kind, _, e := b.enum("kind", true, scenario.ArtifactKinds...)
	if e != nil {
		return nil, e
	}
	mime, _, e := b.str("mime_type", true)
	if e != nil {
		return nil, e
	}
	vis, _, e := b.enum("visibility", true, visibilities...)
	if e != nil {
		return nil, e
	}
	a := &Artifact{Kind: kind, MimeType: mime, Visibility: s.storedVisibility(vis)} // privacy.go
	if uri, ok, e := b.str("uri", false); e != nil {
		return nil, e
	} else if ok {
		a.URI = ptr(uri)
	}
	sum, hasSum, e := b.str("sha256", false)
	if e != nil {
		return nil, e
	}
	if hasSum && !hex64.MatchString(sum) {
		return nil, badRequest("sha256", "sha256 = %q, want 64 hex digits", sum)
	}
	// content_base64 is this harness's extension for uploading the bytes inline.
	var content []byte
	if enc, ok, e := b.str("content_base64", false); e != nil {
		return nil, e
	} else if ok {
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			return nil, badRequest("content_base64", "content_base64 is not valid base64: %v", err)
		}
		content = raw
		h := sha256.Sum256(raw)
		got := hex.EncodeToString(h[:])
		switch {
		case hasSum && !strings.EqualFold(sum, got) && !s.opts.Faults.Has(FaultArtifactDigestUnchecked):
			return nil, badRequest("sha256", "sha256 = %s, but the content hashes to %s", sum, got)
		case !hasSum || !s.opts.Faults.Has(FaultArtifactDigestUnchecked):
			sum, hasSum = got, true
		}
		a.SizeBytes = ptr(int64(len(raw)))
	}
	if hasSum {
		a.SHA256 = ptr(strings.ToLower(sum))
	}
	var ws, sess, task string
	if id, ok, e := b.str("task_id", false); e != nil {
		return nil, e
	} else if ok {
		t, found := s.st.tasks.get(id)
		if !found {
			e := notFound("task", id)
			e.Param = "task_id"
			return nil, e
		}
		task, sess, ws = id, t.SessionID, t.WorkspaceID
	}
	if id, ok, e := b.str("session_id", false); e != nil {
		return nil, e
	} else if ok {
		se, found := s.st.sessions.get(id)
		if !found {
			e := notFound("session", id)
			e.Param = "session_id"
			return nil, e
		}
		if sess != "" && sess != id {
			return nil, badRequest("session_id", "session_id %s does not own task %s", id, task)
		}
		sess, ws = id, se.WorkspaceID
	}
	if id, ok, e := b.str("workspace_id", false); e != nil {
		return nil, e
	} else if ok {
		if _, found := s.st.workspaces.get(id); !found {
			e := notFound("workspace", id)
			e.Param = "workspace_id"
			return nil, e
		}
		if ws != "" && ws != id {
			return nil, badRequest("workspace_id", "workspace_id %s does not own session %s", id, sess)
		}
		ws = id
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	a.Envelope = s.envelope("artifact", "artifact", meta)
	a.WorkspaceID, a.SessionID, a.TaskID = optStr(ws), optStr(sess), optStr(task)
	a.BranchID = s.artifactBranchLocked(sess, task) // branches.go
	cm := &commit{Puts: []put{{Artifact: a}},
		Events: []*Event{s.newEvent("artifact.created", Pointer{"artifact", a.ID}, map[string]any{"kind": kind, "sha256": a.SHA256}, ws, sess, task, c.actor)}}
	if content != nil {
		cm.Blobs = map[string][]byte{a.ID: content}
	}
	return &result{status: http.StatusCreated, body: a, c: cm}, nil
}

func optStr(s string) *string {
	if s == "" {
		return nil
	}
	return ptr(s)
}

func (s *Server) artifactContent(w http.ResponseWriter, c *call) {
	s.mu.RLock()
	a, ok := s.st.artifacts.get(c.params[0])
	content, has := s.st.blobs[c.params[0]]
	seq := s.lastSeq
	s.mu.RUnlock()
	if err := s.wait(seq); err != nil {
		s.writeError(w, c.r, &apiError{Status: http.StatusServiceUnavailable, Code: "service_unavailable", Message: err.Error()})
		return
	}
	if !ok {
		s.writeError(w, c.r, notFound("artifact", c.params[0]))
		return
	}
	if !has {
		e := notFound("artifact content", c.params[0])
		e.Message = fmt.Sprintf("artifact %q was registered without content", c.params[0])
		s.writeError(w, c.r, e)
		return
	}
	w.Header().Set("Content-Type", a.MimeType)
	w.Header().Set("Content-Length", fmt.Sprint(len(content)))
	w.WriteHeader(http.StatusOK)
	w.Write(content)
}

// ---- outcomes, personas, skills ----

func (s *Server) listOutcomes(c *call) (any, *apiError) {
	if s.opts.Faults.Has(FaultOutcomeNotListed) {
		return s.emptyList(c)
	}
	t := c.q.Get("task_id")
	return listPage(s, c, s.st.outcomes, func(o *Outcome) bool { return t == "" || o.TaskID == t })
}

func (s *Server) getOutcome(c *call) (any, *apiError) {
	if o, ok := s.st.outcomes.get(c.params[0]); ok {
		return o, nil
	}
	return nil, notFound("outcome", c.params[0])
}

func (s *Server) listPersonas(c *call) (any, *apiError) { return listPage(s, c, s.st.personas, nil) }

func (s *Server) getPersona(c *call) (any, *apiError) {
	if p, ok := s.st.personas.get(c.params[0]); ok {
		return p, nil
	}
	return nil, notFound("persona", c.params[0])
}

func (s *Server) listSkills(c *call) (any, *apiError) {
	l, e := listPage(s, c, s.st.skills, nil)
	if e == nil {
		for i, v := range l.Data {
			l.Data[i] = s.skillView(v.(*Skill)) // personas.go
		}
	}
	return l, e
}

func (s *Server) getSkill(c *call) (any, *apiError) {
	if p, ok := s.st.skills.get(c.params[0]); ok {
		return s.skillView(p), nil
	}
	return nil, notFound("skill", c.params[0])
}
