package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// The Receipts fault rows, derived from the declarations of the reference
// Harness's faults (refharness/receipts*.go, in-server; wrapfault's
// receipts.go, on the wire): each must fail exactly its requirements,
// plus the tolerated ones, which observe the same broken receipt from
// another side; each that breaks a SHOULD must warn and fail nothing.
func TestReceiptFaultsCaught(t *testing.T)         { runPool(t) }
func TestReceiptHooklessFaultsCaught(t *testing.T) { runPool(t) }
func TestReceiptShouldFaultsWarn(t *testing.T)     { runPool(t) }

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

// Nothing to look at is never a pass: with these legal targets (the
// Receipts level's wire variants that declare what they leave unverified,
// and the Harness without its scenario hook), the named requirements are
// unverified — the level partial, with a remedy — and nothing fails.
var receiptUnverifiedRows = unverifiedRows("receipts",
	// Without the hook: no canary secret and no failed task (the agent
	// answers an empty prompt), so no receipt of each end. The agent keeps
	// its reply as an artifact, so RCPT-REF-004 is checked on it. (The same
	// run as TestReceiptVariantsPass/no-scenario-hook.)
	unverifiedRow{Name: "no-scenario-hook", Target: variantSpec(refharness.VariantNoScenarioHook),
		Unverified: []string{"RCPT-DELTA-001", "RCPT-REDACT-001", "RCPT-REDACT-005", "RCPT-REDACT-006", "RCPT-REDACT-007", "RCPT-SHAPE-005", "RCPT-SHAPE-008"}})

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
