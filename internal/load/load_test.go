package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/redact"
)

const key = "sk-load-canary-1234"

func newClient(t *testing.T, h http.Handler) *client.Client {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := client.New(client.Options{BaseURL: srv.URL, APIKey: key, ProtocolVersion: "v", Redactor: redact.New(key)})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func shots(n int, path string) []Shot {
	out := make([]Shot, n)
	for i := range out {
		out[i] = Shot{Label: fmt.Sprintf("#%d", i+1), Req: client.Request{Method: "POST", Path: path, Body: map[string]any{"n": 1}, IdempotencyKey: "k-1"}}
	}
	return out
}

// Every request of a round is in flight at once: the server holds each
// until all n have arrived, so a driver that sent them one after another
// would never finish the round.
func TestFireReleasesAtOnce(t *testing.T) {
	const n = 6
	var arrived sync.WaitGroup
	arrived.Add(n)
	all := make(chan struct{})
	go func() { arrived.Wait(); close(all) }()
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1" {
			return
		}
		arrived.Done()
		select {
		case <-all:
		case <-r.Context().Done():
		}
		w.WriteHeader(201)
		fmt.Fprint(w, `{"id":"res_1"}`)
	}))
	d := New(c, Limits{N: n, RoundTimeout: 30 * time.Second})
	d.Warm(context.Background(), n)
	r, err := d.Fire(context.Background(), shots(n, "/v1/things"))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range r.Answers {
		if a.Err != nil || a.Status != 201 || a.Object()["id"] != "res_1" || a.End < a.Start || a.Key != "k-1" || a.Path != "/v1/things" {
			t.Errorf("answer %+v, want 201 res_1 with its request's path and key", a)
		}
	}
	if !strings.Contains(r.Timeline(), "#6") || !strings.Contains(r.Timeline(), "201 id res_1") {
		t.Errorf("timeline does not show the answers:\n%s", r.Timeline())
	}
	if _, err := d.Fire(context.Background(), shots(n+1, "/v1/things")); !errors.Is(err, ErrTooMany) {
		t.Errorf("Fire of %d shots with N=%d: err %v, want ErrTooMany", n+1, n, err)
	}
}

// A 429 with Retry-After is honoured: the driver waits and sends the same
// request again, and the round says it was throttled.
func TestFireHonoursRetryAfter(t *testing.T) {
	var tries atomic.Int64
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if tries.Add(1) == 1 {
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(429)
			fmt.Fprint(w, `{"error":{"code":"rate_limited","message":"slow down","type":"rate_limit_error"}}`)
			return
		}
		w.WriteHeader(201)
		fmt.Fprint(w, `{"id":"res_1"}`)
	}))
	r, err := New(c, Limits{N: 1}).Fire(context.Background(), shots(1, "/v1/things"))
	if err != nil {
		t.Fatal(err)
	}
	a := r.Answers[0]
	if a.Status != 201 || len(a.Refusals) != 1 || a.Refusals[0].Status != 429 || a.Refusals[0].RetryAfter != "0" || !r.Throttled || r.GaveUp {
		t.Errorf("answer %+v (round throttled %v, gave up %v), want 201 after one honoured 429", a, r.Throttled, r.GaveUp)
	}
	if !strings.Contains(r.Timeline(), `after 429`) {
		t.Errorf("timeline does not show the refusal:\n%s", r.Timeline())
	}
}

// A target that asks for a longer wait than the driver honours, or keeps
// refusing past the round's deadline, leaves the round given up: never a
// hang.
func TestFireGivesUp(t *testing.T) {
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", r.Header.Get("X-Wait"))
		w.WriteHeader(503)
	}))
	for _, wait := range []string{"3600", ""} {
		s := shots(1, "/v1/things")
		s[0].Req.Header = http.Header{"X-Wait": {wait}}
		r, err := New(c, Limits{N: 1, RoundTimeout: 300 * time.Millisecond}).Fire(context.Background(), s)
		if err != nil {
			t.Fatal(err)
		}
		if !r.GaveUp || r.Answers[0].Status != 503 {
			t.Errorf("Retry-After %q: round %+v, want given up on 503", wait, r.Answers[0])
		}
	}
}

// The rate cap lets a burst of N go at once and makes the next wait.
func TestRateCap(t *testing.T) {
	d := New(nil, Limits{N: 4, Rate: 40})
	start := time.Now()
	if err := d.take(context.Background(), 4); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > 50*time.Millisecond {
		t.Errorf("the first burst of N waited %s", time.Since(start))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := d.take(ctx, 4); err == nil {
		t.Error("a second burst of 4 at 40/s went within 10 ms; want it held back about 100 ms")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 4, 25, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"2", 2 * time.Second, true}, {" 0 ", 0, true}, {"Sat, 25 Apr 2026 12:00:03 GMT", 3 * time.Second, true}, {"soon", 0, false}, {"-1", 0, false}, {"", 0, false}} {
		got, ok := retryAfter(tc.in, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("retryAfter(%q) = %s, %v; want %s, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

// A race reproduces itself: a script that fires the round's requests in
// the background and waits, the key read from $CONFORM_API_KEY and never
// written out; its message names each request and what was read after.
func TestRaceReport(t *testing.T) {
	c := newClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(202)
		fmt.Fprintf(w, `{"id":"task_%s"}`, r.Header.Get("X-N"))
	}))
	s := shots(2, "/v1/sessions/s_1/tasks")
	s[0].Req.Header, s[1].Req.Header = http.Header{"X-N": {"a"}}, http.Header{"X-N": {"b"}}
	s = append(s, Shot{Label: "ws#3", Transport: "websocket", Script: `{"type":"user_message"}`, Req: client.Request{Method: "POST", Path: "/v1/sessions/s_1/messages"},
		Send: func(context.Context) (Answer, error) { return Answer{Status: 201, Body: []byte(`{"id":"msg_1"}`)}, nil }})
	r, err := New(c, Limits{N: 3}).Fire(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	tl := NewTally(4)
	tl.Add(1, Outcome{Round: r})
	tl.Add(2, Outcome{Round: r, Err: errors.New("two tasks for one key"), After: []Read{{What: "GET /v1/sessions/s_1/tasks → 200", Saw: "2 tasks"}}})
	tl.Add(3, Outcome{Unjudged: "throttled"})
	tl.Add(4, Outcome{Round: r, Err: errors.New("again")})
	err = tl.Race()
	var race *Race
	if !errors.As(err, &race) || tl.Judged != 3 || tl.Showed != 2 || tl.Unjudged() != "round 3: throttled" {
		t.Fatalf("tally: %v judged %d showed %d unjudged %q", err, tl.Judged, tl.Showed, tl.Unjudged())
	}
	msg := err.Error()
	for _, want := range []string{"two tasks for one key", "round 2 of 4 (the race showed in 2 of the 4 rounds)", "#1     POST /v1/sessions/s_1/tasks key k-1", "202 id task_a", "ws#3   websocket POST", "201 id msg_1", "read afterwards:\n  GET /v1/sessions/s_1/tasks → 200: 2 tasks"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q:\n%s", want, msg)
		}
	}
	script := race.Repro()
	if strings.Count(script, "curl ") != 2 || strings.Count(script, "&\n") != 2 || !strings.Contains(script, "\nwait\n") ||
		!strings.Contains(script, `"$CONFORM_API_KEY"`) || strings.Contains(script, key) || !strings.Contains(script, `# ws#3 (websocket): {"type":"user_message"}`) {
		t.Errorf("script:\n%s", script)
	}
	doc := race.Doc("CORE-IDEM-003")
	if doc.Round != 2 || len(doc.Requests) != 3 || doc.Requests[0].Answer != "202 id task_a" || doc.Script != script {
		t.Errorf("doc %+v", doc)
	}
}

// A shot with a Lag goes that long after the round's release, the others
// at once (in a synctest bubble, exactly: time passes only when every
// shot waits).
func TestFireLag(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d := New(nil, Limits{N: 3, RoundTimeout: time.Minute})
		var mu sync.Mutex
		sent := map[string]time.Time{}
		send := func(label string) func(context.Context) (Answer, error) {
			return func(context.Context) (Answer, error) {
				mu.Lock()
				sent[label] = time.Now()
				mu.Unlock()
				return Answer{Status: 201}, nil
			}
		}
		start := time.Now()
		r, err := d.Fire(context.Background(), []Shot{
			{Label: "now", Send: send("now")},
			{Label: "later", Send: send("later"), Lag: 2 * time.Millisecond},
			{Label: "also now", Send: send("also now")},
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := sent["now"].Sub(start); got != 0 {
			t.Errorf("a shot without a lag went %s after the release", got)
		}
		if got := sent["later"].Sub(start); got != 2*time.Millisecond {
			t.Errorf("a shot with a 2ms lag went %s after the release", got)
		}
		for _, a := range r.Answers {
			if a.Label == "later" && a.Start != 2*time.Millisecond {
				t.Errorf("the lagged shot's start is %s in the timeline, want 2ms", a.Start)
			}
		}
	})
}

// AtOnce releases its goroutines only once all are running: none has
// begun when released runs, and all have ended when it returns.
func TestAtOnce(t *testing.T) {
	const n = 16
	var began, ended atomic.Int32
	var atRelease int32 = -1
	AtOnce(n, func() { atRelease = began.Load() }, func(i int) {
		began.Add(1)
		ended.Add(1)
	})
	if atRelease != 0 {
		t.Errorf("%d goroutines began before the release", atRelease)
	}
	if got := ended.Load(); got != n {
		t.Errorf("%d of %d goroutines ended before AtOnce returned", got, n)
	}
	AtOnce(2, nil, func(int) {}) // released may be nil
}
