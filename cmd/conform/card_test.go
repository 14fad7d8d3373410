package main

// HarnAgentCard signatures (EXT-CARD-001, EXT-CARD-002; docs/card-signing.md):
// the suite, narrowed to the two requirements at the Extended level, passes
// the reference Harness, fails each card fault on exactly its requirement,
// and calls a card whose key is not published unverified — with a remedy,
// neither passed nor failed. A narrowed run is partial by construction, so
// these tests judge verdicts, not the exit code.

import (
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/reports"
)

const cardFilter = "req:EXT-CARD-001 || req:EXT-CARD-002"

var cardReqs = []string{"EXT-CARD-001", "EXT-CARD-002"}

// cardRun runs the narrowed Extended suite against a harness with opts
// and returns the verdict of each card requirement.
func cardRun(t *testing.T, opts refharness.Options) (map[string]reports.ReqResult, *reports.Report) {
	t.Helper()
	url := harness(t, opts)
	code, console, r, _ := runConform(t, "run", "--target", url, "--levels", "extended", "--label-filter", cardFilter)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	got := map[string]reports.ReqResult{}
	for _, q := range r.Requirements {
		if slices.Contains(cardReqs, q.ID) {
			got[q.ID] = q
		}
	}
	for _, id := range cardReqs {
		if _, ok := got[id]; !ok {
			t.Fatalf("report has no verdict for %s", id)
		}
	}
	// Nothing outside the card requirements is failed or an error.
	for _, v := range []reports.Verdict{reports.Fail, reports.Error} {
		for _, id := range verdicts(r, v) {
			if !slices.Contains(cardReqs, id) {
				t.Errorf("unrelated requirement %s is %s: %s", id, v, messages(r, []string{id}))
			}
		}
	}
	return got, r
}

func TestCardCleanHarnessPasses(t *testing.T) {
	proofTier(t)
	t.Parallel()
	got, r := cardRun(t, refharness.Options{})
	for _, id := range cardReqs {
		if got[id].Verdict != reports.Pass {
			t.Errorf("%s is %s on the reference Harness, want pass: %s", id, got[id].Verdict, messages(r, []string{id}))
		}
	}
}

// Each fault declared to run narrowed to the card (fault.Card) fails
// exactly its requirement; the other card requirement passes, or does
// not apply when the declaration says so (an unsigned card names no
// algorithm or key id); and the suite's finding says what the declaration
// says it must.
func TestCardFaultsCaught(t *testing.T) {
	proofTier(t)
	t.Parallel()
	for _, tc := range runFaults(fault.Card) {
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			got, r := cardRun(t, refharness.Options{Faults: refharness.Faults{refharness.Fault(tc.Name): true}})
			for _, id := range cardReqs {
				want := reports.Pass
				switch {
				case slices.Contains(tc.Fails, id):
					want = reports.Fail
				case slices.Contains(tc.NotApplicable, id):
					want = reports.Skip
				}
				if got[id].Verdict != want {
					t.Errorf("%s is %s, want %s: %s", id, got[id].Verdict, want, messages(r, []string{id}))
				}
			}
			// The suite's own finding, whatever else (the OpenAPI oracle)
			// also reported for the requirement.
			for _, id := range tc.Fails {
				said := strings.Contains(got[id].Message, tc.Says)
				for _, ev := range got[id].Evidence {
					said = said || strings.Contains(ev.Message, tc.Says)
				}
				if !said {
					t.Errorf("%s: no finding says %q: %s", id, tc.Says, messages(r, []string{id}))
				}
			}
		})
	}
}

// A signed card whose key the directory does not list (the receipt-unsigned
// variant publishes an empty directory and advertises none) leaves
// EXT-CARD-001 unverified with the remedy to publish the key: not a pass,
// not a failure. EXT-CARD-002 is still judged and passes.
func TestCardKeyNotPublishedIsUnverified(t *testing.T) {
	proofTier(t)
	t.Parallel()
	got, r := cardRun(t, refharness.Options{Variants: refharness.Variants{refharness.VariantReceiptUnsigned: true}})
	one := got["EXT-CARD-001"]
	if one.Verdict != reports.Unverified {
		t.Errorf("EXT-CARD-001 is %s, want unverified: %s", one.Verdict, messages(r, cardReqs))
	}
	if !strings.Contains(one.Remedy, "publish the card's signing key") || !strings.Contains(one.Message, "not in the key directory") {
		t.Errorf("EXT-CARD-001 message %q / remedy %q: want the unpublished key and how to publish it", one.Message, one.Remedy)
	}
	if got["EXT-CARD-002"].Verdict != reports.Pass {
		t.Errorf("EXT-CARD-002 is %s, want pass: %s", got["EXT-CARD-002"].Verdict, messages(r, cardReqs))
	}
}
