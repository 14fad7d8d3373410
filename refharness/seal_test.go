package refharness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/internal/receipt"
)

// sealCase is a receipt-shaped document with the awkward values a receipt
// can carry: HTML characters, controls, line separators, non-BMP text and
// member names, numbers of every magnitude, nulls and empty containers.
func sealCase(r *rand.Rand, prev any) map[string]any {
	size := int64(r.IntN(1 << 20))
	floats := []any{}
	for range 8 {
		f := math.Float64frombits(r.Uint64())
		if math.IsNaN(f) || math.IsInf(f, 0) {
			f = 0
		}
		floats = append(floats, f, float64(r.IntN(1000))/1e6, r.Float64()*1e22, r.Float64()*1e-8)
	}
	return map[string]any{
		"schema":     receipt.Format,
		"receipt_id": fmt.Sprintf("receipt_%d", r.Int()),
		"issued_at":  "2026-11-23T10:00:00.123Z",
		"subject":    map[string]any{"object": "task", "id": "task_1"},
		"strings":    []any{"a<b>&c", "tab\tnl\ncr\rbs\\q\"", "\x00\x01\x1f\x7f", "line\u2028para\u2029", "é😀\ufffd", ""},
		"names":      map[string]any{"z": 1, "é": 2, "😀": 3, "\ufb33": 4, "a": 5, "A": 6, "": 7},
		"numbers": map[string]any{"ints": []any{0, -1, 1 << 53, 1<<53 + 1, -(1 << 60), int64(42)}, "floats": floats,
			"size": &size, "nosize": (*int64)(nil), "usd": 1.4e-05, "zero": 0.0, "negzero": math.Copysign(0, -1)},
		"empty":     map[string]any{"list": []any{}, "map": map[string]any{}, "null": nil, "t": true, "f": false},
		"metadata":  map[string]any{"outcome_id": "outcome_1", "note": "issued for <client>"},
		"chain":     map[string]any{"previous_receipt_hash": prev},
		"json_nums": []any{json.Number("1.50"), json.Number("1e2"), json.Number("-0.0")},
	}
}

func TestSealDocMatchesSeal(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	signerSets := map[string][]receipt.Signer{
		"unsigned":  nil,
		"hash":      {{KeyID: "k1", Key: key, SignedAt: at}},
		"canonical": {{KeyID: "k1", Key: key, SignedAt: at, Profile: receipt.ProfileCanonical}},
		"two":       {{KeyID: "k1", Key: key}, {KeyID: "k2", Key: key, Profile: receipt.ProfileHash}},
		"general":   {{KeyID: "k1", Key: key, Profile: receipt.ProfileCanonicalWithHash}},
	}
	for name, signers := range signerSets {
		for i := range 50 {
			prev := any(nil)
			if i%2 == 1 {
				prev = sha256Proof([]byte{byte(i)})
			}
			seed := r.Uint64()
			raw, err := json.Marshal(sealCase(rand.New(rand.NewPCG(seed, 0)), prev))
			if err != nil {
				t.Fatal(err)
			}
			want, err := receipt.Seal(raw, signers...)
			if err != nil {
				t.Fatal(err)
			}
			wantHash, err := receipt.Hash(want)
			if err != nil {
				t.Fatal(err)
			}
			got, hash, err := sealDoc(sealCase(rand.New(rand.NewPCG(seed, 0)), prev), signers)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("%s #%d: sealDoc differs from receipt.Seal\n got %s\nwant %s", name, i, got, want)
			}
			if hash != wantHash {
				t.Fatalf("%s #%d: hash %s, want %s", name, i, hash, wantHash)
			}
		}
	}
}

func TestCanonicalAppendMatchesJCS(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 200 {
		v := sealCase(r, nil)
		raw, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		want, err := jcs.Transform(raw)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := canonicalAppend(nil, v)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("#%d (ok=%v):\n got %s\nwant %s", i, ok, got, want)
		}
		if canonicalProof(v) != jsonProof(v) {
			t.Fatalf("#%d: canonicalProof differs from jsonProof", i)
		}
	}
	// What it does not handle goes the general way.
	for _, v := range []any{"\xff", map[string]any{"\xfe": 1}, math.NaN(), struct{}{}, json.Number("1e999")} {
		if _, ok := canonicalAppend(nil, v); ok {
			t.Errorf("canonicalAppend(%#v) ok, want the general path", v)
		}
	}
}

// TestPresealMatchesSealDoc: sealing in two steps (preseal without the chain
// head, seal with it) gives what sealDoc gives for the whole document.
func TestPresealMatchesSealDoc(t *testing.T) {
	_, key, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(5, 6))
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	signerSets := map[string][]receipt.Signer{
		"unsigned":  nil,
		"hash":      {{KeyID: "k1", Key: key, SignedAt: at}},
		"no-time":   {{KeyID: "k1", Key: key}},
		"canonical": {{KeyID: "k1", Key: key, SignedAt: at, Profile: receipt.ProfileCanonical}},
	}
	for name, signers := range signerSets {
		for i := range 50 {
			prev := any(nil)
			if i%2 == 1 {
				prev = sha256Proof([]byte{byte(i)})
			}
			seed := r.Uint64()
			doc := sealCase(rand.New(rand.NewPCG(seed, 0)), prevMark)
			before, _ := json.Marshal(doc)
			p := preseal(doc, signers)
			if p == nil {
				t.Fatalf("%s #%d: preseal refused a receipt it handles", name, i)
			}
			if after, _ := json.Marshal(doc); !bytes.Equal(before, after) {
				t.Fatalf("%s #%d: preseal changed the document", name, i)
			}
			got, hash, ok := p.seal(prev)
			if !ok {
				t.Fatalf("%s #%d: seal refused %v", name, i, prev)
			}
			want, wantHash, err := sealDoc(sealCase(rand.New(rand.NewPCG(seed, 0)), prev), signers)
			if err != nil {
				t.Fatal(err)
			}
			if got != string(want) || hash != wantHash {
				t.Fatalf("%s #%d: two-step seal differs\n got %s %s\nwant %s %s", name, i, hash, got, wantHash, want)
			}
		}
	}
	// Not for preseal: several signers, other profiles, a mark that is not unique.
	two := []receipt.Signer{{KeyID: "k1", Key: key}, {KeyID: "k2", Key: key}}
	withHash := []receipt.Signer{{KeyID: "k1", Key: key, Profile: receipt.ProfileCanonicalWithHash}}
	dup := sealCase(r, prevMark)
	dup["metadata"].(map[string]any)["copy"] = prevMark
	for name, c := range map[string]struct {
		doc     map[string]any
		signers []receipt.Signer
	}{"two signers": {sealCase(r, prevMark), two}, "canonical with hash": {sealCase(r, prevMark), withHash},
		"mark twice": {dup, nil}, "no mark": {sealCase(r, nil), nil}} {
		if preseal(c.doc, c.signers) != nil {
			t.Errorf("%s: preseal accepted it", name)
		}
	}
}

func TestGoAppendMatchesEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for i := range 200 {
		v := sealCase(r, prevMark)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
		got, ok := goAppend(nil, v)
		if w := bytes.TrimSuffix(want.Bytes(), []byte("\n")); !ok || !bytes.Equal(got, w) {
			t.Fatalf("#%d (ok=%v):\n got %s\nwant %s", i, ok, got, w)
		}
	}
	for _, v := range []any{"\xff", math.Inf(1), json.Number("x"), struct{}{}} {
		if _, ok := goAppend(nil, v); ok {
			t.Errorf("goAppend(%#v) ok, want the general path", v)
		}
	}
}
