package openapi

import (
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"

	openapidoc "github.com/harn-conform/conform/fixtures/openapi"
)

// The code's patches and the ledger's headings are the same list, in the
// same order.
func TestPatchesMatchTheLedger(t *testing.T) {
	var ledger []string
	for _, m := range regexp.MustCompile(`(?m)^### ([PA][0-9]+ [a-z0-9-]+)$`).FindAllStringSubmatch(openapidoc.Patches, -1) {
		ledger = append(ledger, m[1])
	}
	var code []string
	for _, p := range Patches() {
		code = append(code, p.ID)
	}
	if !slices.Equal(ledger, code) {
		t.Errorf("PATCHES.md lists %q\npatches.go applies %q", ledger, code)
	}
}

// Each patch checks that its defect is still there: applied to a document
// that already has it, it fails instead of patching twice.
func TestPatchesRefuseAPatchedDocument(t *testing.T) {
	for _, p := range Patches() {
		root, err := parseDoc(openapidoc.JSON)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.apply(root); err != nil {
			t.Fatalf("%s on the vendored document: %v", p.ID, err)
		}
		if err := p.apply(root); err == nil {
			t.Errorf("%s applied twice without complaint", p.ID)
		}
	}
}

// Each patch is needed: without it a conformant answer (or a correct
// request) is rejected, with it accepted.
func TestEachPatchIsNeeded(t *testing.T) {
	receipt := func(t *testing.T) []byte { return receiptFixture(t, "task-completed.json") }
	for _, tc := range []struct {
		patch        string
		request      bool
		method, path string
		body         func(t *testing.T) []byte
	}{
		{"P1 receipt-component", false, "GET", "/v1/receipts/r1", receipt},
		{"P2 task-input-anyof", false, "GET", "/v1/tasks/t1", func(*testing.T) []byte { return js(task()) }},
		{"P2 task-input-anyof", true, "POST", "/v1/sessions/s1/tasks", func(*testing.T) []byte {
			return []byte(`{"input":{"role":"user","parts":[{"type":"text","text":"hi","visibility":"public"}]}}`)
		}},
		{"P3 memory-content", false, "GET", "/v1/memories/m1", func(*testing.T) []byte {
			return js(merge(envelopeOf("memory", "mem_1"), "scope", "session", "owner_id", "ses_1", "provenance", map[string]any{},
				"content", map[string]any{"type": "artifact_ref", "artifact_id": "art_1", "visibility": "public"}))
		}},
		{"P4 a2a-card-interfaces", false, "GET", "/v1/agent-card", func(*testing.T) []byte {
			return js(with(with(agentCard(), "a2a_card/supportedInterfaces", del), "a2a_card/url", "https://h.example/a2a"))
		}},
		{"P5 nested-resources", false, "GET", "/v1/outcomes/o1", func(*testing.T) []byte {
			return js(with(outcome(), "messages", []any{map[string]any{"id": "m", "role": "agent", "parts": []any{textPart()}, "created_at": ts}}))
		}},
		{"P6 agent-card-envelope", false, "GET", "/v1/agent-card", func(*testing.T) []byte {
			return js(with(with(with(agentCard(), "created_at", del), "updated_at", del), "metadata", del))
		}},
		{"A1 receipt-key-directory", true, "GET", "/v1/receipt-keys", func(*testing.T) []byte { return nil }},
	} {
		t.Run(tc.patch, func(t *testing.T) {
			without, err := load(map[string]bool{tc.patch: true})
			if err != nil {
				t.Fatal(err)
			}
			with := mustDoc(t)
			check := func(d *Doc) []Violation {
				if tc.request {
					h := http.Header{"Authorization": {"Bearer x"}, "Harn-Agents-Protocol-Version": {"agents-protocol-2026-04-25"}, "Content-Type": {"application/json"}}
					return d.ValidateRequest(tc.method, tc.path, nil, h, tc.body(t))
				}
				return d.ValidateResponse(tc.method, tc.path, 200, jsonCT, tc.body(t))
			}
			if vs := check(without); len(vs) == 0 {
				t.Errorf("without %s the exchange passes: the patch is not needed for it", tc.patch)
			}
			if vs := check(with); len(vs) != 0 {
				t.Errorf("with %s: %s", tc.patch, errs(vs))
			}
		})
	}
}

// What patches leave strict stays strict.
func TestPatchesKeepTheRest(t *testing.T) {
	d := mustDoc(t)
	for _, tc := range []struct {
		name, path string
		body       []byte
		want       string
	}{
		{"nested artifact keeps its own fields", "/v1/outcomes/o1", js(with(outcome(), "artifacts/0/sha256", del)), "/artifacts/0/sha256"},
		{"nested message keeps created_at", "/v1/outcomes/o1", js(with(outcome(), "messages/0/created_at", del)), "/messages/0/created_at"},
		{"nested envelope members stay typed", "/v1/outcomes/o1", js(with(outcome(), "messages/0/metadata", "x")), "/messages/0/metadata"},
		{"card keeps id", "/v1/agent-card", js(with(agentCard(), "id", del)), "/id"},
		{"card keeps object", "/v1/agent-card", js(with(agentCard(), "object", del)), "/object"},
		{"card timestamps stay typed", "/v1/agent-card", js(with(agentCard(), "created_at", "now")), "/created_at"},
		{"a2a url must be a URI", "/v1/agent-card", js(with(with(agentCard(), "a2a_card/supportedInterfaces", del), "a2a_card/url", "not a uri")), "/a2a_card/url"},
		{"receipt stays closed", "/v1/receipts/r1", []byte(strings.Replace(string(receiptFixture(t, "chain-1.json")), "{", `{"extra":true,`, 1)), "/extra"},
	} {
		vs := d.ValidateResponse("GET", tc.path, 200, jsonCT, tc.body)
		if len(vs) != 1 || vs[0].Pointer != tc.want {
			t.Errorf("%s: %d violations, want one at %s:\n%s", tc.name, len(vs), tc.want, errs(vs))
		}
	}
}

// P7: an error code outside the core table is an error envelope still.
func TestOpenErrorCodes(t *testing.T) {
	body := []byte(`{"error":{"code":"method_not_allowed","message":"DELETE not allowed","type":"request_error"}}`)
	without, err := load(map[string]bool{"P7 open-error-codes": true})
	if err != nil {
		t.Fatal(err)
	}
	if vs := without.ValidateResponse("DELETE", "/v1/tasks", 405, jsonCT, body); len(vs) == 0 {
		t.Errorf("without P7 a 405 with its own code passes: the patch is not needed")
	}
	if vs := mustDoc(t).ValidateResponse("DELETE", "/v1/tasks", 405, jsonCT, body); len(vs) != 0 {
		t.Errorf("with P7: %s", errs(vs))
	}
	bad := []byte(`{"error":{"code":"method_not_allowed","message":"x","type":"method_error"}}`)
	if vs := mustDoc(t).ValidateResponse("DELETE", "/v1/tasks", 405, jsonCT, bad); len(vs) == 0 {
		t.Errorf("with P7 an unknown error type passes: the type must stay closed")
	}
}
