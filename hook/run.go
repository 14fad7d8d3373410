package hook

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Capability is the discovery capability that advertises the scenario
// contract (capabilities["conform.scenarios"] = Version).
const Capability = "conform.scenarios"

// Advertise adds the scenario contract to the capabilities object of a
// discovery document (GET /v1), and each resource hook named in more
// (VaultSecrets, Quotas, Connectors): a claim the suite then holds the
// Harness to.
func Advertise(capabilities map[string]any, more ...string) {
	capabilities[Capability] = Version
	for _, name := range more {
		capabilities[name] = Version
	}
}

// FromMetadata returns the scenario a task submit's metadata carries under
// Key, nil when it carries none. Its error is a *Error naming the offending
// field (error.param of a 400 invalid_request).
func FromMetadata(metadata map[string]any) (*Scenario, error) {
	v, ok := metadata[Key]
	if !ok {
		return nil, nil
	}
	return Parse(v)
}

// BuiltinOps are the steps Run executes through a Task alone. The others
// (use_secret, use_vault_secret, tool_call, reason, redact and the replay
// steps) need a Stepper; a Harness without one refuses them at submit with
// Scenario.Only(BuiltinOps...), as the contract allows.
var BuiltinOps = []Op{OpWork, OpEmit, OpArtifact, OpInputRequired, OpAuthRequired, OpToolApproval, OpComplete, OpFail}

// Only returns a *Error naming the first step whose op is not in ops: a
// Harness refuses, with 400 invalid_request, the steps it does not
// implement.
func (sc *Scenario) Only(ops ...Op) error {
	if sc == nil {
		return nil
	}
	for i, st := range sc.Steps {
		if !slices.Contains(ops, st.Op) {
			return &Error{fmt.Sprintf("metadata.%s.steps[%d].op", Key, i), fmt.Sprintf("step %q is not implemented by this harness", st.Op)}
		}
	}
	return nil
}

// Status is a task status the runner moves a task to.
type Status string

// The statuses of the protocol's task lifecycle that scenarios reach.
const (
	Working       Status = "WORKING"
	InputRequired Status = "INPUT_REQUIRED"
	AuthRequired  Status = "AUTH_REQUIRED"
	Completed     Status = "COMPLETED"
	Failed        Status = "FAILED"
)

// Message is one agent message of an emit step.
type Message struct {
	Index, Count int    // its place in the step: 0..Count-1
	Text         string // the text part
	// Visibility is the class of the text part: public, internal or
	// receipt_only. A message that is not public is announced by an
	// agent.message event without its text.
	Visibility string
}

// Artifact is an artifact an artifact step registers, owned by the task.
type Artifact struct {
	Kind, MimeType string // defaulted to log and text/plain
	Name           string // metadata.name, when set
	Content        []byte
}

// Reply is a task message (POST /v1/tasks/{id}/messages) a waiting step
// received.
type Reply struct {
	ID    string           // the message id
	Kind  string           // input or tool_confirmation
	Parts []map[string]any // its parts
}

// Failure is the failure of a FAILED task.
type Failure struct {
	Code, Message string
}

// Ending is how a task ends: COMPLETED with an Outcome SUCCEEDED, or FAILED
// with its Failure and an Outcome FAILED; Summary is the Outcome's summary.
type Ending struct {
	Status  Status // Completed or Failed
	Summary string
	Failure *Failure // set when Status is Failed
}

// Task is one task as its worker drives it: the Harness's side of the
// contract. Each method commits what it does before returning (the suite
// reads the task right after the events it waits for), and returns an error
// to stop the run: the task was canceled, or the Harness is closing.
type Task interface {
	// Move changes the task's status to Working, InputRequired or
	// AuthRequired and emits its one task event (task.started from
	// SUBMITTED, task.status_changed back to WORKING, task.input_required,
	// task.auth_required) whose payload is payload plus status and
	// previous_status.
	Move(ctx context.Context, to Status, payload map[string]any) error
	// Say appends an agent message to the task's session and emits
	// agent.message with payload {message_id, text, index, count} (no
	// text, and the visibility, when the message is not public).
	Say(ctx context.Context, m Message) error
	// Keep registers an artifact owned by the task, with the sha256 and
	// size of its content, and emits artifact.created; the task's Outcome
	// lists it.
	Keep(ctx context.Context, a Artifact) error
	// Await waits for a task message of kind (input or
	// tool_confirmation) and returns it.
	Await(ctx context.Context, kind string) (Reply, error)
	// Event emits one more event of the task, with the task as its
	// resource (tool.requested, tool.approved and the like).
	Event(ctx context.Context, kind string, payload map[string]any) error
	// End moves the task to COMPLETED or FAILED with its Outcome and its
	// terminal event (task.completed, task.failed with payload.outcome_id).
	End(ctx context.Context, e Ending) error
}

// Stepper is implemented by a Task that executes some steps itself: the
// optional ones (BuiltinOps lists the others), or any step it implements
// its own way. RunStep reports whether it handled st.
type Stepper interface {
	RunStep(ctx context.Context, st Step) (handled bool, err error)
}

// ErrUnsupported is returned by Run for a step neither the runner nor the
// Task's Stepper implements (Scenario.Only refuses it at submit instead).
var ErrUnsupported = errors.New("hook: step not implemented")

// Run executes a scenario: it moves the task to WORKING, runs the steps in
// order and, when they end without a terminal step, completes the task with
// the summary "scenario completed". It returns when the task ended, or with
// the first error (ctx's error when the task was canceled).
func Run(ctx context.Context, sc *Scenario, t Task) error {
	if err := t.Move(ctx, Working, nil); err != nil {
		return err
	}
	return Steps(ctx, sc.Steps, t)
}

// Steps runs steps on a task that is already WORKING, then completes it
// with the summary "scenario completed" unless a step ended it.
func Steps(ctx context.Context, steps []Step, t Task) error {
	for _, st := range steps {
		if err := Do(ctx, st, t); err != nil {
			return err
		}
		if st.Terminal() {
			return nil
		}
	}
	return t.End(ctx, Ending{Status: Completed, Summary: "scenario completed"})
}

// Do executes one step.
func Do(ctx context.Context, st Step, t Task) error {
	if s, ok := t.(Stepper); ok {
		if handled, err := s.RunStep(ctx, st); handled {
			return err
		}
	}
	switch st.Op {
	case OpWork:
		return Sleep(ctx, time.Duration(st.MS)*time.Millisecond)
	case OpEmit:
		vis := st.Visibility
		if vis == "" {
			vis = "public"
		}
		for i := 0; i < st.Count; i++ {
			if i > 0 {
				if err := Sleep(ctx, time.Duration(st.IntervalMS)*time.Millisecond); err != nil {
					return err
				}
			}
			text := st.Text
			if text == "" {
				text = fmt.Sprintf("event %d of %d", i+1, st.Count)
			}
			if err := t.Say(ctx, Message{Index: i, Count: st.Count, Text: text, Visibility: vis}); err != nil {
				return err
			}
		}
		return nil
	case OpArtifact:
		a := Artifact{Kind: st.Kind, MimeType: st.MimeType, Name: st.Name, Content: []byte(st.Content)}
		if a.Kind == "" {
			a.Kind = "log"
		}
		if a.MimeType == "" {
			a.MimeType = "text/plain"
		}
		return t.Keep(ctx, a)
	case OpInputRequired:
		return wait(ctx, t, InputRequired, map[string]any{"prompt": nullable(st.Prompt)}, "input")
	case OpAuthRequired:
		return wait(ctx, t, AuthRequired, map[string]any{"reason": nullable(st.Reason)}, "tool_confirmation")
	case OpToolApproval:
		return toolApproval(ctx, st, t)
	case OpComplete:
		summary := st.Summary
		if summary == "" {
			summary = "completed"
		}
		return t.End(ctx, Ending{Status: Completed, Summary: summary})
	case OpFail:
		msg := st.Message
		if msg == "" {
			msg = "scenario failure"
		}
		return t.End(ctx, Ending{Status: Failed, Summary: st.Code + ": " + msg, Failure: &Failure{Code: st.Code, Message: msg}})
	}
	return fmt.Errorf("%w: %q", ErrUnsupported, st.Op)
}

// wait moves the task to a waiting status, waits for a task message of
// kind, and moves it back to WORKING.
func wait(ctx context.Context, t Task, to Status, payload map[string]any, kind string) error {
	if err := t.Move(ctx, to, payload); err != nil {
		return err
	}
	if _, err := t.Await(ctx, kind); err != nil {
		return err
	}
	return t.Move(ctx, Working, nil)
}

// toolApproval asks for approval of a tool call: tool.requested and
// tool.approval_required, AUTH_REQUIRED until a tool_confirmation, then
// tool.denied, or tool.approved and tool.completed, and WORKING again.
func toolApproval(ctx context.Context, st Step, t Task) error {
	tool := st.Tool
	if tool == "" {
		tool = "conform.noop"
	}
	input := st.Input
	if input == nil {
		input = map[string]any{}
	}
	call := newID("toolcall")
	ev := func(kind string, p map[string]any) error {
		p["tool_call_id"], p["name"] = call, tool
		return t.Event(ctx, kind, p)
	}
	if err := ev("tool.requested", map[string]any{"input": input}); err != nil {
		return err
	}
	if err := ev("tool.approval_required", map[string]any{}); err != nil {
		return err
	}
	if err := t.Move(ctx, AuthRequired, map[string]any{"reason": "tool_approval", "tool_call_id": call, "name": tool}); err != nil {
		return err
	}
	r, err := t.Await(ctx, "tool_confirmation")
	if err != nil {
		return err
	}
	if Denied(r.Parts) {
		if err := ev("tool.denied", map[string]any{"message_id": r.ID}); err != nil {
			return err
		}
	} else {
		if err := ev("tool.approved", map[string]any{"message_id": r.ID}); err != nil {
			return err
		}
		if err := ev("tool.completed", map[string]any{"output": map[string]any{"ok": true}, "status": "ok"}); err != nil {
			return err
		}
	}
	return t.Move(ctx, Working, nil)
}

// Denied reads a tool confirmation's parts: a text part "deny", or a json
// part whose value has "decision": "deny" or "approved": false. Anything
// else approves.
func Denied(parts []map[string]any) bool {
	for _, p := range parts {
		if txt, ok := p["text"].(string); ok && strings.EqualFold(strings.TrimSpace(txt), "deny") {
			return true
		}
		if v, ok := p["value"].(map[string]any); ok {
			if d, _ := v["decision"].(string); strings.EqualFold(d, "deny") {
				return true
			}
			if a, ok := v["approved"].(bool); ok && !a {
				return true
			}
		}
	}
	return false
}

// Sleep waits d of real time, or until ctx is done (then it returns ctx's
// error): a work step a cancel interrupts at once.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// newID is a random id with prefix, for the tool calls the runner makes.
func newID(prefix string) string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
