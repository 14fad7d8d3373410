package check

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/receipts"
	"github.com/harn-conform/conform/internal/receipt"
)

func rcptFixture(t *testing.T, path string) []byte {
	t.Helper()
	b, err := receipts.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func rcptDoc(t *testing.T, raw []byte) ReceiptDoc {
	t.Helper()
	d, err := DecodeReceipt(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// edit decodes raw, applies f, and re-encodes.
func rcptEdit(t *testing.T, raw []byte, f func(m map[string]any)) []byte {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	f(m)
	b, _ := json.Marshal(m)
	return b
}

func rcptWant(t *testing.T, name string, err error, ok bool, sub string) {
	t.Helper()
	switch {
	case ok && err != nil:
		t.Errorf("%s: unexpected error %v", name, err)
	case !ok && err == nil:
		t.Errorf("%s: no error, want one", name)
	case !ok && sub != "" && !strings.Contains(err.Error(), sub):
		t.Errorf("%s: error %q does not say %q", name, err, sub)
	}
}

func TestReceiptList(t *testing.T) {
	r := rcptFixture(t, "valid/task-completed.json")
	for _, tc := range []struct {
		name, body string
		status     int
		n          int
		ok         bool
		sub        string
	}{
		{"one", `{"object":"list","data":[` + string(r) + `],"page":{"has_more":false,"next_cursor":null}}`, 200, 1, true, ""},
		{"empty", `{"object":"list","data":[],"page":{"has_more":false,"next_cursor":null}}`, 200, 0, true, ""},
		{"no page", `{"object":"list","data":[]}`, 200, 0, false, "page is missing"},
		{"404", `{"error":{}}`, 404, 0, false, "status = 404"},
		{"not a list", `{"object":"receipt","data":[]}`, 200, 0, false, `want {"object":"list"`},
		{"no data", `{"object":"list"}`, 200, 0, false, "data absent"},
		{"item not object", `{"object":"list","data":["x"],"page":{"has_more":false,"next_cursor":null}}`, 200, 0, false, "data[0] is a string, want an object"},
		{"garbage", `[`, 200, 0, false, "not a list envelope"},
	} {
		got, err := ReceiptList(resp(tc.status, tc.body))
		rcptWant(t, tc.name, err, tc.ok, tc.sub)
		if err == nil && len(got) != tc.n {
			t.Errorf("%s: %d receipts, want %d", tc.name, len(got), tc.n)
		}
	}
}

func TestFindingsAndSecrets(t *testing.T) {
	good := receipt.Verify(rcptFixture(t, "valid/task-completed.json"), receipt.Options{})
	if err := Findings("r", good, receipt.ClassHashMismatch, receipt.ClassSchemaInvalid); err != nil {
		t.Errorf("valid fixture: %v", err)
	}
	bad := receipt.Verify(rcptFixture(t, "invalid/wrong-hash.json"), receipt.Options{})
	rcptWant(t, "wrong hash", Findings("r", bad, receipt.ClassHashMismatch), false, "hash_mismatch")
	if err := Findings("r", bad, receipt.ClassSchemaInvalid); err != nil {
		t.Errorf("wrong hash blamed on the schema: %v", err)
	}
	leak := receipt.Verify(rcptFixture(t, "invalid/secret-material.json"), receipt.Options{})
	named, shaped := SecretFindings("r", leak)
	rcptWant(t, "named secret", named, false, "api_key")
	rcptWant(t, "PEM secret", shaped, false, "PEM")
	if n, s := SecretFindings("r", good); n != nil || s != nil {
		t.Errorf("valid fixture has secrets: %v %v", n, s)
	}
}

func TestShapeChecks(t *testing.T) {
	raw := rcptFixture(t, "valid/task-completed.json")
	d := rcptDoc(t, raw)
	task := map[string]any{"id": "task_conform_full_0001", "workspace_id": "ws_fixture_repo", "session_id": "sess_conform_full_0001", "outcome_id": "out_1", "status": "COMPLETED"}
	rcptWant(t, "format", FormatMarker(d), true, "")
	rcptWant(t, "format wrong", FormatMarker(rcptDoc(t, rcptEdit(t, raw, func(m map[string]any) { m["schema"] = "receipt-1999" }))), false, `want "receipt-2026-04-25"`)
	rcptWant(t, "subject", Subject(d, task), true, "")
	other := map[string]any{"id": "task_other", "outcome_id": "out_1"}
	rcptWant(t, "subject of another task", Subject(d, other), false, `want the task "task_other"`)
	outcome := rcptEdit(t, raw, func(m map[string]any) { m["subject"] = map[string]any{"object": "outcome", "id": "out_1"} })
	rcptWant(t, "subject outcome", Subject(rcptDoc(t, outcome), other), true, "")
	ids := RunIDs{Workspace: "ws_fixture_repo", Session: "sess_conform_full_0001", Task: "task_conform_full_0001"}
	rcptWant(t, "identifiers", Identifiers(d, ids), true, "")
	wrongWS := ids
	wrongWS.Workspace = "ws_x"
	rcptWant(t, "identifiers wrong ws", Identifiers(d, wrongWS), false, `identifiers.workspace_ref = "ws_fixture_repo", want "ws_x"`)
	wrongSess := ids
	wrongSess.Session = "sess_x"
	rcptWant(t, "identifiers wrong session", Identifiers(d, wrongSess), false, `identifiers.session_id = "sess_conform_full_0001", want "sess_x"`)
	// Nothing known to compare with is never a match.
	rcptWant(t, "identifiers unknown", Identifiers(d, RunIDs{Task: "task_conform_full_0001"}), false, "does not know")
	noIDs := rcptEdit(t, raw, func(m map[string]any) { delete(m["identifiers"].(map[string]any), "task_id") })
	rcptWant(t, "identifiers absent", Identifiers(rcptDoc(t, noIDs), ids), false, "identifiers.task_id = missing")
	rcptWant(t, "lifecycle", Lifecycle(d, Completed), true, "")
	rcptWant(t, "lifecycle wrong state", Lifecycle(d, Failed), false, `want "FAILED"`)
	backwards := rcptEdit(t, raw, func(m map[string]any) { m["lifecycle"].(map[string]any)["completed_at"] = "2026-04-25T00:00:00Z" })
	rcptWant(t, "lifecycle backwards", Lifecycle(rcptDoc(t, backwards), Completed), false, "is before started_at")
	rcptWant(t, "determinism", Determinism(d), true, "")
	noReason := rcptEdit(t, raw, func(m map[string]any) {
		m["replay_input"] = map[string]any{"determinism": "unavailable", "materials": []any{}}
	})
	rcptWant(t, "determinism no reason", Determinism(rcptDoc(t, noReason)), false, "without an unavailable_reason")
	noMats := rcptEdit(t, raw, func(m map[string]any) {
		m["replay_input"] = map[string]any{"determinism": "byte_deterministic", "materials": []any{}}
	})
	rcptWant(t, "determinism no materials", Determinism(rcptDoc(t, noMats)), false, "no materials")
	rcptWant(t, "failure on completed", FailureVisible(d, Completed), true, "")
	rcptWant(t, "failure missing", FailureVisible(d, Failed), false, "lifecycle.failure is missing or null")
}

func TestSameReceipt(t *testing.T) {
	raw := rcptFixture(t, "valid/task-completed.json")
	id := "rcpt_conform_full_0001"
	rcptWant(t, "same", SameReceipt(resp(200, string(raw)), raw), true, "")
	wrapped := `{"object":"receipt","id":"` + id + `","format":"receipt-2026-04-25","receipt":` + string(raw) + `}`
	rcptWant(t, "wrapped", SameReceipt(resp(200, wrapped), raw), false, "not a wrapper")
	changed := rcptEdit(t, raw, func(m map[string]any) { m["issued_at"] = "2026-04-26T00:00:00Z" })
	rcptWant(t, "differs", SameReceipt(resp(200, string(changed)), raw), false, "differs from the one in the task's receipts list")
	rcptWant(t, "404", SameReceipt(resp(404, `{}`), raw), false, "status = 404")
	for _, tc := range []struct {
		name    string
		resp    int
		body    string
		id      string
		checked bool
		ok      bool
	}{
		{"served id", 200, string(raw), id, true, true},
		{"other id", 200, string(raw), "rcpt_other", true, false},
		{"not a receipt", 404, `{}`, id, false, true},
		{"wrapper", 200, wrapped, id, false, true},
	} {
		checked, err := ServedID(resp(tc.resp, tc.body), tc.id)
		rcptWant(t, tc.name, err, tc.ok, "")
		if checked != tc.checked {
			t.Errorf("%s: checked = %v, want %v", tc.name, checked, tc.checked)
		}
	}
}

func TestCost(t *testing.T) {
	raw := rcptFixture(t, "valid/task-completed.json")
	d := rcptDoc(t, raw)
	rcptWant(t, "consistent", Cost(d, nil), true, "")
	rcptWant(t, "outcome agrees", Cost(d, map[string]any{"cost": map[string]any{"total": 0.0375, "currency": "EUR"}}), true, "")
	rcptWant(t, "outcome without currency agrees", Cost(d, map[string]any{"cost": map[string]any{"total": json.Number("0.0375")}}), true, "")
	rcptWant(t, "outcome disagrees", Cost(d, map[string]any{"cost": map[string]any{"total": 1.5, "currency": "EUR"}}), false, "Outcome states cost.total 1.5")
	rcptWant(t, "outcome in another currency", Cost(d, map[string]any{"cost": map[string]any{"total": 1.5, "currency": "USD"}}), true, "")
	rcptWant(t, "outcome cost without total", Cost(d, map[string]any{"cost": map[string]any{"note": "n/a"}}), true, "")
	over := rcptEdit(t, raw, func(m map[string]any) {
		m["cost"].(map[string]any)["provider_breakdown"] = []any{map[string]any{"provider": "a", "amount": 0.03}, map[string]any{"provider": "b", "amount": 0.03}}
	})
	rcptWant(t, "breakdown over total", Cost(rcptDoc(t, over), nil), false, "more than cost.total")
	under := rcptEdit(t, raw, func(m map[string]any) {
		m["cost"].(map[string]any)["provider_breakdown"] = []any{}
	})
	rcptWant(t, "breakdown under total", Cost(rcptDoc(t, under), nil), true, "")
	// Decimal amounts that add up in decimal but not in binary floats.
	tenths := rcptEdit(t, raw, func(m map[string]any) {
		m["cost"] = map[string]any{"currency": "USD", "total": 0.3, "provider_breakdown": []any{
			map[string]any{"provider": "a", "amount": 0.1}, map[string]any{"provider": "b", "amount": 0.2}}}
	})
	rcptWant(t, "float rounding", Cost(rcptDoc(t, tenths), nil), true, "")
	noTotal := rcptEdit(t, raw, func(m map[string]any) { delete(m["cost"].(map[string]any), "total") })
	rcptWant(t, "no total", Cost(rcptDoc(t, noTotal), nil), false, "cost.total is missing")
}

func TestFinalArtifacts(t *testing.T) {
	d := rcptDoc(t, rcptFixture(t, "valid/task-completed.json"))
	rcptWant(t, "listed", FinalArtifacts(d, []string{"art_release_notes"}), true, "")
	rcptWant(t, "no outcome artifacts", FinalArtifacts(d, nil), true, "")
	rcptWant(t, "left out", FinalArtifacts(d, []string{"art_release_notes", "art_other"}), false, `leaves out "art_other"`)
}

func TestKeyDirectoryPath(t *testing.T) {
	const base = "https://h.example/api"
	caps := func(v any) map[string]any {
		return map[string]any{"capabilities": map[string]any{KeyDirectoryCapability: v}}
	}
	for _, tc := range []struct {
		name       string
		disc       map[string]any
		path       string
		query      string
		advertised bool
		err        string
	}{
		{"not advertised", map[string]any{}, DefaultKeyDirectory, "", false, ""},
		{"no such capability", map[string]any{"capabilities": map[string]any{"receipts": true}}, DefaultKeyDirectory, "", false, ""},
		{"null", caps(nil), DefaultKeyDirectory, "", false, ""},
		{"path", caps("/v1/keys"), "/v1/keys", "", true, ""},
		{"path with query", caps("/v1/keys?format=dir"), "/v1/keys", "format=dir", true, ""},
		{"absolute under base", caps("https://h.example/api/v1/receipt-keys"), "/v1/receipt-keys", "", true, ""},
		{"absolute elsewhere", caps("https://keys.example/v1/receipt-keys"), "", "", true, "outside the target's base URL"},
		{"absolute outside prefix", caps("https://h.example/other/v1/receipt-keys"), "", "", true, "outside the target's base URL"},
		{"relative reference", caps("receipt-keys"), "", "", true, "relative reference"},
		{"a bare flag", caps(true), DefaultKeyDirectory, "", false, ""},
		{"not a string", caps(7), "", "", true, "want the key directory's path"},
		{"empty", caps(""), "", "", true, "want the key directory's path"},
	} {
		path, q, adv, err := KeyDirectoryPath(tc.disc, base)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: unexpected error %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: error %v, want one saying %q", tc.name, err, tc.err)
		case path != tc.path || q.Encode() != tc.query || adv != tc.advertised:
			t.Errorf("%s: (%q, %q, %v), want (%q, %q, %v)", tc.name, path, q.Encode(), adv, tc.path, tc.query, tc.advertised)
		}
	}
}

func TestChainLink(t *testing.T) {
	c1, c2 := rcptDoc(t, rcptFixture(t, "valid/chain-1.json")), rcptDoc(t, rcptFixture(t, "valid/chain-2.json"))
	if u, err := ChainLink(c1, c2, nil); u != "" || err != nil {
		t.Errorf("valid link: %q %v", u, err)
	}
	if u, err := ChainLink(c2, c1, nil); u != "" || err != nil { // chain-1 starts a chain: null is always fine
		t.Errorf("null link: %q %v", u, err)
	}
	c3 := rcptDoc(t, rcptFixture(t, "valid/chain-3.json"))
	if u, _ := ChainLink(c1, c3, nil); u == "" {
		t.Error("chain-3 linking past chain-1 was taken as linking to it")
	}
	if u, _ := ChainLink(c1, c3, map[string]bool{c3.Str("chain", "previous_receipt_hash"): true}); u != "" {
		t.Error("a link to a known receipt is unresolved")
	}
	broken := rcptDoc(t, rcptEdit(t, rcptFixture(t, "valid/chain-2.json"), func(m map[string]any) { m["chain"] = map[string]any{"receipt_hash": "x"} }))
	if _, err := ChainLink(c1, broken, nil); err == nil || !strings.Contains(err.Error(), "absent") {
		t.Errorf("absent link: %v", err)
	}
	notChain := rcptDoc(t, []byte(`{"chain":"nope"}`))
	if _, err := ChainLink(c1, notChain, nil); err == nil {
		t.Error("chain that is not an object passes")
	}
}

func TestVerification(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		status     int
		valid, ok  bool
		sub        string
	}{
		{"valid", `{"valid":true,"checked_at":"2026-04-25T10:00:00Z"}`, 200, true, true, ""},
		{"invalid with reason", `{"valid":false,"checked_at":"2026-04-25T10:00:00Z","reason":"hash mismatch"}`, 200, false, true, ""},
		{"invalid without reason", `{"valid":false,"checked_at":"2026-04-25T10:00:00Z","reason":null}`, 200, false, false, "want a string saying why"},
		{"valid as string", `{"valid":"yes","checked_at":"2026-04-25T10:00:00Z"}`, 200, false, false, "want a boolean"},
		{"no checked_at", `{"valid":true}`, 200, true, false, "checked_at is missing or null"},
		{"bad checked_at", `{"valid":true,"checked_at":"yesterday"}`, 200, true, false, "not an RFC 3339"},
		{"404", `{}`, 404, false, false, "status = 404"},
	} {
		a, err := Verification(resp(tc.status, tc.body))
		rcptWant(t, tc.name, err, tc.ok, tc.sub)
		if tc.status == 200 && a.Valid != tc.valid {
			t.Errorf("%s: valid = %v", tc.name, a.Valid)
		}
	}
	good := receipt.Verify(rcptFixture(t, "valid/task-completed.json"), receipt.Options{})
	bad := receipt.Verify(rcptFixture(t, "invalid/tampered.json"), receipt.Options{})
	r := resp(200, "")
	rcptWant(t, "agree valid", Agrees(r, VerifyAnswer{Valid: true}, good), true, "")
	rcptWant(t, "agree invalid", Agrees(r, VerifyAnswer{Valid: false, Reason: "x"}, bad), true, "")
	rcptWant(t, "says valid", Agrees(r, VerifyAnswer{Valid: true}, bad), false, "hash_mismatch")
	rcptWant(t, "says invalid", Agrees(r, VerifyAnswer{Valid: false, Reason: "nope"}, good), false, "passes every check")
}

func TestNoCanary(t *testing.T) {
	const c = "conform-canary-123456"
	rcptWant(t, "absent", NoCanary("receipt", []byte(`{"a":"[REDACTED]"}`), c), true, "")
	err := NoCanary("receipt", []byte(`{"api_key":"`+c+`"}`), c)
	rcptWant(t, "present", err, false, "carries the canary")
	if err != nil && strings.Contains(err.Error(), c) {
		t.Error("the message repeats the canary")
	}
	rcptWant(t, "base64", NoCanary("receipt", []byte(`{"b":"Y29uZm9ybS1jYW5hcnktMTIzNDU2"}`), c), false, "canary")
	rcptWant(t, "no canary", NoCanary("receipt", []byte(c), ""), true, "")
}

func TestNoReasoning(t *testing.T) {
	const thought = "conform hidden reasoning 0123abcd"
	rcptWant(t, "absent", NoReasoning("receipt", []byte(`{"route_policy_reason":"weighed the options"}`), thought), true, "")
	err := NoReasoning("receipt", []byte(`{"route_policy_reason":"`+thought+`"}`), thought)
	rcptWant(t, "present", err, false, "hidden reasoning")
	if err != nil && strings.Contains(err.Error(), thought) {
		t.Error("the message repeats the reasoning")
	}
	rcptWant(t, "base64", NoReasoning("receipt", []byte(base64.StdEncoding.EncodeToString([]byte(thought))), thought), false, "hidden reasoning")
	rcptWant(t, "no reasoning", NoReasoning("receipt", []byte(thought), ""), true, "")
}

func TestRedactions(t *testing.T) {
	raw := rcptFixture(t, "valid/task-completed.json")
	rcptWant(t, "fixture", Redactions(rcptDoc(t, raw), ""), true, "")
	const secret = "conform-canary-123456"
	sum := sha256.Sum256([]byte(secret))
	proof := "sha256:" + hex.EncodeToString(sum[:])
	withSecret := func(red map[string]any) ReceiptDoc {
		return rcptDoc(t, rcptEdit(t, raw, func(m map[string]any) {
			m["metadata"] = map[string]any{"api_key": "[REDACTED]"}
			m["redactions"] = []any{red}
		}))
	}
	rcptWant(t, "secret proved", Redactions(withSecret(map[string]any{"field": "/metadata/api_key", "reason": "secret", "proof_hash": proof}), secret), true, "")
	rcptWant(t, "no proof", Redactions(withSecret(map[string]any{"field": "/metadata/api_key", "reason": "secret"}), secret), false, "has no proof_hash")
	rcptWant(t, "other proof", Redactions(withSecret(map[string]any{"field": "/metadata/api_key", "reason": "secret", "proof_hash": "sha256:" + strings.Repeat("0", 64)}), secret), false, "no redactions entry carries its proof hash")
	rcptWant(t, "member removed, container kept", Redactions(withSecret(map[string]any{"field": "/metadata/password", "reason": "secret", "proof_hash": proof}), secret), true, "")
	rcptWant(t, "container gone", Redactions(withSecret(map[string]any{"field": "/credentials/password", "reason": "secret", "proof_hash": proof}), secret), false, "does not point into the receipt")
	rcptWant(t, "not a pointer", Redactions(withSecret(map[string]any{"field": "metadata.api_key", "reason": "secret", "proof_hash": proof}), secret), false, "does not point into the receipt")
	rcptWant(t, "no reason", Redactions(withSecret(map[string]any{"field": "/metadata/api_key", "proof_hash": proof}), secret), false, "has no reason")
	rcptWant(t, "secret not listed", Redactions(rcptDoc(t, rcptEdit(t, raw, func(m map[string]any) { delete(m, "redactions") })), secret), false, "0 entries")
	for ptr, ok := range map[string]bool{"": true, "/metadata/tags/1": true, "/metadata/tags/01": false, "/metadata/tags/9": false, "metadata": false, "/side_effects/fs_writes/0/path": true, "/a~1b": false} {
		if _, got := resolvePointer(map[string]any(rcptDoc(t, raw)), ptr); got != ok {
			t.Errorf("resolvePointer(%q) = %v, want %v", ptr, got, ok)
		}
	}
}

func TestArtifactDigestAndReceiptOf(t *testing.T) {
	d := rcptDoc(t, rcptFixture(t, "valid/task-completed.json"))
	entry := d.Get("final_artifacts").([]any)[0].(map[string]any)
	hexSum := strings.TrimPrefix(entry["sha256"].(string), "sha256:")
	rcptWant(t, "bare hex", ArtifactDigest(d, entry, map[string]any{"sha256": hexSum}), true, "")
	rcptWant(t, "prefixed", ArtifactDigest(d, entry, map[string]any{"sha256": "sha256:" + hexSum}), true, "")
	rcptWant(t, "differs", ArtifactDigest(d, entry, map[string]any{"sha256": strings.Repeat("0", 64)}), false, "but the artifact's sha256 is")
	rcptWant(t, "missing", ArtifactDigest(d, entry, map[string]any{}), false, "")
	rcptWant(t, "of task", ReceiptOf("task.receipt_id", d, "task_conform_full_0001", ""), true, "")
	rcptWant(t, "of session", ReceiptOf("event.receipt_id", d, "", "sess_conform_full_0001"), true, "")
	rcptWant(t, "of other task", ReceiptOf("task.receipt_id", d, "task_x", ""), false, `want a receipt of task "task_x"`)
}
