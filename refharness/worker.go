package refharness

import (
	"context"
	"errors"

	scenario "github.com/harn-conform/conform/hook"
)

// worker is one task as the scenario runner (package hook, the same one a
// third-party Go Harness uses) drives it: its Task, and a Stepper for the
// steps this Harness implements its own way.
type worker struct {
	s  *Server
	id string
	rn *runner
}

// errStopped: the task is terminal, canceled, or the server is closing.
var errStopped = errors.New("refharness: worker stopped")

func stopped(ok bool) error {
	if ok {
		return nil
	}
	return errStopped
}

func (w *worker) Move(ctx context.Context, to scenario.Status, payload map[string]any) error {
	return stopped(w.s.move(ctx, w.id, string(to), payload, nil))
}

func (w *worker) Say(ctx context.Context, m scenario.Message) error {
	if m.Visibility != "public" {
		return stopped(w.s.emitPrivate(ctx, w.id, m.Index, m.Count, m.Text, m.Visibility)) // privacy.go
	}
	return stopped(w.s.emit(ctx, w.id, m.Index, m.Count, m.Text))
}

func (w *worker) Keep(ctx context.Context, a scenario.Artifact) error {
	st := scenario.Step{Op: scenario.OpArtifact, Kind: a.Kind, MimeType: a.MimeType, Name: a.Name, Content: string(a.Content)}
	return stopped(w.s.produceArtifact(ctx, w.id, st, w.rn))
}

func (w *worker) Await(ctx context.Context, kind string) (scenario.Reply, error) {
	m, ok := w.s.await(ctx, w.rn, kind)
	if !ok {
		return scenario.Reply{}, errStopped
	}
	return scenario.Reply{ID: m.ID, Kind: kind, Parts: m.Parts}, nil
}

// Event commits one event of the running task. (The runner's own
// tool_approval calls it; this Harness runs that step itself, RunStep, to
// commit its tool events with the move to AUTH_REQUIRED.)
func (w *worker) Event(ctx context.Context, kind string, payload map[string]any) error {
	s := w.s
	s.mu.RLock()
	t, ok := s.st.tasks.get(w.id)
	s.mu.RUnlock()
	if !ok {
		return errStopped
	}
	return stopped(s.taskEvents(ctx, w.id, s.newEvent(kind, Pointer{"task", w.id}, payload, t.WorkspaceID, t.SessionID, w.id, agentActor)))
}

func (w *worker) End(ctx context.Context, e scenario.Ending) error {
	end := &ending{summary: e.Summary}
	if e.Failure != nil {
		end.failure = &Failure{Code: e.Failure.Code, Message: e.Failure.Message}
	}
	return stopped(w.s.move(ctx, w.id, string(e.Status), nil, end))
}

// RunStep runs the steps this Harness implements itself.
func (w *worker) RunStep(ctx context.Context, st scenario.Step) (bool, error) {
	s, id := w.s, w.id
	if scenario.IsReplayStep(st.Op) {
		return true, stopped(s.dependencyStep(ctx, id, st)) // replay_steps.go
	}
	switch st.Op {
	case scenario.OpToolApproval:
		return true, stopped(s.toolApproval(ctx, id, st, w.rn))
	case scenario.OpUseSecret:
		return true, stopped(s.useSecret(ctx, id, st) && s.narrateSecret(ctx, id, st)) // privacy.go
	case scenario.OpReason:
		return true, stopped(s.reason(ctx, id, st)) // privacy.go
	case scenario.OpRedact:
		return true, stopped(s.redact(ctx, id, st, w.rn)) // privacy.go
	case scenario.OpVaultSecret:
		return true, stopped(s.useVaultSecret(ctx, id, st)) // vaults.go
	case scenario.OpToolCall:
		return true, stopped(s.toolCall(ctx, id, st, w.rn)) // personas.go
	}
	return false, nil
}
