package wrapfault

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/harn-conform/conform/refharness"
)

var (
	receiptByID    = regexp.MustCompile(`^/v1/receipts/[^/]+$`)
	anyReceiptRead = regexp.MustCompile(`^/v1/(receipts/[^/]+|tasks/[^/]+/receipts)$`)
)

// Receipt behaviour: surfaces around the receipts (reads, references, the
// verify answer, the bytes on the wire) rather than the receipts the
// Harness issues. The rows are in cmd/conform/faults_receipts_test.go.
func init() {
	register(map[string]Wrap{
		// Faults.
		"receipt-in-envelope": rewritingRaw(receiptByID, func(b []byte) []byte {
			return append(append([]byte(`{"object":"receipt","format":"receipt-2026-04-25","receipt":`), bytes.TrimSpace(b)...), '}')
		}),
		// Receipts served under another format marker.
		"receipt-wrong-marker": rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"receipt-2026-04-25"`), []byte(`"receipt-2099-01-01"`))
		}),
		// A redacted receipt whose content no longer matches its stored
		// hash: only receipts that carry redactions are touched.
		"redacted-receipt-unverifiable": rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"redactions":[{`), []byte(`"redactions":[{"note":"edited after sealing",`))
		}),
		"task-receipts-empty": rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/receipts") {
				m["data"] = []any{}
			}
		}),
		"unknown-receipt-200": plain(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				if strings.HasPrefix(r.URL.Path, "/v1/receipts/") && rec.Code == http.StatusNotFound {
					w.Header().Set("Content-Type", "application/json")
					w.Write([]byte(`{}`))
					return
				}
				copyRecorded(w, rec, rec.Body.Bytes())
			})
		}),
		"verify-without-checked-at": rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") {
				delete(m, "checked_at")
			}
		}),
		"outcome-receipt-dangling": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
		}),
		"task-event-receipt-dangling": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "event", func(m map[string]any) {
				if kind, _ := m["event"].(string); strings.HasPrefix(kind, "task.") && m["receipt_id"] != nil {
					m["receipt_id"] = "receipt_dangling"
				}
			})
		}),
		"artifact-receipt-dangling": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
		}),
		// Not I-JSON: the suite's verifier refuses it, the target's
		// (reading its own copy) does not.
		"receipt-duplicate-member": rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"schema":"receipt-2026-04-25"`), []byte(`"schema":"receipt-2026-04-25","schema":"receipt-2026-04-25"`))
		}),
		// The valid direction with the standard request alone: a verify API
		// that calls genuine receipts invalid.
		"verify-always-invalid": rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") && m["valid"] != nil {
				m["valid"], m["reason"] = false, "the verifier is broken"
			}
		}),
		// A verify API that vouches for what the target serves although the
		// served bytes fail verification: the invalid direction, standard API.
		"verify-vouches-for-served-edit": rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"issued_at":"`), []byte(`"issued_at":"1`), -1)
		}),

		// A SHOULD broken: signed receipts and no key directory anywhere,
		// so no client can check the signatures.
		"key-directory-missing": plain(func(next http.Handler) http.Handler {
			hide := discovery(func(caps map[string]any) { delete(caps, refharness.KeyDirectoryCapability) })(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == refharness.KeyDirectoryPath {
					http.NotFound(w, r)
					return
				}
				hide.ServeHTTP(w, r)
			})
		}),

		// Legal behaviour.
		// Without the scenario contract the run is two tasks of the
		// target's own agent, and the canary checks skip.
		"no-scenario-contract": plain(discovery(func(caps map[string]any) { delete(caps, "conform.scenarios") })),
		// Without the verify extension no tampered copy is sent.
		"no-verify-extension": plain(discovery(func(caps map[string]any) { delete(caps, refharness.VerifySubmittedCapability) })),
		// The key directory where discovery says it is, and nowhere else:
		// the suite follows the advertisement.
		"key-directory-elsewhere": plain(func(next http.Handler) http.Handler {
			moved := discovery(func(caps map[string]any) { caps[refharness.KeyDirectoryCapability] = "/v1/conform-keys/current" })(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case refharness.KeyDirectoryPath:
					http.NotFound(w, r)
					return
				case "/v1/conform-keys/current":
					r = r.Clone(r.Context())
					r.URL.Path = refharness.KeyDirectoryPath
				}
				moved.ServeHTTP(w, r)
			})
		}),
		// Signatures are optional and outside the hash: unsigned receipts
		// are as valid as signed ones.
		"unsigned-receipts": rewriting(func(r *http.Request, v any) {
			m, ok := v.(map[string]any)
			if !ok || !anyReceiptRead.MatchString(r.URL.Path) {
				return
			}
			if data, ok := m["data"].([]any); ok {
				for _, d := range data {
					if rm, ok := d.(map[string]any); ok {
						delete(rm, "signatures")
					}
				}
				return
			}
			delete(m, "signatures")
		}),
		// The agent card says receipt_policy "optional" and no receipt is
		// ever issued.
		"receipt-policy-optional": rewriting(func(r *http.Request, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			if m["object"] == "harn_agent_card" {
				m["receipt_policy"] = "optional"
			}
			if strings.HasSuffix(r.URL.Path, "/receipts") && m["object"] == "list" {
				m["data"] = []any{}
			}
			eachObject(v, "task", func(t map[string]any) {
				if _, resource := t["status"]; resource { // not a receipt's subject pointer
					t["receipt_id"] = nil
				}
			})
		}),

		// Legal, with nothing to look at: the rows expect these unverified.
		"outcomes-without-receipt-id": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = nil })
		}),
		"events-without-receipt-id": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "event", func(m map[string]any) { delete(m, "receipt_id") })
		}),
		"artifacts-without-receipt-id": rewriting(func(_ *http.Request, v any) {
			eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = nil })
		}),
		// A verify API that ignores trust_anchor and at_time (legal: the
		// protocol does not define them), without the conform extension:
		// the invalid direction cannot be asked for.
		"verify-ignores-request": plain(func(next http.Handler) http.Handler {
			hide := discovery(func(caps map[string]any) { delete(caps, refharness.VerifySubmittedCapability) })(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/verify") && r.Body != nil {
					r = r.Clone(r.Context())
					r.Body = io.NopCloser(strings.NewReader(`{}`))
					r.ContentLength = 2
				}
				hide.ServeHTTP(w, r)
			})
		}),
		// Replay advertised: the Replay suite that would drive a replay
		// receipt does not exist yet.
	})
}
