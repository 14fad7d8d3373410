package target

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/oauth"
	"github.com/harn-conform/conform/internal/requirements"
)

// OAuthTestTokensCapability is the discovery capability by which a target
// says its token endpoint mints the tokens it must refuse, on request
// (docs/oauth.md#test-tokens). The reference Harness implements it.
const OAuthTestTokensCapability = "conform.oauth_test_tokens"

// The kinds of token a target must refuse that only its issuer can make.
const (
	TokenExpired       = "expired"
	TokenWrongAudience = "wrong_audience"
	TokenWrongIssuer   = "wrong_issuer"
)

// OAuth is what the run knows of the target's OAuth2 client credentials.
type OAuth struct {
	// TokenURL is the token endpoint ("" when there is none) and Source
	// where it came from.
	TokenURL, Source string
	// Client gets tokens; nil when the run cannot, and then Missing says
	// why (a remedy can follow) or Err is the transport failure that kept
	// the run from finding out.
	Client  *oauth.Client
	Missing string
	Err     error

	env *Env
}

// OAuth resolves, once, where the run gets OAuth2 access tokens: the token
// endpoint of --oauth-token-url, else the one the agent card advertises.
// It speaks to the target only to read the card.
func (e *Env) OAuth(ctx context.Context) *OAuth {
	e.oauthMu.Lock()
	defer e.oauthMu.Unlock()
	if e.oauth == nil || e.oauth.Err != nil {
		e.oauth = e.resolveOAuth(ctx)
	}
	return e.oauth
}

func (e *Env) resolveOAuth(ctx context.Context) *OAuth {
	cfg := e.Config.OAuth
	o := &OAuth{env: e}
	if cfg.TokenURL != "" {
		o.TokenURL, o.Source = cfg.TokenURL, "--oauth-token-url"
	} else {
		u, name, missing, err := e.advertisedTokenURL(ctx)
		if err != nil || missing != "" {
			o.Err, o.Missing = err, missing
			return o
		}
		o.TokenURL, o.Source = u, "a2a_card.securitySchemes."+name+" of the agent card"
	}
	if cfg.ClientID == "" {
		o.Missing = fmt.Sprintf("the run has no OAuth2 client credentials for the token endpoint %s (from %s): %s and %s are not set",
			o.TokenURL, o.Source, config.EnvName("oauth_client_id"), config.EnvName("oauth_client_secret"))
		return o
	}
	c, err := oauth.New(oauth.Config{
		TokenURL: o.TokenURL, ClientID: cfg.ClientID, ClientSecret: cfg.Secret, Audience: cfg.Audience, Scope: cfg.Scope,
		HTTPClient: e.Client.HTTPClient(), Timeout: e.Config.Timeouts.Request,
		// Every token is a secret from the moment it arrives.
		OnToken: func(tok string) { e.Redactor.Add(tok) },
	})
	if err != nil {
		o.Missing = err.Error()
		return o
	}
	o.Client = c
	return o
}

// advertisedTokenURL reads the client-credentials token endpoint from the
// agent card's a2a_card.securitySchemes, in the OpenAPI shape ({type:
// oauth2, flows: {clientCredentials: {tokenUrl}}}) or the A2A v1 one
// ({oauth2SecurityScheme: {flows: …}}). The card is unsigned metadata
// ("Clients MUST NOT trust unsigned card metadata for authorization
// decisions"), so the suite sends its client secret only to an endpoint on
// the target's own origin; anywhere else needs --oauth-token-url.
func (e *Env) advertisedTokenURL(ctx context.Context) (tokenURL, scheme, missing string, err error) {
	req := client.Request{Method: http.MethodGet, Path: "/v1/agent-card"}
	resp, err := e.Client.Do(ctx, req)
	if err != nil {
		return "", "", "", err
	}
	noFlag := fmt.Sprintf("and --oauth-token-url (%s) is not set", config.EnvName("oauth_token_url"))
	card, err := resp.Object()
	if resp.Status != http.StatusOK || err != nil {
		return "", "", fmt.Sprintf("the agent card (%s) cannot be read to find the OAuth2 token endpoint, %s", resp, noFlag), nil
	}
	a2a, _ := card["a2a_card"].(map[string]any)
	schemes, _ := a2a["securitySchemes"].(map[string]any)
	names := make([]string, 0, len(schemes))
	for n := range schemes {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		raw := clientCredentialsURL(schemes[n])
		if raw == "" {
			continue
		}
		base, _ := url.Parse(e.Client.URL(req))
		u, err := base.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.User != nil {
			return "", "", fmt.Sprintf("the agent card's security scheme %s names token endpoint %q, which is not an http(s) URL, %s", n, raw, noFlag), nil
		}
		if u.Scheme != base.Scheme || u.Host != base.Host {
			return "", "", fmt.Sprintf("the agent card's security scheme %s names token endpoint %s, on another origin than the target: "+
				"the suite sends its client secret there only if you say so with --oauth-token-url", n, u), nil
		}
		return u.String(), n, "", nil
	}
	return "", "", fmt.Sprintf("the agent card advertises no OAuth2 client-credentials token endpoint (no a2a_card.securitySchemes entry with flows.clientCredentials.tokenUrl) %s", noFlag), nil
}

func clientCredentialsURL(v any) string {
	s, _ := v.(map[string]any)
	if inner, ok := s["oauth2SecurityScheme"].(map[string]any); ok {
		s = inner
	} else if s["type"] != "oauth2" {
		return ""
	}
	flows, _ := s["flows"].(map[string]any)
	cc, _ := flows["clientCredentials"].(map[string]any)
	u, _ := cc["tokenUrl"].(string)
	return u
}

// StartOAuth gets the run's first access token, when the run checks the
// Extended level and OAuth2 is configured, so that a refused client shows
// before any spec. Its error is the token endpoint's answer.
func (e *Env) StartOAuth(ctx context.Context) error {
	cfg := e.Config.OAuth
	if !e.Selected(requirements.Extended).Run || (cfg.ClientID == "" && cfg.TokenURL == "") {
		return nil
	}
	o := e.OAuth(ctx)
	if o.Err != nil || o.Client == nil {
		return o.Err // what is missing, the specs report
	}
	_, err := o.Client.Token(ctx, nil)
	return err
}

// BadToken returns a token of kind (TokenExpired, TokenWrongAudience,
// TokenWrongIssuer) for the refusal checks: the operator's fixture when one
// is configured, else one the target mints through its test-token hook when
// it advertises it. It returns "" (and no error) when there is neither;
// from says where the token came from, and setting names the fixture's
// setting for a remedy.
func (o *OAuth) BadToken(ctx context.Context, kind string) (token, from string, err error) {
	cfg := o.env.Config.OAuth
	var fixture, key string
	switch kind {
	case TokenExpired:
		fixture, key = cfg.ExpiredToken, "oauth_expired_token"
	case TokenWrongAudience:
		fixture, key = cfg.WrongAudienceToken, "oauth_wrong_audience_token"
	case TokenWrongIssuer:
		fixture, key = cfg.WrongIssuerToken, "oauth_wrong_issuer_token"
	default:
		return "", "", fmt.Errorf("target: unknown bad-token kind %q", kind)
	}
	if fixture != "" {
		return fixture, "the operator's fixture (" + config.EnvName(key) + " or --" + config.FlagName(key) + "-file)", nil
	}
	if v, _ := o.env.Discovery.Capabilities[OAuthTestTokensCapability].(string); v == "" || o.Client == nil {
		return "", "", nil
	}
	tok, err := o.Client.Fetch(ctx, oauth.Request{Extra: url.Values{"conform_test_token": {kind}}})
	if err != nil {
		return "", "", err
	}
	return tok.AccessToken, TestTokenSource, nil
}

// TestTokenSource is BadToken's from for a token the target minted through
// its test-token hook: a verdict on it is hook-attested.
const TestTokenSource = "the target's " + OAuthTestTokensCapability + " hook"

// ClientRefused reports whether err is the token endpoint refusing the
// run's client (its id or secret): the operator's to fix.
func ClientRefused(err error) bool {
	var oe *oauth.Error
	return errors.As(err, &oe) && (oe.ClientRefused() || oe.Status == http.StatusUnauthorized)
}
