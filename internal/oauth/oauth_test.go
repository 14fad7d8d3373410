package oauth

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
)

// endpoint is a fake token endpoint: it checks the request and answers
// with the status and body its handler picks.
type endpoint struct {
	mu       sync.Mutex
	requests []url.Values
	answer   func(form url.Values) (int, string, string) // status, content type, body
}

func (e *endpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(b))
	id, secret, _ := r.BasicAuth()
	form.Set("basic_id", id)
	form.Set("basic_secret", secret)
	form.Set("content_type", r.Header.Get("Content-Type"))
	e.mu.Lock()
	e.requests = append(e.requests, form)
	e.mu.Unlock()
	status, ct, body := e.answer(form)
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(status)
	io.WriteString(w, body)
}

func (e *endpoint) count() int { e.mu.Lock(); defer e.mu.Unlock(); return len(e.requests) }

func newEndpoint(t *testing.T, answer func(url.Values) (int, string, string)) (*endpoint, string) {
	e := &endpoint{answer: answer}
	srv := httptest.NewServer(e)
	t.Cleanup(srv.Close)
	return e, srv.URL + "/oauth/token"
}

const jsonCT = "application/json;charset=UTF-8"

func TestFetchSendsClientCredentials(t *testing.T) {
	e, u := newEndpoint(t, func(url.Values) (int, string, string) {
		return 200, jsonCT, `{"access_token":"at-1","token_type":"Bearer","expires_in":3600,"scope":"tasks:read"}`
	})
	var seen []string
	c, err := New(Config{TokenURL: u, ClientID: "client:1", ClientSecret: "s+cret/1", Audience: "https://api.example",
		OnToken: func(tok string) { seen = append(seen, tok) }})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := c.Fetch(context.Background(), Request{Scope: []string{"tasks:read", "tasks:write"}, Extra: url.Values{"conform_test_token": {"expired"}}})
	if err != nil {
		t.Fatal(err)
	}
	got := e.requests[0]
	// RFC 6749 §2.3.1: form-encoded, then Basic.
	for k, want := range map[string]string{"grant_type": "client_credentials", "scope": "tasks:read tasks:write", "audience": "https://api.example",
		"conform_test_token": "expired", "basic_id": "client%3A1", "basic_secret": "s%2Bcret%2F1", "content_type": "application/x-www-form-urlencoded"} {
		if got.Get(k) != want {
			t.Errorf("request %s = %q, want %q", k, got.Get(k), want)
		}
	}
	if got.Has("client_secret") {
		t.Error("the secret is sent in the form as well as in Basic")
	}
	if tok.AccessToken != "at-1" || tok.TokenType != "Bearer" || tok.Bearer() != "Bearer at-1" || !tok.ScopeKnown || tok.Scope.String() != "tasks:read" {
		t.Errorf("token = %+v", tok)
	}
	if len(seen) != 1 || seen[0] != "at-1" {
		t.Errorf("OnToken saw %v", seen)
	}
}

// A cached token is reused until shortly before it expires, by the
// client's clock: no waiting.
func TestTokenCache(t *testing.T) {
	n := 0
	e, u := newEndpoint(t, func(url.Values) (int, string, string) {
		n++
		return 200, jsonCT, `{"access_token":"at-` + string(rune('0'+n)) + `","token_type":"bearer","expires_in":"120"}`
	})
	now := time.Date(2026, 4, 25, 0, 0, 0, 0, time.UTC)
	c, _ := New(Config{TokenURL: u, ClientID: "c", ClientSecret: "s", Clock: func() time.Time { return now }})
	ctx := context.Background()
	a, err := c.Token(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.ScopeKnown {
		t.Errorf("no scope asked or granted, yet ScopeKnown: %+v", a)
	}
	b, _ := c.Token(ctx, nil)
	other, _ := c.Token(ctx, []string{"tasks:read"})
	if a != b || e.count() != 2 || other.Scope.String() != "tasks:read" {
		t.Errorf("cache: %v %v %v, %d requests", a, b, other, e.count())
	}
	now = now.Add(120*time.Second - refreshBefore)
	if fresh, _ := c.Token(ctx, nil); fresh == a || e.count() != 3 {
		t.Errorf("a token about to expire was reused (%d requests)", e.count())
	}
}

func TestFetchErrors(t *testing.T) {
	for _, tc := range []struct {
		name          string
		status        int
		ct, body      string
		clientRefused bool
		code          string // *Error's code; "" = a *ResponseError
		says          string
	}{
		{"invalid_client", 401, jsonCT, `{"error":"invalid_client","error_description":"bad secret"}`, true, "invalid_client", "bad secret"},
		{"invalid_scope", 400, jsonCT, `{"error":"invalid_scope"}`, false, "invalid_scope", "400 invalid_scope"},
		{"html error", 500, "text/html", `<h1>oops</h1>`, false, "", "not an RFC 6749 error answer"},
		{"not json", 200, jsonCT, `at=1`, false, "", "not a JSON object"},
		{"no access_token", 200, jsonCT, `{"token_type":"Bearer"}`, false, "", "no access_token"},
		{"no token_type", 200, jsonCT, `{"access_token":"x"}`, false, "", "no token_type"},
		{"text token", 200, "text/plain", `{"access_token":"x","token_type":"Bearer"}`, false, "", "Content-Type"},
		{"bad expires_in", 200, jsonCT, `{"access_token":"x","token_type":"Bearer","expires_in":"soon"}`, false, "", "expires_in"},
	} {
		_, u := newEndpoint(t, func(url.Values) (int, string, string) { return tc.status, tc.ct, tc.body })
		c, _ := New(Config{TokenURL: u, ClientID: "c", ClientSecret: "s3cret-value"})
		_, err := c.Fetch(context.Background(), Request{})
		var oe *Error
		var re *ResponseError
		switch {
		case err == nil:
			t.Errorf("%s: no error", tc.name)
			continue
		case tc.code != "" && (!errors.As(err, &oe) || oe.Code != tc.code || oe.ClientRefused() != tc.clientRefused):
			t.Errorf("%s: %v, want *Error %s", tc.name, err, tc.code)
		case tc.code == "" && !errors.As(err, &re):
			t.Errorf("%s: %T %v, want *ResponseError", tc.name, err, err)
		}
		if !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "s3cret-value") {
			t.Errorf("%s: %q does not say %q (or shows the secret)", tc.name, err, tc.says)
		}
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	c, _ := New(Config{TokenURL: u, ClientID: "c", ClientSecret: "s"})
	var te *client.TransportError
	if _, err := c.Fetch(context.Background(), Request{}); !errors.As(err, &te) {
		t.Errorf("closed endpoint: %T %v, want a *client.TransportError", err, err)
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{TokenURL: "ftp://x/token", ClientID: "c"},
		{TokenURL: "https://u:p@x/token", ClientID: "c"},
		{TokenURL: "https://x/token"},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func TestJWTHelpers(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1_800_000_000, 0)
	tok, err := Sign(map[string]any{"iss": "https://issuer.example", "aud": []any{"a", "b"}, "exp": now.Unix(), "scope": "tasks:read"}, "k1", key)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(tok, ".")
	hdr, _ := base64.RawURLEncoding.DecodeString(parts[0])
	if string(hdr) != `{"alg":"EdDSA","kid":"k1","typ":"at+jwt"}` {
		t.Errorf("header %s", hdr)
	}
	sig, _ := base64.RawURLEncoding.DecodeString(parts[2])
	if !ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
		t.Error("Sign's signature does not verify")
	}
	c, ok := Claims(tok)
	if exp, _ := Expiry(c); !ok || !exp.Equal(now) || strings.Join(Audiences(c), ",") != "a,b" {
		t.Errorf("Claims = %v, %v", c, ok)
	}
	for _, opaque := range []string{"sk-abc", "a.b.c", "", "eyJhIjoxfQ.eyJhIjoxfQ"} {
		if _, ok := Claims(opaque); ok {
			t.Errorf("Claims(%q) reads an opaque token as a JWT", opaque)
		}
	}

	forged, err := Forge(c, now)
	if err != nil {
		t.Fatal(err)
	}
	fc, _ := Claims(forged)
	if fc["iss"] != ForeignIssuer || fc["scope"] != "tasks:read" || strings.Join(Audiences(fc), ",") != "a,b" {
		t.Errorf("Forge claims = %v", fc)
	}
	if exp, _ := Expiry(fc); !exp.After(now) {
		t.Errorf("forged token expires at %v, want after %v", exp, now)
	}
	fsig, _ := base64.RawURLEncoding.DecodeString(strings.Split(forged, ".")[2])
	if ed25519.Verify(key.Public().(ed25519.PublicKey), []byte(strings.Join(strings.Split(forged, ".")[:2], ".")), fsig) {
		t.Error("the forged token is signed by the real key")
	}

	tampered, _ := Tamper(tok)
	tp := strings.Split(tampered, ".")
	tc, _ := Claims(tampered)
	if tp[0] != parts[0] || tp[2] != parts[2] || tp[1] == parts[1] || tc["conform_tampered"] != true || tc["iss"] != "https://issuer.example" {
		t.Errorf("Tamper(JWT) = %s", tampered)
	}
	for in, want := range map[string]string{"sk-abc": "sk-abA", "xyzA": "xyzB"} {
		if got, _ := Tamper(in); got != want {
			t.Errorf("Tamper(%q) = %q, want %q", in, got, want)
		}
	}
}
