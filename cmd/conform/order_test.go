package main

// Verdicts that do not depend on the spec order (issue 21, item 3;
// docs/interpretations.md#order-independent-lists and #fail-fast): the
// same target, run under several --seed values, gets the same verdict on
// every requirement. The targets are the clean Harness and Harnesses with
// faults that were caught only in some orders: a list that ignores its
// cursor (caught when earlier specs had filled more than one page), and a
// WebSocket that is silent to the deliberately unauthenticated probe (whose
// silence marked the whole transport silent for the specs after it).

import (
	"slices"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// orderSeeds are the spec orders each target is run in.
var orderSeeds = []string{"1", "2", "3"}

// orderTargets are the targets, each with the requirements it must fail
// in every order (and nothing else).
var orderTargets = []struct {
	name  string
	spec  targetSpec
	fails []string
}{
	{"clean", targetSpec{}, nil},
	{"sessions-cursor-ignored+ws-unauthenticated-silent", targetSpec{Wrap: "sessions-cursor-ignored", Faults: []refharness.Fault{refharness.FaultWSUnauthenticatedSilent}},
		[]string{"CORE-PAGE-003", "EXT-WS-001"}},
	{"personas-cursor-ignored", targetSpec{Wrap: "personas-cursor-ignored"}, []string{"EXT-PERSONA-001"}},
}

const orderLevels = "core,extended"

func init() {
	planProofs("TestVerdictsIndependentOfSpecOrder", func() []proofJob {
		var jobs []proofJob
		for _, tg := range orderTargets {
			for _, seed := range orderSeeds {
				jobs = append(jobs, proofJob{spec: tg.spec, levels: orderLevels, extra: []string{"--seed", seed}})
			}
		}
		return jobs
	})
}

func TestVerdictsIndependentOfSpecOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per target and seed")
	}
	startProofs(t)
	t.Parallel() // collects its runs, in order, from the proof pool
	for _, tg := range orderTargets {
		t.Run(tg.name, func(t *testing.T) {
			var first map[string]reports.Verdict
			for _, seed := range orderSeeds {
				_, r, _ := proof(t, tg.name+" --seed "+seed, tg.spec, orderLevels, "--seed", seed)
				t.Logf("--seed %s: %.1f s", seed, r.DurationMS/1000)
				if got := verdicts(r, reports.Fail); !slices.Equal(got, tg.fails) {
					t.Errorf("--seed %s: failed %v, want %v:%s", seed, got, tg.fails, messages(r, got))
				}
				got := map[string]reports.Verdict{}
				for _, q := range r.Requirements {
					got[q.ID] = q.Verdict
				}
				if first == nil {
					first = got
					continue
				}
				for id, v := range got {
					if first[id] != v {
						t.Errorf("%s is %s with --seed %s but %s with --seed %s:%s", id, v, seed, first[id], orderSeeds[0], messages(r, []string{id}))
					}
				}
				if len(got) != len(first) {
					t.Errorf("--seed %s judged %d requirements, --seed %s %d", seed, len(got), orderSeeds[0], len(first))
				}
			}
		})
	}
}
