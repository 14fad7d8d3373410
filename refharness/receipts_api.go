package refharness

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the receipt verify API.
var (
	// Caught by the conform extension the harness offers: the standard request
	// cannot tell a verify API that ignores trust_anchor and at_time from one
	// that reads them differently (the wire variant verify-ignores-request).
	FaultVerifyAlwaysValid = declare(fault.Fault{Name: "receipt-verify-always-valid",
		Doc:   "POST /v1/receipts/{id}/verify always answers valid",
		Fails: []string{"RCPT-VERIFY-002"}})
)

// VerifySubmittedCapability is the discovery capability by which the harness
// says POST /v1/receipts/{id}/verify also checks a copy of the receipt sent
// in the body ({"receipt": {…}}), a conform extension (docs/receipts.md).
const VerifySubmittedCapability = "conform.receipt_verify_submitted"

// keyFile holds the receipt signing key in a DataDir, readable by the owner only.
const keyFile = "receipt-signing-key.json"

// maxKeyFile bounds the key file read: it is a few hundred bytes.
const maxKeyFile = 64 << 10

// signingKey is the harness's ed25519 receipt key.
type signingKey struct {
	id   string
	priv ed25519.PrivateKey
}

type keyFileDoc struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`
	Seed      string `json:"seed"` // standard base64 of the 32-byte ed25519 seed
}

// loadReceiptKey reads the signing key from the DataDir, creating it on
// first start (in memory mode a fresh key per process), and publishes its
// public half in the journal so the key directory survives rotation.
func (s *Server) loadReceiptKey() error {
	var k signingKey
	var err error
	if s.opts.DataDir == "" {
		k, err = s.newSigningKey()
	} else {
		k, err = s.readOrCreateKey(filepath.Join(s.opts.DataDir, keyFile))
	}
	if err != nil {
		return fmt.Errorf("refharness: receipt signing key: %w", err)
	}
	s.rkey = k
	s.mu.Lock()
	if _, ok := s.st.rc.key(k.id); ok {
		s.mu.Unlock()
		return nil
	}
	pub := k.priv.Public().(ed25519.PublicKey)
	seq, err := s.commitLocked(&commit{ReceiptKeys: []publishedKey{{ID: k.id, Public: pub}}})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(seq)
}

func (s *Server) newSigningKey() (signingKey, error) {
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return signingKey{}, err
	}
	return signingKey{id: s.ids.NewID("rkey"), priv: priv}, nil
}

func (s *Server) readOrCreateKey(path string) (signingKey, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		k, err := s.newSigningKey()
		if err != nil {
			return k, err
		}
		return k, writeKeyFile(path, k)
	}
	if err != nil {
		return signingKey{}, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return signingKey{}, err
	}
	if len(b) > maxKeyFile {
		return signingKey{}, fmt.Errorf("%s is over %d bytes, want a small JSON key document", path, maxKeyFile)
	}
	var d keyFileDoc
	if err := json.Unmarshal(b, &d); err != nil {
		return signingKey{}, fmt.Errorf("%s: %v", path, err)
	}
	seed, err := base64.StdEncoding.DecodeString(d.Seed)
	switch {
	case d.KeyID == "":
		return signingKey{}, fmt.Errorf("%s: empty key_id", path)
	case d.Algorithm != receipt.Ed25519:
		return signingKey{}, fmt.Errorf("%s: algorithm %q, want %q", path, d.Algorithm, receipt.Ed25519)
	case err != nil || len(seed) != ed25519.SeedSize:
		return signingKey{}, fmt.Errorf("%s: seed is not %d bytes of base64", path, ed25519.SeedSize)
	}
	return signingKey{id: d.KeyID, priv: ed25519.NewKeyFromSeed(seed)}, nil
}

// writeKeyFile writes the key atomically (temp file, fsync, rename), owner-only.
func writeKeyFile(path string, k signingKey) error {
	b, err := json.Marshal(keyFileDoc{KeyID: k.id, Algorithm: receipt.Ed25519, Seed: base64.StdEncoding.EncodeToString(k.priv.Seed())})
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func (s *Server) receiptRoutes() []route {
	return []route{
		{method: "GET", pattern: "receipt-keys", raw: s.receiptKeys},
		{method: "GET", pattern: "receipts/{}", raw: s.getReceipt},
		{method: "POST", pattern: "receipts/{}/verify", write: s.verifyReceipt, noBody: true},
		{method: "GET", pattern: "tasks/{}/receipts", raw: s.listTaskReceipts},
	}
}

// Receipts are served as their stored bytes, never through render: the
// hash covers them, so no output fault or variant may touch them.

// readDurable runs f under the read lock, waits until what it saw is
// durable, and writes its bytes as they are.
func (s *Server) readDurable(w http.ResponseWriter, c *call, f func() ([]byte, *apiError)) {
	s.mu.RLock()
	b, e := f()
	seq := s.lastSeq
	s.mu.RUnlock()
	if err := s.wait(seq); err != nil {
		e = &apiError{Status: http.StatusServiceUnavailable, Code: "service_unavailable", Message: err.Error()}
	}
	if e != nil {
		s.writeError(w, c.r, e)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	w.Write([]byte("\n"))
}

func (s *Server) getReceipt(w http.ResponseWriter, c *call) {
	s.readDurable(w, c, func() ([]byte, *apiError) {
		r, ok := s.st.rc.get(c.params[0])
		if !ok {
			return nil, notFound("receipt", c.params[0])
		}
		return []byte(r.Raw), nil
	})
}

// KeyDirectoryPath is where the harness serves its receipt key directory:
// outside /v1/receipts/{receipt_id}, whose namespace belongs to receipt
// ids (a strict server answers GET /v1/receipts/keys with 404 for the
// receipt "keys"). Discovery advertises it as the capability
// KeyDirectoryCapability (docs/receipts.md §4).
const (
	KeyDirectoryPath       = "/v1/receipt-keys"
	KeyDirectoryCapability = "conform.receipt_keys"
)

// advertiseKeyDirectory adds the key directory's location to the discovery
// document's capabilities (a path from the protocol root). A harness that
// does not sign advertises none.
func (s *Server) advertiseKeyDirectory(doc map[string]any) map[string]any {
	if caps, ok := doc["capabilities"].(map[string]any); ok && !s.opts.Variants.Has(VariantReceiptUnsigned) {
		caps[KeyDirectoryCapability] = KeyDirectoryPath
	}
	return doc
}

func (s *Server) receiptKeys(w http.ResponseWriter, c *call) {
	s.readDurable(w, c, func() ([]byte, *apiError) {
		ks := s.st.rc.keySet()
		if s.opts.Variants.Has(VariantReceiptUnsigned) {
			ks = &receipt.KeySet{} // it signs nothing, so it vouches for no key
		}
		b, err := json.Marshal(ks)
		if err != nil {
			return nil, internal(err)
		}
		return b, nil
	})
}

// listTaskReceipts lists a task's receipts (one per terminal task) in a
// list envelope whose items are the receipt documents themselves.
func (s *Server) listTaskReceipts(w http.ResponseWriter, c *call) {
	s.readDurable(w, c, func() ([]byte, *apiError) {
		if _, ok := s.st.tasks.get(c.params[0]); !ok {
			return nil, notFound("task", c.params[0])
		}
		if _, _, e := s.pageArgs(c); e != nil {
			return nil, e
		}
		var b strings.Builder
		b.WriteString(`{"object":"list","data":[`)
		for i, id := range s.st.rc.byTask[c.params[0]] {
			if i > 0 {
				b.WriteString(",")
			}
			r, _ := s.st.rc.get(id)
			b.WriteString(r.Raw)
		}
		b.WriteString(`],"page":{"has_more":false,"next_cursor":null}}`)
		return []byte(b.String()), nil
	})
}

func validTime(s string) bool {
	_, err := time.Parse(time.RFC3339Nano, strings.ToUpper(s))
	return err == nil
}

// verification is the answer of POST /v1/receipts/{id}/verify.
type verification struct {
	Valid     bool           `json:"valid"`
	CheckedAt string         `json:"checked_at"`
	Reason    *string        `json:"reason"`
	Details   map[string]any `json:"details"`
}

// verifyReceipt re-verifies the stored receipt with the project's verifier
// (schema, hash, chain link, signatures against the harness's keys, secret
// scan), or a submitted copy of it when the body carries "receipt". The
// OpenAPI members narrow what counts as valid (docs/receipts.md, "Verify"):
// trust_anchor names the one key the caller trusts (a key id of the
// directory, or its public key), and the receipt must carry a verifying
// signature by it; at_time asks about a moment, and a receipt issued after
// it did not exist yet. It records the outcome as a receipt.verified or
// receipt.verification_failed event on the receipt.
func (s *Server) verifyReceipt(c *call) (*result, *apiError) {
	r, ok := s.st.rc.get(c.params[0])
	if !ok {
		return nil, notFound("receipt", c.params[0])
	}
	for k, v := range c.body.m {
		switch k {
		case "trust_anchor":
			if _, ok := v.(string); !ok && v != nil {
				return nil, badRequest(k, "field trust_anchor: got %s, want a string or null", jsonv.AKind(v))
			}
		case "at_time":
			if t, ok := v.(string); v != nil && (!ok || !validTime(t)) {
				return nil, badRequest(k, "field at_time: got %s, want an RFC 3339 timestamp or null", jsonv.AKind(v))
			}
		default:
			// "receipt", and members the open schema does not name, which
			// a later revision may add: taken, not judged (hostile.go).
		}
	}
	raw := []byte(r.Raw)
	submitted := false
	if v, ok := c.body.m["receipt"]; ok && v != nil {
		m, isObj := v.(map[string]any)
		if !isObj {
			return nil, badRequest("receipt", "field receipt: got %s, want the receipt document", jsonv.AKind(v))
		}
		if m["receipt_id"] != r.ID {
			return nil, badRequest("receipt", "field receipt: receipt_id is %v, want %q (the receipt named by the path)", m["receipt_id"], r.ID)
		}
		b, err := json.Marshal(m)
		if err != nil {
			return nil, badRequest("receipt", "field receipt: %v", err)
		}
		raw, submitted = b, true
	}
	keys := s.st.rc.keySet()
	res := receipt.Verify(raw, receipt.Options{Keys: keys, Previous: s.st.rc.wantPrevious(r.ID)})
	findings := res.Findings
	if a, _ := c.body.m["trust_anchor"].(string); a != "" {
		findings = append(findings, anchorFindings(raw, keys, a)...)
	}
	if at, _ := c.body.m["at_time"].(string); at != "" {
		findings = append(findings, atTimeFindings(raw, at)...)
	}
	v := verification{Valid: len(findings) == 0, CheckedAt: s.now(), Details: map[string]any{
		"receipt_id": r.ID, "submitted": submitted, "stored_hash": nullable(res.Stored), "computed_hash": nullable(res.Computed),
		"steps": res.Steps, "findings": findings,
	}}
	if !v.Valid {
		var parts []string
		for _, f := range findings {
			parts = append(parts, f.String())
		}
		v.Reason = ptr(strings.Join(parts, "; "))
	}
	if s.opts.Faults.Has(FaultVerifyAlwaysValid) {
		v.Valid, v.Reason = true, nil
	}
	kind := "receipt.verified"
	if !v.Valid {
		kind = "receipt.verification_failed"
	}
	var ws, sess string
	if t, ok := s.st.tasks.get(r.TaskID); ok {
		ws, sess = t.WorkspaceID, t.SessionID
	}
	ev := s.newEvent(kind, Pointer{"receipt", r.ID}, map[string]any{"receipt_id": r.ID, "valid": v.Valid, "submitted": submitted,
		"subject": map[string]any{"object": "task", "id": r.TaskID}}, ws, sess, "", c.actor)
	ev.ReceiptID = ptr(r.ID)
	return &result{status: http.StatusOK, body: v, c: &commit{Events: []*Event{ev}}}, nil
}

// Findings of the verify request's own conditions (harness-local classes).
const (
	classNotAnchored  = "not_anchored"   // no signature by the trust anchor
	classNotYetIssued = "not_yet_issued" // issued after at_time
)

// anchorFindings checks that one of the receipt's signatures is by the
// trust anchor: a key id of the directory or, as a convenience, that key's
// public key in the directory's encoding. The signatures themselves were
// verified with the directory's keys already; this only says whose.
func anchorFindings(raw []byte, keys *receipt.KeySet, anchor string) []receipt.Finding {
	id, known := anchorKeyID(keys, anchor)
	if !known {
		return []receipt.Finding{{Class: classNotAnchored, Step: receipt.StepSignatures,
			Message: fmt.Sprintf("trust_anchor %q is not a key this harness publishes, so nothing it issued is anchored in it", anchor)}}
	}
	var doc struct {
		Signatures []struct {
			KeyID string `json:"key_id"`
		} `json:"signatures"`
	}
	json.Unmarshal(raw, &doc)
	for _, sig := range doc.Signatures {
		if sig.KeyID == id {
			return nil
		}
	}
	return []receipt.Finding{{Class: classNotAnchored, Step: receipt.StepSignatures,
		Message: fmt.Sprintf("the receipt carries no signature by the trust anchor %q (%d signature(s))", id, len(doc.Signatures))}}
}

func anchorKeyID(keys *receipt.KeySet, anchor string) (string, bool) {
	if _, ok := keys.Lookup(anchor); ok {
		return anchor, true
	}
	dir, err := json.Marshal(keys)
	if err != nil {
		return "", false
	}
	var d struct {
		Keys []struct {
			KeyID     string `json:"key_id"`
			PublicKey string `json:"public_key"`
		} `json:"keys"`
	}
	json.Unmarshal(dir, &d)
	want := strings.TrimRight(strings.NewReplacer("+", "-", "/", "_").Replace(anchor), "=")
	for _, k := range d.Keys {
		if k.PublicKey == want {
			return k.KeyID, true
		}
	}
	return "", false
}

// atTimeFindings: at at_time, a receipt issued later did not exist yet.
func atTimeFindings(raw []byte, at string) []receipt.Finding {
	when, err := time.Parse(time.RFC3339Nano, strings.ToUpper(at))
	if err != nil {
		return nil // refused as a bad request before
	}
	var doc struct {
		IssuedAt string `json:"issued_at"`
	}
	json.Unmarshal(raw, &doc)
	issued, err := time.Parse(time.RFC3339Nano, strings.ToUpper(doc.IssuedAt))
	if err != nil || !issued.After(when) {
		return nil // an unreadable issued_at is the schema step's finding
	}
	return []receipt.Finding{{Class: classNotYetIssued, Step: "at_time",
		Message: fmt.Sprintf("the receipt was issued at %s, after at_time %s: it did not exist yet", doc.IssuedAt, at)}}
}
