package refharness

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/gowebpki/jcs"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: receipts, their content, sealing, signing and
// references. What a fault may fail besides its own requirements observes
// the same broken receipt from another side: a redacted receipt is checked
// for schema and hash again (RCPT-REDACT-006), and every receipt the
// verifier finds anything wrong with also fails the umbrella RCPT-FIX-001
// (the target's receipts pass the offline verification).
var (
	// A receipt that does not verify is what RCPT-FIX-001 is about.
	FaultReceiptHashCorrupt = declare(fault.Fault{Name: "receipt-hash-corrupt",
		Doc:       "a receipt is changed after sealing: its stored hash no longer matches",
		Fails:     []string{"RCPT-FIX-001", "RCPT-HASH-001"},
		Tolerated: []string{"RCPT-REDACT-006"},
		Why:       "a redacted receipt is checked for hash again (RCPT-REDACT-006)"})
	FaultReceiptChainBroken = declare(fault.Fault{Name: "receipt-chain-broken",
		Doc:       "previous_receipt_hash names no receipt (the hash of the previous hash)",
		Fails:     []string{"RCPT-CHAIN-001"},
		Tolerated: []string{"RCPT-VERIFY-002"},
		Why:       "the target's verify API, which sees the chain the suite cannot, rightly reports the broken link, which the suite then calls a disagreement (RCPT-VERIFY-002)"})
	// A race: a task's worker reads the chain head when it takes the task
	// up and links the task's receipt to it when the task completes, not
	// to the head at that moment. Tasks run one after another chain
	// right; the receipts of tasks that run at the same time all link to
	// one previous receipt.
	FaultReceiptChainHeadStale = declare(fault.Fault{Name: "receipt-chain-head-stale",
		Doc:   "a task's receipt links to the chain head its worker read when it took the task up: receipts of tasks that run and complete at the same time fork the chain",
		Fails: []string{"RCPT-CHAIN-003"}, Race: true})
	FaultReceiptWrongKey = declare(fault.Fault{Name: "receipt-wrong-key",
		Doc:       "receipts are signed with a key the directory does not publish",
		Fails:     []string{"RCPT-SIGN-001"},
		Tolerated: []string{"RCPT-FIX-001"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"})
	FaultReceiptLeaksSecret = declare(fault.Fault{Name: "receipt-leaks-secret",
		Doc:       "a use_secret step's secret is written into the receipt",
		Fails:     []string{"RCPT-REDACT-001"},
		Tolerated: []string{"RCPT-FIX-001"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"})
	FaultReceiptRefDropped = declare(fault.Fault{Name: "receipt-ref-dropped",
		Doc:   "a terminal Task's receipt_id stays null",
		Fails: []string{"RCPT-REF-001"}})
	FaultReceiptUnknownField = declare(fault.Fault{Name: "receipt-unknown-field",
		Doc:       "receipts carry a top-level member the closed schema forbids",
		Fails:     []string{"RCPT-SHAPE-001"},
		Tolerated: []string{"RCPT-FIX-001", "RCPT-REDACT-006"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001; a redacted receipt is checked for schema again (RCPT-REDACT-006)"})
	FaultRedactionWithoutProof = declare(fault.Fault{Name: "redaction-without-proof",
		Doc:   "redactions entries lack proof_hash",
		Warns: []string{"RCPT-REDACT-005"}})
	FaultReceiptEventNoID = declare(fault.Fault{Name: "receipt-event-no-id",
		Doc:   "receipt.issued events do not say which receipt",
		Fails: []string{"RCPT-EVENT-002"}})
	FaultReceiptWrongState = declare(fault.Fault{Name: "receipt-wrong-final-state",
		Doc:          "every receipt says final_state SUCCEEDED",
		Fails:        []string{"RCPT-SHAPE-005"},
		SlowHookless: true})
	FaultReceiptWrongIDs = declare(fault.Fault{Name: "receipt-wrong-identifiers",
		Doc:   "identifiers.workspace_ref names another workspace",
		Fails: []string{"RCPT-SHAPE-004"}})
	FaultReceiptWrongSubject = declare(fault.Fault{Name: "receipt-wrong-subject",
		Doc:   "subject names the task's session as if it were the task",
		Fails: []string{"RCPT-SHAPE-003"}})
	// The schema states the hash pattern too (RCPT-SHAPE-001).
	FaultReceiptUpperHash = declare(fault.Fault{Name: "receipt-hash-uppercase",
		Doc:       "receipt hashes are written in upper-case hex (and signed so)",
		Fails:     []string{"RCPT-HASH-002", "RCPT-SHAPE-001"},
		Tolerated: []string{"RCPT-FIX-001", "RCPT-REDACT-006"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001; a redacted receipt is checked for schema and hash again (RCPT-REDACT-006)"})
	FaultEventLeaksSecret = declare(fault.Fault{Name: "event-leaks-secret",
		Doc:   "a use_secret step's secret appears in its tool.requested event",
		Fails: []string{"RCPT-REDACT-007"}})
	FaultReceiptLeaksAPIKey = declare(fault.Fault{Name: "receipt-leaks-api-key",
		Doc:       "receipts name the API key of the task's creator in metadata",
		Fails:     []string{"RCPT-REDACT-002"},
		Tolerated: []string{"RCPT-FIX-001", "RCPT-REDACT-003"},
		Why:       "the self-check key happens to have the sk- shape the secret scan knows (RCPT-REDACT-003); every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"})
	FaultReceiptLeaksAPIKeyEncoded = declare(fault.Fault{Name: "receipt-leaks-api-key-base64",
		Doc:   "receipts carry the API key of the task's creator base64-encoded in metadata (no credential-named member, no credential shape)",
		Fails: []string{"RCPT-REDACT-002"}})
	FaultReceiptIDMismatch = declare(fault.Fault{Name: "receipt-id-mismatch",
		Doc:       "a receipt document's receipt_id is not the id it is served and referenced by",
		Fails:     []string{"RCPT-SHAPE-006"},
		Tolerated: []string{"RCPT-RES-001", "RCPT-VERIFY-001", "RCPT-VERIFY-002"},
		Why:       "a receipt whose own id is not the one it is served by cannot be read (RCPT-RES-001) or verified (RCPT-VERIFY-001, -002) by that id either"})
	FaultReceiptLeaksBearer = declare(fault.Fault{Name: "receipt-leaks-bearer",
		Doc:       "receipts keep the agent's upstream bearer token in a debug note",
		Fails:     []string{"RCPT-REDACT-003"},
		Tolerated: []string{"RCPT-FIX-001"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"})
	FaultReceiptCostInconsistent = declare(fault.Fault{Name: "receipt-cost-inconsistent",
		Doc:   "cost.provider_breakdown adds up to more than cost.total",
		Fails: []string{"RCPT-SHAPE-004"}})
	FaultReceiptDropsArtifacts = declare(fault.Fault{Name: "receipt-drops-final-artifacts",
		Doc:          "final_artifacts is empty although the task produced artifacts",
		Fails:        []string{"RCPT-REF-004"},
		SlowHookless: true})
	FaultReceiptLeaksReasoning = declare(fault.Fault{Name: "receipt-leaks-reasoning",
		Doc:   "a task's receipt states the hidden reasoning of its reason steps as its model route's reason",
		Fails: []string{"RCPT-REDACT-004"}})
	// Neither documented signing input: accepting either is not accepting
	// anything.
	FaultReceiptSignsDigest = declare(fault.Fault{Name: "receipt-signs-raw-digest",
		Doc:       "signatures cover the raw 32-byte digest, neither documented signing input",
		Fails:     []string{"RCPT-SIGN-001"},
		Tolerated: []string{"RCPT-FIX-001"},
		Why:       "every receipt the verifier finds anything wrong with also fails the umbrella RCPT-FIX-001"})
)

// Variants of this area: the two legal signing choices besides the plain one.
var (
	VariantReceiptSignCanonical = declareVariant(fault.Variant{Name: "receipt-sign-canonical",
		Doc: "receipts are signed over their RFC 8785 canonical bytes, not the hash string"})
	VariantReceiptUnsigned = declareVariant(fault.Variant{Name: "receipt-unsigned",
		Doc: "receipts carry no signatures; no key directory is advertised and the directory is empty"})
)

// Receipts: every terminal task gets one receipt-2026-04-25 document with
// subject {object: task}, sealed (RFC 8785 + SHA-256) and signed with the
// harness's ed25519 key over the hash string (over the canonical bytes
// under VariantReceiptSignCanonical, unsigned under VariantReceiptUnsigned),
// chained to the previous receipt the harness issued.
// The receipt is written in the same commit as the terminal transition, so
// a task is never terminal without its receipt, and the Task, its Outcome,
// its artifacts and the terminal event all carry its id. docs/receipts.md
// ("Reference Harness") describes what each section summarises.

// issuerID names the harness in receipts.
const issuerID = "harness_conform_reference"

// storedReceipt is one issued receipt as the journal keeps it: the exact
// sealed bytes (a string, so they survive the journal byte for byte).
type storedReceipt struct {
	ID     string `json:"id"`
	TaskID string `json:"task_id"`
	Hash   string `json:"hash"`
	Raw    string `json:"raw"`
}

// publishedKey is a public key of the key directory. Keys are journaled, so
// a retired key stays listed for as long as receipts signed with it exist.
type publishedKey struct {
	ID     string `json:"key_id"`
	Public []byte `json:"public_key"`
}

// receiptState is the receipts part of the projection. Its zero value is
// empty and usable.
type receiptState struct {
	byID   map[string]*storedReceipt
	order  []*storedReceipt // issue order: the chain
	byTask map[string][]string
	prev   map[string]string // receipt id -> the hash it links to ("" for a chain start)
	keys   []publishedKey
}

func (rs *receiptState) apply(c *commit) {
	if rs.byID == nil {
		rs.byID, rs.byTask, rs.prev = map[string]*storedReceipt{}, map[string][]string{}, map[string]string{}
	}
	for _, k := range c.ReceiptKeys {
		if _, ok := rs.key(k.ID); !ok {
			rs.keys = append(rs.keys, k)
		}
	}
	for _, r := range c.Receipts {
		if _, dup := rs.byID[r.ID]; dup {
			continue
		}
		rs.prev[r.ID] = rs.head()
		rs.byID[r.ID] = r
		rs.order = append(rs.order, r)
		rs.byTask[r.TaskID] = append(rs.byTask[r.TaskID], r.ID)
	}
}

func (rs *receiptState) key(id string) (publishedKey, bool) {
	for _, k := range rs.keys {
		if k.ID == id {
			return k, true
		}
	}
	return publishedKey{}, false
}

// head is the hash the next receipt links to: the last one issued, or "".
func (rs *receiptState) head() string {
	if len(rs.order) == 0 {
		return ""
	}
	return rs.order[len(rs.order)-1].Hash
}

func (rs *receiptState) get(id string) (*storedReceipt, bool) {
	r, ok := rs.byID[id]
	return r, ok
}

// keySet is the key directory as the verifier reads it.
func (rs *receiptState) keySet() *receipt.KeySet {
	ks := &receipt.KeySet{}
	for _, k := range rs.keys {
		ks.Add(receipt.PublicKey{ID: k.ID, Algorithm: receipt.Ed25519, Key: k.Public})
	}
	return ks
}

// wantPrevious is what the receipt's previous_receipt_hash must be, in the
// verifier's Options.Previous form ("null" for the chain start).
func (rs *receiptState) wantPrevious(id string) string {
	if p := rs.prev[id]; p != "" {
		return p
	}
	return "null"
}

func sha256Proof(b []byte) string {
	h := sha256.Sum256(b)
	return receipt.HashPrefix + hex.EncodeToString(h[:])
}

// jsonProof is the proof hash of a JSON value: SHA-256 of its RFC 8785 form.
func jsonProof(v any) string {
	b, err := json.Marshal(v)
	if err == nil {
		if c, err := jcs.Transform(b); err == nil {
			b = c
		}
	}
	return sha256Proof(b)
}

// taskRun is what a task did, gathered from its events and resources.
type taskRun struct {
	inputTokens, outputTokens int
	materials                 []any
	tools                     []any
	approvals                 []any
	redactions                []any
	artifacts                 []*Artifact
}

// gatherRunLocked reads the task's retained events in order. Holds s.mu.
func (s *Server) gatherRunLocked(t *Task) *taskRun {
	run := &taskRun{inputTokens: len(strings.Fields(inputText(t.Input)))}
	run.materials = append(run.materials, map[string]any{"id": "task_input:" + t.ID, "kind": "host_fact",
		"content_type": "application/json", "uri": "/v1/tasks/" + t.ID + "#input", "sha256": canonicalProof(t.Input)})
	var secrets []string
	secretsRead := false
	calls := map[string]map[string]any{}
	for _, pos := range s.st.byTask[t.ID] {
		e, ok := s.st.event(pos)
		if !ok {
			continue
		}
		switch e.Event {
		case "agent.message":
			text, _ := e.Payload["text"].(string)
			mid, _ := e.Payload["message_id"].(string)
			run.outputTokens += len(strings.Fields(text))
			run.materials = append(run.materials, map[string]any{"id": "llm:" + mid, "kind": "llm_provider_response",
				"content_type": "text/plain", "uri": "/v1/messages/" + mid, "sha256": sha256Proof([]byte(text))})
		case "tool.requested":
			id, _ := e.Payload["tool_call_id"].(string)
			name, _ := e.Payload["name"].(string)
			call := map[string]any{"tool": name, "call_id": id, "status": "canceled", "input_hash": canonicalProof(e.Payload["input"])}
			if _, used := e.Payload["credential"]; used {
				if !secretsRead { // parsed only for tasks that used a secret
					secrets, secretsRead = scenarioSecrets(t.Metadata), true
				}
				if len(secrets) > 0 {
					run.redactSecret(call, secrets[0], s.opts.Faults)
					secrets = secrets[1:]
				}
			}
			calls[id] = call
			run.tools = append(run.tools, call)
		case "tool.completed":
			if call := calls[str(e.Payload["tool_call_id"])]; call != nil {
				call["status"] = "succeeded"
				call["output_hash"] = canonicalProof(e.Payload["output"])
				run.materials = append(run.materials, map[string]any{"id": "tool:" + str(call["call_id"]), "kind": "mcp_tool_return",
					"content_type": "application/json", "uri": "/v1/events/" + e.ID + "#payload.output", "sha256": call["output_hash"]})
			}
		case "tool.denied", "tool.approved":
			decision := "approved"
			if e.Event == "tool.denied" {
				decision = "denied"
				if call := calls[str(e.Payload["tool_call_id"])]; call != nil {
					call["status"] = "canceled"
				}
			}
			run.approvals = append(run.approvals, map[string]any{"approval_id": str(e.Payload["tool_call_id"]), "actor": t.CreatedBy,
				"action": "tool:" + str(e.Payload["name"]), "decision": decision, "decided_at": e.CreatedAt})
		case "artifact.created":
			if a, ok := s.st.artifacts.get(e.Resource.ID); ok {
				run.artifacts = append(run.artifacts, a)
			}
		}
	}
	return run
}

// redactSecret records a secret the tool call used: a marker where the
// credential went, and a redactions entry with its proof hash.
func (run *taskRun) redactSecret(call map[string]any, secret string, faults Faults) {
	value := "[REDACTED]"
	if faults.Has(FaultReceiptLeaksSecret) {
		value = secret
	}
	call["metadata"] = map[string]any{"api_key": value}
	red := map[string]any{"field": fmt.Sprintf("/side_effects/tool_calls/%d/metadata/api_key", len(run.tools)),
		"reason": "secret credential used by the tool call; only its proof hash is kept"}
	if !faults.Has(FaultRedactionWithoutProof) {
		red["proof_hash"] = sha256Proof([]byte(secret))
	}
	run.redactions = append(run.redactions, red)
}

func str(v any) string { s, _ := v.(string); return s }

// scenarioSecrets lists the secrets of the task's use_secret steps, in order.
func scenarioSecrets(meta map[string]any) []string {
	return scenarioSteps(meta, scenario.OpUseSecret, func(st scenario.Step) string { return st.Secret })
}

// scenarioReasoning lists the hidden reasoning of the task's reason
// steps, in order: what the agent thought, which nothing stores or shows
// (privacy.go) but the faults that leak it.
func scenarioReasoning(meta map[string]any) []string {
	return scenarioSteps(meta, scenario.OpReason, func(st scenario.Step) string { return st.Text })
}

// scenarioSteps lists field of the task's scenario steps of kind op, in
// order; none when the task has no valid scenario.
func scenarioSteps(meta map[string]any, op scenario.Op, field func(scenario.Step) string) []string {
	v, ok := meta[scenario.Key]
	if !ok {
		return nil
	}
	sc, err := scenario.Parse(v)
	if err != nil {
		return nil
	}
	var out []string
	for _, st := range sc.Steps {
		if st.Op == op {
			out = append(out, field(st))
		}
	}
	return out
}

// bearerCanary is the upstream token FaultReceiptLeaksBearer leaks: shaped
// like a credential, so only a shape-based scan can find it.
const bearerCanary = "conformUpstreamToken0123456789abcdef"

// Pricing of the reference agent, in micro-USD per token: real arithmetic
// over what the task did, so cost and budget are checkable numbers.
const (
	microUSDPerInputToken  = 1
	microUSDPerOutputToken = 2
)

// issueReceiptLocked builds, seals and signs the receipt of terminal task t
// (already in cm, as is its outcome o and terminal event ev) and adds it,
// its receipt.issued event, and the artifacts now carrying its id to cm.
// Holds s.mu. A worker finishing its own task takes the same steps but
// prepares the receipt without the lock (finishTask in tasks.go).
func (s *Server) issueReceiptLocked(cm *commit, t *Task, o *Outcome, ev *Event) error {
	head := s.st.rc.head()
	if n := len(cm.Receipts); n > 0 {
		head = cm.Receipts[n-1].Hash // several tasks end in one commit at recovery
	}
	p, err := s.prepareReceipt(s.draftReceiptLocked(t), t, o)
	if err != nil {
		return err
	}
	r, err := s.finishReceipt(p, head)
	if err != nil {
		return err
	}
	s.attachReceiptLocked(cm, t, o, ev, r)
	return nil
}

// receiptDraft is what a receipt takes from the projection, read under s.mu.
type receiptDraft struct {
	id     string
	run    *taskRun
	now    string       // issued_at
	replay *replayDraft // a replay task's: its receipt is a replay receipt (replay_receipt.go)
}

// receiptPlan is a receipt built and, but for its link to the previous
// receipt, sealed: everything that does not depend on the chain head. It
// is made without s.mu.
type receiptPlan struct {
	id        string
	artifacts []*Artifact // the task's artifacts, which will carry its id
	doc       map[string]any
	signer    receipt.Signer
	signers   []receipt.Signer
	pre       *presealed // nil: seal doc whole in finishReceipt
	// unhashed are deltas put into the receipt after sealing (the fault
	// replay-deltas-unhashed); nil otherwise.
	unhashed []any
}

// sealedReceipt is a sealed receipt ready to go into its task's commit.
type sealedReceipt struct {
	id, hash, raw string
	artifacts     []*Artifact
}

// draftReceiptLocked mints the receipt id and gathers what terminal task t
// did. Holds s.mu.
func (s *Server) draftReceiptLocked(t *Task) *receiptDraft {
	id := s.freshID("receipt")
	if r := s.st.rp.runs[t.ID]; r != nil {
		return &receiptDraft{id: id, now: s.now(), replay: s.replayDraftLocked(t, r)}
	}
	run := s.gatherRunLocked(t)
	return &receiptDraft{id: id, run: run, now: s.now()}
}

// prepareReceipt builds the receipt of terminal task t with outcome o from
// its draft and does all of its sealing that does not depend on the chain
// head. It reads only d, t, o and the server's fixed configuration, so it
// needs no lock.
func (s *Server) prepareReceipt(d *receiptDraft, t *Task, o *Outcome) (*receiptPlan, error) {
	if d.replay != nil {
		return s.prepareReplayReceipt(d, t)
	}
	id, run, now := d.id, d.run, d.now
	docID := id
	if s.opts.Faults.Has(FaultReceiptIDMismatch) {
		docID = id + "_doc"
	}
	final := map[string]string{StatusCompleted: "SUCCEEDED", StatusFailed: "FAILED", StatusCanceled: "CANCELED"}[t.Status]
	if s.opts.Faults.Has(FaultReceiptWrongState) {
		final = "SUCCEEDED"
	}
	started := t.CreatedAt
	if t.StartedAt != nil {
		started = *t.StartedAt
	}
	completed := now
	switch {
	case t.CompletedAt != nil:
		completed = *t.CompletedAt
	case t.CanceledAt != nil:
		completed = *t.CanceledAt
	}
	wall := int64(0)
	if a, err := time.Parse(time.RFC3339Nano, started); err == nil {
		if b, err := time.Parse(time.RFC3339Nano, completed); err == nil && b.After(a) {
			wall = b.Sub(a).Milliseconds()
		}
	}
	micro := run.inputTokens*microUSDPerInputToken + run.outputTokens*microUSDPerOutputToken
	usd := float64(micro) / 1e6
	model := "echo-agent"
	if _, ok := t.Metadata[scenario.Key]; ok {
		model = "scenario-agent"
	}

	var failure any
	if t.Failure != nil {
		failure = map[string]any{"code": t.Failure.Code, "message": t.Failure.Message}
	}
	identifiers := map[string]any{"workspace_ref": t.WorkspaceID, "session_id": t.SessionID, "task_id": t.ID}
	if s.opts.Faults.Has(FaultReceiptWrongIDs) {
		identifiers["workspace_ref"] = "workspace_elsewhere"
	}
	subject := map[string]any{"object": "task", "id": t.ID}
	if s.opts.Faults.Has(FaultReceiptWrongSubject) {
		subject["id"] = t.SessionID
	}
	if t.PersonaID != nil {
		identifiers["persona_ref"] = *t.PersonaID
	}
	if t.BranchID != nil {
		identifiers["branch_id"] = *t.BranchID
	}
	determinism := map[string]any{"determinism": "byte_deterministic", "materials": run.materials}
	switch {
	case t.Failure != nil && t.Failure.Code == "harness_restarted":
		determinism = map[string]any{"determinism": "unavailable", "materials": run.materials,
			"unavailable_reason": "the harness restarted while the task ran; its in-memory progress is gone"}
	case t.Status == StatusCanceled:
		// Where a cancel lands depends on wall-clock timing.
		determinism["determinism"] = "best_effort"
	}
	fsWrites, finals := []any{}, []any{}
	for _, a := range run.artifacts {
		sum := ""
		if a.SHA256 != nil {
			sum = receipt.HashPrefix + *a.SHA256
		}
		path := "artifacts/" + a.ID
		if n, ok := a.Metadata["name"].(string); ok && n != "" {
			path = "artifacts/" + a.ID + "/" + n
		}
		fsWrites = append(fsWrites, map[string]any{"path": path, "operation": "create", "before_sha256": nil, "after_sha256": nullable(sum)})
		fa := map[string]any{"artifact_id": a.ID, "kind": a.Kind, "uri": "/v1/artifacts/" + a.ID + "/content"}
		mat := map[string]any{"id": "artifact:" + a.ID, "kind": "artifact", "content_type": a.MimeType,
			"uri": "/v1/artifacts/" + a.ID + "/content", "metadata": map[string]any{"size_bytes": a.SizeBytes}}
		if sum != "" {
			fa["sha256"], mat["sha256"] = sum, sum
		}
		finals = append(finals, fa)
		run.materials = append(run.materials, mat)
	}
	if run.tools == nil {
		run.tools = []any{}
	}
	breakdown := usd
	if s.opts.Faults.Has(FaultReceiptCostInconsistent) {
		breakdown = 2*usd + 0.01 // a part larger than the whole
	}
	if s.opts.Faults.Has(FaultReceiptDropsArtifacts) {
		finals = []any{}
	}
	issuer := map[string]any{"id": issuerID, "kind": "harness", "name": "conform reference harness", "version": ProtocolVersion}
	if !s.opts.Variants.Has(VariantReceiptUnsigned) {
		issuer["public_key_id"] = s.rkey.id
	}
	consumed := map[string]any{"input_tokens": run.inputTokens, "output_tokens": run.outputTokens,
		"tool_calls": len(run.tools), "usd": usd, "wall_time_ms": wall}
	doc := map[string]any{
		"schema":      receipt.Format,
		"receipt_id":  docID,
		"subject":     subject,
		"issuer":      issuer,
		"issued_at":   now,
		"identifiers": identifiers,
		"lifecycle": map[string]any{"created_at": t.CreatedAt, "started_at": started, "completed_at": completed,
			"final_state": final, "failure": failure},
		"trust":           map[string]any{"start_tier": "act_auto", "end_tier": "act_auto", "policy_ref": "conform.scenarios/" + scenario.Version},
		"autonomy_budget": map[string]any{"consumed": consumed},
		"replay_input":    determinism,
		"model_route": map[string]any{
			"chosen_model":            map[string]any{"provider": "conform", "model": model, "version": scenario.Version},
			"alternatives_considered": []any{},
			"route_policy_reason":     "the reference harness runs one deterministic agent",
		},
		"cost": map[string]any{"currency": "USD", "total": usd, "provider_breakdown": []any{
			map[string]any{"provider": "conform", "model": model, "amount": breakdown, "input_tokens": run.inputTokens, "output_tokens": run.outputTokens},
		}},
		"side_effects":    map[string]any{"fs_writes": fsWrites, "network_egress": []any{}, "tool_calls": run.tools, "a2a_handoffs": []any{}},
		"final_artifacts": finals,
		"chain":           map[string]any{"previous_receipt_hash": prevMark}, // set by finishReceipt
		"metadata":        map[string]any{"outcome_id": o.ID, "task_status": t.Status},
	}
	if run.approvals != nil {
		doc["approvals"] = run.approvals
	}
	if run.redactions != nil {
		doc["redactions"] = run.redactions
	}
	if s.opts.Faults.Has(FaultReceiptUnknownField) {
		doc["x_conform_note"] = "a top-level member the closed receipt schema does not allow"
	}
	if s.opts.Faults.Has(FaultReceiptLeaksBearer) {
		doc["metadata"].(map[string]any)["debug"] = "upstream call sent Authorization: Bearer " + bearerCanary
	}
	if thought := scenarioReasoning(t.Metadata); len(thought) > 0 && s.opts.Faults.Has(FaultReceiptLeaksReasoning) {
		doc["model_route"].(map[string]any)["route_policy_reason"] = "the agent reasoned: " + strings.Join(thought, " ")
	}
	if s.opts.Faults.Has(FaultReceiptLeaksAPIKey) || s.opts.Faults.Has(FaultReceiptLeaksAPIKeyEncoded) {
		for key, actor := range s.opts.APIKeys {
			if actor != t.CreatedBy {
				continue
			}
			if s.opts.Faults.Has(FaultReceiptLeaksAPIKey) {
				doc["metadata"].(map[string]any)["note"] = "issued for the client holding " + key
			} else {
				// The same leak, spelled so that neither the member name nor
				// the value's shape says "credential".
				doc["metadata"].(map[string]any)["client_ref"] = base64.StdEncoding.EncodeToString([]byte(key))
			}
			break
		}
	}
	signer, signers, err := s.receiptSigners()
	if err != nil {
		return nil, err
	}
	return &receiptPlan{id: id, artifacts: run.artifacts, doc: doc, signer: signer, signers: signers,
		pre: preseal(doc, signers)}, nil
}

// receiptSigners is how a receipt is signed: the harness's key over the
// hash string (over the canonical bytes under VariantReceiptSignCanonical,
// another key under FaultReceiptWrongKey), and the signers that sign it
// (none under VariantReceiptUnsigned).
func (s *Server) receiptSigners() (receipt.Signer, []receipt.Signer, error) {
	signer := receipt.Signer{KeyID: s.rkey.id, Key: s.rkey.priv, SignedAt: s.clock()}
	if s.opts.Variants.Has(VariantReceiptSignCanonical) {
		signer.Profile = receipt.ProfileCanonical
	}
	if s.opts.Faults.Has(FaultReceiptWrongKey) {
		_, other, err := ed25519.GenerateKey(nil)
		if err != nil {
			return signer, nil, err
		}
		signer.Key = other
	}
	var signers []receipt.Signer
	if !s.opts.Variants.Has(VariantReceiptUnsigned) {
		signers = append(signers, signer)
	}
	return signer, signers, nil
}

// finishReceipt links p to head, the hash of the receipt issued before it
// ("" for none), and seals and signs it. Called with s.mu held, so that the
// head is still the chain's head when the receipt is committed; with p
// presealed that is one SHA-256 and one signature.
func (s *Server) finishReceipt(p *receiptPlan, head string) (*sealedReceipt, error) {
	prev := any(nil)
	if h := head; h != "" {
		prev = h
		if s.opts.Faults.Has(FaultReceiptChainBroken) {
			prev = sha256Proof([]byte(h)) // the hash of a hash: no receipt has it
		}
	}
	var raw, hash string
	ok := false
	if p.pre != nil {
		raw, hash, ok = p.pre.seal(prev)
	}
	if !ok {
		p.doc["chain"].(map[string]any)["previous_receipt_hash"] = prev
		sealed, h, err := sealDoc(p.doc, p.signers)
		if err != nil {
			return nil, err
		}
		raw, hash = string(sealed), h
	}
	if p.unhashed != nil {
		var err error
		if raw, err = withDeltas([]byte(raw), p.unhashed); err != nil {
			return nil, err
		}
	}
	if f := s.opts.Faults; f.Has(FaultReceiptUpperHash) || f.Has(FaultReceiptSignsDigest) || f.Has(FaultReceiptHashCorrupt) {
		var err error
		if raw, hash, err = s.receiptFaults([]byte(raw), hash, p.signer); err != nil {
			return nil, err
		}
	}
	return &sealedReceipt{id: p.id, hash: hash, raw: raw, artifacts: p.artifacts}, nil
}

// withDeltas puts deltas into a sealed receipt, leaving its hash and
// signatures as they were (the fault replay-deltas-unhashed).
func withDeltas(sealed []byte, deltas []any) (string, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(sealed))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", err
	}
	m["deltas"] = deltas
	out, err := json.Marshal(m)
	return string(out), err
}

// receiptFaults applies the faults that alter a receipt after sealing.
func (s *Server) receiptFaults(sealed []byte, hash string, signer receipt.Signer) (string, string, error) {
	var err error
	if s.opts.Faults.Has(FaultReceiptUpperHash) {
		if sealed, hash, err = upperHash(sealed, hash, signer); err != nil {
			return "", "", err
		}
	}
	if s.opts.Faults.Has(FaultReceiptSignsDigest) {
		digest, err := hex.DecodeString(strings.TrimPrefix(hash, receipt.HashPrefix))
		if err != nil {
			return "", "", err
		}
		if sealed, err = resign(sealed, digest, signer); err != nil {
			return "", "", err
		}
	}
	if s.opts.Faults.Has(FaultReceiptHashCorrupt) {
		// Changed after sealing: the stored hash and signature cover the
		// original bytes, the served bytes are different.
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(sealed)))
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return "", "", err
		}
		m["metadata"].(map[string]any)["task_status"] = "edited after sealing"
		if sealed, err = json.Marshal(m); err != nil {
			return "", "", err
		}
	}
	return string(sealed), hash, nil
}

// attachReceiptLocked adds sealed receipt r of task t to cm: the receipt,
// its id on t, its outcome o and terminal event ev, the task's artifacts now
// carrying it, and its receipt.issued event. Holds s.mu.
func (s *Server) attachReceiptLocked(cm *commit, t *Task, o *Outcome, ev *Event, r *sealedReceipt) {
	id, hash := r.id, r.hash

	if !s.opts.Faults.Has(FaultReceiptRefDropped) {
		t.ReceiptID = ptr(id)
	}
	o.ReceiptID = ptr(id)
	ev.ReceiptID = ptr(id)
	// The task's artifacts now name the receipt that vouches for them.
	copies := map[string]*Artifact{}
	for _, a := range r.artifacts {
		cp := *a
		cp.ReceiptID = ptr(id)
		copies[a.ID] = &cp
		cm.Puts = append(cm.Puts, put{Artifact: &cp})
	}
	for i, a := range o.Artifacts {
		if cp, ok := copies[a.ID]; ok {
			o.Artifacts[i] = cp
		}
	}
	cm.Receipts = append(cm.Receipts, &storedReceipt{ID: id, TaskID: t.ID, Hash: hash, Raw: r.raw})
	// Receipt events are about the receipt: they belong to the session's
	// stream, not the task's, whose events stay the task's own history.
	issued := s.newEvent("receipt.issued", Pointer{"receipt", id},
		map[string]any{"receipt_id": id, "receipt_hash": hash, "subject": map[string]any{"object": "task", "id": t.ID}},
		t.WorkspaceID, t.SessionID, "", agentActor)
	if !s.opts.Faults.Has(FaultReceiptEventNoID) {
		issued.ReceiptID = ptr(id)
	} else {
		delete(issued.Payload, "receipt_id")
	}
	cm.Events = append(cm.Events, issued)
}

// inputText renders a task input as the text the agent reads: its text
// parts joined by spaces, or input.text, or the input's JSON.
func inputText(input any) string {
	m, _ := input.(map[string]any)
	if parts, ok := m["parts"].([]any); ok {
		var texts []string
		for _, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				if txt, ok := pm["text"].(string); ok {
					texts = append(texts, txt)
				}
			}
		}
		return strings.Join(texts, " ")
	}
	if txt, ok := m["text"].(string); ok {
		return txt
	}
	b, _ := json.Marshal(input)
	return string(b)
}

// useSecret runs a use_secret step: a tool call authenticated with the
// step's secret. The secret is a canary: events show only a redaction
// marker, and the receipt keeps its proof hash (gatherRunLocked).
func (s *Server) useSecret(ctx context.Context, id string, st scenario.Step) bool {
	tool := st.Tool
	if tool == "" {
		tool = "conform.authenticated_call"
	}
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	callID := s.freshID("toolcall")
	credential := "[REDACTED]"
	if s.opts.Faults.Has(FaultEventLeaksSecret) {
		credential = st.Secret
	}
	ev := func(kind string, p map[string]any) *Event {
		p["tool_call_id"], p["name"] = callID, tool
		return s.newEvent(kind, Pointer{"task", id}, p, t.WorkspaceID, t.SessionID, id, agentActor)
	}
	cm := &commit{Events: []*Event{
		ev("tool.requested", map[string]any{"input": map[string]any{"api_key": "[REDACTED]"}, "credential": credential}),
		ev("tool.completed", map[string]any{"output": map[string]any{"ok": true}, "status": "ok"}),
	}}
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}

// upperHash is FaultReceiptUpperHash: the stored hash in upper-case hex,
// signed as written (a canonical-bytes signature does not cover the hash
// and stays), so only its spelling is wrong.
func upperHash(sealed []byte, hash string, signer receipt.Signer) ([]byte, string, error) {
	m, err := decodeSealed(sealed)
	if err != nil {
		return nil, "", err
	}
	upper := receipt.HashPrefix + strings.ToUpper(strings.TrimPrefix(hash, receipt.HashPrefix))
	m["chain"].(map[string]any)["receipt_hash"] = upper
	if signer.Profile != receipt.ProfileCanonical {
		sigs, _ := m["signatures"].([]any)
		for _, sig := range sigs {
			sig.(map[string]any)["signature"] = receipt.SignatureEncodingPrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(signer.Key, receipt.SignedBytes(upper)))
		}
	}
	b, err := json.Marshal(m)
	return b, upper, err
}

// resign replaces every signature of a sealed receipt with one over msg:
// FaultReceiptSignsDigest signs the raw digest, bytes neither signing
// profile covers.
func resign(sealed, msg []byte, signer receipt.Signer) ([]byte, error) {
	m, err := decodeSealed(sealed)
	if err != nil {
		return nil, err
	}
	sigs, _ := m["signatures"].([]any)
	for _, sig := range sigs {
		sig.(map[string]any)["signature"] = receipt.SignatureEncodingPrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(signer.Key, msg))
	}
	return json.Marshal(m)
}

func decodeSealed(sealed []byte) (map[string]any, error) {
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(string(sealed)))
	dec.UseNumber()
	err := dec.Decode(&m)
	return m, err
}

// sealedHash reads the hash Seal stored, without canonicalizing again.
func sealedHash(sealed []byte) (string, error) {
	var r struct {
		Chain struct {
			ReceiptHash string `json:"receipt_hash"`
		} `json:"chain"`
	}
	if err := json.Unmarshal(sealed, &r); err != nil || r.Chain.ReceiptHash == "" {
		return "", fmt.Errorf("sealed receipt has no chain.receipt_hash (%v)", err)
	}
	return r.Chain.ReceiptHash, nil
}
