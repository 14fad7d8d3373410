package check

import (
	"fmt"
	"strings"
	"testing"
)

func TestReachable(t *testing.T) {
	for _, tc := range []struct {
		from, to string
		want     bool
	}{
		{Submitted, Completed, true}, {InputRequired, Completed, true}, {Working, Submitted, false},
		{Completed, Canceled, false}, {Canceled, Completed, false}, {Submitted, InputRequired, true},
	} {
		if got := Reachable(tc.from, tc.to); got != tc.want {
			t.Errorf("Reachable(%s, %s) = %v, want %v", tc.from, tc.to, got, tc.want)
		}
	}
}

func TestPolled(t *testing.T) {
	for _, ok := range [][]string{
		{Submitted, Submitted, Completed, Completed},
		{Submitted, Working, InputRequired, Working, Failed},
		{Working, "PAUSED_VENDOR", Completed},
		{},
	} {
		if err := Polled("x", ok); err != nil {
			t.Errorf("Polled(%v) = %v", ok, err)
		}
	}
	for _, tc := range []struct {
		reads []string
		want  string
	}{
		{[]string{Working, Submitted}, "which no allowed transition reaches"},
		{[]string{Completed, Canceled}, "a terminal status never changes"},
		{[]string{Canceled, Completed}, "a terminal status never changes"},
	} {
		if err := Polled("x", tc.reads); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Polled(%v) = %v, want %q", tc.reads, err, tc.want)
		}
	}
}

func state(id, kind, payload string) Event { return ev(id, kind, "t1", 0, payload) }

func TestChanges(t *testing.T) {
	in := []Event{
		state("1", "task.submitted", `{}`),
		state("2", "agent.message", `{"status":"COMPLETED"}`),
		state("3", "task.started", `{"status":"WORKING","previous_status":"SUBMITTED"}`),
		state("4", "task.vendor_thing", `{}`),
		state("5", "task.status_changed", `{"to":"INPUT_REQUIRED","from":"WORKING"}`),
		ev("6", "task.completed", "other", 0, `{}`),
	}
	cs, err := Changes("t1", in)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, c := range cs {
		got = append(got, c.EventID+":"+c.From+">"+c.To)
	}
	if strings.Join(got, " ") != "1:>SUBMITTED 3:SUBMITTED>WORKING 5:WORKING>INPUT_REQUIRED" {
		t.Errorf("Changes = %v", got)
	}
	if _, err := Changes("t1", []Event{state("9", "task.status_changed", `{"note":"x"}`)}); err == nil || !strings.Contains(err.Error(), "names no new status") {
		t.Errorf("Changes(status_changed without status) = %v", err)
	}
}

func ch(specs ...string) []Change {
	var out []Change
	for i, s := range specs {
		from, to, ok := strings.Cut(s, ">")
		if !ok {
			from, to = "", s
		}
		out = append(out, Change{EventID: string(rune('a' + i)), Kind: "task.x", From: from, To: to})
	}
	return out
}

func TestLegal(t *testing.T) {
	for _, ok := range [][]Change{
		ch(Submitted, "SUBMITTED>WORKING", "WORKING>COMPLETED"),
		ch(Submitted, Working, InputRequired, Working, Canceled),
		ch(Working, Working, Completed),
		ch("SUBMITTED>WORKING", "WORKING>AUTH_REQUIRED", "AUTH_REQUIRED>FAILED"),
	} {
		if err := Legal("x", "", ok); err != nil {
			t.Errorf("Legal(%v) = %v", ok, err)
		}
	}
	for _, tc := range []struct {
		cs   []Change
		want string
	}{
		{ch(Submitted, "SUBMITTED>COMPLETED"), "SUBMITTED → COMPLETED, which the lifecycle table does not allow"},
		{ch(Submitted, Completed), "SUBMITTED → COMPLETED"},
		{ch(Submitted, Working, Completed, Canceled), "from terminal COMPLETED to CANCELED"},
		{ch(Submitted, Working, Canceled, "WORKING>COMPLETED"), "from terminal CANCELED to COMPLETED"},
		// Only a terminal event: the task was created SUBMITTED, so its
		// first event records SUBMITTED → COMPLETED.
		{ch(Completed), "SUBMITTED → COMPLETED"},
		{ch(InputRequired, Working, Completed), "SUBMITTED → INPUT_REQUIRED"},
	} {
		if err := Legal("x", "", tc.cs); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Legal(%v) = %v, want %q", tc.cs, err, tc.want)
		}
	}
}

func TestRecorded(t *testing.T) {
	full := ch(Submitted, "SUBMITTED>WORKING", "WORKING>COMPLETED")
	if err := Recorded("x", "", full, []string{Submitted, Working, Completed}, Completed); err != nil {
		t.Errorf("Recorded(full) = %v", err)
	}
	if err := Recorded("x", "", ch("SUBMITTED>WORKING", "WORKING>COMPLETED"), []string{Submitted, Completed}, Completed); err != nil {
		t.Errorf("Recorded(no task.submitted) = %v", err)
	}
	for _, tc := range []struct {
		cs     []Change
		polled []string
		final  string
		want   string
	}{
		{ch(Submitted, "WORKING>COMPLETED"), nil, Completed, "no state event records the move SUBMITTED → WORKING"},
		{ch(Submitted, Completed), []string{Submitted, Working, Completed}, Completed, "polling the task read WORKING"},
		{ch(Submitted, Working), nil, Completed, `last task state event announces "WORKING"`},
		{nil, nil, Completed, `announces ""`},
		// The first event names WORKING as where it came from, but the
		// task was created SUBMITTED: SUBMITTED → WORKING had no event.
		{ch("WORKING>COMPLETED"), nil, Completed, "no state event records the move SUBMITTED → WORKING"},
	} {
		if err := Recorded("x", "", tc.cs, tc.polled, tc.final); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Recorded(%v, %v, %s) = %v, want %q", tc.cs, tc.polled, tc.final, err, tc.want)
		}
	}
}

func TestStaysCanceled(t *testing.T) {
	if err := StaysCanceled("x", []string{Working, Canceled, Canceled, "vendor"}); err != nil {
		t.Errorf("StaysCanceled(ok) = %v", err)
	}
	if err := StaysCanceled("x", []string{Working, Completed}); err != nil {
		t.Errorf("StaysCanceled(completed first) = %v", err)
	}
	if err := StaysCanceled("x", []string{Working, Canceled, Completed}); err == nil || !strings.Contains(err.Error(), "CANCELED and later COMPLETED") {
		t.Errorf("StaysCanceled(bad) = %v", err)
	}
}

func TestNoCompletedAt(t *testing.T) {
	for _, ok := range []map[string]any{
		{"status": "CANCELED", "canceled_at": "2026-01-01T00:00:00Z"},
		{"status": "CANCELED", "completed_at": nil},
		{"status": "COMPLETED", "completed_at": "2026-01-01T00:00:00Z"},
	} {
		if err := NoCompletedAt("x", ok); err != nil {
			t.Errorf("NoCompletedAt(%v) = %v", ok, err)
		}
	}
	if err := NoCompletedAt("x", map[string]any{"status": "CANCELED", "completed_at": "2026-01-01T00:00:00Z"}); err == nil || !strings.Contains(err.Error(), "carries completed_at") {
		t.Errorf("NoCompletedAt(bad) = %v", err)
	}
}

func TestOutcomeMatches(t *testing.T) {
	if err := OutcomeMatches("x", map[string]any{"status": "SUCCEEDED", "task_id": "t1"}, "t1", Completed); err != nil {
		t.Errorf("OutcomeMatches(ok) = %v", err)
	}
	for _, tc := range []struct {
		o          map[string]any
		task, want string
	}{
		{map[string]any{"status": "COMPLETED", "task_id": "t1"}, Completed, "want SUCCEEDED, FAILED or CANCELED"},
		{map[string]any{"task_id": "t1"}, Completed, "outcome status is null"},
		{map[string]any{"status": "FAILED", "task_id": "t1"}, Completed, "FAILED for a COMPLETED task, want SUCCEEDED"},
		{map[string]any{"status": "CANCELED", "task_id": "t2"}, Canceled, `task_id is "t2"`},
	} {
		if err := OutcomeMatches("x", tc.o, "t1", tc.task); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("OutcomeMatches(%v) = %v, want %q", tc.o, err, tc.want)
		}
	}
}

func TestRefused(t *testing.T) {
	env := `{"error":{"code":"%s","message":"m","type":"request_error"}}`
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{400, fmt.Sprintf(env, "invalid_state_transition"), ""},
		{409, fmt.Sprintf(env, "conflict"), ""},
		{409, "task is terminal", ""},
		{200, `{"status":"CANCELED"}`, "status = 200, want 400 or 409"},
		{400, fmt.Sprintf(env, "invalid_request"), `error.code = "invalid_request"`},
	} {
		err := Refused(resp(tc.status, tc.body), []int{400, 409}, "invalid_state_transition", "conflict")
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("Refused(%d %s) = %v, want %q", tc.status, tc.body, err, tc.want)
		}
	}
}

func TestCanceledAfterEnd(t *testing.T) {
	ch := func(to ...string) []Change {
		var cs []Change
		for i, s := range to {
			cs = append(cs, Change{EventID: fmt.Sprint(i), Kind: "task.x", To: s})
		}
		return cs
	}
	for _, ok := range [][]Change{ch(Submitted, Working, Canceled), ch(Submitted, Canceled), ch(Submitted, Working, Completed), nil} {
		if err := CanceledAfterEnd("x", ok); err != nil {
			t.Errorf("CanceledAfterEnd(%v) = %v", ok, err)
		}
	}
	for _, bad := range [][]Change{ch(Submitted, Working, Completed, Canceled), ch(Submitted, Failed, Canceled)} {
		if err := CanceledAfterEnd("x", bad); err == nil || !strings.Contains(err.Error(), "a cancel then moved it to CANCELED") {
			t.Errorf("CanceledAfterEnd(%v) = %v, want the move named", bad, err)
		}
	}
}

func TestCancelRefusal(t *testing.T) {
	env := `{"error":{"code":"%s","message":"m","type":"conflict_error"}}`
	for _, tc := range []struct {
		status int
		after  string
		want   string
	}{
		{409, Completed, ""},
		{400, Failed, ""},
		{409, "PAUSED_VENDOR", ""}, // not a status: the task reads judge it
		{409, Working, "read WORKING after it, so it was running"},
		{409, Submitted, "read SUBMITTED after it"},
		{500, Completed, "status = 500, want 400 or 409"},
	} {
		err := CancelRefusal(resp(tc.status, fmt.Sprintf(env, "conflict")), tc.after)
		if (tc.want == "" && err != nil) || (tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want))) {
			t.Errorf("CancelRefusal(%d, %s) = %v, want %q", tc.status, tc.after, err, tc.want)
		}
	}
}

func TestUnchanged(t *testing.T) {
	a := map[string]any{"status": "COMPLETED", "updated_at": "t1", "canceled_at": nil}
	if err := Unchanged("x", a, map[string]any{"status": "COMPLETED", "updated_at": "t1", "extra": 1}, "status", "updated_at", "canceled_at"); err != nil {
		t.Errorf("Unchanged(same) = %v", err)
	}
	err := Unchanged("x", a, map[string]any{"status": "CANCELED", "updated_at": "t2", "canceled_at": "t2"}, "status", "updated_at", "canceled_at")
	if err == nil || !strings.Contains(err.Error(), `status "COMPLETED" → "CANCELED"`) || !strings.Contains(err.Error(), "canceled_at null → \"t2\"") {
		t.Errorf("Unchanged(changed) = %v", err)
	}
}
