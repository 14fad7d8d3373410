// Package cardsig signs and verifies Harn agent cards (the HarnAgentCard of
// GET /v1/agent-card) under conform's card-signing profile
// harn-card-sig.v1 (docs/card-signing.md): an ed25519 signature over the
// RFC 8785 canonical bytes of the card without its top-level "signature"
// and "signatures" members, carried in the card's signature object
// {algorithm, key_id, value}, verified with a key the target publishes in
// its key directory (the receipt key directory of docs/receipts.md §4).
//
// Every finding names the requirement it bears on: EXT-CARD-001 (the card
// is signed and its signature verifies) or EXT-CARD-002 (the signature
// object names its algorithm and key id). Verify never panics and bounds
// what it reads; everything wrong with a card is a Finding.
package cardsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/receipt"
)

// Profile names this signing profile; docs/card-signing.md is its text.
const Profile = "harn-card-sig.v1"

// The requirements a finding can name (internal/requirements/extended.yaml).
const (
	// ReqSignature: the card carries a signature, and a signature whose
	// key the target publishes verifies under this profile.
	ReqSignature = "EXT-CARD-001"
	// ReqNames: a signature object names its algorithm and its key id.
	ReqNames = "EXT-CARD-002"
)

// The card members that carry signatures, and that the signed bytes leave
// out: the OpenAPI's one signature object, and an array of further ones
// (several signers, or an old and a new key during a rotation).
const (
	MemberSignature  = "signature"
	MemberSignatures = "signatures"
)

// Bounds: a card is a small discovery document.
const (
	// MaxCardBytes is the largest card Verify and Sign read.
	MaxCardBytes = 1 << 20
	// MaxSignatures is the most signature objects one card may carry;
	// Verify checks the first MaxSignatures of more and reports the rest.
	MaxSignatures = 16
)

// Ed25519 is the algorithm this profile writes and the only one this
// verifier implements; "EdDSA" is read as the same (compared
// case-insensitively), as in receipts.
const Ed25519 = receipt.Ed25519

// ValuePrefix starts every signature value Sign writes: the 64 signature
// bytes follow in standard, padded base64. Verify also accepts no prefix,
// "base64url:", the URL-safe alphabet and missing padding.
const ValuePrefix = receipt.SignatureEncodingPrefix

// Finding kinds: a failure of the requirement, or a signature that could
// not be checked (no verdict either way: the suite reports the
// requirement unverified, never passed, unless another signature verified).
const (
	KindFail      = "fail"
	KindUnchecked = "unchecked"
)

// Finding classes: stable tags tests, fixtures and reports match on. Each
// has one requirement and one kind (Classes lists them).
const (
	ClassJSONInvalid          = "json_invalid"          // not a JSON object RFC 8785 accepts, or over MaxCardBytes
	ClassUnsigned             = "unsigned"              // no signature object at all
	ClassTooManySignatures    = "too_many_signatures"   // more than MaxSignatures signature objects
	ClassSignatureMalformed   = "signature_malformed"   // signature is not an object (signatures not an array of objects)
	ClassAlgorithmMissing     = "algorithm_missing"     // the signature object names no algorithm
	ClassKeyIDMissing         = "key_id_missing"        // the signature object names no key id
	ClassValueMissing         = "value_missing"         // the signature object has no value
	ClassSignatureInvalid     = "signature_invalid"     // the value does not verify under the published key
	ClassKeyUnknown           = "key_unknown"           // the key id is not in the key directory
	ClassAlgorithmUnsupported = "algorithm_unsupported" // an algorithm this verifier does not implement
	ClassNoKeys               = "no_keys"               // no key directory to check against
)

type classInfo struct{ req, kind string }

var classes = map[string]classInfo{
	ClassJSONInvalid:          {ReqSignature, KindFail},
	ClassUnsigned:             {ReqSignature, KindFail},
	ClassTooManySignatures:    {ReqSignature, KindFail},
	ClassSignatureMalformed:   {ReqNames, KindFail},
	ClassAlgorithmMissing:     {ReqNames, KindFail},
	ClassKeyIDMissing:         {ReqNames, KindFail},
	ClassValueMissing:         {ReqSignature, KindFail},
	ClassSignatureInvalid:     {ReqSignature, KindFail},
	ClassKeyUnknown:           {ReqSignature, KindUnchecked},
	ClassAlgorithmUnsupported: {ReqSignature, KindUnchecked},
	ClassNoKeys:               {ReqSignature, KindUnchecked},
}

// ClassOf returns the requirement and kind of a finding class (false for
// a class this package does not produce).
func ClassOf(class string) (req, kind string, ok bool) {
	c, ok := classes[class]
	return c.req, c.kind, ok
}

// Classes lists every finding class.
func Classes() []string {
	out := make([]string, 0, len(classes))
	for c := range classes {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// Finding is one thing wrong with a card, or one signature not checked.
type Finding struct {
	Requirement string `json:"requirement"`       // EXT-CARD-001 or EXT-CARD-002
	Class       string `json:"class"`             // one of the Class constants
	Kind        string `json:"kind"`              // KindFail or KindUnchecked
	Pointer     string `json:"pointer,omitempty"` // JSON pointer of the signature object, "" for the card
	Message     string `json:"message"`
}

func (f Finding) String() string {
	at := ""
	if f.Pointer != "" {
		at = f.Pointer + ": "
	}
	return fmt.Sprintf("%s %s: %s%s", f.Requirement, f.Class, at, f.Message)
}

// Signature statuses.
const (
	StatusVerified  = "verified"  // verifies with a published key
	StatusInvalid   = "invalid"   // does not verify, or cannot (no value)
	StatusUnchecked = "unchecked" // no key or algorithm to check it with
	StatusMalformed = "malformed" // not a signature object at all
)

// Signature is what became of one signature object.
type Signature struct {
	Pointer   string `json:"pointer"` // "/signature" or "/signatures/N"
	Algorithm string `json:"algorithm,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	Status    string `json:"status"`
	// VerifiedWith is the published key that verified it: its key_id,
	// or, for a signature that names none, the key found by trying each.
	VerifiedWith string `json:"verified_with,omitempty"`
	Detail       string `json:"detail,omitempty"`
}

// Result is the verification record of one card.
type Result struct {
	Profile string `json:"profile"`
	// Signed: the card carries at least one signature object (whatever
	// its shape). An unsigned card has the finding ClassUnsigned.
	Signed bool `json:"signed"`
	// Canonical is the signed bytes: RFC 8785 of the card without its
	// signature members (nil when the card does not parse); Digest is
	// "sha256:" and the lowercase hex SHA-256 of them, for comparing notes.
	Canonical  []byte      `json:"-"`
	Digest     string      `json:"signed_bytes_sha256,omitempty"`
	Signatures []Signature `json:"signatures"`
	Findings   []Finding   `json:"findings"`
}

// Verified reports whether at least one signature verified.
func (r Result) Verified() bool {
	for _, s := range r.Signatures {
		if s.Status == StatusVerified {
			return true
		}
	}
	return false
}

// Valid reports whether the card is signed, some signature verified with a
// published key, and nothing failed. Signatures left unchecked beside a
// verified one do not make a card invalid.
func (r Result) Valid() bool {
	return r.Signed && r.Verified() && len(r.Failures("")) == 0
}

// Failures lists the findings of kind KindFail of requirement req (every
// requirement when req is "").
func (r Result) Failures(req string) []Finding { return r.filter(req, KindFail) }

// Unchecked lists the findings of kind KindUnchecked: signatures no key or
// algorithm could check.
func (r Result) Unchecked() []Finding { return r.filter("", KindUnchecked) }

func (r Result) filter(req, kind string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Kind == kind && (req == "" || f.Requirement == req) {
			out = append(out, f)
		}
	}
	return out
}

// Err is the failures of requirement req as one error (nil when there are
// none), one finding per line ("class: pointer: message"), for checks that
// return errors.
func (r Result) Err(req string) error {
	fs := r.Failures(req)
	if len(fs) == 0 {
		return nil
	}
	lines := make([]string, len(fs))
	for i, f := range fs {
		lines[i] = strings.TrimPrefix(f.String(), req+" ")
	}
	return fmt.Errorf("agent card (%s, docs/card-signing.md): %s", Profile, strings.Join(lines, "\n  "))
}

// ClassList is the distinct finding classes, in first-seen order.
func (r Result) ClassList() []string {
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

// maxMessage bounds one finding's message.
const maxMessage = 600

func (r *Result) add(class, pointer, msg string) {
	c := classes[class]
	r.Findings = append(r.Findings, Finding{Requirement: c.req, Class: class, Kind: c.kind, Pointer: pointer, Message: jsonv.Clean(msg, maxMessage)})
}

// Canonical returns the bytes a card signature covers: the card without its
// top-level "signature" and "signatures" members (whatever their values),
// in RFC 8785 form. Every other member stays in, including a2a_card and
// the A2A card's own "signatures".
func Canonical(card []byte) ([]byte, error) {
	obj, err := parse(card)
	if err != nil {
		return nil, err
	}
	return canonicalOf(obj)
}

// Digest is "sha256:" and the lowercase hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func canonicalOf(obj map[string]any) ([]byte, error) {
	trimmed := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != MemberSignature && k != MemberSignatures {
			trimmed[k] = v
		}
	}
	b, err := jsonv.Marshal(trimmed)
	if err != nil {
		return nil, err
	}
	return jcs.Transform(b)
}

// parse accepts one JSON object that RFC 8785 accepts (valid UTF-8, no
// duplicate member names, numbers that are IEEE 754 doubles, bounded
// nesting) of at most MaxCardBytes, and decodes it keeping number
// literals.
func parse(card []byte) (map[string]any, error) {
	if len(card) > MaxCardBytes {
		return nil, fmt.Errorf("the card is %d bytes, more than the %d this profile reads", len(card), MaxCardBytes)
	}
	if len(bytes.TrimSpace(card)) == 0 {
		return nil, errors.New("empty input, want a JSON object")
	}
	canon, err := jcs.Transform(card)
	if err != nil {
		return nil, fmt.Errorf("not JSON that RFC 8785 accepts: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the card is %s, want a JSON object", jsonv.AKind(v))
	}
	return obj, nil
}

// entry is one signature object found in the card.
type entry struct {
	pointer string
	value   any
}

// Verify checks a card's signatures against the published keys (nil: no
// key directory, so every signature is unchecked). It never panics.
func Verify(card []byte, keys *receipt.KeySet) Result {
	r := Result{Profile: Profile, Signatures: []Signature{}, Findings: []Finding{}}
	obj, err := parse(card)
	if err != nil {
		r.add(ClassJSONInvalid, "", err.Error()+": no signature over its canonical form can be checked")
		return r
	}
	canon, err := canonicalOf(obj)
	if err != nil {
		r.add(ClassJSONInvalid, "", "cannot canonicalize: "+err.Error())
		return r
	}
	r.Canonical, r.Digest = canon, Digest(canon)

	var entries []entry
	switch v := obj[MemberSignature].(type) {
	case nil: // absent or null: no signature here
	default:
		entries = append(entries, entry{"/" + MemberSignature, v})
	}
	switch v := obj[MemberSignatures].(type) {
	case nil:
	case []any:
		for i, s := range v {
			entries = append(entries, entry{fmt.Sprintf("/%s/%d", MemberSignatures, i), s})
		}
	default:
		r.Signed = true
		r.add(ClassSignatureMalformed, "/"+MemberSignatures, fmt.Sprintf("is %s, want an array of signature objects {algorithm, key_id, value}", jsonv.AKind(v)))
	}
	if len(entries) == 0 {
		if !r.Signed {
			r.add(ClassUnsigned, "", fmt.Sprintf("the card carries no signature: no %q object (absent or null) and no %q entries", MemberSignature, MemberSignatures))
		}
		return r
	}
	r.Signed = true
	if len(entries) > MaxSignatures {
		r.add(ClassTooManySignatures, "", fmt.Sprintf("%d signature objects, at most %d are read; the first %d are checked", len(entries), MaxSignatures, MaxSignatures))
		entries = entries[:MaxSignatures]
	}
	c := checker{card: card, obj: obj, canon: r.Canonical, keys: keys}
	for _, e := range entries {
		r.Signatures = append(r.Signatures, c.check(&r, e))
	}
	return r
}

type checker struct {
	card  []byte
	obj   map[string]any
	canon []byte
	keys  *receipt.KeySet
	ids   []string // the key directory's ids, read when first needed
}

// check judges one signature object: its names (EXT-CARD-002) and, as far
// as the keys allow, its value (EXT-CARD-001). The two are independent: a
// signature without a key id is still checked against every published
// key, and one without an algorithm under the algorithm its key is listed
// with, so one defect fails one requirement.
func (c *checker) check(r *Result, e entry) Signature {
	s := Signature{Pointer: e.pointer}
	m, ok := e.value.(map[string]any)
	if !ok {
		s.Status = StatusMalformed
		s.Detail = fmt.Sprintf("is %s, want an object {algorithm, key_id, value}", jsonv.AKind(e.value))
		r.add(ClassSignatureMalformed, e.pointer, s.Detail+": a signed card states its algorithm and key id in it")
		return s
	}
	alg, algOK := name(m, "algorithm")
	kid, kidOK := name(m, "key_id")
	s.Algorithm, s.KeyID = alg, kid
	if !algOK {
		r.add(ClassAlgorithmMissing, e.pointer, describeName(m, "algorithm")+": a signed card MUST state its signature algorithm (e.g. \"ed25519\")")
	}
	if !kidOK {
		r.add(ClassKeyIDMissing, e.pointer, describeName(m, "key_id")+": a signed card MUST state the key id its signature verifies with")
	}
	value, _ := m["value"].(string)
	if strings.TrimSpace(value) == "" {
		s.Status = StatusInvalid
		s.Detail = describeName(m, "value")
		r.add(ClassValueMissing, e.pointer, s.Detail+": the signature object carries no signature")
		return s
	}
	sig, err := decodeValue(value)
	if err != nil || len(sig) != ed25519.SignatureSize {
		got := "not base64"
		if err == nil {
			got = fmt.Sprintf("%d bytes", len(sig))
		}
		if algOK && !isEd25519(alg) {
			// Another algorithm's signatures have other sizes.
			return c.unsupported(r, e.pointer, s, alg)
		}
		s.Status = StatusInvalid
		s.Detail = fmt.Sprintf("value is %s, want %d bytes of base64 (an ed25519 signature)", got, ed25519.SignatureSize)
		r.add(ClassSignatureInvalid, e.pointer, s.Detail)
		return s
	}
	if algOK && !isEd25519(alg) {
		return c.unsupported(r, e.pointer, s, alg)
	}
	if c.keys == nil {
		s.Status = StatusUnchecked
		s.Detail = "no key directory to check it with"
		r.add(ClassNoKeys, e.pointer, s.Detail)
		return s
	}
	if !kidOK {
		return c.tryEveryKey(r, e.pointer, s, sig)
	}
	key, found := c.keys.Lookup(kid)
	if !found {
		s.Status = StatusUnchecked
		s.Detail = fmt.Sprintf("key_id %s is not in the key directory (%d keys): publish the key to have the signature checked", jsonv.Quote(kid), c.keys.Len())
		r.add(ClassKeyUnknown, e.pointer, s.Detail)
		return s
	}
	if !isEd25519(key.Algorithm) {
		if !algOK {
			return c.unsupported(r, e.pointer, s, key.Algorithm)
		}
		s.Status = StatusInvalid
		s.Detail = fmt.Sprintf("the key directory lists %s as a %s key, the signature says %s", jsonv.Quote(kid), jsonv.Quote(key.Algorithm), jsonv.Quote(alg))
		r.add(ClassSignatureInvalid, e.pointer, s.Detail)
		return s
	}
	if ed25519.Verify(ed25519.PublicKey(key.Key), c.canon, sig) {
		s.Status, s.VerifiedWith = StatusVerified, kid
		s.Detail = fmt.Sprintf("ed25519 signature by %s verifies over the canonical card", jsonv.Quote(kid))
		return s
	}
	s.Status = StatusInvalid
	s.Detail = fmt.Sprintf("ed25519 signature by %s does not verify over the card's canonical bytes (RFC 8785, without %q and %q; %d bytes, sha256 %s)%s",
		jsonv.Quote(kid), MemberSignature, MemberSignatures, len(c.canon), r.Digest, c.hint(ed25519.PublicKey(key.Key), sig, e.pointer))
	r.add(ClassSignatureInvalid, e.pointer, s.Detail)
	return s
}

func (c *checker) unsupported(r *Result, pointer string, s Signature, alg string) Signature {
	s.Status = StatusUnchecked
	s.Detail = fmt.Sprintf("algorithm %s not checked: this verifier implements %s", jsonv.Quote(alg), Ed25519)
	r.add(ClassAlgorithmUnsupported, pointer, s.Detail)
	return s
}

// tryEveryKey checks a signature that names no key id against every
// published ed25519 key: whether it verifies is EXT-CARD-001's question,
// and the missing name is already EXT-CARD-002's finding.
func (c *checker) tryEveryKey(r *Result, pointer string, s Signature, sig []byte) Signature {
	if c.ids == nil {
		c.ids = keyIDs(c.keys)
	}
	tried := 0
	for _, id := range c.ids {
		k, ok := c.keys.Lookup(id)
		if !ok || !isEd25519(k.Algorithm) {
			continue
		}
		tried++
		if ed25519.Verify(ed25519.PublicKey(k.Key), c.canon, sig) {
			s.Status, s.VerifiedWith = StatusVerified, id
			s.Detail = fmt.Sprintf("names no key id, but verifies over the canonical card with the published key %s", jsonv.Quote(id))
			return s
		}
	}
	s.Status = StatusUnchecked
	s.Detail = fmt.Sprintf("names no key id, and none of the %d published ed25519 keys verifies it: which key it claims is unknown", tried)
	r.add(ClassKeyUnknown, pointer, s.Detail)
	return s
}

// hint names the usual wrong choice of signed bytes when the signature
// verifies over it instead: the card's JSON text as served with the
// signature member cut out (not canonicalized), or the canonical card with
// the signature object kept minus its value (a JWS-style protected
// header, which this profile does not use).
func (c *checker) hint(pub ed25519.PublicKey, sig []byte, pointer string) string {
	if text, err := cutMembers(c.card, MemberSignature, MemberSignatures); err == nil {
		// As served, and without the line break a server adds after the body.
		if ed25519.Verify(pub, text, sig) || ed25519.Verify(pub, bytes.TrimSpace(text), sig) {
			return " (it verifies over the card's JSON text as served with the signature member cut out, which is not canonical: sign the RFC 8785 form)"
		}
	}
	if pointer == "/"+MemberSignature {
		if m, ok := c.obj[MemberSignature].(map[string]any); ok {
			withHeader := make(map[string]any, len(c.obj))
			for k, v := range c.obj {
				withHeader[k] = v
			}
			h := make(map[string]any, len(m))
			for k, v := range m {
				if k != "value" {
					h[k] = v
				}
			}
			withHeader[MemberSignature] = h
			delete(withHeader, MemberSignatures)
			if b, err := json.Marshal(withHeader); err == nil {
				if canon, err := jcs.Transform(b); err == nil && ed25519.Verify(pub, canon, sig) {
					return " (it verifies over the canonical card that keeps the signature object minus its value: " + Profile + " removes the whole signature member)"
				}
			}
		}
	}
	return ""
}

// keyIDs lists a key set's ids through its directory document (the set
// has no iterator of its own).
func keyIDs(ks *receipt.KeySet) []string {
	b, err := ks.MarshalJSON()
	if err != nil {
		return nil
	}
	var d struct {
		Keys []struct {
			KeyID string `json:"key_id"`
		} `json:"keys"`
	}
	if json.Unmarshal(b, &d) != nil {
		return nil
	}
	ids := make([]string, 0, len(d.Keys))
	for _, k := range d.Keys {
		ids = append(ids, k.KeyID)
	}
	return ids
}

// name reads a member that must be a non-empty string.
func name(m map[string]any, member string) (string, bool) {
	s, ok := m[member].(string)
	return s, ok && strings.TrimSpace(s) != ""
}

// describeName says what a missing or unusable member is.
func describeName(m map[string]any, member string) string {
	v, present := m[member]
	switch s, isString := v.(string); {
	case !present:
		return member + " is absent"
	case isString && strings.TrimSpace(s) == "":
		return member + " is an empty string"
	case !isString:
		return fmt.Sprintf("%s is %s, want a string", member, jsonv.AKind(v))
	}
	return member + " is " + jsonv.Quote(v.(string))
}

func isEd25519(alg string) bool {
	switch strings.ToLower(strings.TrimSpace(alg)) {
	case "ed25519", "eddsa":
		return true
	}
	return false
}

// decodeValue reads a signature value: an optional "base64:" or
// "base64url:" prefix, then standard or URL-safe base64, padded or not.
func decodeValue(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, p := range []string{"base64url:", ValuePrefix} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	if s == "" {
		return nil, errors.New("empty")
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}
