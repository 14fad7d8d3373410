package reports

import (
	"fmt"
	"strings"
)

// Stopped stages besides the preflight's (internal/preflight).
const StageTargetStopped = "target_stopped"

// Stop marks a run that ended before its specs could decide: its exit code
// is 2 whatever the verdicts so far. A run stopped before any spec (a
// preflight problem) leaves every requirement of its levels an error
// naming the reason — never a failure of the target, never a pass. Each
// level the run checked is undecided unless its verdicts decided it (a
// failed MUST, or every observable MUST passed before the stop); a level
// the run left out because discovery did not say whether the target
// claims it (the run stopped before discovery answered) is undecided too,
// never "not claimed".
func Stop(r *Report, s Stopped) {
	r.Stopped = &s
	defer applyGate(r)
	claimsUnknown := s.Stage == "out" || s.Stage == "reach" || s.Stage == "discovery"
	for i := range r.Levels {
		l := &r.Levels[i]
		switch {
		case !l.Run && claimsUnknown && l.Status == NotClaimed:
			l.Status, l.Why = Undecided, "not known: the run stopped ("+s.Stage+") before discovery said whether the target claims this level"
		case l.Run && len(r.Specs) > 0 && (l.Status == Nonconformant || l.Status == Conformant):
			// Decided by what ran before the stop.
		case l.Run:
			l.Status, l.Why = Undecided, "not decided: the run stopped ("+s.Stage+") before its checks of this level could decide"
		}
	}
	if len(r.Specs) > 0 {
		return // what ran keeps its verdicts; the rest is error or unverified already
	}
	run := map[string]bool{}
	for _, l := range r.Levels {
		if l.Run {
			run[string(l.Level)] = true
		}
	}
	r.Totals = Counts{}
	counts := map[string]*Counts{}
	for i := range r.Levels {
		counts[string(r.Levels[i].Level)] = &r.Levels[i].Counts
		r.Levels[i].Counts = Counts{}
	}
	for i := range r.Requirements {
		q := &r.Requirements[i]
		if run[q.Level] && q.Verdict == Unverified {
			q.Verdict, q.Message, q.Remedy, q.Gate = Error, stoppedBefore+" ("+s.Stage+"): see the report's stopped", s.Hint, ""
		}
		if c := counts[q.Level]; c != nil {
			c.add(q.Verdict)
		}
		if run[q.Level] {
			r.Totals.add(q.Verdict)
		}
	}
	for i := range r.Levels {
		if r.Levels[i].Run {
			r.Levels[i].Status, r.Levels[i].Why = Undecided, "not checked: the run stopped before its specs ("+s.Stage+")"
			r.Levels[i].ToVerify, r.Levels[i].MUSTs = nil, nil
		}
	}
}

// ExitEngine is the exit code of a run that could not decide.
const ExitEngine = 2

const stoppedBefore = "not checked: the run stopped before its specs"

// byStop reports whether a requirement's error is only the stop's echo (a
// check never run, or an exchange never sent): renderings list these as
// one line under the stop, not one line each.
func byStop(r *Report, q ReqResult) bool {
	return r.Stopped != nil && q.Verdict == Error &&
		(strings.HasPrefix(q.Message, stoppedBefore) || strings.Contains(q.Message, "the target stopped answering"))
}

// stopLines are the lines every rendering gives a stopped run: why, what
// to do, and which requirements it left unchecked.
func stopLines(r *Report) (why, hint, unchecked string) {
	s := r.Stopped
	if s == nil {
		return "", "", ""
	}
	var ids []string
	for _, q := range r.Requirements {
		if byStop(r, q) {
			ids = append(ids, q.ID)
		}
	}
	if len(ids) > 0 {
		unchecked = fmt.Sprintf("%d requirement(s) not checked because the run stopped: %s", len(ids), list(ids))
	}
	return fmt.Sprintf("the run stopped (%s): %s", s.Stage, s.Message), s.Hint, unchecked
}
