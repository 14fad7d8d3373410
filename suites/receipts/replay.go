package receipts

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/replay"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// remedyReplaySteps is how a target lets this spec make a replay receipt.
const remedyReplaySteps = "implement the conform.scenarios contract with its replay steps (docs/scenarios.md, \"Replay steps\"): the spec needs a source task whose model response is a recorded dependency it can override"

// The replay level's own specs (suites/replay) judge each delta's content
// (RPLY-DELTA-001..006); this one judges the receipt: a replay receipt
// carries its substitutions in deltas, in the schema's shape, inside the
// bytes its hash covers, and verifies like any other receipt.
var _ = Describe("Replay receipts", func() {
	It("records a replay's substitutions as deltas inside the hashed bytes", suite.Req("RCPT-DELTA-001"), func(ctx SpecContext) {
		if !suite.Env().Discovery.Claims(requirements.Replay) {
			// Not advertised is no evidence: a target that serves replay
			// anyway issues replay receipts, and they are judged.
			if why := replayUnoffered(ctx); why != "" {
				suite.NotApplicable("the target does not advertise replay in discovery (capabilities.replay) and does not offer it (" + why + "), so it issues no replay receipts")
			}
			suite.Note("RCPT-DELTA-001: the target does not advertise replay (capabilities.replay), but serves POST /v1/tasks/{id}/replay: its replay receipts are judged")
		}
		if suite.Env().Discovery.Scenarios() == "" {
			suite.Unverified("the target serves replay, but without the conform.scenarios contract the suite cannot make a source task with a dependency to override, so no replay receipt with a delta was read", remedyReplaySteps)
		}
		r := theRun(ctx)
		raw := replayReceipt(ctx, r)
		where := "the replay receipt"
		var doc map[string]any
		if err := json.Unmarshal(raw, &doc); err != nil {
			suite.Must("RCPT-DELTA-001", fmt.Errorf("%s is not a JSON object: %v", where, err))
		}
		deltas, _ := doc["deltas"].([]any)
		if len(deltas) == 0 {
			suite.Must("RCPT-DELTA-001", fmt.Errorf("%s of a replay that applied one override has no deltas (deltas: %v)", where, doc["deltas"]))
		}
		// The deltas' own shape and place in the hash, not the receipt's
		// as a whole: a receipt whose hash or schema is broken everywhere
		// is RCPT-HASH-001's and RCPT-SHAPE-001's finding, judged on the
		// run's other receipts.
		for _, f := range r.verify(ctx, raw).Findings {
			if f.Class == receipt.ClassSchemaInvalid && strings.Contains(f.Message, "/deltas") {
				suite.Check("RCPT-DELTA-001", fmt.Errorf("%s: a delta is not in the schema's delta shape: %s", where, f.Message))
			}
		}
		// A hash over the receipt without its deltas: a delta could be
		// edited unnoticed.
		stored, _ := doc["chain"].(map[string]any)["receipt_hash"].(string)
		doc["deltas"] = []any{}
		without, err := json.Marshal(doc)
		if err == nil {
			if h, err := receipt.Hash(without); err == nil && h == stored {
				suite.Check("RCPT-DELTA-001", fmt.Errorf("%s: its chain.receipt_hash %s is the hash of the receipt without its %d delta(s): the deltas are outside the hashed bytes", where, stored, len(deltas)))
			}
		}
	})
})

// replayUnoffered is why the evidence says the target does not offer
// replay ("" when it does): a replay of a task that does not exist, which
// can change nothing, weighed by suite.Unoffered (a 501, or the 404 a
// made-up route beside it gets too, says it is not offered; the 404
// resource_not_found of a served route, that it is).
func replayUnoffered(ctx context.Context) string {
	GinkgoHelper()
	req := client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg("task_conform_unknown_"+suite.Key("replay")) + "/replay",
		Body: map[string]any{"mode": "exact"}, Probe: "is replay offered, though discovery does not advertise it?"}
	resp := do(ctx, req, "RCPT-DELTA-001")
	why, _ := suite.Unoffered(ctx, suite.Offering{Request: req, Answer: resp}, "RCPT-DELTA-001")
	return why
}

// replayReceipt makes a replay receipt: a source task with one model call,
// replayed with that response overridden, and returns the replay task's
// receipt as served. Whatever the target refuses along the way is the
// Replay level's finding: the spec then has no replay receipt to judge.
func replayReceipt(ctx context.Context, r *run) []byte {
	GinkgoHelper()
	const callID = "conform-receipts:1"
	steps := []any{
		map[string]any{"op": "model_call", "call_id": callID, "response": map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "recorded answer"}}}}},
		map[string]any{"op": "complete", "summary": "replay receipt source"},
	}
	body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "conform replay receipt source", "visibility": "public"}}},
		"metadata": map[string]any{"conform.scenario": map[string]any{"steps": steps}}}
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: body})
	m, err := resp.Object()
	src, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || src == "" {
		suite.Unverified(fmt.Sprintf("%s: the target did not accept a source task with a model_call step, so no replay receipt was made", resp), remedyReplaySteps)
	}
	if _, remedy, why := r.poll(ctx, src, check.Terminal); why != "" {
		suite.Unverified("the replay source did not end: "+why, remedy)
	}
	key := overrideKey(ctx, src)
	if key == "" {
		suite.Unverified(fmt.Sprintf("no event of the source task %s names the override key of its model call (payload.override_key)", src), remedyReplaySteps)
	}
	value := map[string]any{"choices": []any{map[string]any{"message": map[string]any{"role": "assistant", "content": "overridden answer"}}}}
	vb, _ := json.Marshal(value)
	hash, err := replay.ValueHash(vb)
	if err != nil {
		suite.Unverified("hashing the override value: "+err.Error(), "none: a suite defect")
	}
	req := map[string]any{"mode": "with_overrides", "reason": "conform receipts: a replay receipt with a delta",
		"override": map[string]any{key: map[string]any{"kind": "llm_provider_response", "value": value, "sha256": hash, "visibility": "internal", "reason": "fixed model response"}}}
	rr := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(src) + "/replay", Body: req})
	rm, err := rr.Object()
	id, _ := rm["id"].(string)
	if rr.Status/100 != 2 || err != nil || id == "" {
		suite.Unverified(fmt.Sprintf("%s: the target did not accept the replay, so no replay receipt was made (the Replay level judges the refusal)", rr), "accept a with_overrides replay of a finished task (docs/replay.md)")
	}
	t, remedy, why := r.poll(ctx, id, check.Terminal)
	if why != "" {
		suite.Unverified("the replay did not end: "+why, remedy)
	}
	if rid, _ := t["receipt_id"].(string); rid == "" {
		suite.Unverified(fmt.Sprintf("the finished replay task %s names no receipt_id, so there is no replay receipt to read (RCPT-REF-001 is judged on the run's own tasks)", id), "issue a receipt for every finished task, replay tasks included")
	}
	// Read as the run's receipts are read (RCPT-RES-002 judges the list on
	// the run's own tasks): the task's receipt list.
	list := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/receipts"})
	rs, err := check.ReceiptList(list)
	if err != nil || len(rs) == 0 {
		suite.Unverified(fmt.Sprintf("%s: the replay task's receipts cannot be listed (%v; %d listed), so there is no replay receipt to read", list, err, len(rs)), "list each finished task's receipts")
	}
	return rs[len(rs)-1]
}

// overrideKey is the key the source's model call recorded, as its events
// name it.
func overrideKey(ctx context.Context, task string) string {
	GinkgoHelper()
	evs, err := readEvents(ctx, "/v1/tasks/"+client.Seg(task)+"/events", "RCPT-DELTA-001")
	if err != nil {
		suite.Unverified("the source task's events cannot be read: "+err.Error(), "serve GET /v1/tasks/{id}/events")
	}
	for _, e := range evs {
		if p, _ := e["payload"].(map[string]any); p != nil {
			if k, _ := p["override_key"].(string); k != "" {
				return k
			}
		}
	}
	return ""
}
