package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/redact"
)

const key = "sk-canary-0123456789"

func newTestClient(t *testing.T, h http.Handler, prefix string) (*Client, *Recorder) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c, err := New(Options{BaseURL: srv.URL + prefix, APIKey: key, ProtocolVersion: "v-test", Timeout: 2 * time.Second,
		MaxBodyBytes: 4096, Redactor: redact.New(key)})
	if err != nil {
		t.Fatal(err)
	}
	rec := NewRecorder()
	return c.WithRecorder(rec), rec
}

func TestDoSendsProtocolHeadersAndRecordsRedacted(t *testing.T) {
	var got *http.Request
	c, rec := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Clone(context.Background())
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"echo":"`+r.Header.Get("Authorization")+`","n":1.0}`)
	}), "/prefix/")
	resp, err := c.Do(context.Background(), Request{Method: "POST", Path: "/v1/sessions/ses_1/tasks", Body: map[string]any{"a": 1}, IdempotencyKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.URL.Path != "/prefix/v1/sessions/ses_1/tasks" || got.Header.Get(VersionHeader) != "v-test" ||
		got.Header.Get("Authorization") != "Bearer "+key || got.Header.Get("Idempotency-Key") != "k1" {
		t.Errorf("request = %s %v, want prefixed path and protocol headers", got.URL.Path, got.Header)
	}
	m, err := resp.Object()
	if err != nil || m["n"].(interface{ String() string }).String() != "1.0" {
		t.Errorf("Object() = %v, %v; want numbers kept verbatim", m, err)
	}
	ex, _ := rec.Exchanges()
	if len(ex) != 1 || ex[0].Op != "POST /v1/sessions/{id}/tasks" {
		t.Fatalf("exchanges = %+v, want one with op POST /v1/sessions/{id}/tasks", ex)
	}
	all := ex[0].URL + ex[0].RequestBody + ex[0].ResponseBody + ex[0].Curl + strings.Join(ex[0].RequestHeader["Authorization"], "")
	if strings.Contains(all, key) {
		t.Errorf("transcript leaks the key: %+v", ex[0])
	}
	if !strings.Contains(ex[0].Curl, "$CONFORM_API_KEY") || !strings.Contains(ex[0].ResponseBody, redact.Marker) {
		t.Errorf("curl %q / body %q: want the key replaced", ex[0].Curl, ex[0].ResponseBody)
	}
}

func TestDoOmitsHeadersOnRequest(t *testing.T) {
	var got http.Header
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() }), "")
	if _, err := c.Do(context.Background(), Request{Path: "/v1/tasks", NoAuth: true, NoVersion: true}); err != nil {
		t.Fatal(err)
	}
	if got.Get("Authorization") != "" || got.Get(VersionHeader) != "" {
		t.Errorf("headers = %v, want no auth and no version", got)
	}
	c.Do(context.Background(), Request{Path: "/v1/tasks", Authorization: "Basic xyz", Version: "old"})
	if got.Get("Authorization") != "Basic xyz" || got.Get(VersionHeader) != "old" {
		t.Errorf("headers = %v, want verbatim overrides", got)
	}
}

func TestDoBoundsBodiesAndTimesOut(t *testing.T) {
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			for i := 0; i < 1000; i++ {
				if _, err := io.WriteString(w, strings.Repeat("x", 1024)); err != nil {
					return
				}
			}
		case "/hang":
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
		case "/html":
			io.WriteString(w, "<html>oops</html>")
		}
	}), "")
	resp, err := c.Do(context.Background(), Request{Path: "/big"})
	if err != nil || !resp.Truncated || len(resp.Body) != 4096 {
		t.Fatalf("big body: err=%v truncated=%v len=%d, want cut at 4096", err, resp.Truncated, len(resp.Body))
	}
	if _, err := resp.JSON(); err == nil {
		t.Error("JSON() of a truncated body succeeded")
	}
	_, err = c.Do(context.Background(), Request{Path: "/hang", Timeout: 100 * time.Millisecond})
	var te *TransportError
	if !errors.As(err, &te) || !te.Timeout() {
		t.Errorf("hang: err = %v, want a timeout TransportError", err)
	}
	resp, _ = c.Do(context.Background(), Request{Path: "/html"})
	if _, err := resp.Object(); err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("html: Object() err = %v, want 'not JSON'", err)
	}
}

func TestUnreachable(t *testing.T) {
	c, err := New(Options{BaseURL: "http://127.0.0.1:1", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Do(context.Background(), Request{Path: "/v1"})
	var te *TransportError
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("err = %v, want a TransportError naming the target", err)
	}
	if _, err := New(Options{BaseURL: "ftp://x"}); err == nil {
		t.Error("New accepted an ftp URL")
	}
}

func TestStream(t *testing.T) {
	release := make(chan struct{})
	c, rec := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/plain" {
			w.Header().Set("Content-Type", "text/plain")
			io.WriteString(w, "not a stream")
			w.(http.Flusher).Flush()
			<-r.Context().Done() // never ends on its own
			return
		}
		if r.URL.Path == "/json" {
			w.WriteHeader(404)
			io.WriteString(w, `{"error":{}}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		io.WriteString(w, ": hello\r\n\r\nid: 1\r\nevent: task.started\r\ndata: {\"a\":\r\ndata: 1}\r\n\r\n")
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}), "")
	s, err := c.Stream(context.Background(), Request{Path: "/v1/tasks/t/stream", Header: http.Header{"Last-Event-ID": {"0"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	f, err := s.NextEvent(ctx)
	if err != nil || f.ID != "1" || f.Event != "task.started" || f.Data != "{\"a\":\n1}" {
		t.Fatalf("NextEvent = %+v, %v", f, err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, err := s.Next(short); !errors.Is(err, ErrStreamTimeout) {
		t.Errorf("Next on a silent stream = %v, want ErrStreamTimeout", err)
	}
	close(release)
	if _, err := s.Next(ctx); err != io.EOF {
		t.Errorf("Next after server close = %v, want io.EOF", err)
	}
	ex, _ := rec.Exchanges()
	if len(ex) != 1 || len(ex[0].Frames) != 2 {
		t.Errorf("recorded %+v, want one sse exchange with 2 frames", ex)
	}

	// A 200 that is not SSE and never ends: the client keeps a sample and
	// gives up after the exchange timeout instead of waiting for EOF.
	s3, err := c.Stream(context.Background(), Request{Path: "/plain", Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s3.Next(ctx); !errors.Is(err, ErrNotEventStream) || string(s3.Response.Body) != "not a stream" {
		t.Errorf("endless text/plain: err=%v body=%q", err, s3.Response.Body)
	}

	s2, err := c.Stream(context.Background(), Request{Path: "/json"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Next(ctx); !errors.Is(err, ErrNotEventStream) || s2.Response.Status != 404 || string(s2.Response.Body) != `{"error":{}}` {
		t.Errorf("non-SSE answer: err=%v status=%d body=%q", err, s2.Response.Status, s2.Response.Body)
	}
}

func TestOp(t *testing.T) {
	for _, tc := range []struct{ method, path, base, want string }{
		{"GET", "/p/v1/tasks/task_01/events", "/p", "GET /v1/tasks/{id}/events"},
		{"POST", "/v1/sessions/ses%2F1/tasks", "", "POST /v1/sessions/{id}/tasks"},
		{"GET", "/v1", "", "GET /v1"},
	} {
		if got := Op(tc.method, tc.path, tc.base); got != tc.want {
			t.Errorf("Op(%s %s) = %q, want %q", tc.method, tc.path, got, tc.want)
		}
	}
}

func TestSegKeepsHostileIDsInOneSegment(t *testing.T) {
	var got string
	c, _ := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.URL.EscapedPath() }), "/base")
	c.Do(context.Background(), Request{Path: "/v1/tasks/" + Seg("../../admin?x=1") + "/events"})
	if got != "/base/v1/tasks/..%2F..%2Fadmin%3Fx=1/events" {
		t.Errorf("server saw %q, want the id kept as one escaped segment", got)
	}
	c.Do(context.Background(), Request{Path: "/v1/tasks/task_01J"})
	if got != "/base/v1/tasks/task_01J" {
		t.Errorf("server saw %q for a plain id", got)
	}
}

// A target that stops answering is taken for gone after StoppedAfter
// exchanges in a row with no answer; later exchanges fail at once with
// ErrTargetStopped; an answer in between resets the count; a caller that
// cancels its own wait is not counted.
func TestHealthStopsAfterUnansweredInARow(t *testing.T) {
	var hang atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	defer func() { close(release); srv.CloseClientConnections(); srv.Close() }()
	c, err := New(Options{BaseURL: srv.URL, Timeout: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	hang.Store(true)
	for i := 0; i < StoppedAfter-1; i++ {
		if _, err := c.Do(ctx, Request{Path: "/v1"}); err == nil {
			t.Fatal("a hung exchange answered")
		}
	}
	// A caller cancelling its own wait says nothing about the target.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	c.Do(cctx, Request{Path: "/v1"})
	hang.Store(false)
	// Answered exchanges get a generous bound (a hung one fails whatever
	// its bound: the server never answers it).
	if _, err := c.Do(ctx, Request{Path: "/v1", Timeout: time.Minute}); err != nil {
		t.Fatalf("an answer after %d misses: %v", StoppedAfter-1, err)
	}
	hang.Store(true)
	for i := 0; i < StoppedAfter; i++ {
		c.Do(ctx, Request{Path: "/v1"})
	}
	if c.Health().Stopped() == "" {
		t.Fatalf("%d unanswered exchanges in a row did not stop the target", StoppedAfter)
	}
	hang.Store(false)
	_, err = c.WithRecorder(NewRecorder()).Do(ctx, Request{Path: "/v1", Timeout: time.Minute})
	if !errors.Is(err, ErrTargetStopped) {
		t.Fatalf("after the stop: %v, want ErrTargetStopped (and shared by copies)", err)
	}
	var te *TransportError
	if !errors.As(err, &te) {
		t.Fatalf("the stop is not a transport error: %T", err)
	}
}

// Exchanges recorded elsewhere (an observation beside the run) join a
// spec's transcript as copies, within its limit.
func TestRecorderInclude(t *testing.T) {
	c, src := newTestClient(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"x"}`))
	}), "")
	for _, p := range []string{"/v1/a", "/v1/b"} {
		if _, err := c.Do(context.Background(), Request{Path: p}); err != nil {
			t.Fatal(err)
		}
	}
	ex, _ := src.Exchanges()
	dst := NewRecorder()
	dst.Include(ex)
	ex[0].URL = "changed"
	got, dropped := dst.Exchanges()
	if len(got) != 2 || dropped != 0 || !strings.HasSuffix(got[0].URL, "/v1/a") || !strings.HasSuffix(got[1].URL, "/v1/b") {
		t.Fatalf("included %+v (dropped %d), want the two exchanges, in order", got, dropped)
	}
	for range maxExchanges {
		dst.Include(ex[:1])
	}
	if got, dropped := dst.Exchanges(); len(got) != maxExchanges || dropped != 2 {
		t.Fatalf("past the limit: %d kept, %d dropped; want %d and 2", len(got), dropped, maxExchanges)
	}
}
