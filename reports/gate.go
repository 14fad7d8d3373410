package reports

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/requirements"
)

// The CI gate (docs/ci.md#choosing-the-gate): what makes a run exit 1 or
// 2, decided from the requirements' verdicts and the user's choice of what
// fails it (--fail-on). Level statuses say how conformant the target is;
// the gate says whether the job goes red. Every report shows, first, what
// the gate decided (Gate.Summary), and every requirement that fails it
// (ReqResult.Gate): a <failure> in junit.xml, an annotation in the Action.

// gateLevel marks a checked level's requirements that fail the gate: its
// failed MUSTs and errors always, its unverified observable MUSTs when
// strict (--fail-on unverified, and a level the target claims or that
// failed).
func gateLevel(reqs []ReqResult, level requirements.Level, failed, errored, unverified []string, strict bool) {
	for i := range reqs {
		q := &reqs[i]
		if q.Level != string(level) {
			continue
		}
		switch {
		case slices.Contains(failed, q.ID):
			q.Gate = GateFail
		case slices.Contains(errored, q.ID):
			q.Gate = GateError
		case strict && slices.Contains(unverified, q.ID):
			q.Gate = GateUnverified
		case q.Stale:
			q.Gate = GateStale
		}
	}
}

// applyGate fills r.Gate (its FailOn set) from the requirements' gate
// marks and verdicts, and sets the exit code: 1 for a failed MUST; else 2
// for an error (the run could not decide); else 1 for an unverified MUST
// under the strict gate or a stale baseline entry; else 0. A stopped run
// exits 2 whatever its verdicts.
func applyGate(r *Report) {
	g := r.Gate
	if g == nil {
		g = &Gate{FailOn: config.FailOnUnverified}
		r.Gate = g
	}
	run, claimed := map[string]bool{}, map[string]bool{}
	for _, l := range r.Levels {
		run[string(l.Level)] = l.Run
		claimed[string(l.Level)] = l.Status != NotClaimed
	}
	g.Failed, g.Errored, g.Unverified, g.Stale = []string{}, []string{}, []string{}, []string{}
	for _, q := range r.Requirements {
		if !run[q.Level] {
			continue
		}
		switch {
		case q.Gate == GateFail:
			g.Failed = append(g.Failed, q.ID)
		case q.Gate == GateError:
			g.Errored = append(g.Errored, q.ID)
		case q.Gate == GateStale:
			g.Stale = append(g.Stale, q.ID)
		case q.Gate == GateUnverified || q.Verdict == Unverified && mandatory(q) && !q.Expected && claimed[q.Level] && inToVerify(r, q):
			g.Unverified = append(g.Unverified, q.ID)
		}
	}
	strict := g.FailOn != config.FailOnFailures
	switch {
	case r.Stopped != nil:
		r.ExitCode = ExitEngine
	case len(g.Failed) > 0:
		r.ExitCode = 1
	case len(g.Errored) > 0:
		r.ExitCode = ExitEngine
	case len(g.Stale) > 0 || strict && gated(r, GateUnverified):
		r.ExitCode = 1
	default:
		r.ExitCode = 0
	}
	g.Passed = r.ExitCode == 0
	g.Summary = gateSummary(r)
}

// inToVerify reports whether an unverified requirement is one its level
// lists to verify (an observable MUST of a level that ran).
func inToVerify(r *Report, q ReqResult) bool {
	for _, l := range r.Levels {
		if string(l.Level) != q.Level {
			continue
		}
		for _, rm := range l.ToVerify {
			if slices.Contains(rm.Requirements, q.ID) {
				return true
			}
		}
	}
	return false
}

// gated reports whether some requirement fails the gate for reason.
func gated(r *Report, reason string) bool {
	return slices.ContainsFunc(r.Requirements, func(q ReqResult) bool { return q.Gate == reason })
}

// gateSummary is the gate's one line: what it decided and why.
func gateSummary(r *Report) string {
	g := r.Gate
	gate := "--fail-on " + g.FailOn
	if s := r.Stopped; s != nil {
		return fmt.Sprintf("not decided (exit 2): the run stopped (%s): %s", s.Stage, oneLine(firstLine(s.Message)))
	}
	var parts []string
	add := func(ids []string, what string) {
		if len(ids) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s: %s", len(ids), what, list(ids)))
		}
	}
	add(g.Failed, "MUST(s) failed")
	add(g.Errored, "requirement(s) could not be checked (suite or network error)")
	strict := g.FailOn != config.FailOnFailures
	if strict {
		add(g.Unverified, "observable MUST(s) unverified")
	}
	add(g.Stale, "stale baseline entr(y/ies) now pass")
	var also []string
	if !strict && len(g.Unverified) > 0 {
		also = append(also, fmt.Sprintf("%d observable MUST(s) unverified, which do not fail this gate: %s", len(g.Unverified), list(g.Unverified)))
	}
	if n := optedOut(r); len(n) > 0 {
		also = append(also, fmt.Sprintf("%d observable MUST(s) not checked by choice (--areas, --skip-areas): %s", len(n), list(n)))
	}
	if r.Totals.Expected > 0 {
		also = append(also, fmt.Sprintf("%d requirement(s) expected by the baseline", r.Totals.Expected))
	}
	tail := ""
	if len(also) > 0 {
		tail = "; " + strings.Join(also, "; ")
	}
	switch r.ExitCode {
	case 0:
		return fmt.Sprintf("passed (%s): no requirement of the levels checked fails it%s", gate, tail)
	case 1:
		return fmt.Sprintf("failed (%s, exit 1): %s%s", gate, strings.Join(parts, "; "), tail)
	default:
		return fmt.Sprintf("not decided (%s, exit 2): %s%s", gate, strings.Join(parts, "; "), tail)
	}
}

// optedOut lists the observable MUSTs of the checked levels that the user
// left out by area.
func optedOut(r *Report) []string {
	var ids []string
	for _, q := range r.Requirements {
		if q.OptedOut && mandatory(q) {
			ids = append(ids, q.ID)
		}
	}
	return ids
}
