package reports

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/baseline"
)

func bl(ids ...string) *baseline.File {
	f := &baseline.File{Path: "known.yaml", Format: baseline.Format}
	for _, id := range ids {
		f.Requirements = append(f.Requirements, baseline.Entry{ID: id, Reason: "tracked in TICKET-" + id})
	}
	return f
}

// passing builds a report where CORE-A-001 and CORE-A-002 pass and
// CORE-A-003 (a SHOULD) passes too.
func passing(t *testing.T) *Report {
	t.Helper()
	return Build(Input{Env: env(core, rcptOff), Registry: reg(t)}, run(nil,
		spec("all", types.SpecStatePassed, "", []string{"req:CORE-A-001", "req:CORE-A-002", "req:CORE-A-003"})))
}

func TestApplyBaseline(t *testing.T) {
	for _, tc := range []struct {
		name                       string
		report                     func(*testing.T) *Report
		baseline                   *baseline.File
		status                     LevelStatus
		exit                       int
		expected, stale, unchecked string
	}{
		{"no entries", sample, bl(), Nonconformant, 1, "", "", ""},
		{"the failure only", sample, bl("CORE-A-001"), Partial, 1, "CORE-A-001", "", ""},
		{"failure and unverified", sample, bl("CORE-A-001", "CORE-A-002"), Conformant, 0, "CORE-A-001,CORE-A-002", "", ""},
		{"and the warning", sample, bl("CORE-A-001", "CORE-A-002", "CORE-A-003"), Conformant, 0, "CORE-A-001,CORE-A-002,CORE-A-003", "", ""},
		{"not applicable and level not run", sample, bl("CORE-A-001", "CORE-A-002", "CORE-A-004", "RCPT-A-001"), Conformant, 0,
			"CORE-A-001,CORE-A-002", "", "CORE-A-004,RCPT-A-001"},
		{"stale", passing, bl("CORE-A-002"), Conformant, 1, "", "CORE-A-002", ""},
		{"stale alone fails a conformant run", func(t *testing.T) *Report {
			return Build(Input{Env: env(core, rcptOff), Registry: reg(t)}, run(nil,
				spec("all", types.SpecStatePassed, "", []string{"req:CORE-A-001", "req:CORE-A-002", "req:CORE-A-003"}),
				spec("unverified A2 is fine: expected", types.SpecStateSkipped, "", []string{"req:CORE-A-004"})))
		}, bl("CORE-A-001"), Conformant, 1, "", "CORE-A-001", ""},
		{"an error stays an error", func(t *testing.T) *Report {
			return Build(Input{Env: env(core, rcptOff), Registry: reg(t)}, run(nil,
				spec("err", types.SpecStatePanicked, "boom", []string{"req:CORE-A-001", "req:CORE-A-002"})))
		}, bl("CORE-A-001", "CORE-A-002"), Partial, 2, "", "", "CORE-A-001,CORE-A-002"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.report(t)
			before := map[string]Verdict{}
			for _, q := range r.Requirements {
				before[q.ID] = q.Verdict
			}
			if err := ApplyBaseline(r, reg(t), tc.baseline); err != nil {
				t.Fatal(err)
			}
			if r.Levels[0].Status != tc.status || r.ExitCode != tc.exit {
				t.Errorf("core %s (%s), exit %d; want %s, exit %d", r.Levels[0].Status, r.Levels[0].Why, r.ExitCode, tc.status, tc.exit)
			}
			if r.Levels[1].Status != NotClaimed {
				t.Errorf("receipts = %s, want not claimed still", r.Levels[1].Status)
			}
			var exp, stale []string
			for _, q := range r.Requirements {
				if q.Verdict != before[q.ID] {
					t.Errorf("%s verdict changed %s → %s: the real verdict must stay visible", q.ID, before[q.ID], q.Verdict)
				}
				if q.Expected {
					exp = append(exp, q.ID)
				}
				if q.Stale {
					stale = append(stale, q.ID)
				}
				if _, listed := tc.baseline.Reason(q.ID); listed && q.BaselineReason != "tracked in TICKET-"+q.ID {
					t.Errorf("%s baseline reason = %q", q.ID, q.BaselineReason)
				}
			}
			if strings.Join(exp, ",") != tc.expected || strings.Join(r.Baseline.Expected, ",") != tc.expected {
				t.Errorf("expected = %v / %v, want %s", exp, r.Baseline.Expected, tc.expected)
			}
			if strings.Join(stale, ",") != tc.stale || strings.Join(r.Baseline.Stale, ",") != tc.stale {
				t.Errorf("stale = %v / %v, want %s", stale, r.Baseline.Stale, tc.stale)
			}
			if strings.Join(r.Baseline.NotChecked, ",") != tc.unchecked {
				t.Errorf("not checked = %v, want %s", r.Baseline.NotChecked, tc.unchecked)
			}
			if n := len(exp); r.Levels[0].Counts.Expected+r.Levels[1].Counts.Expected != n || r.Totals.Expected != n {
				t.Errorf("expected counts: levels %d+%d, totals %d; want %d", r.Levels[0].Counts.Expected, r.Levels[1].Counts.Expected, r.Totals.Expected, n)
			}
			if r.Baseline.File != "known.yaml" || r.Baseline.Entries != len(tc.baseline.Requirements) {
				t.Errorf("baseline = %+v", r.Baseline)
			}
			var md, tb bytes.Buffer
			WriteMarkdown(&md, r)
			WriteTable(&tb, r)
			if tc.stale != "" {
				note := strings.Join(r.Notes, "\n")
				if !strings.Contains(note, "remove them from known.yaml") || !strings.Contains(note, tc.stale) {
					t.Errorf("notes do not say to remove the stale entry: %q", note)
				}
				if !strings.Contains(md.String(), "Stale baseline entries") || !strings.Contains(tb.String(), "STALE "+tc.stale) {
					t.Errorf("summary or console does not name the stale entry:\n%s\n%s", md.String(), tb.String())
				}
			}
			if tc.expected != "" && !strings.Contains(md.String(), "## Expected by the baseline") {
				t.Errorf("summary.md has no expected section:\n%s", md.String())
			}
			checkOutputs(t, r)
		})
	}
}

// Expected items are no failures in CI views; a stale entry is.
func TestJUnitWithBaseline(t *testing.T) {
	r := sample(t)
	if err := ApplyBaseline(r, reg(t), bl("CORE-A-001", "CORE-A-002")); err != nil {
		t.Fatal(err)
	}
	for _, g := range []string{JUnitPerRequirement, JUnitPerSpec} {
		out := junitOf(t, r, g)
		if out.Failures != 0 || out.Errors != 0 {
			t.Errorf("%s: %d failures, %d errors; want none (all expected)", g, out.Failures, out.Errors)
		}
	}
	for _, s := range junitOf(t, r, "").Suites {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, "CORE-A-001:") && (c.Skipped == nil || !strings.Contains(c.Skipped.Message, "expected by the baseline: fail") ||
				!strings.Contains(c.Skipped.Message, "TICKET-CORE-A-001")) {
				t.Errorf("expected failure: %+v", c)
			}
		}
	}
	p := passing(t)
	if err := ApplyBaseline(p, reg(t), bl("CORE-A-001")); err != nil {
		t.Fatal(err)
	}
	out := junitOf(t, p, "")
	if out.Failures != 1 {
		t.Errorf("stale entry: %d failures, want 1", out.Failures)
	}
	for _, s := range out.Suites {
		for _, c := range s.Cases {
			if c.Failure != nil && (c.Failure.Type != "stale_baseline" || !strings.Contains(c.Failure.Message, "remove it from known.yaml")) {
				t.Errorf("stale failure = %+v", c.Failure)
			}
		}
	}
	var h bytes.Buffer
	WriteHTML(&h, p)
	if !strings.Contains(h.String(), "pill st") || !strings.Contains(h.String(), `id="baseline"`) {
		t.Error("report.html does not show the stale entry")
	}
}

func TestApplyBaselineRejectsUnknownIDs(t *testing.T) {
	r := sample(t)
	was := r.ExitCode
	err := ApplyBaseline(r, reg(t), bl("CORE-A-001", "CORE-ZZ-999", "RPLY-X-001"))
	var ue *baseline.UnknownError
	if !errors.As(err, &ue) || strings.Join(ue.IDs, ",") != "CORE-ZZ-999,RPLY-X-001" ||
		!strings.Contains(err.Error(), "CORE-ZZ-999") || !strings.Contains(err.Error(), "known.yaml") {
		t.Fatalf("err = %v, want an UnknownError naming both ids and the file", err)
	}
	if r.Baseline != nil || r.ExitCode != was || find(r, "CORE-A-001").Expected {
		t.Error("a rejected baseline changed the report")
	}
}

// Applying a second baseline replaces the first's effect.
func TestApplyBaselineAgain(t *testing.T) {
	r := sample(t)
	if err := ApplyBaseline(r, reg(t), bl("CORE-A-001", "CORE-A-002")); err != nil {
		t.Fatal(err)
	}
	if err := ApplyBaseline(r, reg(t), bl("CORE-A-002")); err != nil {
		t.Fatal(err)
	}
	if find(r, "CORE-A-001").Expected || !find(r, "CORE-A-002").Expected || r.Levels[0].Status != Nonconformant || r.ExitCode != 1 || r.Totals.Expected != 1 {
		t.Errorf("after a second baseline: core %s exit %d totals %+v", r.Levels[0].Status, r.ExitCode, r.Totals)
	}
}

// A stopped run decides nothing: the baseline marks its requirements, but
// its levels and exit code 2 stay.
func TestApplyBaselineToStoppedRun(t *testing.T) {
	r := Build(Input{Env: env(core, rcptOff), Registry: reg(t)}, run(nil))
	Stop(r, Stopped{Stage: "reach", Message: "refused"})
	if err := ApplyBaseline(r, reg(t), bl("CORE-A-001", "CORE-A-002")); err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 2 || r.Levels[0].Status != Undecided || !strings.Contains(r.Levels[0].Why, "stopped") {
		t.Errorf("stopped run after a baseline: core %s (%s), exit %d", r.Levels[0].Status, r.Levels[0].Why, r.ExitCode)
	}
	// Stopped before discovery answered: whether receipts is claimed is
	// not known.
	if r.Levels[1].Status != Undecided || !strings.Contains(r.Levels[1].Why, "not known") {
		t.Errorf("stopped run: receipts %s (%s), want undecided", r.Levels[1].Status, r.Levels[1].Why)
	}
	if r.Gate == nil || r.Gate.Passed || !strings.HasPrefix(r.Gate.Summary, "not decided (exit 2): the run stopped (reach)") {
		t.Errorf("stopped run: gate %+v", r.Gate)
	}
	checkOutputs(t, r)
}

func TestBaselineFrom(t *testing.T) {
	r := sample(t)
	f := BaselineFrom(r)
	if got := strings.Join(f.IDs(), ","); got != "CORE-A-001,CORE-A-002" {
		t.Fatalf("baseline ids = %s, want the failing and the unverified MUST", got)
	}
	if !strings.HasPrefix(f.Requirements[0].Reason, "fail: GET /v1/tasks → 200: ") || !strings.HasPrefix(f.Requirements[1].Reason, "unverified: no scenario hook") {
		t.Errorf("reasons = %+v", f.Requirements)
	}
	for _, e := range f.Requirements {
		if len([]rune(e.Reason)) > 202 || strings.ContainsAny(e.Reason, "\n\x1b") {
			t.Errorf("reason not bounded to one line: %q", e.Reason)
		}
	}
	// Written, read back and applied, it makes the same run pass.
	var b bytes.Buffer
	if err := baseline.Write(&b, f); err != nil {
		t.Fatal(err)
	}
	back, err := baseline.Parse(b.Bytes())
	if err != nil {
		t.Fatalf("%v\n%s", err, b.String())
	}
	if err := ApplyBaseline(r, reg(t), back); err != nil {
		t.Fatal(err)
	}
	if r.ExitCode != 0 {
		t.Errorf("the run with its own baseline exits %d, want 0", r.ExitCode)
	}
	var md, tb bytes.Buffer
	WriteMarkdown(&md, r)
	WriteTable(&tb, r)
	if !strings.Contains(md.String(), "(as written by baseline write)") || !strings.Contains(md.String(), "# conform: conformant apart from 2 requirements the baseline expects") {
		t.Errorf("summary.md:\n%s", md.String())
	}
	if !strings.Contains(tb.String(), "EXPECTED core (by the baseline): CORE-A-001, CORE-A-002\n") {
		t.Errorf("console:\n%s", tb.String())
	}
	// A reason the applied baseline gave is kept.
	back.Requirements[0].Reason = "our gateway, TICKET-9"
	ApplyBaseline(r, reg(t), back)
	if f := BaselineFrom(r); f.Requirements[0].Reason != "our gateway, TICKET-9" {
		t.Errorf("reason = %q, want the baseline's own", f.Requirements[0].Reason)
	}
}
