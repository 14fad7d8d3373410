package hook

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
)

// recTask records what the runner asks of it.
type recTask struct {
	log     []string
	replies []Reply
	ended   *Ending
	handled []Op // ops its RunStep takes over
	cancel  func()
}

func (t *recTask) Move(ctx context.Context, to Status, p map[string]any) error {
	t.log = append(t.log, "move "+string(to))
	return ctx.Err()
}
func (t *recTask) Say(ctx context.Context, m Message) error {
	t.log = append(t.log, "say "+m.Visibility+" "+m.Text)
	return ctx.Err()
}
func (t *recTask) Keep(ctx context.Context, a Artifact) error {
	t.log = append(t.log, "keep "+a.Kind+" "+a.MimeType)
	return ctx.Err()
}
func (t *recTask) Await(ctx context.Context, kind string) (Reply, error) {
	t.log = append(t.log, "await "+kind)
	if t.cancel != nil {
		t.cancel() // a cancel while the task waits
		return Reply{}, ctx.Err()
	}
	r := t.replies[0]
	t.replies = t.replies[1:]
	return r, nil
}
func (t *recTask) Event(ctx context.Context, kind string, p map[string]any) error {
	if p["tool_call_id"] == "" || p["name"] == nil {
		return errors.New("tool event without tool_call_id or name")
	}
	t.log = append(t.log, "event "+kind)
	return ctx.Err()
}
func (t *recTask) End(ctx context.Context, e Ending) error {
	t.ended = &e
	t.log = append(t.log, "end "+string(e.Status)+" "+e.Summary)
	return ctx.Err()
}

type stepTask struct{ recTask }

func (t *stepTask) RunStep(ctx context.Context, st Step) (bool, error) {
	if slices.Contains(t.handled, st.Op) {
		t.log = append(t.log, "own "+string(st.Op))
		return true, nil
	}
	return false, nil
}

func scenarioOf(t *testing.T, steps ...map[string]any) *Scenario {
	t.Helper()
	list := make([]any, len(steps))
	for i, s := range steps {
		list[i] = s
	}
	sc, err := Parse(map[string]any{"steps": list})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func TestRunSteps(t *testing.T) {
	deny := Reply{ID: "m1", Kind: "tool_confirmation", Parts: []map[string]any{{"type": "text", "text": "deny"}}}
	approve := Reply{ID: "m2", Kind: "tool_confirmation", Parts: []map[string]any{{"type": "json", "value": map[string]any{"approved": true}}}}
	cases := []struct {
		name    string
		steps   []map[string]any
		replies []Reply
		want    []string
	}{
		{"no terminal step completes", []map[string]any{{"op": "work", "ms": 0}, {"op": "emit", "count": 1, "text": "hi", "visibility": "internal"}},
			nil, []string{"move WORKING", "say internal hi", "end COMPLETED scenario completed"}},
		{"fail defaults its message", []map[string]any{{"op": "artifact"}, {"op": "fail", "code": "boom"}},
			nil, []string{"move WORKING", "keep log text/plain", "end FAILED boom: scenario failure"}},
		{"auth then complete", []map[string]any{{"op": "auth_required"}, {"op": "complete"}},
			[]Reply{approve}, []string{"move WORKING", "move AUTH_REQUIRED", "await tool_confirmation", "move WORKING", "end COMPLETED completed"}},
		{"tool approval denied, then approved", []map[string]any{{"op": "tool_approval"}, {"op": "tool_approval", "tool": "x"}},
			[]Reply{deny, approve}, []string{"move WORKING",
				"event tool.requested", "event tool.approval_required", "move AUTH_REQUIRED", "await tool_confirmation", "event tool.denied", "move WORKING",
				"event tool.requested", "event tool.approval_required", "move AUTH_REQUIRED", "await tool_confirmation", "event tool.approved", "event tool.completed", "move WORKING",
				"end COMPLETED scenario completed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tk := &recTask{replies: c.replies}
			if err := Run(context.Background(), scenarioOf(t, c.steps...), tk); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(tk.log, c.want) {
				t.Errorf("got\n%q\nwant\n%q", tk.log, c.want)
			}
		})
	}
}

// A cancel while the task waits stops the run: no later step runs and the
// task is not ended by the runner.
func TestRunCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tk := &recTask{cancel: cancel}
	err := Run(ctx, scenarioOf(t, map[string]any{"op": "input_required"}, map[string]any{"op": "complete"}), tk)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if tk.ended != nil || slices.Contains(tk.log, "move WORKING") && tk.log[len(tk.log)-1] != "await input" {
		t.Errorf("the run went on after the cancel: %q", tk.log)
	}
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if err := Sleep(ctx, 1<<40); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a canceled context: got %v", err)
	}
}

// The optional steps need a Stepper: Only refuses them at submit, naming
// the step, and Run without one stops with ErrUnsupported.
func TestOptionalSteps(t *testing.T) {
	sc := scenarioOf(t, map[string]any{"op": "emit", "count": 1}, map[string]any{"op": "use_secret", "secret": "canary-123456"})
	var e *Error
	if err := sc.Only(BuiltinOps...); !errors.As(err, &e) || e.Param != "metadata.conform.scenario.steps[1].op" {
		t.Fatalf("Only: got %v, want an Error naming steps[1].op", err)
	}
	if err := Run(context.Background(), sc, &recTask{}); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Run without a Stepper: got %v, want ErrUnsupported", err)
	}
	st := &stepTask{recTask{handled: []Op{OpUseSecret, OpEmit}}}
	if err := Run(context.Background(), sc, st); err != nil {
		t.Fatal(err)
	}
	if want := []string{"move WORKING", "own emit", "own use_secret", "end COMPLETED scenario completed"}; !slices.Equal(st.log, want) {
		t.Errorf("with a Stepper: got %q, want %q", st.log, want)
	}
	if sc, err := FromMetadata(map[string]any{"other": 1}); sc != nil || err != nil {
		t.Errorf("FromMetadata without a scenario: got %v, %v", sc, err)
	}
}

func TestParseSecrets(t *testing.T) {
	if m, err := ParseSecrets(map[string]any{"token": "s3cret-value"}); err != nil || m["token"] != "s3cret-value" {
		t.Fatalf("got %v, %v", m, err)
	}
	for _, bad := range []any{"x", map[string]any{"": "v"}, map[string]any{"k": 1}, map[string]any{"k": ""}} {
		_, err := ParseSecrets(bad)
		var e *Error
		if !errors.As(err, &e) {
			t.Errorf("ParseSecrets(%v): got %v, want an Error", bad, err)
		}
	}
	_, err := ParseSecrets(map[string]any{"k": map[string]any{"leak": "s3cret-value"}})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("the error shows the value or is missing: %v", err)
	}
}
