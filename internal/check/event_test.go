package check

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

func ev(id, kind, res string, seq int64, payload string) Event {
	var p map[string]any
	if payload != "" {
		json.Unmarshal([]byte(payload), &p)
	}
	return Event{ID: id, Kind: kind, Resource: Pointer{"task", res}, Sequence: seq, Payload: p}
}

func evJSON(id, kind string, seq any) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","event":%q,"resource":{"object":"task","id":"t1"},"created_at":"2026-04-25T19:00:00Z","sequence":%v,"payload":{}}`, id, kind, seq)
}

func TestDecodeEvent(t *testing.T) {
	e, err := DecodeEventJSON([]byte(evJSON("e1", "task.started", 3)))
	if err != nil || e.ID != "e1" || e.Kind != "task.started" || e.Sequence != 3 || e.Resource.ID != "t1" {
		t.Fatalf("DecodeEventJSON(valid) = %+v, %v", e, err)
	}
	// Unknown fields are ignored.
	if _, err := DecodeEventJSON([]byte(strings.Replace(evJSON("e1", "k", 0), `"payload"`, `"x_vendor":{"a":1},"payload"`, 1))); err != nil {
		t.Errorf("unknown field rejected: %v", err)
	}
	for _, tc := range []struct{ in, want string }{
		{evJSON("", "task.started", 1), "id is a string, want a non-empty string"},
		{evJSON("e1", "task.started", `"1"`), "sequence is a string, want an integer"},
		{evJSON("e1", "task.started", -1), "sequence is -1"},
		{evJSON("e1", "task.started", 1.5), "sequence is 1.5"},
		{strings.Replace(evJSON("e1", "k", 1), `"payload":{}`, `"payload":[]`, 1), "payload is an array"},
		{strings.Replace(evJSON("e1", "k", 1), `"resource":{"object":"task","id":"t1"}`, `"resource":"t1"`, 1), "resource is a string"},
		{strings.Replace(evJSON("e1", "k", 1), `"created_at":"2026-04-25T19:00:00Z",`, ``, 1), "created_at is missing"},
		{`[1]`, "event is an array"},
		{`{"id":`, "not JSON"},
		{`{} {}`, "data after the JSON value"},
	} {
		if _, err := DecodeEventJSON([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("DecodeEventJSON(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestEvents(t *testing.T) {
	body := `{"object":"list","data":[` + evJSON("e1", "a", 0) + `,` + evJSON("e2", "b", 1) + `],"page":{"has_more":true,"next_cursor":"e2"}}`
	p, err := Events(resp(200, body))
	if err != nil || len(p.Events) != 2 || !p.HasMore || p.NextCursor != "e2" {
		t.Fatalf("Events(valid) = %+v, %v", p, err)
	}
	for _, tc := range []struct {
		status     int
		body, want string
	}{
		{404, `{}`, "status = 404"},
		{200, `{"data":{}}`, "data is an object"},
		{200, `{"data":[` + evJSON("e1", "a", -2) + `]}`, "data[0]: event e1: sequence is -2"},
	} {
		if _, err := Events(resp(tc.status, tc.body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Events(%d %s) = %v, want %q", tc.status, tc.body, err, tc.want)
		}
	}
}

func TestSequences(t *testing.T) {
	ok := []Event{ev("1", "a", "t1", 0, ""), ev("2", "a", "t2", 0, ""), ev("3", "a", "t1", 1, ""), ev("4", "a", "t1", 5, "")}
	if err := Sequences("x", ok); err != nil {
		t.Errorf("Sequences(increasing per resource) = %v", err)
	}
	for _, bad := range [][]Event{
		{ev("1", "a", "t1", 0, ""), ev("2", "a", "t1", 0, "")},
		{ev("1", "a", "t1", 2, ""), ev("2", "a", "t2", 0, ""), ev("3", "a", "t1", 1, "")},
	} {
		if err := Sequences("x", bad); err == nil || !strings.Contains(err.Error(), "strictly increasing") {
			t.Errorf("Sequences(%v) = %v, want a failure", IDs(bad), err)
		}
	}
}

func evs(ids ...string) []Event {
	out := make([]Event, len(ids))
	for i, id := range ids {
		out[i] = ev(id, "k", "t1", int64(i), "")
	}
	return out
}

func TestRange(t *testing.T) {
	all := evs("a", "b", "c", "d")
	if err := Range("x", all, "b", evs("c", "d")); err != nil {
		t.Errorf("Range(exact) = %v", err)
	}
	if err := Range("x", all, "d", nil); err != nil {
		t.Errorf("Range(after last) = %v", err)
	}
	for _, tc := range []struct {
		got  []Event
		want string
	}{
		{evs("a", "b", "c", "d"), "event 0 is a, want c"},
		{evs("b", "c", "d"), "event 0 is b, want c"},
		{evs("c"), "missing d"},
		{evs("c", "d", "d"), "extra d"},
	} {
		if err := Range("x", all, "b", tc.got); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Range(%v) = %v, want %q", IDs(tc.got), err, tc.want)
		}
	}
}

func TestPages(t *testing.T) {
	all := evs("a", "b", "c", "d", "e")
	good := []EventPage{{evs("a", "b"), true, "b"}, {evs("c", "d"), true, "d"}, {evs("e"), false, ""}}
	if err := Pages("x", 2, good, all); err != nil {
		t.Errorf("Pages(good) = %v", err)
	}
	for _, tc := range []struct {
		pages []EventPage
		want  string
	}{
		{[]EventPage{{evs("a", "b", "c", "d", "e"), false, ""}}, "page 1 has 5 events, want at most limit=2"},
		{[]EventPage{{evs("a", "b"), false, ""}, {evs("c", "d"), true, "d"}, {evs("e"), false, ""}}, "page 1 has has_more=false"},
		{[]EventPage{{evs("a", "b"), true, "a"}, {evs("b", "c"), true, "c"}, {evs("d", "e"), false, ""}}, "b appears twice"},
		{[]EventPage{{evs("a", "b"), true, "b"}, {evs("d", "e"), false, ""}}, "item 3 of the walk is d, want c"},
		{[]EventPage{{evs("a", "b"), false, ""}}, "the walk ended after 2 events, want 5"},
	} {
		if err := Pages("x", 2, tc.pages, all); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Pages(%v) = %v, want %q", tc.pages, err, tc.want)
		}
	}
}

// Hostile event JSON never panics the decoders or the lifecycle reading,
// and what decodes cleanly satisfies the documented field rules.
func FuzzDecodeEvent(f *testing.F) {
	f.Add([]byte(evJSON("e1", "task.started", 1)))
	f.Add([]byte(`{"id":"e","event":"task.status_changed","resource":{"object":"task","id":"t1"},"created_at":"x","sequence":1e3,"payload":{"status":7}}`))
	f.Add([]byte(`{"sequence":-0,"payload":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := DecodeEventJSON(b)
		if err != nil {
			return
		}
		if e.ID == "" || e.Kind == "" || e.Sequence < 0 || e.Payload == nil || e.Resource.ID == "" {
			t.Fatalf("DecodeEventJSON(%q) = %+v without error, want the required fields", b, e)
		}
		cs, _ := Changes(e.Resource.ID, []Event{e, e})
		_ = Legal("x", "", cs)
		_ = Recorded("x", "", cs, ChangeStatuses(cs), Completed)
	})
}
