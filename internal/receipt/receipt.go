// Package receipt verifies Harn Agents Protocol receipts (format
// receipt-2026-04-25) the way the receipt format prescribes, and issues
// them: schema validation, the RFC 8785 + SHA-256 receipt hash, chain links,
// batch (Merkle) roots, ed25519 signatures over the hash, and a scan for
// secret material that receipts must never carry.
//
// The exact bytes hashed and signed, and the key directory format, are
// documented in docs/receipts.md.
package receipt

import (
	"crypto/ed25519"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Finding classes: stable tags that tests, reports and fixtures match on.
const (
	ClassJSONInvalid      = "json_invalid"      // not a JSON object JCS accepts
	ClassSchemaInvalid    = "schema_invalid"    // breaks the receipt-2026-04-25 schema
	ClassHashMissing      = "hash_missing"      // no chain.receipt_hash
	ClassHashPattern      = "hash_pattern"      // receipt_hash is not sha256:<64 lowercase hex>
	ClassHashMismatch     = "hash_mismatch"     // stored hash differs from the computed one
	ClassChainBroken      = "chain_broken"      // previous_receipt_hash is not the prior receipt's hash
	ClassMerkleMismatch   = "merkle_mismatch"   // chain.merkle_root is not the given batch root
	ClassSignatureInvalid = "signature_invalid" // a signature does not verify
	ClassKeyUnknown       = "key_unknown"       // a signature names a key id the key set lacks
	ClassSecretMaterial   = "secret_material"   // a credential or private key is present
)

// Step names, in the order Verify runs them.
const (
	StepParse      = "parse"
	StepSchema     = "schema"
	StepHash       = "hash"
	StepChain      = "chain"
	StepMerkle     = "merkle"
	StepSignatures = "signatures"
	StepSecrets    = "secrets"
)

// Options say what to check beyond the receipt itself. The zero value checks
// schema, hash and secrets, and skips chain, batch root and signatures.
type Options struct {
	// Previous, when set, is the hash the receipt's
	// chain.previous_receipt_hash must equal (the prior receipt's hash).
	// "null" demands a chain start (previous_receipt_hash null).
	Previous string
	// MerkleRoot, when set, is the batch root chain.merkle_root must equal.
	MerkleRoot string
	// Keys, when set, are the issuer's public keys; every signature is then
	// verified. Without keys, signatures are counted but not checked.
	Keys *KeySet
}

// Step is the outcome of one verification step.
type Step struct {
	Name    string `json:"name"`
	OK      bool   `json:"ok"`
	Skipped bool   `json:"skipped,omitempty"` // not run; OK is then true
	Detail  string `json:"detail,omitempty"`
}

// Finding is one reason a receipt is invalid.
type Finding struct {
	Class   string `json:"class"`
	Step    string `json:"step"` // the step that found it
	Message string `json:"message"`
}

func (f Finding) String() string { return f.Class + ": " + f.Message }

// Result is the full verification record of one receipt.
type Result struct {
	ReceiptID string    `json:"receipt_id,omitempty"`
	Stored    string    `json:"stored_hash,omitempty"`   // chain.receipt_hash as found (if a string)
	Computed  string    `json:"computed_hash,omitempty"` // the hash the receipt actually has
	Canonical []byte    `json:"-"`                       // the hashed bytes
	Steps     []Step    `json:"steps"`
	Findings  []Finding `json:"findings"`
	// SignatureProfiles lists the signing inputs (ProfileHash,
	// ProfileCanonical) of the signatures that verified, each once.
	SignatureProfiles []string `json:"signature_profiles,omitempty"`
}

// Valid reports whether verification found nothing wrong.
func (r Result) Valid() bool { return len(r.Findings) == 0 }

// Err is the verdict as an error for checks that return errors: nil when
// valid, otherwise every finding, one per line, with its class.
func (r Result) Err() error {
	if r.Valid() {
		return nil
	}
	id := "receipt"
	if r.ReceiptID != "" {
		id = "receipt " + jsonv.Quote(r.ReceiptID)
	}
	return fmt.Errorf("%s is invalid (%d finding(s)):\n  %s", id, len(r.Findings), strings.ReplaceAll(joinFindings(r.Findings), "; ", "\n  "))
}

// Classes lists the distinct finding classes, in first-seen order.
func (r Result) Classes() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range r.Findings {
		if !seen[f.Class] {
			seen[f.Class] = true
			out = append(out, f.Class)
		}
	}
	return out
}

func (r *Result) pass(name, detail string) {
	r.Steps = append(r.Steps, Step{Name: name, OK: true, Detail: detail})
}

func (r *Result) skip(name, detail string) {
	r.Steps = append(r.Steps, Step{Name: name, OK: true, Skipped: true, Detail: detail})
}

// maxFindingsPerStep bounds the report of one step: a hostile receipt with a
// hundred thousand bad array items must not produce a hundred thousand lines.
const maxFindingsPerStep = 50

// maxMessage bounds one message; schema messages can quote instance values.
const maxMessage = 400

// fail records a failed step and its findings (one per message), cleaned
// of control characters and bounded in number and length.
func (r *Result) fail(name, class string, msgs ...string) {
	if len(msgs) > maxFindingsPerStep {
		more := len(msgs) - maxFindingsPerStep
		msgs = append(msgs[:maxFindingsPerStep:maxFindingsPerStep], fmt.Sprintf("… and %d more finding(s) of this step not shown", more))
	}
	for i, m := range msgs {
		msgs[i] = jsonv.Clean(m, maxMessage)
	}
	r.Steps = append(r.Steps, Step{Name: name, OK: false, Detail: strings.Join(msgs, "; ")})
	for _, m := range msgs {
		r.Findings = append(r.Findings, Finding{Class: class, Step: name, Message: m})
	}
}

// Verify checks one receipt. It never panics on hostile input; everything
// wrong with the receipt is a Finding.
func Verify(raw []byte, opts Options) Result {
	var r Result
	obj, err := parseObject(raw)
	if err != nil {
		r.fail(StepParse, ClassJSONInvalid, err.Error())
		for _, s := range []string{StepSchema, StepHash, StepChain, StepMerkle, StepSignatures, StepSecrets} {
			r.skip(s, "not run: the input is not a JSON object")
		}
		return r
	}
	r.pass(StepParse, fmt.Sprintf("JSON object, %d bytes", len(raw)))
	if id, ok := obj["receipt_id"].(string); ok {
		r.ReceiptID = id
	}

	if probs, err := schemaProblems(obj); err != nil {
		r.fail(StepSchema, ClassSchemaInvalid, "cannot compile the receipt schema: "+err.Error())
	} else if len(probs) > 0 {
		r.fail(StepSchema, ClassSchemaInvalid, probs...)
	} else {
		r.pass(StepSchema, "valid against "+Format)
	}

	chain, _ := obj["chain"].(map[string]any)
	r.checkHash(obj, chain)
	r.checkChain(chain, opts.Previous)
	r.checkMerkle(chain, opts.MerkleRoot)
	r.checkSignatures(obj, opts.Keys)

	if found := findSecrets(obj); len(found) > 0 {
		r.fail(StepSecrets, ClassSecretMaterial, found...)
	} else {
		r.pass(StepSecrets, "no secret material found")
	}
	return r
}

func (r *Result) checkHash(obj, chain map[string]any) {
	in, err := hashInput(obj)
	if err != nil {
		r.fail(StepHash, ClassJSONInvalid, "cannot canonicalize: "+err.Error())
		return
	}
	r.Canonical = in
	r.Computed = digest(in)
	stored, present := chain["receipt_hash"]
	s, isString := stored.(string)
	switch {
	case !present:
		r.fail(StepHash, ClassHashMissing, "chain.receipt_hash is absent; computed "+r.Computed)
	case !isString:
		r.fail(StepHash, ClassHashPattern, fmt.Sprintf("chain.receipt_hash is %s, want a string %s<64 lowercase hex>; computed %s", jsonv.AKind(stored), HashPrefix, r.Computed))
	case !proofHash.MatchString(s):
		r.Stored = s
		r.fail(StepHash, ClassHashPattern, fmt.Sprintf("chain.receipt_hash %s is not %s<64 lowercase hex>; computed %s", jsonv.Quote(s), HashPrefix, r.Computed))
	case s != r.Computed:
		r.Stored = s
		r.fail(StepHash, ClassHashMismatch, fmt.Sprintf("stored %s, computed %s", s, r.Computed))
	default:
		r.Stored = s
		r.pass(StepHash, "stored hash matches computed "+r.Computed)
	}
}

func (r *Result) checkChain(chain map[string]any, want string) {
	if want == "" {
		r.skip(StepChain, "no prior receipt given")
		return
	}
	got, present := chain["previous_receipt_hash"]
	gotText := "absent"
	switch g := got.(type) {
	case nil:
		if present {
			gotText = "null"
		}
	case string:
		gotText = jsonv.Quote(g)
		if g == want {
			r.pass(StepChain, "previous_receipt_hash matches the prior receipt's hash "+want)
			return
		}
	default:
		gotText = jsonv.AKind(g)
	}
	if want == "null" && present && got == nil {
		r.pass(StepChain, "previous_receipt_hash is null: the chain starts here")
		return
	}
	r.fail(StepChain, ClassChainBroken, fmt.Sprintf("chain.previous_receipt_hash is %s, want %s", gotText, want))
}

func (r *Result) checkMerkle(chain map[string]any, want string) {
	if want == "" {
		r.skip(StepMerkle, "no batch root given")
		return
	}
	got, ok := chain["merkle_root"].(string)
	switch {
	case !ok:
		r.fail(StepMerkle, ClassMerkleMismatch, "chain.merkle_root is absent or not a string, want "+want)
	case got != want:
		r.fail(StepMerkle, ClassMerkleMismatch, fmt.Sprintf("chain.merkle_root is %s, want %s", jsonv.Quote(got), want))
	default:
		r.pass(StepMerkle, "chain.merkle_root matches the batch root")
	}
}

// checkSignatures verifies each signature over any documented signing
// input: SignedBytes of the receipt's hash — the stored one when there is
// one (that is what the issuer signed; a stored/computed mismatch is
// already a hash finding), otherwise the computed one — or the canonical
// receipt as received, without its signatures, either without
// chain.receipt_hash (the hash input, ProfileCanonical) or with it
// (ProfileCanonicalWithHash).
func (r *Result) checkSignatures(obj map[string]any, keys *KeySet) {
	sigs, _ := obj["signatures"].([]any)
	if len(sigs) == 0 {
		r.skip(StepSignatures, "receipt carries no signatures")
		return
	}
	if keys == nil {
		r.skip(StepSignatures, fmt.Sprintf("%d signature(s) not checked: no public keys given", len(sigs)))
		return
	}
	h := r.Stored
	if h == "" {
		h = r.Computed
	}
	if h == "" {
		r.fail(StepSignatures, ClassSignatureInvalid, "no receipt hash to verify signatures against")
		return
	}
	var (
		failures  []Finding
		oks       []string
		unchecked []string
		withHash  []byte // the canonical receipt with its hash, made when needed
	)
	bad := func(class, msg string) {
		failures = append(failures, Finding{Class: class, Step: StepSignatures, Message: msg})
	}
	for i, s := range sigs {
		at := fmt.Sprintf("signatures/%d", i)
		m, ok := s.(map[string]any)
		if !ok {
			bad(ClassSignatureInvalid, at+": is "+jsonv.AKind(s)+", want an object")
			continue
		}
		id, _ := m["key_id"].(string)
		algName, _ := m["algorithm"].(string)
		value, _ := m["signature"].(string)
		alg, supported := canonicalAlgorithm(algName)
		if !supported {
			// The spec fixes no algorithm set: a signature we cannot check
			// is reported, not held against the receipt.
			unchecked = append(unchecked, fmt.Sprintf("%s: algorithm %s not checked (this verifier implements %s)", at, jsonv.Quote(algName), Ed25519))
			continue
		}
		key, found := keys.Lookup(id)
		if !found {
			bad(ClassKeyUnknown, fmt.Sprintf("%s: key_id %s is not in the key set (%d keys)", at, jsonv.Quote(id), keys.Len()))
			continue
		}
		if key.Algorithm != alg {
			bad(ClassSignatureInvalid, fmt.Sprintf("%s: the key directory lists %s as a %s key, the signature says %s", at, jsonv.Quote(id), jsonv.Quote(key.Algorithm), jsonv.Quote(algName)))
			continue
		}
		sig, err := decodeSignature(value)
		if err != nil || len(sig) != ed25519.SignatureSize {
			got := "undecodable"
			if err == nil {
				got = fmt.Sprintf("%d bytes", len(sig))
			}
			bad(ClassSignatureInvalid, fmt.Sprintf("%s: signature value is %s, want %d bytes of base64", at, got, ed25519.SignatureSize))
			continue
		}
		pub := ed25519.PublicKey(key.Key)
		profile := ""
		switch {
		case ed25519.Verify(pub, SignedBytes(h), sig):
			profile = ProfileHash
		case r.Canonical != nil && ed25519.Verify(pub, r.Canonical, sig):
			profile = ProfileCanonical
		default:
			if withHash == nil {
				withHash, _ = canonicalWithHash(obj)
			}
			if withHash != nil && ed25519.Verify(pub, withHash, sig) {
				profile = ProfileCanonicalWithHash
				break
			}
			bad(ClassSignatureInvalid, fmt.Sprintf("%s: ed25519 signature by %s verifies over none of the signing inputs: the ASCII bytes of %s, the canonical receipt without chain.receipt_hash, the canonical receipt with it%s", at, jsonv.Quote(id), h, misSigned(pub, sig, h)))
			continue
		}
		if !slices.Contains(r.SignatureProfiles, profile) {
			r.SignatureProfiles = append(r.SignatureProfiles, profile)
		}
		oks = append(oks, jsonv.Quote(id)+" over the "+profileText(profile))
	}
	if len(failures) > 0 {
		r.Steps = append(r.Steps, Step{Name: StepSignatures, Detail: joinFindings(failures)})
		r.Findings = append(r.Findings, failures...)
		return
	}
	if len(oks) == 0 {
		r.skip(StepSignatures, strings.Join(unchecked, "; "))
		return
	}
	detail := fmt.Sprintf("%d signature(s) verify (%s)", len(oks), strings.Join(oks, ", "))
	if len(unchecked) > 0 {
		detail += "; " + strings.Join(unchecked, "; ")
	}
	r.pass(StepSignatures, detail)
}

// profileText names a signing profile in step details.
func profileText(profile string) string {
	switch profile {
	case ProfileCanonical:
		return "canonical bytes"
	case ProfileCanonicalWithHash:
		return "canonical bytes with the hash"
	}
	return "hash string"
}

// misSigned is a debugging hint: it names the usual wrong choice of signed
// bytes when the signature verifies over it instead.
func misSigned(pub ed25519.PublicKey, sig []byte, h string) string {
	if raw, err := hexDigest(h); err == nil && ed25519.Verify(pub, raw, sig) {
		return " (it verifies over the raw 32-byte digest instead: sign the hash string or the canonical bytes)"
	}
	return ""
}

func hexDigest(h string) ([]byte, error) {
	if !proofHash.MatchString(h) {
		return nil, fmt.Errorf("not a sha256 hash")
	}
	return hex.DecodeString(h[len(HashPrefix):])
}

func joinFindings(fs []Finding) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, "; ")
}

// VerifyChain verifies receipts that form one chain, in order: each
// receipt's previous_receipt_hash must be the computed hash of the one
// before it. The first receipt's link is checked only against opts.Previous.
func VerifyChain(receipts [][]byte, opts Options) []Result {
	out := make([]Result, len(receipts))
	prev := opts.Previous
	for i, raw := range receipts {
		o := opts
		o.Previous = prev
		if i > 0 && prev == "" {
			// The prior receipt has no computable hash, so no link can hold.
			o.Previous = "(none: receipt " + fmt.Sprint(i-1) + " of the chain has no computable hash)"
		}
		out[i] = Verify(raw, o)
		prev = out[i].Computed
	}
	return out
}
