package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	fixture "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// Determinism (RPLY-DET-001, RPLY-DET-002; docs/replay.md, "Determinism"):
// the fixture's with_overrides request is accepted and its replay
// completes; the replay's receipt, projected to what the replay's inputs
// decide (internal/replaydet) and canonicalized (RFC 8785), equals byte for
// byte (a) the fixture's expected receipt, (b) the receipt of a second
// replay of the same source with the same overrides, and (c) the receipt
// the reference Harness issues for the same scenario and request, started
// in this process. Each mismatch shows both canonical byte strings.

var _ = Describe("Replay determinism fixture", func() {
	It("runs the fixture's source task, accepts its with_overrides request and completes the replay", suite.Req("RPLY-DET-001"), func(ctx SpecContext) {
		r := theFixture(ctx)
		r.usable()
		for _, o := range r.overrides {
			if !o.completed() {
				suite.Check("RPLY-DET-001", fmt.Errorf("%s; want the request accepted (2xx with a replay Task) and the replay task COMPLETED", o.ended()))
			}
		}
	})

	It("issues the fixture's expected receipts (canonical projection, RFC 8785)", suite.Req("RPLY-DET-002"), func(ctx SpecContext) {
		needReceipts()
		r := theFixture(ctx)
		r.completedReplay()
		m, src := r.manifest, fixtureSources(r.manifest)
		compared := 0
		for _, c := range m.Receipts {
			rp, e := r.overrides[0], r.expect()
			if c.Request == m.Scenario.ExactRequest {
				rp, e = r.exact, replaydet.Expect{Sources: r.sources}
			}
			target := receiptOf(rp, "RPLY-DET-002")
			if target == nil || blockedByDeltas(rp, target, e) {
				continue
			}
			want, err := fixture.Read(c.Path)
			if err != nil {
				Fail("fixtures/replay: " + err.Error())
			}
			fp, err := replaydet.Project(want, src)
			if err != nil {
				Fail("fixtures/replay: " + err.Error())
			}
			compared++
			suite.Check("RPLY-DET-002", compare(sideOf(r, rp, target), replaydet.Side{Name: "the fixture's expected receipt " + c.Path, P: fp}))
		}
		if compared == 0 {
			suite.NothingToCheck("RPLY-DET-002", "no receipt of the target's fixture replays could be compared with the fixture's", remedyFxReceipt)
		}
	})

	It("issues the same receipt for two replays of one source with the same overrides", suite.Req("RPLY-DET-002"), func(ctx SpecContext) {
		needReceipts()
		r := theFixture(ctx)
		r.completedReplay()
		a, b := r.overrides[0], r.overrides[1]
		if !b.completed() {
			suite.Unverified("the second replay did not complete: "+b.ended(), remedyFxDet001)
		}
		ra, rb := receiptOf(a, "RPLY-DET-002"), receiptOf(b, "RPLY-DET-002")
		if ra == nil || rb == nil {
			return
		}
		suite.Check("RPLY-DET-002", compare(sideOf(r, a, ra), sideOf(r, b, rb)))
	})

	It("issues the receipt the reference Harness issues for the same scenario and overrides", suite.Req("RPLY-DET-002"), func(ctx SpecContext) {
		needReceipts()
		r := theFixture(ctx)
		r.completedReplay()
		ref := startReference(ctx)
		if ref.skip != "" {
			suite.Unverified("the reference Harness could not run the fixture: "+ref.skip, remedyFxReference)
		}
		pairs := []struct{ target, ref *fxReplay }{{r.overrides[0], ref.overrides[0]}, {r.exact, ref.exact}}
		compared := 0
		for i, p := range pairs {
			if !p.ref.completed() || p.ref.receipt == nil {
				suite.Unverified(fmt.Sprintf("the reference Harness: %s (%s)", p.ref.ended(), p.ref.noReceipt), remedyFxReference)
			}
			if !p.target.completed() {
				continue // the exact replay's completion is RPLY-MODE-002's to judge
			}
			e := r.expect()
			if i == 1 {
				e = replaydet.Expect{Sources: r.sources}
			}
			target := receiptOf(p.target, "RPLY-DET-002")
			if target == nil || blockedByDeltas(p.target, target, e) {
				continue
			}
			compared++
			suite.Check("RPLY-DET-002", compare(sideOf(r, p.target, target), sideOf(ref, p.ref, p.ref.receipt)))
		}
		if compared == 0 {
			suite.NothingToCheck("RPLY-DET-002", "no receipt of the target's fixture replays could be compared with the reference Harness's", remedyFxReceipt)
		}
	})
})

// needReceipts ends a spec that judges replay receipts on a target that
// issues none: by its own claims the receipt requirements do not apply
// (RPLY-LEVEL-001 warns about the pairing).
func needReceipts() {
	GinkgoHelper()
	if !suite.Env().Discovery.Claims(requirements.Receipts) {
		suite.NotApplicable("the target does not advertise receipts (capabilities.receipts), so its replays issue no receipts to judge")
	}
}

// receiptOf returns a finished replay's receipt, or records that req had
// none to look at.
func receiptOf(rp *fxReplay, req string) []byte {
	if rp.receipt == nil {
		suite.NothingToCheck(req, rp.noReceipt, remedyFxReceipt)
	}
	return rp.receipt
}

// blockedByDeltas reports whether the receipt breaks a delta requirement:
// its projection then differs from any other for a reason RPLY-DELTA-00x
// reports (the delta spec), so RPLY-DET-002 records that it was not judged
// on it rather than fail twice for one fault.
func blockedByDeltas(rp *fxReplay, raw []byte, e replaydet.Expect) bool {
	probs := deltaProblems(raw, e)
	if len(probs) == 0 {
		return false
	}
	suite.NothingToCheck("RPLY-DET-002", fmt.Sprintf("not compared: the receipt of %s breaks %s (reported by the replay receipt delta spec)", rp.what, strings.Join(probs, ", ")),
		"fix the replay receipt's deltas first (RPLY-DELTA-001..005)")
	return true
}

// deltaProblems lists the delta requirements a receipt breaks.
func deltaProblems(raw []byte, e replaydet.Expect) []string {
	d, err := check.DecodeReceipt(raw)
	if err != nil {
		return []string{"RPLY-DELTA-001"} // no object: nothing of it holds
	}
	var out []string
	for _, c := range deltaChecks(raw, d, e) {
		if c.err != nil {
			out = append(out, c.req)
		}
	}
	return out
}

// sideOf is the projection of a replay's receipt on the Harness of r. A
// receipt that cannot be projected (not canonicalizable JSON) is Receipts'
// finding; here it is compared as nothing.
func sideOf(r *fixtureRun, rp *fxReplay, raw []byte) replaydet.Side {
	name := fmt.Sprintf("%s's receipt of %s", r.h.name, rp.what)
	if d, err := check.DecodeReceipt(raw); err == nil && d.Str("receipt_id") != "" {
		name = fmt.Sprintf("%s's receipt %s of %s", r.h.name, d.Str("receipt_id"), rp.what)
	}
	p, err := replaydet.Project(raw, r.sources)
	if err != nil {
		p, _ = replaydet.Project([]byte(`{"unprojectable":true}`), nil)
		name += " (not projectable: " + err.Error() + ")"
	}
	return replaydet.Side{Name: name, P: p}
}

func compare(a, b replaydet.Side) error {
	if m := replaydet.Compare(a, b); m != nil {
		return errors.New(m.Error())
	}
	return nil
}

// fixtureSources maps the fixture's source events to their keys.
func fixtureSources(m *fixture.Manifest) replaydet.Sources {
	src := replaydet.Sources{}
	for _, o := range m.Tapes.Overridden {
		src[o.EventID] = o.Key
	}
	return src
}

// startReference starts the reference Harness in this process (stopped at
// the spec's end) and runs the fixture on it.
func startReference(ctx context.Context) *fixtureRun {
	GinkgoHelper()
	h, err := reference.Start(ctx, reference.Harn)
	if err != nil {
		suite.Unverified("the reference Harness did not start: "+err.Error(), remedyFxReference)
	}
	DeferCleanup(h.Stop)
	env := suite.Env()
	env.Redactor.Add(h.APIKey)
	c, err := client.New(client.Options{BaseURL: h.Target, APIKey: h.APIKey, ProtocolVersion: env.Config.ProtocolVersion,
		Timeout: env.Config.Timeouts.Request, Redactor: env.Redactor})
	if err != nil {
		suite.Unverified("the reference Harness's client: "+err.Error(), remedyFxReference)
	}
	// Its exchanges go to this spec's transcript too, and are not judged
	// against the OpenAPI document as the target's (no observer).
	return runFixture(ctx, &fxSide{name: "the reference Harness", ref: c.WithRecorder(suite.Client().Recorder())}, 1)
}
