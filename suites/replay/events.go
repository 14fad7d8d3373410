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
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/suite"
)

// Replayed events (RPLY-META-001..006, RPLY-LOG-001, RPLY-LOG-002,
// RPLY-MARK-001; spec 002, "EventLog use"; the narrative's "Replay
// contract"). A replay task's output is every event of it but its own
// lifecycle (task.*, replay.*, receipt.*), whatever each says of itself
// (docs/interpretations.md#replay-whole-output): every output event
// carries replay {source_task_id, replay_task_id, original_event_id,
// replay_cursor, mode} and, only when a substitution produced it,
// override_key; its replay_cursor works as a cursor; it is paired with the
// source event it stands for by order and content (never by the ids it
// reports), in the source's order; its id is no other event's; and it says
// replayed: true on the REST event list (read whole and as a range), on
// SSE and on WebSocket, where the live events (the task's lifecycle) and
// the source's own events do not. An exact replay of a plain text task
// (the target's own agent) is judged on every target that claims replay;
// with the scenario hook, with_overrides and from_checkpoint replays of a
// source with recorded dependencies are judged too.

// metaReqs are the requirements judgeMeta judges; the spec of the plain
// source's exact replay, which needs no hook, judges RPLY-LOG-002 too (the
// ids of the replays that need the hook are judged there as well, where
// they are made).
var metaReqs = []string{"RPLY-META-001", "RPLY-META-002", "RPLY-META-003", "RPLY-META-004", "RPLY-META-005", "RPLY-META-006", "RPLY-LOG-001"}

var _ = Describe("Replayed events", func() {
	It("marks each replayed event of an exact replay with its source, replay task, original event, a working cursor and mode, in the source's order, under ids of its own", suite.Req(append(metaReqs, "RPLY-LOG-002")...), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		judgeMeta(ctx, p.src, p.exact, "exact", nil, -1)
		suite.Check("RPLY-LOG-002", ownIDs(p.src, p.exact))
		if hooked() {
			// The exact replay of a source with recorded dependencies too.
			if d := theDeps(ctx); d.exact.accepted() && d.exact.why == "" {
				suite.Check("RPLY-LOG-002", ownIDs(d.src, d.exact))
			}
		}
	})

	It("marks each replayed event of a with_overrides replay with its mode and, on substituted events only, the override key applied", suite.Req(metaReqs...), func(ctx SpecContext) {
		needReplay()
		needHook("a source task with recorded dependencies")
		d := theDeps(ctx)
		key := d.src.needKey(d.src.keyOf("agent.message", "call_id", "main:1"), "the model_call main:1")
		rep := mustReplay(ctx, d.src.id, overrideLLM(d.src, key, "conform override: meta"), "a with_overrides replay of llm "+key)
		rep.completed("the with_overrides replay")
		judgeMeta(ctx, d.src, rep, "with_overrides", map[string]bool{key: true}, -1)
	})

	It("marks each replayed event of a from_checkpoint replay with its metadata, in the source's order after the checkpoint", suite.Req(metaReqs...), func(ctx SpecContext) {
		needReplay()
		needHook("a source task with a checkpoint")
		d := theDeps(ctx)
		rep, at := d.fromCheckpoint(ctx)
		rep.completed("the from_checkpoint replay")
		judgeMeta(ctx, d.src, rep, "from_checkpoint", nil, at)
	})

	It("says replayed: true on every replayed event and false on live ones, on the event list read whole and as a range, on SSE and on WebSocket", suite.Req("RPLY-MARK-001"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		rep := p.exact
		const req = "RPLY-MARK-001"
		for _, e := range p.src.events {
			if e["replayed"] == true {
				suite.Check(req, fmt.Errorf("GET /v1/tasks/%s/events: event %s (%s) of the source task, live activity, says replayed: true", p.src.id, str(e, "id"), str(e, "event")))
			}
		}
		if len(rep.output()) == 0 {
			suite.NothingToCheck(req, fmt.Sprintf("the exact replay %s of task %s emitted no replayed event (events %v): nothing to see marked", rep.id, p.src.id, kinds(rep.events)),
				"replay the source's agent events (docs/replay.md, \"The replay task\")")
			return
		}
		path := "/v1/tasks/" + client.Seg(rep.id) + "/events"
		suite.Check(req, marks("GET "+path, rep.events))
		if rg, err := walkEvents(ctx, path, str(rep.events[0], "id"), 2, len(rep.events)+2); err != nil {
			suite.NothingToCheck(req, fmt.Sprintf("the replay task's event list could not be read as a range: %v", err), "serve event ranges (RPLY-RANGE-001)")
		} else {
			suite.Check(req, marks(fmt.Sprintf("GET %s?after_event_id=%s, paged on 2 at a time", path, str(rep.events[0], "id")), rg))
		}
		if hooked() {
			// The replays of a source with recorded dependencies are
			// judged whole too: an event that says nothing of itself is
			// replay output all the same.
			d := theDeps(ctx)
			if d.exact.accepted() && d.exact.why == "" {
				suite.Check(req, marks("GET /v1/tasks/"+d.exact.id+"/events", d.exact.events))
			}
		}
		sse, err := feedEvents(ctx, sseFeed, "/v1/tasks/"+client.Seg(rep.id)+"/stream", len(rep.events))
		if err != nil {
			suite.NothingToCheck(req, "the replay task's SSE stream: "+err.Error(), "serve GET /v1/tasks/{id}/stream for a finished task's history")
		} else {
			suite.Check(req, marks("SSE GET /v1/tasks/"+rep.id+"/stream", sse))
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
		suite.Check(req, marks("WebSocket GET /v1/tasks/"+rep.id+"/stream (the frames' events)", wsEvs))
	})
})

// marks checks the replayed marker of a replay task's events as one read
// delivered them: every replay output event says replayed: true, every
// event of the task's own lifecycle does not (replaydet.Live).
func marks(where string, evs []map[string]any) error {
	var bad []string
	for _, e := range evs {
		want := !replaydet.Live(str(e, "event"))
		if got := e["replayed"] == true; got != want {
			bad = append(bad, fmt.Sprintf("%s (%s) replayed=%s, want %v", str(e, "id"), str(e, "event"), jsonOf(e["replayed"]), want))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s; every event of a replay task but its own lifecycle (task.*, replay.*, receipt.*) comes from replay and carries replayed: true on every transport and read, live ones do not", where, strings.Join(bad, "; "))
	}
	return nil
}

// substitutedBy says which source events' material the applied overrides
// replaced: those that recorded an applied key.
func substitutedBy(applied map[string]bool) func(map[string]any) bool {
	if len(applied) == 0 {
		return nil
	}
	return func(e map[string]any) bool { return applied[payloadStr(e, "override_key")] }
}

// judgeMeta checks the replay metadata of every output event of a
// finished replay (from: the source position of a from_checkpoint
// boundary, else -1), its order against the source and its ids (applied:
// the override keys the request applied).
func judgeMeta(ctx context.Context, src *source, rep *replayRun, mode string, applied map[string]bool, from int) {
	GinkgoHelper()
	out := rep.output()
	if len(out) == 0 {
		for _, r := range metaReqs {
			suite.NothingToCheck(r, fmt.Sprintf("replay task %s of %s emitted no replayed event (events %v)", rep.id, src.id, kinds(rep.events)), "replay the source's agent events (docs/replay.md, \"The replay task\")")
		}
		return
	}
	idx := src.index()
	pairs := replaydet.Pair(src.events, out, from, substitutedBy(applied))
	sawKey := false
	lastOrig := ""
	for _, pr := range pairs.Pairs {
		e := pr.Out
		id, kind := str(e, "id"), str(e, "event")
		at := fmt.Sprintf("replay task %s, event %s (%s)", rep.id, id, kind)
		m := replayMeta(e)
		if m == nil {
			at += ", which carries no replay metadata"
			m = map[string]any{}
		}
		if got := str(m, "source_task_id"); got != src.id {
			suite.Check("RPLY-META-001", fmt.Errorf("%s: replay.source_task_id = %s, want the source task %s", at, jsonOf(m["source_task_id"]), src.id))
		}
		if got := str(m, "replay_task_id"); got != rep.id {
			suite.Check("RPLY-META-002", fmt.Errorf("%s: replay.replay_task_id = %s, want the replay task %s", at, jsonOf(m["replay_task_id"]), rep.id))
		}
		orig := str(m, "original_event_id")
		if o, ok := idx[orig]; !ok {
			suite.Check("RPLY-META-003", fmt.Errorf("%s: replay.original_event_id = %s names no event of the source task %s", at, jsonOf(m["original_event_id"]), src.id))
		} else if pr.Src != nil && o != pr.SrcIndex && replaydet.Content(src.events[o]) != replaydet.Content(pr.Src) {
			suite.Check("RPLY-META-003", fmt.Errorf("%s: replay.original_event_id = %s, a %s, but by order and content it stands for source event %s (%s)", at, orig, str(src.events[o], "event"), str(pr.Src, "id"), str(pr.Src, "event")))
		}
		cur, _ := m["replay_cursor"].(string)
		if cur == "" {
			suite.Check("RPLY-META-004", fmt.Errorf("%s: replay.replay_cursor = %s, want a cursor", at, jsonOf(m["replay_cursor"])))
		} else {
			suite.Check("RPLY-META-004", cursorWorks(ctx, src, rep, e, pr.Src, cur, at))
		}
		if got := str(m, "mode"); got != mode {
			suite.Check("RPLY-META-005", fmt.Errorf("%s: replay.mode = %s, want %q, the request's mode", at, jsonOf(m["mode"]), mode))
		}
		// Whether a substitution produced it is the source's to say: the
		// source event it stands for recorded an applied key.
		sk := payloadStr(e, "override_key")
		if pr.Src != nil {
			sk = payloadStr(pr.Src, "override_key")
		}
		ok2 := m["override_key"]
		switch {
		case applied[sk]:
			sawKey = true
			if s, _ := ok2.(string); s != sk {
				suite.Check("RPLY-META-006", fmt.Errorf("%s: the event of the overridden dependency %s has replay.override_key %s, want %q", at, sk, jsonOf(ok2), sk))
			}
		case ok2 != nil && ok2 != "":
			suite.Check("RPLY-META-006", fmt.Errorf("%s: replay.override_key = %s, but no override of the request produced it (applied: %v)", at, jsonOf(ok2), slices.Sorted(maps.Keys(applied))))
		}
		if pr.Place == replaydet.OutOfOrder {
			suite.Check("RPLY-LOG-001", fmt.Errorf("%s stands, by its kind and content, for source event %s (position %d), which comes before source event %s, the one an earlier replayed event stands for: the replay does not follow the source's order",
				at, str(pr.Src, "id"), pr.SrcIndex, lastOrig))
		}
		if pr.Place == replaydet.InOrder {
			lastOrig = str(pr.Src, "id")
		}
	}
	if len(applied) > 0 && !sawKey {
		suite.NothingToCheck("RPLY-META-006", fmt.Sprintf("no replayed event of task %s stands for a source event that recorded an applied override (%v)", rep.id, slices.Sorted(maps.Keys(applied))), remedyFxKeys)
	}
}

// ownIDs checks that a replay's events have ids of their own: none is the
// id of a source event, none repeats in the replay's list (RPLY-LOG-002,
// docs/interpretations.md#replay-id-remap).
func ownIDs(src *source, rep *replayRun) error {
	if ids := replaydet.RecycledIDs(src.events, rep.events); len(ids) > 0 {
		return fmt.Errorf("replay task %s of %s: event ids %v are also ids of the source's events or repeat in the replay's own list; the source's events stay in the log, so keeping an original id is not possible there: each event of the log has an id of its own, and a remapped one carries replay metadata",
			rep.id, src.id, ids)
	}
	return nil
}

// cursorWorks checks that the replay_cursor cur of output event e
// (standing for source event srcEv, nil when none) works as a cursor
// (docs/interpretations.md#replay-cursor): read as after_event_id on the
// replay task's event list, it gives the events that follow e — those the
// list read whole holds after it, or what a read after e's own id gives
// (so that how ranges are read, RPLY-RANGE's, is not judged here) — or,
// read on the source task's list, those that follow srcEv, by the same
// two measures.
func cursorWorks(ctx context.Context, src *source, rep *replayRun, e, srcEv map[string]any, cur, at string) error {
	GinkgoHelper()
	const limit = 3
	var why []string
	try := func(task string, all []map[string]any, ev map[string]any, what string) bool {
		path := "/v1/tasks/" + client.Seg(task) + "/events"
		got, resp, err := readRange(ctx, path, cur, limit)
		if err != nil {
			why = append(why, fmt.Sprintf("on %s: %v", what, err))
			return false
		}
		if follows(ids(got), all, ev, limit) {
			return true
		}
		if byID, _, err := readRange(ctx, path, str(ev, "id"), limit); err == nil && jsonOf(ids(byID)) == jsonOf(ids(got)) {
			return true
		}
		why = append(why, fmt.Sprintf("on %s: GET %s?after_event_id=%s&limit=%d: %s %v, not the events that follow %s", what, path, cur, limit, resp, ids(got), str(ev, "id")))
		return false
	}
	if try(rep.id, rep.events, e, "the replay task's list") || (srcEv != nil && try(src.id, src.events, srcEv, "the source task's list")) {
		return nil
	}
	return fmt.Errorf("%s: replay.replay_cursor %s does not work as a cursor: %s; a replay cursor is exposed for clients to use when ids are remapped", at, jsonOf(cur), strings.Join(why, "; "))
}

// follows reports whether got (ids, at most limit) are the events that
// follow ev in all, a list read whole: the next ones, then maybe events
// the list did not hold yet (one the task emitted after it was read).
func follows(got []string, all []map[string]any, ev map[string]any, limit int) bool {
	k := slices.IndexFunc(all, func(x map[string]any) bool { return jsonOf(x) == jsonOf(ev) })
	if k < 0 {
		return false
	}
	want := ids(all[k+1 : min(len(all), k+1+limit)])
	if len(got) < len(want) || jsonOf(got[:len(want)]) != jsonOf(want) {
		return false
	}
	known := map[string]bool{}
	for _, id := range ids(all) {
		known[id] = true
	}
	for _, id := range got[len(want):] {
		if known[id] {
			return false
		}
	}
	return true
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
