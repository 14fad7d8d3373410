package refharness

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/receipt"
)

// canary is the secret the tests hand to use_secret steps.
const canary = "conform-canary-7f3e9a2b5c"

// receiptsOf returns the raw receipts listed for a task.
func (h *harness) receiptsOf(task string) []json.RawMessage {
	h.t.Helper()
	r := h.must(200, h.do("GET", "/v1/tasks/"+task+"/receipts", nil), "task receipts")
	var l struct {
		Object string            `json:"object"`
		Data   []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(r.Raw, &l); err != nil || l.Object != "list" {
		h.t.Fatalf("GET /v1/tasks/%s/receipts: not a list envelope (%v): %s", task, err, r.Raw)
	}
	return l.Data
}

// keys fetches the key directory.
func (h *harness) keys() *receipt.KeySet {
	h.t.Helper()
	r := h.must(200, h.do("GET", KeyDirectoryPath, nil), "key directory")
	ks, err := receipt.ParseKeySet(r.Raw)
	if err != nil {
		h.t.Fatalf("key directory: %v", err)
	}
	return ks
}

func field(raw json.RawMessage, path ...string) any {
	var v any
	json.Unmarshal(raw, &v)
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// receiptEvents returns the session's events of kind about task id's receipt.
func (h *harness) receiptEvents(sess, kind, task string) []map[string]any {
	h.t.Helper()
	var out []map[string]any
	for _, e := range h.must(200, h.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil), "session events").list() {
		p, _ := e["payload"].(map[string]any)
		sub, _ := p["subject"].(map[string]any)
		if e["event"] == kind && sub["id"] == task {
			out = append(out, e)
		}
	}
	return out
}

// runTask submits steps and waits for the wanted terminal status.
func (h *harness) runTask(sess string, steps []map[string]any, want string) string {
	h.t.Helper()
	id := h.submit(sess, steps).str("id")
	h.waitStatus(id, want)
	return id
}

func TestReceiptForEveryTerminalTask(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	done := h.runTask(sess, []map[string]any{step("emit", "count", 2, "text", "four words of text"), step("artifact", "content", "bytes!", "name", "out.txt")}, StatusCompleted)
	failed := h.runTask(sess, []map[string]any{step("fail", "code", "boom", "message", "asked to fail")}, StatusFailed)
	slow := h.submit(sess, []map[string]any{step("work", "ms", 60000)}).str("id")
	h.waitStatus(slow, StatusWorking)
	h.must(200, h.do("POST", "/v1/tasks/"+slow+"/cancel", nil), "cancel")
	secret := h.runTask(sess, []map[string]any{step("use_secret", "secret", canary)}, StatusCompleted)

	ks := h.keys()
	want := map[string]string{done: "SUCCEEDED", failed: "FAILED", slow: "CANCELED", secret: "SUCCEEDED"}
	var chain [][]byte
	for _, id := range []string{done, failed, slow, secret} {
		rs := h.receiptsOf(id)
		if len(rs) != 1 {
			t.Fatalf("task %s has %d receipts, want 1", id, len(rs))
		}
		raw := rs[0]
		chain = append(chain, raw)
		if res := receipt.Verify(raw, receipt.Options{Keys: ks}); !res.Valid() {
			t.Errorf("task %s: %v", id, res.Err())
		}
		if got := field(raw, "lifecycle", "final_state"); got != want[id] {
			t.Errorf("task %s: final_state %v, want %s", id, got, want[id])
		}
		if got := field(raw, "subject", "id"); got != id {
			t.Errorf("task %s: subject.id %v", id, got)
		}
		rid := field(raw, "receipt_id").(string)
		task := h.do("GET", "/v1/tasks/"+id, nil)
		if task.str("receipt_id") != rid {
			t.Errorf("task %s: receipt_id %q, want %q", id, task.str("receipt_id"), rid)
		}
		if o := h.do("GET", "/v1/outcomes/"+task.str("outcome_id"), nil); o.str("receipt_id") != rid {
			t.Errorf("outcome of %s: receipt_id %q, want %q", id, o.str("receipt_id"), rid)
		}
		if got := h.must(200, h.do("GET", "/v1/receipts/"+rid, nil), "receipt").Raw; strings.TrimSpace(string(got)) != string(raw) {
			t.Errorf("GET /v1/receipts/%s differs from the listed receipt", rid)
		}
		if evs := h.receiptEvents(sess, "receipt.issued", id); len(evs) != 1 || evs[0]["receipt_id"] != rid {
			t.Errorf("task %s: receipt.issued events %v, want one naming %s", id, evs, rid)
		}
		for _, e := range h.must(200, h.do("GET", "/v1/sessions/"+sess+"/events?limit=200", nil), "session events").list() {
			if b, _ := json.Marshal(e); strings.Contains(string(b), canary) {
				t.Errorf("event %s carries the canary secret", e["event"])
			}
		}
		if strings.Contains(string(raw), canary) {
			t.Errorf("receipt of %s carries the canary secret", id)
		}
	}
	for i, res := range receipt.VerifyChain(chain, receipt.Options{Keys: ks, Previous: "null"}) {
		if !res.Valid() {
			t.Errorf("chain link %d: %v", i, res.Err())
		}
	}

	// What the completed task did: two messages of four words, one artifact.
	raw := chain[0]
	if got := field(raw, "autonomy_budget", "consumed", "output_tokens"); got != 8.0 {
		t.Errorf("output_tokens = %v, want 8", got)
	}
	arts := field(raw, "final_artifacts").([]any)
	if len(arts) != 1 || arts[0].(map[string]any)["sha256"] != "sha256:"+sha256hex([]byte("bytes!")) {
		t.Errorf("final_artifacts = %v", arts)
	}
	a := h.do("GET", "/v1/artifacts/"+arts[0].(map[string]any)["artifact_id"].(string), nil)
	if a.str("receipt_id") != field(raw, "receipt_id") {
		t.Errorf("artifact receipt_id = %q", a.str("receipt_id"))
	}
	if got := field(raw, "cost", "total"); got != 0.000017 { // 1 input token + 8 output tokens at 2
		t.Errorf("cost.total = %v, want 0.000017", got)
	}
	// The secret's use is redacted with its proof hash, structure kept.
	red := field(chain[3], "redactions").([]any)[0].(map[string]any)
	if red["proof_hash"] != "sha256:"+sha256hex([]byte(canary)) || red["field"] != "/side_effects/tool_calls/0/metadata/api_key" {
		t.Errorf("redaction = %v", red)
	}
	if got := field(chain[3], "side_effects", "tool_calls").([]any)[0].(map[string]any)["metadata"]; fmt.Sprint(got) != "map[api_key:[REDACTED]]" {
		t.Errorf("tool call metadata = %v", got)
	}
}

func TestVerifyAPI(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	id := h.runTask(sess, nil, StatusCompleted)
	raw := h.receiptsOf(id)[0]
	rid := field(raw, "receipt_id").(string)

	v := h.must(200, h.do("POST", "/v1/receipts/"+rid+"/verify", nil), "verify")
	if v.Body["valid"] != true || v.str("checked_at") == "" {
		t.Fatalf("verify stored = %s", v.Raw)
	}
	var doc map[string]any
	json.Unmarshal(raw, &doc)
	doc["cost"].(map[string]any)["total"] = 99
	v = h.must(200, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"receipt": doc}), "verify tampered")
	if v.Body["valid"] != false || !strings.Contains(v.str("reason"), receipt.ClassHashMismatch) {
		t.Errorf("verify tampered copy = %s", v.Raw)
	}
	if len(h.receiptEvents(sess, "receipt.verified", id)) != 1 || len(h.receiptEvents(sess, "receipt.verification_failed", id)) != 1 {
		t.Errorf("want one receipt.verified and one receipt.verification_failed event")
	}
	doc["receipt_id"] = "someone_else"
	wantError(t, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"receipt": doc}), 400, "invalid_request", "receipt")
	// A member the open schema does not name is taken (hostile.go).
	h.must(200, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"bogus": 1}), "verify with an unknown member")
	wantError(t, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"at_time": "yesterday"}), 400, "invalid_request", "at_time")
	wantError(t, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"trust_anchor": 7}), 400, "invalid_request", "trust_anchor")
	wantError(t, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"receipt": "x"}), 400, "invalid_request", "receipt")
	h.must(200, h.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"trust_anchor": nil, "at_time": "2026-04-25T00:00:00Z"}), "verify with OpenAPI members")
	wantError(t, h.do("POST", "/v1/receipts/receipt_missing/verify", nil), 404, "resource_not_found", "")
	wantError(t, h.do("GET", "/v1/receipts/receipt_missing", nil), 404, "resource_not_found", "")
	wantError(t, h.do("GET", "/v1/tasks/task_missing/receipts", nil), 404, "resource_not_found", "")
}

// TestVerifyRequestMembers: the OpenAPI's trust_anchor and at_time narrow
// what counts as valid, so a client can get an honest "invalid" from the
// standard request alone.
func TestVerifyRequestMembers(t *testing.T) {
	for _, v := range []Variant{"", VariantReceiptSignCanonical, VariantReceiptUnsigned} {
		t.Run("variant "+string(v), func(t *testing.T) {
			h := newHarness(t, Options{Variants: Variants{v: true}})
			sess := h.session()
			raw := h.receiptsOf(h.runTask(sess, nil, StatusCompleted))[0]
			rid := field(raw, "receipt_id").(string)
			issued := field(raw, "issued_at").(string)
			verify := func(body map[string]any) resp {
				return h.must(200, h.do("POST", "/v1/receipts/"+rid+"/verify", body), "verify")
			}
			keyID, _ := field(raw, "issuer", "public_key_id").(string)
			signed := v != VariantReceiptUnsigned
			if signed != (keyID != "") {
				t.Fatalf("issuer.public_key_id = %q for a harness that signs: %v", keyID, signed)
			}
			for _, tc := range []struct {
				name  string
				body  map[string]any
				valid bool
				class string
			}{
				{"no members", map[string]any{}, true, ""},
				{"nulls", map[string]any{"trust_anchor": nil, "at_time": nil}, true, ""},
				{"unknown anchor", map[string]any{"trust_anchor": "conform-untrusted-anchor"}, false, classNotAnchored},
				{"at issuance", map[string]any{"at_time": issued}, true, ""},
				{"before issuance", map[string]any{"at_time": "2000-01-01T00:00:00Z"}, false, classNotYetIssued},
			} {
				r := verify(tc.body)
				if r.Body["valid"] != tc.valid || (tc.class != "" && !strings.Contains(r.str("reason"), tc.class)) {
					t.Errorf("%s: %s, want valid %v (%s)", tc.name, r.Raw, tc.valid, tc.class)
				}
			}
			// The harness's own key as the anchor: valid exactly when it signs.
			if r := verify(map[string]any{"trust_anchor": h.s.rkey.id}); r.Body["valid"] != signed {
				t.Errorf("own key as anchor: %s, want valid %v", r.Raw, signed)
			}
			pubKey := base64.StdEncoding.EncodeToString(h.s.rkey.priv.Public().(ed25519.PublicKey))
			if r := verify(map[string]any{"trust_anchor": pubKey}); r.Body["valid"] != signed {
				t.Errorf("own public key as anchor: %s, want valid %v", r.Raw, signed)
			}
		})
	}
}

// TestKeyDirectoryLocation: the directory lives outside the receipt id
// namespace and is advertised where a client looks first.
func TestKeyDirectoryLocation(t *testing.T) {
	h := newHarness(t, Options{})
	advertised := func(h *harness) any {
		caps, _ := h.do("GET", "/v1", nil).Body["capabilities"].(map[string]any)
		return caps[KeyDirectoryCapability]
	}
	if got := advertised(h); got != KeyDirectoryPath {
		t.Errorf("discovery capabilities[%q] = %v, want %q", KeyDirectoryCapability, got, KeyDirectoryPath)
	}
	if ks := h.keys(); ks.Len() != 1 {
		t.Errorf("key directory lists %d keys, want 1", ks.Len())
	}
	// /v1/receipts/keys is the receipt "keys", which does not exist.
	wantError(t, h.do("GET", "/v1/receipts/keys", nil), 404, "resource_not_found", "")

	u := newHarness(t, Options{Variants: Variants{VariantReceiptUnsigned: true}})
	if got := advertised(u); got != nil {
		t.Errorf("an unsigned harness advertises a key directory: %v", got)
	}
	if ks := u.keys(); ks.Len() != 0 {
		t.Errorf("an unsigned harness's directory lists %d keys, want none", ks.Len())
	}
	raw := u.receiptsOf(u.runTask(u.session(), nil, StatusCompleted))[0]
	if field(raw, "signatures") != nil {
		t.Errorf("unsigned variant: signatures = %v", field(raw, "signatures"))
	}
	if res := receipt.Verify(raw, receipt.Options{Keys: u.keys()}); !res.Valid() {
		t.Errorf("unsigned receipt: %v", res.Err())
	}
}

func TestCanonicalSigningVariant(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantReceiptSignCanonical: true}})
	raw := h.receiptsOf(h.runTask(h.session(), nil, StatusCompleted))[0]
	res := receipt.Verify(raw, receipt.Options{Keys: h.keys()})
	if !res.Valid() || fmt.Sprint(res.SignatureProfiles) != "["+receipt.ProfileCanonical+"]" {
		t.Errorf("canonical-signed receipt: %v, profiles %v", res.Err(), res.SignatureProfiles)
	}
}

func TestReceiptsSurviveRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	sess := h.session()
	first := h.runTask(sess, nil, StatusCompleted)
	waiting := h.submit(sess, []map[string]any{step("input_required")}).str("id")
	h.waitStatus(waiting, StatusInputRequired)
	before := h.receiptsOf(first)[0]
	keysBefore, _ := json.Marshal(h.keys())
	if fi, err := os.Stat(filepath.Join(dir, keyFile)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}

	h2 := reopenHarness(t, h, dir)
	if got := h2.receiptsOf(first)[0]; string(got) != string(before) {
		t.Errorf("receipt changed across restart:\n%s\n%s", before, got)
	}
	keysAfter, _ := json.Marshal(h2.keys())
	if string(keysBefore) != string(keysAfter) {
		t.Errorf("key directory changed across restart: %s -> %s", keysBefore, keysAfter)
	}
	h2.waitStatus(waiting, StatusFailed)
	recovered := h2.receiptsOf(waiting)
	if len(recovered) != 1 {
		t.Fatalf("recovered task has %d receipts", len(recovered))
	}
	if got := field(recovered[0], "replay_input", "determinism"); got != "unavailable" {
		t.Errorf("recovered task determinism = %v", got)
	}
	next := h2.receiptsOf(h2.runTask(sess, nil, StatusCompleted))[0]
	ks := h2.keys()
	for i, res := range receipt.VerifyChain([][]byte{before, recovered[0], next}, receipt.Options{Keys: ks}) {
		if !res.Valid() {
			t.Errorf("chain across the restart, link %d: %v", i, res.Err())
		}
	}
}

func TestBadKeyFileRefusesToStart(t *testing.T) {
	for name, content := range map[string]string{
		"not json":  "{",
		"no id":     `{"algorithm":"ed25519","seed":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		"short":     `{"key_id":"k","algorithm":"ed25519","seed":"AAAA"}`,
		"other alg": `{"key_id":"k","algorithm":"rsa","seed":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="}`,
		"huge":      strings.Repeat(" ", maxKeyFile+1),
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, keyFile), []byte(content), 0o600)
			s, err := New(Options{DataDir: dir})
			if err == nil {
				s.Close()
				t.Fatal("New accepted a broken key file")
			}
			if !strings.Contains(err.Error(), keyFile) && !strings.Contains(err.Error(), "receipt signing key") {
				t.Errorf("error does not name the key file: %v", err)
			}
		})
	}
}

func TestUseSecretNeedsASecret(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	r := h.do("POST", "/v1/sessions/"+sess+"/tasks", map[string]any{"input": map[string]any{"text": "x"},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": []any{step("use_secret", "secret", "short")}}}})
	wantError(t, r, 400, "invalid_request", "metadata.conform.scenario.steps[0].secret")
}

// FuzzVerifyBody sends arbitrary bodies to POST /v1/receipts/{id}/verify,
// seeded with edits of a real receipt: the harness never fails with a 5xx,
// answers 200 with a boolean verdict or a 400 error envelope, and never
// calls a copy valid unless it is canonically the issued receipt.
func FuzzVerifyBody(f *testing.F) {
	s, err := New(Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { s.Close() })
	h := &harness{s: s}
	// The receipt is made by the first input (a harness helper needs a *testing.T).
	var rid string
	var canon []byte
	setup := func(t *testing.T) {
		h.t = t
		if rid != "" {
			return
		}
		raw := h.receiptsOf(h.runTask(h.session(), nil, StatusCompleted))[0]
		rid = field(raw, "receipt_id").(string)
		var err error
		if canon, err = receipt.Canonical(raw); err != nil {
			t.Fatal(err)
		}
	}
	// Seeds: the real receipt and edits of it are spliced in by the marker.
	const real = "@RECEIPT@"
	f.Add(`{"receipt":` + real + `}`)
	f.Add(`{"receipt":` + real + `,"at_time":null}`)
	f.Add(`{"trust_anchor":null,"at_time":"2026-04-25T00:00:00Z"}`)
	f.Add(`{"receipt":[]}`)
	f.Add(`{"receipt":{"receipt_id":7,"chain":7}}`)
	f.Add(`{"receipt":{"a":1,"a":2}}`)
	f.Add(``)
	f.Fuzz(func(t *testing.T, body string) {
		setup(t)
		if strings.Contains(body, real) {
			raw, _ := h.s.receiptBytes(rid)
			body = strings.Replace(body, real, string(raw), 1)
		}
		r := h.do("POST", "/v1/receipts/"+rid+"/verify", body)
		switch r.Code {
		case 200:
			valid, ok := r.Body["valid"].(bool)
			if !ok || r.str("checked_at") == "" {
				t.Fatalf("200 without a verdict: %s", r.Raw)
			}
			if valid {
				var b struct {
					Receipt json.RawMessage `json:"receipt"`
				}
				if json.Unmarshal([]byte(body), &b) == nil && len(b.Receipt) > 0 && string(b.Receipt) != "null" {
					if c, err := receipt.Canonical(b.Receipt); err != nil || string(c) != string(canon) {
						t.Fatalf("a copy that is not the issued receipt verifies: %s", body)
					}
				}
			} else if r.str("reason") == "" {
				t.Fatalf("invalid without a reason: %s", r.Raw)
			}
		case 400:
			if _, ok := r.Body["error"].(map[string]any); !ok {
				t.Fatalf("400 without an error envelope: %s", r.Raw)
			}
		default:
			t.Fatalf("status %d: %s", r.Code, r.Raw)
		}
	})
}

// receiptBytes returns a stored receipt, for tests.
func (s *Server) receiptBytes(id string) ([]byte, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	r, ok := s.st.rc.get(id)
	if !ok {
		return nil, false
	}
	return []byte(r.Raw), true
}

// BenchmarkIssueReceipt measures building, sealing and signing one receipt
// for a task that emitted messages, produced an artifact and used a secret:
// the cost a terminal transition pays for its receipt.
func BenchmarkIssueReceipt(b *testing.B) {
	t := &testing.T{} // the harness helpers want a *testing.T; setup failures would end the benchmark
	s, err := New(Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	h := &harness{t: t, s: s}
	id := h.runTask(h.session(), []map[string]any{step("emit", "count", 5), step("artifact", "content", "x"),
		step("use_secret", "secret", canary)}, StatusCompleted)
	s.mu.Lock()
	defer s.mu.Unlock()
	task, _ := s.st.tasks.get(id)
	b.ReportAllocs()
	for b.Loop() {
		cp := *task
		o := &Outcome{Envelope: Envelope{ID: "outcome_bench"}, Artifacts: []*Artifact{}}
		if err := s.issueReceiptLocked(&commit{}, &cp, o, &Event{}); err != nil {
			b.Fatal(err)
		}
	}
}
