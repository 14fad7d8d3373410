package main

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/reports"
)

// BenchmarkRaceDetection measures how often the concurrency checks
// (docs/concurrency.md) catch the reference Harness's race faults, and
// that they never fail the clean Harness (docs/performance.md, "Races";
// issue 23: at least 99 % per run, and the clean Harness passes 50 runs of
// 50). Each sub-benchmark serves the reference with `conform serve --data
// DIR` (the journal on disk, as selftest and the proof runs have it) and,
// per iteration, runs the concurrency checks of the fault's level with
// their default rounds (`--label-filter concurrency`). Metrics: the share
// of runs that failed every requirement the fault declares (runs-%), and
// the share of judged rounds that showed the race (rounds-%, from the
// failures' "the race showed in k of the n rounds"). The clean row fails
// the benchmark on any failure or error.
//
//	go test -run XXX -bench RaceDetection -benchtime 20x ./cmd/conform/
//	go test -run XXX -bench 'RaceDetection/clean' -benchtime 50x ./cmd/conform/
func BenchmarkRaceDetection(b *testing.B) {
	b.Run("clean", func(b *testing.B) {
		addr, stop := benchServeJournal(b, "")
		defer stop()
		var run float64
		for i := range b.N {
			r := benchRaceRun(b, addr, "core,receipts,extended")
			if f, e := verdicts(r, reports.Fail), verdicts(r, reports.Error); len(f)+len(e) > 0 {
				b.Fatalf("iteration %d: the clean Harness failed %v, erred %v:\n%s", i, f, e, raceMessages(r, append(f, e...)))
			}
			run += r.DurationMS
		}
		b.ReportMetric(100, "runs-clean-%")
		b.ReportMetric(run/1000/float64(b.N), "run-s/op")
	})
	for _, f := range raceFaults() {
		b.Run(f.Name, func(b *testing.B) {
			addr, stop := benchServeJournal(b, f.Name)
			defer stop()
			levels := map[string]bool{}
			for _, id := range f.Fails {
				levels[reqLevel(id)] = true
			}
			caught, showed, judged := 0, 0, 0
			var run float64
			for i := range b.N {
				r := benchRaceRun(b, addr, strings.Join(slices.Sorted(maps.Keys(levels)), ","))
				run += r.DurationMS
				failed := verdicts(r, reports.Fail)
				all := true
				for _, id := range f.Fails {
					all = all && slices.Contains(failed, id)
				}
				if all {
					caught++
				}
				for _, q := range r.Requirements {
					if !slices.Contains(f.Fails, q.ID) {
						continue
					}
					k, n := racedRounds(q)
					showed, judged = showed+k, judged+n
				}
				if !all {
					b.Logf("iteration %d: %s: failed %v, want every one of %v", i, f.Name, failed, f.Fails)
				}
			}
			b.ReportMetric(100*float64(caught)/float64(b.N), "runs-%")
			if judged > 0 {
				b.ReportMetric(100*float64(showed)/float64(judged), "rounds-%")
			}
			b.ReportMetric(run/1000/float64(b.N), "run-s/op")
		})
	}
}

// BenchmarkSelftestConcurrencyCost measures what the concurrency checks
// add to `conform selftest --levels all` (issue 23: at most 5 s on the
// 2-core machine): the run as it is, against the same run with
// `--label-filter '!concurrency'`, alternately, as whole processes.
//
//	go test -run XXX -bench SelftestConcurrencyCost -benchtime 5x ./cmd/conform/
func BenchmarkSelftestConcurrencyCost(b *testing.B) {
	var sum [2]selftestTime // without the concurrency checks, with them
	for i := range b.N {
		// A narrowed run exits 1; the report says the rest.
		sum[0].add(benchSelftest(b, i, true, "--levels", "all", "--label-filter", "!"+requirements.LabelConcurrency))
		sum[1].add(benchSelftest(b, i, true, "--levels", "all"))
	}
	n := float64(b.N)
	b.ReportMetric(sum[0].wall.Seconds()/n, "without-s/op")
	b.ReportMetric(sum[1].wall.Seconds()/n, "with-s/op")
	b.ReportMetric((sum[1].wall-sum[0].wall).Seconds()/n, "added-s/op")
	b.ReportMetric((sum[1].run-sum[0].run).Seconds()/n, "added-run-s/op")
}

// raceFaults are the reference Harness's race faults (fault.Fault.Race),
// by name.
func raceFaults() []fault.Fault {
	return slices.DeleteFunc(harnFaults(), func(f fault.Fault) bool { return !f.Race })
}

func reqLevel(id string) string {
	r, _ := requirements.MustDefault().Lookup(id)
	return string(r.Level)
}

var (
	showedRe = regexp.MustCompile(`the race showed in (\d+) of the (\d+) rounds`)
	roundRe  = regexp.MustCompile(`round \d+ of (\d+)`)
)

// racedRounds is how many of a requirement's rounds showed the race, of
// how many, from its failure message (0, 0 when it did not fail; a
// requirement failed in its only round counts 1 of 1).
func racedRounds(q reports.ReqResult) (showed, of int) {
	if q.Verdict != reports.Fail {
		return 0, 0
	}
	if m := showedRe.FindStringSubmatch(q.Message); m != nil {
		k, _ := strconv.Atoi(m[1])
		n, _ := strconv.Atoi(m[2])
		return k, n
	}
	if m := roundRe.FindStringSubmatch(q.Message); m != nil {
		n, _ := strconv.Atoi(m[1])
		return 1, n
	}
	return 0, 0
}

// raceMessages are the messages of the requirements ids, for a failure.
func raceMessages(r *reports.Report, ids []string) string {
	var b strings.Builder
	for _, q := range r.Requirements {
		if slices.Contains(ids, q.ID) {
			b.WriteString(q.ID + ": " + q.Message + "\n")
		}
	}
	return b.String()
}

// benchServe serves the reference Harness with `conform serve` and the
// flags given (beside --addr) until stop.
func benchServe(b *testing.B, flags ...string) (addr string, stop func()) {
	b.Helper()
	addr = freeAddr(b)
	srv := exec.Command(conformBin, append([]string{"serve", "--addr", addr}, flags...)...)
	srv.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey)
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	return addr, func() { srv.Process.Kill(); srv.Wait() }
}

// benchServeJournal serves the reference Harness (with --fault name
// unless name is "") with its journal in a temporary directory.
func benchServeJournal(b *testing.B, name string) (addr string, stop func()) {
	b.Helper()
	flags := []string{"--data", b.TempDir()}
	if name != "" {
		flags = append(flags, "--fault", name)
	}
	return benchServe(b, flags...)
}

// benchRaceRun runs the concurrency checks of levels against addr with
// their defaults and returns the report.
func benchRaceRun(b *testing.B, addr, levels string) *reports.Report {
	b.Helper()
	out := filepath.Join(b.TempDir(), "report")
	cmd := exec.Command(conformBin, "run", "--target", "http://"+addr, "--levels", levels, "--label-filter", requirements.LabelConcurrency,
		"--wait-for-target", "30s", "--out", out, "--format", "json")
	cmd.Env = append(os.Environ(), "CONFORM_API_KEY="+testKey)
	log, _ := cmd.CombinedOutput() // exit 1 is the verdict (a narrowed run is never conformant); the report says the rest
	r := docReport(b, filepath.Join(out, reports.JSONFile), string(log))
	if r.Stopped != nil {
		b.Fatalf("the run stopped: %+v", *r.Stopped)
	}
	return r
}
