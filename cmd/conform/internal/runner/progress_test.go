package runner

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/evidence"
)

// The console word of a spec matches the report's verdict for entries as
// the run's own process holds them (raw values, never marshalled), which is
// how a conform run sees them.
func TestProgressWordReadsRawEntries(t *testing.T) {
	entry := func(name string, v any) types.ReportEntry {
		return types.ReportEntry{Name: name, Value: types.WrapEntryValue(v)}
	}
	cases := []struct {
		name string
		sr   SpecReport
		want string
	}{
		{"pass", SpecReport{State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{entry(evidence.EntryVerdict, evidence.Verdict{Req: "X-1", Verdict: "pass"})}}, "PASS"},
		{"warn", SpecReport{State: types.SpecStatePassed,
			ReportEntries: types.ReportEntries{entry(evidence.EntryVerdict, evidence.Verdict{Req: "X-1", Verdict: evidence.VerdictWarn})}}, "WARN"},
		{"not applicable", SpecReport{State: types.SpecStateSkipped,
			ReportEntries: types.ReportEntries{entry(evidence.EntrySkip, evidence.Skip{Kind: evidence.SkipNotApplicable, Reason: "r"})}}, "SKIP"},
		{"unverified", SpecReport{State: types.SpecStateSkipped,
			ReportEntries: types.ReportEntries{entry(evidence.EntrySkip, evidence.Skip{Kind: "unverified", Reason: "r"})}}, "UNVER"},
		{"error only", SpecReport{State: types.SpecStateFailed,
			ReportEntries: types.ReportEntries{entry(evidence.EntryVerdict, evidence.Verdict{Req: "X-1", Verdict: evidence.VerdictError})}}, "ERROR"},
		{"fail", SpecReport{State: types.SpecStateFailed,
			ReportEntries: types.ReportEntries{entry(evidence.EntryVerdict, evidence.Verdict{Req: "X-1", Verdict: evidence.VerdictFail})}}, "FAIL"},
	}
	for _, c := range cases {
		if got := progressWord(c.sr); got != c.want {
			t.Errorf("%s: console word %q, want %q", c.name, got, c.want)
		}
	}
}
