package refharness

import (
	"fmt"
	"slices"

	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the replay receipt and its deltas.
var (
	FaultReplayDeltaMissing = declare(fault.Fault{Name: "replay-delta-missing",
		Doc:   "the replay receipt drops the delta of the last applied override",
		Fails: []string{"RPLY-DELTA-001"}})
	FaultReplayDeltaNoKey = declare(fault.Fault{Name: "replay-delta-no-key",
		Doc:   "replay receipt deltas carry no override_key",
		Fails: []string{"RPLY-DELTA-002"}})
	FaultReplayDeltaWrongHash = declare(fault.Fault{Name: "replay-delta-wrong-hash",
		Doc:   "a delta's after_sha256 is its before hash",
		Fails: []string{"RPLY-DELTA-003"}})
	FaultReplayDeltaNoReason = declare(fault.Fault{Name: "replay-delta-no-reason",
		Doc:   "replay receipt deltas carry no reason",
		Fails: []string{"RPLY-DELTA-004"}})
	FaultReplayReceiptLeaksSecret = declare(fault.Fault{Name: "replay-receipt-leaks-secret",
		Doc:   "a secret override's value is written into the replay receipt (its material's metadata)",
		Fails: []string{"RPLY-DELTA-005"}})
	FaultReplayMaterialsUnsorted = declare(fault.Fault{Name: "replay-materials-unsorted",
		Doc:   "the receipt lists override materials (and deltas, paths kept consistent) in reverse key order",
		Fails: []string{"RPLY-DET-002"}})
	FaultReplayReceiptLeaksReasoning = declare(fault.Fault{Name: "replay-receipt-leaks-reasoning",
		Doc:   "a replay receipt's metadata states the hidden reasoning of the source run's reason steps",
		Fails: []string{"RPLY-DELTA-006"}})
	// A replay receipt whose hash leaves its deltas out: a Receipts
	// requirement.
	FaultReplayDeltasUnhashed = declare(fault.Fault{Name: "replay-deltas-unhashed",
		Doc:   "a replay receipt is sealed with its deltas emptied, then served with them: its hash leaves them out",
		Fails: []string{"RCPT-DELTA-001"}})
)

// Replay receipts (docs/replay.md, "The receipt"; spec 002, "Receipt
// deltas"): a replay task's receipt is a replay receipt in the shape of the
// fixture fixtures/replay/receipts/replay-overrides.json (its generator's
// replayReceipt): subject {object: replay_segment}; replay_input.materials
// the source event log first, then one material per applied override,
// sorted by override key; one delta per applied override in the same order,
// whose path points at its material; metadata {source_task_id,
// replay_mode}. It holds hashes and artifact references, never a secret or
// an override's receipt_only value.

// replayDraft is what a replay receipt takes from the projection.
type replayDraft struct {
	run       *replayRun
	materials []any
	deltas    []any
	reasoning []string // the source's hidden reasoning, for FaultReplayReceiptLeaksReasoning only
}

// replayDraftLocked gathers replay task t's materials and deltas: the
// overrides its run applied (its replayed events that carry an overridden
// key; a replay that failed early applied fewer). Holds s.mu.
func (s *Server) replayDraftLocked(t *Task, run *replayRun) *replayDraft {
	applied := map[string]bool{}
	for _, pos := range s.st.byTask[t.ID] {
		e, ok := s.st.event(pos)
		if !ok || !e.Replayed {
			continue
		}
		if k, _ := e.Payload["override_key"].(string); k != "" && run.override(k) != nil {
			applied[k] = true
		}
	}
	var ovs []*replayOverride
	for i := range run.Overrides { // sorted by key
		if applied[run.Overrides[i].Key] {
			ovs = append(ovs, &run.Overrides[i])
		}
	}
	f := s.opts.Faults
	if f.Has(FaultReplayMaterialsUnsorted) {
		slices.Reverse(ovs) // the fault: reverse key order (paths still consistent)
	}
	d := &replayDraft{run: run, deltas: []any{}}
	d.materials = []any{map[string]any{"kind": "event_log", "id": "evlog_" + run.SourceTaskID, "uri": run.EventLog.URI,
		"sha256": run.EventLog.SHA256, "content_type": "application/x-ndjson"}}
	for _, ov := range ovs {
		meta := map[string]any{"override_key": ov.Key}
		if ov.secret() && f.Has(FaultReplayReceiptLeaksSecret) {
			meta["value"] = s.secretValueLocked(ov) // the fault: the secret in the receipt
		}
		mat := map[string]any{"kind": materialKind(ov.Kind), "id": ov.Key, "sha256": ov.After, "metadata": meta}
		if ov.ArtifactID != "" {
			mat["uri"] = "artifact://" + ov.ArtifactID
		}
		d.materials = append(d.materials, mat)
		delta := map[string]any{"delta_id": deltaID(ov.Key), "operation": "replace", "path": fmt.Sprintf("/replay_input/materials/%d", len(d.materials)-1),
			"override_key": ov.Key, "event_id": ov.EventID, "before_sha256": ov.Before, "after_sha256": ov.After, "reason": ov.Reason}
		if ov.ArtifactID != "" {
			delta["artifact_id"] = ov.ArtifactID
		}
		if f.Has(FaultReplayDeltaNoKey) {
			delete(delta, "override_key")
		}
		if f.Has(FaultReplayDeltaWrongHash) {
			delta["after_sha256"] = ov.Before
		}
		if f.Has(FaultReplayDeltaNoReason) {
			delete(delta, "reason")
		}
		d.deltas = append(d.deltas, delta)
	}
	if src, ok := s.st.tasks.get(run.SourceTaskID); ok && f.Has(FaultReplayReceiptLeaksReasoning) {
		d.reasoning = scenarioReasoning(src.Metadata)
	}
	if f.Has(FaultReplayDeltaMissing) && len(d.deltas) > 0 {
		d.deltas = d.deltas[:len(d.deltas)-1] // the fault: the last applied override leaves no delta
	}
	return d
}

// materialKind is the receipt material kind of an override kind. The
// schema has none for secrets or clock reads: a secret is an artifact
// (referenced, never inlined), a clock reading a host fact.
func materialKind(kind string) string {
	switch kind {
	case "llm_provider_response", "mcp_tool_return", "host_fact":
		return kind
	case "time", "tool_result":
		return "host_fact"
	}
	return "artifact"
}

// prepareReplayReceipt builds replay task t's receipt from its draft, as
// prepareReceipt does a task receipt's.
func (s *Server) prepareReplayReceipt(d *receiptDraft, t *Task) (*receiptPlan, error) {
	rd := d.replay
	docID := d.id
	if s.opts.Faults.Has(FaultReceiptIDMismatch) {
		docID = d.id + "_doc"
	}
	final := map[string]string{StatusCompleted: "SUCCEEDED", StatusFailed: "FAILED", StatusCanceled: "CANCELED"}[t.Status]
	started := t.CreatedAt
	if t.StartedAt != nil {
		started = *t.StartedAt
	}
	completed := d.now
	switch {
	case t.CompletedAt != nil:
		completed = *t.CompletedAt
	case t.CanceledAt != nil:
		completed = *t.CanceledAt
	}
	lifecycle := map[string]any{"created_at": t.CreatedAt, "started_at": started, "completed_at": completed, "final_state": final}
	if t.Failure != nil {
		lifecycle["failure"] = map[string]any{"code": t.Failure.Code, "message": t.Failure.Message}
	}
	replayInput := map[string]any{"determinism": "byte_deterministic", "materials": rd.materials}
	switch {
	case t.Failure != nil && t.Failure.Code == "harness_restarted":
		replayInput["determinism"] = "unavailable"
		replayInput["unavailable_reason"] = "the harness restarted while the replay ran; its in-memory progress is gone"
	case t.Status == StatusCanceled:
		replayInput["determinism"] = "best_effort" // where a cancel lands is timing
	}
	identifiers := map[string]any{"workspace_ref": t.WorkspaceID, "session_id": t.SessionID, "task_id": t.ID}
	if t.BranchID != nil {
		identifiers["branch_id"] = *t.BranchID
	}
	issuer := map[string]any{"id": issuerID, "kind": "harness"}
	if !s.opts.Variants.Has(VariantReceiptUnsigned) {
		issuer["public_key_id"] = s.rkey.id
	}
	doc := map[string]any{
		"schema":          receipt.Format,
		"receipt_id":      docID,
		"subject":         map[string]any{"object": "replay_segment", "id": t.ID},
		"issuer":          issuer,
		"issued_at":       d.now,
		"identifiers":     identifiers,
		"lifecycle":       lifecycle,
		"trust":           map[string]any{"start_tier": "act_auto", "end_tier": "act_auto"},
		"autonomy_budget": map[string]any{"consumed": map[string]any{"usd": 0, "input_tokens": 0, "output_tokens": 0, "tool_calls": 0}},
		"replay_input":    replayInput,
		"model_route": map[string]any{"chosen_model": map[string]any{"provider": "replay", "model": "recorded"},
			"alternatives_considered": []any{}, "route_policy_reason": "replay uses recorded and overridden responses only"},
		"cost":            map[string]any{"currency": "USD", "total": 0, "provider_breakdown": []any{}},
		"side_effects":    map[string]any{"fs_writes": []any{}, "network_egress": []any{}, "tool_calls": []any{}, "a2a_handoffs": []any{}},
		"final_artifacts": []any{},
		"deltas":          rd.deltas,
		"redactions":      []any{},
		"chain":           map[string]any{"previous_receipt_hash": prevMark}, // set by finishReceipt
		"metadata":        map[string]any{"source_task_id": rd.run.SourceTaskID, "replay_mode": rd.run.Mode},
	}
	if len(rd.reasoning) > 0 {
		doc["metadata"].(map[string]any)["source_reasoning"] = rd.reasoning // the fault: the source's hidden reasoning
	}
	signer, signers, err := s.receiptSigners()
	if err != nil {
		return nil, err
	}
	var unhashed []any
	if s.opts.Faults.Has(FaultReplayDeltasUnhashed) && len(rd.deltas) > 0 {
		unhashed, doc["deltas"] = rd.deltas, []any{}
	}
	return &receiptPlan{id: d.id, doc: doc, signer: signer, signers: signers, pre: preseal(doc, signers), unhashed: unhashed}, nil
}
