package hook_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/harn-conform/conform/hook"
)

// memTask is one task of a small in-memory Harness: what a Go Harness
// writes to adopt the scenario contract. A real one stores the task, its
// messages, artifacts and events where it stores its own, and serves them
// over its API; this one prints its events.
type memTask struct {
	status  hook.Status
	inbox   chan hook.Reply // task messages posted to the task (POST /v1/tasks/{id}/messages)
	outcome string
}

func (t *memTask) event(kind string, payload map[string]any) {
	b, _ := json.Marshal(payload)
	fmt.Println(kind, string(b))
}

func (t *memTask) Move(ctx context.Context, to hook.Status, payload map[string]any) error {
	kinds := map[hook.Status]string{hook.InputRequired: "task.input_required", hook.AuthRequired: "task.auth_required", hook.Working: "task.status_changed"}
	kind := kinds[to]
	if t.status == "SUBMITTED" {
		kind = "task.started"
	}
	if payload == nil {
		payload = map[string]any{}
	}
	payload["status"], payload["previous_status"] = to, t.status
	t.status = to
	t.event(kind, payload)
	return ctx.Err()
}

func (t *memTask) Say(ctx context.Context, m hook.Message) error {
	t.event("agent.message", map[string]any{"message_id": fmt.Sprintf("msg_%d", m.Index), "text": m.Text, "index": m.Index, "count": m.Count})
	return ctx.Err()
}

func (t *memTask) Keep(ctx context.Context, a hook.Artifact) error {
	t.event("artifact.created", map[string]any{"kind": a.Kind, "size_bytes": len(a.Content)})
	return ctx.Err()
}

func (t *memTask) Await(ctx context.Context, kind string) (hook.Reply, error) {
	select {
	case r := <-t.inbox:
		return r, nil
	case <-ctx.Done(): // canceled while it waits
		return hook.Reply{}, ctx.Err()
	}
}

func (t *memTask) Event(ctx context.Context, kind string, payload map[string]any) error {
	t.event(kind, payload)
	return ctx.Err()
}

func (t *memTask) End(ctx context.Context, e hook.Ending) error {
	t.status, t.outcome = e.Status, e.Summary
	kind := map[hook.Status]string{hook.Completed: "task.completed", hook.Failed: "task.failed"}[e.Status]
	t.event(kind, map[string]any{"status": e.Status, "summary": e.Summary})
	return ctx.Err()
}

// A Harness's submit handler parses the scenario (a *hook.Error is a 400
// invalid_request naming error.param), refuses the steps it does not
// implement, and its worker runs the task with hook.Run; a cancel cancels
// the worker's context.
func Example() {
	capabilities := map[string]any{"rest": true, "sse": true}
	hook.Advertise(capabilities) // GET /v1
	fmt.Println("conform.scenarios:", capabilities["conform.scenarios"])

	var body struct {
		Metadata map[string]any `json:"metadata"`
	}
	_ = json.Unmarshal([]byte(`{"metadata": {"conform.scenario": {"steps": [
		{"op": "emit", "count": 2},
		{"op": "input_required", "prompt": "which file?"},
		{"op": "artifact", "content": "done"},
		{"op": "complete", "summary": "all steps ran"}]}}}`), &body)
	sc, err := hook.FromMetadata(body.Metadata)
	if err == nil {
		err = sc.Only(hook.BuiltinOps...)
	}
	var bad *hook.Error
	if errors.As(err, &bad) {
		fmt.Println("400 invalid_request, param", bad.Param)
		return
	}

	t := &memTask{status: "SUBMITTED", inbox: make(chan hook.Reply, 1)}
	t.inbox <- hook.Reply{ID: "msg_input", Kind: "input"} // the client answers the prompt
	if err := hook.Run(context.Background(), sc, t); err != nil {
		fmt.Println("stopped:", err)
	}
	// Output:
	// conform.scenarios: v1
	// task.started {"previous_status":"SUBMITTED","status":"WORKING"}
	// agent.message {"count":2,"index":0,"message_id":"msg_0","text":"event 1 of 2"}
	// agent.message {"count":2,"index":1,"message_id":"msg_1","text":"event 2 of 2"}
	// task.input_required {"previous_status":"WORKING","prompt":"which file?","status":"INPUT_REQUIRED"}
	// task.status_changed {"previous_status":"INPUT_REQUIRED","status":"WORKING"}
	// artifact.created {"kind":"log","size_bytes":4}
	// task.completed {"status":"COMPLETED","summary":"all steps ran"}
}

// A typo in a scenario is refused at submit, naming the field.
func ExampleFromMetadata() {
	_, err := hook.FromMetadata(map[string]any{"conform.scenario": map[string]any{
		"steps": []any{map[string]any{"op": "work", "msec": 20}},
	}})
	var bad *hook.Error
	if errors.As(err, &bad) {
		fmt.Println("400 invalid_request, param", bad.Param)
	}
	// Output: 400 invalid_request, param metadata.conform.scenario.steps[0]
}
