package reports

import (
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
)

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
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       seconds         `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
}

// levelProperties are a level's testsuite properties: its status and how
// its observable MUSTs ended (docs/report-format.md#junitxml).
func levelProperties(r *Report, level string) []junitProperty {
	for _, l := range r.Levels {
		if string(l.Level) != level {
			continue
		}
		ps := []junitProperty{{Name: "status", Value: string(l.Status)}}
		if m := l.MUSTs; m != nil {
			for _, p := range []struct {
				name string
				n    int
			}{{"musts_observable", m.Observable}, {"musts_verified_without_hook", m.VerifiedWithoutHook}, {"musts_verified_with_hook", m.VerifiedWithHook},
				{"musts_failed", m.Failed}, {"musts_not_verified", m.NotVerified}, {"musts_not_applicable", m.NotApplicable}} {
				ps = append(ps, junitProperty{Name: p.name, Value: fmt.Sprint(p.n)})
			}
			if len(m.Hooks) > 0 {
				ps = append(ps, junitProperty{Name: "musts_hooks", Value: strings.Join(m.Hooks, ",")})
			}
		}
		return ps
	}
	return nil
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

// tally counts a case into its suite.
func (js *junitSuite) tally(c junitCase) {
	switch {
	case c.Failure != nil:
		js.Failures++
	case c.Error != nil:
		js.Errors++
	case c.Skipped != nil:
		js.Skipped++
	}
	js.Tests++
	js.Time += c.Time
	js.Cases = append(js.Cases, c)
}

// WriteJUnit writes junit.xml, one testsuite per level. granularity
// JUnitPerRequirement (or "") gives one testcase per requirement, named
// "REQ-ID: summary" with the level as classname, so CI test views show the
// requirement ids: fail is a <failure>, error an <error>, unverified and
// not applicable are <skipped> with the reason, warn passes with the
// warning in system-out; a requirement the baseline expects is <skipped>
// saying so, a stale baseline entry is a <failure>. JUnitPerSpec gives one
// testcase per Ginkgo spec with its requirement ids as properties.
func WriteJUnit(w io.Writer, r *Report, granularity string) error {
	var out junitSuites
	switch granularity {
	case "", JUnitPerRequirement:
		out = junitPerRequirement(r)
	case JUnitPerSpec:
		out = junitPerSpec(r)
	default:
		return fmt.Errorf("junit granularity %q: want %s or %s", granularity, JUnitPerRequirement, JUnitPerSpec)
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

func (out *junitSuites) add(js *junitSuite) {
	out.Tests += js.Tests
	out.Failures += js.Failures
	out.Errors += js.Errors
	out.Skipped += js.Skipped
	out.Suites = append(out.Suites, *js)
}

func junitPerRequirement(r *Report) junitSuites {
	out := junitSuites{Name: "conform", Time: seconds(r.DurationMS / 1000)}
	var levels []string
	seen := map[string]bool{}
	for _, l := range r.Levels {
		levels, seen[string(l.Level)] = append(levels, string(l.Level)), true
	}
	for _, q := range r.Requirements {
		if !seen[q.Level] {
			levels, seen[q.Level] = append(levels, q.Level), true
		}
	}
	specs := map[string]SpecResult{}
	for _, s := range r.Specs {
		specs[s.Name] = s
	}
	for _, level := range levels {
		js := &junitSuite{Name: "conform." + level, Timestamp: r.StartedAt, Properties: levelProperties(r, level)}
		for _, q := range r.Requirements {
			if q.Level != level {
				continue
			}
			js.tally(requirementCase(r, q))
		}
		if js.Tests > 0 {
			out.add(js)
		}
	}
	return out
}

func requirementCase(r *Report, q ReqResult) junitCase {
	c := junitCase{Name: q.ID + ": " + oneLine(q.Summary), Classname: q.Level, Time: seconds(q.DurationMS / 1000),
		Properties: []junitProperty{
			{Name: "requirement", Value: q.ID}, {Name: "keyword", Value: q.Keyword}, {Name: "verdict", Value: string(q.Verdict)},
			{Name: "section", Value: q.Section}, {Name: "link", Value: q.Link},
		}}
	if q.Expected {
		c.Properties = append(c.Properties, junitProperty{Name: "expected", Value: "true"})
	}
	switch {
	case len(q.Hooks) > 0:
		c.Properties = append(c.Properties, junitProperty{Name: "evidence", Value: "with_hook"}, junitProperty{Name: "hooks", Value: strings.Join(q.Hooks, ",")})
	case q.Verdict == Pass || q.Verdict == Warn || q.Verdict == Fail:
		c.Properties = append(c.Properties, junitProperty{Name: "evidence", Value: "without_hook"})
	}
	detail := requirementDetail(q)
	switch {
	case q.Stale:
		c.Failure = &junitMessage{Type: "stale_baseline", Text: detail,
			Message: fmt.Sprintf("stale baseline entry: %s passes now; remove it from %s", q.ID, baselineFile(r))}
	case q.Expected && q.Verdict != Warn:
		m := fmt.Sprintf("expected by the baseline: %s: %s", q.Verdict, oneLine(q.Message))
		if q.BaselineReason != "" {
			m += " (baseline reason: " + oneLine(q.BaselineReason) + ")"
		}
		c.Skipped = &junitMessage{Message: m}
		c.SystemOut = detail
	case q.Verdict == Fail:
		c.Failure = &junitMessage{Message: oneLine(firstLine(q.Message)), Type: "nonconformant", Text: detail}
	case q.Verdict == Error:
		c.Error = &junitMessage{Message: oneLine(firstLine(q.Message)), Type: "error", Text: detail}
	case q.Gate == GateUnverified:
		// The strict gate fails the run on it: a failure, with the remedy.
		c.Failure = &junitMessage{Type: "unverified", Text: detail, Message: unverifiedText(q.Message, q.Remedy) + gateNote}
	case q.Verdict == Unverified:
		c.Skipped = &junitMessage{Message: unverifiedText(q.Message, q.Remedy)}
	case q.Verdict == Skip:
		c.Skipped = &junitMessage{Message: oneLine(q.Message)}
	case q.Verdict == Warn:
		c.SystemOut = "WARN " + q.ID + ": " + q.Message + "\n\n" + detail
	}
	return c
}

// unverifiedText is an unverified verdict's one-line message.
func unverifiedText(msg, remedy string) string {
	m := "unverified: " + oneLine(msg)
	if remedy != "" {
		m += " (to verify: " + oneLine(remedy) + ")"
	}
	return m
}

// gateNote says why an unverified MUST is a failure: the gate fails on it.
const gateNote = " — fails the gate (--fail-on unverified); --fail-on failures lists it without failing"

// requirementDetail is a failure's full text: every message, remedy and
// reproducing curl line, and the spec link.
func requirementDetail(q ReqResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s (%s, %s): %s\n", q.ID, q.Keyword, q.Level, q.Section, q.Summary)
	fmt.Fprintf(&b, "verdict: %s\n", q.Verdict)
	if q.Message != "" {
		fmt.Fprintf(&b, "message: %s\n", q.Message)
	}
	if q.Remedy != "" {
		fmt.Fprintf(&b, "to verify: %s\n", q.Remedy)
	}
	if q.BaselineReason != "" {
		fmt.Fprintf(&b, "baseline reason: %s\n", q.BaselineReason)
	}
	for _, ev := range q.Evidence {
		fmt.Fprintf(&b, "\nspec %q: %s: %s\n", ev.Spec, ev.Verdict, ev.Message)
		if ev.Remedy != "" {
			fmt.Fprintf(&b, "  to verify: %s\n", ev.Remedy)
		}
		if ev.Curl != "" {
			fmt.Fprintf(&b, "  reproduce: %s\n", ev.Curl)
		}
	}
	fmt.Fprintf(&b, "\nspecification: %s\n", q.Link)
	return b.String()
}

func junitPerSpec(r *Report) junitSuites {
	reqs := map[string]ReqResult{}
	for _, q := range r.Requirements {
		reqs[q.ID] = q
	}
	byLevel := map[string]*junitSuite{}
	var order []string
	out := junitSuites{Name: "conform", Time: seconds(r.DurationMS / 1000)}
	for _, s := range r.Specs {
		level := "core"
		if len(s.Requirements) > 0 {
			level = reqs[s.Requirements[0]].Level
		}
		js := byLevel[level]
		if js == nil {
			js = &junitSuite{Name: "conform." + level, Timestamp: r.StartedAt, Properties: levelProperties(r, level)}
			byLevel[level] = js
			order = append(order, level)
		}
		c := junitCase{Name: s.Name, Classname: "conform." + level, Time: seconds(s.DurationMS / 1000)}
		for _, id := range s.Requirements {
			c.Properties = append(c.Properties, junitProperty{Name: "requirement", Value: id})
		}
		var hooks []string
		for _, h := range s.Hooks {
			if !slices.Contains(hooks, h.Hook) {
				hooks = append(hooks, h.Hook)
				c.Properties = append(c.Properties, junitProperty{Name: "hook", Value: h.Hook})
			}
		}
		detail := s.Message
		if curl := specCurl(s, reqs); curl != "" {
			detail += "\n\nreproduce the failing exchange:\n" + curl
		}
		switch s.Verdict {
		case Skip:
			c.Skipped = &junitMessage{Message: "not applicable: " + oneLine(s.Message)}
		case Unverified:
			m := unverifiedText(s.Message, s.Remedy)
			if slices.ContainsFunc(s.Requirements, func(id string) bool { return reqs[id].Gate == GateUnverified }) {
				c.Failure = &junitMessage{Type: "unverified", Message: m + gateNote, Text: detail}
				break
			}
			c.Skipped = &junitMessage{Message: m}
		case Fail:
			if ids := expectedFindings(s, reqs); ids != nil {
				c.Skipped = &junitMessage{Message: "expected by the baseline (" + strings.Join(ids, ", ") + "): " + oneLine(firstLine(s.Message))}
				c.SystemOut = detail
				break
			}
			c.Failure = &junitMessage{Message: oneLine(firstLine(s.Message)), Type: "nonconformant", Text: detail}
		case Error:
			c.Error = &junitMessage{Message: oneLine(firstLine(s.Message)), Type: "error", Text: detail}
		case Warn:
			var ws []string
			for _, id := range s.Requirements {
				for _, ev := range reqs[id].Evidence {
					if ev.Verdict == Warn && ev.Spec == s.Name {
						ws = append(ws, "WARN "+id+": "+ev.Message)
					}
				}
			}
			c.SystemOut = strings.Join(ws, "\n")
		}
		js.tally(c)
	}
	sort.Strings(order)
	for _, l := range order {
		out.add(byLevel[l])
	}
	return out
}

// specCurl is the reproducer of a spec's first finding: the failing
// exchange its requirements' evidence names.
func specCurl(s SpecResult, reqs map[string]ReqResult) string {
	for _, id := range s.Requirements {
		for _, ev := range reqs[id].Evidence {
			if ev.Spec == s.Name && ev.Curl != "" {
				return ev.Curl
			}
		}
	}
	return ""
}

// expectedFindings returns the ids of a failed spec's failing requirements
// when the baseline expects every one of them (nil otherwise): such a spec
// is no new failure.
func expectedFindings(s SpecResult, reqs map[string]ReqResult) []string {
	var ids []string
	for _, id := range s.Requirements {
		q := reqs[id]
		for _, ev := range q.Evidence {
			if ev.Spec != s.Name || (ev.Verdict != Fail && ev.Verdict != Error) {
				continue
			}
			if !q.Expected || ev.Verdict == Error {
				return nil
			}
			ids = append(ids, id)
			break
		}
	}
	return ids
}
