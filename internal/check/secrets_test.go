package check

import (
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

const testAPIKey = "sk-canary-first-actor-0f3a91"

// A secret is found in each spelling, the finding names it and how it is
// spelled, and never repeats it.
func TestNoSecretIn(t *testing.T) {
	secrets := map[string]string{"the API key": testAPIKey, "too short": "abc"}
	for _, tc := range []struct{ name, text, want string }{
		{"clean", `{"metadata":{"note":"nothing"}}`, ""},
		{"as written", `{"note":"` + testAPIKey + `"}`, "the API key (as written)"},
		{"base64", `{"client":"` + base64.StdEncoding.EncodeToString([]byte("holder "+testAPIKey)) + `"}`, "the API key (base64-encoded)"},
		{"base64url", base64.RawURLEncoding.EncodeToString([]byte(testAPIKey)), "the API key (base64-encoded)"},
		{"hex", hex.EncodeToString([]byte(testAPIKey)), "the API key (hex-encoded)"},
		{"URL-encoded", "k=%73%6B%2D" + testAPIKey[3:], "the API key (URL-encoded)"},
		{"base64 of hex", base64.StdEncoding.EncodeToString([]byte(hex.EncodeToString([]byte(testAPIKey)))), "the API key (base64-encoded (of hex))"},
		{"short secrets are not looked for", "abc abc", ""},
	} {
		err := NoSecretIn("receipt r1", tc.text, secrets)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want a finding naming %q", tc.name, err, tc.want)
		case err != nil && strings.Contains(err.Error(), testAPIKey):
			t.Errorf("%s: the finding repeats the secret: %v", tc.name, err)
		}
	}
}

// NoSecret with HoldsSecret finds an encoded key in a header or a body.
func TestHoldsSecretInResponse(t *testing.T) {
	enc := base64.StdEncoding.EncodeToString([]byte(testAPIKey))
	resp := &client.Response{Status: 401, Header: http.Header{"X-Debug": {"key=" + enc}}, Body: []byte(`{"error":{"code":"unauthenticated"}}`)}
	if err := NoSecret(resp, HoldsSecret(testAPIKey)); err == nil || !strings.Contains(err.Error(), "X-Debug") {
		t.Errorf("NoSecret = %v, want the header named", err)
	}
	resp.Header = http.Header{}
	if err := NoSecret(resp, HoldsSecret(testAPIKey)); err != nil {
		t.Errorf("NoSecret on a clean answer = %v", err)
	}
	if SecretSpelled("x", "") != "" {
		t.Error("an empty secret was found")
	}
}
