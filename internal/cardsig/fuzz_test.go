package cardsig

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"testing"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/fixtures/cards"
	"github.com/harn-conform/conform/internal/receipt"
)

// FuzzVerify feeds hostile JSON to Verify and Sign: neither may panic,
// every finding names one of the two requirements with its class's kind,
// and on any card RFC 8785 accepts the profile's invariants hold: the text
// with the signature members cut out has the same canonical bytes, and a
// card Sign wrote verifies.
func FuzzVerify(f *testing.F) {
	cases, err := cards.Cases()
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		raw, _ := cards.Read(c.File)
		f.Add(raw)
	}
	for _, s := range []string{minimal, `{}`, `{"signature":null}`, `{"signatures":[{},1,"x",null]}`, `{"signature":{"algorithm":"ed25519","key_id":"k1","value":"base64:"}}`, `[]`, `"x"`, `{"a":1e400}`} {
		f.Add([]byte(s))
	}
	k1 := testKey("one")
	ks := keySet(f, map[string]ed25519.PrivateKey{"k1": k1})
	f.Fuzz(func(t *testing.T, raw []byte) {
		for _, keys := range []*receipt.KeySet{nil, ks} {
			res := Verify(raw, keys)
			for _, fd := range res.Findings {
				req, kind, ok := ClassOf(fd.Class)
				if !ok || fd.Requirement != req || fd.Kind != kind {
					t.Fatalf("finding %+v", fd)
				}
			}
			if len(res.Signatures) > MaxSignatures {
				t.Fatalf("%d signatures checked", len(res.Signatures))
			}
		}
		canon, err := Canonical(raw)
		if err != nil {
			return
		}
		cut, err := cutMembers(raw, MemberSignature, MemberSignatures)
		if err != nil {
			t.Fatalf("Canonical accepts %q but cutMembers fails: %v", raw, err)
		}
		if c2, err := jcs.Transform(cut); err != nil || !bytes.Equal(c2, canon) {
			t.Fatalf("cut text %q canonicalizes to %q (%v), want %q", cut, c2, err, canon)
		}
		signed, err := Sign(raw, k1, "k1")
		if err != nil {
			t.Fatalf("Sign: %v", err)
		}
		if !json.Valid(signed) {
			t.Fatalf("Sign wrote %q", signed)
		}
		if res := Verify(signed, ks); !res.Valid() || len(res.Findings) != 0 {
			t.Fatalf("Verify(Sign(%q)) = %+v", raw, res)
		}
	})
}
