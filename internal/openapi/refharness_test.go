package openapi_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/refharness"
)

// This file is an external test (package openapi_test): the reference
// Harness judges its own requests with this package, so an in-package test
// importing it would be an import cycle.

type (
	Doc       = openapi.Doc
	Violation = openapi.Violation
)

const KindResponse = openapi.KindResponse

func mustDoc(t testing.TB) *Doc {
	t.Helper()
	d, err := openapi.Default()
	if err != nil {
		t.Fatalf("Default: %v", err)
	}
	return d
}

func errs(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.Error() + "\n")
	}
	return b.String()
}

const refKey = "refharness-key-0123456789"

// trafficOf runs a fixed script of exchanges against the reference Harness
// (with fault f, if any) through a client observed by the oracle, and
// returns what the oracle found. The script touches every Core read and
// write, the receipt routes, a few Extended reads, and the usual negative
// probes (marked as probes).
func trafficOf(t *testing.T, d *Doc, f refharness.Fault) (int, []Violation) {
	t.Helper()
	opts := refharness.Options{APIKeys: map[string]string{refKey: "actor_oracle"}}
	if f != "" {
		opts.Faults = refharness.Faults{f: true}
	}
	srv, err := refharness.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)

	var mu sync.Mutex
	var found []Violation
	n := 0
	c, err := client.New(client.Options{BaseURL: hs.URL, APIKey: refKey, ProtocolVersion: "agents-protocol-2026-04-25", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	c = c.WithObserver(func(tr client.Traffic) {
		vs := d.ValidateTraffic(tr)
		mu.Lock()
		defer mu.Unlock()
		n++
		found = append(found, vs...)
	})
	ctx := context.Background()
	do := func(r client.Request) map[string]any {
		resp, err := c.Do(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(resp.Body, &m)
		return m
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	first := func(m map[string]any) map[string]any {
		data, _ := m["data"].([]any)
		if len(data) == 0 {
			return map[string]any{}
		}
		o, _ := data[0].(map[string]any)
		return o
	}
	parts := []any{map[string]any{"type": "text", "text": "hi", "visibility": "public"}}

	do(client.Request{Path: "/v1", NoAuth: true, NoVersion: true})
	do(client.Request{Path: "/v1/agent-card"})
	ws := str(do(client.Request{Method: "POST", Path: "/v1/workspaces", Body: map[string]any{"name": "w", "root": "/tmp/w"}}), "id")
	sid := str(do(client.Request{Method: "POST", Path: "/v1/sessions", IdempotencyKey: "s1", Body: map[string]any{"workspace_id": ws}}), "id")
	do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid) + "/messages", Body: map[string]any{"message": map[string]any{"role": "user", "parts": parts}}})
	tid := str(do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid) + "/tasks", IdempotencyKey: "t1", Body: map[string]any{
		"input": map[string]any{"role": "user", "parts": parts},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{
			map[string]any{"op": "emit", "count": 2}, map[string]any{"op": "artifact", "content": "hello"}, map[string]any{"op": "complete"}}}}}}), "id")
	do(client.Request{Method: "POST", Path: "/v1/tasks", Body: map[string]any{"session_id": sid, "input": map[string]any{"goal": "structured"}}})
	task := "/v1/tasks/" + client.Seg(tid)
	for deadline := time.Now().Add(10 * time.Second); ; {
		st := str(do(client.Request{Path: task}), "status")
		if st == "COMPLETED" || st == "completed" || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	do(client.Request{Path: "/v1/tasks", Query: map[string][]string{"session_id": {sid}, "limit": {"10"}}})
	do(client.Request{Path: "/v1/sessions/" + client.Seg(sid) + "/tasks"})
	do(client.Request{Path: "/v1/sessions/" + client.Seg(sid) + "/messages"})
	evs := do(client.Request{Path: task + "/events"})
	do(client.Request{Path: "/v1/sessions/" + client.Seg(sid) + "/events", Query: map[string][]string{"limit": {"2"}}})
	do(client.Request{Path: "/v1/events"})
	if id := str(first(evs), "id"); id != "" {
		do(client.Request{Path: "/v1/events/" + client.Seg(id)})
	}
	if id := str(first(do(client.Request{Path: "/v1/artifacts", Query: map[string][]string{"task_id": {tid}}})), "id"); id != "" {
		do(client.Request{Path: "/v1/artifacts/" + client.Seg(id)})
		do(client.Request{Path: "/v1/artifacts/" + client.Seg(id) + "/content"})
	}
	if id := str(first(do(client.Request{Path: "/v1/outcomes", Query: map[string][]string{"task_id": {tid}}})), "id"); id != "" {
		do(client.Request{Path: "/v1/outcomes/" + client.Seg(id)})
	}
	do(client.Request{Path: "/v1/sessions/" + client.Seg(sid)})
	do(client.Request{Path: "/v1/sessions"})
	do(client.Request{Path: "/v1/workspaces/" + client.Seg(ws)})
	for _, p := range []string{"/v1/personas", "/v1/skills", "/v1/connectors", "/v1/quotas", "/v1/memories"} {
		do(client.Request{Path: p})
	}
	if rid := str(first(do(client.Request{Path: task + "/receipts"})), "receipt_id"); rid != "" {
		do(client.Request{Path: "/v1/receipts/" + client.Seg(rid)})
		do(client.Request{Method: "POST", Path: "/v1/receipts/" + client.Seg(rid) + "/verify"})
	}
	do(client.Request{Path: "/v1/receipt-keys"})
	do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid) + "/fork"})
	do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid) + "/truncate", Body: map[string]any{"keep_first": 1}})
	do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid) + "/close"})
	// The later revision's local-server routes and permission requests.
	for _, p := range []string{"/health", "/version", "/openapi.json"} {
		do(client.Request{Path: p, NoAuth: true, NoVersion: true})
	}
	for _, p := range []string{"/v1/runtime", "/v1/capabilities", "/v1/tools", "/v1/tools/conform.noop"} {
		do(client.Request{Path: p})
	}
	files := "/v1/workspaces/" + client.Seg(ws) + "/files"
	do(client.Request{Method: "PUT", Path: files, Query: map[string][]string{"path": {"docs/a.txt"}}, Body: map[string]any{"content": "hello"}})
	do(client.Request{Path: files, Query: map[string][]string{"path": {"docs/a.txt"}}})
	do(client.Request{Path: files})
	sid2 := str(do(client.Request{Method: "POST", Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}}), "id")
	waiting := str(do(client.Request{Method: "POST", Path: "/v1/sessions/" + client.Seg(sid2) + "/tasks", Body: map[string]any{
		"input":    map[string]any{"role": "user", "parts": parts},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{map[string]any{"op": "auth_required"}}}}}}), "id")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		// Any case: the lowercase-status fault spells it auth_required.
		if strings.EqualFold(str(do(client.Request{Path: "/v1/tasks/" + client.Seg(waiting)}), "status"), "AUTH_REQUIRED") {
			break
		}
	}
	if id := str(first(do(client.Request{Path: "/v1/tasks/" + client.Seg(waiting) + "/permission-requests"})), "id"); id != "" {
		do(client.Request{Path: "/v1/permission-requests", Query: map[string][]string{"task_id": {waiting}}})
		do(client.Request{Method: "POST", Path: "/v1/permission-requests/" + client.Seg(id) + "/respond", IdempotencyKey: "r1", Body: map[string]any{"approved": true}})
	}
	// Probes: malformed on purpose; only the answers are judged.
	do(client.Request{Method: "POST", Path: task + "/cancel", Probe: "cancel of a terminal task"})
	do(client.Request{Path: "/v1/tasks/task_missing", Probe: "unknown id"})
	do(client.Request{Path: "/v1/tasks", NoAuth: true, Probe: "no credential"})
	do(client.Request{Path: "/v1/tasks", Version: "agents-protocol-1999-01-01", Probe: "unsupported version"})
	do(client.Request{Path: "/v1/no-such-route", Probe: "unknown route"})
	do(client.Request{Method: "POST", Path: "/v1/tasks", RawBody: []byte("{"), Probe: "malformed JSON"})
	do(client.Request{Path: task + "/events", Query: map[string][]string{"after_event_id": {"evt_unknown"}}, Probe: "unknown cursor"})
	if s, err := c.Stream(ctx, client.Request{Path: task + "/stream"}); err == nil {
		s.Close()
	}
	mu.Lock()
	defer mu.Unlock()
	return n, found
}

// The reference Harness is conformant, so the oracle finds nothing in its
// traffic: no false positives on real answers.
func TestReferenceHarnessTrafficIsClean(t *testing.T) {
	n, vs := trafficOf(t, mustDoc(t), "")
	if n < 40 {
		t.Errorf("only %d exchanges observed", n)
	}
	if len(vs) > 0 {
		t.Errorf("%d violations in the reference Harness's traffic:\n%s", len(vs), errs(vs))
	}
}

// The reference Harness's shape faults are caught, under the requirement
// each one breaks.
func TestReferenceHarnessFaultsAreCaught(t *testing.T) {
	d := mustDoc(t)
	for _, tc := range []struct {
		fault refharness.Fault
		want  []string
	}{
		{refharness.FaultWrongObjectField, []string{"CORE-READ-003"}},
		{refharness.FaultMissingRequiredField, []string{"CORE-READ-004"}},
		{refharness.FaultLowercaseStatus, []string{"CORE-READ-004"}},
		{refharness.FaultSessionNoTranscript, []string{"CORE-READ-005"}},
		{refharness.FaultSessionNoMetadata, []string{"CORE-READ-001"}},
		{refharness.FaultPartNoVisibility, []string{"CORE-READ-006"}},
		{refharness.FaultArtifactSHAPrefixed, []string{"CORE-READ-007"}},
		{refharness.FaultOutcomeUsesTaskStatus, []string{"CORE-OUT-001"}},
		{refharness.FaultErrorWithoutEnvelope, []string{"CORE-ERR-002"}},
		{refharness.FaultWrongCreateStatus, []string{"CORE-READ-010", "CORE-READ-011", "CORE-TASK-001", "CORE-TASK-002"}},
		{refharness.FaultReceiptUnknownField, []string{"RCPT-SHAPE-001"}},
		{refharness.FaultSSEWrongContentType, []string{"CORE-SSE-001"}},
		{refharness.FaultLocalRuntimeMisshapen, []string{"EXT-LOCAL-001"}},
	} {
		t.Run(string(tc.fault), func(t *testing.T) {
			_, vs := trafficOf(t, d, tc.fault)
			ids := map[string]bool{}
			for _, v := range vs {
				ids[v.Req] = true
			}
			var got []string
			for id := range ids {
				got = append(got, id)
			}
			sort.Strings(got)
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("fault %s: found %v, want %s among them:\n%s", tc.fault, got, w, errs(vs))
				}
			}
			for _, v := range vs {
				if v.Kind != KindResponse {
					t.Errorf("fault %s: a %s violation (the suite's script is wrong): %v", tc.fault, v.Kind, v.Error())
				}
			}
		})
	}
}
