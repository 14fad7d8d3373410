package refharness

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/oauth"
)

// tokenAnswer is a token endpoint's answer.
type tokenAnswer struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (a tokenAnswer) token() string { s, _ := a.Body["access_token"].(string); return s }

// tokenRequest posts form to the token endpoint, authenticating with HTTP
// Basic when basic is true (id and secret form-encoded, RFC 6749 §2.3.1).
func (h *harness) tokenRequest(form url.Values, basic bool, id, secret string) tokenAnswer {
	h.t.Helper()
	req := httptest.NewRequest("POST", OAuthTokenPath, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basic {
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id)+":"+url.QueryEscape(secret))))
	}
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	a := tokenAnswer{Code: rec.Code, Header: rec.Header(), Raw: rec.Body.String()}
	json.Unmarshal(rec.Body.Bytes(), &a.Body)
	return a
}

// token gets an access token for actor_default with the given scope ("" =
// the default: every scope).
func (h *harness) token(scope string, extra ...string) string {
	h.t.Helper()
	form := url.Values{"grant_type": {"client_credentials"}}
	if scope != "" {
		form.Set("scope", scope)
	}
	for i := 0; i+1 < len(extra); i += 2 {
		form.Set(extra[i], extra[i+1])
	}
	a := h.tokenRequest(form, true, "actor_default", testKey)
	if a.Code != 200 || a.token() == "" {
		h.t.Fatalf("token request: %d %s", a.Code, a.Raw)
	}
	return a.token()
}

// bearer sends a request with an access token instead of the API key.
func (h *harness) bearer(tok, method, path string, body any) resp {
	h.t.Helper()
	return h.do(method, path, body, "Authorization", "Bearer "+tok)
}

// mint signs claims with the harness's token key: a token the harness
// could have issued, with whatever claims a test needs.
func (h *harness) mint(edit func(c map[string]any)) string {
	h.t.Helper()
	now := h.s.clock()
	c := map[string]any{"iss": "http://example.com", "aud": "http://example.com/v1", "sub": "actor_default", "client_id": "actor_default",
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(), "jti": "t", "scope": "tasks:read sessions:read"}
	if edit != nil {
		edit(c)
	}
	tok, err := h.s.signToken(c)
	if err != nil {
		h.t.Fatal(err)
	}
	return tok
}

func TestOAuthTokenEndpoint(t *testing.T) {
	h := newHarness(t, Options{})
	cc := url.Values{"grant_type": {"client_credentials"}}

	ok := h.tokenRequest(cc, true, "actor_default", testKey)
	if ok.Code != 200 {
		t.Fatalf("Basic: %d %s", ok.Code, ok.Raw)
	}
	if ok.Body["token_type"] != "Bearer" || ok.Body["expires_in"] != float64(3600) || ok.Header.Get("Cache-Control") != "no-store" || ok.Header.Get("Pragma") != "no-cache" {
		t.Errorf("token answer %v %v", ok.Header, ok.Raw)
	}
	voc, _ := oauth.Vocabulary()
	if ok.Body["scope"] != strings.Join(voc, " ") {
		t.Errorf("default scope = %v, want every scope %v", ok.Body["scope"], voc)
	}
	claims, isJWT := oauth.Claims(ok.token())
	if !isJWT || claims["sub"] != "actor_default" || claims["client_id"] != "actor_default" || claims["iss"] != "http://example.com" || claims["aud"] != "http://example.com/v1" {
		t.Errorf("claims = %v", claims)
	}

	post := url.Values{"grant_type": {"client_credentials"}, "client_id": {"actor_default"}, "client_secret": {testKey}, "scope": {"tasks:read"}}
	if a := h.tokenRequest(post, false, "", ""); a.Code != 200 || a.Body["scope"] != "tasks:read" {
		t.Errorf("form credentials: %d %s", a.Code, a.Raw)
	}

	for _, tc := range []struct {
		name         string
		form         url.Values
		basic        bool
		id, secret   string
		status       int
		code         string
		wwwAuthBasic bool
	}{
		{"wrong secret", cc, true, "actor_default", "nope", 401, "invalid_client", true},
		{"unknown client", cc, true, "actor_other", testKey, 401, "invalid_client", true},
		{"no client authentication", cc, false, "", "", 401, "invalid_client", true},
		{"wrong form secret", url.Values{"grant_type": {"client_credentials"}, "client_id": {"actor_default"}, "client_secret": {"x"}}, false, "", "", 401, "invalid_client", true},
		{"two methods", url.Values{"grant_type": {"client_credentials"}, "client_secret": {testKey}}, true, "actor_default", testKey, 400, "invalid_request", false},
		{"no grant type", url.Values{}, true, "actor_default", testKey, 400, "invalid_request", false},
		{"password grant", url.Values{"grant_type": {"password"}}, true, "actor_default", testKey, 400, "unsupported_grant_type", false},
		{"unknown scope", url.Values{"grant_type": {"client_credentials"}, "scope": {"tasks:read admin"}}, true, "actor_default", testKey, 400, "invalid_scope", false},
		{"repeated parameter", url.Values{"grant_type": {"client_credentials", "client_credentials"}}, true, "actor_default", testKey, 400, "invalid_request", false},
		{"unknown test token", url.Values{"grant_type": {"client_credentials"}, "conform_test_token": {"stale"}}, true, "actor_default", testKey, 400, "invalid_request", false},
	} {
		a := h.tokenRequest(tc.form, tc.basic, tc.id, tc.secret)
		if a.Code != tc.status || a.Body["error"] != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.name, a.Code, a.Raw, tc.status, tc.code)
		}
		if got := a.Header.Get("WWW-Authenticate") != ""; got != tc.wwwAuthBasic {
			t.Errorf("%s: WWW-Authenticate %q", tc.name, a.Header.Get("WWW-Authenticate"))
		}
		if strings.Contains(a.Raw, testKey) {
			t.Errorf("%s: the answer repeats the secret: %s", tc.name, a.Raw)
		}
	}

	get := httptest.NewRequest("GET", OAuthTokenPath, nil)
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, get)
	if rec.Code != 405 || rec.Header().Get("Allow") != "POST" {
		t.Errorf("GET %s: %d %v", OAuthTokenPath, rec.Code, rec.Header())
	}
	js := httptest.NewRequest("POST", OAuthTokenPath, strings.NewReader(`{"grant_type":"client_credentials"}`))
	js.Header.Set("Content-Type", "application/json")
	js.SetBasicAuth("actor_default", testKey)
	rec = httptest.NewRecorder()
	h.s.ServeHTTP(rec, js)
	if rec.Code != 400 || !strings.Contains(rec.Body.String(), "invalid_request") {
		t.Errorf("JSON token request: %d %s", rec.Code, rec.Body)
	}
}

// A client id or secret with characters that form-encoding changes is
// decoded before it is compared (RFC 6749 §2.3.1).
func TestOAuthTokenBasicIsFormEncoded(t *testing.T) {
	key := "k+y/with:colon%and space"
	h := newHarness(t, Options{APIKeys: map[string]string{key: "actor:odd"}})
	if a := h.tokenRequest(url.Values{"grant_type": {"client_credentials"}}, true, "actor:odd", key); a.Code != 200 {
		t.Errorf("%d %s", a.Code, a.Raw)
	}
}

func TestOAuthTokenAcceptedLikeAnAPIKey(t *testing.T) {
	h := newHarness(t, Options{})
	tok := h.token("")
	h.must(200, h.bearer(tok, "GET", "/v1/tasks", nil), "list tasks with a token")
	ws := h.must(201, h.bearer(tok, "POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/w"}), "workspace")
	se := h.must(201, h.bearer(tok, "POST", "/v1/sessions", map[string]any{"workspace_id": ws.str("id")}), "session")
	task := h.must(202, h.bearer(tok, "POST", "/v1/sessions/"+se.str("id")+"/tasks",
		map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hi", "visibility": "public"}}}}), "submit")
	if task.str("created_by") != "" && task.str("created_by") != "actor_default" {
		t.Errorf("the task's actor is %q, want the client's actor_default", task.str("created_by"))
	}
	h.waitTerminal(task.str("id"))
	if code := streamStatus(h, tok, "/v1/tasks/"+task.str("id")+"/stream"); code != 200 {
		t.Errorf("task stream with a token: %d", code)
	}
}

// streamStatus opens a stream with a token and returns its status.
func streamStatus(h *harness, tok, path string) int {
	return headStatus(h, tok, "GET", path, nil)
}

// wsRefuses opens a WebSocket session of the probe's session through the
// core surface (OpenStream) with tok on the upgrade or, upgrade false, in
// the auth frame, and wants 401. A target whose WebSocket takes any wrong
// credential is left to its own probe.
func wsRefuses(p *probeEnv, upgrade bool, tok, what string) error {
	open := func(cred string) *Error {
		r := httptest.NewRequest("GET", "http://example.com/v1/sessions/"+p.sessionID()+"/events/stream", nil)
		if upgrade {
			r.Header.Set("Authorization", cred)
		}
		_, e := p.s.OpenStream(r, cred, ProtocolVersion)
		return e
	}
	if open("Bearer not-a-key-of-this-server") == nil {
		return nil // any credential opens it: ws-upgrade-unauthenticated's probe
	}
	way := "in the auth frame"
	if upgrade {
		way = "on the upgrade"
	}
	if e := open("Bearer " + tok); e == nil || e.Status() != 401 {
		return fmt.Errorf("%s %s opened a WebSocket session (%v), want 401", what, way, e)
	}
	return nil
}

// headOnly is a response writer that ends the request (its context) once
// the status is written, so an endless stream answers a status and stops.
type headOnly struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (w headOnly) WriteHeader(code int) { w.ResponseRecorder.WriteHeader(code); w.cancel() }
func (w headOnly) Write(b []byte) (int, error) {
	w.cancel()
	return w.ResponseRecorder.Write(b)
}

// headStatus sends a request with a token and returns the status alone.
func headStatus(h *harness, tok, method, path string, body any) int {
	h.t.Helper()
	var rd *strings.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = strings.NewReader(string(b))
	} else {
		rd = strings.NewReader("")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, method, path, rd)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+tok)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	w := headOnly{httptest.NewRecorder(), cancel}
	h.s.ServeHTTP(w, req)
	return w.Code
}

// Expiry is judged by the harness's clock: the same token works until its
// exp and is refused from then on, with no wait.
func TestOAuthTokenExpiresByTheClock(t *testing.T) {
	var mu sync.Mutex
	now := time.Date(2026, 4, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := newHarness(t, Options{Clock: clock})
	tok := h.token("tasks:read")
	set := func(t time.Time) { mu.Lock(); now = t; mu.Unlock() }
	start := clock()
	set(start.Add(tokenTTL - time.Second))
	h.must(200, h.bearer(tok, "GET", "/v1/tasks", nil), "one second before exp")
	set(start.Add(tokenTTL))
	r := h.bearer(tok, "GET", "/v1/tasks", nil)
	wantError(t, r, 401, "unauthenticated", "")
	if !strings.Contains(string(r.Raw), "expired") || strings.Contains(string(r.Raw), tok) {
		t.Errorf("expired token answer: %s", r.Raw)
	}
}

func TestOAuthTokenRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	good := h.token("")
	claims, _ := oauth.Claims(good)
	forged, err := oauth.Forge(claims, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	tampered, err := oauth.Tamper(good)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(good, ".")
	none := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"at+jwt"}`)) + "." + parts[1] + "."
	for name, tok := range map[string]string{
		"forged by another key":   forged,
		"tampered claims":         tampered,
		"alg none":                none,
		"wrong issuer":            h.mint(func(c map[string]any) { c["iss"] = "https://other.example" }),
		"wrong audience":          h.mint(func(c map[string]any) { c["aud"] = []any{"https://other.example/v1"} }),
		"expired":                 h.mint(func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() }),
		"no expiry":               h.mint(func(c map[string]any) { delete(c, "exp") }),
		"unknown actor":           h.mint(func(c map[string]any) { c["sub"] = "actor_nobody" }),
		"malformed claims":        parts[0] + ".bm90IGpzb24." + parts[2],
		"audience list with ours": "",
	} {
		if tok == "" {
			continue
		}
		r := h.bearer(tok, "GET", "/v1/tasks", nil)
		wantError(t, r, 401, "unauthenticated", "")
		if strings.Contains(string(r.Raw), tok) {
			t.Errorf("%s: the refusal repeats the token", name)
		}
	}
	// An aud array that names this server is fine (RFC 7519 §4.1.3).
	multi := h.mint(func(c map[string]any) { c["aud"] = []any{"https://other.example/v1", "http://example.com/v1"} })
	h.must(200, h.bearer(multi, "GET", "/v1/tasks", nil), "aud array naming the server")
	// A non-JWT bearer credential is still an API key question.
	wantError(t, h.bearer("not-a-token", "GET", "/v1/tasks", nil), 401, "unauthenticated", "")
}

// Every scoped operation of the OpenAPI refuses a token without its scope
// with 403 permission_denied before it looks at ids or bodies, and the
// scope alone is enough to get past authorization.
func TestOAuthScopesPerOperation(t *testing.T) {
	h := newHarness(t, Options{})
	ops, err := oauth.Operations()
	if err != nil {
		t.Fatal(err)
	}
	voc, _ := oauth.Vocabulary()
	tokens := map[string]string{}  // all but one scope
	singles := map[string]string{} // exactly one scope
	for _, o := range ops {
		path := strings.NewReplacer("{", "x", "}", "").Replace(o.Template)
		if _, ok := tokens[o.Scope]; !ok {
			var rest []string
			for _, s := range voc {
				if s != o.Scope {
					rest = append(rest, s)
				}
			}
			tokens[o.Scope] = h.token(strings.Join(rest, " "))
			singles[o.Scope] = h.token(o.Scope)
		}
		r := h.bearer(tokens[o.Scope], o.Method, path, map[string]any{})
		wantError(t, r, 403, "permission_denied", "")
		if d, _ := r.Body["error"].(map[string]any)["details"].(map[string]any); d["required_scope"] != o.Scope {
			t.Errorf("%s %s: details %v, want required_scope %s", o.Method, path, d, o.Scope)
		}
		if code := headStatus(h, singles[o.Scope], o.Method, path, map[string]any{}); code == 403 || code == 401 {
			t.Errorf("%s %s with scope %s: %d", o.Method, path, o.Scope, code)
		}
	}
	// Public routes and the harness's own extensions need no scope.
	none := h.token("receipts:read")
	h.must(200, h.bearer(none, "GET", "/v1", nil), "discovery")
	h.must(200, h.bearer(none, "GET", KeyDirectoryPath, nil), "key directory")
}

func TestOAuthTestTokens(t *testing.T) {
	h := newHarness(t, Options{})
	if d := h.do("GET", "/v1", nil); d.Body["capabilities"].(map[string]any)[OAuthTestTokensCapability] != OAuthTestTokensVersion {
		t.Errorf("discovery does not advertise %s: %s", OAuthTestTokensCapability, d.Raw)
	}
	for _, kind := range []string{"expired", "wrong_audience", "wrong_issuer"} {
		tok := h.token("", "conform_test_token", kind)
		r := h.bearer(tok, "GET", "/v1/tasks", nil)
		wantError(t, r, 401, "unauthenticated", "")
	}
	plain := newHarness(t, Options{Variants: Variants{VariantNoOAuthTestTokens: true}})
	if d := plain.do("GET", "/v1", nil); d.Body["capabilities"].(map[string]any)[OAuthTestTokensCapability] != nil {
		t.Errorf("%s advertises the hook: %s", VariantNoOAuthTestTokens, d.Raw)
	}
	tok := plain.token("", "conform_test_token", "expired")
	plain.must(200, plain.bearer(tok, "GET", "/v1/tasks", nil), "without the hook the parameter is ignored (RFC 6749 §3.1)")
}

func TestOAuthTokenSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	tok := h.token("tasks:read")
	h.s.Close()
	h2 := newHarness(t, Options{DataDir: dir})
	h2.must(200, h2.bearer(tok, "GET", "/v1/tasks", nil), "a token issued before the restart")
}

func TestOAuthCardAdvertisesTheTokenURL(t *testing.T) {
	h := newHarness(t, Options{})
	card := h.do("GET", "/v1/agent-card", nil)
	a2a, _ := card.Body["a2a_card"].(map[string]any)
	sch, _ := a2a["securitySchemes"].(map[string]any)[oauthScheme].(map[string]any)
	flow, _ := sch["flows"].(map[string]any)["clientCredentials"].(map[string]any)
	if sch["type"] != "oauth2" || flow["tokenUrl"] != "http://example.com"+OAuthTokenPath {
		t.Fatalf("card's %s scheme = %v", oauthScheme, sch)
	}
	scopes, _ := flow["scopes"].(map[string]any)
	declared, _ := oauth.DeclaredScopes()
	for _, s := range declared {
		if _, ok := scopes[s]; !ok {
			t.Errorf("the card's scopes lack %s", s)
		}
	}
	if !slices.Contains(anyStrings(card.Body["auth_schemes"]), "oauth2_client_credentials") {
		t.Errorf("auth_schemes = %v", card.Body["auth_schemes"])
	}
}

func anyStrings(v any) []string {
	var out []string
	l, _ := v.([]any)
	for _, x := range l {
		out = append(out, fmt.Sprint(x))
	}
	return out
}

// Each OAuth fault's probe (faults_test.go runs every probe against every
// fault). Tokens are minted by the harness's key directly, so the probes
// work with or without the test-token hook.
func init() {
	refused := func(p *probeEnv, tok, what string) error {
		if r := p.bearer(tok, "GET", "/v1/tasks", nil); r.Code != 401 {
			return fmt.Errorf("%s: GET /v1/tasks answered %d, want 401", what, r.Code)
		}
		return nil
	}
	probes[FaultOAuthAcceptsExpired] = func(p *probeEnv) error {
		return refused(p, p.mint(func(c map[string]any) { c["exp"] = p.s.clock().Add(-time.Minute).Unix() }), "an expired token")
	}
	probes[FaultOAuthIgnoresAudience] = func(p *probeEnv) error {
		return refused(p, p.mint(func(c map[string]any) { c["aud"] = otherAudience }), "a token for another audience")
	}
	probes[FaultOAuthIgnoresIssuer] = func(p *probeEnv) error {
		return refused(p, p.mint(func(c map[string]any) { c["iss"] = otherIssuer }), "a token of another issuer")
	}
	probes[FaultOAuthSkipsSignature] = func(p *probeEnv) error {
		tok, err := oauth.Tamper(p.mint(nil))
		if err != nil {
			return err
		}
		return refused(p, tok, "a token with edited claims")
	}
	probes[FaultOAuthReadsIgnoreScope] = func(p *probeEnv) error {
		tok := p.mint(func(c map[string]any) { c["scope"] = "receipts:read" })
		if r := p.bearer(tok, "GET", "/v1/tasks", nil); r.Code != 403 {
			return fmt.Errorf("a token without tasks:read: GET /v1/tasks answered %d, want 403", r.Code)
		}
		return nil
	}
	probes[FaultOAuthNotOnStreams] = func(p *probeEnv) error {
		if code := streamStatus(p.harness, p.mint(func(c map[string]any) { c["scope"] = "events:read" }), "/v1/tasks/"+p.taskID()+"/stream"); code != 200 {
			return fmt.Errorf("a task stream with a token answered %d, want 200", code)
		}
		return nil
	}
	// The faults that accept a refused token on one path only: each probe
	// sees its path refuse what the others refuse, and leaves a target that
	// accepts the token everywhere (or any credential on the WebSocket) to
	// the probes of those faults.
	expired := func(p *probeEnv) string {
		return p.mint(func(c map[string]any) {
			c["exp"] = p.s.clock().Add(-time.Minute).Unix()
			c["scope"] = "sessions:read sessions:write tasks:read events:read"
		})
	}
	probes[FaultOAuthExpiredOnWrites] = func(p *probeEnv) error {
		tok := expired(p)
		if p.bearer(tok, "GET", "/v1/tasks", nil).Code != 401 {
			return nil // accepted on reads too: oauth-accepts-expired's probe
		}
		if r := p.bearer(tok, "PATCH", "/v1/sessions/"+p.sessionID(), map[string]any{"summary": "x"}); r.Code != 401 {
			return fmt.Errorf("an expired token: PATCH /v1/sessions/{id} answered %d, want 401 as GET /v1/tasks did", r.Code)
		}
		return nil
	}
	probes[FaultOAuthWSUpgradeAudience] = func(p *probeEnv) error {
		tok := p.mint(func(c map[string]any) { c["aud"] = otherAudience; c["scope"] = "sessions:read events:read" })
		if p.bearer(tok, "GET", "/v1/tasks", nil).Code != 401 {
			return nil // accepted everywhere: oauth-ignores-audience's probe
		}
		return wsRefuses(p, true, tok, "a token for another audience")
	}
	probes[FaultOAuthWSAuthFrameExpired] = func(p *probeEnv) error {
		tok := expired(p)
		if p.bearer(tok, "GET", "/v1/tasks", nil).Code != 401 {
			return nil
		}
		return wsRefuses(p, false, tok, "an expired token")
	}
	probes[FaultOAuthReadScopeWrites] = func(p *probeEnv) error {
		tok := p.mint(func(c map[string]any) { c["scope"] = "sessions:read" })
		if r := p.bearer(tok, "PATCH", "/v1/sessions/"+p.sessionID(), map[string]any{"metadata": map[string]any{"k": "v"}}); r.Code != 403 {
			return fmt.Errorf("a token with sessions:read only: PATCH /v1/sessions/{id} answered %d, want 403", r.Code)
		}
		return nil
	}
}
