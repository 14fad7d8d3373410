package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// Receipt faults: each must fail exactly the requirements it names. The
// Tolerated ones observe the same broken receipt from another side: a
// redacted receipt is checked for schema and hash again (RCPT-REDACT-006),
// every receipt the verifier finds anything wrong with also fails the
// umbrella RCPT-FIX-001 (the target's receipts pass the offline
// verification), and the target's verify API, which sees the chain the
// suite cannot, rightly reports the broken link the suite then calls a
// disagreement.
var receiptFaults = []faultCase{
	// A receipt that does not verify is what RCPT-FIX-001 is about.
	{Fault: refharness.FaultReceiptHashCorrupt, Fails: []string{"RCPT-HASH-001", "RCPT-FIX-001"}, Tolerated: []string{"RCPT-REDACT-006"}},
	{Fault: refharness.FaultReceiptChainBroken, Fails: []string{"RCPT-CHAIN-001"}, Tolerated: []string{"RCPT-VERIFY-002"}},
	{Fault: refharness.FaultReceiptWrongKey, Fails: []string{"RCPT-SIGN-001"}, Tolerated: []string{"RCPT-FIX-001"}},
	// Neither documented signing input: accepting either is not accepting anything.
	{Fault: refharness.FaultReceiptSignsDigest, Fails: []string{"RCPT-SIGN-001"}, Tolerated: []string{"RCPT-FIX-001"}},
	{Fault: refharness.FaultReceiptLeaksSecret, Fails: []string{"RCPT-REDACT-001"}, Tolerated: []string{"RCPT-FIX-001"}},
	{Fault: refharness.FaultReceiptRefDropped, Fails: []string{"RCPT-REF-001"}},
	// Caught by the conform extension the harness offers: the standard
	// request cannot tell a verify API that ignores trust_anchor and
	// at_time from one that reads them differently (see
	// receiptUnverifiedRows, verify-ignores-request).
	{Fault: refharness.FaultVerifyAlwaysValid, Fails: []string{"RCPT-VERIFY-002"}},
	{Fault: refharness.FaultReceiptUnknownField, Fails: []string{"RCPT-SHAPE-001"}, Tolerated: []string{"RCPT-REDACT-006", "RCPT-FIX-001"}},
	{Fault: refharness.FaultReceiptEventNoID, Fails: []string{"RCPT-EVENT-002"}},
	{Fault: refharness.FaultReceiptWrongState, Fails: []string{"RCPT-SHAPE-005"}},
	{Fault: refharness.FaultReceiptWrongIDs, Fails: []string{"RCPT-SHAPE-004"}},
	{Fault: refharness.FaultReceiptCostInconsistent, Fails: []string{"RCPT-SHAPE-004"}},
	{Fault: refharness.FaultReceiptDropsArtifacts, Fails: []string{"RCPT-REF-004"}},
	{Fault: refharness.FaultReceiptWrongSubject, Fails: []string{"RCPT-SHAPE-003"}},
	// The schema states the hash pattern too.
	{Fault: refharness.FaultReceiptUpperHash, Fails: []string{"RCPT-HASH-002", "RCPT-SHAPE-001"}, Tolerated: []string{"RCPT-REDACT-006", "RCPT-FIX-001"}},
	{Fault: refharness.FaultEventLeaksSecret, Fails: []string{"RCPT-REDACT-007"}},
	// The self-check key happens to have the sk- shape the secret scan knows.
	{Fault: refharness.FaultReceiptLeaksAPIKey, Fails: []string{"RCPT-REDACT-002"}, Tolerated: []string{"RCPT-REDACT-003", "RCPT-FIX-001"}},
	{Fault: refharness.FaultReceiptLeaksBearer, Fails: []string{"RCPT-REDACT-003"}, Tolerated: []string{"RCPT-FIX-001"}},
	// A receipt whose own id is not the one it is served by cannot be read
	// or verified by that id either.
	{Fault: refharness.FaultReceiptIDMismatch, Fails: []string{"RCPT-SHAPE-006"}, Tolerated: []string{"RCPT-RES-001", "RCPT-VERIFY-001", "RCPT-VERIFY-002"}},
}

func TestReceiptFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range receiptFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			assertFaultCaught(t, tc, "receipts")
		})
	}
}

// Receipt behaviour broken by a middleware in front of the reference
// Harness: surfaces around the receipts (reads, references, the verify
// answer, the bytes on the wire) rather than the receipts it issues.
var receiptWrapFaults = []wrapFault{
	// A reference followed through the wrapper reads no identifiers either.
	{Name: "receipt-in-envelope", Wrap: rewritingRaw(receiptByID, func(b []byte) []byte {
		return append(append([]byte(`{"object":"receipt","format":"receipt-2026-04-25","receipt":`), bytes.TrimSpace(b)...), '}')
	}), Fails: []string{"RCPT-RES-001"}, Tolerated: []string{"RCPT-REF-001", "RCPT-REF-002", "RCPT-REF-003",
		// The OpenAPI traffic oracle reads the same wrapper as a response
		// that is not the receipt-2026-04-25 document.
		"RCPT-SHAPE-001", "RCPT-SHAPE-002"}},
	// Receipts served under another format marker.
	{Name: "receipt-wrong-marker", Wrap: rewritingRaw(anyReceiptRead, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"receipt-2026-04-25"`), []byte(`"receipt-2099-01-01"`))
	}), Fails: []string{"RCPT-SHAPE-002"},
		// Changing sealed bytes breaks the hash, the schema's const and the
		// suite's agreement with the target's verify answer as well.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-VERIFY-002", "RCPT-FIX-001"}},
	// A redacted receipt whose content no longer matches its stored hash:
	// only receipts that carry redactions are touched.
	{Name: "redacted-receipt-unverifiable", Wrap: rewritingRaw(anyReceiptRead, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"redactions":[{`), []byte(`"redactions":[{"note":"edited after sealing",`))
	}), Fails: []string{"RCPT-REDACT-006"},
		// The edit breaks the hash and the closed redaction object too.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-VERIFY-002", "RCPT-FIX-001"}},
	{Name: "task-receipts-empty", Wrap: rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/receipts") {
			m["data"] = []any{}
		}
	}), Fails: []string{"RCPT-RES-002"}},
	{Name: "unknown-receipt-200", Wrap: func(next http.Handler) http.Handler {
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
	}, Fails: []string{"RCPT-RES-003"},
		// The OpenAPI traffic oracle reads the same {} as a receipt and a
		// verification that lack every required member.
		Tolerated: []string{"RCPT-SHAPE-001", "RCPT-SHAPE-002", "RCPT-VERIFY-001"}},
	{Name: "verify-without-checked-at", Wrap: rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") {
			delete(m, "checked_at")
		}
	}), Fails: []string{"RCPT-VERIFY-001"}},
	{Name: "outcome-receipt-dangling", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
	}), Fails: []string{"RCPT-REF-002"}},
	{Name: "task-event-receipt-dangling", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "event", func(m map[string]any) {
			if kind, _ := m["event"].(string); strings.HasPrefix(kind, "task.") && m["receipt_id"] != nil {
				m["receipt_id"] = "receipt_dangling"
			}
		})
	}), Fails: []string{"RCPT-REF-003"}},
	{Name: "artifact-receipt-dangling", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = "receipt_dangling" })
	}), Fails: []string{"RCPT-REF-004"}},
	// Not I-JSON: the suite's verifier refuses it, the target's (reading
	// its own copy) does not.
	{Name: "receipt-duplicate-member", Wrap: rewritingRaw(anyReceiptRead, func(b []byte) []byte {
		return bytes.ReplaceAll(b, []byte(`"schema":"receipt-2026-04-25"`), []byte(`"schema":"receipt-2026-04-25","schema":"receipt-2026-04-25"`))
	}), Fails: []string{"RCPT-HASH-003"}, Tolerated: []string{"RCPT-VERIFY-002", "RCPT-FIX-001"}},
	// The valid direction with the standard request alone: a verify API
	// that calls genuine receipts invalid.
	{Name: "verify-always-invalid", Wrap: rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && strings.HasSuffix(r.URL.Path, "/verify") && m["valid"] != nil {
			m["valid"], m["reason"] = false, "the verifier is broken"
		}
	}), Fails: []string{"RCPT-VERIFY-002"}},
	// A verify API that vouches for what the target serves although the
	// served bytes fail verification: the invalid direction, standard API.
	{Name: "verify-vouches-for-served-edit", Wrap: rewritingRaw(anyReceiptRead, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"issued_at":"`), []byte(`"issued_at":"1`), -1)
	}), Fails: []string{"RCPT-VERIFY-002"},
		// The edit is a hash mismatch (and an invalid date) the verifier sees.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-FIX-001"}},
}

var (
	receiptByID    = regexp.MustCompile(`^/v1/receipts/[^/]+$`)
	anyReceiptRead = regexp.MustCompile(`^/v1/(receipts/[^/]+|tasks/[^/]+/receipts)$`)
)

// rewritingRaw rewrites the raw body of successful GETs whose path matches.
func rewritingRaw(paths *regexp.Regexp, f func([]byte) []byte) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if r.Method == http.MethodGet && rec.Code == http.StatusOK && paths.MatchString(r.URL.Path) {
				body = f(body)
			}
			copyRecorded(w, rec, body)
		})
	}
}

func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(body)
}

func TestReceiptWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range receiptWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertCaught(t, tc.Name, wrappedHarness(t, tc.Wrap), "receipts", tc.Fails, tc.Tolerated)
		})
	}
}

// Faults that break a SHOULD: the suite warns about exactly that
// requirement and fails nothing.
var receiptShouldFaults = []struct {
	Fault refharness.Fault
	Warns string
}{
	{refharness.FaultRedactionWithoutProof, "RCPT-REDACT-005"},
}

func TestReceiptShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range receiptShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			url := harness(t, refharness.Options{Faults: refharness.Faults{tc.Fault: true}})
			assertWarnsOnly(t, "fault "+string(tc.Fault), url, "receipts", tc.Warns)
		})
	}
}

// The harness's legal-but-unusual behaviours (extra fields, reordered keys,
// SSE spellings…) must leave the Receipts level clean: receipts are served
// as issued, so none of them may disturb a hash.
func TestReceiptVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, v := range refharness.AllVariants() {
		t.Run(string(v), func(t *testing.T) {
			t.Parallel()
			assertVariantPasses(t, v, "receipts")
		})
	}
}

// Every receipt fault of the reference Harness has a row here.
func TestEveryReceiptFaultHasARow(t *testing.T) {
	rows := map[refharness.Fault]bool{}
	for _, tc := range receiptFaults {
		rows[tc.Fault] = true
	}
	for _, tc := range receiptShouldFaults {
		rows[tc.Fault] = true
	}
	for _, f := range refharness.AllFaults() {
		if receiptFault(f) && !rows[f] {
			t.Errorf("receipt fault %s has no row in faults_receipts_test.go", f)
		}
	}
}

func receiptFault(f refharness.Fault) bool {
	switch f {
	case refharness.FaultReceiptHashCorrupt, refharness.FaultReceiptChainBroken, refharness.FaultReceiptWrongKey,
		refharness.FaultReceiptLeaksSecret, refharness.FaultReceiptRefDropped, refharness.FaultVerifyAlwaysValid,
		refharness.FaultReceiptUnknownField, refharness.FaultRedactionWithoutProof, refharness.FaultReceiptEventNoID,
		refharness.FaultReceiptWrongState, refharness.FaultReceiptWrongIDs, refharness.FaultReceiptWrongSubject,
		refharness.FaultReceiptUpperHash, refharness.FaultEventLeaksSecret, refharness.FaultReceiptLeaksAPIKey,
		refharness.FaultReceiptIDMismatch, refharness.FaultReceiptLeaksBearer,
		refharness.FaultReceiptCostInconsistent, refharness.FaultReceiptDropsArtifacts, refharness.FaultReceiptSignsDigest:
		return true
	}
	return false
}

// Legal receipt behaviour the reference Harness has no variant for, put in
// front of it by a middleware: the Receipts level must stay clean.
var receiptWrapVariants = []struct {
	Name string
	Wrap func(http.Handler) http.Handler
}{
	// Without the scenario contract the run is two tasks of the target's own
	// agent, and the canary checks skip.
	{"no-scenario-contract", rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
			delete(m["capabilities"].(map[string]any), "conform.scenarios")
		}
	})},
	// Without the verify extension no tampered copy is sent.
	{"no-verify-extension", rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
			delete(m["capabilities"].(map[string]any), refharness.VerifySubmittedCapability)
		}
	})},
	// The key directory where discovery says it is, and nowhere else: the
	// suite follows the advertisement.
	{"key-directory-elsewhere", func(next http.Handler) http.Handler {
		moved := rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
				m["capabilities"].(map[string]any)[refharness.KeyDirectoryCapability] = "/v1/conform-keys/current"
			}
		})(next)
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
	}},
	// Signatures are optional and outside the hash: unsigned receipts are
	// as valid as signed ones.
	{"unsigned-receipts", rewriting(func(r *http.Request, v any) {
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
	})},
}

func TestReceiptWrappedVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, tc := range receiptWrapVariants {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertClean(t, tc.Name, wrappedHarness(t, tc.Wrap), "receipts")
		})
	}
}

// Receipt SHOULDs broken from outside: each earns a warning for exactly its
// requirement and fails nothing.
var receiptWrapShouldFaults = []struct {
	Name  string
	Wrap  func(http.Handler) http.Handler
	Warns string
}{
	// Signed receipts and no key directory anywhere: no client can check
	// the signatures (and RCPT-SIGN-001 is unverified, never passed).
	{"key-directory-missing", func(next http.Handler) http.Handler {
		hide := rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
				delete(m["capabilities"].(map[string]any), refharness.KeyDirectoryCapability)
			}
		})(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == refharness.KeyDirectoryPath {
				http.NotFound(w, r)
				return
			}
			hide.ServeHTTP(w, r)
		})
	}, "RCPT-SIGN-002"},
}

func TestReceiptWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	for _, tc := range receiptWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			assertWarnsOnly(t, tc.Name, wrappedHarness(t, tc.Wrap), "receipts", tc.Warns)
		})
	}
}

// Nothing to look at is never a pass: with these legal targets (or a
// legal behaviour put in front of the reference Harness), the named
// requirements are unverified — the level partial, with a remedy — and
// nothing fails.
var receiptUnverifiedRows = []struct {
	Name       string
	Wrap       func(http.Handler) http.Handler
	Variants   refharness.Variants
	Unverified []string
}{
	{Name: "outcomes-without-receipt-id", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "outcome", func(m map[string]any) { m["receipt_id"] = nil })
	}), Unverified: []string{"RCPT-REF-002"}},
	{Name: "events-without-receipt-id", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "event", func(m map[string]any) { delete(m, "receipt_id") })
	}), Unverified: []string{"RCPT-REF-003"}},
	{Name: "artifacts-without-receipt-id", Wrap: rewriting(func(_ *http.Request, v any) {
		eachObject(v, "artifact", func(m map[string]any) { m["receipt_id"] = nil })
	}), Unverified: []string{"RCPT-REF-004"}},
	// A verify API that ignores trust_anchor and at_time (legal: the
	// protocol does not define them), without the conform extension: the
	// invalid direction cannot be asked for, so it is not verified.
	{Name: "verify-ignores-request", Wrap: func(next http.Handler) http.Handler {
		hide := rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
				delete(m["capabilities"].(map[string]any), refharness.VerifySubmittedCapability)
			}
		})(next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/verify") && r.Body != nil {
				r = r.Clone(r.Context())
				r.Body = io.NopCloser(strings.NewReader(`{}`))
				r.ContentLength = 2
			}
			hide.ServeHTTP(w, r)
		})
	}, Unverified: []string{"RCPT-VERIFY-002"}},
	// Replay advertised: the Replay suite that would drive a replay
	// receipt does not exist yet.
	{Name: "advertises-replay", Wrap: rewriting(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
			m["capabilities"].(map[string]any)["replay"] = true
		}
	}), Unverified: []string{"RCPT-DELTA-001"}},
	// Without the hook: no canary secret, no failed or canceled task, no
	// artifact.
	{Name: "no-scenario-hook", Variants: refharness.Variants{refharness.VariantNoScenarioHook: true},
		Unverified: []string{"RCPT-REDACT-001", "RCPT-REDACT-005", "RCPT-REDACT-006", "RCPT-REDACT-007", "RCPT-REF-004", "RCPT-SHAPE-005", "RCPT-SHAPE-008"}},
}

func TestReceiptNothingToCheckIsUnverified(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per row")
	}
	for _, tc := range receiptUnverifiedRows {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			var url string
			if tc.Wrap != nil {
				url = wrappedHarness(t, tc.Wrap)
			} else {
				url = harness(t, refharness.Options{Variants: tc.Variants})
			}
			_, r := runProof(t, tc.Name, url, "receipts")
			unverified := verdicts(r, reports.Unverified)
			for _, id := range tc.Unverified {
				if !slices.Contains(unverified, id) {
					t.Errorf("%s: %s is not unverified (unverified: %v):%s", tc.Name, id, unverified, messages(r, []string{id}))
				}
			}
			if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
				t.Errorf("%s is legal but the suite reports %v:%s", tc.Name, bad, messages(r, bad))
			}
			for _, q := range r.Requirements {
				if slices.Contains(tc.Unverified, q.ID) && q.Remedy == "" {
					t.Errorf("%s: %s is unverified without a remedy (%s)", tc.Name, q.ID, q.Message)
				}
			}
			if lv := receiptsLevel(r); lv.Status != reports.Partial {
				t.Errorf("%s: receipts level is %s (%s), want partial", tc.Name, lv.Status, lv.Why)
			}
		})
	}
}

// The two legal signing choices a target makes: signatures over the
// canonical bytes instead of the hash string, and none at all. Both leave
// Receipts conformant with no warning, and the report says which profile
// a signing target uses.
func TestReceiptSigningVariantsConformant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	for _, tc := range []struct {
		variant refharness.Variant
		note    string // a note the report must carry ("" for none about signing)
	}{
		{refharness.VariantReceiptSignCanonical, `verify over "canonical"`},
		{refharness.VariantReceiptUnsigned, ""},
		{"", `verify over "hash"`},
	} {
		t.Run("variant "+string(tc.variant), func(t *testing.T) {
			t.Parallel()
			url := harness(t, refharness.Options{Variants: refharness.Variants{tc.variant: true}})
			code, r := runProof(t, string(tc.variant), url, "receipts")
			if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
				t.Errorf("the suite reports %v:%s", bad, messages(r, bad))
			}
			if lv := receiptsLevel(r); lv.Status != reports.Conformant || code != 0 {
				t.Errorf("receipts level %s (%s), exit %d; want conformant, 0", lv.Status, lv.Why, code)
			}
			var signingNote string
			for _, n := range r.Notes {
				if strings.Contains(n, "signing profile") {
					signingNote = n
				}
			}
			if tc.note != "" && !strings.Contains(signingNote, tc.note) {
				t.Errorf("signing note %q, want one saying %q", signingNote, tc.note)
			}
			for _, q := range r.Requirements {
				if q.ID == "RCPT-SIGN-001" {
					want := reports.Pass
					if tc.variant == refharness.VariantReceiptUnsigned {
						want = reports.Skip // not applicable: signatures are optional
					}
					if q.Verdict != want {
						t.Errorf("RCPT-SIGN-001 is %s (%s), want %s", q.Verdict, q.Message, want)
					}
				}
			}
		})
	}
}

func receiptsLevel(r *reports.Report) reports.LevelResult {
	for _, l := range r.Levels {
		if l.Level == "receipts" {
			return l
		}
	}
	return reports.LevelResult{}
}

// A target whose agent card says receipt_policy "optional" and that issues
// no receipt: a task without one fails neither RCPT-RES-002 nor
// RCPT-REF-001 (not applicable), and what receipts would show is
// unverified, never passed (docs/interpretations.md#receipt-per-task).
func TestReceiptPolicyOptional(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite")
	}
	noReceipts := func(next http.Handler) http.Handler {
		return rewriting(func(r *http.Request, v any) {
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
		})(next)
	}
	_, r := runProof(t, "receipt policy optional", wrappedHarness(t, noReceipts), "receipts")
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("a target with receipt_policy optional and no receipts gets %v:%s", bad, messages(r, bad))
	}
	for _, q := range r.Requirements {
		switch q.ID {
		case "RCPT-REF-001":
			// Its spec has no receipt to follow at all: not passed.
			if q.Verdict != reports.Skip && q.Verdict != reports.Unverified {
				t.Errorf("%s = %s (%s), want skip or unverified", q.ID, q.Verdict, q.Message)
			}
		case "RCPT-RES-002":
			if q.Verdict != reports.Skip {
				t.Errorf("%s = %s (%s, %+v), want skip (not applicable under receipt_policy optional)", q.ID, q.Verdict, q.Message, q.Evidence)
			}
		case "RCPT-SHAPE-001", "RCPT-HASH-001", "RCPT-FIX-001", "RCPT-VERIFY-001":
			if q.Verdict == reports.Pass {
				t.Errorf("%s passed with no receipt to look at", q.ID)
			}
		}
	}
}
