package receipt_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/receipts"
	"github.com/harn-conform/conform/internal/receipt"
)

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := receipts.Read(path)
	if err != nil {
		t.Fatalf("fixture %s: %v", path, err)
	}
	return b
}

func options(t *testing.T, c receipts.Case) receipt.Options {
	t.Helper()
	opts := receipt.Options{MerkleRoot: c.MerkleRoot}
	if c.Keys != "" {
		ks, err := receipt.ParseKeySet(mustRead(t, c.Keys))
		if err != nil {
			t.Fatalf("key directory %s: %v", c.Keys, err)
		}
		opts.Keys = ks
	}
	return opts
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestFixtures verifies every fixture case and demands exactly the finding
// classes cases.json lists, and for valid receipts that the stored
// canonical bytes are byte-for-byte what the hash covers.
func TestFixtures(t *testing.T) {
	cases, err := receipts.Cases()
	if err != nil {
		t.Fatal(err)
	}
	if len(cases) < 15 {
		t.Fatalf("cases.json has %d cases, want at least 15", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			opts := options(t, c)
			raws := make([][]byte, len(c.Files))
			for i, f := range c.Files {
				raws[i] = mustRead(t, f.Path)
			}
			var results []receipt.Result
			if c.Chain {
				results = receipt.VerifyChain(raws, opts)
			} else {
				for _, raw := range raws {
					results = append(results, receipt.Verify(raw, opts))
				}
			}
			for i, f := range c.Files {
				r := results[i]
				if got, want := strings.Join(sorted(r.Classes()), ","), strings.Join(sorted(f.Findings), ","); got != want {
					t.Errorf("%s: finding classes = [%s], want [%s]; findings:\n%v", f.Path, got, want, r.Findings)
				}
				if r.Valid() != (len(f.Findings) == 0) {
					t.Errorf("%s: Valid() = %v with findings %v", f.Path, r.Valid(), r.Findings)
				}
				if f.Canonical == "" {
					continue
				}
				want := mustRead(t, f.Canonical)
				if !bytes.Equal(r.Canonical, want) {
					t.Errorf("%s: canonical bytes differ from %s:\n got %s\nwant %s", f.Path, f.Canonical, r.Canonical, want)
				}
				if r.Computed != r.Stored && len(f.Findings) == 0 {
					t.Errorf("%s: computed %s, stored %s", f.Path, r.Computed, r.Stored)
				}
			}
		})
	}
}

// TestFixtureFindingMessages pins what the messages must say for the
// classes a user most needs to act on.
func TestFixtureFindingMessages(t *testing.T) {
	cases := []struct {
		file, keys, want string
	}{
		{"invalid/tampered.json", "", "stored sha256:"},
		{"invalid/unknown-top-level-field.json", "", "x_vendor_extension"},
		{"invalid/signed-wrong-bytes.json", "keys/fixture-keys.json", "raw 32-byte digest"},
		{"invalid/unknown-key.json", "keys/fixture-keys.json", `"key_not_in_directory"`},
		{"invalid/secret-material.json", "", "/metadata/connector/api_key"},
		{"invalid/secret-material.json", "", "PEM private key"},
	}
	for _, c := range cases {
		var opts receipt.Options
		if c.keys != "" {
			ks, err := receipt.ParseKeySet(mustRead(t, c.keys))
			if err != nil {
				t.Fatal(err)
			}
			opts.Keys = ks
		}
		r := receipt.Verify(mustRead(t, c.file), opts)
		if all := fmt.Sprint(r.Findings); !strings.Contains(all, c.want) {
			t.Errorf("%s: findings %s do not mention %q", c.file, all, c.want)
		}
	}
	// The secret value itself must never be echoed.
	r := receipt.Verify(mustRead(t, "invalid/secret-material.json"), receipt.Options{})
	if all := fmt.Sprint(r.Findings, r.Steps); strings.Contains(all, "fixture-not-a-real-key") || strings.Contains(all, "not a key") {
		t.Errorf("findings echo the secret: %s", all)
	}
}

// leaves returns the JSON pointer of every scalar in v.
func leaves(ptr string, v any) []string {
	switch x := v.(type) {
	case map[string]any:
		var out []string
		for k, c := range x {
			out = append(out, leaves(ptr+"/"+k, c)...)
		}
		return out
	case []any:
		var out []string
		for i, c := range x {
			out = append(out, leaves(fmt.Sprintf("%s/%d", ptr, i), c)...)
		}
		return out
	}
	return []string{ptr}
}

// mutate changes one byte of the scalar at ptr (keys here never contain
// "/"): the last character of a string, the last digit of a number, a boolean's
// first letter (true→false), or null→0.
func mutate(v any, ptr string) any {
	parts := strings.Split(ptr, "/")[1:]
	var set func(cur any, i int) any
	set = func(cur any, i int) any {
		if i == len(parts) {
			switch x := cur.(type) {
			case string:
				b := []byte(x)
				if len(b) == 0 {
					return "x"
				}
				b[len(b)-1] ^= 0x01
				if b[len(b)-1] >= 0x80 || b[len(b)-1] < 0x20 { // keep it valid UTF-8 text
					b[len(b)-1] = 'q'
				}
				return string(b)
			case json.Number:
				// Change one digit, the last one whose change alters the
				// value (JCS compares IEEE doubles: the 40th digit of a long
				// decimal may not matter, and a leading zero must stay).
				orig, _ := strconv.ParseFloat(x.String(), 64)
				for j := len(x.String()) - 1; j >= 0; j-- {
					s := []byte(x.String())
					if s[j] < '0' || s[j] > '9' {
						continue
					}
					if s[j] == '9' {
						s[j] = '8'
					} else {
						s[j]++
					}
					if f, err := strconv.ParseFloat(string(s), 64); err == nil && f != orig {
						return json.Number(s)
					}
				}
				return json.Number("12345")
			case bool:
				return !x
			case nil:
				return json.Number("0")
			}
			return cur
		}
		switch x := cur.(type) {
		case map[string]any:
			x[parts[i]] = set(x[parts[i]], i+1)
			return x
		case []any:
			var n int
			fmt.Sscan(parts[i], &n)
			x[n] = set(x[n], i+1)
			return x
		}
		return cur
	}
	return set(v, 0)
}

func decode(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOneByteChangeBreaksHash changes every field of every valid fixture,
// one at a time, and requires the hash to change and verification to report
// a mismatch. Only chain.receipt_hash and signatures are outside the hash.
func TestOneByteChangeBreaksHash(t *testing.T) {
	cases, err := receipts.Cases()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	checked := 0
	for _, c := range cases {
		for _, f := range c.Files {
			if len(f.Findings) > 0 || seen[f.Path] {
				continue
			}
			seen[f.Path] = true
			raw := mustRead(t, f.Path)
			orig, err := receipt.Hash(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, ptr := range leaves("", decode(t, raw)) {
				if ptr == "/chain/receipt_hash" || strings.HasPrefix(ptr, "/signatures/") {
					continue
				}
				doc := mutate(decode(t, raw), ptr)
				changed, err := json.Marshal(doc)
				if err != nil {
					t.Fatal(err)
				}
				h, err := receipt.Hash(changed)
				if err != nil {
					t.Errorf("%s %s: Hash: %v", f.Path, ptr, err)
					continue
				}
				if h == orig {
					t.Errorf("%s: changing %s left the hash at %s", f.Path, ptr, h)
				}
				r := receipt.Verify(changed, receipt.Options{})
				if !slices.Contains(r.Classes(), receipt.ClassHashMismatch) {
					t.Errorf("%s: changing %s: classes %v, want %s", f.Path, ptr, r.Classes(), receipt.ClassHashMismatch)
				}
				checked++
			}
		}
	}
	if checked < 200 {
		t.Errorf("only %d field changes checked, want at least 200", checked)
	}
}
