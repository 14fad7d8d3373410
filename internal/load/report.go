package load

import (
	"fmt"
	"math"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// Read is something a check read after a round, shown with the round when
// it exposed a race: the state the requests left.
type Read struct {
	// What is the exchange: "GET /v1/sessions/s_1/tasks → 200".
	What string `json:"what"`
	// Saw is what it showed: "2 tasks: task_a, task_b".
	Saw string `json:"saw"`
}

// Race is the failure a round exposed, for suite.Check: the verifier's
// finding, the round's requests with their times and answers, and what
// was read afterwards. Its reproduction (Repro) is a script that fires the
// round's requests at once again.
type Race struct {
	Err error
	// Round is the round that showed it: the Index-th of Of; Showed rounds
	// of the Of run showed the race.
	Round             *Round
	Index, Of, Showed int
	After             []Read
}

func (e *Race) Unwrap() error { return e.Err }

func (e *Race) Error() string {
	var b strings.Builder
	b.WriteString(e.Err.Error())
	fmt.Fprintf(&b, "\nround %d of %d", e.Index, e.Of)
	if e.Of > 1 {
		fmt.Fprintf(&b, " (the race showed in %d of the %d rounds)", e.Showed, e.Of)
	}
	if e.Round != nil {
		fmt.Fprintf(&b, ": %s\n%s", e.Round.what(), e.Round.Timeline())
	}
	if len(e.After) > 0 {
		b.WriteString("\nread afterwards:")
		for _, r := range e.After {
			fmt.Fprintf(&b, "\n  %s: %s", r.What, r.Saw)
		}
	}
	return b.String()
}

// Repro is a shell script that fires the round's requests at once.
func (e *Race) Repro() string {
	if e.Round == nil {
		return ""
	}
	return e.Round.Script(fmt.Sprintf("round %d of %d", e.Index, e.Of))
}

// what says how many requests the round fired.
func (r *Round) what() string {
	return fmt.Sprintf("%d requests fired at once (times in ms from their release)", len(r.Answers))
}

// Timeline lists the round's requests, one a line: label, transport when
// not REST, method and path, idempotency key, start and end, and the
// answer.
func (r *Round) Timeline() string {
	var b strings.Builder
	for i, a := range r.Answers {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "  %-6s ", a.Label)
		if a.Transport != "rest" && a.Transport != "" {
			b.WriteString(a.Transport + " ")
		}
		fmt.Fprintf(&b, "%s %s", a.Method, a.Path)
		if a.Key != "" {
			fmt.Fprintf(&b, " key %s", a.Key)
		}
		fmt.Fprintf(&b, "  %s → %s  %s", ms(a.Start), ms(a.End), a.Summary())
		for _, f := range a.Refusals {
			fmt.Fprintf(&b, " (after %d at %s, Retry-After %q)", f.Status, ms(f.At), f.RetryAfter)
		}
	}
	return b.String()
}

// Summary is the answer in a few words: its status and the id it names,
// or its error code, or why there is none.
func (a Answer) Summary() string {
	if a.Err != nil {
		return "no answer: " + a.Err.Error()
	}
	s := fmt.Sprint(a.Status)
	m := a.Object()
	if id, ok := m["id"].(string); ok && id != "" {
		s += " id " + id
	} else if st, ok := m["status"].(string); ok && a.Status/100 == 2 {
		s += " status " + st
	}
	if e, ok := m["error"].(map[string]any); ok {
		if c, ok := e["code"].(string); ok {
			s += " " + c
		}
	}
	if m == nil && len(a.Body) > 0 {
		s += fmt.Sprintf(" body %q", clip(string(a.Body), 60))
	}
	if a.Location != "" {
		s += " Location " + a.Location
	}
	if a.GaveUp {
		s += " (still refusing at the round's deadline)"
	}
	return s
}

func ms(d interface{ Seconds() float64 }) string {
	v := d.Seconds() * 1000
	return fmt.Sprintf("+%.2f", math.Round(v*100)/100)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// Script is a POSIX shell script that fires the round's requests at once
// (each curl in the background, then wait), the configured API key read
// from $CONFORM_API_KEY as the transcript's curl lines do, every other
// secret redacted. A request curl cannot make (a WebSocket command) is a
// comment saying what to send.
func (r *Round) Script(title string) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# conform: %s — %d requests fired at once; each answer goes to conform-race-N.out\n", title, len(r.shots))
	fmt.Fprintf(&b, ": \"${%s:?set %s to the API key}\"\n", client.KeyVariable, client.KeyVariable)
	for i, s := range r.shots {
		if s.Send != nil && s.Shell != "" {
			fmt.Fprintf(&b, "%s > conform-race-%d.out 2>&1 &\n", s.Shell, i+1)
			continue
		}
		if s.Send != nil {
			fmt.Fprintf(&b, "# %s (%s): %s\n", s.Label, cmpOr(s.Transport, "not REST"), oneLine(s.Script))
			continue
		}
		fmt.Fprintf(&b, "%s > conform-race-%d.out 2>&1 &\n", r.c.Curl(s.Req), i+1)
	}
	if streams := r.streams(); streams > 0 {
		fmt.Fprintf(&b, "sleep 5; kill $(jobs -p) 2>/dev/null  # %d streams stay open: stop them once the writes are answered\n", streams)
	}
	b.WriteString("wait\nhead -n 1 conform-race-*.out\n")
	return b.String()
}

// streams counts the Send shots that open a stream (Shell set).
func (r *Round) streams() int {
	n := 0
	for _, s := range r.shots {
		if s.Send != nil && s.Shell != "" {
			n++
		}
	}
	return n
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// Doc is the round as a report attaches it (schema SchemaRace).
type Doc struct {
	Requirement string    `json:"requirement"`
	Finding     string    `json:"finding"`
	Round       int       `json:"round"`
	Of          int       `json:"rounds"`
	Showed      int       `json:"rounds_that_showed_it"`
	Requests    []DocShot `json:"requests"`
	After       []Read    `json:"read_afterwards,omitempty"`
	Script      string    `json:"script"`
}

// DocShot is one request of a Doc.
type DocShot struct {
	Label     string    `json:"label"`
	Transport string    `json:"transport"`
	Method    string    `json:"method"`
	Path      string    `json:"path"`
	Key       string    `json:"idempotency_key,omitempty"`
	StartMS   float64   `json:"start_ms"`
	EndMS     float64   `json:"end_ms"`
	Status    int       `json:"status,omitempty"`
	Answer    string    `json:"answer"`
	Refusals  []Refusal `json:"refusals,omitempty"`
}

// SchemaRace marks a race's evidence document in a report.
const SchemaRace = "conform-race/v1"

// Doc is the race as evidence for req.
func (e *Race) Doc(req string) Doc {
	d := Doc{Requirement: req, Finding: e.Err.Error(), Round: e.Index, Of: e.Of, Showed: e.Showed, After: e.After, Script: e.Repro()}
	if e.Round != nil {
		for _, a := range e.Round.Answers {
			d.Requests = append(d.Requests, DocShot{Label: a.Label, Transport: a.Transport, Method: a.Method, Path: a.Path, Key: a.Key,
				StartMS: msOf(a.Start.Seconds()), EndMS: msOf(a.End.Seconds()), Status: a.Status, Answer: a.Summary(), Refusals: a.Refusals})
		}
	}
	return d
}

func msOf(sec float64) float64 { return math.Round(sec*1e5) / 100 }
