package replaydet

import (
	"slices"
	"testing"
)

func ev(id, kind string, payload map[string]any) map[string]any {
	return map[string]any{"id": id, "event": kind, "payload": payload}
}

// source is a source log: lifecycle, a clock read, two model answers and a
// tool result, then the end.
func source() []map[string]any {
	return []map[string]any{
		ev("e0", "task.submitted", map[string]any{"status": "SUBMITTED"}),
		ev("e1", "task.started", map[string]any{"status": "WORKING"}),
		ev("e2", "span.completed", map[string]any{"value_ms": 5, "override_key": "time:t0"}),
		ev("e3", "agent.message", map[string]any{"text": "one", "override_key": "llm:main:1", "message_id": "m1"}),
		ev("e4", "agent.checkpoint", map[string]any{"checkpoint_id": "cp1"}),
		ev("e5", "agent.message", map[string]any{"text": "two", "override_key": "llm:main:2", "message_id": "m2"}),
		ev("e6", "tool.completed", map[string]any{"output": "x", "name": "git"}),
		ev("e7", "task.completed", map[string]any{"status": "COMPLETED"}),
	}
}

// replayOf is a faithful replay of src after from: new ids, new message
// ids, the task's own lifecycle around it.
func replayOf(src []map[string]any, from int) []map[string]any {
	out := []map[string]any{ev("r0", "task.submitted", nil), ev("r1", "task.started", nil), ev("r2", "replay.started", nil)}
	for i, e := range src {
		k := e["event"].(string)
		if i <= from || Live(k) {
			continue
		}
		p := map[string]any{}
		for m, v := range e["payload"].(map[string]any) {
			p[m] = v
		}
		if _, ok := p["message_id"]; ok {
			p["message_id"] = "new-" + p["message_id"].(string)
		}
		out = append(out, ev("r-"+e["id"].(string), k, p))
	}
	return append(out, ev("r8", "replay.completed", nil), ev("r9", "task.completed", nil), ev("r10", "receipt.issued", nil))
}

func places(p Pairing) []Placement {
	var out []Placement
	for _, pr := range p.Pairs {
		out = append(out, pr.Place)
	}
	return out
}

func TestOutputIsEverythingButTheLifecycle(t *testing.T) {
	out := Output(replayOf(source(), -1))
	var kinds []string
	for _, e := range out {
		kinds = append(kinds, e["event"].(string))
	}
	want := []string{"span.completed", "agent.message", "agent.checkpoint", "agent.message", "tool.completed"}
	if !slices.Equal(kinds, want) {
		t.Errorf("Output = %v, want %v", kinds, want)
	}
	// An event that says nothing of itself (no replayed, no metadata) is
	// output all the same.
	if out[1]["replayed"] != nil || out[1]["replay"] != nil {
		t.Fatal("the test's replay marks its events")
	}
}

func TestPairFaithfulReplay(t *testing.T) {
	src := source()
	p := Pair(src, Output(replayOf(src, -1)), -1, nil)
	for i, pr := range p.Pairs {
		if pr.Place != InOrder || pr.Src == nil || pr.Src["id"] != "e"+pr.Out["id"].(string)[3:] {
			t.Errorf("pair %d: %v stands for %v (%v), want its own source event in order", i, pr.Out["id"], pr.SrcIndex, pr.Place)
		}
	}
	if len(p.Missed) > 0 {
		t.Errorf("missed %v", p.Missed)
	}
}

// A fresh model answer is material the source never had: unsourced, and
// the source's answer it replaced is missed.
func TestPairFreshAnswerIsUnsourced(t *testing.T) {
	src := source()
	out := Output(replayOf(src, -1))
	out[1]["payload"].(map[string]any)["text"] = "a fresh answer"
	p := Pair(src, out, -1, nil)
	if got := places(p); !slices.Equal(got, []Placement{InOrder, Unsourced, InOrder, InOrder, InOrder}) {
		t.Errorf("places = %v", got)
	}
	if !slices.Equal(p.Missed, []int{3}) {
		t.Errorf("missed = %v, want [3] (the source's first answer)", p.Missed)
	}
	// Substituted by an applied override, the same answer is in order.
	p = Pair(src, out, -1, func(s map[string]any) bool { return s["payload"].(map[string]any)["override_key"] == "llm:main:1" })
	if got := places(p); slices.Contains(got, Unsourced) || len(p.Missed) > 0 {
		t.Errorf("with the override applied: places %v, missed %v", got, p.Missed)
	}
}

func TestPairReversedIsOutOfOrder(t *testing.T) {
	src := source()
	out := Output(replayOf(src, -1))
	slices.Reverse(out)
	p := Pair(src, out, -1, nil)
	if got := places(p); !slices.Equal(got, []Placement{InOrder, OutOfOrder, OutOfOrder, OutOfOrder, OutOfOrder}) {
		t.Errorf("places = %v", got)
	}
}

func TestPairFromCheckpoint(t *testing.T) {
	src := source()
	p := Pair(src, Output(replayOf(src, 4)), 4, nil)
	if got := places(p); !slices.Equal(got, []Placement{InOrder, InOrder}) || len(p.Missed) > 0 {
		t.Errorf("after the checkpoint: places %v, missed %v", got, p.Missed)
	}
	// Replayed from the start although asked from the checkpoint: the
	// events up to the boundary are before it.
	p = Pair(src, Output(replayOf(src, -1)), 4, nil)
	if got := places(p); !slices.Equal(got, []Placement{BeforeBoundary, BeforeBoundary, BeforeBoundary, InOrder, InOrder}) {
		t.Errorf("from the start: places %v", got)
	}
}

func TestRecycledIDs(t *testing.T) {
	src := source()
	rep := replayOf(src, -1)
	if got := RecycledIDs(src, rep); len(got) > 0 {
		t.Errorf("new ids: recycled %v", got)
	}
	rep[3]["id"] = "e2"
	rep[5]["id"] = rep[4]["id"]
	if got := RecycledIDs(src, rep); !slices.Equal(got, []string{"e2", rep[4]["id"].(string)}) {
		t.Errorf("recycled = %v, want e2 and the repeated id", got)
	}
}

// An event replayed as recorded is never taken for the substitute of
// another of its kind: reversed, the recorded second answer still stands
// for the second, and the substituted first for the first.
func TestPairPrefersContentToSubstitution(t *testing.T) {
	src := source()
	out := Output(replayOf(src, -1))
	out[1]["payload"].(map[string]any)["text"] = "the override"
	slices.Reverse(out)
	sub := func(s map[string]any) bool { return s["payload"].(map[string]any)["override_key"] == "llm:main:1" }
	p := Pair(src, out, -1, sub)
	for _, pr := range p.Pairs {
		if pr.Out["event"] != "agent.message" {
			continue
		}
		want := "e5"
		if pr.Out["payload"].(map[string]any)["text"] == "the override" {
			want = "e3"
		}
		if pr.Src == nil || pr.Src["id"] != want {
			t.Errorf("%v stands for %v, want %s", pr.Out["payload"], pr.Src, want)
		}
	}
	if len(p.Missed) > 0 {
		t.Errorf("missed %v", p.Missed)
	}
}
