package main

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// Receipt faults: each must fail exactly the requirements it names. The
// Tolerated ones observe the same broken receipt from another side: a
// redacted receipt is checked for schema and hash again (RCPT-REDACT-006),
// and the target's verify API, which sees the chain the suite cannot,
// rightly reports the broken link the suite then calls a disagreement.
var receiptFaults = []faultCase{
	{Fault: refharness.FaultReceiptHashCorrupt, Fails: []string{"RCPT-HASH-001"}, Tolerated: []string{"RCPT-REDACT-006"}},
	{Fault: refharness.FaultReceiptChainBroken, Fails: []string{"RCPT-CHAIN-001"}, Tolerated: []string{"RCPT-VERIFY-002"}},
	{Fault: refharness.FaultReceiptWrongKey, Fails: []string{"RCPT-SIGN-001"}},
	{Fault: refharness.FaultReceiptLeaksSecret, Fails: []string{"RCPT-REDACT-001"}},
	{Fault: refharness.FaultReceiptRefDropped, Fails: []string{"RCPT-REF-001"}},
	{Fault: refharness.FaultVerifyAlwaysValid, Fails: []string{"RCPT-VERIFY-002"}},
	{Fault: refharness.FaultReceiptUnknownField, Fails: []string{"RCPT-SHAPE-001"}, Tolerated: []string{"RCPT-REDACT-006"}},
	{Fault: refharness.FaultReceiptEventNoID, Fails: []string{"RCPT-EVENT-002"}},
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
		refharness.FaultReceiptUnknownField, refharness.FaultRedactionWithoutProof, refharness.FaultReceiptEventNoID:
		return true
	}
	return false
}
