package reports

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text helpers the formats share: one line, clipped, counted.

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// oneLine collapses every run of white space (newlines included) into one
// space and drops other control characters: hostile text stays on one line.
func oneLine(s string) string {
	var b strings.Builder
	space := false
	for _, c := range s {
		switch {
		case unicode.IsSpace(c):
			space = b.Len() > 0
			continue
		case unicode.IsControl(c) || c == utf8.RuneError:
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(c)
	}
	return b.String()
}

// clip shortens s to at most n runes, cutting at the last space before the
// limit so no word is cut (only a single word longer than half the limit is
// cut inside), and marks the cut with "…".
func clip(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	cut := -1
	for i := n; i >= n/2 && i > 0; i-- {
		if unicode.IsSpace(rs[i]) {
			cut = i
			break
		}
	}
	if cut < 0 {
		// One word runs past the limit: no space to cut at in reach.
		return string(rs[:n]) + "…"
	}
	return strings.TrimRightFunc(string(rs[:cut]), unicode.IsSpace) + " …"
}

func statusText(s LevelStatus) string { return strings.ReplaceAll(string(s), "_", " ") }

func mandatory(q ReqResult) bool { return q.Keyword == "MUST" || q.Keyword == "MUST NOT" }

func baselineFile(r *Report) string {
	if r.Baseline == nil || r.Baseline.File == "" {
		return "the baseline"
	}
	return r.Baseline.File
}

func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "—"
	}
	return s
}

func verdictLine(r *Report) string {
	stale := r.Baseline != nil && len(r.Baseline.Stale) > 0
	expected := r.Totals.Expected
	unverified, opted := 0, len(optedOut(r))
	if r.Gate != nil {
		unverified = len(r.Gate.Unverified)
	}
	var apart []string
	if unverified > 0 && r.ExitCode == 0 {
		apart = append(apart, fmt.Sprintf("%d unverified MUST%s (the gate fails on failures only)", unverified, plural(unverified)))
	}
	if opted > 0 {
		apart = append(apart, fmt.Sprintf("%d MUST%s not checked by choice", opted, plural(opted)))
	}
	if expected > 0 {
		apart = append(apart, fmt.Sprintf("%d requirement%s the baseline expects", expected, plural(expected)))
	}
	onlyStale := stale && r.Gate != nil && len(r.Gate.Failed) == 0 && len(r.Gate.Errored) == 0 && !gated(r, GateUnverified)
	switch {
	case r.Stopped != nil && r.Stopped.Stage == StageTargetStopped:
		return "not decided: the target stopped answering"
	case r.Stopped != nil:
		return "not decided: the run stopped before its checks (" + r.Stopped.Stage + ")"
	case r.ExitCode == 0 && unverified > 0:
		return "no failures, but not conformant: " + strings.Join(apart, "; ")
	case r.ExitCode == 0 && len(apart) > 0:
		return "conformant apart from " + strings.Join(apart, " and ")
	case r.ExitCode == 0:
		return "conformant"
	case r.ExitCode == 1 && onlyStale:
		if n := len(r.Baseline.Stale); n == 1 {
			return "stale baseline: 1 listed requirement passes now"
		} else {
			return fmt.Sprintf("stale baseline: %d listed requirements pass now", n)
		}
	case r.ExitCode == 1:
		return "NOT conformant"
	default:
		return "inconclusive (suite or network errors)"
	}
}

// hookNames is ": a, b" for the hooks named, or "".
func hookNames(hooks []string) string {
	if len(hooks) == 0 {
		return ""
	}
	return ": " + strings.Join(hooks, ", ")
}

// levelReason is a level's status with why, for a level not checked (or
// undecided): "not requested: skipped with --skip-levels", or the reason
// alone when it starts with the status ("not claimed in discovery
// capabilities").
func levelReason(l LevelResult) string {
	st := statusText(l.Status)
	switch {
	case l.Why == "" || l.Why == st:
		return st
	case strings.HasPrefix(l.Why, st):
		return l.Why
	}
	return st + ": " + l.Why
}
