package suite

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// A watch runs beside its caller: it is under way once started, whoever
// waits for it (a restart, the spec that reports it) waits until it ended,
// and what it saw and every exchange it made are there afterwards.
func TestWatchRunsBesideAndIsAwaited(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"probe"}`))
	}))
	defer srv.Close()
	c, err := client.New(client.Options{BaseURL: srv.URL, APIKey: "k"})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	w := newWatch("a test timer", nil, func(ctx context.Context, c *client.Client) string {
		if _, err := c.Do(ctx, client.Request{Path: "/v1/watched", Probe: "a test"}); err != nil {
			return err.Error()
		}
		<-release // the timer
		return "seen"
	})
	all := []watcher{w}
	if waited, err := awaitAll(context.Background(), all); err != nil || waited != "" {
		t.Fatalf("a watch never started was waited for: %q, %v", waited, err)
	}
	w.startWith(c)
	w.startWith(c) // once
	if !w.begun() || w.ended() {
		t.Fatalf("started: begun %v, ended %v; want under way", w.begun(), w.ended())
	}
	// Still under way: a caller whose context ends first gets its error.
	stopped, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("the spec was stopped"))
	if _, err := awaitAll(stopped, all); err == nil || !strings.Contains(err.Error(), "the spec was stopped") {
		t.Fatalf("awaitAll under a stopped context = %v, want its cause", err)
	}
	close(release)
	waited, err := awaitAll(context.Background(), all)
	if err != nil || !strings.HasPrefix(waited, "a test timer (") {
		t.Fatalf("awaitAll = %q, %v; want it to name the watch it waited for", waited, err)
	}
	if !w.ended() || w.value != "seen" {
		t.Fatalf("after awaitAll: ended %v, value %q; want ended, \"seen\"", w.ended(), w.value)
	}
	// Ended: nothing is waited for any more.
	if waited, err := awaitAll(context.Background(), all); err != nil || waited != "" {
		t.Fatalf("an ended watch was waited for again: %q, %v", waited, err)
	}
	ex, _ := w.rec.Exchanges()
	if len(ex) != 1 || !strings.HasSuffix(ex[0].URL, "/v1/watched") {
		t.Fatalf("the watch's transcript = %+v, want its one exchange", ex)
	}
	w.mu.Lock()
	n := len(w.traffic)
	w.mu.Unlock()
	if n != 1 {
		t.Fatalf("the watch showed %d exchanges to its oracle, want 1", n)
	}
}

// A watch starts with the run only when the run will run its spec.
func TestRunsEarly(t *testing.T) {
	env := &target.Env{Levels: []target.Selection{
		{Level: requirements.Core, Run: true},
		{Level: requirements.Extended, Run: true},
		{Level: requirements.Replay, Run: false, Reason: "not selected"},
	}}
	ext := ginkgo.Labels{"req:EXT-WS-011", "level:extended"}
	rep := ginkgo.Labels{"req:RPLY-RANGE-002", "level:replay"}
	for _, c := range []struct {
		name   string
		sc     types.SuiteConfig
		labels ginkgo.Labels
		want   bool
	}{
		{"a full run", types.SuiteConfig{}, ext, true},
		{"the family filter keeps it", types.SuiteConfig{LabelFilter: "!level:openharness && !level:acp-harbor"}, ext, true},
		{"a label filter that keeps it", types.SuiteConfig{LabelFilter: "req:EXT-WS-011"}, ext, true},
		{"a label filter that leaves it out", types.SuiteConfig{LabelFilter: "level:core"}, ext, false},
		{"a profile run", types.SuiteConfig{LabelFilter: "level:openharness"}, ext, false},
		{"a focus", types.SuiteConfig{FocusStrings: []string{"heartbeat"}}, ext, false},
		{"a skip", types.SuiteConfig{SkipStrings: []string{"replay"}}, ext, false},
		{"a file focus", types.SuiteConfig{FocusFiles: []string{"websocket.go"}}, ext, false},
		{"its level is not checked", types.SuiteConfig{}, rep, false},
		{"a broken label filter", types.SuiteConfig{LabelFilter: "(("}, ext, false},
	} {
		if got := runsEarly(c.sc, env, c.labels); got != c.want {
			t.Errorf("%s: runsEarly = %v, want %v", c.name, got, c.want)
		}
	}
}
