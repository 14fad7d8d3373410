package receipt

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Ed25519 is the algorithm name written in signatures[].algorithm and in key
// directories. It is the only algorithm this verifier implements; names are
// compared case-insensitively and "EdDSA" is read as a synonym, because
// implementers reasonably spell it either way.
const Ed25519 = "ed25519"

// SignatureEncodingPrefix starts every signature value Seal writes: the 64
// signature bytes follow in standard, padded base64 (RFC 4648 §4). Verify
// also accepts the value without the prefix, with a "base64url:" prefix, in
// the URL-safe alphabet and unpadded.
const SignatureEncodingPrefix = "base64:"

func canonicalAlgorithm(name string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "ed25519", "eddsa":
		return Ed25519, true
	}
	return name, false
}

// SignedBytes returns the bytes a signature of ProfileHash covers: the
// ASCII bytes of the receipt hash string itself, "sha256:" plus 64
// lowercase hex digits (71 bytes), not the raw 32-byte digest. Signing the
// printed form keeps the algorithm name inside the signed bytes.
func SignedBytes(receiptHash string) []byte { return []byte(receiptHash) }

// Signing profiles: the signing inputs the protocol's wording allows
// ("canonicalize receipt JSON with RFC 8785 before hashing or signing"):
// the stored hash text, or "the canonical receipt" without its signatures,
// with or without chain.receipt_hash. A verifier accepts a signature over
// any of them and reports which it found (docs/receipts.md §3).
const (
	// ProfileHash signs SignedBytes(chain.receipt_hash): the ASCII text of
	// the stored hash. What Seal writes by default.
	ProfileHash = "hash"
	// ProfileCanonical signs the RFC 8785 canonical bytes of the receipt
	// without chain.receipt_hash and signatures: exactly the hash input
	// (what Canonical returns and `conform receipt verify --canonical`
	// prints).
	ProfileCanonical = "canonical"
	// ProfileCanonicalWithHash signs the RFC 8785 canonical bytes of the
	// receipt without signatures but with chain.receipt_hash.
	ProfileCanonicalWithHash = "canonical-with-hash"
)

// PublicKey is one entry of a key directory.
type PublicKey struct {
	ID        string // key_id, as receipts name it in signatures[].key_id
	Algorithm string // "ed25519"
	Key       []byte // raw public key bytes (32 for ed25519)
}

// KeySet holds the public keys a target publishes, by key id. The zero value
// is empty and usable.
type KeySet struct {
	byID map[string]PublicKey
}

// Add inserts a key; ids must be unique and ed25519 keys 32 bytes long.
// Keys of other algorithms are kept so verification can say the algorithm
// is unsupported rather than that the key is unknown.
func (s *KeySet) Add(k PublicKey) error {
	if strings.TrimSpace(k.ID) == "" {
		return errors.New("key has an empty key_id")
	}
	if alg, ok := canonicalAlgorithm(k.Algorithm); ok {
		k.Algorithm = alg
		if len(k.Key) != ed25519.PublicKeySize {
			return fmt.Errorf("key %q: ed25519 public key is %d bytes, want %d", k.ID, len(k.Key), ed25519.PublicKeySize)
		}
	}
	if s.byID == nil {
		s.byID = map[string]PublicKey{}
	}
	if _, dup := s.byID[k.ID]; dup {
		return fmt.Errorf("key %q listed twice", k.ID)
	}
	s.byID[k.ID] = k
	return nil
}

// Lookup returns the key with the given id.
func (s *KeySet) Lookup(id string) (PublicKey, bool) {
	if s == nil {
		return PublicKey{}, false
	}
	k, ok := s.byID[id]
	return k, ok
}

// Len is the number of keys.
func (s *KeySet) Len() int {
	if s == nil {
		return 0
	}
	return len(s.byID)
}

// directory is the published key directory document (docs/receipts.md).
type directory struct {
	Object string         `json:"object,omitempty"`
	Keys   []directoryKey `json:"keys"`
}

type directoryKey struct {
	KeyID     string `json:"key_id"`
	Algorithm string `json:"algorithm"`
	PublicKey string `json:"public_key"`
}

// DirectoryObject is the "object" value of a key directory document.
const DirectoryObject = "receipt_key_directory"

// maxKeys bounds a key directory so a hostile one cannot make us allocate
// without limit.
const maxKeys = 1024

// ParseKeySet reads a key directory document:
//
//	{"object":"receipt_key_directory","keys":[{"key_id":"…","algorithm":"ed25519","public_key":"<base64url>"}]}
//
// public_key is the raw key in unpadded base64url (as in an OKP JWK's "x");
// padded and standard-alphabet spellings are accepted too. "object" is
// optional and unknown members are ignored, as the protocol asks clients to.
func ParseKeySet(raw []byte) (*KeySet, error) {
	var d directory
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("key directory: %v", err)
	}
	if d.Keys == nil {
		return nil, errors.New(`key directory: no "keys" array`)
	}
	if len(d.Keys) > maxKeys {
		return nil, fmt.Errorf("key directory: %d keys, at most %d accepted", len(d.Keys), maxKeys)
	}
	s := &KeySet{}
	for i, k := range d.Keys {
		key, err := decodeBase64(k.PublicKey)
		if err != nil {
			return nil, fmt.Errorf("key directory: keys[%d] (%q): public_key: %v", i, k.KeyID, err)
		}
		if err := s.Add(PublicKey{ID: k.KeyID, Algorithm: k.Algorithm, Key: key}); err != nil {
			return nil, fmt.Errorf("key directory: keys[%d]: %v", i, err)
		}
	}
	return s, nil
}

// MarshalJSON writes the key directory document, keys sorted by id.
func (s *KeySet) MarshalJSON() ([]byte, error) {
	d := directory{Object: DirectoryObject, Keys: []directoryKey{}}
	if s != nil {
		for _, k := range s.byID {
			d.Keys = append(d.Keys, directoryKey{
				KeyID:     k.ID,
				Algorithm: k.Algorithm,
				PublicKey: base64.RawURLEncoding.EncodeToString(k.Key),
			})
		}
	}
	sort.Slice(d.Keys, func(i, j int) bool { return d.Keys[i].KeyID < d.Keys[j].KeyID })
	return json.Marshal(d)
}

// decodeBase64 accepts standard or URL-safe base64, padded or not.
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, errors.New("empty")
	}
	s = strings.TrimRight(s, "=")
	if strings.ContainsAny(s, "-_") {
		return base64.RawURLEncoding.DecodeString(s)
	}
	return base64.RawStdEncoding.DecodeString(s)
}

// decodeSignature strips an optional "base64:"/"base64url:" prefix.
func decodeSignature(s string) ([]byte, error) {
	for _, p := range []string{"base64url:", SignatureEncodingPrefix} {
		if strings.HasPrefix(s, p) {
			s = s[len(p):]
			break
		}
	}
	return decodeBase64(s)
}

// Signer is an issuer key used by Seal.
type Signer struct {
	KeyID    string
	Key      ed25519.PrivateKey
	SignedAt time.Time // written as signed_at when not zero
	// Profile is the signing input: ProfileHash ("" means the same) or
	// ProfileCanonical.
	Profile string
}

// Seal makes raw a verifiable receipt: it computes the receipt hash, stores
// it in chain.receipt_hash, and replaces signatures with one ed25519
// signature per signer over its profile's signing input (SignedBytes(hash)
// by default, or the canonical hash input). With no signers it removes
// signatures, since any old ones would cover a stale hash. The result is
// compact JSON with members in Go's (code-point) order; number literals are
// kept as written, so a receipt can be sealed without being canonicalized.
func Seal(raw []byte, signers ...Signer) ([]byte, error) {
	// parseObject enforces what RFC 8785 accepts (one object, no duplicate
	// members, representable numbers); the object itself is decoded again
	// from raw, not from its canonical form, so number spellings survive.
	if _, err := parseObject(raw); err != nil {
		return nil, err
	}
	v, err := jsonv.Decode(raw)
	if err != nil {
		return nil, err
	}
	obj := v.(map[string]any)
	chain, ok := obj["chain"].(map[string]any)
	if !ok {
		return nil, errors.New("seal: receipt has no chain object")
	}
	in, err := hashInput(obj)
	if err != nil {
		return nil, err
	}
	h := digest(in)
	chain["receipt_hash"] = h
	delete(obj, "signatures")
	if len(signers) > 0 {
		sigs := make([]any, 0, len(signers))
		for _, s := range signers {
			if s.KeyID == "" {
				return nil, errors.New("seal: signer has an empty key id")
			}
			if len(s.Key) != ed25519.PrivateKeySize {
				return nil, fmt.Errorf("seal: signer %q: private key is %d bytes, want %d", s.KeyID, len(s.Key), ed25519.PrivateKeySize)
			}
			msg := SignedBytes(h)
			switch s.Profile {
			case "", ProfileHash:
			case ProfileCanonical:
				msg = in
			case ProfileCanonicalWithHash:
				if msg, err = canonicalWithHash(obj); err != nil {
					return nil, err
				}
			default:
				return nil, fmt.Errorf("seal: signer %q: unknown signing profile %q, want %q, %q or %q", s.KeyID, s.Profile, ProfileHash, ProfileCanonical, ProfileCanonicalWithHash)
			}
			sig := map[string]any{
				"key_id":    s.KeyID,
				"algorithm": Ed25519,
				"signature": SignatureEncodingPrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, msg)),
			}
			if !s.SignedAt.IsZero() {
				sig["signed_at"] = s.SignedAt.UTC().Format(time.RFC3339)
			}
			sigs = append(sigs, sig)
		}
		obj["signatures"] = sigs
	}
	return jsonv.Marshal(obj)
}
