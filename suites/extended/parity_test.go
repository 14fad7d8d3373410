package extended

import (
	"testing"
)

func parEv(id, kind string, resource map[string]any, task string, payload map[string]any) map[string]any {
	e := map[string]any{"id": id, "event": kind, "resource": resource, "payload": payload}
	if task != "" {
		e["task_id"] = task
	}
	return e
}

// A run of task t1 in session s1, as a session stream shows it: the
// session's own events, another task's and t1's (its own, and an artifact
// naming it by task_id).
func parSessionRun() []map[string]any {
	task := func(id string) map[string]any { return map[string]any{"object": "task", "id": id} }
	return []map[string]any{
		parEv("e1", "session.created", map[string]any{"object": "session", "id": "s1"}, "", map[string]any{}),
		parEv("e2", "task.submitted", task("t1"), "", map[string]any{"status": "SUBMITTED"}),
		parEv("e3", "task.started", task("t1"), "t1", map[string]any{"status": "WORKING", "previous_status": "SUBMITTED"}),
		parEv("e4", "task.submitted", task("t2"), "t2", map[string]any{"status": "SUBMITTED"}),
		parEv("e5", "session.message_appended", map[string]any{"object": "session", "id": "s1"}, "", map[string]any{"message_id": "m1"}),
		parEv("e6", "artifact.created", map[string]any{"object": "artifact", "id": "a1"}, "t1", map[string]any{}),
		parEv("e7", "task.completed", task("t1"), "t1", map[string]any{"status": "COMPLETED", "previous_status": "WORKING"}),
		parEv("e8", "receipt.issued", map[string]any{"object": "receipt", "id": "r1"}, "t1", map[string]any{}),
	}
}

func TestParOnlyTaskAndFinalStatus(t *testing.T) {
	got := xIDs(parOnlyTask(parSessionRun(), "t1"))
	want := []string{"e2", "e3", "e6", "e7", "e8"}
	if len(got) != len(want) {
		t.Fatalf("parOnlyTask = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("parOnlyTask = %v, want %v", got, want)
		}
	}
	if s := parFinalStatus(parSessionRun(), "t1"); s != "COMPLETED" {
		t.Errorf("parFinalStatus = %q, want COMPLETED (the receipt event after it has no status)", s)
	}
	if s := parFinalStatus(parSessionRun(), "t2"); s != "SUBMITTED" {
		t.Errorf("parFinalStatus(t2) = %q, want SUBMITTED", s)
	}
	if s := parFinalStatus(parSessionRun()[:1], "t1"); s != "" {
		t.Errorf("parFinalStatus of no state event = %q, want none", s)
	}
}

// A feed that delivered the terminal event (by id, whatever it says) or
// a later event of the task got the run to its end; one that stopped
// before did not, and a reference without a terminal event carries none.
func TestParCarried(t *testing.T) {
	ref := parOnlyTask(parSessionRun(), "t1")
	changed := parOnlyTask(parSessionRun(), "t1")
	changed[3] = parEv("e7", "task.completed", map[string]any{"object": "task", "id": "t1"}, "t1", map[string]any{}) // payload emptied
	for _, tc := range []struct {
		name string
		got  []map[string]any
		want bool
	}{
		{"all of it", ref, true},
		{"the terminal event with its payload changed", changed, true},
		{"ended at the terminal event (no later receipt event)", ref[:4], true},
		{"skipped the terminal event but delivered a later one", append(append([]map[string]any{}, ref[:3]...), ref[4]), true},
		{"stopped before the terminal event", ref[:3], false},
		{"nothing", nil, false},
	} {
		if got := parCarried(ref, "t1", tc.got); got != tc.want {
			t.Errorf("%s: parCarried = %v, want %v", tc.name, got, tc.want)
		}
	}
	if parCarried(ref[:3], "t1", ref) {
		t.Error("parCarried with a reference that never ends = true, want false")
	}
}

func TestParTransitioned(t *testing.T) {
	evs := parSessionRun()
	if !parTransitioned(evs, "t1", "SUBMITTED", "WORKING") {
		t.Error("parTransitioned(t1, SUBMITTED → WORKING) = false, want true")
	}
	if parTransitioned(evs, "t2", "SUBMITTED", "WORKING") || parTransitioned(evs, "t1", "INPUT_REQUIRED", "WORKING") {
		t.Error("parTransitioned found a move that is not there")
	}
}
