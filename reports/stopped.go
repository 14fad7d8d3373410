package reports

// Stopped stages besides the preflight's (internal/preflight).
const StageTargetStopped = "target_stopped"

// Stop marks a run that ended before its specs could decide: its exit code
// is 2 whatever the verdicts so far. A run stopped before any spec (a
// preflight problem) leaves every requirement of its levels an error
// naming the reason — never a failure of the target, never a pass.
func Stop(r *Report, s Stopped) {
	r.Stopped = &s
	r.ExitCode = ExitEngine
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
			q.Verdict, q.Message, q.Remedy = Error, "not checked: the run stopped before its specs: "+s.Message, s.Hint
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
			r.Levels[i].Status, r.Levels[i].Why = Partial, "not checked: the run stopped before its specs ("+s.Stage+")"
			r.Levels[i].ToVerify = nil
		}
	}
}

// ExitEngine is the exit code of a run that could not decide.
const ExitEngine = 2
