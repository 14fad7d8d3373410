package replay

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Replayed events (RPLY-META-001..006, RPLY-LOG-001, RPLY-MARK-001; spec
// 002, "EventLog use"; the narrative's "Replay contract"): every event a
// replay task emits for a source event carries replay {source_task_id,
// replay_task_id, original_event_id, replay_cursor, mode} and, only when a
// substitution produced it, override_key; the replayed events follow the
// source's order; they say replayed: true on the REST event list, on SSE
// and on WebSocket, and the live events (the task's lifecycle,
// replay.started/completed) and the source's own events do not. An exact
// replay of a plain text task (the target's own agent) is judged on every
// target that claims replay; with the scenario hook, a with_overrides
// replay of a source with recorded dependencies is judged too (the mode
// and the override keys).

var _ = Describe("Replayed events", func() {
	It("marks each replayed event of an exact replay with its source, replay task, original event, cursor and mode, in the source's order", suite.Req("RPLY-META-001", "RPLY-META-002", "RPLY-META-003", "RPLY-META-004", "RPLY-META-005", "RPLY-META-006", "RPLY-LOG-001"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		judgeMeta(p.src, p.exact, "exact", nil)
	})

	It("marks each replayed event of a with_overrides replay with its mode and, on substituted events only, the override key applied", suite.Req("RPLY-META-001", "RPLY-META-002", "RPLY-META-003", "RPLY-META-004", "RPLY-META-005", "RPLY-META-006", "RPLY-LOG-001"), func(ctx SpecContext) {
		needReplay()
		needHook("a source task with recorded dependencies")
		d := theDeps(ctx)
		key := d.src.needKey(d.src.keyOf("agent.message", "call_id", "main:1"), "the model_call main:1")
		rep := mustReplay(ctx, d.src.id, overrideLLM(d.src, key, "conform override: meta"), "a with_overrides replay of llm "+key)
		rep.completed("the with_overrides replay")
		judgeMeta(d.src, rep, "with_overrides", map[string]bool{key: true})
	})

	It("says replayed: true on replayed events and false on live ones, on the event list, SSE and WebSocket", suite.Req("RPLY-MARK-001"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		rep := p.exact
		const req = "RPLY-MARK-001"
		for _, e := range p.src.events {
			if e["replayed"] == true {
				suite.Check(req, fmt.Errorf("GET /v1/tasks/%s/events: event %s (%s) of the source task, live activity, says replayed: true", p.src.id, str(e, "id"), str(e, "event")))
			}
		}
		from := map[string]bool{} // replay event id -> came from replay
		for _, e := range rep.events {
			from[str(e, "id")] = fromReplay(e)
		}
		if countFrom(from) == 0 {
			suite.NothingToCheck(req, fmt.Sprintf("the exact replay %s of task %s emitted no replayed event (events %v): nothing to see marked", rep.id, p.src.id, kinds(rep.events)),
				"replay the source's agent events (docs/replay.md, \"The replay task\")")
			return
		}
		suite.Check(req, marks("GET /v1/tasks/"+rep.id+"/events", rep.events, from))
		sse, err := feedEvents(ctx, sseFeed, "/v1/tasks/"+client.Seg(rep.id)+"/stream", len(rep.events))
		if err != nil {
			suite.NothingToCheck(req, "the replay task's SSE stream: "+err.Error(), "serve GET /v1/tasks/{id}/stream for a finished task's history")
		} else {
			suite.Check(req, marks("SSE GET /v1/tasks/"+rep.id+"/stream", sse, from))
		}
		if v, _ := suite.Env().Discovery.Capabilities["websocket"].(bool); !v {
			suite.Note("RPLY-MARK-001: discovery does not claim websocket, so the WebSocket marker is not checked")
			return
		}
		wsEvs, err := feedEvents(ctx, wsFeed, "/v1/tasks/"+client.Seg(rep.id)+"/stream", len(rep.events))
		if err != nil {
			suite.NothingToCheck(req, "the replay task's WebSocket stream: "+err.Error(), "serve the harn-ws.v1 profile on GET /v1/tasks/{id}/stream (docs/websocket.md)")
			return
		}
		suite.Check(req, marks("WebSocket GET /v1/tasks/"+rep.id+"/stream (the frames' events)", wsEvs, from))
	})
})

// fromReplay reports whether a replay task's event stands for a source
// event: it says replayed or carries replay metadata, and it is not one of
// the replay run's own lifecycle (task.*) or replay.* events, which are
// live activity whatever they say (replay-suite-readings).
func fromReplay(e map[string]any) bool {
	k := str(e, "event")
	if strings.HasPrefix(k, "task.") || strings.HasPrefix(k, "replay.") {
		return false
	}
	return e["replayed"] == true || replayMeta(e) != nil
}

func countFrom(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}

// marks checks the replayed marker of evs (as one transport delivered
// them) against what each event is (from: by id, from the REST list).
func marks(where string, evs []map[string]any, from map[string]bool) error {
	var bad []string
	for _, e := range evs {
		id := str(e, "id")
		rep, known := from[id]
		if !known {
			continue
		}
		got := e["replayed"] == true
		if got != rep {
			bad = append(bad, fmt.Sprintf("%s (%s) replayed=%v, want %v", id, str(e, "event"), e["replayed"], rep))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s; events that come from replay carry replayed: true on every transport, live ones do not", where, strings.Join(bad, "; "))
	}
	return nil
}

// judgeMeta checks the replay metadata of a finished replay's events and
// their order (applied: the override keys the request applied).
func judgeMeta(src *source, rep *replayRun, mode string, applied map[string]bool) {
	GinkgoHelper()
	idx := src.index()
	var evs []map[string]any
	for _, e := range rep.events {
		if fromReplay(e) {
			evs = append(evs, e)
		}
	}
	if len(evs) == 0 {
		for _, r := range []string{"RPLY-META-001", "RPLY-META-002", "RPLY-META-003", "RPLY-META-004", "RPLY-META-005", "RPLY-META-006", "RPLY-LOG-001"} {
			suite.NothingToCheck(r, fmt.Sprintf("replay task %s of %s emitted no replayed event (events %v)", rep.id, src.id, kinds(rep.events)), "replay the source's agent events (docs/replay.md, \"The replay task\")")
		}
		return
	}
	last, lastID := -1, ""
	sawKey := false
	for _, e := range evs {
		id, kind := str(e, "id"), str(e, "event")
		at := fmt.Sprintf("replay task %s, event %s (%s)", rep.id, id, kind)
		m := replayMeta(e)
		if m == nil {
			m = map[string]any{}
		}
		if got := str(m, "source_task_id"); got != src.id {
			suite.Check("RPLY-META-001", fmt.Errorf("%s: replay.source_task_id = %s, want the source task %s", at, jsonOf(m["source_task_id"]), src.id))
		}
		if got := str(m, "replay_task_id"); got != rep.id {
			suite.Check("RPLY-META-002", fmt.Errorf("%s: replay.replay_task_id = %s, want the replay task %s", at, jsonOf(m["replay_task_id"]), rep.id))
		}
		orig := str(m, "original_event_id")
		pos, ok := idx[orig]
		if !ok {
			suite.Check("RPLY-META-003", fmt.Errorf("%s: replay.original_event_id = %s names no event of the source task %s", at, jsonOf(m["original_event_id"]), src.id))
		}
		if str(m, "replay_cursor") == "" {
			suite.Check("RPLY-META-004", fmt.Errorf("%s: replay.replay_cursor = %s, want a non-empty cursor", at, jsonOf(m["replay_cursor"])))
		}
		if got := str(m, "mode"); got != mode {
			suite.Check("RPLY-META-005", fmt.Errorf("%s: replay.mode = %s, want %q, the request's mode", at, jsonOf(m["mode"]), mode))
		}
		pk, ok2 := payloadStr(e, "override_key"), m["override_key"]
		switch {
		case applied[pk]:
			sawKey = true
			if s, _ := ok2.(string); s != pk {
				suite.Check("RPLY-META-006", fmt.Errorf("%s: the event of the overridden dependency %s has replay.override_key %s, want %q", at, pk, jsonOf(ok2), pk))
			}
		case ok2 != nil && ok2 != "":
			suite.Check("RPLY-META-006", fmt.Errorf("%s: replay.override_key = %s, but no override of the request produced it (applied: %v)", at, jsonOf(ok2), slices.Sorted(maps.Keys(applied))))
		}
		if ok && pos >= 0 {
			if pos <= last {
				suite.Check("RPLY-LOG-001", fmt.Errorf("%s stands for source event %s (position %d), which comes before %s (position %d), the original of an earlier replayed event: the replay does not follow the source's order", at, orig, pos, lastID, last))
			}
			last, lastID = pos, orig
		}
	}
	if len(applied) > 0 && !sawKey {
		suite.NothingToCheck("RPLY-META-006", fmt.Sprintf("no replayed event of task %s carries the payload.override_key of an applied override (%v)", rep.id, slices.Sorted(maps.Keys(applied))), remedyFxKeys)
	}
}

// sseFeed opens the SSE stream of path.
func sseFeed(ctx context.Context, path string) (client.Feed, error) {
	GinkgoHelper()
	st, err := suite.Client().Stream(ctx, client.Request{Path: path})
	suite.Transport(err)
	return st, nil
}

// wsFeed opens a harn-ws.v1 session on path (the credential in the
// upgrade's headers).
func wsFeed(ctx context.Context, path string) (client.Feed, error) {
	GinkgoHelper()
	s, resp, err := suite.Client().OpenWS(ctx, client.WSDial{Path: path})
	if s == nil {
		if resp != nil {
			return nil, fmt.Errorf("%s: the upgrade was refused", resp)
		}
		suite.Transport(err)
		return nil, err
	}
	return s, nil
}

// feedEvents opens a feed of path and collects the Events it delivers
// until it has want of them, it ends, or --stream-timeout passes with
// nothing new (all of it within --task-timeout). An error in place of the
// events, or no Event at all, is an error.
func feedEvents(ctx context.Context, open func(context.Context, string) (client.Feed, error), path string, want int) ([]map[string]any, error) {
	GinkgoHelper()
	fd, err := open(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fd.Close()
	var out []map[string]any
	wait := suite.Env().Config.Timeouts.Stream
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var end error
	for len(out) < want && time.Now().Before(deadline) {
		wctx, done := context.WithTimeout(ctx, wait)
		fe, err := fd.ReadEvent(wctx)
		done()
		switch {
		case err != nil:
			end = err
		case errors.Is(fe.Problem, client.ErrServerError):
			return out, fmt.Errorf("an error frame: %s", fxClip(fe.Data))
		case fe.Problem == nil:
			out = append(out, fe.Event)
		}
		if end != nil {
			break
		}
	}
	if len(out) == 0 {
		if end == nil || errors.Is(end, client.ErrStreamTimeout) {
			return nil, fmt.Errorf("no event within --stream-timeout %s", wait)
		}
		return nil, end
	}
	return out, nil
}
