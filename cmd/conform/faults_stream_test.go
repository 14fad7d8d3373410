package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-conform/conform/refharness"
)

// Lifecycle, cancellation, outcome, event and SSE faults: each must fail
// exactly the requirements it names (plus the tolerated ones, which observe
// the same broken behaviour from another side).
var streamFaults = []faultCase{
	{Fault: refharness.FaultIllegalTransition, Fails: []string{"CORE-LIFE-001"}},
	{Fault: refharness.FaultSkipTransitionEvent, Fails: []string{"CORE-LIFE-002"}},
	// A completed task turned CANCELED keeps its completed_at: the same
	// broken cancel, seen on the task's fields.
	{Fault: refharness.FaultTerminalTaskMutable, Fails: []string{"CORE-CANCEL-002"}, Tolerated: []string{"CORE-CANCEL-003"}},
	{Fault: refharness.FaultCompletedAfterCancel, Fails: []string{"CORE-CANCEL-001"}},
	{Fault: refharness.FaultCanceledHasCompletedAt, Fails: []string{"CORE-CANCEL-003"}},
	{Fault: refharness.FaultOutcomeUsesTaskStatus, Fails: []string{"CORE-OUT-001"}},
	{Fault: refharness.FaultSequenceNotIncreasing, Fails: []string{"CORE-EVT-002"}},
	{Fault: refharness.FaultDropSSEID, Fails: []string{"CORE-SSE-002"}},
	{Fault: refharness.FaultSSEWrongContentType, Fails: []string{"CORE-SSE-001"}},
	{Fault: refharness.FaultSSEDataNotJSON, Fails: []string{"CORE-SSE-003"}},
	{Fault: refharness.FaultResumeRepeatsEvent, Fails: []string{"CORE-RESUME-001"}},
	{Fault: refharness.FaultNoCursorExpiredFrame, Fails: []string{"CORE-RESUME-002"}},
	{Fault: refharness.FaultIgnoreLastEventID, Fails: []string{"CORE-RESUME-001"}},
	// A range read that ignores its cursor also makes the page walk repeat.
	{Fault: refharness.FaultEventsRepeatOnRange, Fails: []string{"CORE-EVT-003"}, Tolerated: []string{"CORE-EVT-004"}},
}

func TestStreamFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range streamFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			url := harness(t, refharness.Options{Faults: refharness.Faults{tc.Fault: true}})
			assertCaught(t, string(tc.Fault), url, "core", tc.Fails, tc.Tolerated)
		})
	}
}

// Legal but unusual stream framing and cancel answers must pass.
func TestStreamVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, v := range []refharness.Variant{refharness.VariantCRLF, refharness.VariantKeepAliveEveryFrame,
		refharness.VariantMultilineData, refharness.VariantCancelTerminalConflict} {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			assertVariantPasses(t, v, "core")
		})
	}
}

// Faults the reference Harness has no switch for, made by rewriting its
// answers; each must still fail exactly its requirements.
var streamWrapFaults = []wrapFault{
	{Name: "events-without-payload", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "event", func(e map[string]any) { delete(e, "payload") })
	}), Fails: []string{"CORE-EVT-001"}},
	{Name: "event-ranges-ignore-limit", Wrap: func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/events") {
				q := r.URL.Query()
				q.Del("limit")
				r.URL.RawQuery = q.Encode()
			}
			next.ServeHTTP(w, r)
		})
	}, Fails: []string{"CORE-EVT-004"}},
}

func TestStreamWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range streamWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertCaught(t, tc.Name, wrappedHarness(t, tc.Wrap), "core", tc.Fails, tc.Tolerated)
		})
	}
}

// SHOULD-level lifecycle behaviour broken by rewriting: each must earn a
// warning for exactly its requirement and fail nothing.
var streamWrapShouldFaults = []struct {
	Name  string
	Wrap  func(http.Handler) http.Handler
	Warns string
}{
	{"failure-hidden", rewriting(func(_ *http.Request, v any) {
		eachObject(v, "task", func(m map[string]any) { delete(m, "failure") })
		eachObject(v, "event", func(e map[string]any) {
			if p, ok := e["payload"].(map[string]any); ok && e["event"] == "task.failed" {
				for _, k := range []string{"failure", "error", "reason", "message"} {
					delete(p, k)
				}
			}
		})
	}), "CORE-LIFE-003"},
	{"outcome-unreachable", rewriting(func(r *http.Request, v any) {
		eachObject(v, "task", func(m map[string]any) { delete(m, "outcome_id") })
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/outcomes" && r.URL.Query().Get("task_id") != "" {
			m["data"] = []any{}
		}
	}), "CORE-OUT-002"},
}

func TestStreamWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range streamWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertWarnsOnly(t, tc.Name, wrappedHarness(t, tc.Wrap), "core", tc.Warns)
		})
	}
}

// Readings of the spec that the reference Harness does not take but a
// reasonable implementer could: the suite must pass them too. Each wraps
// the reference Harness in a small handler that changes one behaviour
// (wrappedHarness is in faults_rest_test.go).
func TestStreamReadingsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per reading")
	}
	for name, wrap := range map[string]func(http.Handler, *atomic.Int64) http.Handler{
		"task streams stay open after the task ended": holdStreamsOpen,
		"unknown Last-Event-ID refused with 410":      refuseUnknownCursor,
		"every transition is task.status_changed":     statusChangedOnly,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var used atomic.Int64 // times the wrapper changed an answer
			url := wrappedHarness(t, func(h http.Handler) http.Handler { return wrap(h, &used) })
			assertClean(t, name, url, "core")
			if used.Load() == 0 {
				t.Error("the suite never met the changed behaviour, so this proves nothing")
			}
		})
	}
}

// holdStreamsOpen keeps a task stream open with keep-alive comments after
// the reference Harness ends it (it ends task streams once the task is
// over; the spec does not say either way). Error streams still close.
func holdStreamsOpen(next http.Handler, used *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/tasks/") || !strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		sw := &sniffWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status != http.StatusOK || bytes.Contains(sw.seen, []byte("event: error")) {
			return
		}
		used.Add(1)
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	})
}

// sniffWriter remembers the status and the first bytes written.
type sniffWriter struct {
	http.ResponseWriter
	status int
	seen   []byte
}

func (s *sniffWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *sniffWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if len(s.seen) < 4096 {
		s.seen = append(s.seen, b...)
	}
	return s.ResponseWriter.Write(b)
}
func (s *sniffWriter) Flush() { s.ResponseWriter.(http.Flusher).Flush() }

// refuseUnknownCursor answers a stream request whose Last-Event-ID is not
// an event the Harness holds with 410 cursor_expired instead of an error
// event: a clear error that does not pretend the stream is continuous.
func refuseUnknownCursor(next http.Handler, used *atomic.Int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last := r.Header.Get("Last-Event-ID")
		if last == "" || !strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		probe := httptest.NewRequest(http.MethodGet, "/v1/events/"+url.PathEscape(last), nil)
		probe.Header = r.Header.Clone()
		probe.Header.Del("Last-Event-ID")
		probe.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, probe)
		if rec.Code != http.StatusNotFound {
			next.ServeHTTP(w, r)
			return
		}
		used.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, `{"error":{"code":"cursor_expired","message":"that cursor is not held","type":"request_error","param":"Last-Event-ID"}}`)
	})
}

// statusChangedOnly announces every task transition after submission as
// task.status_changed with only payload.status (no previous_status), in
// event lists and on streams: the taxonomy's generic state event.
func statusChangedOnly(next http.Handler, used *atomic.Int64) http.Handler {
	specific := map[string]bool{"task.started": true, "task.input_required": true, "task.auth_required": true,
		"task.completed": true, "task.failed": true, "task.canceled": true}
	event := func(e map[string]any) {
		if k, _ := e["event"].(string); specific[k] {
			e["event"] = "task.status_changed"
			if p, ok := e["payload"].(map[string]any); ok {
				delete(p, "previous_status")
			}
			used.Add(1)
		}
	}
	lists := rewriting(func(_ *http.Request, v any) { eachObject(v, "event", event) })(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/stream") {
			lists.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&frameRewriter{ResponseWriter: w, specific: specific, event: event}, r)
	})
}

// frameRewriter rewrites SSE lines as the reference Harness writes them
// (whole frames per Write): event: lines of specific task state kinds, and
// data: lines holding an Event.
type frameRewriter struct {
	http.ResponseWriter
	specific map[string]bool
	event    func(map[string]any)
}

func (fr *frameRewriter) Write(b []byte) (int, error) {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if k, ok := strings.CutPrefix(l, "event: "); ok && fr.specific[k] {
			lines[i] = "event: task.status_changed"
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			dec := json.NewDecoder(strings.NewReader(d))
			dec.UseNumber()
			var m map[string]any
			if dec.Decode(&m) == nil && m["object"] == "event" {
				fr.event(m)
				if nb, err := json.Marshal(m); err == nil {
					lines[i] = "data: " + string(nb)
				}
			}
		}
	}
	if _, err := fr.ResponseWriter.Write([]byte(strings.Join(lines, "\n"))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (fr *frameRewriter) Flush() { fr.ResponseWriter.(http.Flusher).Flush() }
