package reports

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
)

// File names inside the report directory.
const (
	JSONFile     = "conform.json"
	JUnitFile    = "junit.xml"
	MarkdownFile = "summary.md"
)

// WriteAll writes the three report files into dir, creating it.
func WriteAll(dir string, r *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report directory: %w", err)
	}
	for name, write := range map[string]func(io.Writer, *Report) error{
		JSONFile: WriteJSON, JUnitFile: WriteJUnit, MarkdownFile: WriteMarkdown,
	} {
		if err := writeFile(filepath.Join(dir, name), func(w io.Writer) error { return write(w, r) }); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes through a temporary file and renames it, so a crash
// never leaves a half-written report for CI to misread.
func writeFile(path string, fill func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(f.Name())
	if err := fill(f); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return os.Rename(f.Name(), path)
}

// WriteJSON writes conform.json.
func WriteJSON(w io.Writer, r *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     seconds      `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Time      seconds     `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
}

// seconds renders a duration attribute with millisecond precision.
type seconds float64

func (s seconds) MarshalXMLAttr(name xml.Name) (xml.Attr, error) {
	return xml.Attr{Name: name, Value: fmt.Sprintf("%.3f", float64(s))}, nil
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name       string          `xml:"name,attr"`
	Classname  string          `xml:"classname,attr"`
	Time       seconds         `xml:"time,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Skipped    *junitMessage   `xml:"skipped,omitempty"`
	Failure    *junitMessage   `xml:"failure,omitempty"`
	Error      *junitMessage   `xml:"error,omitempty"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes junit.xml: one testsuite per level, one testcase per
// spec, requirement ids as properties.
func WriteJUnit(w io.Writer, r *Report) error {
	reqLevel := map[string]string{}
	reqMsg := map[string]ReqResult{}
	for _, q := range r.Requirements {
		reqLevel[q.ID] = q.Level
		reqMsg[q.ID] = q
	}
	byLevel := map[string]*junitSuite{}
	var order []string
	out := junitSuites{Name: "conform", Time: seconds(r.DurationMS / 1000)}
	for _, s := range r.Specs {
		level := "core"
		if len(s.Requirements) > 0 {
			level = reqLevel[s.Requirements[0]]
		}
		js := byLevel[level]
		if js == nil {
			js = &junitSuite{Name: "conform." + level, Timestamp: r.StartedAt}
			byLevel[level] = js
			order = append(order, level)
		}
		c := junitCase{Name: s.Name, Classname: "conform." + level, Time: seconds(s.DurationMS / 1000)}
		for _, id := range s.Requirements {
			c.Properties = append(c.Properties, junitProperty{Name: "requirement", Value: id})
		}
		detail := s.Message
		if len(s.Transcript) > 0 && s.Transcript[0].Curl != "" {
			detail += "\n\nreproduce the first request:\n" + s.Transcript[0].Curl
		}
		switch s.Verdict {
		case Skip:
			c.Skipped = &junitMessage{Message: "not applicable: " + s.Message}
			js.Skipped++
		case Unverified:
			m := "unverified: " + s.Message
			if s.Remedy != "" {
				m += " (to verify: " + s.Remedy + ")"
			}
			c.Skipped = &junitMessage{Message: m}
			js.Skipped++
		case Fail:
			c.Failure = &junitMessage{Message: firstLine(s.Message), Type: "nonconformant", Text: detail}
			js.Failures++
		case Error:
			c.Error = &junitMessage{Message: firstLine(s.Message), Type: "error", Text: detail}
			js.Errors++
		case Warn:
			var ws []string
			for _, id := range s.Requirements {
				for _, ev := range reqMsg[id].Evidence {
					if ev.Verdict == Warn && ev.Spec == s.Name {
						ws = append(ws, "WARN "+id+": "+ev.Message)
					}
				}
			}
			c.SystemOut = strings.Join(ws, "\n")
		}
		js.Tests++
		js.Time += c.Time
		js.Cases = append(js.Cases, c)
	}
	sort.Strings(order)
	for _, l := range order {
		js := byLevel[l]
		out.Tests += js.Tests
		out.Failures += js.Failures
		out.Errors += js.Errors
		out.Skipped += js.Skipped
		out.Suites = append(out.Suites, *js)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// mdEscape keeps a cell on one line and its pipes from splitting the table.
func mdEscape(s string) string {
	s = strings.ReplaceAll(firstLine(s), "|", `\|`)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// WriteMarkdown writes summary.md, a table for a CI step summary.
func WriteMarkdown(w io.Writer, r *Report) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# conform: %s\n\n", verdictLine(r))
	fmt.Fprintf(&b, "Target `%s`, protocol `%s`, %s %s, seed %d, %.1f s.\n\n", r.Target, r.ProtocolVersion, r.Tool.Name, r.Tool.Version, r.Seed, r.DurationMS/1000)
	b.WriteString("| Level | Status | Pass | Fail | Warn | Unverified | Skip | Error |\n|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, l := range r.Levels {
		fmt.Fprintf(&b, "| %s | %s | %d | %d | %d | %d | %d | %d |\n", l.Level, l.Status, l.Counts.Pass, l.Counts.Fail, l.Counts.Warn, l.Counts.Unverified, l.Counts.Skip, l.Counts.Error)
	}
	section := func(title string, v Verdict) {
		var rows []ReqResult
		for _, q := range r.Requirements {
			if q.Verdict == v {
				rows = append(rows, q)
			}
		}
		if len(rows) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s (%d)\n\n| Requirement | Keyword | What happened |\n|---|---|---|\n", title, len(rows))
		for _, q := range rows {
			fmt.Fprintf(&b, "| [%s](%s) | %s | %s |\n", q.ID, q.Link, q.Keyword, mdEscape(q.Message))
		}
	}
	section("Failures", Fail)
	section("Errors", Error)
	section("Warnings", Warn)
	for _, l := range r.Levels {
		if len(l.ToVerify) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n## Unverified %s MUSTs: how to verify them\n\n", l.Level)
		for _, rm := range l.ToVerify {
			fmt.Fprintf(&b, "- %s: %s\n", mdEscape(rm.Remedy), strings.Join(rm.Requirements, ", "))
		}
	}
	if len(r.Notes) > 0 {
		b.WriteString("\n## Notes\n\n")
		for _, n := range r.Notes {
			fmt.Fprintf(&b, "- %s\n", mdEscape(n))
		}
	}
	fmt.Fprintf(&b, "\nFull details, transcripts and reproducing `curl` lines: `%s`.\n", JSONFile)
	_, err := io.WriteString(w, b.String())
	return err
}

func verdictLine(r *Report) string {
	switch r.ExitCode {
	case 0:
		return "conformant"
	case 1:
		return "NOT conformant"
	default:
		return "inconclusive (suite or network errors)"
	}
}

// WriteTable writes the console's final table.
func WriteTable(w io.Writer, r *Report) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "LEVEL\tSTATUS\tPASS\tFAIL\tWARN\tUNVERIFIED\tSKIP\tERROR")
	for _, l := range r.Levels {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", l.Level, l.Status, l.Counts.Pass, l.Counts.Fail, l.Counts.Warn, l.Counts.Unverified, l.Counts.Skip, l.Counts.Error)
	}
	tw.Flush()
	for _, l := range r.Levels {
		for _, rm := range l.ToVerify {
			fmt.Fprintf(w, "UNVERIFIED %s: %s\n  to verify: %s\n", l.Level, list(rm.Requirements), rm.Remedy)
		}
	}
	for _, q := range r.Requirements {
		if q.Verdict == Fail || q.Verdict == Error {
			fmt.Fprintf(w, "%s %s: %s\n  %s\n", strings.ToUpper(string(q.Verdict)), q.ID, firstLine(q.Message), q.Link)
		}
	}
	fmt.Fprintf(w, "result: %s (exit %d)\n", verdictLine(r), r.ExitCode)
}
