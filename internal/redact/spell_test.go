package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"
)

const apiKey = "sk-conform-7Hq2-live/key+x"

// Every spelling a server might pass a secret on in is found, at every
// alignment inside a larger encoded blob, and named.
func TestFindSpellings(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	b64url := base64.RawURLEncoding.EncodeToString
	pct := func(s string) string { // every byte percent-encoded
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteString("%" + strings.ToUpper(hex.EncodeToString([]byte{s[i]})))
		}
		return b.String()
	}
	for _, tc := range []struct{ name, text, spelling string }{
		{"as written", `{"note":"key ` + apiKey + `"}`, ""},
		{"query-escaped", "?k=" + url.QueryEscape(apiKey), ""},
		{"base64", `{"client":"` + b64([]byte(apiKey)) + `"}`, "base64"},
		{"base64 inside a blob, offset 1", b64([]byte("x" + apiKey + "tail")), "base64"},
		{"base64 inside a blob, offset 2", b64([]byte("xy" + apiKey + "tail")), "base64"},
		{"base64 inside a blob, offset 3", "prefix" + b64([]byte("xyz"+apiKey)), "base64"},
		{"base64url unpadded", "data:" + b64url([]byte("Bearer "+apiKey)), "base64"},
		{"hex lower", "dump=" + hex.EncodeToString([]byte(apiKey)), "hex"},
		{"hex upper, odd offset", "a" + strings.ToUpper(hex.EncodeToString([]byte(" "+apiKey))), "hex"},
		{"every byte percent-encoded", "/cb?k=" + pct(apiKey), "URL encoding"},
		{"base64 of a URL-encoded form", b64([]byte("k=" + pct(apiKey))), "base64 of URL encoding"},
		{"hex of base64", hex.EncodeToString([]byte(b64([]byte(apiKey)))), "hex of base64"},
	} {
		got, ok := Find(tc.text, apiKey)
		if !ok || got != tc.spelling {
			t.Errorf("%s: Find = %q, %v; want %q, true (text %q)", tc.name, got, ok, tc.spelling, tc.text)
		}
	}
}

// What does not hold the secret is not found: other text, a secret cut
// short, an encoding of something else, and secrets too short to look for.
func TestFindNothing(t *testing.T) {
	b64 := base64.StdEncoding.EncodeToString
	for _, text := range []string{
		"",
		"nothing to see",
		apiKey[:len(apiKey)-1],
		b64([]byte(apiKey[:len(apiKey)-1])),
		hex.EncodeToString([]byte(apiKey[1:])),
		b64([]byte(strings.Repeat("conform", 200))),
		"%zz%" + apiKey[:5],
	} {
		if sp, ok := Find(text, apiKey); ok {
			t.Errorf("Find(%.60q) = %q, true; want not found", text, sp)
		}
	}
	if _, ok := Find("abc", "abc"); ok {
		t.Error("a secret shorter than minSecretLen was looked for")
	}
	if i, _, ok := FindAny("x "+b64([]byte("second-secret")), "first-secret", "second-secret"); !ok || i != 1 {
		t.Errorf("FindAny = %d, %v; want the second secret", i, ok)
	}
}

// The Redactor's Contains and String see encoded secrets: String replaces
// the encoded secret's own characters, so no output carries the secret in
// any spelling.
func TestRedactorEncoded(t *testing.T) {
	r := New(apiKey)
	enc := base64.StdEncoding.EncodeToString([]byte("holder " + apiKey))
	text := `{"metadata":{"client":"` + enc + `"},"other":"keep me"}`
	if sp, ok := r.Find(text); !ok || sp != "base64" {
		t.Fatalf("Find = %q, %v; want base64", sp, ok)
	}
	got := r.String(text)
	if !strings.Contains(got, Marker) || !strings.Contains(got, `"other":"keep me"`) || strings.Contains(got, enc) {
		t.Errorf("String = %q, want the encoded key replaced and the rest kept", got)
	}
	if r.Contains(got) {
		t.Error("the redacted text still holds the secret")
	}
	h := hex.EncodeToString([]byte(apiKey))
	if got := r.String("a " + h + " b"); got != "a "+Marker+" b" {
		t.Errorf("String(hex) = %q", got)
	}
	plain := "a base64 run that holds nothing: " + base64.StdEncoding.EncodeToString([]byte("harmless content here"))
	if got := r.String(plain); got != plain {
		t.Errorf("String changed text without a secret: %q", got)
	}
}

// A large body is searched in linear time (the run is bounded by what it
// reads): no decoding of a run past its length, no quadratic rescans.
func BenchmarkFindLargeBody(b *testing.B) {
	body := strings.Repeat(`{"id":"evt_0123456789abcdef","payload":{"text":"some words of an event and a sha256 0f1e2d3c4b5a69788796a5b4c3d2e1f0"}},`, 4000)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, _, ok := FindAny(body, apiKey, "sk-canary-second-actor-8d21e7"); ok {
			b.Fatal("found a secret that is not there")
		}
	}
}
