package check

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

func answer(status int, body string) *client.Response {
	return &client.Response{Method: "POST", URL: "/v1/sessions/s_1/tasks", Status: status, Header: http.Header{}, Body: []byte(body)}
}

const reused = `{"error":{"code":"idempotency_key_reused","message":"m","type":"conflict_error"}}`
const inUse = `{"error":{"code":"conflict","message":"in flight","type":"conflict_error"}}`

func TestKeyedRound(t *testing.T) {
	loc := answer(202, `{}`)
	loc.Header.Set("Location", "/v1/tasks/t_1")
	for _, tc := range []struct {
		name   string
		same   bool
		resps  []*client.Response
		winner string
		retry  int
		fails  string
	}{
		{"one resource", true, []*client.Response{answer(202, `{"id":"t_1"}`), answer(202, `{"id":"t_1"}`), loc}, "t_1", 0, ""},
		{"in flight refusals", true, []*client.Response{answer(202, `{"id":"t_1"}`), answer(409, inUse), answer(429, ``), answer(503, ``)}, "t_1", 3, ""},
		{"duplicate", true, []*client.Response{answer(202, `{"id":"t_1"}`), answer(202, `{"id":"t_2"}`)}, "", 0, "named 2 resources"},
		{"same body called different", true, []*client.Response{answer(202, `{"id":"t_1"}`), answer(409, reused)}, "t_1", 0, "a different body's refusal"},
		{"no id", true, []*client.Response{answer(202, `{}`)}, "", 0, "naming no resource"},
		{"server error", true, []*client.Response{answer(202, `{"id":"t_1"}`), answer(500, `{}`)}, "t_1", 0, "answered 500"},
		{"one winner", false, []*client.Response{answer(409, reused), answer(202, `{"id":"t_1"}`), answer(409, reused)}, "t_1", 0, ""},
		{"two winners", false, []*client.Response{answer(202, `{"id":"t_1"}`), answer(202, `{"id":"t_2"}`)}, "", 0, "named 2 resources"},
		{"replayed instead of refused", false, []*client.Response{answer(202, `{"id":"t_1"}`), answer(202, `{"id":"t_1"}`)}, "t_1", 0, "all succeeded naming t_1"},
		{"other refusal", false, []*client.Response{answer(202, `{"id":"t_1"}`), answer(400, `{"error":{"code":"invalid_request","message":"m","type":"request_error"}}`)}, "t_1", 0, "want 409 idempotency_key_reused"},
	} {
		w, retry, err := KeyedRound("POST /v1/sessions/s_1/tasks", tc.same, tc.resps)
		if w != tc.winner || len(retry) != tc.retry {
			t.Errorf("%s: winner %q retry %v, want %q and %d retries", tc.name, w, retry, tc.winner, tc.retry)
		}
		if (tc.fails == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.fails) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.fails)
		}
	}
}

func TestSettled(t *testing.T) {
	if w, err := Settled("w", true, "", answer(201, `{"id":"m_1"}`)); w != "m_1" || err != nil {
		t.Errorf("first success: %q %v", w, err)
	}
	if _, err := Settled("w", true, "m_1", answer(201, `{"id":"m_2"}`)); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("a second resource: %v", err)
	}
	if _, err := Settled("w", false, "m_1", answer(409, reused)); err != nil {
		t.Errorf("different body refused after the round: %v", err)
	}
	if _, err := Settled("w", false, "m_1", answer(201, `{"id":"m_1"}`)); err == nil {
		t.Error("a different body replayed after the round passed")
	}
	if _, err := Settled("w", true, "m_1", answer(409, inUse)); err == nil {
		t.Error("still refused once the round was over passed")
	}
}

func TestGrew(t *testing.T) {
	if err := Grew("GET /v1/sessions/s/messages", []string{"a"}, []string{"a", "m"}, "m"); err != nil {
		t.Error(err)
	}
	for _, after := range [][]string{{"a", "m", "m2"}, {"a"}, {"a", "x"}} {
		if err := Grew("GET /v1/sessions/s/messages", []string{"a"}, after, "m"); err == nil {
			t.Errorf("after %v passed", after)
		}
	}
}

func TestOneOrder(t *testing.T) {
	want := []string{"m1", "m2", "m3"}
	ok := []Seq{{"event list", []string{"x", "m2", "m1", "m3"}}, {"message list", []string{"m2", "y", "m1", "m3"}}, {"stream", []string{"m2", "m1", "m3"}}}
	if err := OneOrder(want, ok); err != nil {
		t.Error(err)
	}
	for name, views := range map[string][]Seq{
		"lost":      {{"event list", []string{"m2", "m1", "m3"}}, {"stream", []string{"m2", "m3"}}},
		"twice":     {{"event list", []string{"m2", "m1", "m3"}}, {"message list", []string{"m2", "m1", "m1", "m3"}}},
		"reordered": {{"event list", []string{"m2", "m1", "m3"}}, {"message list", []string{"m1", "m2", "m3"}}},
	} {
		err := OneOrder(want, views)
		if err == nil || !strings.Contains(err.Error(), map[string]string{"lost": "lacks 1", "twice": "more than once", "reordered": "the other way round"}[name]) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestSeenOnce(t *testing.T) {
	all := []string{"e1", "e2", "e3"}
	if err := SeenOnce("pager", all, all); err != nil {
		t.Error(err)
	}
	for name, seen := range map[string][]string{"skipped": {"e1", "e3"}, "repeated": {"e1", "e2", "e2", "e3"}, "reordered": {"e2", "e1", "e3"}, "alien": {"e1", "e2", "e3", "e9"}} {
		if err := SeenOnce("pager", seen, all); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestOneTerminal(t *testing.T) {
	canceled := answer(200, `{"id":"t","status":"CANCELED"}`)
	refused := answer(400, `{"error":{"code":"invalid_state_transition","message":"m","type":"request_error"}}`)
	good := CancelRace{Task: "t", Reads: []string{Canceled, Canceled}, Terminal: []Change{{EventID: "e9", Kind: "task.canceled", To: Canceled}},
		Outcomes: []map[string]any{{"id": "o", "task_id": "t", "status": "CANCELED"}}, Cancels: []*client.Response{canceled, refused, answer(409, inUse)}}
	if err := OneTerminal(good); err != nil {
		t.Error(err)
	}
	bad := func(f func(*CancelRace)) CancelRace { c := good; f(&c); return c }
	for name, c := range map[string]CancelRace{
		"two terminal events": bad(func(c *CancelRace) {
			c.Terminal = []Change{{EventID: "e9", Kind: "task.canceled", To: Canceled}, {EventID: "e10", Kind: "task.canceled", To: Canceled}}
		}),
		"reads disagree": bad(func(c *CancelRace) { c.Reads = []string{Completed, Canceled} }),
		"outcome disagrees": bad(func(c *CancelRace) {
			c.Outcomes = append(c.Outcomes, map[string]any{"id": "o2", "task_id": "t", "status": "SUCCEEDED"})
		}),
		"cancel said canceled": bad(func(c *CancelRace) {
			c.Reads, c.Terminal, c.Outcomes = []string{Completed}, []Change{{EventID: "e9", Kind: "task.completed", To: Completed}}, nil
		}),
		"cancel errored": bad(func(c *CancelRace) { c.Cancels = []*client.Response{answer(500, `{}`)} }),
	} {
		if err := OneTerminal(c); err == nil {
			t.Errorf("%s: passed", name)
		}
	}
}

func TestNoFork(t *testing.T) {
	line := []Link{{Receipt: "r1", Task: "a", Hash: "h1", Previous: "h0"}, {Receipt: "r2", Task: "b", Hash: "h2", Previous: "h1"}, {Receipt: "r3", Task: "c", Hash: "h3"}}
	if err := NoFork(line); err != nil {
		t.Error(err)
	}
	fork := append(line, Link{Receipt: "r4", Task: "d", Hash: "h4", Previous: "h1"})
	if err := NoFork(fork); err == nil || !strings.Contains(err.Error(), "r2 (task b), r4 (task d) all link to h1") {
		t.Errorf("fork: %v", err)
	}
}

func TestAppendedMessage(t *testing.T) {
	for _, tc := range []struct {
		e    Event
		want string
	}{
		{Event{Kind: "session.message_appended", Payload: map[string]any{"message_id": "m1"}}, "m1"},
		{Event{Kind: "user.message", Payload: map[string]any{"message": map[string]any{"id": "m2"}}}, "m2"},
		{Event{Kind: "vendor.x", Resource: Pointer{"message", "m3"}}, "m3"},
		{Event{Kind: "task.started", Payload: map[string]any{"message_id": "m4"}}, ""},
		{Event{Kind: "user.message", Payload: map[string]any{}}, ""},
	} {
		if got, _ := AppendedMessage(tc.e); got != tc.want {
			t.Errorf("AppendedMessage(%+v) = %q, want %q", tc.e, got, tc.want)
		}
	}
}
