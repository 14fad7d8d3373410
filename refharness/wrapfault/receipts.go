package wrapfault

import (
	"bytes"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
)

var (
	receiptByID    = regexp.MustCompile(`^/v1/receipts/[^/]+$`)
	anyReceiptRead = regexp.MustCompile(`^/v1/(receipts/[^/]+|tasks/[^/]+/receipts)$`)
)

// Receipt behaviour: surfaces around the receipts (reads, references, the
// verify answer, the bytes on the wire) rather than the receipts the
// Harness issues (those are its in-server faults, refharness/receipts.go).
func init() {
	wireFault(fault.Fault{Name: "receipt-in-envelope",
		Doc:       "GET /v1/receipts/{id} serves the receipt wrapped in an envelope object",
		Fails:     []string{"RCPT-RES-001"},
		Tolerated: []string{"RCPT-REF-001", "RCPT-REF-002", "RCPT-REF-003", "RCPT-SHAPE-001", "RCPT-SHAPE-002"},
		Why:       "a reference followed through the wrapper reads no identifiers either (RCPT-REF-001..003), and the OpenAPI traffic oracle reads the wrapper as a response that is not the receipt-2026-04-25 document (RCPT-SHAPE-001, -002)"},
		rewritingRaw(receiptByID, func(b []byte) []byte {
			return append(append([]byte(`{"object":"receipt","format":"receipt-2026-04-25","receipt":`), bytes.TrimSpace(b)...), '}')
		}))

	wireFault(fault.Fault{Name: "receipt-wrong-marker",
		Doc:       "receipts are served under another format marker (receipt-2099-01-01)",
		Fails:     []string{"RCPT-SHAPE-002"},
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-VERIFY-002", "RCPT-FIX-001"},
		Why:       "changing sealed bytes breaks the hash, the schema's const and the suite's agreement with the target's verify answer as well"},
		rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"receipt-2026-04-25"`), []byte(`"receipt-2099-01-01"`))
		}))

	wireFault(fault.Fault{Name: "redacted-receipt-unverifiable",
		Doc:       "a redacted receipt's content no longer matches its stored hash (only receipts that carry redactions are touched)",
		Fails:     []string{"RCPT-REDACT-006"},
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-VERIFY-002", "RCPT-FIX-001"},
		Why:       "the edit breaks the hash and the closed redaction object too"},
		rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"redactions":[{`), []byte(`"redactions":[{"note":"edited after sealing",`))
		}))

	wireFault(fault.Fault{Name: "task-receipts-empty",
		Doc:   "a task's receipt list is always empty",
		Fails: []string{"RCPT-RES-002"}},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/receipts") {
				m["data"] = []any{}
			}
		}))

	wireFault(fault.Fault{Name: "unknown-receipt-200",
		Doc:       "an unknown receipt id answers 200 with {}",
		Fails:     []string{"RCPT-RES-003"},
		Tolerated: []string{"RCPT-SHAPE-001", "RCPT-SHAPE-002", "RCPT-VERIFY-001", "RCPT-NEG-001"},
		Why:       "the OpenAPI traffic oracle reads the same {} as a receipt and a verification that lack every required member, and the hostile-input pass sees its hostile receipt ids served (RCPT-NEG-001)"},
		plain(func(next http.Handler) http.Handler {
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
		}))

	wireFault(fault.Fault{Name: "verify-without-checked-at",
		Doc:   "verify answers lack checked_at",
		Fails: []string{"RCPT-VERIFY-001"}},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") {
				delete(m, "checked_at")
			}
		}))

	wireFault(fault.Fault{Name: "outcome-receipt-dangling",
		Doc:   "outcomes name a receipt that does not exist",
		Fails: []string{"RCPT-REF-002"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
		}))

	wireFault(fault.Fault{Name: "task-event-receipt-dangling",
		Doc:   "task events name a receipt that does not exist",
		Fails: []string{"RCPT-REF-003"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "event", func(m map[string]any) {
				if kind, _ := m["event"].(string); strings.HasPrefix(kind, "task.") && m["receipt_id"] != nil {
					m["receipt_id"] = "receipt_dangling"
				}
			})
		}))

	wireFault(fault.Fault{Name: "artifact-receipt-dangling",
		Doc:   "artifacts name a receipt that does not exist",
		Fails: []string{"RCPT-REF-004"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
		}))

	wireFault(fault.Fault{Name: "receipt-duplicate-member",
		Doc:       "served receipts repeat a member (not I-JSON)",
		Fails:     []string{"RCPT-HASH-003"},
		Tolerated: []string{"RCPT-VERIFY-002", "RCPT-FIX-001"},
		Why:       "the suite's verifier refuses it and the target's (reading its own copy) does not, so the two disagree (RCPT-VERIFY-002); every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"},
		rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.ReplaceAll(b, []byte(`"schema":"receipt-2026-04-25"`), []byte(`"schema":"receipt-2026-04-25","schema":"receipt-2026-04-25"`))
		}))

	// The valid direction with the standard request alone.
	wireFault(fault.Fault{Name: "verify-always-invalid",
		Doc:   "the verify API calls genuine receipts invalid",
		Fails: []string{"RCPT-VERIFY-002"}},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") && m["valid"] != nil {
				m["valid"], m["reason"] = false, "the verifier is broken"
			}
		}))

	// The invalid direction, with the standard API.
	wireFault(fault.Fault{Name: "verify-vouches-for-served-edit",
		Doc:       "served receipts are edited (issued_at) and the verify API still vouches for them",
		Fails:     []string{"RCPT-VERIFY-002"},
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-FIX-001"},
		Why:       "the edit is a hash mismatch (and an invalid date) the verifier sees"},
		rewritingRaw(anyReceiptRead, func(b []byte) []byte {
			return bytes.Replace(b, []byte(`"issued_at":"`), []byte(`"issued_at":"1`), -1)
		}))

	// No client can check the signatures (and RCPT-SIGN-001 is unverified,
	// never passed).
	wireFault(fault.Fault{Name: "key-directory-missing",
		Doc:   "receipts are signed but no key directory is advertised or served",
		Warns: []string{"RCPT-SIGN-002"}},
		plain(func(next http.Handler) http.Handler {
			hide := discovery(func(caps map[string]any) { delete(caps, refharness.KeyDirectoryCapability) })(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == refharness.KeyDirectoryPath {
					http.NotFound(w, r)
					return
				}
				hide.ServeHTTP(w, r)
			})
		}))

	// Without the scenario contract the run is two tasks of the target's own
	// agent, and the canary checks skip.
	wireVariant(fault.Variant{Name: "no-scenario-contract",
		Doc:   "discovery does not advertise conform.scenarios",
		Level: "receipts"},
		plain(discovery(func(caps map[string]any) { delete(caps, "conform.scenarios") })))

	// Without the verify extension no tampered copy is sent.
	wireVariant(fault.Variant{Name: "no-verify-extension",
		Doc:   "discovery does not advertise the conform verify extension",
		Level: "receipts"},
		plain(discovery(func(caps map[string]any) { delete(caps, refharness.VerifySubmittedCapability) })))

	// The suite follows the advertisement.
	wireVariant(fault.Variant{Name: "key-directory-elsewhere",
		Doc:   "the key directory is where discovery says it is, and nowhere else",
		Level: "receipts"},
		plain(func(next http.Handler) http.Handler {
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
		}))

	// Signatures are optional and outside the hash: unsigned receipts are as
	// valid as signed ones.
	wireVariant(fault.Variant{Name: "unsigned-receipts",
		Doc:   "receipts are served without their signatures",
		Level: "receipts"},
		rewriting(func(r *http.Request, v any) {
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
		}))

	// Proven by TestReceiptPolicyOptional (cmd/conform): what receipts would
	// show is unverified, and no task fails for having none.
	wireVariant(fault.Variant{Name: "receipt-policy-optional",
		Doc: "the agent card says receipt_policy optional and no receipt is ever issued"},
		rewriting(func(r *http.Request, v any) {
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
		}))

	// Legal, with nothing to look at: what they would show is unverified.
	wireVariant(fault.Variant{Name: "outcomes-without-receipt-id",
		Doc:        "outcomes name no receipt",
		Level:      "receipts",
		Unverified: []string{"RCPT-REF-002"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = nil })
		}))

	wireVariant(fault.Variant{Name: "events-without-receipt-id",
		Doc:        "events name no receipt",
		Level:      "receipts",
		Unverified: []string{"RCPT-REF-003"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "event", func(m map[string]any) { delete(m, "receipt_id") })
		}))

	wireVariant(fault.Variant{Name: "artifacts-without-receipt-id",
		Doc:        "artifacts name no receipt",
		Level:      "receipts",
		Unverified: []string{"RCPT-REF-004"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = nil })
		}))

	// Legal: the protocol does not define what trust_anchor and at_time
	// mean. Without the conform extension the invalid direction cannot be
	// asked for. The variant ignores the members' values, not their shape:
	// a request the OpenAPI document declares invalid is still refused
	// (RCPT-NEG-001), as the Harness refuses it.
	wireVariant(fault.Variant{Name: "verify-ignores-request",
		Doc:        "the verify API ignores the values of trust_anchor and at_time (an invalid request is still refused), and the conform verify extension is not advertised",
		Level:      "receipts",
		Unverified: []string{"RCPT-VERIFY-002"}},
		plain(func(next http.Handler) http.Handler {
			hide := discovery(func(caps map[string]any) { delete(caps, refharness.VerifySubmittedCapability) })(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/verify") && r.Body != nil {
					body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
					if err != nil {
						http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
						return
					}
					// The Harness judges the request as sent; a refusal stands.
					probe := r.Clone(r.Context())
					probe.Body = io.NopCloser(bytes.NewReader(body))
					rec := httptest.NewRecorder()
					hide.ServeHTTP(rec, probe)
					if rec.Code >= 400 {
						maps.Copy(w.Header(), rec.Header())
						w.WriteHeader(rec.Code)
						w.Write(rec.Body.Bytes())
						return
					}
					r = r.Clone(r.Context())
					r.Body = io.NopCloser(strings.NewReader(`{}`))
					r.ContentLength = 2
				}
				hide.ServeHTTP(w, r)
			})
		}))
}
