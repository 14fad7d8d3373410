package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/redact"
)

// observed collects what an Observer sees.
type observed struct {
	mu sync.Mutex
	ts []Traffic
}

func (o *observed) see(t Traffic) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ts = append(o.ts, t)
}

func (o *observed) all() []Traffic {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Traffic(nil), o.ts...)
}

func TestObserverSeesEveryExchange(t *testing.T) {
	big := strings.Repeat("y", 20<<10) // longer than the transcript's 8 KiB, shorter than the body cap
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/base/v1/big":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `"`+big+`"`)
		case "/base/v1/huge":
			io.WriteString(w, strings.Repeat("z", 70<<10))
		case "/base/v1/tasks/t%2F1/stream", "/base/v1/tasks/t/stream":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "id: 1\nevent: e\ndata: {}\n\n")
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case "/base/v1/refused/stream":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{"code":"resource_not_found"}}`)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			io.WriteString(w, `{"key":"`+r.Header.Get("Authorization")+`"}`)
		}
	}))
	defer srv.Close()
	base, err := New(Options{BaseURL: srv.URL + "/base/", APIKey: key, ProtocolVersion: "v-test", Timeout: 2 * time.Second,
		MaxBodyBytes: 64 << 10, Redactor: redact.New(key)})
	if err != nil {
		t.Fatal(err)
	}
	var obs observed
	c := base.WithObserver(obs.see)
	ctx := context.Background()

	// A REST exchange: everything the oracle needs, the key only redacted.
	q := url.Values{"limit": {"5"}}
	if _, err := c.Do(ctx, Request{Method: "POST", Path: "/v1/sessions/" + Seg("s/1") + "/tasks", Query: q, Body: map[string]any{"a": 1},
		IdempotencyKey: "k1", Probe: "testing the observer"}); err != nil {
		t.Fatal(err)
	}
	q.Set("limit", "changed after the call")
	// A body longer than the transcript keeps, shorter than the cap.
	if _, err := c.Do(ctx, Request{Path: "/v1/big"}); err != nil {
		t.Fatal(err)
	}
	// A body over the cap.
	if _, err := c.Do(ctx, Request{Path: "/v1/huge"}); err != nil {
		t.Fatal(err)
	}
	// A stream: head only. A refused stream: its bounded body.
	s, err := c.Stream(ctx, Request{Path: "/v1/tasks/t/stream"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = c.Stream(ctx, Request{Path: "/v1/refused/stream"})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()

	ts := obs.all()
	if len(ts) != 5 {
		t.Fatalf("observed %d exchanges, want 5: %+v", len(ts), ts)
	}
	post := ts[0]
	if post.Kind != "http" || post.Method != "POST" || post.Path != "/v1/sessions/s%2F1/tasks" || post.Query.Get("limit") != "5" ||
		post.Status != 201 || string(post.RequestBody) != `{"a":1}` || post.Probe != "testing the observer" ||
		post.RequestHeader.Get("Idempotency-Key") != "k1" || post.RequestHeader.Get(VersionHeader) != "v-test" ||
		post.ResponseHeader.Get("Content-Type") != "application/json" || !post.BodyRead() || post.Truncated {
		t.Errorf("POST traffic = %+v", post)
	}
	if got := post.RequestHeader.Get("Authorization"); got != "Bearer "+redact.Marker {
		t.Errorf("observed Authorization = %q, want the scheme with the key redacted", got)
	}
	if !strings.Contains(string(post.ResponseBody), key) {
		t.Errorf("response body = %q: bodies are passed as received (whoever prints redacts)", post.ResponseBody)
	}
	if got := ts[1]; len(got.ResponseBody) != len(big)+2 || got.Truncated {
		t.Errorf("big body: %d bytes truncated=%v, want the whole %d", len(got.ResponseBody), got.Truncated, len(big)+2)
	}
	if got := ts[2]; len(got.ResponseBody) != 64<<10 || !got.Truncated {
		t.Errorf("huge body: %d bytes truncated=%v, want cut at the cap", len(got.ResponseBody), got.Truncated)
	}
	if got := ts[3]; got.Kind != "sse" || got.Status != 200 || got.ResponseBody != nil || got.BodyRead() ||
		got.ResponseHeader.Get("Content-Type") != "text/event-stream" || got.RequestHeader.Get("Accept") != "text/event-stream" {
		t.Errorf("stream traffic = %+v, want the head only", got)
	}
	if got := ts[4]; got.Kind != "sse" || got.Status != 404 || !got.BodyRead() || !strings.Contains(string(got.ResponseBody), "resource_not_found") {
		t.Errorf("refused stream traffic = %+v, want its body", got)
	}

	// The original client observes nothing; a nil observer is allowed.
	if _, err := base.Do(ctx, Request{Path: "/v1/x"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WithObserver(nil).Do(ctx, Request{Path: "/v1/x"}); err != nil {
		t.Fatal(err)
	}
	if n := len(obs.all()); n != 5 {
		t.Errorf("observed %d exchanges after calls without the observer, want still 5", n)
	}
}

func TestObserverSkipsTransportFailuresAndSeesRefusedUpgrades(t *testing.T) {
	var obs observed
	dead, err := New(Options{BaseURL: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := dead.WithObserver(obs.see).Do(context.Background(), Request{Path: "/v1"}); err == nil {
		t.Fatal("Do to a closed port succeeded")
	}
	if n := len(obs.all()); n != 0 {
		t.Errorf("a transport failure was observed (%d)", n)
	}

	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(401)
		io.WriteString(w, `{"error":{"code":"unauthenticated","message":"m","type":"auth_error"}}`)
	}))
	defer srv.Close()
	c, err := New(Options{BaseURL: srv.URL, APIKey: key, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.WithObserver(obs.see).OpenWS(context.Background(), WSDial{Path: "/v1/tasks/t/stream"})
	if !errors.Is(err, ErrUpgradeRefused) {
		t.Fatalf("OpenWS to a 401 = %v, want ErrUpgradeRefused", err)
	}
	ts := obs.all()
	if len(ts) != 1 || ts[0].Kind != "websocket" || ts[0].Status != 401 || ts[0].Path != "/v1/tasks/t/stream" || !ts[0].BodyRead() {
		t.Errorf("refused upgrade traffic = %+v", ts)
	}
}
