package receipt

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/fixtures/receipts"
)

func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("receipt package test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func keySet(t *testing.T, keys ...PublicKey) *KeySet {
	t.Helper()
	s := &KeySet{}
	for _, k := range keys {
		if err := s.Add(k); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func pub(id string, k ed25519.PrivateKey) PublicKey {
	return PublicKey{ID: id, Algorithm: Ed25519, Key: k.Public().(ed25519.PublicKey)}
}

func baseReceipt(t *testing.T) []byte {
	t.Helper()
	b, err := receipts.Read("valid/task-failed.json")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSealThenVerify(t *testing.T) {
	k1, k2 := testKey("one"), testKey("two")
	at := time.Date(2026, 4, 25, 20, 0, 0, 0, time.UTC)
	sealed, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k1, SignedAt: at}, Signer{KeyID: "k2", Key: k2})
	if err != nil {
		t.Fatal(err)
	}
	r := Verify(sealed, Options{Keys: keySet(t, pub("k1", k1), pub("k2", k2))})
	if !r.Valid() {
		t.Fatalf("sealed receipt does not verify: %v", r.Findings)
	}
	var doc struct {
		Chain struct {
			ReceiptHash string `json:"receipt_hash"`
		} `json:"chain"`
		Signatures []map[string]string `json:"signatures"`
	}
	if err := json.Unmarshal(sealed, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Signatures) != 2 || doc.Signatures[0]["signed_at"] != "2026-04-25T20:00:00Z" || doc.Signatures[0]["algorithm"] != "ed25519" {
		t.Errorf("signatures = %v", doc.Signatures)
	}
	// The documented signed bytes: the ASCII hash string, verifiable with
	// nothing but crypto/ed25519.
	sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(doc.Signatures[0]["signature"], "base64:"))
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(k1.Public().(ed25519.PublicKey), []byte(doc.Chain.ReceiptHash), sig) {
		t.Error("signature is not over the ASCII bytes of chain.receipt_hash")
	}
	// Resealing without signers drops the now-stale signatures.
	again, err := Seal(sealed)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(again), `"signatures"`) {
		t.Errorf("Seal without signers kept signatures: %s", again)
	}
	if r := Verify(again, Options{}); !r.Valid() {
		t.Errorf("resealed: %v", r.Findings)
	}
}

func TestSignatureChecks(t *testing.T) {
	k := testKey("one")
	sealed, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k})
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(sealed, &doc); err != nil {
		t.Fatal(err)
	}
	sig := doc["signatures"].([]any)[0].(map[string]any)
	value := sig["signature"].(string)
	raw, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix(value, "base64:"))
	with := func(field string, v any) []byte {
		old := sig[field]
		sig[field] = v
		b, _ := json.Marshal(doc)
		sig[field] = old
		return b
	}
	keys := keySet(t, pub("k1", k), PublicKey{ID: "rsa1", Algorithm: "rs256", Key: []byte{1, 2, 3}})
	cases := []struct {
		name string
		raw  []byte
		keys *KeySet
		want string // finding class, "" for valid
	}{
		{"as sealed", sealed, keys, ""},
		{"unprefixed base64", with("signature", base64.StdEncoding.EncodeToString(raw)), keys, ""},
		{"base64url unpadded", with("signature", base64.RawURLEncoding.EncodeToString(raw)), keys, ""},
		{"base64url: prefix", with("signature", "base64url:"+base64.RawURLEncoding.EncodeToString(raw)), keys, ""},
		{"algorithm EdDSA spelling", with("algorithm", "EdDSA"), keys, ""},
		{"no keys given: skipped", sealed, nil, ""},
		{"unknown key id", with("key_id", "k9"), keys, ClassKeyUnknown},
		{"unsupported algorithm: not checked, not failed", with("algorithm", "es256"), keys, ""},
		{"key listed under another algorithm", with("key_id", "rsa1"), keys, ClassSignatureInvalid},
		{"not base64", with("signature", "base64:!!!"), keys, ClassSignatureInvalid},
		{"truncated", with("signature", "base64:"+base64.StdEncoding.EncodeToString(raw[:40])), keys, ClassSignatureInvalid},
		{"other key's signature", with("signature", "base64:"+base64.StdEncoding.EncodeToString(ed25519.Sign(testKey("two"), []byte("x")))), keys, ClassSignatureInvalid},
		{"entry not an object", func() []byte {
			d := map[string]any{}
			for k, v := range doc {
				d[k] = v
			}
			d["signatures"] = []any{"sig"}
			b, _ := json.Marshal(d)
			return b
		}(), keys, ClassSignatureInvalid},
	}
	for _, c := range cases {
		r := Verify(c.raw, Options{Keys: c.keys})
		classes := map[string]bool{}
		for _, cl := range r.Classes() {
			classes[cl] = true
		}
		delete(classes, ClassSchemaInvalid) // the not-an-object case also breaks the schema
		switch {
		case c.want == "" && len(classes) > 0:
			t.Errorf("%s: findings %v, want none", c.name, r.Findings)
		case c.want != "" && (len(classes) != 1 || !classes[c.want]):
			t.Errorf("%s: findings %v, want exactly %s", c.name, r.Findings, c.want)
		}
	}
}

func TestParseKeySet(t *testing.T) {
	good := base64.RawURLEncoding.EncodeToString(testKey("one").Public().(ed25519.PublicKey))
	padded := base64.StdEncoding.EncodeToString(testKey("two").Public().(ed25519.PublicKey))
	s, err := ParseKeySet([]byte(`{"keys":[{"key_id":"a","algorithm":"ed25519","public_key":"` + good + `"},{"key_id":"b","algorithm":"Ed25519","public_key":"` + padded + `","extra":1}],"x":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Len() != 2 {
		t.Fatalf("Len = %d, want 2", s.Len())
	}
	if k, ok := s.Lookup("b"); !ok || k.Algorithm != Ed25519 {
		t.Errorf("Lookup(b) = %+v, %v", k, ok)
	}
	// The directory round-trips through its own marshalling.
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if s2, err := ParseKeySet(b); err != nil || s2.Len() != 2 || !strings.Contains(string(b), `"object":"receipt_key_directory"`) {
		t.Errorf("round trip: %s, %v", b, err)
	}
	for _, bad := range []string{
		``, `[]`, `{}`, `{"keys":{}}`,
		`{"keys":[{"key_id":"","algorithm":"ed25519","public_key":"` + good + `"}]}`,
		`{"keys":[{"key_id":"a","algorithm":"ed25519","public_key":"AAAA"}]}`,
		`{"keys":[{"key_id":"a","algorithm":"ed25519","public_key":"***"}]}`,
		`{"keys":[{"key_id":"a","algorithm":"ed25519","public_key":"` + good + `"},{"key_id":"a","algorithm":"ed25519","public_key":"` + good + `"}]}`,
		`{"keys":[` + strings.Repeat(`{"key_id":"a","algorithm":"x","public_key":"AA"},`, maxKeys) + `{}]}`,
	} {
		if _, err := ParseKeySet([]byte(bad)); err == nil {
			t.Errorf("ParseKeySet(%.60q) succeeded, want an error", bad)
		}
	}
}

func TestSealRejects(t *testing.T) {
	if _, err := Seal([]byte(`{"a":1}`)); err == nil {
		t.Error("Seal of a receipt without chain succeeded")
	}
	if _, err := Seal([]byte(`[1]`)); err == nil {
		t.Error("Seal of an array succeeded")
	}
	if _, err := Seal(baseReceipt(t), Signer{KeyID: "k", Key: []byte{1}}); err == nil {
		t.Error("Seal with a short private key succeeded")
	}
	if _, err := Seal(baseReceipt(t), Signer{Key: testKey("x")}); err == nil {
		t.Error("Seal with an empty key id succeeded")
	}
}

func TestChainAndMerkle(t *testing.T) {
	b := baseReceipt(t)
	h, err := Hash(b)
	if err != nil {
		t.Fatal(err)
	}
	if r := Verify(b, Options{Previous: "null"}); !r.Valid() || r.Err() != nil {
		t.Errorf("chain start: %v", r.Findings)
	}
	if r := Verify(b, Options{Previous: h}); len(r.Classes()) != 1 || r.Classes()[0] != ClassChainBroken {
		t.Errorf("wrong previous: %v", r.Findings)
	}
	r := Verify(b, Options{MerkleRoot: h})
	if len(r.Classes()) != 1 || r.Classes()[0] != ClassMerkleMismatch {
		t.Errorf("absent merkle_root: %v", r.Findings)
	}
	if err := r.Err(); err == nil || !strings.Contains(err.Error(), "merkle_mismatch: chain.merkle_root is absent") || !strings.Contains(err.Error(), `"rcpt_conform_failed_0001"`) {
		t.Errorf("Err() = %v", err)
	}
	// A chain whose first link is garbage cannot vouch for the second.
	results := VerifyChain([][]byte{[]byte("nonsense"), b}, Options{})
	if results[0].Valid() || results[1].Valid() || results[1].Classes()[0] != ClassChainBroken {
		t.Errorf("chain after garbage: %v / %v", results[0].Findings, results[1].Findings)
	}
}

func readFixture(path string) ([]byte, error) { return receipts.Read(path) }

// TestUncheckedAlgorithmIsReported: a signature in an algorithm we do not
// implement leaves the step skipped with a reason, not silently passed.
func TestUncheckedAlgorithmIsReported(t *testing.T) {
	sealed, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: testKey("one")})
	if err != nil {
		t.Fatal(err)
	}
	es := strings.Replace(string(sealed), `"algorithm":"ed25519"`, `"algorithm":"es256"`, 1)
	r := Verify([]byte(es), Options{Keys: keySet(t, pub("k1", testKey("one")))})
	for _, s := range r.Steps {
		if s.Name == StepSignatures && (!s.Skipped || !strings.Contains(s.Detail, `"es256" not checked`)) {
			t.Errorf("signatures step = %+v, want skipped naming es256", s)
		}
	}
}

// TestSigningProfiles: a signature over either documented signing input
// verifies and is reported with its profile; one over the raw digest or
// over other bytes does not.
func TestSigningProfiles(t *testing.T) {
	k := testKey("one")
	keys := keySet(t, pub("k1", k))
	for _, tc := range []struct {
		profile, want string
	}{{"", ProfileHash}, {ProfileHash, ProfileHash}, {ProfileCanonical, ProfileCanonical}, {ProfileCanonicalWithHash, ProfileCanonicalWithHash}} {
		sealed, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k, Profile: tc.profile})
		if err != nil {
			t.Fatal(err)
		}
		r := Verify(sealed, Options{Keys: keys})
		if !r.Valid() || !slices.Equal(r.SignatureProfiles, []string{tc.want}) {
			t.Errorf("profile %q: findings %v, profiles %v, want valid with [%s]", tc.profile, r.Findings, r.SignatureProfiles, tc.want)
		}
		if r := Verify(sealed, Options{}); r.SignatureProfiles != nil {
			t.Errorf("profile %q without keys: profiles %v, want none (nothing was checked)", tc.profile, r.SignatureProfiles)
		}
	}
	// Both profiles on one receipt are both reported.
	both, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k}, Signer{KeyID: "k2", Key: testKey("two"), Profile: ProfileCanonical})
	if err != nil {
		t.Fatal(err)
	}
	r := Verify(both, Options{Keys: keySet(t, pub("k1", k), pub("k2", testKey("two")))})
	if !r.Valid() || !slices.Equal(r.SignatureProfiles, []string{ProfileHash, ProfileCanonical}) {
		t.Errorf("two profiles: findings %v, profiles %v", r.Findings, r.SignatureProfiles)
	}
	// A canonical-bytes signature covers the content: an edit after sealing
	// breaks it (and the hash), unlike a hash-string signature.
	sealed, _ := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k, Profile: ProfileCanonical})
	edited := strings.Replace(string(sealed), `"rcpt_conform_failed_0001"`, `"rcpt_conform_failed_0002"`, 1)
	if got := Verify([]byte(edited), Options{Keys: keys}).Classes(); !slices.Contains(got, ClassSignatureInvalid) || !slices.Contains(got, ClassHashMismatch) {
		t.Errorf("edited canonical-signed receipt: classes %v, want signature_invalid and hash_mismatch", got)
	}
	if _, err := Seal(baseReceipt(t), Signer{KeyID: "k1", Key: k, Profile: "digest"}); err == nil {
		t.Error("Seal accepted an unknown signing profile")
	}
}
