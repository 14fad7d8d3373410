package cardsig

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/cards"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/receipt"
)

func testKey(label string) ed25519.PrivateKey {
	seed := sha256.Sum256([]byte("cardsig test key: " + label))
	return ed25519.NewKeyFromSeed(seed[:])
}

func keySet(t testing.TB, keys map[string]ed25519.PrivateKey) *receipt.KeySet {
	t.Helper()
	ks := &receipt.KeySet{}
	for id, k := range keys {
		if err := ks.Add(receipt.PublicKey{ID: id, Algorithm: Ed25519, Key: k.Public().(ed25519.PublicKey)}); err != nil {
			t.Fatal(err)
		}
	}
	return ks
}

// TestFixtures verifies every case of fixtures/cards and requires exactly
// its finding classes, its verdicts and, for signed cards, exactly the
// stored signed bytes and their digest.
func TestFixtures(t *testing.T) {
	cases, err := cards.Cases()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			raw, err := cards.Read(c.File)
			if err != nil {
				t.Fatal(err)
			}
			var ks *receipt.KeySet
			if c.Keys != "" {
				b, err := cards.Read(c.Keys)
				if err != nil {
					t.Fatal(err)
				}
				if ks, err = receipt.ParseKeySet(b); err != nil {
					t.Fatal(err)
				}
			}
			res := Verify(raw, ks)
			if got := res.ClassList(); !slices.Equal(got, c.Findings) && !(len(got) == 0 && len(c.Findings) == 0) {
				t.Errorf("Verify(%s) classes = %v, want %v\n%v", c.File, got, c.Findings, res.Findings)
			}
			if res.Verified() != c.Verified || res.Valid() != c.Valid {
				t.Errorf("Verify(%s): verified %v valid %v, want %v %v\n%+v", c.File, res.Verified(), res.Valid(), c.Verified, c.Valid, res.Signatures)
			}
			if res.Digest != c.Digest {
				t.Errorf("Verify(%s).Digest = %q, want %q", c.File, res.Digest, c.Digest)
			}
			for _, f := range res.Findings {
				req, kind, ok := ClassOf(f.Class)
				if !ok || f.Requirement != req || f.Kind != kind {
					t.Errorf("finding %+v: want requirement %s kind %s", f, req, kind)
				}
			}
			if c.Canonical != "" {
				want, err := cards.Read(c.Canonical)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(res.Canonical, want) {
					t.Errorf("Verify(%s).Canonical differs from %s:\n%s", c.File, c.Canonical, res.Canonical)
				}
				if Digest(want) != c.Digest {
					t.Errorf("%s: digest of %s is %s, manifest says %s", c.Name, c.Canonical, Digest(want), c.Digest)
				}
			}
			if err := res.Err(ReqSignature); (err == nil) != (len(res.Failures(ReqSignature)) == 0) {
				t.Errorf("Err(%s) = %v with failures %v", ReqSignature, err, res.Failures(ReqSignature))
			}
		})
	}
}

// The finding of a signature over the wrong bytes says which bytes.
func TestFixtureHints(t *testing.T) {
	keys, _ := cards.Read("keys/card-keys.json")
	ks, err := receipt.ParseKeySet(keys)
	if err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{
		"invalid/raw-json.json":  "JSON text as served",
		"invalid/tampered.json":  "does not verify over the card's canonical bytes",
		"invalid/wrong-key.json": "does not verify",
	} {
		raw, _ := cards.Read(file)
		fs := Verify(raw, ks).Failures(ReqSignature)
		if len(fs) != 1 || !strings.Contains(fs[0].Message, want) {
			t.Errorf("%s: failures %v, want one saying %q", file, fs, want)
		}
		if file != "invalid/raw-json.json" && strings.Contains(fs[0].Message, "JSON text as served") {
			t.Errorf("%s: hint about raw JSON on a signature that is not over it: %s", file, fs[0].Message)
		}
	}
}

// The valid fixtures are HarnAgentCards by the OpenAPI document; the
// shapes that break its CardSignature (required algorithm, key_id, value)
// are the ones the profile fails too.
func TestFixturesAgainstOpenAPI(t *testing.T) {
	doc, err := openapi.Default()
	if err != nil {
		t.Fatal(err)
	}
	cases, err := cards.Cases()
	if err != nil {
		t.Fatal(err)
	}
	breaksSchema := map[string]bool{"no-key-id": true, "no-algorithm": true, "no-value": true, "signature-not-object": true}
	for _, c := range cases {
		raw, _ := cards.Read(c.File)
		vs := doc.ValidateComponent("HarnAgentCard", c.File, raw)
		if breaksSchema[c.Name] != (len(vs) > 0) {
			t.Errorf("%s: OpenAPI violations %v, want some: %v", c.Name, vs, breaksSchema[c.Name])
		}
	}
}

const minimal = `{"object":"harn_agent_card","id":"c1","name":"n","description":"d","protocol_version":"v","a2a_card":{"signatures":[{"protected":"p","signature":"s"}]},"skills":[],"n":1.0}`

func TestSignVerifyRoundTrip(t *testing.T) {
	k1, k2 := testKey("one"), testKey("two")
	ks := keySet(t, map[string]ed25519.PrivateKey{"k1": k1, "k2": k2})
	signed, err := Sign([]byte(minimal), k1, "k1")
	if err != nil {
		t.Fatal(err)
	}
	if res := Verify(signed, ks); !res.Valid() || len(res.Findings) != 0 {
		t.Fatalf("Verify(Sign(card)) = %+v", res)
	}
	// Signing again replaces the signature; the text before it is kept.
	again, err := SignAll(signed, Signer{"k2", k2}, Signer{"k1", k1})
	if err != nil {
		t.Fatal(err)
	}
	res := Verify(again, ks)
	if !res.Valid() || len(res.Signatures) != 2 || res.Signatures[0].KeyID != "k2" || res.Signatures[1].Pointer != "/signatures/0" {
		t.Fatalf("Verify(SignAll) = %+v", res)
	}
	if !bytes.HasPrefix(again, []byte(minimal[:len(minimal)-1])) {
		t.Errorf("SignAll did not keep the card's text:\n%s", again)
	}
	stripped, err := Attach(again)
	if err != nil {
		t.Fatal(err)
	}
	if string(stripped) != minimal {
		t.Errorf("Attach() = %s, want the unsigned text back", stripped)
	}
	if res := Verify(stripped, ks); res.Signed || !slices.Equal(res.ClassList(), []string{ClassUnsigned}) {
		t.Errorf("unsigned card: %+v", res)
	}
	if _, err := Sign([]byte(minimal), k1, " "); err == nil {
		t.Error("Sign with an empty key id succeeded")
	}
	if _, err := Sign([]byte(`[1]`), k1, "k1"); err == nil {
		t.Error("Sign of an array succeeded")
	}
	if _, err := SignAll([]byte(minimal)); err == nil {
		t.Error("SignAll without signers succeeded")
	}
}

// Only the top-level signature members are left out of the signed bytes:
// the A2A card's own signatures stay in.
func TestCanonicalLeavesOutTopLevelSignaturesOnly(t *testing.T) {
	base, err := Canonical([]byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(base, []byte(`"a2a_card":{"signatures":[`)) || !bytes.Contains(base, []byte(`"n":1,`)) {
		t.Errorf("Canonical = %s", base)
	}
	for _, extra := range []string{`"signature":null`, `"signature":{"x":1}`, `"signatures":[]`, `"signatures":"junk","signature":7`} {
		with := strings.TrimSuffix(minimal, "}") + "," + extra + "}"
		got, err := Canonical([]byte(with))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, base) {
			t.Errorf("Canonical with %s = %s, want %s", extra, got, base)
		}
	}
}

func TestCutAndSpliceKeepText(t *testing.T) {
	for _, text := range []string{
		`{}`, ` { } `, `{"a":1}`, "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n", `{"signature":1,"a":2}`, `{"a":1,"signature":2,"b":3}`,
		`{"signature":1}`, `{"signatures":[],"signature":{},"x":"\u0073ignature"}`, `{"\u0073ignature":1,"a":2}`,
	} {
		cut, err := cutMembers([]byte(text), MemberSignature, MemberSignatures)
		if err != nil {
			t.Fatalf("cutMembers(%q): %v", text, err)
		}
		if !json.Valid(cut) {
			t.Errorf("cutMembers(%q) = %q, not JSON", text, cut)
		}
		var m map[string]any
		json.Unmarshal(cut, &m)
		if _, ok := m[MemberSignature]; ok {
			t.Errorf("cutMembers(%q) = %q keeps a signature", text, cut)
		}
		sp, err := splice(cut, []member{{MemberSignature, []byte(`{"v":1}`)}})
		if err != nil || !json.Valid(sp) {
			t.Fatalf("splice(%q) = %q, %v", cut, sp, err)
		}
		back, _ := cutMembers(sp, MemberSignature)
		if !bytes.Equal(back, cut) {
			t.Errorf("cut(splice(%q)) = %q", cut, back)
		}
	}
}

func TestVerifyFindings(t *testing.T) {
	k1, other := testKey("one"), testKey("other")
	ks := keySet(t, map[string]ed25519.PrivateKey{"k1": k1})
	canon, _ := Canonical([]byte(minimal))
	sig := ed25519.Sign(k1, canon)
	good := base64.StdEncoding.EncodeToString(sig)
	with := func(members string) string { return strings.TrimSuffix(minimal, "}") + "," + members + "}" }
	es256 := &receipt.KeySet{}
	es256.Add(receipt.PublicKey{ID: "k1", Algorithm: "ES256", Key: []byte{1, 2, 3}})
	many := make([]string, MaxSignatures+1)
	for i := range many {
		many[i] = fmt.Sprintf(`{"algorithm":"ed25519","key_id":"k1","value":%q}`, good)
	}
	for _, tc := range []struct {
		name, card string
		keys       *receipt.KeySet
		classes    []string
		verified   bool
	}{
		{"eddsa spelling, unprefixed value", with(`"signature":{"algorithm":"EdDSA","key_id":"k1","value":"` + good + `"}`), ks, nil, true},
		{"base64url unpadded", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"base64url:` + base64.RawURLEncoding.EncodeToString(sig) + `"}`), ks, nil, true},
		{"algorithm not a string", with(`"signature":{"algorithm":1,"key_id":"k1","value":"` + good + `"}`), ks, []string{ClassAlgorithmMissing}, true},
		{"empty key id", with(`"signature":{"algorithm":"ed25519","key_id":" ","value":"` + good + `"}`), ks, []string{ClassKeyIDMissing}, true},
		{"both names missing", with(`"signature":{"value":"` + good + `"}`), ks, []string{ClassAlgorithmMissing, ClassKeyIDMissing}, true},
		{"no key id, unpublished key", with(`"signature":{"algorithm":"ed25519","value":"` + EncodeValue(ed25519.Sign(other, canon)) + `"}`), ks, []string{ClassKeyIDMissing, ClassKeyUnknown}, false},
		{"short value", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"base64:AAAA"}`), ks, []string{ClassSignatureInvalid}, false},
		{"not base64", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"!!"}`), ks, []string{ClassSignatureInvalid}, false},
		{"signatures not an array", with(`"signatures":{"a":1}`), ks, []string{ClassSignatureMalformed}, false},
		{"signatures entry not an object", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"` + good + `"},"signatures":[3]`), ks, []string{ClassSignatureMalformed}, true},
		{"too many", with(`"signatures":[` + strings.Join(many, ",") + `]`), ks, []string{ClassTooManySignatures}, true},
		{"key listed in another algorithm", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"` + good + `"}`), es256, []string{ClassSignatureInvalid}, false},
		{"no algorithm, key listed in another", with(`"signature":{"key_id":"k1","value":"` + good + `"}`), es256, []string{ClassAlgorithmMissing, ClassAlgorithmUnsupported}, false},
		{"other algorithm, other size", with(`"signature":{"algorithm":"RS256","key_id":"k1","value":"AAAA"}`), ks, []string{ClassAlgorithmUnsupported}, false},
		{"no keys", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"` + good + `"}`), nil, []string{ClassNoKeys}, false},
		{"empty directory", with(`"signature":{"algorithm":"ed25519","key_id":"k1","value":"` + good + `"}`), &receipt.KeySet{}, []string{ClassKeyUnknown}, false},
		{"top-level array", `[{"signature":1}]`, ks, []string{ClassJSONInvalid}, false},
		{"not JSON", `{"a":`, ks, []string{ClassJSONInvalid}, false},
		{"empty", ``, ks, []string{ClassJSONInvalid}, false},
		{"too large", `{"a":"` + strings.Repeat("x", MaxCardBytes) + `"}`, ks, []string{ClassJSONInvalid}, false},
		{"deep nesting", strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000), ks, []string{ClassUnsigned}, false},
		{"too deep", strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000), ks, []string{ClassJSONInvalid}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Verify([]byte(tc.card), tc.keys)
			if got := res.ClassList(); !slices.Equal(got, tc.classes) {
				t.Errorf("classes = %v, want %v\n%v", got, tc.classes, res.Findings)
			}
			if res.Verified() != tc.verified {
				t.Errorf("verified = %v, want %v: %+v", res.Verified(), tc.verified, res.Signatures)
			}
			for _, f := range res.Findings {
				if len(f.Message) > maxMessage+40 {
					t.Errorf("message of %d bytes", len(f.Message))
				}
			}
		})
	}
}

func TestErrNamesRequirement(t *testing.T) {
	res := Verify([]byte(minimal), nil)
	err := res.Err(ReqSignature)
	if err == nil || !strings.Contains(err.Error(), "): unsigned: the card carries no signature") {
		t.Errorf("Err = %v", err)
	}
	if res.Err(ReqNames) != nil {
		t.Errorf("Err(%s) of an unsigned card = %v, want nil", ReqNames, res.Err(ReqNames))
	}
}
