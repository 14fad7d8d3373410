package reportcli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/harn-conform/conform/reports"
)

// DiffFormat is the marker of `conform report diff --format json`.
const DiffFormat = "conform-report-diff/v1"

// Change kinds.
const (
	Worse   = "worse"
	Better  = "better"
	Changed = "changed" // between pass and not applicable, or levels not ranked
	Added   = "added"   // only in B
	Removed = "removed" // only in A
)

// Diff is what changed from report A to report B.
type Diff struct {
	Format       string      `json:"format"`
	A            Side        `json:"a"`
	B            Side        `json:"b"`
	Regressed    bool        `json:"regressed"`
	Levels       []LevelDiff `json:"levels"`
	Requirements []ReqDiff   `json:"requirements"`
	NewlyFailing []string    `json:"newly_failing"`
	NewlyPassing []string    `json:"newly_passing"`
	ExitCode     int         `json:"exit_code"`
}

// Side names one of the two reports.
type Side struct {
	File      string `json:"file"`
	Target    string `json:"target"`
	StartedAt string `json:"started_at"`
	Tool      string `json:"tool"`
	ExitCode  int    `json:"exit_code"`
}

// LevelDiff is one level whose status changed ("" = absent).
type LevelDiff struct {
	Level  string `json:"level"`
	From   string `json:"from"`
	To     string `json:"to"`
	Change string `json:"change"`
}

// ReqDiff is one requirement whose verdict changed ("" = absent).
type ReqDiff struct {
	ID      string `json:"id"`
	Level   string `json:"level"`
	Keyword string `json:"keyword"`
	From    string `json:"from"`
	To      string `json:"to"`
	Change  string `json:"change"`
	// Message is B's message (A's for a removed requirement), clipped.
	Message  string `json:"message,omitempty"`
	Expected bool   `json:"expected,omitempty"` // B's baseline expects it
}

// verdictRank orders verdicts by how bad they are for the target; pass and
// not applicable tie. A verdict this version does not know ranks as fail:
// never read an unknown verdict as passed.
func verdictRank(v string) int {
	switch reports.Verdict(v) {
	case reports.Pass, reports.Skip, "":
		return 0
	case reports.Warn:
		return 1
	case reports.Unverified:
		return 2
	case reports.Error:
		return 3
	}
	return 4
}

// statusRank orders the statuses of a checked level; -1 for a level not
// checked (not claimed, not requested) or not decided (undecided: the run
// stopped), which is not ranked against them.
func statusRank(s string) int {
	switch reports.LevelStatus(s) {
	case reports.Conformant:
		return 0
	case reports.Partial:
		return 1
	case reports.Nonconformant:
		return 2
	}
	return -1
}

func side(file string, r *reports.Report) Side {
	return Side{File: file, Target: r.Target, StartedAt: r.StartedAt, Tool: strings.TrimSpace(r.Tool.Name + " " + r.Tool.Version), ExitCode: r.ExitCode}
}

// Compare diffs report a (before) and b (after).
func Compare(fileA string, a *reports.Report, fileB string, b *reports.Report) *Diff {
	d := &Diff{Format: DiffFormat, A: side(fileA, a), B: side(fileB, b),
		Levels: []LevelDiff{}, Requirements: []ReqDiff{}, NewlyFailing: []string{}, NewlyPassing: []string{}}
	la := map[string]string{}
	for _, l := range a.Levels {
		la[string(l.Level)] = string(l.Status)
	}
	lb := map[string]string{}
	var levels []string
	for _, l := range a.Levels {
		levels = append(levels, string(l.Level))
	}
	for _, l := range b.Levels {
		lb[string(l.Level)] = string(l.Status)
		if _, ok := la[string(l.Level)]; !ok {
			levels = append(levels, string(l.Level))
		}
	}
	seenLevel := map[string]bool{}
	for _, l := range levels {
		if seenLevel[l] {
			continue
		}
		seenLevel[l] = true
		from, to := la[l], lb[l]
		if from == to {
			continue
		}
		ld := LevelDiff{Level: l, From: from, To: to, Change: Changed}
		rf, rt := statusRank(from), statusRank(to)
		switch {
		case from == "":
			ld.Change = Added
		case to == "":
			ld.Change = Removed
		case rf >= 0 && rt >= 0 && rt > rf:
			ld.Change = Worse
		case rf >= 0 && rt >= 0 && rt < rf:
			ld.Change = Better
		}
		d.Levels = append(d.Levels, ld)
	}
	ra := map[string]reports.ReqResult{}
	for _, q := range a.Requirements {
		ra[q.ID] = q
	}
	rb := map[string]bool{}
	for _, q := range b.Requirements {
		rb[q.ID] = true
		p, had := ra[q.ID]
		from, to := string(p.Verdict), string(q.Verdict)
		if to == string(reports.Fail) && from != to {
			d.NewlyFailing = append(d.NewlyFailing, q.ID)
		}
		if to == string(reports.Pass) && from != to {
			d.NewlyPassing = append(d.NewlyPassing, q.ID)
		}
		if had && from == to {
			continue
		}
		rd := ReqDiff{ID: q.ID, Level: q.Level, Keyword: q.Keyword, From: from, To: to, Message: clipRunes(q.Message, 500), Expected: q.Expected}
		switch rf, rt := verdictRank(from), verdictRank(to); {
		case rt > rf:
			rd.Change = Worse
		case rt < rf:
			rd.Change = Better
		case !had:
			rd.Change = Added
		default:
			rd.Change = Changed
		}
		d.Requirements = append(d.Requirements, rd)
	}
	for _, q := range a.Requirements {
		if !rb[q.ID] {
			d.Requirements = append(d.Requirements, ReqDiff{ID: q.ID, Level: q.Level, Keyword: q.Keyword, From: string(q.Verdict), Change: Removed, Message: clipRunes(q.Message, 500)})
		}
	}
	order := map[string]int{Worse: 0, Added: 1, Changed: 2, Better: 3, Removed: 4}
	sort.SliceStable(d.Requirements, func(i, j int) bool {
		x, y := d.Requirements[i], d.Requirements[j]
		if order[x.Change] != order[y.Change] {
			return order[x.Change] < order[y.Change]
		}
		return x.ID < y.ID
	})
	sort.Strings(d.NewlyFailing)
	sort.Strings(d.NewlyPassing)
	for _, q := range d.Requirements {
		if q.Change == Worse {
			d.Regressed = true
		}
	}
	for _, l := range d.Levels {
		if l.Change == Worse {
			d.Regressed = true
		}
	}
	if d.Regressed {
		d.ExitCode = ExitRegressed
	}
	return d
}

func writeDiffJSON(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(d)
}

func orAbsent(s string) string {
	if s == "" {
		return "(absent)"
	}
	return s
}

func writeDiffText(w io.Writer, d *Diff) error {
	var b strings.Builder
	fmt.Fprintf(&b, "conform report diff\n  A: %s — %s, started %s, exit %d\n  B: %s — %s, started %s, exit %d\n",
		termSafe(d.A.File, 200), termSafe(d.A.Target, 200), termSafe(d.A.StartedAt, 40), d.A.ExitCode,
		termSafe(d.B.File, 200), termSafe(d.B.Target, 200), termSafe(d.B.StartedAt, 40), d.B.ExitCode)
	if len(d.Levels) == 0 {
		b.WriteString("\nlevels: no status changed\n")
	} else {
		b.WriteString("\nlevels:\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, l := range d.Levels {
			fmt.Fprintf(tw, "  %s\t%s\t%s → %s\n", strings.ToUpper(l.Change), termSafe(l.Level, 40), termSafe(orAbsent(l.From), 40), termSafe(orAbsent(l.To), 40))
		}
		tw.Flush()
	}
	counts := map[string]int{}
	for _, q := range d.Requirements {
		counts[q.Change]++
	}
	if len(d.Requirements) == 0 {
		b.WriteString("\nrequirements: no verdict changed\n")
	} else {
		var parts []string
		for _, k := range []string{Worse, Better, Changed, Added, Removed} {
			if counts[k] > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
			}
		}
		fmt.Fprintf(&b, "\nrequirements: %d changed (%s)\n", len(d.Requirements), strings.Join(parts, ", "))
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, q := range d.Requirements {
			exp := ""
			if q.Expected {
				exp = " (expected by B's baseline)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s → %s%s\t%s\n", strings.ToUpper(q.Change), termSafe(q.ID, 20), termSafe(q.Keyword, 12),
				termSafe(orAbsent(q.From), 20), termSafe(orAbsent(q.To), 20), exp, termSafe(q.Message, 160))
		}
		tw.Flush()
	}
	fmt.Fprintf(&b, "\nnewly failing (%d): %s\nnewly passing (%d): %s\n", len(d.NewlyFailing), idList(d.NewlyFailing), len(d.NewlyPassing), idList(d.NewlyPassing))
	if d.Regressed {
		fmt.Fprintf(&b, "result: regressed: %d requirement(s) and %d level(s) got worse (exit %d)\n", counts[Worse], countLevels(d.Levels, Worse), d.ExitCode)
	} else {
		fmt.Fprintf(&b, "result: nothing got worse (exit %d)\n", d.ExitCode)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func countLevels(ls []LevelDiff, change string) int {
	n := 0
	for _, l := range ls {
		if l.Change == change {
			n++
		}
	}
	return n
}

func idList(ids []string) string {
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, ", ")
}

// termSafe makes a report's text safe for a terminal: one line, no control
// characters (no escape sequences), no bidirectional overrides, at most n
// runes cut at a word boundary.
func termSafe(s string, n int) string {
	var b strings.Builder
	space := false
	for _, c := range s {
		switch {
		case unicode.IsSpace(c):
			space = b.Len() > 0
			continue
		case unicode.IsControl(c), c == utf8.RuneError, unicode.Is(unicode.Bidi_Control, c), c == '\u200b', c == '\ufeff':
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(c)
	}
	return clipRunes(b.String(), n)
}

// clipRunes shortens s to at most n runes, at the last space in the second
// half of the limit when there is one, marking the cut with "…".
func clipRunes(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	cut := n
	for i := n; i >= n/2 && i > 0; i-- {
		if unicode.IsSpace(rs[i]) {
			cut = i
			break
		}
	}
	return strings.TrimRightFunc(string(rs[:cut]), unicode.IsSpace) + "…"
}
