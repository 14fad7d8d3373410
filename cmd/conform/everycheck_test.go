package main

// Every check runs (issue 14): a spec that finds one fault goes on with
// its independent checks, what a failure truly blocks is named under it,
// and what the suite could not observe — a target that hangs, a set-up
// call refused — is an error or unverified, never a failure.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// Two independent faults whose checks share a spec (the task read spec
// reads the outcome list and then events by id) are both reported, nothing
// else fails, and the spec's other requirements, which its checks did
// look at, are not left "not checked".
func TestEveryCheckRunsTwoFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Core suite")
	}
	t.Parallel()
	// Through the proof pool (the unit tier's one run on it, so that its
	// workers run under the race detector too).
	want := []string{"CORE-READ-008", "CORE-READ-014"}
	code, r, _ := proof(t, "two faults at once", targetSpec{Faults: []refharness.Fault{refharness.FaultOutcomeNotListed, refharness.FaultEventByIDDiffers}}, "core")
	if failed := verdicts(r, reports.Fail); !slices.Equal(failed, want) {
		t.Errorf("failed = %v, want %v: %s", failed, want, messages(r, append(failed, want...)))
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, q := range r.Requirements {
		if strings.HasPrefix(q.Message, "not checked: blocked") || strings.HasPrefix(q.Message, "not reached") {
			t.Errorf("%s = %s (%s): two independent checks failed, nothing was blocked", q.ID, q.Verdict, q.Message)
		}
	}
	// The requirements the failing spec also names passed in it.
	for _, id := range []string{"CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-READ-004", "CORE-ID-001", "CORE-ID-002"} {
		if q := reqResult(r, id); q.Verdict != reports.Pass {
			t.Errorf("%s = %s (%s), want pass: its checks ran in the spec that failed on %v, and held", id, q.Verdict, q.Message, want)
		}
	}
}

// A read the rest of a spec's checks depend on fails: its failure lists
// what it blocks, and each blocked requirement says which failure blocked
// it; the spec's independent check (the message list) still runs.
func TestBlockedRequirementsNamed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the Core suite")
	}
	t.Parallel()
	url := harness(t, refharness.Options{Faults: refharness.Faults{refharness.FaultMessageNotReadable: true}})
	code, r := runProof(t, "message not readable", url, "core")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if failed := verdicts(r, reports.Fail); !slices.Equal(failed, []string{"CORE-READ-011"}) {
		t.Fatalf("failed = %v, want [CORE-READ-011]: %s", failed, messages(r, failed))
	}
	var blocks string
	for _, ev := range reqResult(r, "CORE-READ-011").Evidence {
		if _, b, ok := strings.Cut(ev.Message, "; blocks: "); ok {
			blocks = b
		}
	}
	if !strings.Contains(blocks, "CORE-ID-002") || !strings.Contains(blocks, "CORE-READ-006") {
		t.Errorf("CORE-READ-011's failure lists blocks %q, want the message checks it kept from running (CORE-READ-006, CORE-ID-002): %+v", blocks, reqResult(r, "CORE-READ-011").Evidence)
	}
	q := reqResult(r, "CORE-ID-002")
	if q.Verdict != reports.Unverified || !strings.HasPrefix(q.Message, "not checked: blocked by the failure of CORE-READ-011 (GET ") || !strings.Contains(q.Message, "/v1/messages/") {
		t.Errorf("CORE-ID-002 = %s (%s), want unverified, blocked by the failure of CORE-READ-011 (…)", q.Verdict, q.Message)
	}
}

// discoveryOf reads the reference Harness's discovery document, which a
// fake target serves as its own.
func discoveryOf(t *testing.T) []byte {
	t.Helper()
	base := harness(t, refharness.Options{})
	resp, err := http.Get(base + "/v1")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1 of the reference Harness: %d %v", resp.StatusCode, err)
	}
	return b
}

// fakeTarget answers discovery (and, with keyCheck, the preflight's key
// check GET /v1/tasks?limit=1 with an empty list, so the specs run), and
// hands every other request to rest.
func fakeTarget(t *testing.T, keyCheck bool, rest func(w http.ResponseWriter, r *http.Request, release <-chan struct{})) string {
	t.Helper()
	disc := discoveryOf(t)
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1":
			w.Header().Set("Content-Type", "application/json")
			w.Write(disc)
		case keyCheck && r.Method == http.MethodGet && r.URL.Path == "/v1/tasks" && r.URL.Query().Get("limit") == "1" && r.URL.Query().Get("cursor") == "":
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{}, "has_more": false, "next_cursor": nil})
		default:
			rest(w, r, release)
		}
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// hang answers nothing until the client gives up (or the test ends).
func hang(w http.ResponseWriter, r *http.Request, release <-chan struct{}) {
	select {
	case <-r.Context().Done():
	case <-release:
	}
}

// assertNoFailure checks that nothing, at any level, is a failure.
func assertNoFailure(t *testing.T, name string, r *reports.Report) {
	t.Helper()
	if failed := verdicts(r, reports.Fail); len(failed) > 0 {
		t.Errorf("%s: a target the suite could not observe is blamed: %v%s", name, failed, messages(r, failed))
	}
	for _, l := range r.Levels {
		if l.Status == reports.Nonconformant {
			t.Errorf("%s: level %s is nonconformant (%s)", name, l.Level, l.Why)
		}
	}
	for _, s := range r.Specs {
		if s.Verdict == reports.Fail {
			t.Errorf("%s: spec %q failed: %s", name, s.Name, s.Message)
		}
	}
}

// A target that answers discovery and then hangs: every spec that could not
// speak to it is an error, Core and Receipts alike; nothing fails.
func TestHangingTargetIsNoFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	t.Parallel()
	for _, tc := range []struct {
		name     string
		keyCheck bool
	}{{"hangs after discovery", false}, {"hangs after the preflight", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := fakeTarget(t, tc.keyCheck, hang)
			code, console, r, _ := runConform(t, "run", "--target", url, "--levels", "core,receipts", "--request-timeout", "300ms", "--stream-timeout", "500ms", "--task-timeout", "2s")
			if r == nil {
				t.Fatalf("exit %d, no report:\n%s", code, console)
			}
			if code != 2 {
				t.Errorf("exit %d, want 2 (the run could not decide)", code)
			}
			assertNoFailure(t, tc.name, r)
			if tc.keyCheck {
				// The specs ran against the hung target: their verdicts are
				// errors, the Receipts ones included.
				if len(r.Specs) == 0 {
					t.Fatalf("no spec ran:\n%s", console)
				}
				errs := 0
				for _, q := range r.Requirements {
					if strings.HasPrefix(q.ID, "RCPT-") && q.Verdict == reports.Error {
						errs++
					}
				}
				if errs == 0 {
					t.Errorf("no Receipts requirement is an error: %s", messages(r, verdicts(r, reports.Unverified)))
				}
			}
		})
	}
}

// A target that answers discovery and the key check, then 401 to
// everything: Core may fail (its requirements own those answers), but the
// Receipts set-up could not run, which is no receipt's failure.
func TestUnauthorizedSetupBlamesNoReceipt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	t.Parallel()
	for _, tc := range []struct {
		name     string
		keyCheck bool
	}{{"401 after discovery", false}, {"401 after the preflight", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := fakeTarget(t, tc.keyCheck, func(w http.ResponseWriter, r *http.Request, _ <-chan struct{}) {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "unauthenticated", "type": "authentication_error", "message": "no"}})
			})
			code, console, r, _ := runConform(t, "run", "--target", url, "--levels", "core,receipts", "--request-timeout", "2s", "--stream-timeout", "500ms", "--task-timeout", "2s")
			if r == nil {
				t.Fatalf("exit %d, no report:\n%s", code, console)
			}
			var blamed []string
			for _, id := range verdicts(r, reports.Fail) {
				if strings.HasPrefix(id, "RCPT-") {
					blamed = append(blamed, id)
				}
			}
			if len(blamed) > 0 {
				t.Errorf("Receipts requirements fail for a set-up refused with 401: %v%s", blamed, messages(r, blamed))
			}
			for _, s := range r.Specs {
				receipts := slices.ContainsFunc(s.Requirements, func(id string) bool { return strings.HasPrefix(id, "RCPT-") })
				if receipts && s.Verdict == reports.Fail {
					t.Errorf("spec %q failed: %s", s.Name, s.Message)
				}
			}
		})
	}
}

// A target whose task reads answer 401 once the task has been read
// terminal: the Receipts run is made (its polls see each task end), and
// the receipt specs' own reads of the tasks — a set-up step for following
// receipt_id — are refused. That is a Core finding, not a receipt's: no
// RCPT requirement fails.
func TestUnauthorizedTaskReadsBlameNoReceipt(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the suite")
	}
	t.Parallel()
	base := harness(t, refharness.Options{})
	taskPath := regexp.MustCompile(`^/prefix/v1/tasks/[^/]+$`)
	var mu sync.Mutex
	ended := map[string]bool{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !taskPath.MatchString(r.URL.Path) {
			proxy(w, r, strings.TrimSuffix(base, "/prefix"))
			return
		}
		mu.Lock()
		refused := ended[r.URL.Path]
		mu.Unlock()
		if refused {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "unauthenticated", "type": "authentication_error", "message": "no"}})
			return
		}
		rec := httptest.NewRecorder()
		proxy(rec, r, strings.TrimSuffix(base, "/prefix"))
		var task struct{ Status string }
		if json.Unmarshal(rec.Body.Bytes(), &task) == nil && (task.Status == "COMPLETED" || task.Status == "FAILED" || task.Status == "CANCELED") {
			mu.Lock()
			ended[r.URL.Path] = true
			mu.Unlock()
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	code, console, r, _ := runConform(t, "run", "--target", srv.URL+"/prefix", "--levels", "core,receipts", "--stream-timeout", faultStreamTimeout)
	if r == nil {
		t.Fatalf("exit %d, no report:\n%s", code, console)
	}
	var blamed []string
	for _, id := range verdicts(r, reports.Fail) {
		if strings.HasPrefix(id, "RCPT-") {
			blamed = append(blamed, id)
		}
	}
	if len(blamed) > 0 {
		t.Errorf("Receipts requirements fail because a task read was refused with 401: %v%s", blamed, messages(r, blamed))
	}
	// The refused reads are noted where they stopped a receipt check.
	if q := reqResult(r, "RCPT-REF-001"); q.Verdict != reports.Unverified || !strings.Contains(q.Message, "could not be read") {
		t.Errorf("RCPT-REF-001 = %s (%s), want unverified: the task naming its receipt could not be read", q.Verdict, q.Message)
	}
}
