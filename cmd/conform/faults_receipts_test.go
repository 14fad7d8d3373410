package main

import (
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
	// A replay receipt whose hash leaves its deltas out.
	{Fault: refharness.FaultReplayDeltasUnhashed, Fails: []string{"RCPT-DELTA-001"}},
	{Fault: refharness.FaultReceiptIDMismatch, Fails: []string{"RCPT-SHAPE-006"}, Tolerated: []string{"RCPT-RES-001", "RCPT-VERIFY-001", "RCPT-VERIFY-002"}},
}

// receiptHooklessFaults are caught on a target without the hook whose
// agent takes a second over a plain task (noHookSlow): the run's receipts
// are of the target's own tasks, one canceled while it ran, one failed,
// and its artifact is the one the agent keeps.
var receiptHooklessFaults = []faultCase{
	{Fault: refharness.FaultReceiptWrongState, Fails: []string{"RCPT-SHAPE-005"}},
	{Fault: refharness.FaultReceiptDropsArtifacts, Fails: []string{"RCPT-REF-004"}},
}

func TestReceiptHooklessFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptHooklessFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "receipts-hookless-slow", tc)
		})
	}
}

func TestReceiptFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "receipts", tc)
		})
	}
}

// Receipt behaviour broken by a middleware in front of the reference
// Harness: surfaces around the receipts (reads, references, the verify
// answer, the bytes on the wire) rather than the receipts it issues.
var receiptWrapFaults = []wrapFault{
	// A reference followed through the wrapper reads no identifiers either.
	{Name: "receipt-in-envelope", Fails: []string{"RCPT-RES-001"}, Tolerated: []string{"RCPT-REF-001", "RCPT-REF-002", "RCPT-REF-003",
		// The OpenAPI traffic oracle reads the same wrapper as a response
		// that is not the receipt-2026-04-25 document.
		"RCPT-SHAPE-001", "RCPT-SHAPE-002"}},
	// Receipts served under another format marker.
	{Name: "receipt-wrong-marker", Fails: []string{"RCPT-SHAPE-002"},
		// Changing sealed bytes breaks the hash, the schema's const and the
		// suite's agreement with the target's verify answer as well.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-VERIFY-002", "RCPT-FIX-001"}},
	// A redacted receipt whose content no longer matches its stored hash:
	// only receipts that carry redactions are touched.
	{Name: "redacted-receipt-unverifiable", Fails: []string{"RCPT-REDACT-006"},
		// The edit breaks the hash and the closed redaction object too.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-VERIFY-002", "RCPT-FIX-001"}},
	{Name: "task-receipts-empty", Fails: []string{"RCPT-RES-002"}},
	{Name: "unknown-receipt-200", Fails: []string{"RCPT-RES-003"},
		// The OpenAPI traffic oracle reads the same {} as a receipt and a
		// verification that lack every required member.
		Tolerated: []string{"RCPT-SHAPE-001", "RCPT-SHAPE-002", "RCPT-VERIFY-001"}},
	{Name: "verify-without-checked-at", Fails: []string{"RCPT-VERIFY-001"}},
	{Name: "outcome-receipt-dangling", Fails: []string{"RCPT-REF-002"}},
	{Name: "task-event-receipt-dangling", Fails: []string{"RCPT-REF-003"}},
	{Name: "artifact-receipt-dangling", Fails: []string{"RCPT-REF-004"}},
	// Not I-JSON: the suite's verifier refuses it, the target's (reading
	// its own copy) does not.
	{Name: "receipt-duplicate-member", Fails: []string{"RCPT-HASH-003"}, Tolerated: []string{"RCPT-VERIFY-002", "RCPT-FIX-001"}},
	// The valid direction with the standard request alone: a verify API
	// that calls genuine receipts invalid.
	{Name: "verify-always-invalid", Fails: []string{"RCPT-VERIFY-002"}},
	// A verify API that vouches for what the target serves although the
	// served bytes fail verification: the invalid direction, standard API.
	{Name: "verify-vouches-for-served-edit", Fails: []string{"RCPT-VERIFY-002"},
		// The edit is a hash mismatch (and an invalid date) the verifier sees.
		Tolerated: []string{"RCPT-HASH-001", "RCPT-SHAPE-001", "RCPT-REDACT-006", "RCPT-FIX-001"}},
}

func TestReceiptWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "receipts", tc)
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
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertShouldRow(t, "receipts-should", tc)
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
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range refharness.AllVariants() {
		t.Run(string(v), func(t *testing.T) {
			assertVariantPasses(t, v, "receipts")
		})
	}
}

// Legal receipt behaviour the reference Harness has no variant for, put in
// front of it by a middleware (package wrapfault, by name): the Receipts
// level must stay clean.
var receiptWrapVariants = []string{
	// Without the scenario contract the run is the target's own agent's
	// tasks (a plain one, one canceled at once, an empty prompt), and the
	// canary checks skip.
	"no-scenario-contract",
	// Without the verify extension no tampered copy is sent.
	"no-verify-extension",
	// The key directory where discovery says it is, and nowhere else: the
	// suite follows the advertisement.
	"key-directory-elsewhere",
	// Signatures are optional and outside the hash: unsigned receipts are
	// as valid as signed ones.
	"unsigned-receipts",
}

func TestReceiptWrappedVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, name := range receiptWrapVariants {
		t.Run(name, func(t *testing.T) {
			assertClean(t, name, wrapped(name), "receipts")
		})
	}
}

// Receipt SHOULDs broken from outside (package wrapfault, by name): each
// earns a warning for exactly its requirement and fails nothing.
var receiptWrapShouldFaults = []struct {
	Name  string
	Warns string
}{
	// Signed receipts and no key directory anywhere: no client can check
	// the signatures (and RCPT-SIGN-001 is unverified, never passed).
	{"key-directory-missing", "RCPT-SIGN-002"},
}

func TestReceiptWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapShouldRow(t, "receipts-should", tc)
		})
	}
}

// Nothing to look at is never a pass: with these legal targets (or a
// legal behaviour put in front of the reference Harness), the named
// requirements are unverified — the level partial, with a remedy — and
// nothing fails.
var receiptUnverifiedRows = []struct {
	Name       string
	Target     targetSpec
	Unverified []string
}{
	{Name: "outcomes-without-receipt-id", Target: wrapped("outcomes-without-receipt-id"), Unverified: []string{"RCPT-REF-002"}},
	{Name: "events-without-receipt-id", Target: wrapped("events-without-receipt-id"), Unverified: []string{"RCPT-REF-003"}},
	{Name: "artifacts-without-receipt-id", Target: wrapped("artifacts-without-receipt-id"), Unverified: []string{"RCPT-REF-004"}},
	// A verify API that ignores trust_anchor and at_time (legal: the
	// protocol does not define them), without the conform extension: the
	// invalid direction cannot be asked for, so it is not verified.
	{Name: "verify-ignores-request", Target: wrapped("verify-ignores-request"), Unverified: []string{"RCPT-VERIFY-002"}},
	// Without the hook: no canary secret and no failed task (the agent
	// answers an empty prompt), so no receipt of each end. The agent keeps
	// its reply as an artifact, so RCPT-REF-004 is checked on it. (The same
	// run as TestReceiptVariantsPass/no-scenario-hook.)
	{Name: "no-scenario-hook", Target: targetSpec{Variants: []refharness.Variant{refharness.VariantNoScenarioHook}},
		Unverified: []string{"RCPT-DELTA-001", "RCPT-REDACT-001", "RCPT-REDACT-005", "RCPT-REDACT-006", "RCPT-REDACT-007", "RCPT-SHAPE-005", "RCPT-SHAPE-008"}},
}

func TestReceiptNothingToCheckIsUnverified(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per row")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range receiptUnverifiedRows {
		t.Run(tc.Name, func(t *testing.T) {
			_, r, _ := proof(t, tc.Name, tc.Target, "receipts")
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
// receiptSigningVariants are the signing choices, with the note the report
// must carry for each ("" for none about signing); "" is the plain harness.
var receiptSigningVariants = []refharness.Variant{refharness.VariantReceiptSignCanonical, refharness.VariantReceiptUnsigned, ""}

func TestReceiptSigningVariantsConformant(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	notes := map[refharness.Variant]string{
		refharness.VariantReceiptSignCanonical: `verify over "canonical"`,
		refharness.VariantReceiptUnsigned:      "",
		"":                                     `verify over "hash"`,
	}
	for _, v := range receiptSigningVariants {
		tc := struct {
			variant refharness.Variant
			note    string
		}{v, notes[v]}
		t.Run("variant "+string(tc.variant), func(t *testing.T) {
			// The signing variants' runs are those of TestReceiptVariantsPass.
			code, r, _ := proof(t, string(tc.variant), variantSpec(tc.variant), "receipts")
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
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	_, r, _ := proof(t, "receipt policy optional", wrapped("receipt-policy-optional"), "receipts")
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
