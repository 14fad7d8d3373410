package baseline

import (
	"slices"
	"testing"
)

func TestStable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"fail: GET http://127.0.0.1:43817/v1/tasks/task_01HV3K9Q8W7E6R5T4Y3U2I1O0P answered 500",
			"fail: GET http://127.0.0.1:<port>/v1/tasks/task_<id> answered 500"},
		{"event 3f2b8c1e-9a7d-4e6f-8b5a-1c2d3e4f5a6b at 2026-11-27T14:16:22.123Z came after 2026-11-27T14:16:23+01:00",
			"event <uuid> at <time> came after <time>"},
		{"session sess_000012 was CLOSED; dial tcp localhost:8080: connection refused",
			"session sess_<id> was CLOSED; dial tcp localhost:<port>: connection refused"},
		{"tool_call toolcall_9f8e7d6c5b4a3f2e1d0c9b8a is not listed", "tool_call toolcall_<id> is not listed"},
		{"artifact art_01JDZQXKHMBVWPRSTNAGFCYEDA gone; max_request_bytes_exceeded", "artifact art_<id> gone; max_request_bytes_exceeded"},
		// What is not volatile stays: requirement ids, statuses, field names, codes.
		{"unverified: CORE-CANCEL-001 needs a running task; want status WORKING, got invalid_request (error.param metadata.conform_scenario)",
			"unverified: CORE-CANCEL-001 needs a running task; want status WORKING, got invalid_request (error.param metadata.conform_scenario)"},
	} {
		if got := Stable(c.in); got != c.want {
			t.Errorf("Stable(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

func TestMerge(t *testing.T) {
	old := &File{Requirements: []Entry{{ID: "CORE-AUTH-002", Reason: "ours (TICKET-1)"}, {ID: "CORE-DUR-001"}, {ID: "CORE-LIFE-001", Reason: "x"}}}
	cur := &File{Requirements: []Entry{{ID: "CORE-LIFE-001", Reason: "fail: new text"}, {ID: "CORE-AUTH-002", Reason: "fail: y"}, {ID: "CORE-OUT-001", Reason: "unverified: z"}}}
	pruned, ch := Merge(old, cur, false)
	if want := []Entry{{ID: "CORE-AUTH-002", Reason: "ours (TICKET-1)"}, {ID: "CORE-LIFE-001", Reason: "x"}}; !slices.Equal(pruned.Requirements, want) {
		t.Errorf("prune: got %v, want %v", pruned.Requirements, want)
	}
	if !slices.Equal(ch.Removed, []string{"CORE-DUR-001"}) || len(ch.Added) != 0 {
		t.Errorf("prune change: %+v", ch)
	}
	updated, ch := Merge(old, cur, true)
	if n := len(updated.Requirements); n != 3 || updated.Requirements[2] != (Entry{ID: "CORE-OUT-001", Reason: "unverified: z"}) {
		t.Errorf("update: got %v", updated.Requirements)
	}
	if !slices.Equal(ch.Added, []string{"CORE-OUT-001"}) || !slices.Equal(ch.Kept, []string{"CORE-AUTH-002", "CORE-LIFE-001"}) {
		t.Errorf("update change: %+v", ch)
	}
}
