package main

// Hostile input (issue 26): the generated negative pass over every
// operation the reference Harness offers finds nothing, whatever the seed.
// The faults it must catch are rows of the level pools (their
// declarations are in refharness/hostile.go and
// refharness/wrapfault/hostile.go).

import (
	"errors"
	"fmt"
	"slices"
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

// hostileRows are the hostile-input faults (those that fail a *-NEG-*
// requirement): MUST rows of their level's pool.
func hostileRows() []groupRow {
	var out []groupRow
	for _, name := range []string{"core", "extended", "receipts", "replay"} {
		for _, r := range pool(name).rs {
			if slices.ContainsFunc(r.Fails, func(id string) bool { return strings.Contains(id, "-NEG-") }) {
				out = append(out, r)
			}
		}
	}
	return out
}

// hostileRowJob is the proof run that shows row r: its pool's first run
// of it (the same run the pool's own test collects).
func hostileRowJob(r groupRow) proofJob {
	p := pool(levelOf(r.Fault))
	return p.job(p.g.of[r.name()][0])
}

func init() {
	planProofs("TestHostileFaultsReproduceOneMember", func() []proofJob {
		var jobs []proofJob
		for _, r := range hostileRows() {
			jobs = append(jobs, hostileRowJob(r))
		}
		return jobs
	})
}

// Each hostile-input fault is caught with a minimal reproduction: every
// failure of the requirement it breaks is shrunk to one mutation (one
// member, header or the body as a whole; a write's anchor that keeps it
// invalid aside), with its curl line and the answer.
func TestHostileFaultsReproduceOneMember(t *testing.T) {
	startProofs(t)
	t.Parallel()
	rows := hostileRows()
	if len(rows) < 12 {
		t.Fatalf("%d hostile-input faults in the pools, want at least 12", len(rows))
	}
	for _, row := range rows {
		t.Run(row.name(), func(t *testing.T) {
			j := hostileRowJob(row)
			_, r, _ := proof(t, "fault "+row.name(), j.spec, j.levels, j.extra...)
			for _, id := range row.Fails {
				if !strings.Contains(id, "-NEG-") {
					continue
				}
				var msgs []string
				for _, q := range r.Requirements {
					if q.ID != id {
						continue
					}
					if q.Verdict != reports.Fail {
						t.Fatalf("%s [%s], want fail: %s", id, q.Verdict, q.Message)
					}
					for _, e := range q.Evidence {
						if e.Verdict == reports.Fail {
							msgs = append(msgs, e.Message)
						}
					}
				}
				if len(msgs) == 0 {
					t.Fatalf("%s: no failure in the report", id)
				}
				t.Logf("%s, the first of %d failures:\n%s", id, len(msgs), msgs[0])
				for _, m := range msgs {
					if err := oneMemberReproduction(m); err != nil {
						t.Errorf("%s: %v:\n%s", id, err, m)
					}
				}
			}
		})
	}
}

// oneMemberReproduction checks that a finding of the pass, as the report
// says it, reproduces with one mutation (its anchor aside), a curl line
// and the answer.
func oneMemberReproduction(msg string) error {
	_, rest, ok := strings.Cut(msg, "minimal reproduction: ")
	if !ok {
		return errors.New("no minimal reproduction")
	}
	line, _, _ := strings.Cut(rest, "\n")
	line, _, _ = strings.Cut(line, " (shrunk from ")
	muts := strings.Split(line, "; ")
	if n := len(muts); n == 2 && strings.HasSuffix(muts[1], ", the anchor that keeps the write invalid") {
		muts = muts[:1]
	}
	if len(muts) != 1 {
		return fmt.Errorf("a reproduction of %d mutations, want one", len(muts))
	}
	if !strings.Contains(rest, "\n  curl ") || !strings.Contains(rest, "\n  answer: ") {
		return errors.New("no curl line or no answer")
	}
	return nil
}
