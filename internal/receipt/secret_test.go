package receipt

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/jsonv"
)

func TestFindSecrets(t *testing.T) {
	cases := []struct {
		doc  string
		want []string // substrings, one per expected finding
	}{
		{`{"metadata":{"access_token":"ya29.a0AfH6SMB"}}`, []string{`/metadata/access_token: member "access_token"`}},
		{`{"x":{"Client-Secret":"s3cr3t"}}`, []string{`/x/Client-Secret`}},
		{`{"x":{"password":12345}}`, []string{`value (a number)`}},
		{`{"x":{"PRIVATE_KEY":"abc"}}`, []string{`/x/PRIVATE_KEY`}},
		{`{"x":"-----BEGIN RSA PRIVATE KEY-----\nMIIB"}`, []string{`PEM private key`}},
		{`{"x":"-----BEGIN OPENSSH PRIVATE KEY-----"}`, []string{`PEM private key`}},
		{`{"x":["curl -H 'Authorization: Bearer abcdefghijklmnop0123'"]}`, []string{`/x/0: string contains a bearer credential`}},
		{`{"x":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"}`, []string{`JSON Web Token`}},
		{`{"x":"token ghp_abcdefghijklmnopqrstuvwxyz0123456789"}`, []string{`GitHub token`}},
		{`{"x":"AKIAABCDEFGHIJKLMNOP"}`, []string{`AWS access key id`}},
		{`{"x":"xoxb-1234567890-abcdef"}`, []string{`Slack token`}},
		{`{"x":"sk-abcdefghijklmnopqrstuvwx"}`, []string{`sk- API key`}},
		{`{"jwk":{"kty":"OKP","crv":"Ed25519","x":"abc","d":"privatepart"}}`, []string{`/jwk: object is a private JSON Web Key`}},
		{`{"a":{"api_key":"k1"},"b":{"api_key":"k2"}}`, []string{`/a/api_key`, `/b/api_key`}},
		// Redacted, absent or harmless: no findings.
		{`{"x":{"password":"[REDACTED]"}}`, nil},
		{`{"x":{"api_key":"<redacted>","access_token":null,"client_secret":"","refresh_token":"********"}}`, nil},
		{`{"x":{"private_key":"redacted: rotated 2026-04"}}`, nil},
		{`{"x":{"secret":"sha256:` + strings.Repeat("ab", 32) + `"}}`, nil},
		{`{"x":{"password":false}}`, nil},
		{`{"usage":{"input_tokens":100,"output_tokens":5,"token_count":3},"auth":"bearer tokens are rotated"}`, nil},
		{`{"public_key_id":"key_1","signature":"base64:AAAA","kty":"OKP","x":"pub"}`, nil},
		{`{"redactions":[{"field":"/metadata/api_key","reason":"secret","proof_hash":"sha256:` + strings.Repeat("0", 64) + `"}]}`, nil},
	}
	for _, c := range cases {
		v, err := jsonv.Decode([]byte(c.doc))
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		got := findSecrets(v)
		if len(got) != len(c.want) {
			t.Errorf("findSecrets(%s) = %q, want %d finding(s)", c.doc, got, len(c.want))
			continue
		}
		for i, w := range c.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("findSecrets(%s)[%d] = %q, want it to mention %q", c.doc, i, got[i], w)
			}
		}
		// Never echo the secret.
		for _, g := range got {
			for _, secret := range []string{"ya29", "s3cr3t", "12345", "MIIB", "abcdefghijklmnop", "privatepart", "k1", "k2"} {
				if strings.Contains(g, secret) {
					t.Errorf("finding %q echoes %q", g, secret)
				}
			}
		}
	}
}

// TestFindingsAreBoundedAndClean: a receipt built to flood or corrupt the
// report yields a bounded, printable one.
func TestFindingsAreBoundedAndClean(t *testing.T) {
	raw, err := readFixture("valid/task-failed.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	items := make([]any, 5000)
	for i := range items {
		items[i] = map[string]any{"api_key": "k", "tool": 1}
	}
	doc["side_effects"].(map[string]any)["tool_calls"] = items
	doc["cost"].(map[string]any)["currency"] = "\x1b[2J" + strings.Repeat("Z", 100000) + "\u202e"
	b, _ := json.Marshal(doc)
	r := Verify(b, Options{})
	perStep := map[string]int{}
	size := 0
	for _, f := range r.Findings {
		perStep[f.Step]++
		size += len(f.Message)
		for _, c := range f.Message {
			if c < 0x20 || c == 0x7f || c == 0x202e {
				t.Fatalf("finding carries control character %U: %.80q", c, f.Message)
			}
		}
	}
	for step, n := range perStep {
		if n > maxFindingsPerStep+1 {
			t.Errorf("step %s: %d findings, want at most %d", step, n, maxFindingsPerStep+1)
		}
	}
	if size > 200000 {
		t.Errorf("findings total %d bytes", size)
	}
	if !strings.Contains(r.Steps[1].Detail, "more finding(s) of this step not shown") {
		t.Errorf("schema step does not say findings were cut: %.200s", r.Steps[1].Detail)
	}
}

// TestHostileInput feeds shapes that must yield findings, never panics or
// hangs: deep nesting, wrong top-level types, wrong member types.
func TestHostileInput(t *testing.T) {
	inputs := []string{
		"", "null", "[]", `"s"`, "1", "{", "\xff",
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		`{"a":` + strings.Repeat(`{"a":`, 5000) + `1` + strings.Repeat("}", 5001),
		`{"chain":[],"signatures":{}}`,
		`{"chain":{"receipt_hash":7}}`,
		`{"chain":{"receipt_hash":"sha256:` + strings.Repeat("A", 64) + `"},"signatures":[null,1,{"key_id":5}]}`,
		`{"metadata":{"n":1e400}}`,
		`{"metadata":{"n":123456789012345678901234567890}}`,
	}
	keys := &KeySet{}
	for _, in := range inputs {
		r := Verify([]byte(in), Options{Keys: keys, Previous: "null", MerkleRoot: "sha256:" + strings.Repeat("0", 64)})
		if r.Valid() {
			t.Errorf("Verify(%.40q) is valid", in)
		}
		if len(r.Steps) != 7 {
			t.Errorf("Verify(%.40q): %d steps, want 7", in, len(r.Steps))
		}
		if _, err := json.Marshal(r); err != nil {
			t.Errorf("Verify(%.40q): result does not marshal: %v", in, err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte(`{"chain":{"receipt_hash":"sha256:00"},"signatures":[{"key_id":"k","algorithm":"ed25519","signature":"AA=="}]}`))
	f.Add([]byte(`{"metadata":{"api_key":"x","\ud83d\ude00":2.0}}`))
	f.Add([]byte(`{"chain":{"previous_receipt_hash":null},"cost":{"total":1e21,"x":-0}}`))
	key := testKey("fuzz")
	keys := &KeySet{}
	if err := keys.Add(pub("k", key)); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := Verify(raw, Options{Keys: &KeySet{}, Previous: "null"})
		if len(r.Steps) != 7 {
			t.Fatalf("%d steps", len(r.Steps))
		}
		// Whatever Seal accepts, it must make hash- and signature-correct.
		sealed, err := Seal(raw, Signer{KeyID: "k", Key: key})
		if err != nil {
			return
		}
		for _, f := range Verify(sealed, Options{Keys: keys}).Findings {
			if f.Step == StepHash || f.Step == StepSignatures || f.Step == StepParse {
				t.Fatalf("sealed %q: %v", raw, f)
			}
		}
	})
}

func BenchmarkVerify(b *testing.B) {
	raw, err := readFixture("valid/task-completed.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if r := Verify(raw, Options{}); !r.Valid() {
			b.Fatal(r.Findings)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	raw, err := readFixture("valid/task-completed.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Hash(raw); err != nil {
			b.Fatal(err)
		}
	}
}

func FuzzParseKeySet(f *testing.F) {
	f.Add([]byte(`{"keys":[{"key_id":"a","algorithm":"ed25519","public_key":"WMYohky2YouAW_gGeWCpn_1I7IbYD_FCbZ-4O3xXtNQ"}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		s, err := ParseKeySet(raw)
		if err != nil {
			return
		}
		b, err := s.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		again, err := ParseKeySet(b)
		if err != nil || again.Len() != s.Len() {
			t.Fatalf("round trip of %s: %v", b, err)
		}
	})
}
