package target

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/config"
)

// oauthTarget is a fake target: discovery with caps, a card with schemes,
// and a token endpoint at /oauth/token that answers with the
// conform_test_token it was asked for (or "good").
func oauthTarget(t *testing.T, caps map[string]any, schemes func(base string) map[string]any) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1":
			c := map[string]any{"rest": true, "websocket": true}
			for k, v := range caps {
				c[k] = v
			}
			json.NewEncoder(w).Encode(map[string]any{"object": "protocol_discovery", "capabilities": c})
		case "/v1/agent-card":
			json.NewEncoder(w).Encode(map[string]any{"object": "harn_agent_card", "a2a_card": map[string]any{"securitySchemes": schemes(srv.URL)}})
		case "/oauth/token":
			b, _ := io.ReadAll(r.Body)
			form, _ := url.ParseQuery(string(b))
			kind := form.Get("conform_test_token")
			if kind == "" {
				kind = "good"
			}
			if _, secret, _ := r.BasicAuth(); secret != "s3cret" {
				w.WriteHeader(401)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			io.WriteString(w, `{"access_token":"tok-`+kind+`","token_type":"Bearer","expires_in":60}`)
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func openFor(t *testing.T, srv *httptest.Server, edit func(*config.Config)) *Env {
	t.Helper()
	cfg := config.Defaults()
	cfg.Target, cfg.APIKey, cfg.Levels = srv.URL, "k", []string{"extended"}
	if edit != nil {
		edit(&cfg)
	}
	env, err := Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func openAPIScheme(tokenURL string) map[string]any {
	return map[string]any{"type": "oauth2", "flows": map[string]any{"clientCredentials": map[string]any{"tokenUrl": tokenURL, "scopes": map[string]any{}}}}
}

func TestOAuthTokenURLFromTheCard(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		schemes func(base string) map[string]any
		want    string // token URL, relative to the server; "" = none
		missing string
	}{
		{"OpenAPI shape", func(b string) map[string]any {
			return map[string]any{"bearer": map[string]any{"type": "http"}, "oauth": openAPIScheme(b + "/oauth/token")}
		}, "/oauth/token", ""},
		{"A2A v1 shape", func(b string) map[string]any {
			return map[string]any{"cc": map[string]any{"oauth2SecurityScheme": map[string]any{"flows": map[string]any{"clientCredentials": map[string]any{"tokenUrl": b + "/oauth/token"}}}}}
		}, "/oauth/token", ""},
		{"relative URL", func(string) map[string]any { return map[string]any{"oauth": openAPIScheme("../oauth/token")} }, "/oauth/token", ""},
		{"another origin", func(string) map[string]any {
			return map[string]any{"oauth": openAPIScheme("https://auth.example/token")}
		}, "", "--oauth-token-url"},
		{"no OAuth2 scheme", func(string) map[string]any { return map[string]any{"bearer": map[string]any{"type": "http"}} }, "", "advertises no OAuth2"},
	} {
		srv := oauthTarget(t, nil, tc.schemes)
		env := openFor(t, srv, func(c *config.Config) { c.OAuth.ClientID, c.OAuth.Secret = "c", "s3cret" })
		o := env.OAuth(ctx)
		switch {
		case tc.want != "" && (o.Client == nil || o.TokenURL != srv.URL+tc.want || !strings.Contains(o.Source, "agent card")):
			t.Errorf("%s: token URL %q from %q (missing %q), want %s", tc.name, o.TokenURL, o.Source, o.Missing, srv.URL+tc.want)
		case tc.want == "" && (o.Client != nil || !strings.Contains(o.Missing, tc.missing)):
			t.Errorf("%s: client %v, missing %q, want it to say %q", tc.name, o.Client, o.Missing, tc.missing)
		}
	}
	// The flag beats the card, and a client id is needed.
	srv := oauthTarget(t, nil, func(string) map[string]any { return nil })
	env := openFor(t, srv, func(c *config.Config) { c.OAuth.TokenURL = srv.URL + "/oauth/token" })
	if o := env.OAuth(ctx); o.Client != nil || !strings.Contains(o.Missing, "CONFORM_OAUTH_CLIENT_ID") || o.Source != "--oauth-token-url" {
		t.Errorf("no client id: %+v", o)
	}
}

func TestOAuthBadTokens(t *testing.T) {
	ctx := context.Background()
	card := func(b string) map[string]any { return map[string]any{"oauth": openAPIScheme(b + "/oauth/token")} }
	hooked := oauthTarget(t, map[string]any{OAuthTestTokensCapability: "v1"}, card)
	env := openFor(t, hooked, func(c *config.Config) {
		c.OAuth.ClientID, c.OAuth.Secret = "c", "s3cret"
		c.OAuth.ExpiredToken = "operator-expired"
	})
	o := env.OAuth(ctx)
	tok, from, err := o.BadToken(ctx, TokenExpired)
	if err != nil || tok != "operator-expired" || !strings.Contains(from, "CONFORM_OAUTH_EXPIRED_TOKEN") {
		t.Errorf("the operator's fixture: %q from %q, %v", tok, from, err)
	}
	tok, from, err = o.BadToken(ctx, TokenWrongAudience)
	if err != nil || tok != "tok-wrong_audience" || !strings.Contains(from, "hook") {
		t.Errorf("the hook: %q from %q, %v", tok, from, err)
	}
	if !env.Redactor.Contains("x tok-wrong_audience y") {
		t.Error("a hook token is not redacted")
	}
	if err := env.StartOAuth(ctx); err != nil || !env.Redactor.Contains("tok-good") {
		t.Errorf("StartOAuth: %v", err)
	}

	plain := oauthTarget(t, nil, card)
	env = openFor(t, plain, func(c *config.Config) { c.OAuth.ClientID, c.OAuth.Secret = "c", "s3cret" })
	if tok, _, err := env.OAuth(ctx).BadToken(ctx, TokenWrongIssuer); tok != "" || err != nil {
		t.Errorf("without the hook: %q, %v; want nothing", tok, err)
	}

	refused := openFor(t, plain, func(c *config.Config) { c.OAuth.ClientID, c.OAuth.Secret = "c", "wrong" })
	if err := refused.StartOAuth(ctx); !ClientRefused(err) {
		t.Errorf("a wrong secret: %v, want a refused client", err)
	}
	core := openFor(t, plain, func(c *config.Config) { c.Levels = []string{"core"}; c.OAuth.ClientID, c.OAuth.Secret = "c", "wrong" })
	if err := core.StartOAuth(ctx); err != nil {
		t.Errorf("a run without Extended asked for a token: %v", err)
	}
}
