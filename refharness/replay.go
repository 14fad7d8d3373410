package refharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gowebpki/jcs"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/jsonv"
	rq "github.com/harn-conform/conform/internal/replay"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the replay API (POST /v1/tasks/{id}/replay).
var (
	FaultReplayAnswers201 = declare(fault.Fault{Name: "replay-answers-201",
		Doc:   "POST /replay answers 201 instead of 202",
		Fails: []string{"RPLY-API-001"}})
	FaultReplayNoParent = declare(fault.Fault{Name: "replay-no-parent",
		Doc:   "later reads of the replay task show parent_task_id null (the 202 answer still has it)",
		Fails: []string{"RPLY-API-002"}})
	FaultReplayNewSession = declare(fault.Fault{Name: "replay-new-session",
		Doc:   "the replay task is put in a new session (no branch lineage)",
		Fails: []string{"RPLY-API-003"}})
	FaultReplayBodyRequired = declare(fault.Fault{Name: "replay-body-required",
		Doc:   "a replay request with no body (or {}) is refused 400",
		Fails: []string{"RPLY-API-005"}})
	FaultReplayTaskModeExact = declare(fault.Fault{Name: "replay-task-mode-exact",
		Doc:   "the replay Task's metadata.replay.mode is always \"exact\" (events still carry the right mode)",
		Fails: []string{"RPLY-MODE-001"}})
	FaultReplayCheckpointUnchecked = declare(fault.Fault{Name: "replay-checkpoint-unchecked",
		Doc:   "from_checkpoint without checkpoint_id/checkpoint_event_id is accepted (202, replays from the start)",
		Fails: []string{"RPLY-MODE-004"}})
	FaultReplayCheckpointIgnored = declare(fault.Fault{Name: "replay-checkpoint-ignored",
		Doc:   "a valid from_checkpoint replays from the start of the source log",
		Fails: []string{"RPLY-MODE-005"}})
	FaultReplayInvalidOverride500 = declare(fault.Fault{Name: "replay-invalid-override-500",
		Doc:       "a replay request whose override map is invalid is answered 500 internal_error instead of 400",
		Fails:     []string{"RPLY-OVERRIDE-001"},
		Tolerated: []string{"RPLY-NEG-001"},
		Why:       "the hostile-input pass of Replay sends invalid override maps too, and sees the same 500 (RPLY-NEG-001: answered below 500)"})
	FaultReplayIdempotencyIgnored = declare(fault.Fault{Name: "replay-idempotency-ignored",
		Doc:   "POST /v1/tasks/{id}/replay ignores Idempotency-Key: every retry starts another replay task",
		Fails: []string{"RPLY-API-007"}})
	FaultReplayHistoryLostOnRestart = declare(fault.Fault{Name: "replay-history-lost-on-restart",
		Doc:   "after a restart, a task that ran before it is refused replay (404: its event log no longer retained); its events still read",
		Fails: []string{"RPLY-RETAIN-001"},
		Run:   fault.Restart})
)

// VariantNoReplay offers no Replay level, as a target that does not claim
// it: discovery says replay: false, the agent card does not list it, and
// POST /v1/tasks/{id}/replay answers 501 not_implemented (an unoffered
// protocol operation). Tasks still record their dependencies and tapes.
var VariantNoReplay = declareVariant(fault.Variant{Name: "no-replay",
	Doc: "no Replay level: discovery says replay: false, the card does not list it, POST /v1/tasks/{id}/replay answers 501"})

// Replay (issue 12; docs/replay.md, "The replay surface a target offers";
// spec 002): POST /v1/tasks/{id}/replay makes a new task that walks the
// source task's EventLog in order, replaying recorded material or, where
// the request overrides a dependency, its substitute.
//
// What a replay needs is in the journal: the source's events, and one
// dependency record (depRecord) per recorded dependency of its run (the
// replay scenario steps of docs/scenarios.md, replay_steps.go), written in
// the same commit as the events that recorded it; the accepted request
// (replayRun) is written with the replay task. A restart therefore loses
// nothing: a replay accepted before it runs after it, and any finished task
// can be replayed after one.

// depRecord is one recorded dependency of a task's run: what the run
// consumed under an override key, the hash a receipt delta names as
// before_sha256, and what its tape record needs.
type depRecord struct {
	TaskID string `json:"task_id"`
	Key    string `json:"key"`
	Op     string `json:"op"`   // the scenario op that recorded it
	Kind   string `json:"kind"` // the override kind that replaces it
	// Retained: the Harness may replay the material. A step with retain:
	// false models material the Harness used but may not keep (a provider
	// whose responses may not be stored): an exact replay must fail.
	Retained bool `json:"retained"`
	// SHA256 is the recorded material's hash as an override's sha256 is
	// computed (docs/interpretations.md#replay-override-hash): of the
	// value's RFC 8785 bytes, of a secret's UTF-8 bytes.
	SHA256 string `json:"sha256"`
	// Value is the material's RFC 8785 bytes (none for a secret, whose
	// hash is all the Harness keeps of it). Whether the replay may use it
	// is Retained's to say; the tape records what the run consumed.
	Value json.RawMessage `json:"value,omitempty"`
	// What the tape record needs besides the value.
	Source  string          `json:"source,omitempty"`  // clock_read: wall or monotonic
	Request json.RawMessage `json:"request,omitempty"` // model_call, mcp_call: the request's RFC 8785 bytes
	Server  string          `json:"server,omitempty"`  // mcp_call
	Tool    string          `json:"tool,omitempty"`    // mcp_call
	Program string          `json:"program,omitempty"` // host_fact
	Args    []string        `json:"args,omitempty"`    // host_fact
	Cwd     string          `json:"cwd,omitempty"`     // host_fact
	AtMs    int64           `json:"at_ms"`             // the Harness clock when the step ran (the tape's virtual time)
}

// replayRun is an accepted replay request, resolved against its source:
// what the replay task runs.
type replayRun struct {
	TaskID       string `json:"task_id"`
	SourceTaskID string `json:"source_task_id"`
	Mode         string `json:"mode"`
	Reason       string `json:"reason,omitempty"`
	// FromEventID is the checkpoint boundary of a from_checkpoint replay:
	// the source event after which it starts ("" from the start).
	FromEventID string           `json:"from_event_id,omitempty"`
	Overrides   []replayOverride `json:"overrides,omitempty"` // sorted by key
	// EventLog is the source event log material of the replay receipt.
	EventLog replayMaterial `json:"event_log"`
}

// replayMaterial names material by URI and hash.
type replayMaterial struct {
	URI    string `json:"uri"`
	SHA256 string `json:"sha256"`
}

// replayOverride is one override of a replay request, checked.
type replayOverride struct {
	Key  string `json:"key"`
	Kind string `json:"kind"`
	Op   string `json:"op"` // the op of the dependency it replaces
	// EventID is the source event the receipt delta names: the request's
	// event_id, else the last source event that recorded the key.
	EventID string `json:"event_id"`
	// Value is an inline substitute (RFC 8785 bytes); ArtifactID names an
	// Artifact whose bytes are the substitute. Exactly one is set.
	Value      json.RawMessage `json:"value,omitempty"`
	ArtifactID string          `json:"artifact_id,omitempty"`
	Before     string          `json:"before_sha256"`
	After      string          `json:"after_sha256"`
	Reason     string          `json:"reason"`
}

func (o *replayOverride) secret() bool { return o.Op == string(scenario.OpSecretRead) }

// ReplayMeta is the replay metadata of a replayed event (the OpenAPI's
// ReplayEventMetadata).
type ReplayMeta struct {
	SourceTaskID    string  `json:"source_task_id"`
	ReplayTaskID    string  `json:"replay_task_id"`
	OriginalEventID *string `json:"original_event_id"`
	ReplayCursor    *string `json:"replay_cursor"`
	Mode            string  `json:"mode"`
	OverrideKey     *string `json:"override_key"`
	ReceiptDeltaID  *string `json:"receipt_delta_id"`
	// cursorIsID: the replay cursor is the event's own id, set when the
	// event is committed and its id assigned (commitLocked).
	cursorIsID bool
}

// replayState is the replay part of the projection.
type replayState struct {
	deps map[string][]*depRecord // task id -> its dependencies, in the order its run recorded them
	runs map[string]*replayRun   // replay task id -> its request
}

func (rs *replayState) apply(c *commit) {
	if len(c.Deps) == 0 && len(c.Replays) == 0 {
		return
	}
	if rs.deps == nil {
		rs.deps, rs.runs = map[string][]*depRecord{}, map[string]*replayRun{}
	}
	for _, d := range c.Deps {
		rs.deps[d.TaskID] = append(rs.deps[d.TaskID], d)
	}
	for _, r := range c.Replays {
		rs.runs[r.TaskID] = r
	}
}

// dep is task's recorded dependency under key.
func (rs *replayState) dep(task, key string) *depRecord {
	for _, d := range rs.deps[task] {
		if d.Key == key {
			return d
		}
	}
	return nil
}

// The override kinds that may replace a dependency recorded by each op.
var overrideKinds = map[string][]string{
	string(scenario.OpClockRead):  {"time"},
	string(scenario.OpModelCall):  {"llm_provider_response"},
	string(scenario.OpMCPCall):    {"mcp_tool_return"},
	string(scenario.OpHostFact):   {"host_fact", "tool_result"},
	string(scenario.OpSecretRead): {"secret_value"},
}

// The replay modes.
const (
	modeExact          = "exact"
	modeWithOverrides  = "with_overrides"
	modeFromCheckpoint = "from_checkpoint"
)

// defaultReplayReason is a delta's reason when neither the override nor
// the request gives one ("the reason supplied by the caller or Harness
// policy", spec 002).
const defaultReplayReason = "harness replay policy"

// replayRoutes is the replay operation; a Harness that does not offer
// Replay (VariantNoReplay) leaves it out, and its path is then refused as
// an unoffered protocol operation (501 not_implemented, local.go).
func (s *Server) replayRoutes() []route {
	if !s.replayOffered() {
		return nil
	}
	return []route{{method: "POST", pattern: "tasks/{}/replay", write: s.replayTask, noBody: true}}
}

// replayOffered reports whether the Harness claims the Replay level.
func (s *Server) replayOffered() bool { return !s.opts.Variants.Has(VariantNoReplay) }

// replayTask serves POST /v1/tasks/{id}/replay. Holds s.mu.
func (s *Server) replayTask(c *call) (*result, *apiError) {
	src, ok := s.st.tasks.get(c.params[0])
	if !ok {
		return nil, notFound("task", c.params[0])
	}
	req, e := s.parseReplayRequest(c.body)
	if e != nil {
		return nil, e
	}
	if !Terminal(src.Status) {
		return nil, &apiError{Status: http.StatusConflict, Code: "invalid_state_transition", Details: map[string]any{"status": src.Status},
			Message: fmt.Sprintf("task %s is %s: only a finished task can be replayed", src.ID, src.Status)}
	}
	se, ok := s.st.sessions.get(src.SessionID)
	if !ok {
		return nil, internal(fmt.Errorf("task %s names missing session %s", src.ID, src.SessionID))
	}
	if se.State == "CLOSED" {
		return nil, conflict("session %s is CLOSED; a replay is a new task of it and cannot be submitted", se.ID)
	}
	run, e := s.resolveReplayLocked(c, src, req)
	if e != nil {
		return nil, e
	}

	taskMode := run.Mode
	if s.opts.Faults.Has(FaultReplayTaskModeExact) {
		taskMode = modeExact
	}
	meta := map[string]any{"replay": map[string]any{"source_task_id": src.ID, "mode": taskMode}}
	t := &Task{Envelope: s.envelope("task", "task", meta), SessionID: src.SessionID, WorkspaceID: src.WorkspaceID,
		Status: StatusSubmitted, Input: src.Input, CreatedBy: c.actor, PersonaID: src.PersonaID, BranchID: src.BranchID,
		ParentTaskID: ptr(src.ID), AssignedAgentID: ptr(agentActor)}
	run.TaskID = t.ID
	cm := &commit{Replays: []*replayRun{run}}
	if s.opts.Faults.Has(FaultReplayNewSession) {
		// The fault: the replay lands in a session of its own, with no
		// lineage to the source's.
		ns := &Session{Envelope: s.envelope("session", "session", nil), WorkspaceID: se.WorkspaceID, State: "ACTIVE", PersonaID: se.PersonaID}
		cm.Puts = append(cm.Puts, put{Session: ns})
		cm.Events = append(cm.Events, s.newEvent("session.created", Pointer{"session", ns.ID}, map[string]any{"workspace_id": ns.WorkspaceID}, ns.WorkspaceID, ns.ID, "", c.actor))
		t.SessionID, t.BranchID = ns.ID, nil
	}
	body := t
	if s.opts.Faults.Has(FaultReplayNoParent) {
		// The fault: the answer names the source, the stored task does not.
		stored := *t
		stored.ParentTaskID = nil
		t = &stored
	}
	ev := s.newEvent("task.submitted", Pointer{"task", t.ID}, map[string]any{"status": StatusSubmitted}, t.WorkspaceID, t.SessionID, t.ID, c.actor)
	if c.idem != "" {
		ev.IdempotencyKey = ptr(c.idem)
	}
	cm.Puts = append(cm.Puts, put{Task: t})
	cm.Events = append(cm.Events, ev)
	rn := s.newRunnerLocked(t.ID)
	rn.replay = run
	status := http.StatusAccepted
	if s.opts.Faults.Has(FaultReplayAnswers201) {
		status = http.StatusCreated
	}
	return &result{status: status, body: body, c: cm, after: func() { s.startWorker(t.ID, nil, rn) }}, nil
}

// parseReplayRequest checks a replay request body: the OpenAPI's
// ReplayTaskRequest schema, then the contract rules internal/replay states
// (CheckRequest). Of those, a key of another form than the recommended ones
// and a secret override that is not receipt_only are SHOULDs: the Harness
// accepts them (docs/replay.md).
func (s *Server) parseReplayRequest(b obj) (*rq.Request, *apiError) {
	req, e := s.checkReplayRequest(b)
	if e != nil && s.opts.Faults.Has(FaultReplayInvalidOverride500) && strings.HasPrefix(e.Param, "override") {
		return nil, internal(errors.New("cannot use the override map"))
	}
	return req, e
}

func (s *Server) checkReplayRequest(b obj) (*rq.Request, *apiError) {
	if len(b.m) == 0 && s.opts.Faults.Has(FaultReplayBodyRequired) {
		return nil, badRequest("mode", "a replay request body is required")
	}
	raw, err := json.Marshal(b.m)
	if err != nil {
		return nil, internal(err)
	}
	ptr, msg, err := schemaProblem(raw) // replay_schema.go
	if err != nil {
		return nil, internal(err)
	}
	if msg != "" {
		return nil, badRequest(pointerParam(ptr), "request body %s: %s (the OpenAPI ReplayTaskRequest schema)", orRoot(ptr), msg)
	}
	for _, p := range rq.CheckRequest(raw) {
		var param string
		switch p.Code {
		case rq.CodeOverrideKeyForm, rq.CodeSecretVisibility:
			continue // SHOULDs: accepted
		case rq.CodeCheckpointMissing:
			if s.opts.Faults.Has(FaultReplayCheckpointUnchecked) {
				continue
			}
			param = "checkpoint_id"
		case rq.CodeOverridesInExact:
			param = "override"
		case rq.CodeOverrideKindMismatch:
			param = "override." + p.Key + ".kind"
		case rq.CodeOverrideMaterial:
			param = "override." + p.Key
		case rq.CodeOverrideHashMismatch:
			param = "override." + p.Key + ".sha256"
		}
		return nil, badRequest(param, "%s", p.String())
	}
	var req rq.Request
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&req); err != nil {
		return nil, badRequest("", "malformed replay request: %v", err)
	}
	if m, _ := b.m["metadata"].(map[string]any); m != nil {
		if r, ok := m["refresh"].(bool); ok && r {
			return nil, badRequest("metadata.refresh", "this Harness does not refresh memory, secrets or host facts: a replay uses the recorded ones")
		}
	}
	return &req, nil
}

// pointerParam turns a JSON pointer into the dotted param form of this
// Harness's errors: /override/llm:main:1/kind → override.llm:main:1.kind.
func pointerParam(ptr string) string {
	if ptr == "" {
		return ""
	}
	toks := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, t := range toks {
		toks[i] = jsonv.Untoken(t)
	}
	return strings.Join(toks, ".")
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}

// missingDep is the 404 of a dependency a replay request names that cannot
// be found (RPLY-FAIL-001): error.param the member, error.details {kind, id}.
func (s *Server) missingDep(param, kind, id, format string, args ...any) *apiError {
	e := &apiError{Status: http.StatusNotFound, Code: "resource_not_found", Param: param,
		Message: fmt.Sprintf(format, args...), Details: map[string]any{"kind": kind, "id": id}}
	if s.opts.Faults.Has(FaultReplayFailureUnnamed) {
		e.Param, e.Details, e.Message = "", nil, "a dependency of the replay cannot be found"
	}
	return e
}

// resolveReplayLocked resolves a checked request against its source task:
// the checkpoint boundary, each override's dependency, source event,
// material and hashes. Holds s.mu.
func (s *Server) resolveReplayLocked(c *call, src *Task, req *rq.Request) (*replayRun, *apiError) {
	run := &replayRun{SourceTaskID: src.ID, Mode: modeExact}
	if req.Mode != nil {
		run.Mode = *req.Mode
	}
	if req.Reason != nil {
		run.Reason = *req.Reason
	}
	evs, complete := s.sourceEventsLocked(src.ID)
	if s.opts.Faults.Has(FaultReplayHistoryLostOnRestart) && len(evs) > 0 && evs[0].pos < s.bootPos {
		complete = false // the fault: what ran before this process is not kept for replay
	}
	if !complete {
		return nil, s.missingDep("", "event", src.ID+":0", "the event log of task %s is no longer retained in full: it cannot be replayed", src.ID)
	}
	if run.Mode == modeFromCheckpoint {
		from, e := s.checkpointLocked(src, evs, req)
		if e != nil {
			return nil, e
		}
		if !s.opts.Faults.Has(FaultReplayCheckpointIgnored) {
			run.FromEventID = from
		}
	}
	keys := make([]string, 0, len(req.Override))
	for k := range req.Override {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, key := range keys {
		o, e := s.resolveOverrideLocked(c, src, evs, key, req.Override[key], run.Reason)
		if e != nil {
			return nil, e
		}
		run.Overrides = append(run.Overrides, *o)
	}
	run.EventLog = s.eventLogMaterialLocked(src, evs)
	return run, nil
}

// sourceEventsLocked is task id's event log in order, and whether it is
// whole (its task.submitted still retained).
func (s *Server) sourceEventsLocked(id string) ([]*Event, bool) {
	var out []*Event
	for _, pos := range s.st.byTask[id] {
		if e, ok := s.st.event(pos); ok {
			out = append(out, e)
		}
	}
	return out, len(out) > 0 && out[0].Event == "task.submitted"
}

// checkpointLocked finds the boundary of a from_checkpoint request: the
// agent.checkpoint event of checkpoint_id, or the event checkpoint_event_id
// (any event of the source task); both must agree when both are given.
func (s *Server) checkpointLocked(src *Task, evs []*Event, req *rq.Request) (string, *apiError) {
	var byID, byEvent string
	if req.CheckpointID != nil && *req.CheckpointID != "" {
		for _, e := range evs {
			if e.Event == "agent.checkpoint" && e.Payload["checkpoint_id"] == *req.CheckpointID {
				byID = e.ID
			}
		}
		if byID == "" {
			return "", s.missingDep("checkpoint_id", "event", *req.CheckpointID, "task %s recorded no checkpoint %q", src.ID, *req.CheckpointID)
		}
	}
	if req.CheckpointEventID != nil && *req.CheckpointEventID != "" {
		id := *req.CheckpointEventID
		if !slices.ContainsFunc(evs, func(e *Event) bool { return e.ID == id }) {
			return "", s.missingDep("checkpoint_event_id", "event", id, "event %q is no event of task %s", id, src.ID)
		}
		byEvent = id
	}
	if byID != "" && byEvent != "" && byID != byEvent {
		return "", badRequest("checkpoint_event_id", "checkpoint_event_id %s is not the event of checkpoint_id %q (%s)", byEvent, *req.CheckpointID, byID)
	}
	if byID != "" {
		return byID, nil
	}
	return byEvent, nil
}

// resolveOverrideLocked checks one override against the source's recorded
// dependency under its key.
func (s *Server) resolveOverrideLocked(c *call, src *Task, evs []*Event, key string, o rq.Override, reason string) (*replayOverride, *apiError) {
	param := "override." + key
	dep := s.st.rp.dep(src.ID, key)
	if dep == nil {
		return nil, s.missingDep(param, "host", key, "task %s recorded no dependency under the override key %q", src.ID, key)
	}
	if !slices.Contains(overrideKinds[dep.Op], o.Kind) {
		return nil, badRequest(param+".kind", "override %q has kind %q, but the dependency it names (a %s) takes %s", key, o.Kind, dep.Op, strings.Join(overrideKinds[dep.Op], " or "))
	}
	out := &replayOverride{Key: key, Kind: o.Kind, Op: dep.Op, Before: dep.SHA256, Reason: defaultReplayReason}
	switch {
	case o.Reason != nil && *o.Reason != "":
		out.Reason = *o.Reason
	case reason != "":
		out.Reason = reason
	}
	// The source event the delta names.
	for _, e := range evs {
		if e.Payload["override_key"] == key {
			out.EventID = e.ID
		}
	}
	if o.EventID != nil && *o.EventID != "" {
		id := *o.EventID
		i := slices.IndexFunc(evs, func(e *Event) bool { return e.ID == id })
		switch {
		case i < 0:
			return nil, s.missingDep(param+".event_id", "event", id, "event %q is no event of task %s", id, src.ID)
		case evs[i].Payload["override_key"] != key:
			return nil, badRequest(param+".event_id", "event %s of task %s did not record %q", id, src.ID, key)
		}
		out.EventID = id
	}
	var value []byte // the substitute, to check its type
	if o.HasValue() {
		canon, err := jcs.Transform(o.Value)
		if err != nil {
			return nil, badRequest(param+".value", "override %q: value is not I-JSON: %v", key, err)
		}
		h, _ := rq.ValueHash(o.Value)
		out.Value, out.After, value = canon, h, canon
	} else {
		id := *o.ArtifactID
		a, ok := s.st.artifacts.get(id)
		blob, has := s.st.blobs[id]
		if !ok || !has || !s.seesLocked(c.actor, a) {
			return nil, s.missingDep(param+".artifact_id", "artifact", id, "override %q names artifact %q, which does not exist or has no content", key, id)
		}
		out.ArtifactID, out.After, value = id, rq.BytesHash(blob), blob
		if o.SHA256 != nil && *o.SHA256 != out.After {
			return nil, badRequest(param+".sha256", "override %q: sha256 %s, but artifact %s hashes to %s", key, *o.SHA256, id, out.After)
		}
	}
	if !out.secret() || o.HasValue() {
		if e := checkSubstitute(dep.Op, value, param); e != nil {
			return nil, e
		}
	}
	return out, nil
}

// checkSubstitute checks that a substitute can stand for a dependency of
// op: JSON, and an integer >= 0 for a clock reading, a string for a host
// fact or an inline secret.
func checkSubstitute(op string, value []byte, param string) *apiError {
	var v any
	dec := json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return badRequest(param, "the substitute is not JSON: %v", err)
	}
	switch scenario.Op(op) {
	case scenario.OpClockRead:
		n, ok := v.(json.Number)
		if i, err := strconv.ParseInt(string(n), 10, 64); !ok || err != nil || i < 0 {
			return badRequest(param, "a clock reading is replaced by an integer >= 0 (milliseconds)")
		}
	case scenario.OpHostFact, scenario.OpSecretRead:
		if _, ok := v.(string); !ok {
			return badRequest(param, "a %s is replaced by a JSON string", op)
		}
	}
	return nil
}

// eventLogMaterialLocked is the source event log material of a replay
// receipt: the source's tape, where it has one (docs/replay.md, Tapes),
// else the NDJSON of its event log.
func (s *Server) eventLogMaterialLocked(src *Task, evs []*Event) replayMaterial {
	if a, ok := s.st.artifacts.get(tapeArtifactID(src.ID)); ok && a.SHA256 != nil {
		return replayMaterial{URI: "artifact://" + a.ID, SHA256: "sha256:" + *a.SHA256}
	}
	var buf bytes.Buffer
	for _, e := range evs {
		b, _ := json.Marshal(e)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	return replayMaterial{URI: "/v1/tasks/" + src.ID + "/events", SHA256: rq.BytesHash(buf.Bytes())}
}

// deltaID names the receipt delta of an override key.
func deltaID(key string) string { return "delta_" + strings.NewReplacer(":", "_").Replace(key) }
