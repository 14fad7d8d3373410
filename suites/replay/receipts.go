package replay

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	fixture "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/suite"
)

// Replay receipt deltas (RPLY-DELTA-001..006; spec 002, "Receipt deltas";
// docs/replay.md, "The receipt"): the receipt of the fixture's completed
// with_overrides replay has one delta per applied override, each naming
// its key and the original event or material path, the before and after
// hashes (after = the request's sha256) and the caller's reason; no
// receipt of the fixture's replays holds a secret — neither the canary the
// source run's secret_read step read nor the override's receipt_only
// secret — and the secret override's delta records a hash or an artifact
// reference instead. Every Replay server owes the deltas ("Applied
// substitutions MUST be recorded as Receipt deltas"), whether or not it
// claims the Receipts level: the receipt is read whatever discovery says,
// and a target that serves none leaves the deltas unverified with a
// remedy, never not applicable (docs/interpretations.md#replay-only-deltas).
// The checks are internal/replaydet's.

// remedyReplayReceipt is how a Replay server lets a replay be audited at
// all: its receipt is read whatever discovery claims (RPLY-DELTA-006).
const remedyReplayReceipt = "serve every replay task's receipt (receipt_id on the task, GET /v1/tasks/{id}/receipts), whether or not the target claims the Receipts level: Replay audits what a replay recorded by its receipt (docs/interpretations.md#replay-only-deltas)"

// remedyDeltas is how a Replay server lets its substitutions be audited.
const remedyDeltas = "record every applied override as a Receipt delta and serve the replay task's receipt (receipt_id on the task, GET /v1/tasks/{id}/receipts), whether or not the target claims the Receipts level: Replay requires the deltas (docs/interpretations.md#replay-only-deltas)"

var _ = Describe("Replay receipt deltas", func() {
	It("records one delta per applied override, with key, event or path, hashes and reason, and no secret", suite.Req("RPLY-DELTA-001", "RPLY-DELTA-002", "RPLY-DELTA-003", "RPLY-DELTA-004", "RPLY-DELTA-005"), func(ctx SpecContext) {
		r := theFixture(ctx)
		o := r.completedReplay()
		raw := o.receipt
		if raw == nil {
			suite.Unverified(o.noReceipt, remedyDeltas)
		}
		d, err := check.DecodeReceipt(raw)
		if err != nil {
			suite.Unverified(fmt.Sprintf("the receipt of %s is no JSON object (the Receipts level judges that): %v", o.what, err), "issue receipts that are JSON objects (RCPT-SHAPE-001)")
		}
		for _, c := range deltaChecks(raw, d, r.expect()) {
			suite.Check(c.req, c.err)
		}
		// The exact replay applied no override: no delta, no secret. The
		// requirements were judged on the override receipt above; the exact
		// one adds findings when there is one to read, and says why not.
		switch {
		case !r.exact.completed():
			suite.Note(fmt.Sprintf("replay deltas: the receipt of %s was not checked: %s (RPLY-DET-001 and the mode specs judge that)", r.exact.what, r.exact.ended()))
		case r.exact.receipt == nil:
			suite.Note(fmt.Sprintf("replay deltas: %s has no receipt to check: %s", r.exact.what, r.exact.noReceipt))
		default:
			ed, err := check.DecodeReceipt(r.exact.receipt)
			if err != nil {
				// Not a JSON object (RCPT-SHAPE-001's finding): its bytes
				// are still searched for the secrets.
				suite.Check("RPLY-DELTA-005", replaydet.NoSecrets(r.exact.receipt, nil, replaydet.Expect{Sources: r.sources}, fxSecrets))
				suite.Note(fmt.Sprintf("replay deltas: the receipt of %s is no JSON object, so only its bytes were searched for secrets: %v", r.exact.what, err))
				break
			}
			for _, c := range deltaChecks(r.exact.receipt, ed, replaydet.Expect{Sources: r.sources}) {
				if c.err != nil {
					suite.Check(c.req, fmt.Errorf("the receipt of %s: %w", r.exact.what, c.err))
				}
			}
		}
	})
})

var _ = Describe("Replay receipts and hidden reasoning", func() {
	It("keeps the source run's hidden reasoning out of the replay's receipt", suite.Req("RPLY-DELTA-006"), func(ctx SpecContext) {
		needReplay()
		needHook("a source task that reasons")
		// The agent thinks a canary (the reason step: hidden reasoning no
		// receipt may reveal), then answers; the exact replay's receipt is
		// searched for the canary.
		thought := "conform hidden reasoning " + suite.Key("thought")
		src := submitSource(ctx, "", []any{
			map[string]any{"op": "reason", "text": thought, "summary": "weighed the options"},
			map[string]any{"op": "model_call", "call_id": "main:1", "response": llmResponse("conform answer after reasoning")},
			map[string]any{"op": "complete"},
		}, "conform replay: a source that reasons")
		r := mustReplay(ctx, src.id, map[string]any{"mode": "exact"}, "the exact replay of a source that reasoned")
		rp := &fxReplay{what: "the exact replay of a source that reasoned", id: r.id, task: r.task, status: r.status}
		tgt.readReceipt(ctx, rp)
		if rp.receipt == nil {
			suite.Unverified(rp.noReceipt, remedyReplayReceipt)
		}
		suite.Check("RPLY-DELTA-006", check.NoReasoning(fmt.Sprintf("the receipt of replay task %s (an exact replay of %s)", r.id, src.id), rp.receipt, thought))
	})
})

// deltaCheck is one delta requirement's finding on one receipt.
type deltaCheck struct {
	req string
	err error
}

// fxSecrets are the fixture's secrets, by the names findings use (never
// their values).
var fxSecrets = map[string]string{
	"the source run's secret (fixtures/replay.SecretRecorded)": fixture.SecretRecorded,
	"the override's secret (fixtures/replay.SecretOverride)":   fixture.SecretOverride,
}

// deltaChecks runs the five delta checks on one receipt.
func deltaChecks(raw []byte, d check.ReceiptDoc, e replaydet.Expect) []deltaCheck {
	doc := map[string]any(d)
	where := func(err error) error {
		if err == nil {
			return nil
		}
		return fmt.Errorf("%s: %w", d.Label(), err)
	}
	return []deltaCheck{
		{"RPLY-DELTA-001", where(replaydet.DeltaPerOverride(doc, e))},
		{"RPLY-DELTA-002", where(replaydet.DeltaNames(doc, e))},
		{"RPLY-DELTA-003", where(replaydet.DeltaHashes(doc, e))},
		{"RPLY-DELTA-004", where(replaydet.DeltaReasons(doc, e))},
		{"RPLY-DELTA-005", where(replaydet.NoSecrets(raw, doc, e, fxSecrets))},
	}
}
