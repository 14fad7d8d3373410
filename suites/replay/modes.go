package replay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/suite"
)

// Replay modes, overrides and failures (RPLY-MODE-001..005,
// RPLY-OVERRIDE-001..005, RPLY-FAIL-001; spec 002, "Modes" and "Override
// keys"; docs/replay.md). The scenario hook's replay steps give a source
// whose recorded dependencies are known: a clock read, two model calls, an
// MCP call, a host fact and a checkpoint between them (theDeps). Without
// the hook, what a plain text task allows is still checked: the exact and
// from_checkpoint modes, the refusal of a from_checkpoint without its
// boundary, the replay of only the events after a checkpoint_event_id and
// the naming of an unknown one; the rest is unverified, never passed.

// depSteps is the source scenario with recorded dependencies.
func depSteps() []any {
	return []any{
		map[string]any{"op": "clock_read", "label": "t0", "value_ms": 1714000000000},
		map[string]any{"op": "model_call", "call_id": "main:1", "response": llmResponse("conform recorded answer 1")},
		map[string]any{"op": "mcp_call", "server": "search", "call_id": "call_2", "result": map[string]any{"hits": []any{"conform"}}},
		map[string]any{"op": "host_fact", "capability": "git", "call_id": "call_3", "value": "0123456789abcdef\n"},
		map[string]any{"op": "checkpoint", "checkpoint_id": "cp1"},
		map[string]any{"op": "model_call", "call_id": "main:2", "response": llmResponse("conform recorded answer 2")},
		map[string]any{"op": "complete"},
	}
}

func llmResponse(text string) map[string]any {
	return map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}}}}
}

// depRun is the shared source with recorded dependencies, its exact
// replay and (made on first use) its replay from checkpoint cp1.
type depRun struct {
	src    *source
	exact  *replayRun
	fromCP *replayRun
	gen    int64 // suite.Restarts() when it was made
}

// fromCheckpoint is the shared from_checkpoint replay of the source from
// its checkpoint cp1 (by checkpoint_id), and the checkpoint's position in
// the source's log.
func (d *depRun) fromCheckpoint(ctx context.Context) (*replayRun, int) {
	GinkgoHelper()
	cp := -1
	for i, e := range d.src.events {
		if str(e, "event") == "agent.checkpoint" && payloadStr(e, "checkpoint_id") == "cp1" {
			cp = i
		}
	}
	if cp < 0 {
		suite.Unverified(fmt.Sprintf("the source task %s emitted no agent.checkpoint cp1 (events %v)", d.src.id, kinds(d.src.events)), remedyHookReplay)
	}
	if d.fromCP == nil {
		d.fromCP = replayOf(ctx, d.src.id, map[string]any{"mode": "from_checkpoint", "checkpoint_id": "cp1"})
	}
	r := d.fromCP
	switch {
	case !r.accepted():
		suite.Unverified(fmt.Sprintf("the from_checkpoint replay of %s from cp1 was refused: %s %s", d.src.id, r.resp, fxClip(r.resp.Body)), "accept the replay request (RPLY-API-001, RPLY-MODE-001 report it)")
	case r.why != "":
		suite.Unverified("the from_checkpoint replay from cp1: "+r.why, "let the replay task finish within --task-timeout and serve its events")
	}
	return r, cp
}

var depShared *depRun

func theDeps(ctx context.Context) *depRun {
	GinkgoHelper()
	needHook("a source task with recorded dependencies")
	if depShared == nil || depShared.gen != suite.Restarts() {
		gen := suite.Restarts()
		src := submitSource(ctx, "", depSteps(), "conform replay: a source with recorded dependencies")
		depShared = &depRun{src: src, exact: replayOf(ctx, src.id, map[string]any{"mode": "exact"}), gen: gen}
	}
	// Whichever spec made it, the source ran on the hook's replay steps
	// (docs/interpretations.md#hook-attested).
	suite.UsedHook(evidence.HookScenarios, "the source task "+depShared.src.id+", run by replay steps (recorded dependencies)")
	return depShared
}

// retainRun is a source whose model response was not retained, and its
// exact replay (which must fail).
var retainShared *struct {
	src   *source
	key   string
	exact *replayRun
	gen   int64
}

func theRetain(ctx context.Context) (*source, string, *replayRun) {
	GinkgoHelper()
	needHook("a source task whose material was not retained (retain: false)")
	if retainShared == nil || retainShared.gen != suite.Restarts() {
		gen := suite.Restarts()
		src := submitSource(ctx, "", []any{
			map[string]any{"op": "model_call", "call_id": "gone:1", "response": llmResponse("conform unretained answer"), "retain": false},
			map[string]any{"op": "complete"},
		}, "conform replay: a source with unretained material")
		key := src.keyOf("agent.message", "call_id", "gone:1")
		retainShared = &struct {
			src   *source
			key   string
			exact *replayRun
			gen   int64
		}{src, key, replayOf(ctx, src.id, map[string]any{"mode": "exact"}), gen}
	}
	suite.UsedHook(evidence.HookScenarios, "the source task "+retainShared.src.id+", run by a model_call step whose material is not retained")
	r := retainShared
	r.src.needKey(r.key, "the model_call gone:1 (retain: false)")
	if !r.exact.accepted() || r.exact.why != "" {
		suite.Unverified(fmt.Sprintf("the exact replay of task %s (unretained material) was refused or not followed: %s %s %s", r.src.id, r.exact.resp, fxClip(r.exact.resp.Body), r.exact.why), "accept the replay request and let it end (RPLY-API-001)")
	}
	return r.src, r.key, r.exact
}

// overrideLLM is a with_overrides request replacing the model response of
// key by one whose assistant text is text.
func overrideLLM(src *source, key, text string) map[string]any {
	return map[string]any{"mode": "with_overrides", "override": map[string]any{key: map[string]any{
		"kind": "llm_provider_response", "value": llmResponse(text), "event_id": src.keys[key], "reason": "conform: a fixed model response"}}}
}

// firstReplayable is the first source event a replay replays (not a
// task.* lifecycle event nor a client's user.* event): its index, -1 when
// none.
func firstReplayable(src *source) int {
	for i, e := range src.events {
		k := str(e, "event")
		if !strings.HasPrefix(k, "task.") && !strings.HasPrefix(k, "user.") {
			return i
		}
	}
	return -1
}

// messageText is the text of the replayed agent.message of call id (or,
// for call "", the first one), and whether there is one.
func messageText(evs []map[string]any, call string) (string, bool) {
	for _, e := range ofKind(evs, "agent.message") {
		if call == "" || payloadStr(e, "call_id") == call {
			return payloadStr(e, "text"), true
		}
	}
	return "", false
}

// sameContent pairs rep's output with the source by order and content
// (replaydet.Pair; from: a from_checkpoint boundary, else -1) and checks
// that every output event stands for a source event, as recorded (or, for
// a source event of a key in applied, as substituted), and that none of
// the source's model outputs and tool results was left out. It returns how
// many output events stand for a source event. Order is RPLY-LOG-001's
// and the checkpoint boundary RPLY-MODE-005's: not judged here.
func sameContent(req string, src *source, rep *replayRun, applied map[string]bool, from int) int {
	pairs := replaydet.Pair(src.events, rep.output(), from, substitutedBy(applied))
	n := 0
	for _, pr := range pairs.Pairs {
		if pr.Place != replaydet.Unsourced {
			n++
			continue
		}
		e := pr.Out
		suite.Check(req, fmt.Errorf("replay task %s (mode %s), event %s carries %s (replayed %s, replay.original_event_id %s), which no event of the source %s after its boundary has: material the replay did not take from the source's log",
			rep.id, taskMode(rep.answer), str(e, "id"), replaydet.Content(e), jsonOf(e["replayed"]), jsonOf(replayMeta(e)["original_event_id"]), src.id))
	}
	for _, i := range pairs.Missed {
		o := src.events[i]
		suite.Check(req, fmt.Errorf("replay task %s (mode %s) replays nothing for the source's %s %s (%s): its recorded output is missing from the replay", rep.id, taskMode(rep.answer), str(o, "event"), str(o, "id"), replaydet.Content(o)))
	}
	return n
}

var _ = Describe("Replay modes", func() {
	It("accepts exact, with_overrides and from_checkpoint and reports the asked mode in the replay task's metadata.replay", suite.Req("RPLY-MODE-001"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-MODE-001"
		p := thePlain(ctx)
		bodies := []map[string]any{{"mode": "exact"}}
		if i := firstReplayable(p.src); i >= 0 {
			bodies = append(bodies, map[string]any{"mode": "from_checkpoint", "checkpoint_event_id": str(p.src.events[i], "id")})
		} else {
			suite.NothingToCheck(req, fmt.Sprintf("the plain task %s emitted no agent event to name as a checkpoint (events %v)", p.src.id, kinds(p.src.events)), remedyHookReplay)
		}
		src := p.src
		if hooked() {
			d := theDeps(ctx)
			src = d.src
			key := d.src.needKey(d.src.keyOf("agent.message", "call_id", "main:1"), "the model_call main:1")
			bodies = append(bodies, overrideLLM(d.src, key, "conform override: mode"))
		} else {
			suite.NothingToCheck(req, "the target does not advertise the conform.scenarios hook: with_overrides needs a recorded dependency to override", remedyHookReplay)
		}
		for _, b := range bodies {
			s := p.src.id
			if b["mode"] == "with_overrides" {
				s = src.id
			}
			r := replayOf(ctx, s, b)
			mode := b["mode"].(string)
			if !r.accepted() {
				suite.Check(req, fmt.Errorf("POST /v1/tasks/%s/replay with mode %s: %s %s, want 202 with a replay Task", s, mode, r.resp, fxClip(r.resp.Body)))
				continue
			}
			if got := taskMode(r.answer); got != mode {
				suite.Check(req, fmt.Errorf("POST /v1/tasks/%s/replay with mode %s: the answer's metadata.replay.mode = %q, want %q", s, mode, got, mode))
			}
			if r.task != nil {
				if got := taskMode(r.task); got != mode {
					suite.Check(req, fmt.Errorf("GET /v1/tasks/%s (a %s replay): metadata.replay.mode = %q, want %q", r.id, mode, got, mode))
				}
			}
		}
	})

	It("reproduces the source's model outputs and tool results in an exact replay, and fails one whose material was not retained", suite.Req("RPLY-MODE-002"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-MODE-002"
		p := thePlain(ctx)
		if p.exact.status == check.Completed {
			sameContent(req, p.src, p.exact, nil, -1)
		} else {
			suite.Check(req, fmt.Errorf("the exact replay %s of the plain task %s ended %s, want COMPLETED: its material was all recorded", p.exact.id, p.src.id, p.exact.status))
		}
		needHook("a source task with recorded dependencies")
		d := theDeps(ctx)
		if !d.exact.accepted() || d.exact.why != "" {
			suite.Unverified(fmt.Sprintf("the exact replay of %s: %s %s", d.src.id, d.exact.resp, d.exact.why), "accept the replay request (RPLY-API-001)")
		}
		if d.exact.status != check.Completed {
			suite.Check(req, fmt.Errorf("the exact replay %s of task %s (every dependency recorded) ended %s, want COMPLETED", d.exact.id, d.src.id, d.exact.status))
		} else if n := sameContent(req, d.src, d.exact, nil, -1); n == 0 {
			suite.NothingToCheck(req, fmt.Sprintf("the exact replay %s emitted no event that stands for a source event (events %v)", d.exact.id, kinds(d.exact.events)), "replay the source's agent events (docs/replay.md, \"The replay task\")")
		}
		src, key, r := theRetain(ctx)
		if r.status != check.Failed || len(ofKind(r.events, "replay.failed")) == 0 {
			suite.Check(req, fmt.Errorf("the exact replay %s of task %s, whose %s material was not retained, ended %s with events %v: want replay.failed and the task FAILED, never a fresh value", r.id, src.id, key, r.status, kinds(r.events)))
		}
	})

	It("replaces the overridden model response in a with_overrides replay and replays the rest as recorded", suite.Req("RPLY-MODE-003"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-MODE-003"
		d := theDeps(ctx)
		key := d.src.needKey(d.src.keyOf("agent.message", "call_id", "main:1"), "the model_call main:1")
		text := "conform override: " + suite.Key("m3")
		r := mustReplay(ctx, d.src.id, overrideLLM(d.src, key, text), "a with_overrides replay of "+key)
		r.completed("the with_overrides replay")
		if got, ok := messageText(r.output(), "main:1"); !ok || got != text {
			suite.Check(req, fmt.Errorf("with_overrides replay %s of %s, overriding %s: the replayed agent.message of call main:1 says %q (present: %v), want the override's %q", r.id, d.src.id, key, got, ok, text))
		}
		sameContent(req, d.src, r, map[string]bool{key: true}, -1)
	})

	It("refuses from_checkpoint without checkpoint_id or checkpoint_event_id (400 invalid_request) and starts no replay", suite.Req("RPLY-MODE-004"), func(ctx SpecContext) {
		needReplay()
		p := thePlain(ctx)
		before, err := listTasks(ctx, p.src.session)
		r := replayOf(ctx, p.src.id, map[string]any{"mode": "from_checkpoint"})
		suite.Check("RPLY-MODE-004", check.Refused(r.resp, []int{http.StatusBadRequest}, "invalid_request"))
		after, err2 := listTasks(ctx, p.src.session)
		if err == nil && err2 == nil && len(after) > len(before) {
			suite.Check("RPLY-MODE-004", fmt.Errorf("GET /v1/sessions/%s/tasks: %d tasks before the refused from_checkpoint replay, %d after: a refused request starts no replay task", p.src.session, len(before), len(after)))
		}
	})

	It("replays only the source events after the checkpoint, by checkpoint_event_id and by checkpoint_id", suite.Req("RPLY-MODE-005"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-MODE-005"
		p := thePlain(ctx)
		if i := firstReplayable(p.src); i >= 0 {
			body := map[string]any{"mode": "from_checkpoint", "checkpoint_event_id": str(p.src.events[i], "id")}
			judgeCheckpoint(p.src, mustReplay(ctx, p.src.id, body, fmt.Sprintf("a from_checkpoint replay %s", jsonOf(body))), body, i, false)
		} else {
			suite.NothingToCheck(req, fmt.Sprintf("the plain task %s emitted no agent event to name as a checkpoint (events %v)", p.src.id, kinds(p.src.events)), remedyHookReplay)
		}
		needHook("a source task with a checkpoint")
		d := theDeps(ctx)
		r, cp := d.fromCheckpoint(ctx)
		judgeCheckpoint(d.src, r, map[string]any{"mode": "from_checkpoint", "checkpoint_id": "cp1"}, cp, true)
		body := map[string]any{"mode": "from_checkpoint", "checkpoint_event_id": str(d.src.events[cp], "id")}
		judgeCheckpoint(d.src, mustReplay(ctx, d.src.id, body, fmt.Sprintf("a from_checkpoint replay %s", jsonOf(body))), body, cp, true)
	})
})

// judgeCheckpoint judges r, a replay of src from a checkpoint at source
// position at: every output event stands, by order and content, for a
// source event after the boundary (none at or before it, none for no
// source event), and, when some must be, some were replayed.
func judgeCheckpoint(src *source, r *replayRun, body map[string]any, at int, some bool) {
	GinkgoHelper()
	const req = "RPLY-MODE-005"
	pairs := replaydet.Pair(src.events, r.output(), at, nil)
	for _, pr := range pairs.Pairs {
		e := pr.Out
		switch pr.Place {
		case replaydet.BeforeBoundary:
			suite.Check(req, fmt.Errorf("from_checkpoint replay %s (%s) of %s: event %s (%s) replays, by its kind and content, source event %s at position %d, not after the checkpoint boundary %s (position %d)",
				r.id, jsonOf(body), src.id, str(e, "id"), str(e, "event"), str(pr.Src, "id"), pr.SrcIndex, str(src.events[at], "id"), at))
		case replaydet.Unsourced:
			suite.Check(req, fmt.Errorf("from_checkpoint replay %s (%s) of %s: event %s carries %s, which no source event after the checkpoint boundary %s (position %d) has",
				r.id, jsonOf(body), src.id, str(e, "id"), replaydet.Content(e), str(src.events[at], "id"), at))
		}
	}
	if some && len(pairs.Pairs) == 0 && r.status == check.Completed {
		suite.Check(req, fmt.Errorf("from_checkpoint replay %s (%s) of %s replayed no source event, but the source has events after the checkpoint", r.id, jsonOf(body), src.id))
	}
}

var _ = Describe("Replay overrides and failures", func() {
	It("gives the same replayed content for the same override map twice", suite.Req("RPLY-OVERRIDE-001"), func(ctx SpecContext) {
		needReplay()
		d := theDeps(ctx)
		key := d.src.needKey(d.src.keyOf("agent.message", "call_id", "main:1"), "the model_call main:1")
		body := overrideLLM(d.src, key, "conform override: twice")
		a := mustReplay(ctx, d.src.id, body, "the first with_overrides replay")
		b := mustReplay(ctx, d.src.id, body, "the second with_overrides replay")
		a.completed("the first with_overrides replay")
		b.completed("the second with_overrides replay")
		var ca, cb []string
		for _, e := range a.output() {
			ca = append(ca, replaydet.Content(e))
		}
		for _, e := range b.output() {
			cb = append(cb, replaydet.Content(e))
		}
		if jsonOf(ca) != jsonOf(cb) {
			suite.Check("RPLY-OVERRIDE-001", fmt.Errorf("two with_overrides replays of %s with the same override map replayed different content: %s (task %s) vs %s (task %s)", d.src.id, jsonOf(ca), a.id, jsonOf(cb), b.id))
		}
	})

	It("records the same override keys for two identical source runs, in the recommended forms", suite.Req("RPLY-OVERRIDE-002", "RPLY-OVERRIDE-003"), func(ctx SpecContext) {
		needReplay()
		d := theDeps(ctx)
		again := submitSource(ctx, "", depSteps(), "conform replay: a source with recorded dependencies, again")
		a, b := slices.Sorted(maps.Keys(d.src.keys)), slices.Sorted(maps.Keys(again.keys))
		if jsonOf(a) != jsonOf(b) {
			suite.Should("RPLY-OVERRIDE-002", fmt.Errorf("two runs of the same source scenario recorded different override keys: %v (task %s) vs %v (task %s)", a, d.src.id, b, again.id))
		}
		forms := []struct {
			kind, member, value string
			re                  *regexp.Regexp
		}{
			{"span.completed", "label", "t0", regexp.MustCompile(`^time:.+`)},
			{"agent.message", "call_id", "main:1", regexp.MustCompile(`^llm:.+`)},
			{"agent.mcp_tool_use", "server", "search", regexp.MustCompile(`^mcp:search:.+`)},
			{"tool.completed", "tool_call_id", "call_3", regexp.MustCompile(`^host:git:.+`)},
		}
		for _, f := range forms {
			k := d.src.keyOf(f.kind, f.member, f.value)
			if k != "" && !f.re.MatchString(k) {
				suite.Should("RPLY-OVERRIDE-003", fmt.Errorf("task %s: the %s event of %s %s names override key %q, want the recommended form %s", d.src.id, f.kind, f.member, f.value, k, f.re))
			}
		}
	})

	It("takes a receipt_only secret override by artifact_id, applies its content and keeps it out of the replay task's events, messages and reads", suite.Req("RPLY-OVERRIDE-006", "RPLY-OVERRIDE-004"), func(ctx SpecContext) {
		needReplay()
		needHook("a source task that reads a secret")
		recorded, override := "conform-rec-"+suite.Key("s1"), "conform-ovr-"+suite.Key("s2")
		suite.Env().Redactor.Add(recorded, override, base64.StdEncoding.EncodeToString([]byte(override)))
		src := submitSource(ctx, "", []any{
			map[string]any{"op": "secret_read", "name": "conform_token", "secret": recorded},
			map[string]any{"op": "complete"},
		}, "conform replay: a source that reads a secret")
		key := src.needKey(src.keyOf("tool.completed", "name", "secret:conform_token"), "the secret_read conform_token")
		sum := sha256.Sum256([]byte(override))
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: map[string]any{"kind": "other", "mime_type": "text/plain", "visibility": "receipt_only",
			"sha256": hex.EncodeToString(sum[:]), "session_id": src.session, "content_base64": base64.StdEncoding.EncodeToString([]byte(override)),
			"metadata": map[string]any{"conform.run": suite.Env().RunID}}})
		a, _ := resp.Object()
		art := str(a, "id")
		if resp.Status/100 != 2 || art == "" {
			suite.Unverified(fmt.Sprintf("%s: the override secret could not be registered as an artifact", resp), remedyFxUpload)
		}
		r := replayOf(ctx, src.id, map[string]any{"mode": "with_overrides", "override": map[string]any{key: map[string]any{
			"kind": "secret_value", "artifact_id": art, "sha256": "sha256:" + hex.EncodeToString(sum[:]), "visibility": "receipt_only", "event_id": src.keys[key], "reason": "conform: a rotated secret"}}})
		if !r.accepted() || r.why != "" {
			if r.resp.Status/100 == 4 {
				// The artifact form is a MAY: a target that does not take
				// it is within its rights.
				suite.NotApplicableTo("RPLY-OVERRIDE-004", fmt.Sprintf("the target refused a secret override by artifact_id: %s %s", r.resp, fxClip(r.resp.Body)))
			}
			suite.Unverified(fmt.Sprintf("the with_overrides replay of the secret was refused or not followed: %s %s", r.resp, r.why), "accept a secret override by artifact_id with visibility receipt_only (spec 002, \"Override keys\")")
		}
		r.completed("the with_overrides replay of the secret")
		// Taken by artifact_id, the override's content is what the replay
		// used: the events of the secret read say its hash (never the
		// value; docs/scenarios.md, secret_read).
		want, seen := "sha256:"+hex.EncodeToString(sum[:]), 0
		for _, e := range r.output() {
			h := payloadStr(e, "sha256")
			if payloadStr(e, "override_key") != key || h == "" {
				continue
			}
			seen++
			if h != want {
				suite.Should("RPLY-OVERRIDE-004", fmt.Errorf("replay task %s took the override of %s by artifact_id %s, but its replayed %s %s says sha256 %s, want the artifact's %s: the artifact's content was not applied", r.id, key, art, str(e, "event"), str(e, "id"), h, want))
				break
			}
		}
		if seen == 0 {
			suite.NothingToCheck("RPLY-OVERRIDE-004", fmt.Sprintf("no replayed event of task %s carries override key %s with a sha256 to show which secret the replay used (events %v)", r.id, key, kinds(r.events)), remedyHookReplay)
		}
		reads := []string{"/v1/tasks/" + client.Seg(r.id), "/v1/tasks/" + client.Seg(r.id) + "/events", "/v1/sessions/" + client.Seg(src.session) + "/messages"}
		for _, path := range reads {
			body := suite.Do(ctx, client.Request{Path: path}).Body
			for name, s := range map[string]string{"the source's recorded secret": recorded, "the receipt_only override secret": override} {
				if check.SecretSpelled(string(body), s) != "" {
					// The client's SHOULD (receipt_only, RPLY-OVERRIDE-005) was
					// kept; the server's MUST NOT is RPLY-OVERRIDE-006.
					suite.Check("RPLY-OVERRIDE-006", fmt.Errorf("GET %s (replay task %s) shows %s: a secret appears in no event, message or public read of the replay task (Events and receipts MUST redact secret material)", path, r.id, name))
				}
			}
		}
	})

	It("names the missing dependency of a replay that cannot proceed, and the unknown checkpoint or artifact a request names", suite.Req("RPLY-FAIL-001"), func(ctx SpecContext) {
		needReplay()
		const req = "RPLY-FAIL-001"
		p := thePlain(ctx)
		unknown := "evt_conform_unknown_" + suite.Key("cp")
		r := replayOf(ctx, p.src.id, map[string]any{"mode": "from_checkpoint", "checkpoint_event_id": unknown})
		suite.Check(req, named(r, p.src.id, "checkpoint_event_id", unknown))
		needHook("a source task whose material was not retained")
		src, key, ex := theRetain(ctx)
		f, _ := ex.task["failure"].(map[string]any)
		det, _ := f["details"].(map[string]any)
		if ex.status == check.Failed && (str(det, "kind") == "" || str(det, "id") == "") {
			suite.Check(req, fmt.Errorf("the exact replay %s of %s failed for want of the unretained %s, but failure.details = %s: want the missing dependency's kind and id", ex.id, src.id, key, jsonOf(f["details"])))
		}
		for _, e := range ofKind(ex.events, "replay.failed") {
			p, _ := e["payload"].(map[string]any)
			m, _ := p["missing"].(map[string]any)
			if str(m, "kind") == "" || str(m, "id") == "" {
				suite.Check(req, fmt.Errorf("replay task %s: replay.failed %s payload %s names no missing dependency (kind and id)", ex.id, str(e, "id"), jsonOf(p)))
			}
		}
		d := theDeps(ctx)
		mcp := d.src.needKey(d.src.keyOf("agent.mcp_tool_use", "server", "search"), "the mcp_call search/call_2")
		art := "art_conform_unknown_" + suite.Key("art")
		r = replayOf(ctx, d.src.id, map[string]any{"mode": "with_overrides", "override": map[string]any{mcp: map[string]any{"kind": "mcp_tool_return", "artifact_id": art, "reason": "conform: an unknown artifact"}}})
		suite.Check(req, named(r, d.src.id, "override."+mcp+".artifact_id", art))
	})
})

// named checks the refusal of a request naming an unknown dependency: a
// 4xx whose error names it, by error.details.id, or by error.param naming
// the member (for an override's artifact_id, the override itself will do:
// "override.<key>"). A bare "override" names no dependency.
func named(r *replayRun, src, member, id string) error {
	where := fmt.Sprintf("POST /v1/tasks/%s/replay naming the unknown %s %s", src, member, id)
	if r.resp.Status/100 != 4 {
		return fmt.Errorf("%s: %s, want a 4xx refusal naming it", where, r.resp)
	}
	e, err := check.Envelope(r.resp)
	if err != nil {
		return fmt.Errorf("%s: %s, but the answer is no error envelope (%v), so it names nothing: want the unknown dependency named (details {kind, id} or param %q)", where, r.resp, err, member)
	}
	if str(e.Details, "id") == id || (e.HasParam && (e.Param == member || e.Param == strings.TrimSuffix(member, ".artifact_id") && strings.HasPrefix(member, "override."))) {
		return nil
	}
	return fmt.Errorf("%s: %s with error.param %q and error.details %s: want the unknown dependency named (details {kind, id} or param %q)", where, r.resp, e.Param, jsonOf(e.Details), member)
}
