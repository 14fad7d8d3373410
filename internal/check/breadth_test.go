package check

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func scopedEv(id, object, res, task, session string) Event {
	return Event{ID: id, Kind: "k", Resource: Pointer{object, res}, TaskID: task, SessionID: session}
}

func TestScoped(t *testing.T) {
	task := Scope{Task: "t1", Session: "s1"}
	sess := Scope{Session: "s1", Tasks: []string{"t1", "t2"}, Elsewhere: []string{"t3"}}
	for _, tc := range []struct {
		name string
		sc   Scope
		evs  []Event
		own  int
		want string // "" = no error
	}{
		{"task: resource is the task", task, []Event{scopedEv("e1", "task", "t1", "", ""), scopedEv("e2", "task", "t1", "t1", "s1")}, 2, ""},
		{"task: task_id names it", task, []Event{scopedEv("e1", "message", "m1", "t1", "s1")}, 1, ""},
		{"task: no attribution at all is accepted", task, []Event{scopedEv("e1", "message", "m1", "", "")}, 0, ""},
		{"task: its own session's session events are accepted", task, []Event{scopedEv("e1", "session", "s1", "", "s1")}, 0, ""},
		{"task: another task's resource", task, []Event{scopedEv("e1", "task", "t1", "", ""), scopedEv("e2", "task", "t2", "", "")}, 1, "event e2 (k) has resource task/t2"},
		{"task: another task's task_id", task, []Event{scopedEv("e2", "message", "m2", "t2", "s1")}, 0, "event e2 (k) has task_id t2"},
		{"task: another session", task, []Event{scopedEv("e2", "message", "m2", "", "s2")}, 0, "has session_id s2"},
		{"task: another session's resource", task, []Event{scopedEv("e2", "session", "s2", "", "")}, 0, "has resource session/s2"},
		{"session: session_id names it", sess, []Event{scopedEv("e1", "task", "t9", "t9", "s1")}, 1, ""},
		{"session: the session as resource", sess, []Event{scopedEv("e1", "session", "s1", "", "")}, 1, ""},
		{"session: one of its tasks", sess, []Event{scopedEv("e1", "task", "t1", "", ""), scopedEv("e2", "message", "m", "t2", "")}, 2, ""},
		{"session: an unknown task without session_id is accepted", sess, []Event{scopedEv("e1", "task", "t9", "", "")}, 0, ""},
		{"session: another session's session_id", sess, []Event{scopedEv("e1", "task", "t1", "", "s1"), scopedEv("e2", "task", "t3", "t3", "s2")}, 1, "1 of 2 events are not session s1's: event e2 (k) has session_id s2"},
		{"session: another session as resource", sess, []Event{scopedEv("e2", "session", "s2", "", "")}, 0, "resource session/s2"},
		{"session: a task of another session", sess, []Event{scopedEv("e2", "task", "t3", "", "")}, 0, "resource task/t3, a task of another session"},
		{"session: a task_id of another session", sess, []Event{scopedEv("e2", "message", "m", "t3", "")}, 0, "task_id t3, a task of another session"},
		{"empty", task, nil, 0, ""},
	} {
		own, err := Scoped("GET /x", tc.sc, tc.evs)
		if own != tc.own {
			t.Errorf("%s: Scoped own = %d, want %d", tc.name, own, tc.own)
		}
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: Scoped = %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: Scoped = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	// Many leaks are summarised.
	var evs []Event
	for i := range 8 {
		evs = append(evs, scopedEv("e"+string(rune('a'+i)), "task", "t2", "", ""))
	}
	if _, err := Scoped("GET /x", task, evs); err == nil || !strings.Contains(err.Error(), "and 3 more") {
		t.Errorf("Scoped(8 leaks) = %v, want a summary with \"and 3 more\"", err)
	}
}

func TestMonotonicIDs(t *testing.T) {
	for _, tc := range []struct {
		ids  []string
		want string // "" = no error
	}{
		{nil, ""},
		{[]string{"a"}, ""},
		{[]string{"event_000000000001", "event_000000000002", "event_000000000010"}, ""},
		{[]string{"1", "2", "10", "11"}, ""},               // decimal, not lexicographic
		{[]string{"evt_9", "evt_10", "evt_100"}, ""},       // prefix + number, not lexicographic
		{[]string{"01HX1", "01HX2", "01HXA", "01HZ0"}, ""}, // ULID-like: lexicographic only
		{[]string{"b", "a"}, `event id "a" (item 2) follows "b" (item 1), so the ids do not increase as byte strings`},
		{[]string{"event_000000000002", "event_000000000001", "event_000000000004", "event_000000000003"}, `event id "event_000000000001" (item 2) follows "event_000000000002" (item 1), so the ids do not increase by their decimal numbers`},
		{[]string{"10", "9", "11"}, `"9" (item 2) follows "10"`},
		{[]string{"evt_1", "evt_2", "evt_2"}, `event id "evt_2" is delivered twice (items 2 and 3)`},
		{[]string{"x_2", "y_1"}, ""}, // prefixes differ, but the bytes increase
		{[]string{"a7", "b3", "a9"}, `"a9" (item 3) follows "b3" (item 2), so the ids do not increase as byte strings`},
		{[]string{"7", "007"}, `"007" (item 2) follows "7"`},
	} {
		err := MonotonicIDs("GET /x", tc.ids)
		if tc.want == "" {
			if err != nil {
				t.Errorf("MonotonicIDs(%v) = %v, want nil", tc.ids, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("MonotonicIDs(%v) = %v, want an error containing %q", tc.ids, err, tc.want)
		}
	}
}

func TestReordered(t *testing.T) {
	for _, in := range []string{
		`{"input":{"role":"user","parts":[{"type":"text","text":"x","visibility":"public"}]},"metadata":{"a":1,"b":[1.5,true,null,"s"]}}`,
		`{"a":1,"b":2}`,
		`{"ü":"\u003c","a":{"z":{},"y":[]}}`,
	} {
		out, err := Reordered([]byte(in))
		if err != nil {
			t.Fatalf("Reordered(%s) = %v", in, err)
		}
		if bytes.Equal(out, []byte(in)) {
			t.Errorf("Reordered(%s) left the bytes as they were", in)
		}
		var a, b any
		if err := json.Unmarshal([]byte(in), &a); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatalf("Reordered(%s) = %s, not JSON: %v", in, out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Errorf("Reordered(%s) = %s, not the same JSON value", in, out)
		}
	}
	if out, _ := Reordered([]byte(`{"a":1,"b":2}`)); string(out) != `{ "b": 2, "a": 1 }` {
		t.Errorf("Reordered({a,b}) = %s, want the keys reversed and spaced", out)
	}
	for _, in := range []string{`{"a":`, `{} {}`} {
		if _, err := Reordered([]byte(in)); err == nil {
			t.Errorf("Reordered(%s) = nil error, want one", in)
		}
	}
}

func TestNoNewChanges(t *testing.T) {
	before := []Change{{EventID: "e1", Kind: "task.started", To: Working}, {EventID: "e2", Kind: "task.completed", To: Completed}}
	if err := NoNewChanges("GET /x", before, before); err != nil {
		t.Errorf("NoNewChanges(same) = %v", err)
	}
	after := append(append([]Change(nil), before...), Change{EventID: "e9", Kind: "task.status_changed", To: Working})
	if err := NoNewChanges("GET /x", before, after); err == nil || !strings.Contains(err.Error(), "e9 (task.status_changed) → WORKING") {
		t.Errorf("NoNewChanges(added) = %v, want the new event named", err)
	}
}
