package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// Targets that serve a level without advertising it, or advertise replay
// without receipts (docs/interpretations.md#replay-only-deltas). The
// reference Harness has no switch to turn a level off while serving it,
// so it runs behind a rewriting front (behindFront): its discovery answer
// says the level's capability is false, and optionally its receipts are
// hidden too.

// receiptPaths are the receipt routes a Replay-only server does not have.
var receiptPaths = regexp.MustCompile(`^/v1/(receipts(/.*)?|tasks/[^/]+/receipts/?)$`)

// replayDeltaIDs are the requirements judged on a replay's receipt whether
// or not the target claims the Receipts level.
var replayDeltaIDs = []string{"RPLY-DELTA-001", "RPLY-DELTA-002", "RPLY-DELTA-003", "RPLY-DELTA-004", "RPLY-DELTA-005", "RPLY-DELTA-006"}

// front is what a rewriting front of the reference Harness saw during a run.
type front struct {
	rewrote atomic.Bool  // a discovery answer was rewritten
	hidden  atomic.Int64 // receipt routes answered 404 (hide only)
}

// behindFront serves the reference Harness with faults behind a front
// whose discovery answer sets capabilities.<unclaimed> to false (the
// Harness serves the level all the same); with hide its receipt routes
// answer 404 and no answer names a receipt_id. It returns the front's URL.
func behindFront(t *testing.T, faults refharness.Faults, unclaimed string, hide bool) (string, *front) {
	t.Helper()
	h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}, Faults: faults})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	f := &front{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hide && receiptPaths.MatchString(r.URL.Path) {
			f.hidden.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"resource_not_found","message":"no such route","type":"not_found_error"}}`))
			return
		}
		discovery := r.Method == http.MethodGet && strings.TrimSuffix(r.URL.Path, "/") == "/v1"
		if !discovery && !hide {
			h.ServeHTTP(w, r) // streams pass through unbuffered
			return
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				if hide {
					dropReceiptIDs(v)
				}
				if d, ok := v.(map[string]any); ok && discovery && rec.Code == http.StatusOK {
					if caps, ok := d["capabilities"].(map[string]any); ok && caps[unclaimed] == true {
						caps[unclaimed] = false
						f.rewrote.Store(true)
					}
				}
				if b, err := json.Marshal(v); err == nil {
					body = b
				}
			}
		}
		for k, vs := range rec.Header() {
			if k != "Content-Length" {
				w.Header()[k] = vs
			}
		}
		w.WriteHeader(rec.Code)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, f
}

// runBehindFront runs levels against url and checks that the front
// rewrote discovery.
func runBehindFront(t *testing.T, url string, f *front, levels string) *reports.Report {
	t.Helper()
	code, console, r, _ := runConform(t, "run", "--target", url, "--levels", levels)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if !f.rewrote.Load() {
		t.Fatal("the discovery answer was never rewritten: the run did not meet the target it was meant to")
	}
	return r
}

// replayOnly runs the Replay level against the reference Harness with
// faults, its discovery answer claiming no receipts; with hide its receipt
// routes answer 404 and no answer names a receipt_id.
func replayOnly(t *testing.T, faults refharness.Faults, hide bool) (*reports.Report, *front) {
	t.Helper()
	url, f := behindFront(t, faults, "receipts", hide)
	r := runBehindFront(t, url, f, "replay")
	if passed := verdicts(r, reports.Pass); !slices.Contains(passed, "RPLY-API-001") {
		t.Errorf("RPLY-API-001 did not pass (passed: %v): the Replay level did not run", passed)
	}
	if warned := verdicts(r, reports.Warn); !slices.Contains(warned, "RPLY-LEVEL-001") {
		t.Errorf("RPLY-LEVEL-001 not reported as a warning (warnings: %v)", warned)
	}
	return r, f
}

// A Replay-only server (no Receipts level: discovery says receipts false,
// the receipt routes answer 404, no answer names a receipt_id) still owes
// its receipt deltas: they cannot be read, so RPLY-DELTA-001..006 are
// unverified with a remedy, never not applicable and never passed; nothing
// fails, and RPLY-LEVEL-001 warns.
func TestReplayOnlyDeltasUnverified(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the Replay level once")
	}
	t.Parallel()
	r, f := replayOnly(t, nil, true)
	if f.hidden.Load() == 0 {
		t.Fatal("no receipt route was asked for: the run never looked for the replay task's receipt")
	}
	got := byID(r)
	for _, id := range replayDeltaIDs {
		q := got[id]
		if q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, "whether or not the target claims the Receipts level") {
			t.Errorf("a Replay-only server: %s is %s (remedy %q), want unverified with the remedy to serve the replay's receipt", id, q.Verdict, q.Remedy)
		}
	}
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("a Replay-only server breaks no MUST here, but the suite reports %v: %s", bad, messages(r, bad))
	}
}

// RPLY-LEVEL-001 (SHOULD): a target that advertises replay but not
// receipts, and serves them all the same, earns that warning and nothing
// else; its claim does not choose what is judged: the receipts it serves
// are judged by RPLY-DELTA-001..006 (all pass on the clean Harness), and a
// receipt leaking the source run's reasoning fails RPLY-DELTA-006.
func TestReplayWithoutReceiptsWarns(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the Replay level twice")
	}
	t.Parallel()
	t.Run("clean", func(t *testing.T) {
		t.Parallel()
		r, _ := replayOnly(t, nil, false)
		got := byID(r)
		for _, id := range replayDeltaIDs {
			if q := got[id]; q.Verdict != reports.Pass {
				t.Errorf("replay without receipts: %s is %s (%s), want passed: the receipts served are judged whatever discovery claims", id, q.Verdict, q.Message)
			}
		}
		if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
			t.Errorf("replay without receipts breaks only a SHOULD, but the suite reports %v: %s", bad, messages(r, bad))
		}
	})
	t.Run("leaks-reasoning", func(t *testing.T) {
		t.Parallel()
		r, _ := replayOnly(t, refharness.Faults{refharness.FaultReplayReceiptLeaksReasoning: true}, false)
		if q := byID(r)["RPLY-DELTA-006"]; q.Verdict != reports.Fail {
			t.Errorf("a receipt leaking the source run's reasoning on a target claiming no receipts: RPLY-DELTA-006 is %s (%s), want failed", q.Verdict, q.Message)
		}
	})
}

// RCPT-DELTA-001 is judged on what the target serves, not on what it
// advertises: a Receipts server that serves replay without claiming it
// (capabilities.replay false) issues replay receipts, and they are read;
// one whose hash leaves the deltas out fails. A target that neither
// advertises nor serves replay (POST /v1/tasks/{id}/replay answers 501)
// leaves it not applicable, never unverified.
func TestUnadvertisedReplayReceiptJudged(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the Receipts level twice")
	}
	t.Parallel()
	for _, tc := range []struct {
		name   string
		faults refharness.Faults
		want   reports.Verdict
	}{{"clean", nil, reports.Pass}, {"deltas-unhashed", refharness.Faults{refharness.FaultReplayDeltasUnhashed: true}, reports.Fail}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url, f := behindFront(t, tc.faults, "replay", false)
			r := runBehindFront(t, url, f, "receipts")
			if q := byID(r)["RCPT-DELTA-001"]; q.Verdict != tc.want {
				t.Errorf("replay served but not advertised: RCPT-DELTA-001 is %s (%s), want %s", q.Verdict, q.Message, tc.want)
			}
			if tc.want == reports.Pass {
				if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
					t.Errorf("the clean Harness behind the front: %v: %s", bad, messages(r, bad))
				}
			}
		})
	}
	t.Run("not-served", func(t *testing.T) {
		t.Parallel()
		h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}, Variants: refharness.Variants{refharness.VariantNoReplay: true}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { h.Close() })
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--levels", "receipts")
		if r == nil {
			t.Fatalf("no report; exit %d:\n%s", code, console)
		}
		if q := byID(r)["RCPT-DELTA-001"]; q.Verdict != reports.Skip || !strings.Contains(q.Message, "does not offer it") {
			t.Errorf("replay neither advertised nor served: RCPT-DELTA-001 is %s (%s), want not applicable on the evidence", q.Verdict, q.Message)
		}
	})
}

// dropReceiptIDs removes every receipt_id member from a decoded answer.
func dropReceiptIDs(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "receipt_id")
		for _, e := range x {
			dropReceiptIDs(e)
		}
	case []any:
		for _, e := range x {
			dropReceiptIDs(e)
		}
	}
}
