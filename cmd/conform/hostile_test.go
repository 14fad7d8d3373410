package main

// Hostile input (issue 26): the generated negative pass over every
// operation the reference Harness offers finds nothing, whatever the seed.
// The faults it must catch are rows of the level pools (their
// declarations are in refharness/hostile.go and
// refharness/wrapfault/hostile.go).

import (
	"fmt"
	"strings"
	"testing"

	"github.com/harn-conform/conform/reports"
)

// hostileIDs are the requirements the pass judges; hostileSeeds how many
// seeds the clean runs try.
var (
	hostileIDs = []string{"CORE-NEG-001", "CORE-NEG-002", "CORE-NEG-003", "CORE-NEG-004", "CORE-NEG-005",
		"EXT-NEG-001", "EXT-NEG-002", "EXT-NEG-003", "EXT-NEG-004", "EXT-NEG-005", "RCPT-NEG-001", "RPLY-NEG-001"}
	hostileSeeds = 20
)

// hostileJobs run the pass alone (a label filter on its requirements), at
// every level, once per seed, with a budget twice the default so that each
// seed's plan reaches the rarer classes of every operation.
func hostileJobs() []proofJob {
	var filter []string
	for _, id := range hostileIDs {
		if strings.HasSuffix(id, "-001") {
			filter = append(filter, "req:"+id)
		}
	}
	var jobs []proofJob
	for i := range hostileSeeds {
		jobs = append(jobs, proofJob{levels: "all", extra: []string{"--seed", fmt.Sprint(1000003 * (i + 1)), "--negative-budget", "1200",
			"--label-filter", strings.Join(filter, " || ")}})
	}
	return jobs
}

func init() { planProofs("TestHostileInputCleanOverSeeds", hostileJobs) }

// Against the reference Harness a full negative pass over every offered
// operation finds nothing, in every one of 20 runs with different seeds:
// each of the pass's requirements passed (judged, not left unverified), and
// so did CORE-ERR-005 wherever the pass judged error.param.
func TestHostileInputCleanOverSeeds(t *testing.T) {
	startProofs(t)
	t.Parallel()
	for _, j := range hostileJobs() {
		seed := j.extra[1]
		t.Run("seed-"+seed, func(t *testing.T) {
			_, r, _ := proof(t, "hostile input, seed "+seed, j.spec, j.levels, j.extra...)
			got := map[string]reports.ReqResult{}
			for _, q := range r.Requirements {
				got[q.ID] = q
			}
			for _, id := range append(hostileIDs, "CORE-ERR-005") {
				q, ok := got[id]
				switch {
				case !ok:
					t.Errorf("%s: not in the report", id)
				case id == "CORE-ERR-005" && (q.Verdict == reports.Warn || q.Verdict == reports.Fail):
					t.Errorf("%s [%s]: %s", id, q.Verdict, q.Message)
				case id != "CORE-ERR-005" && q.Verdict != reports.Pass:
					t.Errorf("%s [%s]: %s", id, q.Verdict, q.Message)
				}
			}
			notes := 0
			for _, n := range r.Notes {
				if strings.HasPrefix(n, "hostile-input pass (") && strings.Contains(n, "malformed requests") {
					notes++
				}
			}
			if notes != 4 {
				t.Errorf("%d summaries of the pass in the notes, want one per level (4)", notes)
			}
		})
	}
}
