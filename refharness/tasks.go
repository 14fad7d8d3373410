package refharness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the task lifecycle: transitions, cancellation and its
// events.
var (
	FaultTerminalTaskMutable = declare(fault.Fault{Name: "terminal-task-mutable",
		Doc:          "cancel moves a COMPLETED/FAILED task to CANCELED",
		Fails:        []string{"CORE-CANCEL-002"},
		Tolerated:    []string{"CORE-CANCEL-003", "CORE-CANCEL-004", "CORE-LIFE-001", "CORE-LIFE-002", "CORE-OUT-001"},
		Why:          "a completed task turned CANCELED keeps its completed_at: the same broken cancel, seen on the task's fields (CORE-CANCEL-003) and, when cancels race a task's end, as a second terminal event (CORE-CANCEL-004); a stream that watched that task then sees a terminal status change (CORE-LIFE-001), its last state event disagree with the task (CORE-LIFE-002) and its Outcome disagree with the task (CORE-OUT-001)",
		SlowHookless: true})
	FaultCompletedAfterCancel = declare(fault.Fault{Name: "completed-after-cancel",
		Doc:          "a canceled task is later overwritten with COMPLETED",
		Fails:        []string{"CORE-CANCEL-001"},
		Tolerated:    []string{"CORE-CANCEL-004"},
		Why:          "the completion that replaces CANCELED is a second terminal event, which the cancel race sees too (CORE-CANCEL-004)",
		SlowHookless: true})
	FaultCanceledHasCompletedAt = declare(fault.Fault{Name: "canceled-has-completed-at",
		Doc:          "a CANCELED task carries completed_at",
		Fails:        []string{"CORE-CANCEL-003"},
		SlowHookless: true})
	FaultSkipTransitionEvent = declare(fault.Fault{Name: "skip-transition-event",
		Doc:      "SUBMITTED->WORKING emits no task event",
		Fails:    []string{"CORE-LIFE-002"},
		Hookless: true})
	FaultIllegalTransition = declare(fault.Fault{Name: "illegal-transition",
		Doc:      "tasks jump SUBMITTED->COMPLETED without WORKING",
		Fails:    []string{"CORE-LIFE-001"},
		Hookless: true})
	FaultIDsNotStable = declare(fault.Fault{Name: "ids-not-stable",
		Doc:   "GET /v1/tasks/{id} answers with a different id each time",
		Fails: []string{"CORE-ID-001", "CORE-ID-002"}})
	FaultTaskListIgnoresSession = declare(fault.Fault{Name: "task-list-ignores-session",
		Doc:   "GET /v1/tasks ignores ?session_id=",
		Fails: []string{"CORE-TASK-003"}})
	FaultCancelNoop = declare(fault.Fault{Name: "cancel-noop",
		Doc:         "cancel of a running task answers 200 with the task and does nothing",
		Fails:       []string{"CORE-CANCEL-001"},
		TaskTimeout: 10 * time.Second,
		Why:         "three specs wait for a task whose cancel did nothing (ten minutes of work) to leave WORKING, which it never does: each wait runs to --task-timeout and ends in the expected failure, or in a verdict that holds whatever the wait's length; the waits of this run that must succeed are for tasks that end by themselves within 5 s at most"})
	FaultPlainSkipsWork = declare(fault.Fault{Name: "plain-skips-working",
		Doc:      "plain tasks jump SUBMITTED -> COMPLETED; task.completed names no previous status",
		Fails:    []string{"CORE-LIFE-001"},
		Hookless: true})
	FaultClosedTakesTasks = declare(fault.Fault{Name: "closed-session-takes-tasks",
		Doc:   "a CLOSED session still accepts new tasks",
		Fails: []string{"CORE-SESSION-001"}})
	// A race: a cancel that does not re-check the state. The cancel
	// checks the task and records the request (user.cancel_requested) in a
	// first durable write, then records CANCELED, its Outcome and receipt
	// from what it read at first, without checking again. Alone, a cancel
	// of a finished task is still refused; fired at once, every cancel
	// records CANCELED with an Outcome, and one that raced the task's end
	// overwrites it.
	FaultCancelNoRecheck = declare(fault.Fault{Name: "cancel-no-recheck",
		Doc:       "a cancel checks the task and durably records the request first, then records CANCELED from what it read without checking again: cancels fired at once each record CANCELED (and an Outcome), and one that raced the task's end overwrites it",
		Fails:     []string{"CORE-CANCEL-004"},
		Tolerated: []string{"CORE-CANCEL-002"},
		Why:       "a spec that cancels a plain task while it runs races the task's end the same way: the task goes COMPLETED, then CANCELED, which CORE-CANCEL-002 sees in its events",
		Race:      true})
	FaultTerminalAcceptsMessage = declare(fault.Fault{Name: "terminal-accepts-message",
		Doc:      "input and interrupt messages to a terminal task answer 201; input moves it back to WORKING",
		Fails:    []string{"CORE-LIFE-004"},
		Hookless: true})
)

// Variants of this area.
var (
	VariantCancelTerminalConflict = declareVariant(fault.Variant{Name: "cancel-terminal-409", Doc: "cancel of a terminal task answers 409 conflict, not 400"})
	// VariantNoScenarioHook hides the conform.scenarios test hook, as on a
	// third-party server: discovery and the card do not advertise it and
	// task metadata["conform.scenario"] is ignored (every task is the
	// default echo agent's). Like most real agents, that agent then keeps
	// what it wrote as an artifact of the task: a text/plain log named
	// AgentReplyArtifactName, with its bytes and sha256, which the task's
	// Outcome lists.
	VariantNoScenarioHook = declareVariant(fault.Variant{Name: "no-scenario-hook",
		Doc: "the conform.scenarios test hook is hidden, as on a third-party server: every task is the default echo agent's, which keeps its reply as an artifact"})
	// VariantSlowAgent makes the default agent take SlowAgentWork over
	// every task, in WORKING, before it answers (scenario tasks are as
	// their steps say); and, like an agent built for text, it fails a task
	// whose input holds no text that is not blank (FAILED, failure.code
	// SlowAgentNoTextCode).
	VariantSlowAgent = declareVariant(fault.Variant{Name: "slow-agent",
		Doc: "the default agent works a second over every task, and fails a task whose input holds no text"})
	// VariantChattyAgent makes the default agent emit 60 agent.message
	// events per task: more than one default page (50) of events.
	VariantChattyAgent = declareVariant(fault.Variant{Name: "chatty-agent",
		Doc: "the default agent emits 60 agent.message events per task: more than one default page of events"})
)

// AgentReplyArtifactName is metadata.name of the artifact the default
// agent keeps of its reply under VariantNoScenarioHook.
const AgentReplyArtifactName = "reply.txt"

// SlowAgentWork is how long the default agent works on a task under
// VariantSlowAgent, and SlowAgentNoTextCode the failure code of a task it
// had no text to work on.
const (
	SlowAgentWork       = time.Second
	SlowAgentNoTextCode = "no_text_input"
)

// agentActor is the actor id of the built-in agent in events it emits.
const agentActor = "agent_conform_echo"

// maxInbox bounds unconsumed task messages per running task.
const maxInbox = 256

// runner is the worker of one non-terminal task. inbox is guarded by Server.mu.
type runner struct {
	cancel    context.CancelFunc
	inbox     []*Message
	kinds     []string
	signal    chan struct{}
	artifacts []*Artifact
	replay    *replayRun // set for a replay task: its run replaces the scenario (replay_run.go)
	head      string     // the receipt chain's head when the task was taken up (FaultReceiptChainHeadStale)
}

// ending is how a task's terminal transition ends.
type ending struct {
	summary string   // the Outcome summary
	failure *Failure // set for FAILED
}

// ---- reads ----

func (s *Server) listTasks(c *call) (any, *apiError) {
	if s.opts.Faults.Has(FaultTaskListIgnoresSession) {
		return s.taskList(c, "")
	}
	return s.taskList(c, c.q.Get("session_id"))
}

func (s *Server) listSessionTasks(c *call) (any, *apiError) {
	if _, ok := s.st.sessions.get(c.params[0]); !ok {
		return nil, notFound("session", c.params[0])
	}
	return s.taskList(c, c.params[0])
}

func (s *Server) taskList(c *call, sess string) (any, *apiError) {
	ws, status := c.q.Get("workspace_id"), c.q.Get("status")
	if status != "" && status != StatusSubmitted && transitions[status] == nil && !Terminal(status) {
		return nil, badRequest("status", "status = %q, want a task status", status)
	}
	return listPage(s, c, s.st.tasks, func(t *Task) bool {
		return (sess == "" || t.SessionID == sess) && (ws == "" || t.WorkspaceID == ws) && (status == "" || t.Status == status)
	})
}

func (s *Server) getTask(c *call) (any, *apiError) {
	t, ok := s.st.tasks.get(c.params[0])
	if !ok {
		return nil, notFound("task", c.params[0])
	}
	if s.opts.Faults.Has(FaultIDsNotStable) {
		cp := *t
		cp.ID = s.ids.NewID("task")
		return &cp, nil
	}
	return t, nil
}

// ---- submit ----

func (s *Server) submitSessionTask(c *call) (*result, *apiError) {
	return s.submit(c, c.params[0], "")
}

func (s *Server) submitTask(c *call) (*result, *apiError) {
	sess, _, e := c.body.str("session_id", true)
	if e != nil {
		return nil, e
	}
	return s.submit(c, sess, "session_id")
}

func (s *Server) submit(c *call, sessID, sessParam string) (*result, *apiError) {
	b := c.body
	se, ok := s.st.sessions.get(sessID)
	if !ok {
		e := notFound("session", sessID)
		e.Param = sessParam
		return nil, e
	}
	if ws, ok, e := b.str("workspace_id", false); e != nil {
		return nil, e
	} else if ok && ws != se.WorkspaceID {
		return nil, badRequest("workspace_id", "workspace_id %s does not own session %s (its workspace is %s)", ws, se.ID, se.WorkspaceID)
	}
	in, _, e := b.object("input", true)
	if e != nil {
		return nil, e
	}
	if in.has("role") || in.has("parts") {
		if _, _, _, e := messageInput(in); e != nil {
			return nil, e
		}
	}
	persona, e := s.optionalPersona(b)
	if e != nil {
		return nil, e
	}
	if persona == nil {
		persona = se.PersonaID
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	if s.opts.Variants.Has(VariantNoScenarioHook) {
		// A server without the hook: the steps are just metadata it keeps.
		meta[scenario.Key+".ignored"] = meta[scenario.Key]
		delete(meta, scenario.Key)
	}
	var sc *scenario.Scenario
	if v, ok := meta[scenario.Key]; ok {
		var err error
		if sc, err = scenario.Parse(v); err != nil {
			var se *scenario.Error
			if errors.As(err, &se) {
				return nil, badRequest(se.Param, "%s", err.Error())
			}
			return nil, badRequest("metadata."+scenario.Key, "%v", err)
		}
	}
	if se.State == "CLOSED" && !s.opts.Faults.Has(FaultClosedTakesTasks) {
		return nil, conflict("session %s is CLOSED; tasks cannot be submitted", se.ID)
	}
	if e := s.checkVaultStep(sc); e != nil { // vaults.go
		return nil, e
	}
	quota, e := s.quotaGateLocked(se.WorkspaceID, persona) // hard quotas, before anything is stored: quotas.go
	if e != nil {
		return nil, e
	}
	if quota.late != nil {
		sc = quota.late
	}
	t := &Task{Envelope: s.envelope("task", "task", meta), SessionID: se.ID, WorkspaceID: se.WorkspaceID,
		Status: StatusSubmitted, Input: s.privateInput(in.m), CreatedBy: c.actor, PersonaID: persona, AssignedAgentID: ptr(agentActor)}
	if t.BranchID, e = s.taskBranchLocked(b, se); e != nil { // branches.go
		return nil, e
	}
	for _, f := range []struct {
		name string
		dst  **string
	}{{"parent_task_id", &t.ParentTaskID}} {
		if v, ok, e := b.str(f.name, false); e != nil {
			return nil, e
		} else if ok {
			*f.dst = ptr(v)
		}
	}
	ev := s.newEvent("task.submitted", Pointer{"task", t.ID}, map[string]any{"status": StatusSubmitted}, t.WorkspaceID, t.SessionID, t.ID, c.actor)
	if c.idem != "" {
		ev.IdempotencyKey = ptr(c.idem)
	}
	t.QuotaID = quota.quotaID
	rn := s.newRunnerLocked(t.ID)
	return &result{status: http.StatusAccepted, body: t, c: &commit{Puts: []put{{Task: t}}, Events: []*Event{ev}, Mgmt: quota.mc},
		after: func() { s.startWorker(t.ID, sc, rn) }}, nil
}

// ---- cancel ----

func (s *Server) cancelTask(c *call) (*result, *apiError) {
	old, ok := s.st.tasks.get(c.params[0])
	if !ok {
		return nil, notFound("task", c.params[0])
	}
	requested := false
	if c.arr.task != nil {
		old, requested = c.arr.task, true // FaultCancelNoRecheck: the task as the cancel first read it
	}
	reason, _, e := c.body.str("reason", false)
	if e != nil {
		return nil, e
	}
	if Terminal(old.Status) && !(s.opts.Faults.Has(FaultTerminalTaskMutable) && old.Status != StatusCanceled) {
		msg := fmt.Sprintf("task %s is %s; a terminal task cannot be canceled", old.ID, old.Status)
		if s.opts.Variants.Has(VariantCancelTerminalConflict) {
			return nil, conflict("%s", msg)
		}
		return nil, &apiError{Status: http.StatusBadRequest, Code: "invalid_state_transition", Message: msg,
			Details: map[string]any{"status": old.Status}}
	}
	if s.opts.Faults.Has(FaultCancelNoop) {
		t := *old
		return &result{status: http.StatusOK, body: &t}, nil
	}
	now := s.now()
	t := *old
	t.Status, t.CanceledAt, t.UpdatedAt = StatusCanceled, ptr(now), now
	if s.opts.Faults.Has(FaultCanceledHasCompletedAt) {
		t.CompletedAt = ptr(now)
	}
	summary := cancelSummary(reason)
	cm := &commit{}
	if !requested {
		cm.Events = append(cm.Events, s.newEvent("user.cancel_requested", Pointer{"task", t.ID}, map[string]any{"reason": nullable(reason)}, t.WorkspaceID, t.SessionID, t.ID, c.actor))
	}
	if err := s.finishLocked(cm, &t, old.Status, "CANCELED", summary, nil, c.actor); err != nil {
		return nil, internal(err)
	}
	rn := s.runners[t.ID]
	return &result{status: http.StatusOK, body: &t, c: cm, after: func() {
		if rn != nil && !s.opts.Faults.Has(FaultCompletedAfterCancel) {
			rn.cancel()
		}
	}}, nil
}

// readTaskEarly is FaultCancelNoRecheck's first half (routes.go,
// arrive): the task is checked and the cancel request durably recorded
// (user.cancel_requested); the task as it was is kept for the second half,
// cancelTask under the write lock, which does not look again. A task
// already terminal, or gone, is left to the cancel's ordinary path, which
// refuses it.
func (s *Server) readTaskEarly(c *call) {
	if !s.opts.Faults.Has(FaultCancelNoRecheck) {
		return
	}
	reason, _, _ := c.body.str("reason", false)
	s.mu.Lock()
	old, ok := s.st.tasks.get(c.params[0])
	if !ok || Terminal(old.Status) {
		s.mu.Unlock()
		return
	}
	seq, err := s.commitLocked(&commit{Events: []*Event{
		s.newEvent("user.cancel_requested", Pointer{"task", old.ID}, map[string]any{"reason": nullable(reason)}, old.WorkspaceID, old.SessionID, old.ID, c.actor),
	}})
	s.mu.Unlock()
	if err != nil || s.wait(seq) != nil {
		return
	}
	c.arr.task = old
}

// cancelSummary is a canceled task's Outcome summary.
func cancelSummary(reason string) string {
	if reason != "" {
		return "canceled: " + reason
	}
	return "canceled"
}

// finishLocked records a terminal transition of t (already copied and given
// its new status) with its Outcome and its receipt into cm.
func (s *Server) finishLocked(cm *commit, t *Task, from, outcomeStatus, summary string, failure *Failure, actor string) error {
	o := s.outcomeLocked(t, outcomeStatus, summary, failure)
	ev := s.terminalLocked(cm, t, o, from, failure, actor)
	if s.noReceiptLocked(t) { // the task's Persona wants none (personas.go)
		return nil
	}
	return s.issueReceiptLocked(cm, t, o, ev)
}

// outcomeLocked creates the Outcome of terminal task t and links t to it.
func (s *Server) outcomeLocked(t *Task, outcomeStatus, summary string, failure *Failure) *Outcome {
	o := &Outcome{Envelope: s.envelope("outcome", "outcome", nil), TaskID: t.ID, Status: outcomeStatus, Summary: summary,
		Artifacts: []*Artifact{}, Failure: failure}
	if rn := s.runners[t.ID]; rn != nil {
		o.Artifacts = append(o.Artifacts, rn.artifacts...)
	}
	t.OutcomeID = ptr(o.ID)
	return o
}

// terminalLocked adds t, its outcome o and its terminal event to cm, and
// returns the event.
func (s *Server) terminalLocked(cm *commit, t *Task, o *Outcome, from string, failure *Failure, actor string) *Event {
	payload := map[string]any{"status": t.Status, "previous_status": from, "outcome_id": o.ID}
	if failure != nil {
		payload["failure"] = failure
	}
	cm.Puts = append(cm.Puts, put{Task: t}, put{Outcome: o})
	s.addTapeLocked(cm, t) // replay_tape.go: the run's tape, as an artifact of the task
	ev := s.newEvent(transitionEvent(from, t.Status), Pointer{"task", t.ID}, payload, t.WorkspaceID, t.SessionID, t.ID, actor)
	cm.Events = append(cm.Events, ev)
	return ev
}

// ---- task messages ----

func (s *Server) appendTaskMessage(c *call) (*result, *apiError) {
	t, ok := s.st.tasks.get(c.params[0])
	if !ok {
		return nil, notFound("task", c.params[0])
	}
	kind, _, e := c.body.enum("kind", true, "input", "interrupt", "tool_confirmation")
	if e != nil {
		return nil, e
	}
	mo, _, e := c.body.object("message", true)
	if e != nil {
		return nil, e
	}
	role, parts, meta, e := messageInput(mo)
	if e != nil {
		return nil, e
	}
	reopen := Terminal(t.Status) && s.opts.Faults.Has(FaultTerminalAcceptsMessage)
	if Terminal(t.Status) && !reopen {
		return nil, conflict("task %s is %s; it takes no more messages", t.ID, t.Status)
	}
	rn := s.runners[t.ID]
	if rn != nil && len(rn.inbox) >= maxInbox {
		return nil, conflict("task %s has %d unconsumed messages; wait for it to consume them", t.ID, maxInbox)
	}
	se, ok := s.st.sessions.get(t.SessionID)
	if !ok {
		return nil, internal(fmt.Errorf("task %s names missing session %s", t.ID, t.SessionID))
	}
	cp := *se
	cm := &commit{}
	msg := s.appendMessage(cm, &cp, t.ID, role, parts, meta, c.actor)
	cm.Puts = append(cm.Puts, put{Session: &cp})
	evKind := map[string]string{"input": "user.input_submitted", "tool_confirmation": "user.tool_confirmation", "interrupt": "user.message"}[kind]
	cm.Events = append(cm.Events, s.newEvent(evKind, Pointer{"task", t.ID}, map[string]any{"message_id": msg.ID, "kind": kind},
		t.WorkspaceID, t.SessionID, t.ID, c.actor))
	if kind == "tool_confirmation" {
		s.resolveByMessageLocked(cm, t, msg) // permissions.go
	}
	if reopen && kind == "input" {
		// The fault: input moves the finished task back to WORKING.
		nt := *t
		nt.Status, nt.UpdatedAt = StatusWorking, s.now()
		cm.Puts = append(cm.Puts, put{Task: &nt})
		cm.Events = append(cm.Events, s.newEvent(transitionEvent(t.Status, StatusWorking), Pointer{"task", t.ID},
			map[string]any{"status": StatusWorking, "previous_status": t.Status}, t.WorkspaceID, t.SessionID, t.ID, c.actor))
	}
	return &result{status: http.StatusCreated, body: msg, c: cm, after: func() {
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
	}}, nil
}

// ---- the worker ----

func (s *Server) newRunnerLocked(id string) *runner {
	rn := &runner{signal: make(chan struct{}, 1), cancel: func() {}, head: s.st.rc.head()}
	s.runners[id] = rn
	return rn
}

// startWorker runs the task's scenario (or the echo agent) in a goroutine.
func (s *Server) startWorker(id string, sc *scenario.Scenario, rn *runner) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	rn.cancel = cancel
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) { // canceled before the worker started
		delete(s.runners, id)
		s.mu.Unlock()
		cancel()
		return
	}
	s.wg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.wg.Done()
		defer cancel()
		s.run(ctx, id, sc, rn)
		s.mu.Lock()
		if s.runners[id] == rn {
			delete(s.runners, id)
		}
		s.mu.Unlock()
	}()
}

func (s *Server) run(ctx context.Context, id string, sc *scenario.Scenario, rn *runner) {
	if s.opts.Faults.Has(FaultReceiptChainHeadStale) {
		time.Sleep(raceGap) // between the worker's read of the chain head (newRunnerLocked) and its receipt
	}
	if rn.replay != nil {
		s.runReplay(ctx, id, rn.replay) // replay_run.go
		return
	}
	var steps []scenario.Step
	if sc == nil {
		steps = s.defaultSteps(id)
	} else {
		steps = sc.Steps
	}
	skipWorking := s.opts.Faults.Has(FaultIllegalTransition) && onlyTerminal(steps) ||
		s.opts.Faults.Has(FaultPlainSkipsWork) && sc == nil
	if !skipWorking {
		if !s.move(ctx, id, StatusWorking, nil, nil) {
			return
		}
	}
	// An error only says the worker stopped (the task was canceled, the
	// server is closing): the task shows what happened.
	_ = scenario.Steps(ctx, steps, &worker{s: s, id: id, rn: rn}) // worker.go
}

// onlyTerminal reports whether steps only put out messages and artifacts
// and end: the tasks FaultIllegalTransition moves without WORKING.
func onlyTerminal(steps []scenario.Step) bool {
	for _, st := range steps {
		if st.Op != scenario.OpEmit && st.Op != scenario.OpArtifact && !st.Terminal() {
			return false
		}
	}
	return true
}

// defaultSteps is the echo agent of task id: one agent message repeating
// the input, then COMPLETED; the variants change it as their declarations
// say.
func (s *Server) defaultSteps(id string) []scenario.Step {
	text := s.taskInput(id)
	steps := defaultSteps(text)
	if s.opts.Variants.Has(VariantChattyAgent) {
		chatty := []scenario.Step{{Op: scenario.OpEmit, Count: 60, Text: "chatty: " + text}}
		steps = append(chatty, steps...)
	}
	if s.opts.Variants.Has(VariantNoScenarioHook) {
		// Keeps its reply as an artifact of the task, before it ends (the
		// Outcome lists it).
		last := len(steps) - 1
		reply := scenario.Step{Op: scenario.OpArtifact, Kind: "log", MimeType: "text/plain", Content: "echo: " + text, Name: AgentReplyArtifactName}
		steps = append(steps[:last:last], reply, steps[last])
	}
	if s.opts.Variants.Has(VariantSlowAgent) {
		work := scenario.Step{Op: scenario.OpWork, MS: int(SlowAgentWork / time.Millisecond)}
		if !s.taskHasText(id) {
			// Nothing to work on: the agent gives up, as agents built for
			// text do.
			return []scenario.Step{work, {Op: scenario.OpFail, Code: SlowAgentNoTextCode, Message: "the task's input holds no text to work on"}}
		}
		steps = append([]scenario.Step{work}, steps...)
	}
	return steps
}

// taskHasText reports whether task id's input holds text that is not
// blank, whatever its visibility: a text part of a message, or the text
// member of a structured payload.
func (s *Server) taskHasText(id string) bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.st.tasks.get(id)
	if !ok {
		return false
	}
	m, _ := t.Input.(map[string]any)
	if parts, ok := m["parts"].([]any); ok {
		for _, p := range parts {
			pm, _ := p.(map[string]any)
			if txt, ok := pm["text"].(string); ok && pm["type"] == "text" && strings.TrimSpace(txt) != "" {
				return true
			}
		}
		return false
	}
	txt, _ := m["text"].(string)
	return strings.TrimSpace(txt) != ""
}

func defaultSteps(text string) []scenario.Step {
	return []scenario.Step{
		{Op: scenario.OpEmit, Count: 1, Text: "echo: " + text},
		{Op: scenario.OpComplete, Summary: "echo: " + text},
	}
}

// taskInput renders a task's input as text for the echo agent.
func (s *Server) taskInput(id string) string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	t, ok := s.st.tasks.get(id)
	if !ok {
		return ""
	}
	return publicInputText(t.Input) // privacy.go: non-public input is not the agent's to repeat
}

// await blocks until a task message of kind arrives.
func (s *Server) await(ctx context.Context, rn *runner, kind string) (*Message, bool) {
	for {
		s.mu.Lock()
		for i, k := range rn.kinds {
			if k == kind {
				m := rn.inbox[i]
				rn.inbox = append(rn.inbox[:i:i], rn.inbox[i+1:]...)
				rn.kinds = append(rn.kinds[:i:i], rn.kinds[i+1:]...)
				s.mu.Unlock()
				return m, true
			}
		}
		s.mu.Unlock()
		select {
		case <-rn.signal:
		case <-ctx.Done():
			return nil, false
		}
	}
}

// move records a transition of task id to status `to`. For terminal statuses
// end says how a terminal status ends: the outcome summary, and the failure.
// extra events are committed before the task event.
func (s *Server) move(ctx context.Context, id, to string, payload map[string]any, end *ending, extra ...*Event) bool {
	if to == StatusCompleted || to == StatusFailed {
		if seq, done, err := s.finishTask(ctx, id, to, end, extra); done {
			return err == nil && s.wait(seq) == nil
		}
		// The task changed while its receipt was prepared: make the
		// transition all under the lock instead.
	}
	s.mu.Lock()
	old, ok := s.movableLocked(ctx, id, to)
	if !ok {
		s.mu.Unlock()
		return false
	}
	now := s.now()
	t := *old
	t.Status, t.UpdatedAt = to, now
	cm := &commit{Events: extra}
	switch to {
	case StatusWorking:
		if t.StartedAt == nil {
			t.StartedAt = ptr(now)
		}
		if s.opts.Faults.Has(FaultSkipTransitionEvent) && old.Status == StatusSubmitted {
			cm.Puts = append(cm.Puts, put{Task: &t})
			break
		}
		fallthrough
	case StatusInputRequired, StatusAuthRequired:
		if payload == nil {
			payload = map[string]any{}
		}
		payload["status"], payload["previous_status"] = to, old.Status
		cm.Puts = append(cm.Puts, put{Task: &t})
		cm.Events = append(cm.Events, s.newEvent(transitionEvent(old.Status, to), Pointer{"task", id}, payload, t.WorkspaceID, t.SessionID, id, agentActor))
		if to == StatusAuthRequired && !s.opts.Faults.Has(FaultPermissionNotListed) {
			s.openPermissionLocked(cm, &t, payload) // permissions.go
		}
	case StatusCompleted:
		t.CompletedAt = ptr(now)
		outcome := "SUCCEEDED"
		if s.finishLocked(cm, &t, old.Status, outcome, end.summary, nil, agentActor) != nil {
			s.mu.Unlock()
			return false
		}
	case StatusFailed:
		t.CompletedAt = ptr(now)
		t.Failure = end.failure
		if s.finishLocked(cm, &t, old.Status, "FAILED", end.summary, t.Failure, agentActor) != nil {
			s.mu.Unlock()
			return false
		}
	}
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

// movableLocked returns task id if the worker may move it to status to.
func (s *Server) movableLocked(ctx context.Context, id, to string) (*Task, bool) {
	old, ok := s.st.tasks.get(id)
	if !ok || ctx.Err() != nil && !s.opts.Faults.Has(FaultCompletedAfterCancel) {
		return nil, false
	}
	overwrite := s.opts.Faults.Has(FaultCompletedAfterCancel) && old.Status == StatusCanceled && to == StatusCompleted
	if Terminal(old.Status) && !overwrite {
		return nil, false
	}
	skips := s.opts.Faults.Has(FaultReplaySkipsStarted) && s.st.rp.runs[id] != nil // the fault: a replay that never starts
	if !Allowed(old.Status, to) && !overwrite && !skips && !s.opts.Faults.Has(FaultIllegalTransition) && !s.opts.Faults.Has(FaultPlainSkipsWork) {
		// A worker bug, not a client's: refuse it and stop the worker rather
		// than crash the server. Tests notice the task never finishing.
		return nil, false
	}
	return old, true
}

// finishTask is move to COMPLETED or FAILED, with the task's receipt built,
// canonicalized and encoded outside s.mu so that other writers are not held
// up by it. Under the lock it builds the new task version, its outcome and
// terminal event and gathers what the task did (the same steps, in the same
// order, as finishLocked); without it, it prepares the receipt; under
// the lock again, if the task and its events are unchanged, it links the
// receipt to the chain head, hashes and signs it (finishReceipt) and commits
// everything in one commit, as finishLocked does, and returns the journal
// sequence to wait for. If the task changed meanwhile (a cancel, the fault
// that reopens a terminal task), done is false and nothing was committed:
// the caller redoes the transition under the lock from the current state.
func (s *Server) finishTask(ctx context.Context, id, to string, end *ending, extra []*Event) (seq uint64, done bool, err error) {
	s.mu.Lock()
	old, ok := s.movableLocked(ctx, id, to)
	if !ok {
		s.mu.Unlock()
		return 0, true, errNotMoved
	}
	if s.noReceiptLocked(old) {
		// No receipt to prepare: the transition is made under the lock.
		s.mu.Unlock()
		return 0, false, nil
	}
	now := s.now()
	t := *old
	t.Status, t.UpdatedAt, t.CompletedAt = to, now, ptr(now)
	outcome, failure := "SUCCEEDED", (*Failure)(nil)
	if to == StatusFailed {
		t.Failure = end.failure
		outcome, failure = "FAILED", t.Failure
	}
	o := s.outcomeLocked(&t, outcome, end.summary, failure)
	cm := &commit{Events: extra}
	ev := s.terminalLocked(cm, &t, o, old.Status, failure, agentActor)
	last := s.lastTaskEventLocked(id)
	d := s.draftReceiptLocked(&t)
	s.mu.Unlock()

	p, err := s.prepareReceipt(d, &t, o)
	if err != nil {
		return 0, true, err
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, _ := s.st.tasks.get(id); cur != old || s.lastTaskEventLocked(id) != last {
		return 0, false, nil
	}
	head := s.st.rc.head()
	if rn := s.runners[id]; rn != nil && s.opts.Faults.Has(FaultReceiptChainHeadStale) {
		head = rn.head // receipts.go: the head as the worker read it when it took the task up
	}
	r, err := s.finishReceipt(p, head)
	if err != nil {
		return 0, true, err
	}
	s.attachReceiptLocked(cm, &t, o, ev, r)
	seq, err = s.commitLocked(cm)
	return seq, true, err
}

// errNotMoved: the worker may not make the transition (finishTask).
var errNotMoved = errors.New("refharness: transition not allowed")

// lastTaskEventLocked is the position of task id's latest event (0: none).
func (s *Server) lastTaskEventLocked(id string) uint64 {
	if ps := s.st.byTask[id]; len(ps) > 0 {
		return ps[len(ps)-1]
	}
	return 0
}

// emit appends one agent message to the task's session.
func (s *Server) emit(ctx context.Context, id string, i, n int, text string) bool {
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if ok && Terminal(t.Status) && s.opts.Faults.Has(FaultCompletedAfterCancel) {
		s.mu.Unlock()
		return true // the bug: keep going after cancel so completion can overwrite it
	}
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	se, ok := s.st.sessions.get(t.SessionID)
	if !ok {
		s.mu.Unlock()
		return false
	}
	cp := *se
	cm := &commit{}
	msg := s.appendMessage(cm, &cp, id, "agent", []map[string]any{{"type": "text", "text": text, "visibility": "public"}}, nil, agentActor)
	cm.Puts = append(cm.Puts, put{Session: &cp})
	cm.Events = append(cm.Events, s.newEvent("agent.message", Pointer{"task", id},
		map[string]any{"message_id": msg.ID, "text": text, "index": i, "count": n}, t.WorkspaceID, t.SessionID, id, agentActor))
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

func (s *Server) produceArtifact(ctx context.Context, id string, st scenario.Step, rn *runner) bool {
	kind, mime := st.Kind, st.MimeType
	if kind == "" {
		kind = "log"
	}
	if mime == "" {
		mime = "text/plain"
	}
	content := []byte(st.Content)
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if ok && Terminal(t.Status) && s.opts.Faults.Has(FaultCompletedAfterCancel) {
		s.mu.Unlock()
		return true // the bug, as in emit: keep going after cancel
	}
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	meta := map[string]any{}
	if st.Name != "" {
		meta["name"] = st.Name
	}
	sum := sha256hex(content)
	a := &Artifact{Envelope: s.envelope("artifact", "artifact", meta), Kind: kind, MimeType: mime, Visibility: "public",
		SHA256: ptr(sum), SizeBytes: ptr(int64(len(content))), WorkspaceID: ptr(t.WorkspaceID), SessionID: ptr(t.SessionID), TaskID: ptr(id),
		BranchID: t.BranchID}
	cm := &commit{Puts: []put{{Artifact: a}}, Blobs: map[string][]byte{a.ID: content},
		Events: []*Event{s.newEvent("artifact.created", Pointer{"artifact", a.ID}, map[string]any{"kind": kind, "sha256": sum}, t.WorkspaceID, t.SessionID, id, agentActor)}}
	rn.artifacts = append(rn.artifacts, a)
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

func (s *Server) toolApproval(ctx context.Context, id string, st scenario.Step, rn *runner) bool {
	tool := st.Tool
	if tool == "" {
		tool = "conform.noop"
	}
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	callID := s.ids.NewID("toolcall")
	s.mu.RLock()
	t, ok := s.st.tasks.get(id)
	s.mu.RUnlock()
	if !ok {
		return false
	}
	ev := func(kind string, p map[string]any) *Event {
		p["tool_call_id"], p["name"] = callID, tool
		return s.newEvent(kind, Pointer{"task", id}, p, t.WorkspaceID, t.SessionID, id, agentActor)
	}
	if !s.move(ctx, id, StatusAuthRequired, map[string]any{"reason": "tool_approval", "tool_call_id": callID, "name": tool}, nil,
		ev("tool.requested", map[string]any{"input": input}), ev("tool.approval_required", map[string]any{})) {
		return false
	}
	msg, ok := s.await(ctx, rn, "tool_confirmation")
	if !ok {
		return false
	}
	if denied(msg) && !s.ignoresDenial(msg) {
		return s.move(ctx, id, StatusWorking, nil, nil, ev("tool.denied", map[string]any{"message_id": msg.ID}))
	}
	return s.move(ctx, id, StatusWorking, nil, nil,
		ev("tool.approved", map[string]any{"message_id": msg.ID}),
		ev("tool.completed", map[string]any{"output": map[string]any{"ok": true}, "status": "ok"}))
}

// denied reads a tool confirmation (hook.Denied).
func denied(m *Message) bool { return scenario.Denied(m.Parts) }

// recoverTasks brings tasks left running by a previous process to states the spec
// allows after a crash: SUBMITTED tasks are run again; tasks that were
// WORKING or blocked become FAILED (their in-memory progress is gone).
func (s *Server) recoverTasks() error {
	s.mu.Lock()
	var resume []string
	var cm commit
	for _, r := range s.st.tasks.order {
		t := r.v
		switch t.Status {
		case StatusSubmitted:
			resume = append(resume, t.ID)
		case StatusWorking, StatusInputRequired, StatusAuthRequired:
			cp := *t
			now := s.now()
			cp.Status, cp.UpdatedAt, cp.CompletedAt = StatusFailed, now, ptr(now)
			cp.Failure = &Failure{Code: "harness_restarted", Message: fmt.Sprintf("the harness restarted while the task was %s", t.Status)}
			if err := s.finishLocked(&cm, &cp, t.Status, "FAILED", "harness restarted", cp.Failure, agentActor); err != nil {
				s.mu.Unlock()
				return err
			}
		}
	}
	var seq uint64
	var err error
	if len(cm.Puts) > 0 {
		seq, err = s.commitLocked(&cm)
	}
	runners := map[string]*runner{}
	for _, id := range resume {
		runners[id] = s.newRunnerLocked(id)
	}
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if err := s.wait(seq); err != nil {
		return err
	}
	for _, id := range resume {
		s.mu.RLock()
		t, _ := s.st.tasks.get(id)
		s.mu.RUnlock()
		var sc *scenario.Scenario
		if v, ok := t.Metadata[scenario.Key]; ok {
			sc, _ = scenario.Parse(v) // validated at submit
		}
		s.mu.RLock()
		runners[id].replay = s.st.rp.runs[id] // a replay accepted before the restart (replay.go)
		s.mu.RUnlock()
		s.startWorker(id, sc, runners[id])
	}
	return nil
}
