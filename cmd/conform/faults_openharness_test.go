package main

import (
	"net/http/httptest"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	refoh "github.com/harn-conform/conform/refharness/openharness"
	"github.com/harn-conform/conform/reports"
)

// OpenHarness profile faults, derived from their declarations
// (refharness/openharness/faults.go): the reference Engine with one fault
// must fail exactly the requirements it declares (plus the tolerated ones
// that see the same broken answer from another side) and exit 1; a fault
// that breaks a SHOULD must earn a warning for it and fail nothing. The
// Engine runs in this process, behind httptest; each row runs the conform
// binary with --profile openharness against it.

// openHarnessRun runs the profile against the reference Engine with the
// given faults and returns the exit code and the report.
func openHarnessRun(t *testing.T, faults ...refoh.Fault) (int, *reports.Report) {
	t.Helper()
	opts := refoh.Options{APIKey: testKey, Faults: map[refoh.Fault]bool{}}
	for _, f := range faults {
		opts.Faults[f] = true
	}
	srv := httptest.NewServer(refoh.New(opts))
	t.Cleanup(srv.Close)
	code, console, r, _ := runConform(t, "run", "--profile", "openharness", "--target", srv.URL+"/openharness")
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	return code, r
}

func TestOpenHarnessCleanEngine(t *testing.T) {
	proofTier(t)
	t.Parallel()
	code, r := openHarnessRun(t)
	judgeProfileClean(t, "the reference Engine", code, r)
	for _, q := range r.Requirements {
		if q.Level != string(requirements.OpenHarness) {
			t.Errorf("a profile run reports %s of level %s", q.ID, q.Level)
		}
	}
	if r.ProtocolVersion != "openharness/1.0.0-draft" || len(r.Levels) != 1 || r.Levels[0].Level != requirements.OpenHarness {
		t.Errorf("protocol_version %q, levels %+v; want the profile's", r.ProtocolVersion, r.Levels)
	}
}

func TestOpenHarnessFaultsCaught(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range refoh.FaultDecls() {
		if len(tc.Fails) == 0 {
			continue // TestOpenHarnessShouldFaultsWarn
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			code, r := openHarnessRun(t, refoh.Fault(tc.Name))
			judgeProfileFault(t, code, r, tc.Fails, tc.Tolerated)
		})
	}
}

func TestOpenHarnessShouldFaultsWarn(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("runs the profile once per fault")
	}
	t.Parallel()
	for _, tc := range refoh.FaultDecls() {
		if len(tc.Fails) > 0 {
			continue // TestOpenHarnessFaultsCaught
		}
		t.Run(tc.Name, func(t *testing.T) {
			t.Parallel()
			code, r := openHarnessRun(t, refoh.Fault(tc.Name))
			judgeProfileShould(t, code, r, tc.Warns...)
		})
	}
}

// BenchmarkSelftestOpenHarness measures `conform selftest --profiles
// openharness` as a whole process (start, reference Engine, every spec,
// reports) and the run's own duration_ms (docs/performance.md; issue 13's
// target is at most 2 s per profile).
//
//	go test -run XXX -bench SelftestOpenHarness -benchtime 5x ./cmd/conform/
func BenchmarkSelftestOpenHarness(b *testing.B) { benchProfileSelftest(b, "openharness") }
