package main

import (
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	refoh "github.com/harn-conform/conform/refharness/openharness"
	"github.com/harn-conform/conform/reports"
)

// OpenHarness profile faults: the reference Engine with one fault must
// fail exactly the requirements a row names (plus tolerated ones that see
// the same broken answer from another side), and exit 1. The Engine runs
// in this process, behind httptest; each row runs the conform binary with
// --profile openharness against it.
var openHarnessFaults = []struct {
	Fault     refoh.Fault
	Fails     []string
	Tolerated []string
}{
	{Fault: refoh.FaultWrongContentType, Fails: []string{"OH-HTTP-001"}},
	{Fault: refoh.FaultLatencyString, Fails: []string{"OH-RESP-001"}},
	{Fault: refoh.FaultVersionNotSemver, Fails: []string{"OH-VER-001"}},
	// The secrets spec's other probe (a version that is no semver) still
	// gets an error, so OH-SEC-002 and OH-ERR-004 stay checked.
	{Fault: refoh.FaultAcceptsAnyVersion, Fails: []string{"OH-VER-004"}},
	{Fault: refoh.FaultRejectsUnknownFields, Fails: []string{"OH-EXT-001"}},
	{Fault: refoh.FaultRequestIDChanged, Fails: []string{"OH-ID-001"}},
	{Fault: refoh.FaultCorrelationIDChanged, Fails: []string{"OH-ID-003"}},
	{Fault: refoh.FaultRejectsUnknownCapabilities, Fails: []string{"OH-CAP-001"}},
	{Fault: refoh.FaultDeniesUnasked, Fails: []string{"OH-CAP-002"}},
	{Fault: refoh.FaultRequiresBodyToken, Fails: []string{"OH-SEC-001"}},
	{Fault: refoh.FaultErrorEchoesToken, Fails: []string{"OH-SEC-002"}},
	{Fault: refoh.FaultErrorEchoesPII, Fails: []string{"OH-ERR-004"}},
	{Fault: refoh.FaultMalformedSuccess, Fails: []string{"OH-ERR-001"}},
	// The schema requires error.code too, and so does the version refusal.
	{Fault: refoh.FaultErrorWithoutCode, Fails: []string{"OH-ERR-003"}, Tolerated: []string{"OH-RESP-001", "OH-VER-004"}},
	{Fault: refoh.FaultEmbedsBlob, Fails: []string{"OH-ATT-002"}},
	// The response schema includes the directive schema.
	{Fault: refoh.FaultDirectiveNoType, Fails: []string{"OH-DIR-001"}, Tolerated: []string{"OH-RESP-001"}},
}

// Faults that break a SHOULD: the profile warns about exactly that
// requirement and fails nothing.
var openHarnessShouldFaults = []struct {
	Fault refoh.Fault
	Warns string
}{
	{refoh.FaultTwoMajorsUnlisted, "OH-VER-002"},
	{refoh.FaultAnswersOtherMajor, "OH-VER-005"},
	{refoh.FaultNoRequestID, "OH-ID-002"},
	{refoh.FaultNoCorrelationID, "OH-ID-004"},
	{refoh.FaultVendorMember, "OH-EXT-002"},
	{refoh.FaultBadExtensionKey, "OH-EXT-003"},
	{refoh.FaultDenialWithoutCode, "OH-CAP-003"},
	{refoh.FaultOffersAndDenies, "OH-CAP-004"},
	{refoh.FaultRefusesAttachments, "OH-ATT-004"},
	{refoh.FaultRiskTierUnknown, "OH-DIR-002"},
	{refoh.FaultErrorWithoutObject, "OH-ERR-002"},
}

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
	for _, tc := range openHarnessFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			code, r := openHarnessRun(t, tc.Fault)
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
	for _, tc := range openHarnessShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			t.Parallel()
			code, r := openHarnessRun(t, tc.Fault)
			judgeProfileShould(t, code, r, tc.Warns)
		})
	}
}

// Every fault of the reference Engine has exactly one row, and every
// observable MUST of the profile is some row's Fails (TestEveryMustHasAFault
// reads openHarnessProven).
func TestEveryOpenHarnessFaultHasARow(t *testing.T) {
	rowed := map[refoh.Fault]int{}
	for _, r := range openHarnessFaults {
		rowed[r.Fault]++
	}
	for _, r := range openHarnessShouldFaults {
		rowed[r.Fault]++
	}
	for _, f := range refoh.AllFaults() {
		if rowed[f] != 1 {
			t.Errorf("fault %s has %d rows, want 1", f, rowed[f])
		}
	}
	for f := range rowed {
		if !slices.Contains(refoh.AllFaults(), f) {
			t.Errorf("a row names %s, which is not in refharness/openharness.AllFaults", f)
		}
	}
}

// openHarnessProven lists the requirements some OpenHarness fault row
// fails, for TestEveryMustHasAFault.
func openHarnessProven() []string {
	var ids []string
	for _, r := range openHarnessFaults {
		ids = append(ids, r.Fails...)
	}
	return ids
}

// BenchmarkSelftestOpenHarness measures `conform selftest --profiles
// openharness` as a whole process (start, reference Engine, every spec,
// reports) and the run's own duration_ms (docs/performance.md; issue 13's
// target is at most 2 s per profile).
//
//	go test -run XXX -bench SelftestOpenHarness -benchtime 5x ./cmd/conform/
func BenchmarkSelftestOpenHarness(b *testing.B) { benchProfileSelftest(b, "openharness") }
