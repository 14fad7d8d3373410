package refharness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gowebpki/jcs"

	scenario "github.com/harn-conform/conform/hook"
	rq "github.com/harn-conform/conform/internal/replay"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: how a replay runs: its log, metadata, overrides and
// refreshes.
var (
	FaultReplaySkipsStarted = declare(fault.Fault{Name: "replay-skips-started",
		Doc:   "the replay task goes SUBMITTED -> COMPLETED without task.started",
		Fails: []string{"RPLY-API-004"}})
	FaultReplayExactRefreshes = declare(fault.Fault{Name: "replay-exact-refreshes",
		Doc:   "exact replay of material not retained makes up a fresh value and completes instead of failing",
		Fails: []string{"RPLY-MODE-002"}})
	FaultReplayOverridesIgnored = declare(fault.Fault{Name: "replay-overrides-ignored",
		Doc:   "with_overrides replays the recorded material (deltas still written)",
		Fails: []string{"RPLY-MODE-003"}})
	FaultReplayOverrideUnstable = declare(fault.Fault{Name: "replay-override-unstable",
		Doc:       "an overridden model response's text gets the replay task id appended (differs per replay)",
		Fails:     []string{"RPLY-OVERRIDE-001"},
		Tolerated: []string{"RPLY-MODE-003"},
		Why:       "the changed text is no longer the override's either: RPLY-MODE-003 sees it"})
	FaultReplaySecretOverrideLeaks = declare(fault.Fault{Name: "replay-secret-override-leaks",
		Doc:   "a secret override's value appears in the replayed secret_read event payload",
		Fails: []string{"RPLY-OVERRIDE-006"}})
	FaultReplayLogReordered = declare(fault.Fault{Name: "replay-log-reordered",
		Doc:   "replayed events are emitted in reverse source order",
		Fails: []string{"RPLY-LOG-001"}})
	FaultReplayMetaNoSource = declare(fault.Fault{Name: "replay-meta-no-source",
		Doc:   "replay.source_task_id is empty",
		Fails: []string{"RPLY-META-001"}})
	FaultReplayMetaNoReplayTask = declare(fault.Fault{Name: "replay-meta-no-replay-task",
		Doc:   "replay.replay_task_id names the source task",
		Fails: []string{"RPLY-META-002"}})
	FaultReplayMetaNoOriginal = declare(fault.Fault{Name: "replay-meta-no-original",
		Doc:   "replay.original_event_id is null",
		Fails: []string{"RPLY-META-003"}})
	FaultReplayMetaNoCursor = declare(fault.Fault{Name: "replay-meta-no-cursor",
		Doc:   "replay.replay_cursor is null",
		Fails: []string{"RPLY-META-004"}})
	FaultReplayMetaWrongMode = declare(fault.Fault{Name: "replay-meta-wrong-mode",
		Doc:   "replay.mode on replayed events is always \"exact\"",
		Fails: []string{"RPLY-META-005"}})
	FaultReplayMetaNoOverrideKey = declare(fault.Fault{Name: "replay-meta-no-override-key",
		Doc:   "substituted events carry no replay.override_key",
		Fails: []string{"RPLY-META-006"}})
	FaultReplayManyOverridesFail = declare(fault.Fault{Name: "replay-many-overrides-fail",
		Doc:   "a replay whose override map has 5 or more keys ends FAILED (the fixture request has 5)",
		Fails: []string{"RPLY-DET-001"}})
	FaultReplayFailureUnnamed = declare(fault.Fault{Name: "replay-failure-unnamed",
		Doc:   "a failed replay names no missing dependency, and unknown checkpoint/artifact refusals name nothing",
		Fails: []string{"RPLY-FAIL-001"}})
	FaultReplayRefreshesMemory = declare(fault.Fault{Name: "replay-refreshes-memory",
		Doc:   "a replayed memory_read reads the memories' current contents",
		Fails: []string{"RPLY-REFRESH-001"}})
	FaultReplayBringsNewMemory = declare(fault.Fault{Name: "replay-brings-new-memory",
		Doc:   "a replayed memory_read adds memories created after the source ran",
		Fails: []string{"RPLY-REFRESH-002"}})
	FaultReplayCursorBogus = declare(fault.Fault{Name: "replay-cursor-bogus",
		Doc:   "replay.replay_cursor is \"not-a-cursor\", a string no read takes as a cursor",
		Fails: []string{"RPLY-META-004"}})
	FaultReplayCheckpointNoMeta = declare(fault.Fault{Name: "replay-checkpoint-no-meta",
		Doc:   "the events of a from_checkpoint replay carry no replay metadata (they still say replayed: true)",
		Fails: []string{"RPLY-META-001", "RPLY-META-002", "RPLY-META-003", "RPLY-META-004", "RPLY-META-005"}})
	FaultReplayExactFreshAnswer = declare(fault.Fault{Name: "replay-exact-fresh-answer",
		Doc:   "an exact replay fetches a fresh answer for each recorded model call and emits it unmarked (no replayed, no replay metadata)",
		Fails: []string{"RPLY-MODE-002", "RPLY-MARK-001"}})
)

// The replay worker: a replay task's run. It goes through the ordinary
// lifecycle (task.started, then task.completed or task.failed), announces
// itself (replay.started), replays the source task's replayable events in
// the source's order, one commit each, each with a new id, replayed: true
// and its replay metadata, and ends with replay.completed, or replay.failed
// at the first dependency it cannot replay.

// replayable reports whether a source event is replayed: the agent's
// activity (agent.*, tool.*, span.*, artifact.*), not the task's lifecycle
// (task.*) nor what the client sent (user.*).
func replayable(kind string) bool {
	for _, p := range []string{"agent.", "tool.", "span.", "artifact."} {
		if strings.HasPrefix(kind, p) {
			return true
		}
	}
	return false
}

// planItem is one source event to replay.
type planItem struct {
	e    *Event
	last bool // the last source event recording its override key: the replay records the dependency there
}

// replayMissing names a dependency a replay could not replay.
type replayMissing struct{ kind, id, key string }

// runReplay is the worker of replay task id.
func (s *Server) runReplay(ctx context.Context, id string, run *replayRun) {
	if !s.opts.Faults.Has(FaultReplaySkipsStarted) {
		if !s.move(ctx, id, StatusWorking, nil, nil) {
			return
		}
	}
	if !s.replayCommit(ctx, id, func(t *Task, cm *commit) *replayMissing {
		cm.Events = append(cm.Events, s.newEvent("replay.started", Pointer{"task", id},
			map[string]any{"source_task_id": run.SourceTaskID, "mode": run.Mode}, t.WorkspaceID, t.SessionID, id, agentActor))
		return nil
	}) {
		return
	}
	plan, recording := s.replayPlan(run)
	if s.opts.Faults.Has(FaultReplayLogReordered) {
		slices.Reverse(plan)
	}
	applied := map[string]bool{}
	for _, it := range plan {
		var missing *replayMissing
		ok := s.replayCommit(ctx, id, func(t *Task, cm *commit) *replayMissing {
			missing = s.replayEventLocked(t, run, it, recording, applied, cm)
			return missing
		})
		if missing != nil {
			s.failReplay(ctx, id, run, missing)
			return
		}
		if !ok {
			return
		}
	}
	s.mu.RLock()
	t, ok := s.st.tasks.get(id)
	s.mu.RUnlock()
	if !ok {
		return
	}
	done := s.newEvent("replay.completed", Pointer{"task", id}, map[string]any{"source_task_id": run.SourceTaskID,
		"events_replayed": len(plan), "overrides_applied": len(applied)}, t.WorkspaceID, t.SessionID, id, agentActor)
	if s.opts.Faults.Has(FaultReplayManyOverridesFail) && len(run.Overrides) >= 5 {
		// The fault: a large override map is more than this replay handles.
		failed := s.newEvent("replay.failed", Pointer{"task", id}, map[string]any{"source_task_id": run.SourceTaskID, "mode": run.Mode},
			t.WorkspaceID, t.SessionID, id, agentActor)
		s.move(ctx, id, StatusFailed, nil, &ending{summary: "replay failed", failure: &Failure{Code: "replay_failed",
			Message: fmt.Sprintf("%d overrides are more than this replay applies", len(run.Overrides))}}, failed)
		return
	}
	s.move(ctx, id, StatusCompleted, nil, &ending{summary: fmt.Sprintf("replay of task %s (%s): %d events replayed, %d overrides applied",
		run.SourceTaskID, run.Mode, len(plan), len(applied))}, done)
}

// replayCommit builds and commits one step of replay task id with build,
// unless the task may no longer move (canceled, ended, the server
// closing). A build that reports a missing dependency commits nothing.
func (s *Server) replayCommit(ctx context.Context, id string, build func(t *Task, cm *commit) *replayMissing) bool {
	s.mu.Lock()
	t, ok := s.runningLocked(ctx, id)
	if !ok {
		s.mu.Unlock()
		return false
	}
	cm := &commit{}
	if build(t, cm) != nil {
		s.mu.Unlock()
		return false
	}
	if len(cm.Events) == 0 {
		s.mu.Unlock()
		return true
	}
	return s.commitAndWait(cm)
}

// replayPlan lists the source events run replays, in the source's order,
// after its checkpoint boundary, and the last source event recording each
// override key (the one a dependency record, and a missing dependency,
// names).
func (s *Server) replayPlan(run *replayRun) ([]planItem, map[string]string) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	evs, _ := s.sourceEventsLocked(run.SourceTaskID)
	recording := map[string]string{}
	for _, e := range evs {
		if k, _ := e.Payload["override_key"].(string); k != "" {
			recording[k] = e.ID
		}
	}
	started := run.FromEventID == ""
	var plan []planItem
	for _, e := range evs {
		if !started {
			started = e.ID == run.FromEventID
			continue
		}
		if !replayable(e.Event) {
			continue
		}
		k, _ := e.Payload["override_key"].(string)
		plan = append(plan, planItem{e: e, last: k != "" && recording[k] == e.ID})
	}
	return plan, recording
}

func (run *replayRun) override(key string) *replayOverride {
	for i := range run.Overrides {
		if run.Overrides[i].Key == key {
			return &run.Overrides[i]
		}
	}
	return nil
}

// replayEventLocked adds the replay of one source event to cm: the event
// (recorded or substituted), the session message a replayed agent.message
// appends, and, where the source recorded a dependency, the replay's own
// record of it. It returns the dependency it cannot replay, if any.
func (s *Server) replayEventLocked(t *Task, run *replayRun, it planItem, recording map[string]string, applied map[string]bool, cm *commit) *replayMissing {
	e := it.e
	payload := maps.Clone(e.Payload)
	key, _ := payload["override_key"].(string)
	var dep *depRecord
	if key != "" {
		dep = s.st.rp.dep(run.SourceTaskID, key)
	}
	ov := run.override(key)
	var material []byte // the dependency's material as this replay consumed it
	secretHash := ""
	if dep != nil {
		material, secretHash = dep.Value, dep.SHA256
	}
	switch {
	case ov != nil && dep != nil:
		applied[key] = true
		if s.opts.Faults.Has(FaultReplayOverridesIgnored) {
			break // the fault: the recorded material stays
		}
		val, hash, m := s.substituteLocked(ov)
		if m != nil {
			return m
		}
		material, secretHash = val, hash
		s.substitute(payload, e.Event, dep.Op, val, hash, t.ID)
		if ov.secret() && s.opts.Faults.Has(FaultReplaySecretOverrideLeaks) && e.Event == "tool.completed" {
			payload["output"] = s.secretValueLocked(ov) // the fault: the substitute secret in the open
		}
	case dep != nil && !dep.Retained:
		if !s.opts.Faults.Has(FaultReplayExactRefreshes) {
			return &replayMissing{kind: "event", id: recording[key], key: key}
		}
		// The fault: a value is made up instead of failing.
		material = freshMaterial(dep.Op, s.clock().UnixMilli())
		s.substitute(payload, e.Event, dep.Op, material, rq.BytesHash(material), t.ID)
	}
	if e.Event == "agent.memory_read" {
		s.rereadMemoryLocked(payload, t.WorkspaceID)
	}
	if e.Event == "agent.message" {
		s.replayMessageLocked(t, e, payload, cm)
	}
	res := e.Resource
	if res == (Pointer{"task", run.SourceTaskID}) {
		res = Pointer{"task", t.ID}
	}
	actor := agentActor
	if e.Actor != nil {
		actor = *e.Actor
	}
	ne := s.newEvent(e.Event, res, payload, t.WorkspaceID, t.SessionID, t.ID, actor)
	ne.TraceID, ne.SpanID = e.TraceID, e.SpanID
	ne.Replayed = true
	ne.Replay = s.replayMeta(run, t.ID, e, applied[key] && ov != nil)
	switch {
	case run.Mode == modeFromCheckpoint && s.opts.Faults.Has(FaultReplayCheckpointNoMeta):
		ne.Replay = nil // the fault: marked, but no metadata
	case run.Mode == modeExact && dep != nil && dep.Op == string(scenario.OpModelCall) && e.Event == "agent.message" && s.opts.Faults.Has(FaultReplayExactFreshAnswer):
		// The fault: the model is asked again (after the session message
		// was appended with the recorded text), and the fresh answer is
		// emitted as live output.
		ne.Payload["text"] = fmt.Sprintf("a fresh answer at %d", s.clock().UnixMilli())
		ne.Replayed, ne.Replay = false, nil
	}
	cm.Events = append(cm.Events, ne)
	if it.last && dep != nil {
		nd := *dep
		nd.TaskID, nd.AtMs, nd.Retained = t.ID, s.clock().UnixMilli(), true
		if dep.Op == string(scenario.OpSecretRead) {
			nd.SHA256 = secretHash
		} else {
			nd.Value, nd.SHA256 = material, rq.BytesHash(material)
		}
		cm.Deps = append(cm.Deps, &nd)
	}
	return nil
}

// replayMeta is the replay metadata of the replay of source event e.
func (s *Server) replayMeta(run *replayRun, task string, e *Event, substituted bool) *ReplayMeta {
	f := s.opts.Faults
	// The replay cursor is the replayed event's own id (assigned when it is
	// committed): a cursor into the replay task's log, which event lists
	// take as after_event_id and streams as Last-Event-ID
	// (docs/interpretations.md#replay-cursor).
	m := &ReplayMeta{SourceTaskID: run.SourceTaskID, ReplayTaskID: task, OriginalEventID: ptr(e.ID), Mode: run.Mode, cursorIsID: true}
	if k, _ := e.Payload["override_key"].(string); substituted && !f.Has(FaultReplayMetaNoOverrideKey) {
		m.OverrideKey, m.ReceiptDeltaID = ptr(k), ptr(deltaID(k))
	}
	if f.Has(FaultReplayMetaNoSource) {
		m.SourceTaskID = ""
	}
	if f.Has(FaultReplayMetaNoReplayTask) {
		m.ReplayTaskID = run.SourceTaskID
	}
	if f.Has(FaultReplayMetaNoOriginal) {
		m.OriginalEventID = nil
	}
	switch {
	case f.Has(FaultReplayMetaNoCursor):
		m.cursorIsID = false
	case f.Has(FaultReplayCursorBogus):
		m.ReplayCursor, m.cursorIsID = ptr("not-a-cursor"), false
	}
	if f.Has(FaultReplayMetaWrongMode) {
		m.Mode = modeExact
	}
	return m
}

// substituteLocked is an override's substitute: its material (RFC 8785
// bytes; a secret's own bytes) and, for a secret, the hash a replayed
// secret_read shows. An artifact gone since the request was accepted is a
// missing dependency.
func (s *Server) substituteLocked(ov *replayOverride) ([]byte, string, *replayMissing) {
	if ov.ArtifactID == "" {
		if ov.secret() {
			var sec string
			json.Unmarshal(ov.Value, &sec)
			return nil, rq.BytesHash([]byte(sec)), nil
		}
		return ov.Value, "", nil
	}
	blob, ok := s.st.blobs[ov.ArtifactID]
	if !ok || rq.BytesHash(blob) != ov.After {
		return nil, "", &replayMissing{kind: "artifact", id: ov.ArtifactID, key: ov.Key}
	}
	if ov.secret() {
		return nil, ov.After, nil
	}
	canon, err := jcs.Transform(blob)
	if err != nil { // checked JSON when the request was accepted
		return nil, "", &replayMissing{kind: "artifact", id: ov.ArtifactID, key: ov.Key}
	}
	return canon, "", nil
}

// secretValueLocked is a secret override's value (for the faults that leak
// it; nothing else reads it).
func (s *Server) secretValueLocked(ov *replayOverride) string {
	if ov.ArtifactID != "" {
		return string(s.st.blobs[ov.ArtifactID])
	}
	var sec string
	json.Unmarshal(ov.Value, &sec)
	return sec
}

// substitute puts material val (RFC 8785 bytes) into the payload of a
// replayed event kind that carries a dependency of op; secretHash is what
// a secret_read's events show of a substitute secret.
func (s *Server) substitute(payload map[string]any, kind, op string, val []byte, secretHash, task string) {
	switch scenario.Op(op) {
	case scenario.OpClockRead:
		if kind == "span.completed" {
			payload["value_ms"] = json.Number(val)
		}
	case scenario.OpModelCall:
		if kind == "agent.message" {
			text := assistantText(val)
			if s.opts.Faults.Has(FaultReplayOverrideUnstable) {
				text += " [" + task + "]" // the fault: the substitute differs per replay
			}
			payload["text"] = text
		}
	case scenario.OpMCPCall:
		if kind == "agent.tool_result" {
			payload["output"] = decodeJSON(val)
		}
	case scenario.OpHostFact:
		if kind == "tool.completed" || kind == "agent.tool_result" {
			payload["output"] = decodeJSON(val)
		}
	case scenario.OpSecretRead:
		if kind == "tool.requested" || kind == "tool.completed" {
			payload["sha256"] = secretHash
		}
	}
}

// freshMaterial is what FaultReplayExactRefreshes makes up for material
// that was not retained.
func freshMaterial(op string, now int64) []byte {
	var v any
	switch scenario.Op(op) {
	case scenario.OpClockRead:
		v = now
	case scenario.OpModelCall:
		v = map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": fmt.Sprintf("fresh response at %d", now)}}}}
	case scenario.OpHostFact:
		v = fmt.Sprintf("fresh-%d\n", now)
	default:
		v = map[string]any{"fresh_at": now}
	}
	b, _ := json.Marshal(v)
	c, err := jcs.Transform(b)
	if err != nil {
		return b
	}
	return c
}

// rereadMemoryLocked leaves a replayed memory_read as recorded (the
// recorded list and contents, RPLY-REFRESH-001/002), but for the faults
// that refresh it.
func (s *Server) rereadMemoryLocked(payload map[string]any, ws string) {
	var recorded []string
	list, _ := payload["memories"].([]any)
	for _, m := range list {
		if mm, ok := m.(map[string]any); ok {
			id, _ := mm["memory_id"].(string)
			recorded = append(recorded, id)
		}
	}
	switch {
	case s.opts.Faults.Has(FaultReplayRefreshesMemory):
		now := s.memoryReadLocked(ws, recorded, false)
		payload["memories"], payload["text"] = now["memories"], now["text"]
	case s.opts.Faults.Has(FaultReplayBringsNewMemory):
		now := s.memoryReadLocked(ws, recorded, true)
		text, _ := payload["text"].(string)
		out := slices.Clone(list)
		for _, m := range now["memories"].([]any) {
			id, _ := m.(map[string]any)["memory_id"].(string)
			if slices.Contains(recorded, id) {
				continue
			}
			out = append(out, m)
			if mem, ok := s.st.mg.memories.get(id); ok {
				text = strings.TrimPrefix(text+"\n"+memoryText(mem.Content), "\n")
			}
		}
		payload["memories"], payload["text"] = out, text
	}
}

// replayMessageLocked appends the session message of a replayed
// agent.message to the replay task's session and points its payload at
// it: the source message's parts, or the substitute text.
func (s *Server) replayMessageLocked(t *Task, src *Event, payload map[string]any, cm *commit) {
	se, ok := s.st.sessions.get(t.SessionID)
	if !ok {
		return
	}
	var parts []map[string]any
	if id, _ := src.Payload["message_id"].(string); id != "" {
		if m, ok := s.st.messages.get(id); ok {
			parts = m.Parts
		}
	}
	if text, ok := payload["text"].(string); ok && (parts == nil || text != src.Payload["text"]) {
		parts = []map[string]any{{"type": "text", "text": text, "visibility": "public"}}
	}
	if parts == nil {
		return // a message no longer there: the event alone is replayed
	}
	cp := *se
	msg := &Message{Envelope: s.envelope("message", "message", nil), SessionID: ptr(cp.ID), TaskID: ptr(t.ID), Role: "agent", Parts: parts}
	cp.Transcript.MessageCount++
	cp.Transcript.TurnCount++
	cp.Transcript.LastMessageID = ptr(msg.ID)
	cp.UpdatedAt = msg.CreatedAt
	cm.Puts = append(cm.Puts, put{Message: msg}, put{Session: &cp})
	payload["message_id"] = msg.ID
}

// failReplay ends replay task id FAILED at a dependency it cannot replay:
// replay.failed names it (payload.missing), as does the task's failure
// (RPLY-FAIL-001, RPLY-MODE-002).
func (s *Server) failReplay(ctx context.Context, id string, run *replayRun, m *replayMissing) {
	s.mu.RLock()
	t, ok := s.st.tasks.get(id)
	s.mu.RUnlock()
	if !ok {
		return
	}
	details := map[string]any{"kind": m.kind, "id": m.id, "override_key": m.key}
	payload := map[string]any{"source_task_id": run.SourceTaskID, "mode": run.Mode, "missing": details}
	msg := fmt.Sprintf("replay of task %s cannot proceed: %s %s (override key %q) has no recorded material to replay", run.SourceTaskID, m.kind, m.id, m.key)
	failure := &Failure{Code: "replay_dependency_missing", Message: msg, Details: details}
	if s.opts.Faults.Has(FaultReplayFailureUnnamed) {
		delete(payload, "missing")
		failure.Details, failure.Message = nil, "replay of task "+run.SourceTaskID+" cannot proceed"
	}
	ev := s.newEvent("replay.failed", Pointer{"task", id}, payload, t.WorkspaceID, t.SessionID, id, agentActor)
	s.move(ctx, id, StatusFailed, nil, &ending{summary: "replay failed: " + failure.Message, failure: failure}, ev)
}
