package refharness

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/redact"
)

// Probes of the receipt faults, registered with the others in faults_test.go.

func init() {
	for f, p := range receiptProbes {
		probes[f] = p
	}
}

// firstReceipt is the receipt of the probe env's completed task.
func (p *probeEnv) firstReceipt() (json.RawMessage, error) {
	rs := p.receiptsOf(p.taskID())
	if len(rs) == 0 {
		return nil, errors.New("the task has no receipt")
	}
	return rs[0], nil
}

// findings verifies raw and returns its findings of the given classes.
func findings(raw []byte, opts receipt.Options, classes ...string) error {
	var bad []string
	for _, f := range receipt.Verify(raw, opts).Findings {
		for _, c := range classes {
			if f.Class == c {
				bad = append(bad, f.String())
			}
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("receipt: %s", strings.Join(bad, "; "))
	}
	return nil
}

// eachSignature calls f for every signature of raw whose key the directory
// lists, with the inputs it might cover: "hash" (the hash string),
// "canonical" (the hash input) and "digest" (the raw 32-byte digest).
func eachSignature(raw []byte, keys *receipt.KeySet, f func(i int, pub ed25519.PublicKey, sig []byte, msgs map[string][]byte) error) error {
	h, _ := field(raw, "chain", "receipt_hash").(string)
	canon, err := receipt.Canonical(raw)
	if err != nil {
		return err
	}
	digest, _ := hex.DecodeString(strings.TrimPrefix(strings.ToLower(h), receipt.HashPrefix))
	msgs := map[string][]byte{"hash": []byte(h), "canonical": canon, "digest": digest}
	sigs, _ := field(raw, "signatures").([]any)
	for i, x := range sigs {
		m, _ := x.(map[string]any)
		k, ok := keys.Lookup(fmt.Sprint(m["key_id"]))
		if !ok {
			continue
		}
		sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(fmt.Sprint(m["signature"]), receipt.SignatureEncodingPrefix))
		if err != nil {
			return fmt.Errorf("signature %d: %v", i, err)
		}
		if err := f(i, ed25519.PublicKey(k.Key), sig, msgs); err != nil {
			return err
		}
	}
	return nil
}

// receiptMembers are the top-level members the receipt schema allows.
const receiptMembers = " schema receipt_id subject issuer issued_at identifiers lifecycle approvals trust autonomy_budget replay_input model_route cost side_effects final_artifacts deltas chain redactions signatures metadata "

var receiptProbes = map[Fault]probe{
	FaultReceiptHashCorrupt: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		return findings(raw, receipt.Options{}, receipt.ClassHashMismatch)
	},
	FaultReceiptChainBroken: func(p *probeEnv) error {
		first, err := p.firstReceipt()
		if err != nil {
			return err
		}
		next := p.receiptsOf(p.runTask(p.sessionID(), nil, StatusCompleted))
		if len(next) == 0 {
			return errors.New("second task has no receipt")
		}
		if got, want := field(next[0], "chain", "previous_receipt_hash"), field(first, "chain", "receipt_hash"); got != want {
			return fmt.Errorf("second receipt links to %v, want the first's hash %v", got, want)
		}
		return nil
	},
	// The key is right when each signature verifies with the published key
	// over some input (which input is FaultReceiptSignsDigest's probe).
	FaultReceiptWrongKey: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		return eachSignature(raw, p.keys(), func(i int, pub ed25519.PublicKey, sig []byte, msgs map[string][]byte) error {
			for _, m := range msgs {
				if ed25519.Verify(pub, m, sig) {
					return nil
				}
			}
			return fmt.Errorf("signature %d verifies with the published key over no input at all", i)
		})
	},
	// Signatures cover a documented input, never the raw digest.
	FaultReceiptSignsDigest: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		return eachSignature(raw, p.keys(), func(i int, pub ed25519.PublicKey, sig []byte, msgs map[string][]byte) error {
			if ed25519.Verify(pub, msgs["digest"], sig) {
				return fmt.Errorf("signature %d is over the raw 32-byte digest", i)
			}
			return nil
		})
	},
	FaultReceiptCostInconsistent: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		total, _ := field(raw, "cost", "total").(float64)
		sum := 0.0
		rows, _ := field(raw, "cost", "provider_breakdown").([]any)
		for _, r := range rows {
			a, _ := r.(map[string]any)["amount"].(float64)
			sum += a
		}
		if sum > total+1e-9 {
			return fmt.Errorf("provider_breakdown adds up to %v, more than cost.total %v", sum, total)
		}
		return nil
	},
	FaultReceiptDropsArtifacts: func(p *probeEnv) error {
		id := p.runTask(p.sessionID(), []map[string]any{step("artifact", "content", "probe bytes", "name", "probe.txt"), step("complete")}, StatusCompleted)
		o := p.do("GET", "/v1/outcomes/"+p.do("GET", "/v1/tasks/"+id, nil).str("outcome_id"), nil)
		arts, _ := o.Body["artifacts"].([]any)
		for _, r := range p.receiptsOf(id) {
			finals, _ := field(r, "final_artifacts").([]any)
			if len(finals) < len(arts) {
				return fmt.Errorf("final_artifacts has %d entries, the outcome %d artifacts", len(finals), len(arts))
			}
		}
		return nil
	},
	FaultReceiptLeaksSecret: func(p *probeEnv) error {
		id := p.runTask(p.sessionID(), []map[string]any{step("use_secret", "secret", canary)}, StatusCompleted)
		for _, r := range p.receiptsOf(id) {
			if strings.Contains(string(r), canary) {
				return errors.New("the receipt carries the canary secret")
			}
		}
		return nil
	},
	FaultReceiptLeaksReasoning: func(p *probeEnv) error {
		const thought = "probe hidden reasoning 9c1e"
		id := p.runTask(p.sessionID(), []map[string]any{step("reason", "text", thought)}, StatusCompleted)
		for _, r := range p.receiptsOf(id) {
			if strings.Contains(string(r), thought) {
				return errors.New("the receipt carries the hidden reasoning")
			}
		}
		return nil
	},
	FaultReceiptRefDropped: func(p *probeEnv) error {
		if p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("receipt_id") == "" {
			return errors.New("the completed task's receipt_id is null")
		}
		return nil
	},
	FaultVerifyAlwaysValid: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		var doc map[string]any
		json.Unmarshal(raw, &doc)
		doc["issued_at"] = "1999-01-01T00:00:00Z"
		rid := doc["receipt_id"].(string)
		if _, ok := p.s.receiptBytes(rid); !ok { // the document's id is not its id: another probe's business
			return nil
		}
		r := p.do("POST", "/v1/receipts/"+rid+"/verify", map[string]any{"receipt": doc})
		if r.Body["valid"] != false {
			return fmt.Errorf("a tampered copy verifies: %s", r.Raw)
		}
		return nil
	},
	FaultReceiptUnknownField: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		var top map[string]json.RawMessage
		json.Unmarshal(raw, &top)
		for k := range top {
			if !strings.Contains(receiptMembers, " "+k+" ") {
				return fmt.Errorf("top-level member %q is not in the closed receipt schema", k)
			}
		}
		return nil
	},
	FaultRedactionWithoutProof: func(p *probeEnv) error {
		id := p.runTask(p.sessionID(), []map[string]any{step("use_secret", "secret", canary)}, StatusCompleted)
		for _, r := range p.receiptsOf(id) {
			reds, _ := field(r, "redactions").([]any)
			if len(reds) == 0 {
				return errors.New("a used secret is not listed in redactions")
			}
			for _, x := range reds {
				if m, _ := x.(map[string]any); m["proof_hash"] == nil {
					return fmt.Errorf("redaction %v has no proof_hash", m)
				}
			}
		}
		return nil
	},
	FaultReceiptWrongState: func(p *probeEnv) error {
		id := p.runTask(p.sessionID(), []map[string]any{step("fail", "code", "boom")}, StatusFailed)
		for _, r := range p.receiptsOf(id) {
			if got := field(r, "lifecycle", "final_state"); got != "FAILED" {
				return fmt.Errorf("a FAILED task's receipt says final_state %v", got)
			}
		}
		return nil
	},
	FaultReceiptWrongIDs: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		if got, want := field(raw, "identifiers", "workspace_ref"), p.do("GET", "/v1/sessions/"+p.sessionID(), nil).str("workspace_id"); got != want {
			return fmt.Errorf("identifiers.workspace_ref = %v, want %s", got, want)
		}
		return nil
	},
	FaultReceiptWrongSubject: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		if got := field(raw, "subject", "id"); got != p.taskID() {
			return fmt.Errorf("subject.id = %v, want the task %s", got, p.taskID())
		}
		return nil
	},
	FaultReceiptUpperHash: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		return findings(raw, receipt.Options{}, receipt.ClassHashPattern)
	},
	FaultEventLeaksSecret: func(p *probeEnv) error {
		p.runTask(p.sessionID(), []map[string]any{step("use_secret", "secret", canary)}, StatusCompleted)
		if r := p.do("GET", "/v1/sessions/"+p.sessionID()+"/events?limit=200", nil); strings.Contains(string(r.Raw), canary) {
			return errors.New("the session's events carry the canary secret")
		}
		return nil
	},
	FaultReceiptLeaksAPIKey: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		if strings.Contains(string(raw), testKey) {
			return errors.New("the receipt carries the API key")
		}
		return nil
	},
	FaultReceiptLeaksAPIKeyEncoded: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		if sp, ok := redact.Find(string(raw), testKey); ok && sp != "" {
			return fmt.Errorf("the receipt carries the API key (%s)", sp)
		}
		return nil
	},
	FaultReceiptIDMismatch: func(p *probeEnv) error {
		rid := p.do("GET", "/v1/tasks/"+p.taskID(), nil).str("receipt_id")
		if rid == "" {
			return nil // no reference: another probe's business
		}
		if got := p.do("GET", "/v1/receipts/"+rid, nil).str("receipt_id"); got != rid {
			return fmt.Errorf("GET /v1/receipts/%s serves receipt_id %q", rid, got)
		}
		return nil
	},
	FaultReceiptLeaksBearer: func(p *probeEnv) error {
		raw, err := p.firstReceipt()
		if err != nil {
			return err
		}
		if strings.Contains(string(raw), bearerCanary) {
			return errors.New("the receipt carries a bearer token")
		}
		return nil
	},
	FaultReceiptEventNoID: func(p *probeEnv) error {
		evs := p.receiptEvents(p.sessionID(), "receipt.issued", p.taskID())
		if len(evs) == 0 {
			return errors.New("no receipt.issued event")
		}
		for _, e := range evs {
			if e["receipt_id"] == nil {
				return errors.New("receipt.issued has no receipt_id")
			}
		}
		return nil
	},
}
