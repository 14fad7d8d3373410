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

// receiptPaths are the receipt routes a Replay-only server does not have.
var receiptPaths = regexp.MustCompile(`^/v1/(receipts(/.*)?|tasks/[^/]+/receipts/?)$`)

// A Replay-only server (no Receipts level: discovery says receipts false,
// the receipt routes answer 404, no answer names a receipt_id) still owes
// its receipt deltas (docs/interpretations.md#replay-only-deltas): the
// deltas cannot be read, so RPLY-DELTA-001..005 are unverified with a
// remedy, never not applicable and never passed; nothing fails, and
// RPLY-LEVEL-001 warns.
func TestReplayOnlyDeltasUnverified(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the Replay level once")
	}
	t.Parallel()
	h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var hidden atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		path := strings.TrimSuffix(r.URL.Path, "/")
		if receiptPaths.MatchString(r.URL.Path) {
			hidden.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"error":{"code":"resource_not_found","message":"no such route","type":"not_found_error"}}`))
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
				dropReceiptIDs(v)
				if d, ok := v.(map[string]any); ok && path == "/v1" {
					if caps, ok := d["capabilities"].(map[string]any); ok {
						caps["receipts"] = false
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
	defer srv.Close()
	code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--levels", "replay")
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if hidden.Load() == 0 {
		t.Fatal("no receipt route was asked for: the run never looked for the replay task's receipt")
	}
	got := map[string]reports.ReqResult{}
	for _, q := range r.Requirements {
		got[q.ID] = q
	}
	for _, id := range []string{"RPLY-DELTA-001", "RPLY-DELTA-002", "RPLY-DELTA-003", "RPLY-DELTA-004", "RPLY-DELTA-005"} {
		q := got[id]
		if q.Verdict != reports.Unverified || !strings.Contains(q.Remedy, "Receipt delta") {
			t.Errorf("a Replay-only server: %s is %s (remedy %q), want unverified with the remedy to record its deltas", id, q.Verdict, q.Remedy)
		}
	}
	if passed := verdicts(r, reports.Pass); !slices.Contains(passed, "RPLY-API-001") {
		t.Errorf("RPLY-API-001 did not pass (passed: %v): the Replay level did not run", passed)
	}
	if warned := verdicts(r, reports.Warn); !slices.Contains(warned, "RPLY-LEVEL-001") {
		t.Errorf("RPLY-LEVEL-001 not reported as a warning (warnings: %v)", warned)
	}
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("a Replay-only server breaks no MUST here, but the suite reports %v: %s", bad, messages(r, bad))
	}
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
