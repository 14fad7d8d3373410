package refharness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/receipt"

	rq "github.com/harn-conform/conform/internal/replay"
)

// Probes of the replay faults (ReplayFaults, replay*.go): each drives a
// source task made of the replay steps and replays it, and checks the one
// behaviour its fault breaks. Like every probe they pass on the clean
// harness, under every variant and under every other fault: what another
// fault breaks (a missing task.started, an ignored after_event_id, a key
// of another form…) makes a probe step aside (nil), never fail.

// The probes' secrets: canaries no output may show.
const (
	probeSecret         = "probe-recorded-secret-canary-7f3a"
	probeOverrideSecret = "probe-override-secret-canary-51c9"
)

// probeSteps is the probes' source run: one dependency of each kind, a
// checkpoint between the clock reading and the model call.
func probeSteps(extra ...map[string]any) []map[string]any {
	steps := []map[string]any{
		step("clock_read", "label", "started_at", "value_ms", 1000),
		step("checkpoint", "checkpoint_id", "ckpt_1"),
		step("model_call", "call_id", "main:1", "response", map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "recorded answer"}}}}),
		step("mcp_call", "server", "search", "call_id", "call_0002", "result", map[string]any{"hits": 1}),
		step("host_fact", "capability", "git", "call_id", "call_0003", "value", "abc\n"),
		step("secret_read", "name", "deploy_token", "secret", probeSecret),
	}
	return append(steps, extra...)
}

// replaySource runs steps (probeSteps when none) in the env's session to
// the end and returns the task and its override keys by dependency kind
// (time, llm, mcp, host, secret; the llm key is whatever form the run
// used).
func (p *probeEnv) replaySource(steps ...map[string]any) (string, map[string]string) {
	if len(steps) == 0 {
		steps = probeSteps()
	}
	src := p.submit(p.sessionID(), steps).str("id")
	p.awaitEnd(src)
	keys := map[string]string{}
	for _, e := range p.eventsOf(src) {
		pl, _ := e["payload"].(map[string]any)
		k, _ := pl["override_key"].(string)
		if k == "" {
			continue
		}
		kind := "llm"
		for _, pre := range []string{"time", "mcp", "host", "secret"} {
			if strings.HasPrefix(k, pre+":") {
				kind = pre
			}
		}
		keys[kind] = k
	}
	return src, keys
}

// awaitEnd waits (on the bubble's time) for task id to be terminal.
func (p *probeEnv) awaitEnd(id string) string {
	st, _ := p.waitFor(id, waitLimit, StatusCompleted, StatusFailed, StatusCanceled)
	return st
}

// eventsOf is task id's own events (a task's list carries other tasks'
// events under FaultEventsNotScoped).
func (p *probeEnv) eventsOf(id string) []map[string]any {
	var out []map[string]any
	for _, e := range p.do("GET", "/v1/tasks/"+id+"/events?limit=200", nil).list() {
		if e["task_id"] == id {
			out = append(out, e)
		}
	}
	return out
}

// replayed is the replayed events of replay task id.
func (p *probeEnv) replayed(id string) []map[string]any {
	var out []map[string]any
	for _, e := range p.eventsOf(id) {
		if e["replayed"] == true {
			out = append(out, e)
		}
	}
	return out
}

// replayTo asks for a replay of src and waits for it to end; ok is false
// when the request was not accepted (another fault's business, unless the
// probe says otherwise).
func (p *probeEnv) replayTo(src string, body map[string]any) (id, status string, r resp) {
	r = p.do("POST", "/v1/tasks/"+src+"/replay", body)
	if r.Code/100 != 2 {
		return "", "", r
	}
	id = r.str("id")
	return id, p.awaitEnd(id), r
}

// override is an inline override of key.
func override(kind string, value any) map[string]any {
	return map[string]any{"kind": kind, "value": value}
}

func llmResponse(text string) map[string]any {
	return map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": text}}}}
}

// receiptDoc is the receipt of task id, from its receipts list (the
// task's receipt_id may be dropped by a fault).
func (p *probeEnv) receiptDoc(id string) (map[string]any, []byte) {
	r := p.do("GET", "/v1/tasks/"+id+"/receipts", nil)
	for _, d := range r.list() {
		b, _ := json.Marshal(d)
		return d, b
	}
	return nil, nil
}

// secretArtifact uploads the override secret as a receipt_only artifact.
func (p *probeEnv) secretArtifact() string {
	return p.mustOK(p.do("POST", "/v1/artifacts", map[string]any{"kind": "other", "mime_type": "text/plain", "visibility": "receipt_only",
		"session_id": p.sessionID(), "content_base64": base64.StdEncoding.EncodeToString([]byte(probeOverrideSecret))}), "secret artifact").str("id")
}

// twoOverrides is a with_overrides request replacing the clock reading and
// the model response.
func twoOverrides(keys map[string]string) map[string]any {
	return map[string]any{"mode": "with_overrides", "reason": "probe", "override": map[string]any{
		keys["time"]: override("time", 5000),
		keys["llm"]:  override("llm_provider_response", llmResponse("overridden answer")),
	}}
}

// metaOf checks each replayed event of replay task id (of a source src)
// with check, which says what is wrong with its replay metadata.
func (p *probeEnv) metaOf(body map[string]any, check func(e, meta map[string]any, src, id string) error) error {
	src, keys := p.replaySource()
	if body == nil {
		body = twoOverrides(keys)
	}
	id, _, r := p.replayTo(src, body)
	if id == "" {
		return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
	}
	evs := p.replayed(id)
	if len(evs) == 0 {
		return nil // nothing replayed: another probe's business
	}
	for _, e := range evs {
		meta, _ := e["replay"].(map[string]any)
		if meta == nil {
			return fmt.Errorf("replayed %s event %s has no replay metadata", e["event"], e["id"])
		}
		if err := check(e, meta, src, id); err != nil {
			return fmt.Errorf("replayed %s event %s: %w", e["event"], e["id"], err)
		}
	}
	return nil
}

func init() {
	for f, pr := range map[Fault]probe{
		FaultReplayRangeSkips: func(p *probeEnv) error {
			_, evs := p.taskEvents(p.taskID())
			if len(evs) < 3 {
				return cannotJudge("the echo task has %d events", len(evs))
			}
			got := p.do("GET", "/v1/tasks/"+p.taskID()+"/events?after_event_id="+evs[0]["id"].(string), nil).list()
			if len(got) == 0 || got[0]["id"] == evs[0]["id"] {
				return nil // the cursor itself repeated, or nothing: another probe's business
			}
			if got[0]["id"] != evs[1]["id"] {
				return fmt.Errorf("after_event_id %s returned %s first, want the next event %s", evs[0]["id"], got[0]["id"], evs[1]["id"])
			}
			return nil
		},
		FaultReplayRangeUnstable: func(p *probeEnv) error {
			_, evs := p.taskEvents(p.taskID())
			path := "/v1/tasks/" + p.taskID() + "/events?limit=2&after_event_id=" + evs[0]["id"].(string)
			a, b := p.do("GET", path, nil), p.do("GET", path, nil)
			ja, _ := json.Marshal(a.Body["data"])
			jb, _ := json.Marshal(b.Body["data"])
			if !bytes.Equal(ja, jb) {
				return fmt.Errorf("two reads of one range differ:\n%s\n%s", ja, jb)
			}
			return nil
		},
		FaultReplayCursorUnknownEmpty: func(p *probeEnv) error {
			r := p.do("GET", "/v1/tasks/"+p.taskID()+"/events?after_event_id=event_999999999999", nil)
			if r.Code == 200 && len(r.list()) == 0 {
				return fmt.Errorf("an unknown after_event_id answered 200 with an empty list, want 410 cursor_expired")
			}
			return nil
		},
		FaultReplayAnswers201: func(p *probeEnv) error {
			src, _ := p.replaySource()
			r := p.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "exact"})
			if r.Code == 201 || r.Code/100 != 2 {
				return fmt.Errorf("replay of a finished task: status %d, want 202", r.Code)
			}
			return nil
		},
		FaultReplayNoParent: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			if got := p.do("GET", "/v1/tasks/"+id, nil).str("parent_task_id"); got != src {
				return fmt.Errorf("GET replay task: parent_task_id %q, want the source %s", got, src)
			}
			return nil
		},
		FaultReplayNewSession: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			got, want := p.do("GET", "/v1/tasks/"+id, nil), p.do("GET", "/v1/tasks/"+src, nil)
			if got.str("session_id") != want.str("session_id") || got.str("workspace_id") != want.str("workspace_id") {
				return fmt.Errorf("replay task in session %s, workspace %s; want the source's %s, %s", got.str("session_id"), got.str("workspace_id"),
					want.str("session_id"), want.str("workspace_id"))
			}
			return nil
		},
		FaultReplaySkipsStarted: func(p *probeEnv) error {
			src, _ := p.replaySource()
			kinds := func(id string) []string {
				var out []string
				for _, e := range p.eventsOf(id) {
					out = append(out, e["event"].(string))
				}
				return out
			}
			if !slices.Contains(kinds(src), "task.started") {
				return nil // no task emits it: another probe's business
			}
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			if k := kinds(id); !slices.Contains(k, "task.started") {
				return fmt.Errorf("replay task events %v: no task.started", k)
			}
			return nil
		},
		FaultReplayBodyRequired: func(p *probeEnv) error {
			src, _ := p.replaySource()
			for _, body := range []any{nil, map[string]any{}} {
				if r := p.do("POST", "/v1/tasks/"+src+"/replay", body); r.Code/100 != 2 {
					return fmt.Errorf("replay with body %v: status %d %s, want 202", body, r.Code, r.Raw)
				}
			}
			return nil
		},
		FaultReplayTaskModeExact: func(p *probeEnv) error {
			src, keys := p.replaySource()
			id, _, r := p.replayTo(src, twoOverrides(keys))
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			meta, _ := p.do("GET", "/v1/tasks/"+id, nil).Body["metadata"].(map[string]any)
			rp, _ := meta["replay"].(map[string]any)
			if rp["mode"] != "with_overrides" || rp["source_task_id"] != src {
				return fmt.Errorf("replay task metadata.replay = %v, want mode with_overrides and source %s", rp, src)
			}
			return nil
		},
		FaultReplayExactRefreshes: func(p *probeEnv) error {
			src, _ := p.replaySource(step("model_call", "call_id", "main:1", "response", llmResponse("not kept"), "retain", false))
			_, st, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if st != StatusFailed {
				return fmt.Errorf("exact replay of material not retained ended %q (%d), want FAILED", st, r.Code)
			}
			return nil
		},
		FaultReplayOverridesIgnored: func(p *probeEnv) error {
			src, keys := p.replaySource()
			id, _, r := p.replayTo(src, twoOverrides(keys))
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			for _, e := range p.replayed(id) {
				if pl, _ := e["payload"].(map[string]any); e["event"] == "agent.message" {
					if text, _ := pl["text"].(string); !strings.HasPrefix(text, "overridden answer") {
						return fmt.Errorf("the overridden model response replayed as %q, want the substitute", text)
					}
					return nil
				}
			}
			return nil // no agent.message replayed: another probe's business
		},
		FaultReplayCheckpointUnchecked: func(p *probeEnv) error {
			src, _ := p.replaySource()
			if r := p.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "from_checkpoint"}); r.Code/100 == 2 {
				return fmt.Errorf("from_checkpoint naming no checkpoint: status %d, want 400", r.Code)
			}
			return nil
		},
		FaultReplayCheckpointIgnored: func(p *probeEnv) error {
			src, keys := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "from_checkpoint", "checkpoint_id": "ckpt_1"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			for _, e := range p.replayed(id) {
				if pl, _ := e["payload"].(map[string]any); pl["override_key"] == keys["time"] || e["event"] == "agent.checkpoint" {
					return fmt.Errorf("from_checkpoint replayed %s, which is at or before the checkpoint", e["event"])
				}
			}
			return nil
		},
		FaultReplayOverrideUnstable: func(p *probeEnv) error {
			src, keys := p.replaySource()
			texts := map[string]bool{}
			for i := 0; i < 2; i++ {
				id, _, r := p.replayTo(src, twoOverrides(keys))
				if id == "" {
					return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
				}
				for _, e := range p.replayed(id) {
					if pl, _ := e["payload"].(map[string]any); e["event"] == "agent.message" {
						texts[fmt.Sprint(pl["text"])] = true
					}
				}
			}
			if len(texts) > 1 {
				return fmt.Errorf("one override map replayed the model response as %v", texts)
			}
			return nil
		},
		FaultReplayKeysUnstable: func(p *probeEnv) error {
			_, a := p.replaySource()
			_, b := p.replaySource()
			if fmt.Sprint(a) != fmt.Sprint(b) {
				return fmt.Errorf("two runs of one scenario recorded keys %v and %v", a, b)
			}
			return nil
		},
		FaultReplayKeysNonstandard: func(p *probeEnv) error {
			_, keys := p.replaySource()
			for _, k := range keys {
				if rq.Label(k) == "" {
					return fmt.Errorf("override key %q is none of the recommended forms", k)
				}
			}
			return nil
		},
		FaultReplaySecretOverrideLeaks: func(p *probeEnv) error {
			src, keys := p.replaySource()
			art := p.secretArtifact()
			id, _, r := p.replayTo(src, map[string]any{"mode": "with_overrides", "override": map[string]any{
				keys["secret"]: map[string]any{"kind": "secret_value", "artifact_id": art, "visibility": "receipt_only"}}})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			b, _ := json.Marshal(p.eventsOf(id))
			if bytes.Contains(b, []byte(probeOverrideSecret)) {
				return fmt.Errorf("the secret override's value is in the replay task's events")
			}
			return nil
		},
		FaultReplayLogReordered: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			var want, got []string
			for _, e := range p.eventsOf(src) {
				if replayable(e["event"].(string)) {
					want = append(want, e["event"].(string))
				}
			}
			for _, e := range p.eventsOf(id) { // marked or not (an unmarked event is another probe's business)
				if replayable(e["event"].(string)) {
					got = append(got, e["event"].(string))
				}
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("replayed events %v, want the source's order %v", got, want)
			}
			return nil
		},
		FaultReplayMetaNoSource: func(p *probeEnv) error {
			return p.metaOf(nil, func(_, m map[string]any, src, _ string) error {
				if m["source_task_id"] != src {
					return fmt.Errorf("replay.source_task_id %v, want %s", m["source_task_id"], src)
				}
				return nil
			})
		},
		FaultReplayMetaNoReplayTask: func(p *probeEnv) error {
			return p.metaOf(nil, func(_, m map[string]any, _, id string) error {
				if m["replay_task_id"] != id {
					return fmt.Errorf("replay.replay_task_id %v, want %s", m["replay_task_id"], id)
				}
				return nil
			})
		},
		FaultReplayMetaNoOriginal: func(p *probeEnv) error {
			return p.metaOf(nil, func(_, m map[string]any, _, _ string) error {
				if s, _ := m["original_event_id"].(string); s == "" {
					return fmt.Errorf("replay.original_event_id %v, want the source event", m["original_event_id"])
				}
				return nil
			})
		},
		FaultReplayMetaNoCursor: func(p *probeEnv) error {
			return p.metaOf(nil, func(_, m map[string]any, _, _ string) error {
				if s, _ := m["replay_cursor"].(string); s == "" {
					return fmt.Errorf("replay.replay_cursor %v, want a cursor", m["replay_cursor"])
				}
				return nil
			})
		},
		FaultReplayMetaWrongMode: func(p *probeEnv) error {
			return p.metaOf(nil, func(_, m map[string]any, _, _ string) error {
				if m["mode"] != "with_overrides" {
					return fmt.Errorf("replay.mode %v, want with_overrides", m["mode"])
				}
				return nil
			})
		},
		FaultReplayMetaNoOverrideKey: func(p *probeEnv) error {
			return p.metaOf(nil, func(e, m map[string]any, _, _ string) error {
				pl, _ := e["payload"].(map[string]any)
				k, _ := pl["override_key"].(string)
				if (strings.HasPrefix(k, "time:") || e["event"] == "agent.message") && m["override_key"] != k {
					return fmt.Errorf("replay.override_key %v, want the applied override %q", m["override_key"], k)
				}
				return nil
			})
		},
		FaultReplayUnmarkedSSE: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			fs, _, err := p.frames("/v1/tasks/"+id+"/stream", "")
			if err != nil {
				return nil // the stream itself is broken: another probe's business
			}
			events, seen := 0, 0
			for _, f := range fs {
				var e map[string]any
				if json.Unmarshal([]byte(f.Data), &e) != nil || e["task_id"] != id {
					continue // not an Event of this task: another probe's business
				}
				events++
				if _, fromReplay := e["replay"].(map[string]any); fromReplay {
					seen++
					if e["replayed"] != true {
						return fmt.Errorf("SSE frame of replayed %s event %s: replayed %v, want true", e["event"], e["id"], e["replayed"])
					}
				}
			}
			if events > 0 && seen == 0 {
				// Nothing to look at is no pass: on a stream whose frames
				// are events, the replay's own carry replay metadata.
				return cannotJudge("the stream of replay %s carried %d events, none replayed", id, events)
			}
			return nil
		},
		FaultReplayDeltaMissing: func(p *probeEnv) error {
			return p.deltas(func(ds []map[string]any) error {
				if len(ds) != 2 {
					return fmt.Errorf("%d deltas for 2 applied overrides", len(ds))
				}
				return nil
			})
		},
		FaultReplayDeltaNoKey: func(p *probeEnv) error {
			return p.deltas(func(ds []map[string]any) error {
				for _, d := range ds {
					if s, _ := d["override_key"].(string); s == "" {
						return fmt.Errorf("delta %v names no override key", d["delta_id"])
					}
				}
				return nil
			})
		},
		FaultReplayDeltaWrongHash: func(p *probeEnv) error {
			want, _ := rq.ValueHash([]byte("5000"))
			return p.deltas(func(ds []map[string]any) error {
				for _, d := range ds {
					if k, _ := d["override_key"].(string); strings.HasPrefix(k, "time:") && d["after_sha256"] != want {
						return fmt.Errorf("the clock override's delta has after_sha256 %v, want %s", d["after_sha256"], want)
					}
				}
				return nil
			})
		},
		FaultReplayDeltaNoReason: func(p *probeEnv) error {
			return p.deltas(func(ds []map[string]any) error {
				for _, d := range ds {
					if s, _ := d["reason"].(string); s == "" {
						return fmt.Errorf("delta %v has no reason", d["delta_id"])
					}
				}
				return nil
			})
		},
		FaultReplayInvalidOverride500: func(p *probeEnv) error {
			src, keys := p.replaySource()
			// An override with neither value nor artifact_id: no material.
			_, _, r := p.replayTo(src, map[string]any{"mode": "with_overrides", "override": map[string]any{
				keys["llm"]: map[string]any{"kind": "llm_provider_response", "reason": "no material"}}})
			if r.Code != http.StatusBadRequest {
				return fmt.Errorf("an override without material got %d %s, want 400 invalid_request", r.Code, r.Raw)
			}
			return nil
		},
		FaultReplayDeltasUnhashed: func(p *probeEnv) error {
			src, keys := p.replaySource()
			id, _, r := p.replayTo(src, twoOverrides(keys))
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			doc, _ := p.receiptDoc(id)
			if doc == nil {
				return nil // no receipt: another probe's business
			}
			if ds, _ := doc["deltas"].([]any); len(ds) == 0 {
				return cannotJudge("the replay receipt has no deltas to hash")
			}
			// The symptom itself, not any hash mismatch (receipt-hash-corrupt
			// has its own probe): the stored hash is the one of the receipt
			// without its deltas.
			stored, _ := doc["chain"].(map[string]any)["receipt_hash"].(string)
			doc["deltas"] = []any{}
			without, _ := json.Marshal(doc)
			if h, err := receipt.Hash(without); err == nil && h == stored {
				return fmt.Errorf("the replay receipt's stored hash %s is the hash of the receipt without its deltas: they are outside the hashed bytes", stored)
			}
			return nil
		},
		FaultReplayReceiptLeaksSecret: func(p *probeEnv) error {
			src, keys := p.replaySource()
			art := p.secretArtifact()
			id, _, r := p.replayTo(src, map[string]any{"mode": "with_overrides", "override": map[string]any{
				keys["secret"]: map[string]any{"kind": "secret_value", "artifact_id": art, "visibility": "receipt_only"}}})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			if _, raw := p.receiptDoc(id); bytes.Contains(raw, []byte(probeOverrideSecret)) || bytes.Contains(raw, []byte(probeSecret)) {
				return fmt.Errorf("the replay receipt holds a secret value")
			}
			return nil
		},
		FaultReplayManyOverridesFail: func(p *probeEnv) error {
			src, keys := p.replaySource()
			art := p.secretArtifact()
			_, st, r := p.replayTo(src, map[string]any{"mode": "with_overrides", "override": map[string]any{
				keys["time"]:   override("time", 5000),
				keys["llm"]:    override("llm_provider_response", llmResponse("overridden answer")),
				keys["mcp"]:    override("mcp_tool_return", map[string]any{"hits": 2}),
				keys["host"]:   override("host_fact", "def\n"),
				keys["secret"]: map[string]any{"kind": "secret_value", "artifact_id": art}}})
			if r.Code/100 != 2 {
				return fmt.Errorf("a replay with one override per dependency: status %d %s, want 202", r.Code, r.Raw)
			}
			if st != StatusCompleted {
				return fmt.Errorf("a replay with one override per dependency ended %s, want COMPLETED", st)
			}
			return nil
		},
		FaultReplayMaterialsUnsorted: func(p *probeEnv) error {
			return p.deltas(func(ds []map[string]any) error {
				var keys []string
				for _, d := range ds {
					k, _ := d["override_key"].(string)
					keys = append(keys, k)
				}
				if !slices.IsSorted(keys) {
					return fmt.Errorf("deltas in key order %v, want sorted", keys)
				}
				return nil
			})
		},
		FaultReplayFailureUnnamed: func(p *probeEnv) error {
			src, _ := p.replaySource(step("model_call", "call_id", "main:1", "response", llmResponse("not kept"), "retain", false))
			id, st, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			if st != StatusFailed {
				return nil // the replay did not fail: another probe's business
			}
			f, _ := p.do("GET", "/v1/tasks/"+id, nil).Body["failure"].(map[string]any)
			d, _ := f["details"].(map[string]any)
			if d["kind"] != "event" || d["id"] == nil || d["id"] == "" {
				return fmt.Errorf("the failed replay's failure %v names no missing dependency", f)
			}
			return nil
		},
		FaultReplayRefreshesMemory: func(p *probeEnv) error {
			ws := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).str("workspace_id")
			mem := p.mustOK(p.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "recorded memory",
				"provenance": map[string]any{}}), "memory").str("id")
			src, _ := p.replaySource(step("memory_read", "call_id", "mem_1"))
			p.do("DELETE", "/v1/memories/"+mem, nil)
			return p.memoryReplay(src, func(pl map[string]any) error {
				if pl["text"] != "recorded memory" {
					return fmt.Errorf("replayed memory_read text %q, want the recorded %q", pl["text"], "recorded memory")
				}
				return nil
			})
		},
		FaultReplayBringsNewMemory: func(p *probeEnv) error {
			ws := p.do("GET", "/v1/sessions/"+p.sessionID(), nil).str("workspace_id")
			p.mustOK(p.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "recorded memory",
				"provenance": map[string]any{}}), "memory")
			src, _ := p.replaySource(step("memory_read", "call_id", "mem_1"))
			p.mustOK(p.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "later memory",
				"provenance": map[string]any{}}), "memory")
			return p.memoryReplay(src, func(pl map[string]any) error {
				if ms, _ := pl["memories"].([]any); len(ms) != 1 {
					return fmt.Errorf("replayed memory_read lists %d memories, want the 1 recorded", len(ms))
				}
				return nil
			})
		},
		FaultReplayIdempotencyIgnored: func(p *probeEnv) error {
			// Keys must work on a plain submit first (forget-idempotency
			// is another probe's business).
			a := p.submit(p.sessionID(), nil, "Idempotency-Key", "probe-plain-key").str("id")
			if b := p.submit(p.sessionID(), nil, "Idempotency-Key", "probe-plain-key").str("id"); a != b {
				return nil
			}
			src, _ := p.replaySource()
			body := map[string]any{"mode": "exact", "reason": "probe"}
			r1 := p.do("POST", "/v1/tasks/"+src+"/replay", body, "Idempotency-Key", "probe-replay-key")
			r2 := p.do("POST", "/v1/tasks/"+src+"/replay", body, "Idempotency-Key", "probe-replay-key")
			if r1.Code/100 != 2 {
				return cannotJudge("replay refused: %d %s", r1.Code, r1.Raw)
			}
			if r2.Code/100 != 2 || r2.str("id") != r1.str("id") {
				return fmt.Errorf("a keyed replay retried with the same key and body: %d %s, want the first replay task %s", r2.Code, r2.str("id"), r1.str("id"))
			}
			return nil
		},
		FaultReplayHistoryLostOnRestart: func(p *probeEnv) error {
			opts := p.s.opts
			opts.DataDir = p.t.TempDir()
			before := &probeEnv{harness: newHarness(p.t, opts)}
			src, _ := before.replaySource()
			if id, st, _ := before.replayTo(src, map[string]any{"mode": "exact"}); id == "" || st != StatusCompleted {
				return nil // no replay even before a restart: another probe's business
			}
			if err := before.s.Close(); err != nil {
				return cannotJudge("closing the harness for its restart: %v", err)
			}
			after := &probeEnv{harness: newHarness(p.t, opts)}
			if r := after.do("GET", "/v1/tasks/"+src+"/events", nil); r.Code != http.StatusOK || len(r.list()) == 0 {
				return nil // the history itself is gone: another probe's business
			}
			id, st, r := after.replayTo(src, map[string]any{"mode": "exact"})
			switch {
			case id == "":
				return fmt.Errorf("after a restart, the replay of a task that ran before it was refused: %d %s", r.Code, r.Raw)
			case st != StatusCompleted:
				return fmt.Errorf("after a restart, the replay of a task that ran before it ended %s", st)
			}
			return nil
		},
		FaultReplayCursorBogus: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			for _, e := range p.replayed(id) {
				meta, _ := e["replay"].(map[string]any)
				cur, _ := meta["replay_cursor"].(string)
				if cur == "" {
					continue // no cursor: another probe's business
				}
				if got := p.do("GET", "/v1/tasks/"+id+"/events?after_event_id="+url.QueryEscape(cur), nil); got.Code != http.StatusOK {
					return fmt.Errorf("replayed %s event %s: its replay_cursor %q read as after_event_id answers %d, want a range", e["event"], e["id"], cur, got.Code)
				}
			}
			return nil
		},
		FaultReplayCheckpointNoMeta: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "from_checkpoint", "checkpoint_id": "ckpt_1"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			for _, e := range p.replayed(id) {
				if _, ok := e["replay"].(map[string]any); !ok {
					return fmt.Errorf("from_checkpoint replayed %s event %s with no replay metadata", e["event"], e["id"])
				}
			}
			return nil
		},
		FaultReplayReceiptLeaksReasoning: func(p *probeEnv) error {
			const thought = "probe hidden reasoning of the source 4b2d"
			src, _ := p.replaySource(probeSteps(step("reason", "text", thought))...)
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			if _, raw := p.receiptDoc(id); bytes.Contains(raw, []byte(thought)) {
				return fmt.Errorf("the replay receipt carries the source run's hidden reasoning")
			}
			return nil
		},
		FaultReplayExactFreshAnswer: func(p *probeEnv) error {
			src, _ := p.replaySource()
			id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
			if id == "" {
				return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
			}
			for _, e := range p.eventsOf(id) {
				if pl, _ := e["payload"].(map[string]any); e["event"] == "agent.message" && (pl["text"] != "recorded answer" || e["replayed"] != true) {
					return fmt.Errorf("the exact replay's agent.message says %q (replayed %v), want the recorded answer, replayed", pl["text"], e["replayed"])
				}
			}
			return nil
		},
	} {
		if probes[f] != nil {
			panic("probe of " + string(f) + " defined twice")
		}
		probes[f] = pr
	}
}

// deltas replays the probe source with twoOverrides and checks its
// receipt's deltas.
func (p *probeEnv) deltas(check func([]map[string]any) error) error {
	src, keys := p.replaySource()
	id, _, r := p.replayTo(src, twoOverrides(keys))
	if id == "" {
		return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
	}
	doc, _ := p.receiptDoc(id)
	if doc == nil {
		return nil // no receipt: another probe's business
	}
	var ds []map[string]any
	list, _ := doc["deltas"].([]any)
	for _, d := range list {
		m, _ := d.(map[string]any)
		ds = append(ds, m)
	}
	return check(ds)
}

// memoryReplay replays src exactly and checks its replayed memory_read.
func (p *probeEnv) memoryReplay(src string, check func(payload map[string]any) error) error {
	id, _, r := p.replayTo(src, map[string]any{"mode": "exact"})
	if id == "" {
		return cannotJudge("replay refused: %d %s", r.Code, r.Raw)
	}
	for _, e := range p.replayed(id) {
		if e["event"] == "agent.memory_read" {
			pl, _ := e["payload"].(map[string]any)
			return check(pl)
		}
	}
	return fmt.Errorf("the replay of a memory_read replayed no agent.memory_read")
}
