// Package oauth is the suite's OAuth2 client-credentials client (RFC 6749
// §4.4): it asks a token endpoint for access tokens with HTTP Basic client
// authentication (§2.3.1, which every authorization server must support),
// caches them until shortly before they expire, and tells the refusals of
// §5.2 (invalid_client, invalid_scope, …) from a broken endpoint. It also
// reads the scope each operation of the vendored OpenAPI needs (scopes.go)
// and builds the forged tokens a target must refuse (jwt.go).
//
// Token requests never go through the checker's API client: the token
// endpoint is not an operation of the protocol's OpenAPI, and its answers
// carry credentials. Every access token this package obtains is handed to
// Config.OnToken first, so the caller can add it to the run's redactor
// before anything can print it.
package oauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harn-conform/conform/internal/client"
)

// Config is how to reach one token endpoint.
type Config struct {
	TokenURL     string
	ClientID     string
	ClientSecret string
	// Audience, when set, is sent as the "audience" parameter (an
	// extension some authorization servers need to pick the API a token
	// is for).
	Audience string
	// Scope is the scope of Token(ctx, nil): nil sends no scope parameter
	// (the server's default, RFC 6749 §3.3).
	Scope      []string
	HTTPClient *http.Client  // nil: http.DefaultClient
	Timeout    time.Duration // per token request; 0: 10 s
	Clock      func() time.Time
	// OnToken sees every access token before it is returned (to add it to
	// the run's redactor).
	OnToken func(token string)
}

// Client requests and caches tokens. It is safe for concurrent use.
type Client struct {
	cfg   Config
	mu    sync.Mutex
	cache map[string]*Token
}

// New returns a client for cfg.
func New(cfg Config) (*Client, error) {
	u, err := url.Parse(cfg.TokenURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("oauth: token URL %q is not an http(s) URL", cfg.TokenURL)
	}
	if u.User != nil {
		return nil, errors.New("oauth: the token URL must not carry credentials")
	}
	if cfg.ClientID == "" {
		return nil, errors.New("oauth: no client id")
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = http.DefaultClient
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Client{cfg: cfg, cache: map[string]*Token{}}, nil
}

// TokenURL is the endpoint the client asks.
func (c *Client) TokenURL() string { return c.cfg.TokenURL }

// ClientID is the client's id (not a secret).
func (c *Client) ClientID() string { return c.cfg.ClientID }

// Token is a successful token response (RFC 6749 §5.1).
type Token struct {
	AccessToken string
	TokenType   string
	// ExpiresAt is when the token stops working by expires_in; zero when
	// the response did not say.
	ExpiresAt time.Time
	// Scope is the scope granted: the response's scope parameter, or the
	// one requested when the response leaves it out ("OPTIONAL, if
	// identical to the scope requested"). Unknown (nil, ScopeKnown false)
	// when neither said.
	Scope      ScopeSet
	ScopeKnown bool
	Requested  []string // the scope asked for; nil: none sent
}

// Bearer is the Authorization header value that sends the token.
func (t *Token) Bearer() string { return "Bearer " + t.AccessToken }

// Error is a token endpoint's refusal (RFC 6749 §5.2).
type Error struct {
	URL         string
	Status      int
	Code        string // invalid_request, invalid_client, invalid_grant, unauthorized_client, unsupported_grant_type, invalid_scope
	Description string
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("token endpoint POST %s → %d %s", e.URL, e.Status, e.Code)
	if e.Description != "" {
		msg += ": " + e.Description
	}
	return msg
}

// ClientRefused reports whether the endpoint refused the client itself
// (its id or secret): a configuration problem, not a verdict.
func (e *Error) ClientRefused() bool {
	return e.Code == "invalid_client" || e.Code == "unauthorized_client"
}

// ResponseError is an answer that is neither a token nor an RFC 6749
// error: the endpoint is broken.
type ResponseError struct {
	URL     string
	Status  int
	Problem string
}

func (e *ResponseError) Error() string {
	return fmt.Sprintf("token endpoint POST %s → %d: %s", e.URL, e.Status, e.Problem)
}

// Request is one token request.
type Request struct {
	// Scope is sent as the scope parameter; nil or empty sends none.
	Scope []string
	// Extra holds extension parameters (RFC 6749 §8.2), e.g. the
	// conform.oauth_test_tokens hook's conform_test_token.
	Extra url.Values
}

const maxTokenResponse = 64 << 10

// Fetch asks the endpoint for a token, bypassing the cache. Its error is an
// *Error (a refusal), a *ResponseError (a broken answer) or a
// *client.TransportError (no answer).
func (c *Client) Fetch(ctx context.Context, req Request) (*Token, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(req.Scope) > 0 {
		form.Set("scope", strings.Join(req.Scope, " "))
	}
	if c.cfg.Audience != "" {
		form.Set("audience", c.cfg.Audience)
	}
	for k, vs := range req.Extra {
		form[k] = append([]string(nil), vs...)
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.TokenURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("oauth: %w", err)
	}
	hr.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "conform")
	// RFC 6749 §2.3.1: the id and secret are form-encoded before they are
	// joined and base64-encoded.
	hr.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString(
		[]byte(url.QueryEscape(c.cfg.ClientID)+":"+url.QueryEscape(c.cfg.ClientSecret))))
	resp, err := c.cfg.HTTPClient.Do(hr)
	if err != nil {
		// The error text may hold the URL, never the secret (it travels in
		// a header).
		return nil, &client.TransportError{Method: http.MethodPost, URL: c.cfg.TokenURL, Err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxTokenResponse+1))
	if err != nil {
		return nil, &client.TransportError{Method: http.MethodPost, URL: c.cfg.TokenURL, Err: fmt.Errorf("reading the answer: %w", err)}
	}
	if len(b) > maxTokenResponse {
		return nil, &ResponseError{URL: c.cfg.TokenURL, Status: resp.StatusCode, Problem: fmt.Sprintf("the answer is larger than %d bytes", maxTokenResponse)}
	}
	return c.parse(resp, b, req)
}

func (c *Client) parse(resp *http.Response, b []byte, req Request) (*Token, error) {
	bad := func(format string, args ...any) error {
		return &ResponseError{URL: c.cfg.TokenURL, Status: resp.StatusCode, Problem: fmt.Sprintf(format, args...)}
	}
	var body map[string]any
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.UseNumber()
	jsonErr := dec.Decode(&body)
	if resp.StatusCode != http.StatusOK {
		code, _ := body["error"].(string)
		if jsonErr != nil || code == "" {
			return nil, bad("not an RFC 6749 error answer (a JSON object with an \"error\" code)%s", sample(b))
		}
		desc, _ := body["error_description"].(string)
		return nil, &Error{URL: c.cfg.TokenURL, Status: resp.StatusCode, Code: code, Description: desc}
	}
	if jsonErr != nil || body == nil {
		return nil, bad("the token answer is not a JSON object%s", sample(b))
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return nil, bad("Content-Type %q, want application/json (RFC 6749 §5.1)", resp.Header.Get("Content-Type"))
	}
	tok := &Token{Requested: req.Scope}
	tok.AccessToken, _ = body["access_token"].(string)
	if tok.AccessToken == "" {
		return nil, bad("the token answer has no access_token")
	}
	if c.cfg.OnToken != nil {
		c.cfg.OnToken(tok.AccessToken)
	}
	tok.TokenType, _ = body["token_type"].(string)
	if tok.TokenType == "" {
		return nil, bad("the token answer has no token_type")
	}
	if v, ok := body["expires_in"]; ok && v != nil {
		secs, err := seconds(v)
		if err != nil {
			return nil, bad("expires_in is %v, want a number of seconds", v)
		}
		tok.ExpiresAt = c.cfg.Clock().Add(time.Duration(secs) * time.Second)
	}
	switch s, ok := body["scope"].(string); {
	case ok:
		tok.Scope, tok.ScopeKnown = ParseScope(s), true
	case len(req.Scope) > 0:
		tok.Scope, tok.ScopeKnown = ParseScope(strings.Join(req.Scope, " ")), true
	}
	return tok, nil
}

// seconds reads expires_in: a JSON number (RFC 6749), or a numeric string
// (which some servers send).
func seconds(v any) (int64, error) {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n, nil
		}
		f, err := x.Float64()
		return int64(f), err
	case string:
		return strconv.ParseInt(strings.TrimSpace(x), 10, 64)
	}
	return 0, fmt.Errorf("%T", v)
}

func sample(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return " (empty body)"
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return fmt.Sprintf(" (body starts %q)", s)
}

// refreshBefore is how long before its expiry a cached token is replaced.
const refreshBefore = 30 * time.Second

// Token returns a cached token of the scope (nil: Config.Scope), fetching a
// new one when there is none or it expires within refreshBefore.
func (c *Client) Token(ctx context.Context, scope []string) (*Token, error) {
	if scope == nil {
		scope = c.cfg.Scope
	}
	key := cacheKey(scope)
	c.mu.Lock()
	t := c.cache[key]
	c.mu.Unlock()
	if t != nil && (t.ExpiresAt.IsZero() || c.cfg.Clock().Add(refreshBefore).Before(t.ExpiresAt)) {
		return t, nil
	}
	t, err := c.Fetch(ctx, Request{Scope: scope})
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.cache[key] = t
	c.mu.Unlock()
	return t, nil
}

func cacheKey(scope []string) string {
	if len(scope) == 0 {
		return "\x00default"
	}
	s := append([]string(nil), scope...)
	sort.Strings(s)
	return strings.Join(s, " ")
}
