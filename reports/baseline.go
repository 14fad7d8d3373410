package reports

import (
	"fmt"
	"strings"

	"github.com/harn-conform/conform/internal/baseline"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// ApplyBaseline applies a known-failures file to a built report (after
// Build, before WriteAll). A listed requirement that failed, stayed
// unverified or warned becomes expected: its verdict stays as it was, but
// it no longer blocks its level, so a run where nothing else fails exits 0.
// A listed requirement that passed is stale: the run exits 1 (unless an
// error already makes it 2) until the entry is removed, so the list only
// shrinks. A listed requirement not judged in this run (not applicable, its
// level not run, a suite error) is neither. An id the registry does not
// have is a *baseline.UnknownError, and the report is left unchanged. A
// stopped run (Stop) keeps its levels and exit code 2: it decided nothing.
//
// reg is the registry the report was built with (nil: the embedded one).
// Applying a baseline again replaces the previous one's effect.
func ApplyBaseline(r *Report, reg *requirements.Registry, b *baseline.File) error {
	if reg == nil {
		var err error
		if reg, err = requirements.Default(); err != nil {
			return err
		}
	}
	if err := b.Check(reg); err != nil {
		return err
	}
	idx := map[string]int{}
	for i, q := range r.Requirements {
		idx[q.ID] = i
	}
	var missing []string
	for _, e := range b.Requirements {
		if _, ok := idx[e.ID]; !ok {
			missing = append(missing, e.ID)
		}
	}
	if len(missing) > 0 {
		return &baseline.UnknownError{File: b.Name(), IDs: missing}
	}
	for i := range r.Requirements {
		q := &r.Requirements[i]
		q.Expected, q.Stale, q.BaselineReason = false, false, ""
	}
	res := &BaselineResult{File: b.Name(), Entries: len(b.Requirements), Expected: []string{}, Stale: []string{}, NotChecked: []string{}}
	for _, e := range b.Requirements {
		q := &r.Requirements[idx[e.ID]]
		q.BaselineReason = e.Reason
		switch q.Verdict {
		case Fail, Unverified, Warn:
			q.Expected = true
			res.Expected = append(res.Expected, q.ID)
		case Pass:
			q.Stale = true
			res.Stale = append(res.Stale, q.ID)
		default:
			res.NotChecked = append(res.NotChecked, q.ID)
		}
	}
	r.Baseline = res
	if r.Stopped != nil {
		// A stopped run decided nothing (exit 2): its levels keep the
		// status Stop gave them; only the counts learn the baseline.
		for i := range r.Levels {
			r.Levels[i].Counts.Expected, r.Levels[i].Counts.Stale = 0, 0
			for _, q := range r.Requirements {
				if q.Level == string(r.Levels[i].Level) {
					r.Levels[i].Counts.Expected += b2i(q.Expected)
					r.Levels[i].Counts.Stale += b2i(q.Stale)
				}
			}
		}
		r.Totals.Expected, r.Totals.Stale = 0, 0
		for _, l := range r.Levels {
			if l.Run {
				r.Totals.Expected += l.Counts.Expected
				r.Totals.Stale += l.Counts.Stale
			}
		}
		return nil
	}
	sels := make([]target.Selection, len(r.Levels))
	run := map[string]bool{}
	for i, l := range r.Levels {
		sels[i] = l.Selection
		run[string(l.Level)] = l.Run
	}
	failOn := config.FailOnUnverified
	if r.Gate != nil {
		failOn = r.Gate.FailOn
	}
	r.Levels = levelsOf(sels, r.Requirements, func(id string) bool {
		q, _ := reg.Lookup(id)
		return q.Observable
	}, failOn)
	r.Totals = Counts{}
	for _, q := range r.Requirements {
		if !run[q.Level] {
			continue
		}
		r.Totals.add(q.Verdict)
		if q.Expected {
			r.Totals.Expected++
		}
		if q.Stale {
			r.Totals.Stale++
		}
	}
	var notes []string
	for _, n := range r.Notes {
		if !strings.HasPrefix(n, staleNotePrefix) {
			notes = append(notes, n)
		}
	}
	r.Notes = notes
	if len(res.Stale) > 0 {
		r.Notes = append(r.Notes, fmt.Sprintf("%s%s now pass: remove them from %s (the baseline only shrinks)", staleNotePrefix, strings.Join(res.Stale, ", "), b.Name()))
	}
	if r.Notes == nil {
		r.Notes = []string{}
	}
	applyGate(r)
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

const staleNotePrefix = "stale baseline entries: "

// BaselineFrom makes a baseline of a report's failing and unverified MUSTs
// (MUST and MUST NOT), in report order, for `conform baseline write`. Each
// entry's reason is the reason it already had in the baseline the run
// applied, else its verdict and message (clipped at a word boundary).
func BaselineFrom(r *Report) *baseline.File {
	f := &baseline.File{Format: baseline.Format, Requirements: []baseline.Entry{}}
	for _, q := range r.Requirements {
		if !mandatory(q) || (q.Verdict != Fail && q.Verdict != Unverified) {
			continue
		}
		reason := q.BaselineReason
		if reason == "" {
			reason = clip(oneLine(baseline.Stable(string(q.Verdict)+": "+q.Message)), 200)
		}
		f.Requirements = append(f.Requirements, baseline.Entry{ID: q.ID, Reason: reason})
	}
	return f
}
