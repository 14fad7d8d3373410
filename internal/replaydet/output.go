package replaydet

import (
	"cmp"
	"encoding/json"
	"fmt"
	"strings"
)

// The replay's output (docs/interpretations.md#replay-whole-output): a
// replay task exists to replay its source, so every event of it is replay
// output by construction — except the task's own lifecycle: its task.*
// transitions, the replay run's replay.* announcements and the receipt.*
// events that record the task. Replay output is judged whole, whatever
// it says of itself: each event must be marked replayed, carry its replay
// metadata and stand for an event of the source, and it is paired with
// the source event it stands for by order and content, never by the ids
// it reports.

// Live reports whether an event kind is the replay task's own lifecycle
// (live activity), not replay output.
func Live(kind string) bool {
	for _, p := range []string{"task.", "replay.", "receipt."} {
		if strings.HasPrefix(kind, p) {
			return true
		}
	}
	return false
}

// Output is the replay output among a replay task's events, in order.
func Output(evs []map[string]any) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if k, _ := e["event"].(string); !Live(k) {
			out = append(out, e)
		}
	}
	return out
}

// contentMembers are the payload members that carry a dependency's
// material: what a substitution changes and what a replay must reproduce
// (docs/scenarios.md); ids such as message_id are the replay's own.
var contentMembers = []string{"text", "output", "value_ms", "sha256", "memories", "input", "status", "name"}

// Content is what an event carries of its material, as comparable text:
// its kind and its content members.
func Content(e map[string]any) string {
	p, _ := e["payload"].(map[string]any)
	out := map[string]any{"event": e["event"]}
	for _, k := range contentMembers {
		if v, ok := p[k]; ok {
			out[k] = v
		}
	}
	b, err := json.Marshal(out) // keys sorted: equal content, equal text
	if err != nil {
		return fmt.Sprintf("%v", out)
	}
	return string(b)
}

// Placement says where a replay output event falls in the source.
type Placement int

const (
	// InOrder: it stands for a source event after the one the previous
	// output event stood for (and after the checkpoint boundary).
	InOrder Placement = iota
	// OutOfOrder: its content is that of a source event before the one the
	// previous output event stood for, and of none after it.
	OutOfOrder
	// BeforeBoundary: its content is that of a source event at or before
	// the checkpoint boundary, and of none after it.
	BeforeBoundary
	// Unsourced: its content is that of no source event: material the
	// replay did not take from the source's log.
	Unsourced
)

// Paired is one replay output event and the source event it stands for.
type Paired struct {
	Out map[string]any
	// Src is the source event it stands for (nil when Unsourced), SrcIndex
	// its position in the source's log (-1).
	Src      map[string]any
	SrcIndex int
	Place    Placement
}

// Pairing is a replay's output paired with its source.
type Pairing struct {
	Pairs []Paired
	// Missed are the source events after the boundary that a replay must
	// reproduce (the agent's messages and tool results) and that no
	// output event stands for, by their position in the source's log.
	Missed []int
}

// mustReplay are the source event kinds whose material a replay must
// reproduce: the model's outputs and the tools' results.
var mustReplay = map[string]bool{"agent.message": true, "agent.tool_result": true, "tool.completed": true}

// Pair pairs a replay's output (Output of its events) with the source
// task's event log src. Only source events after position from (-1: the
// whole log; a from_checkpoint replay's boundary otherwise) that are not
// the source's own lifecycle can be stood for. An output event stands for
// the first such source event after the previous pair's with its kind and
// its content (Content); failing that, for the first after it with its
// kind alone whose material an override the replay applied replaced
// (substituted says which). One that matches only earlier source events,
// by the same two rules, is OutOfOrder (or BeforeBoundary), one that
// matches none Unsourced. Content comes first, so that an event replayed
// as recorded is never taken for the substitute of another.
func Pair(src, out []map[string]any, from int, substituted func(src map[string]any) bool) Pairing {
	same := func(o, s map[string]any) bool { return o["event"] == s["event"] && Content(o) == Content(s) }
	replaced := func(o, s map[string]any) bool {
		return o["event"] == s["event"] && substituted != nil && substituted(s)
	}
	live := func(i int) bool { k, _ := src[i]["event"].(string); return Live(k) }
	// after finds the first source event after position last that m
	// matches; before, the last one up to last.
	after := func(o map[string]any, last int, m func(o, s map[string]any) bool) int {
		for j := max(last, from) + 1; j < len(src); j++ {
			if !live(j) && m(o, src[j]) {
				return j
			}
		}
		return -1
	}
	before := func(o map[string]any, last int, m func(o, s map[string]any) bool) int {
		for j := min(last, len(src)-1); j >= 0; j-- {
			if !live(j) && m(o, src[j]) {
				return j
			}
		}
		return -1
	}
	var p Pairing
	used := map[int]bool{}
	last := from
	for _, o := range out {
		pr := Paired{Out: o, SrcIndex: -1, Place: Unsourced}
		if j := cmp.Or(after(o, last, same)+1, after(o, last, replaced)+1) - 1; j >= 0 {
			pr.Src, pr.SrcIndex, pr.Place = src[j], j, InOrder
			last = j
		} else if j := cmp.Or(before(o, last, same)+1, before(o, last, replaced)+1) - 1; j >= 0 {
			pr.Src, pr.SrcIndex, pr.Place = src[j], j, OutOfOrder
			if j <= from {
				pr.Place = BeforeBoundary
			}
		}
		if pr.Src != nil {
			used[pr.SrcIndex] = true
		}
		p.Pairs = append(p.Pairs, pr)
	}
	for j := from + 1; j < len(src); j++ {
		if k, _ := src[j]["event"].(string); !Live(k) && mustReplay[k] && !used[j] {
			p.Missed = append(p.Missed, j)
		}
	}
	return p
}

// RecycledIDs lists the ids of replay output events that are ids of source
// events too, and the ids a replay task's event list holds more than once:
// event ids identify one event of the log each (RPLY-LOG-002).
func RecycledIDs(src, replay []map[string]any) []string {
	ids := map[string]bool{}
	for _, e := range src {
		if id, _ := e["id"].(string); id != "" {
			ids[id] = true
		}
	}
	seen := map[string]bool{}
	var out []string
	for _, e := range replay {
		id, _ := e["id"].(string)
		if id == "" {
			continue
		}
		if ids[id] || seen[id] {
			out = append(out, id)
		}
		seen[id] = true
	}
	return out
}
