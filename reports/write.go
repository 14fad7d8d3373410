package reports

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"
)

// File names inside the report directory.
const (
	JSONFile     = "conform.json"
	JUnitFile    = "junit.xml"
	MarkdownFile = "summary.md"
	HTMLFile     = "report.html"
)

// BadgeFile is the name of a level's shields.io endpoint badge
// ("badge-core.json").
func BadgeFile(level string) string { return "badge-" + level + ".json" }

// Permissions of what WriteAll creates: readable by the CI user that
// uploads the artifacts, whatever the umask of the temporary files.
const (
	FileMode os.FileMode = 0o644
	DirMode  os.FileMode = 0o755
)

// JUnit granularities (the values of config.JUnit).
const (
	JUnitPerRequirement = "requirement" // one testcase per requirement (default)
	JUnitPerSpec        = "spec"        // one testcase per Ginkgo spec
)

// WriteOptions say how WriteAllWith renders the report files.
type WriteOptions struct {
	// JUnit is the testcase granularity of junit.xml: JUnitPerRequirement
	// (also for "") or JUnitPerSpec.
	JUnit string
}

// Files lists the names WriteAll writes into the report directory for r.
func Files(r *Report) []string {
	names := []string{JSONFile, JUnitFile, MarkdownFile, HTMLFile}
	for _, l := range r.Levels {
		names = append(names, BadgeFile(string(l.Level)))
	}
	return names
}

// WriteAll writes every report file into dir, creating it, with the junit
// granularity the run was configured with (the report's config "junit").
func WriteAll(dir string, r *Report) error {
	return WriteAllWith(dir, r, WriteOptions{JUnit: r.Config["junit"]})
}

// WriteAllWith writes conform.json, junit.xml, summary.md, report.html and
// one badge-LEVEL.json per level into dir (created 0755 when missing), each
// file 0644 and replaced atomically.
func WriteAllWith(dir string, r *Report, opts WriteOptions) error {
	if opts.JUnit != "" && opts.JUnit != JUnitPerRequirement && opts.JUnit != JUnitPerSpec {
		return fmt.Errorf("junit granularity %q: want %s or %s", opts.JUnit, JUnitPerRequirement, JUnitPerSpec)
	}
	if _, err := os.Stat(dir); os.IsNotExist(err) {
		if err := os.MkdirAll(dir, DirMode); err != nil {
			return fmt.Errorf("report directory: %w", err)
		}
		// MkdirAll's mode is cut by the umask; the report directory itself
		// is meant to be readable.
		if err := os.Chmod(dir, DirMode); err != nil {
			return fmt.Errorf("report directory: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	for _, p := range SchemaProblems(r) {
		if !slices.Contains(r.SuiteDefects, p) {
			r.SuiteDefects = append(r.SuiteDefects, p)
		}
	}
	type file struct {
		name  string
		write func(io.Writer) error
	}
	files := []file{
		{JSONFile, func(w io.Writer) error { return WriteJSON(w, r) }},
		{JUnitFile, func(w io.Writer) error { return WriteJUnit(w, r, opts.JUnit) }},
		{MarkdownFile, func(w io.Writer) error { return WriteMarkdown(w, r) }},
		{HTMLFile, func(w io.Writer) error { return WriteHTML(w, r) }},
	}
	for _, l := range r.Levels {
		l := l
		files = append(files, file{BadgeFile(string(l.Level)), func(w io.Writer) error { return WriteBadge(w, l) }})
	}
	for _, f := range files {
		if err := writeFile(filepath.Join(dir, f.name), f.write); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes through a temporary file and renames it, so a crash
// never leaves a half-written report for CI to misread. The temporary file
// is created 0600; it is made FileMode before the rename.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	// Buffered: the HTML template writes thousands of small pieces.
	bw := bufio.NewWriterSize(f, 64<<10)
	err = fill(bw)
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(FileMode); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteJSON writes conform.json.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// Badge is a shields.io endpoint badge
// (https://shields.io/badges/endpoint-badge).
type Badge struct {
	SchemaVersion int    `json:"schemaVersion"`
	Label         string `json:"label"`
	Message       string `json:"message"`
	Color         string `json:"color"`
}

// BadgeFor is a level's badge: label "harn LEVEL", the status as message
// ("not claimed" for not_claimed), and a colour by status. A level that is
// conformant only because a baseline expects some of its requirements says
// so in the message and is not green.
func BadgeFor(l LevelResult) Badge {
	b := Badge{SchemaVersion: 1, Label: "harn " + string(l.Level), Message: strings.ReplaceAll(string(l.Status), "_", " ")}
	switch l.Status {
	case Conformant:
		b.Color = "brightgreen"
		if l.Counts.Expected > 0 {
			b.Color = "yellowgreen"
			b.Message += fmt.Sprintf(" (%d known failure%s)", l.Counts.Expected, plural(l.Counts.Expected))
		}
	case Partial:
		b.Color = "yellow"
	case Nonconformant:
		b.Color = "red"
	default:
		b.Color = "lightgrey"
	}
	return b
}

// WriteBadge writes a level's badge-LEVEL.json.
func WriteBadge(w io.Writer, l LevelResult) error {
	enc := json.NewEncoder(w)
	return enc.Encode(BadgeFor(l))
}

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

func statusText(s LevelStatus) string { return strings.ReplaceAll(string(s), "_", " ") }

func mandatory(q ReqResult) bool { return q.Keyword == "MUST" || q.Keyword == "MUST NOT" }

// WriteMarkdown writes summary.md, for a CI step summary: the levels, then
// every failed, errored, unverified and not applicable MUST with its reason
// (and what to do, where there is something), the baseline's effect, the
// warnings and the notes. Nothing is cut mid-word; table cells are clipped
// at a word boundary, notes are written whole.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# conform: %s\n\n", verdictLine(r))
	fmt.Fprintf(&b, "Target %s, protocol %s, %s %s, seed %d, %.1f s.\n\n", mdCode(r.Target), mdCode(r.ProtocolVersion), mdText(r.Tool.Name), mdText(r.Tool.Version), r.Seed, r.DurationMS/1000)
	if s := r.Stopped; s != nil {
		fmt.Fprintf(&b, "**The run stopped (%s):** %s\n\n", mdText(s.Stage), mdText(s.Message))
		if s.Hint != "" {
			fmt.Fprintf(&b, "What to do: %s\n\n", mdText(s.Hint))
		}
	}
	withBaseline := r.Baseline != nil
	b.WriteString("| Level | Status | Pass | Fail | Warn | Unverified | Not applicable | Error |")
	if withBaseline {
		b.WriteString(" Expected |")
	}
	b.WriteString("\n|---|---|---:|---:|---:|---:|---:|---:|")
	if withBaseline {
		b.WriteString("---:|")
	}
	b.WriteString("\n")
	for _, l := range r.Levels {
		if !l.Run {
			fmt.Fprintf(&b, "| %s | %s | – | – | – | – | – | – |", l.Level, statusText(l.Status))
			if withBaseline {
				b.WriteString(" – |")
			}
			b.WriteString("\n")
			continue
		}
		c := l.Counts
		fmt.Fprintf(&b, "| %s | **%s** | %d | %d | %d | %d | %d | %d |", l.Level, statusText(l.Status), c.Pass, c.Fail, c.Warn, c.Unverified, c.Skip, c.Error)
		if withBaseline {
			fmt.Fprintf(&b, " %d |", c.Expected)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n")
	for _, l := range r.Levels {
		fmt.Fprintf(&b, "- **%s** %s: %s\n", l.Level, statusText(l.Status), mdText(orDash(l.Why)))
	}
	run := map[string]bool{}
	for _, l := range r.Levels {
		run[string(l.Level)] = l.Run
	}
	pick := func(keep func(ReqResult) bool) []ReqResult {
		var rows []ReqResult
		for _, q := range r.Requirements {
			if keep(q) {
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
	table("Failures", pick(func(q ReqResult) bool { return q.Verdict == Fail && !q.Expected }),
		"| Requirement | Level | Keyword | What happened |", func(q ReqResult) string { return mdCell(q.Message) })
	if _, _, unchecked := stopLines(r); unchecked != "" {
		fmt.Fprintf(&b, "%s.\n\n", mdText(unchecked))
	}
	table("Errors (the suite or the network, not the target)", pick(func(q ReqResult) bool { return q.Verdict == Error && !byStop(r, q) }),
		"| Requirement | Level | Keyword | What happened |", func(q ReqResult) string { return mdCell(q.Message) })
	table("Unverified MUSTs", pick(func(q ReqResult) bool { return q.Verdict == Unverified && mandatory(q) && !q.Expected }),
		"| Requirement | Level | Keyword | Why | To verify |", func(q ReqResult) string {
			return mdCell(q.Message) + " | " + mdCell(orDash(q.Remedy))
		})
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
	table("Not applicable MUSTs", pick(func(q ReqResult) bool { return q.Verdict == Skip && mandatory(q) && run[q.Level] }),
		"| Requirement | Level | Keyword | Why |", func(q ReqResult) string { return mdCell(q.Message) })
	table("Warnings", pick(func(q ReqResult) bool { return q.Verdict == Warn && !q.Expected }),
		"| Requirement | Level | Keyword | What happened |", func(q ReqResult) string { return mdCell(q.Message) })
	var notRun []string
	for _, l := range r.Levels {
		if l.Run {
			continue
		}
		n := 0
		for _, q := range r.Requirements {
			if q.Level == string(l.Level) && mandatory(q) {
				n++
			}
		}
		notRun = append(notRun, fmt.Sprintf("- %s, %s: %d MUST requirement(s) not checked: %s\n", l.Level, statusText(l.Status), n, mdText(orDash(l.Reason))))
	}
	if len(notRun) > 0 {
		b.WriteString("\n## Levels not checked\n\n" + strings.Join(notRun, ""))
	}
	for _, l := range r.Levels {
		if len(l.ToVerify) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## Unverified %s MUSTs: how to verify them\n\n", l.Level)
		for _, rm := range l.ToVerify {
			fmt.Fprintf(&b, "- %s: %s\n", mdText(rm.Remedy), strings.Join(rm.Requirements, ", "))
		}
	}
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
	fmt.Fprintf(&b, "\nFull details, transcripts and reproducing `curl` lines: `%s` and `%s`.\n", JSONFile, HTMLFile)
	_, err := io.WriteString(w, b.String())
	return err
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
	switch {
	case r.Stopped != nil && r.Stopped.Stage == StageTargetStopped:
		return "not decided: the target stopped answering"
	case r.Stopped != nil:
		return "not decided: the run stopped before its checks (" + r.Stopped.Stage + ")"
	case r.ExitCode == 0 && expected > 0:
		return fmt.Sprintf("conformant apart from %d requirement%s the baseline expects", expected, plural(expected))
	case r.ExitCode == 0:
		return "conformant"
	case r.ExitCode == 1 && stale && ExitCode(r.Levels) == 0:
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

// WriteTable writes the console's final table.
func WriteTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	withBaseline := r.Baseline != nil
	head := "LEVEL\tSTATUS\tPASS\tFAIL\tWARN\tUNVERIFIED\tSKIP\tERROR"
	if withBaseline {
		head += "\tEXPECTED"
	}
	fmt.Fprintln(tw, head)
	for _, l := range r.Levels {
		if !l.Run {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\t-\t-", l.Level, l.Status)
			if withBaseline {
				fmt.Fprint(tw, "\t-")
			}
			fmt.Fprintln(tw)
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d", l.Level, l.Status, l.Counts.Pass, l.Counts.Fail, l.Counts.Warn, l.Counts.Unverified, l.Counts.Skip, l.Counts.Error)
		if withBaseline {
			fmt.Fprintf(tw, "\t%d", l.Counts.Expected)
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	for _, l := range r.Levels {
		for _, rm := range l.ToVerify {
			fmt.Fprintf(w, "UNVERIFIED %s: %s\n  to verify: %s\n", l.Level, list(rm.Requirements), oneLine(rm.Remedy))
		}
	}
	for _, l := range r.Levels {
		var ids []string
		for _, q := range r.Requirements {
			if q.Expected && q.Level == string(l.Level) {
				ids = append(ids, q.ID)
			}
		}
		if len(ids) > 0 {
			fmt.Fprintf(w, "EXPECTED %s (by %s): %s\n", l.Level, baselineFile(r), list(ids))
		}
	}
	for _, q := range r.Requirements {
		switch {
		case q.Expected:
		case q.Stale:
			fmt.Fprintf(w, "STALE %s: passes now; remove it from the baseline %s\n", q.ID, baselineFile(r))
		case byStop(r, q):
		case q.Verdict == Fail || q.Verdict == Error:
			fmt.Fprintf(w, "%s %s: %s\n  %s\n", strings.ToUpper(string(q.Verdict)), q.ID, oneLine(firstLine(q.Message)), q.Link)
		}
	}
	if why, hint, unchecked := stopLines(r); why != "" {
		if unchecked != "" {
			fmt.Fprintf(w, "ERROR %s\n", unchecked)
		}
		fmt.Fprintf(w, "STOPPED %s\n", oneLine(why))
		if hint != "" {
			fmt.Fprintf(w, "  hint: %s\n", oneLine(hint))
		}
	}
	fmt.Fprintf(w, "result: %s (exit %d)\n", verdictLine(r), r.ExitCode)
}
