// Package receipts holds the Receipts conformance level's specs: receipt
// resources of finished tasks and their references, the hash, chain and
// signatures recomputed by the suite's own verifier (internal/receipt), the
// verify API checked against that verifier, redaction with a canary secret,
// and the receipt fixture corpus (offline, whatever level is selected).
// docs/receipts.md ("Suite") says what each spec can and cannot see.
package receipts
