package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/internal/jsonv"
)

// HashPrefix starts every receipt hash: "sha256:" then 64 lowercase hex digits.
const HashPrefix = "sha256:"

// canonicalize is RFC 8785 (JCS) on arbitrary JSON text. It is the single
// path every hash in this package goes through, so the RFC's own test
// vectors exercise exactly what verification uses. The jcs package also
// refuses what I-JSON forbids (duplicate member names, invalid UTF-8, lone
// surrogates, excessive nesting), which encoding/json would silently accept
// or repair.
func canonicalize(doc []byte) ([]byte, error) {
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, errors.New("empty input, want a JSON object")
	}
	out, err := jcs.Transform(doc)
	if err != nil {
		return nil, fmt.Errorf("not canonicalizable JSON (RFC 8785): %v", err)
	}
	return out, nil
}

// parseObject canonicalizes raw (rejecting what JCS rejects) and decodes it
// as a top-level JSON object. Numbers stay as written (jsonv.Decode), so
// that re-encoding (jsonv.Marshal, whose unescaped "<>&" only keep the
// intermediate bytes readable) cannot change them before the second
// canonicalization.
func parseObject(raw []byte) (map[string]any, error) {
	canon, err := canonicalize(raw)
	if err != nil {
		return nil, err
	}
	v, err := jsonv.Decode(canon)
	if err != nil {
		return nil, err
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("top-level value is %s, want a JSON object", jsonv.AKind(v))
	}
	return obj, nil
}

// hashInput returns the bytes a receipt hash covers: the receipt with
// chain.receipt_hash and the top-level signatures removed, canonicalized with
// RFC 8785. Everything else, chain.merkle_root and
// chain.previous_receipt_hash included, stays in.
func hashInput(obj map[string]any) ([]byte, error) {
	trimmed := make(map[string]any, len(obj))
	for k, v := range obj {
		if k == "signatures" {
			continue
		}
		trimmed[k] = v
	}
	if chain, ok := obj["chain"].(map[string]any); ok {
		c := make(map[string]any, len(chain))
		for k, v := range chain {
			if k != "receipt_hash" {
				c[k] = v
			}
		}
		trimmed["chain"] = c
	}
	b, err := jsonv.Marshal(trimmed)
	if err != nil {
		return nil, err
	}
	return canonicalize(b)
}

// canonicalWithHash returns the receipt without signatures, chain.receipt_hash
// kept, in RFC 8785 form: the input of ProfileCanonicalWithHash signatures.
func canonicalWithHash(obj map[string]any) ([]byte, error) {
	trimmed := make(map[string]any, len(obj))
	for k, v := range obj {
		if k != "signatures" {
			trimmed[k] = v
		}
	}
	b, err := jsonv.Marshal(trimmed)
	if err != nil {
		return nil, err
	}
	return canonicalize(b)
}

// Canonical returns the exact bytes a receipt's hash is computed over:
// raw with chain.receipt_hash and signatures removed, in RFC 8785 form.
func Canonical(raw []byte) ([]byte, error) {
	obj, err := parseObject(raw)
	if err != nil {
		return nil, err
	}
	return hashInput(obj)
}

// Hash returns the receipt hash of raw as "sha256:<64 lowercase hex>".
func Hash(raw []byte) (string, error) {
	c, err := Canonical(raw)
	if err != nil {
		return "", err
	}
	return digest(c), nil
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return HashPrefix + hex.EncodeToString(sum[:])
}
