package reports

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/config"
)

// mdReplacer escapes what Markdown (and the HTML GitHub renders inside it)
// would otherwise interpret in a target's text.
var mdReplacer = strings.NewReplacer(
	`\`, `\\`, "`", "\\`", "*", `\*`, "_", `\_`, "[", `\[`, "]", `\]`, "|", `\|`, "~", `\~`, "#", `\#`,
	"<", "&lt;", ">", "&gt;", "&", "&amp;",
)

// mdText is text for a Markdown line or table cell: one line, escaped.
func mdText(s string) string { return mdReplacer.Replace(oneLine(s)) }

// mdCell is mdText clipped at a word boundary, for table cells.
func mdCell(s string) string { return mdReplacer.Replace(clip(oneLine(s), 300)) }

// mdCode is s as a Markdown code span.
func mdCode(s string) string {
	s = oneLine(s)
	fence := "`"
	for strings.Contains(s, fence) {
		fence += "`"
	}
	if strings.HasPrefix(s, "`") || strings.HasSuffix(s, "`") {
		s = " " + s + " "
	}
	return fence + s + fence
}

func reqLink(q ReqResult) string {
	if q.Link == "" {
		return q.ID
	}
	return "[" + q.ID + "](" + strings.NewReplacer("(", "%28", ")", "%29", " ", "%20").Replace(q.Link) + ")"
}

// WriteMarkdown writes summary.md, for a CI step summary: the verdict, the
// gate's decision first, the levels (with the reason a level was not
// checked), then each thing to look at once: every failed and errored
// requirement, every unverified MUST with why (and, below it, what to do,
// each remedy once), the baseline's effect, what was not checked by
// choice or is not applicable, the warnings and the notes. Nothing is cut
// mid-word; table cells are clipped at a word boundary, notes are written
// whole.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# conform: %s\n\n", verdictLine(r))
	if g := r.Gate; g != nil {
		fmt.Fprintf(&b, "**Gate:** %s\n\n", mdText(g.Summary))
	}
	fmt.Fprintf(&b, "Target %s, protocol %s, %s %s, seed %d, %.1f s.\n\n", mdCode(r.Target), mdCode(r.ProtocolVersion), mdText(r.Tool.Name), mdText(r.Tool.Version), r.Seed, r.DurationMS/1000)
	if s := r.Stopped; s != nil {
		if r.Gate == nil {
			fmt.Fprintf(&b, "**The run stopped (%s):** %s\n\n", mdText(s.Stage), mdText(s.Message))
		}
		if s.Hint != "" {
			fmt.Fprintf(&b, "What to do: %s\n\n", mdText(s.Hint))
		}
	}
	withBaseline := r.Baseline != nil
	b.WriteString("| Level | Status | Pass | Fail | Warn | Unverified | Not applicable | Error |")
	if withBaseline {
		b.WriteString(" Expected |")
	}
	b.WriteString(" MUSTs verified without a hook | with a hook | not verified |")
	b.WriteString("\n|---|---|---:|---:|---:|---:|---:|---:|")
	if withBaseline {
		b.WriteString("---:|")
	}
	b.WriteString("---:|---:|---:|\n")
	var hooks []string
	for _, l := range r.Levels {
		if !l.Run || l.MUSTs == nil {
			status := mdCell(levelReason(l))
			fmt.Fprintf(&b, "| %s | %s | – | – | – | – | – | – |", l.Level, status)
			if withBaseline {
				b.WriteString(" – |")
			}
			b.WriteString(" – | – | – |\n")
			continue
		}
		c, m := l.Counts, l.MUSTs
		fmt.Fprintf(&b, "| %s | **%s** | %d | %d | %d | %d | %d | %d |", l.Level, statusText(l.Status), c.Pass, c.Fail, c.Warn, c.Unverified, c.Skip, c.Error)
		if withBaseline {
			fmt.Fprintf(&b, " %d |", c.Expected)
		}
		fmt.Fprintf(&b, " %d of %d | %d | %d |\n", m.VerifiedWithoutHook, m.Observable, m.VerifiedWithHook, m.NotVerified)
		for _, h := range m.Hooks {
			if !slices.Contains(hooks, h) {
				hooks = append(hooks, h)
			}
		}
	}
	slices.Sort(hooks)
	fmt.Fprintf(&b, "\nMUSTs: the level's observable MUSTs verified without any `conform.*` test hook, verified with one (some of their evidence came through it%s), and not verified (unverified or error).\n", mdText(hookNames(hooks)))
	run := map[string]bool{}
	for _, l := range r.Levels {
		run[string(l.Level)] = l.Run
	}
	pick := func(keep func(ReqResult) bool) []ReqResult {
		var rows []ReqResult
		for _, q := range r.Requirements {
			if run[q.Level] && keep(q) {
				rows = append(rows, q)
			}
		}
		return rows
	}
	table := func(title string, rows []ReqResult, head string, cells func(ReqResult) string) {
		if len(rows) == 0 {
			return
		}
		cols := strings.Count(head, "|") - 1
		fmt.Fprintf(&b, "\n## %s (%d)\n\n%s\n|%s\n", title, len(rows), head, strings.Repeat("---|", cols))
		for _, q := range rows {
			fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", reqLink(q), q.Level, q.Keyword, cells(q))
		}
	}
	what := func(q ReqResult) string {
		m := mdCell(q.Message)
		if len(q.Hooks) > 0 {
			m += " (seen through " + mdText(strings.Join(q.Hooks, ", ")) + ")"
		}
		return m
	}
	table("Failures", pick(func(q ReqResult) bool { return q.Verdict == Fail && !q.Expected }),
		"| Requirement | Level | Keyword | What happened |", what)
	if _, _, unchecked := stopLines(r); unchecked != "" {
		fmt.Fprintf(&b, "\n%s.\n", mdText(unchecked))
	}
	table("Errors (the suite or the network, not the target)", pick(func(q ReqResult) bool { return q.Verdict == Error && !byStop(r, q) }),
		"| Requirement | Level | Keyword | What happened |", func(q ReqResult) string { return mdCell(q.Message) })
	unverified := pick(func(q ReqResult) bool { return q.Verdict == Unverified && mandatory(q) && !q.Expected })
	title := "Unverified MUSTs"
	if r.Gate != nil && len(unverified) > 0 {
		if gated(r, GateUnverified) {
			title += ": they fail the gate"
		} else if r.Gate.FailOn == config.FailOnFailures {
			title += ": listed, the gate fails on failures only"
		}
	}
	table(title, unverified, "| Requirement | Level | Keyword | Why |", func(q ReqResult) string { return mdCell(q.Message) })
	var remedies []Remedy
	for _, l := range r.Levels {
		for _, rm := range l.ToVerify {
			if i := slices.IndexFunc(remedies, func(x Remedy) bool { return x.Remedy == rm.Remedy }); i >= 0 {
				remedies[i].Requirements = append(remedies[i].Requirements, rm.Requirements...)
			} else {
				remedies = append(remedies, Remedy{Remedy: rm.Remedy, Requirements: slices.Clone(rm.Requirements)})
			}
		}
	}
	if len(remedies) > 0 {
		b.WriteString("\nTo verify them:\n\n")
		for _, rm := range remedies {
			fmt.Fprintf(&b, "- %s: %s\n", mdText(rm.Remedy), strings.Join(rm.Requirements, ", "))
		}
	}
	table("Expected by the baseline", pick(func(q ReqResult) bool { return q.Expected }),
		"| Requirement | Level | Keyword | Verdict | What happened | Baseline reason |", func(q ReqResult) string {
			reason := q.BaselineReason
			if generatedReason(q) {
				reason = "(as written by baseline write)"
			}
			return string(q.Verdict) + " | " + mdCell(q.Message) + " | " + mdCell(orDash(reason))
		})
	if stale := pick(func(q ReqResult) bool { return q.Stale }); len(stale) > 0 {
		table("Stale baseline entries: they pass now, remove them from "+mdText(baselineFile(r)), stale,
			"| Requirement | Level | Keyword | Baseline reason |", func(q ReqResult) string { return mdCell(orDash(q.BaselineReason)) })
	}
	if ids := optedOut(r); len(ids) > 0 {
		fmt.Fprintf(&b, "\n## Not checked by choice (%d MUSTs)\n\n%s: %s.\n", len(ids), mdText(notCheckedWhy(r)), strings.Join(ids, ", "))
	}
	table("Not applicable MUSTs", pick(func(q ReqResult) bool { return q.Verdict == Skip && mandatory(q) && !q.OptedOut }),
		"| Requirement | Level | Keyword | Why |", func(q ReqResult) string { return mdCell(q.Message) })
	table("Warnings", pick(func(q ReqResult) bool { return q.Verdict == Warn && !q.Expected }),
		"| Requirement | Level | Keyword | What happened |", what)
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
	}
	if len(r.SuiteDefects) > 0 {
		b.WriteString("\n## Suite defects (the suite's own mistakes, no verdict on the target)\n\n")
		for _, n := range r.SuiteDefects {
			fmt.Fprintf(&b, "- %s\n", mdText(n))
		}
	}
	fmt.Fprintf(&b, "\nFull details, transcripts and reproducing `curl` lines: `%s` and `%s`.", JSONFile, HTMLFile)
	if un := Unjudged(r); len(un) > 0 {
		fmt.Fprintf(&b, " No badge for %s: not judged in this run (a badge another run wrote is left as it is).", strings.Join(un, ", "))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// notCheckedWhy names the settings that left areas out, as the report's
// config has them.
func notCheckedWhy(r *Report) string {
	var parts []string
	if a := r.Config["areas"]; a != "" {
		parts = append(parts, "only --areas "+a)
	}
	if a := r.Config["skip_areas"]; a != "" {
		parts = append(parts, "--skip-areas "+a)
	}
	if len(parts) == 0 {
		return "left out by their area"
	}
	return "left out by " + strings.Join(parts, " and ")
}

// generatedReason says whether a requirement's baseline reason is what
// `conform baseline write` made of the same verdict and message (so a
// table need not show it twice).
func generatedReason(q ReqResult) bool {
	if q.BaselineReason == "" {
		return false
	}
	now := oneLine(string(q.Verdict) + ": " + q.Message)
	was := strings.TrimSuffix(strings.TrimSuffix(q.BaselineReason, "…"), " ")
	return strings.HasPrefix(now, was)
}
