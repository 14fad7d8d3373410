package refharness

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/oauth"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: OAuth2 access tokens (docs/oauth.md).
var (
	FaultOAuthAcceptsExpired = declare(fault.Fault{Name: "oauth-accepts-expired",
		Doc:   "access tokens are accepted after their exp",
		Fails: []string{"EXT-OAUTH-004"},
		Run:   fault.OAuth,
		Says:  "an expired token"})
	FaultOAuthIgnoresAudience = declare(fault.Fault{Name: "oauth-ignores-audience",
		Doc:   "access tokens minted for another audience are accepted",
		Fails: []string{"EXT-OAUTH-003"},
		Run:   fault.OAuth,
		Says:  "wrong-audience"})
	FaultOAuthIgnoresIssuer = declare(fault.Fault{Name: "oauth-ignores-issuer",
		Doc:   "a token the harness's key signed is accepted whatever its iss (the shared-key multi-issuer mistake)",
		Fails: []string{"EXT-OAUTH-002"},
		Run:   fault.OAuth,
		Says:  "wrong-issuer"})
	FaultOAuthSkipsSignature = declare(fault.Fault{Name: "oauth-skips-signature",
		Doc:   "access token signatures are not verified: a token with edited claims is accepted",
		Fails: []string{"EXT-OAUTH-002"},
		Run:   fault.OAuth,
		Says:  "signature kept"})
	FaultOAuthReadsIgnoreScope = declare(fault.Fault{Name: "oauth-reads-ignore-scopes",
		Doc:   "reads (GET) take any valid access token whatever its scope; writes still need theirs",
		Fails: []string{"EXT-OAUTH-005"},
		Warns: []string{"EXT-OAUTH-006"},
		Run:   fault.OAuth,
		Says:  "served (200)"})
	FaultOAuthNotOnStreams = declare(fault.Fault{Name: "oauth-not-on-streams",
		Doc:   "SSE streams refuse access tokens (401) and take only API keys",
		Fails: []string{"EXT-OAUTH-001"},
		Run:   fault.OAuth,
		Says:  "stream"})
	FaultOAuthExpiredOnWrites = declare(fault.Fault{Name: "oauth-expired-on-writes",
		Doc:   "expired access tokens are accepted on REST writes (POST, PATCH, PUT, DELETE); reads, streams and WebSocket sessions refuse them",
		Fails: []string{"EXT-OAUTH-004"},
		Run:   fault.OAuth,
		Says:  "an expired token"})
	FaultOAuthWSUpgradeAudience = declare(fault.Fault{Name: "oauth-ws-upgrade-ignores-audience",
		Doc:   "a WebSocket upgrade carrying an access token minted for another audience opens the session; REST, SSE and the auth frame refuse it",
		Fails: []string{"EXT-OAUTH-003"},
		Run:   fault.OAuth,
		Says:  "WebSocket upgrade"})
	FaultOAuthWSAuthFrameExpired = declare(fault.Fault{Name: "oauth-ws-auth-frame-accepts-expired",
		Doc:   "a WebSocket auth frame carrying an expired access token opens the session; REST, SSE and the upgrade refuse it",
		Fails: []string{"EXT-OAUTH-004"},
		Run:   fault.OAuth,
		Says:  "auth frame"})
	FaultOAuthReadScopeWrites = declare(fault.Fault{Name: "oauth-read-scope-writes",
		Doc:   "a resource's read scope also grants its writes (scopes should name resource actions)",
		Warns: []string{"EXT-OAUTH-006"},
		Run:   fault.OAuth,
		Says:  "sessions:write"})
)

// VariantNoOAuthTestTokens hides the conform.oauth_test_tokens hook, as on
// a third-party server: discovery does not advertise it and the token
// endpoint ignores conform_test_token, so the suite has no expired,
// wrong-audience or wrong-issuer token unless the operator gives it one.
var VariantNoOAuthTestTokens = declareVariant(fault.Variant{Name: "no-oauth-test-tokens",
	Doc: "the conform.oauth_test_tokens hook is hidden: no expired, wrong-audience or wrong-issuer token unless the operator gives one"})

// OAuth2 client credentials (RFC 6749 §4.4), the Extended level's second
// authentication scheme (docs/oauth.md).
//
// The token endpoint is POST {base}/oauth/token, where the published
// OpenAPI's oauth2ClientCredentials scheme puts it (its tokenUrl is
// https://api.harnlang.com/oauth/token); the agent card advertises the
// absolute URL in a2a_card.securitySchemes. Each actor of Options.APIKeys
// is a client: client_id is the actor id and any of the actor's API keys is
// its secret, sent with HTTP Basic or as client_id/client_secret form
// fields. So a harness needs no configuration beyond its keys.
//
// Access tokens are JWTs (RFC 9068: typ at+jwt) signed with an ed25519 key
// of the harness's own (EdDSA, RFC 8037), kept in the data directory like
// the receipt key, so tokens survive a restart. A self-contained token
// rather than an opaque one the harness looks up: the spec asks servers to
// "validate issuer, audience, expiry, and required scopes" — claims a JWT
// carries — and the suite can then take a real token apart to forge its
// look-alikes (another issuer, edited claims). The issuer is the harness's
// base URL, the audience the base URL + "/v1", the subject the actor.

// OAuthTokenPath is the token endpoint, below the harness's base URL.
const OAuthTokenPath = "/oauth/token"

// OAuthTestTokensCapability is the discovery capability by which the
// harness says its token endpoint mints the tokens a server must refuse
// (docs/oauth.md#test-tokens): with conform_test_token=expired,
// wrong_audience or wrong_issuer in an otherwise ordinary token request.
const OAuthTestTokensCapability = "conform.oauth_test_tokens"

// OAuthTestTokensVersion is the hook's version.
const OAuthTestTokensVersion = "v1"

// The issuer and audience of the test tokens (.invalid names, RFC 2606).
const (
	otherIssuer   = "https://other-tenant.conform.invalid"
	otherAudience = "https://another-api.conform.invalid/v1"
)

const (
	oauthKeyFile   = "oauth-signing-key.json"
	tokenTTL       = time.Hour
	maxTokenBody   = 64 << 10
	oauthRealm     = `Basic realm="conform reference harness"`
	oauthScheme    = "oauth2ClientCredentials"
	tokenClockSkew = 0 // issuer and verifier share one clock
)

// loadOAuthKey reads the token signing key from the DataDir, creating it on
// first start (in memory mode a fresh key per process).
func (s *Server) loadOAuthKey() error {
	var err error
	if s.opts.DataDir == "" {
		s.okey, err = s.newSigningKey()
	} else {
		s.okey, err = s.readOrCreateKey(filepath.Join(s.opts.DataDir, oauthKeyFile))
	}
	if err != nil {
		return fmt.Errorf("refharness: OAuth token signing key: %w", err)
	}
	return nil
}

// advertiseOAuth adds the test-token hook to the discovery capabilities.
func (s *Server) advertiseOAuth(doc map[string]any) map[string]any {
	if caps, ok := doc["capabilities"].(map[string]any); ok && !s.opts.Variants.Has(VariantNoOAuthTestTokens) {
		caps[OAuthTestTokensCapability] = OAuthTestTokensVersion
	}
	return doc
}

// securitySchemes is the card's a2a_card.securitySchemes: API keys and
// OAuth2 client credentials, both sent as bearer credentials; the OAuth2
// entry has the OpenAPI shape, with the absolute token URL and every scope
// the harness issues.
func (s *Server) securitySchemes(base string) map[string]any {
	scopes := map[string]any{}
	voc, _ := oauth.Vocabulary()
	for _, sc := range voc {
		res, action, _ := strings.Cut(sc, ":")
		scopes[sc] = fmt.Sprintf("%s %s.", strings.ToUpper(action[:1])+action[1:], res)
	}
	return map[string]any{
		"bearer": map[string]any{"type": "http", "scheme": "bearer"},
		oauthScheme: map[string]any{"type": "oauth2", "flows": map[string]any{
			"clientCredentials": map[string]any{"tokenUrl": base + OAuthTokenPath, "scopes": scopes}}},
	}
}

// authSchemes is the card's auth_schemes.
func (s *Server) authSchemes() []string { return []string{"bearer", "oauth2_client_credentials"} }

// ---- the token endpoint ----

// oauthError writes an RFC 6749 §5.2 error answer.
func oauthError(w http.ResponseWriter, status int, code, desc string) {
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	if code == "invalid_client" {
		// "MUST … include the WWW-Authenticate response header field
		// matching the authentication scheme used by the client."
		h.Set("WWW-Authenticate", oauthRealm)
	}
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"error": code, "error_description": desc})
	w.Write(append(b, '\n'))
}

// serveToken answers POST /oauth/token (RFC 6749 §4.4.2–§4.4.3, errors per
// §5.2).
func (s *Server) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "the token endpoint takes POST only")
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the token request must be application/x-www-form-urlencoded")
		return
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, maxTokenBody+1))
	if err != nil || len(b) > maxTokenBody {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the token request body cannot be read or is too large")
		return
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "the token request body is not form-encoded")
		return
	}
	params := map[string]string{}
	for k, vs := range form {
		// "Parameters sent without a value MUST be treated as if they
		// were omitted"; "Request and response parameters MUST NOT be
		// included more than once" (§3.1, §3.2).
		var set []string
		for _, v := range vs {
			if v != "" {
				set = append(set, v)
			}
		}
		switch len(set) {
		case 0:
		case 1:
			params[k] = set[0]
		default:
			oauthError(w, http.StatusBadRequest, "invalid_request", fmt.Sprintf("parameter %s is sent more than once", k))
			return
		}
	}
	id, ok, desc := s.oauthClient(r, params)
	if desc != "" {
		oauthError(w, http.StatusBadRequest, "invalid_request", desc)
		return
	}
	if !ok {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "client authentication failed")
		return
	}
	switch gt := params["grant_type"]; gt {
	case "client_credentials":
	case "":
		oauthError(w, http.StatusBadRequest, "invalid_request", "grant_type is missing")
		return
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "this server issues tokens for grant_type client_credentials only")
		return
	}
	voc, err := oauth.Vocabulary()
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "the scope vocabulary is not available")
		return
	}
	known := oauth.ParseScope(strings.Join(voc, " "))
	scope := known // no scope parameter: everything the client may have (§3.3's pre-defined default)
	if v, ok := params["scope"]; ok {
		scope = oauth.ParseScope(v)
		for sc := range scope {
			if !known.Has(sc) {
				oauthError(w, http.StatusBadRequest, "invalid_scope", fmt.Sprintf("unknown scope %q", sc))
				return
			}
		}
	}
	kind := ""
	if !s.opts.Variants.Has(VariantNoOAuthTestTokens) {
		kind = params["conform_test_token"]
	}
	base := baseURL(r)
	now := s.clock()
	claims := map[string]any{
		"iss": base, "sub": id, "aud": base + "/v1", "client_id": id,
		"iat": now.Unix(), "exp": now.Add(tokenTTL).Unix(), "jti": randomJTI(), "scope": scope.String(),
	}
	expiresIn := int64(tokenTTL / time.Second)
	switch kind {
	case "":
	case "expired":
		claims["iat"], claims["exp"] = now.Add(-2*tokenTTL).Unix(), now.Add(-tokenTTL).Unix()
		expiresIn = 0
	case "wrong_audience":
		claims["aud"] = otherAudience
	case "wrong_issuer":
		claims["iss"] = otherIssuer
	default:
		oauthError(w, http.StatusBadRequest, "invalid_request", "conform_test_token must be expired, wrong_audience or wrong_issuer")
		return
	}
	tok, err := s.signToken(claims)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", "the token could not be signed")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json;charset=UTF-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Pragma", "no-cache")
	w.WriteHeader(http.StatusOK)
	out, _ := json.Marshal(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": expiresIn, "scope": scope.String()})
	w.Write(append(out, '\n'))
}

// oauthClient authenticates the client by HTTP Basic (RFC 6749 §2.3.1, id
// and secret form-encoded before base64) or by client_id/client_secret
// form fields, not both ("MUST NOT use more than one authentication method
// in each request"). It returns the client id and whether the secret is
// right, or a description of a malformed request.
func (s *Server) oauthClient(r *http.Request, params map[string]string) (id string, ok bool, malformed string) {
	bid, bsecret, basic := r.BasicAuth()
	fid, fsecret := params["client_id"], params["client_secret"]
	switch {
	case basic && fsecret != "":
		return "", false, "the client authenticated twice: HTTP Basic and client_secret"
	case basic:
		var err1, err2 error
		bid, err1 = url.QueryUnescape(bid)
		bsecret, err2 = url.QueryUnescape(bsecret)
		if err1 != nil || err2 != nil {
			return "", false, ""
		}
		if fid != "" && fid != bid {
			return "", false, "client_id differs from the HTTP Basic client"
		}
		id, ok = bid, s.clientSecretOK(bid, bsecret)
	case fid != "" && fsecret != "":
		id, ok = fid, s.clientSecretOK(fid, fsecret)
	}
	return id, ok, ""
}

// clientSecretOK reports whether secret is an API key of actor id, comparing
// every key in constant time.
func (s *Server) clientSecretOK(id, secret string) bool {
	ok := false
	for key, actor := range s.opts.APIKeys {
		if subtle.ConstantTimeCompare([]byte(key), []byte(secret)) == 1 && actor == id && key != "" {
			ok = true
		}
	}
	return ok
}

func (s *Server) knownActor(id string) bool {
	for key, actor := range s.opts.APIKeys {
		if actor == id && key != "" {
			return true
		}
	}
	return false
}

func randomJTI() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

var jwtB64 = base64.RawURLEncoding

type jwtHeader struct {
	Alg string `json:"alg"`
	Typ string `json:"typ"`
	Kid string `json:"kid"`
}

// signToken encodes and signs an access token.
func (s *Server) signToken(claims map[string]any) (string, error) {
	hdr, err := json.Marshal(jwtHeader{Alg: "EdDSA", Typ: "at+jwt", Kid: s.okey.id})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := jwtB64.EncodeToString(hdr) + "." + jwtB64.EncodeToString(body)
	return signed + "." + jwtB64.EncodeToString(ed25519.Sign(s.okey.priv, []byte(signed))), nil
}

// ---- access tokens on the API ----

// bearerToken authenticates a bearer credential that is shaped like a JWT
// (three base64url parts, the first a JSON object) as an access token and
// checks the scope the operation needs. ok is false for any other
// credential, which is then an API key or nothing. Refusals follow the
// spec's error table: a token that is not valid (signature, issuer,
// audience, expiry) is 401 unauthenticated; a valid token without the
// operation's scope is 403 permission_denied. No message repeats the token.
func (s *Server) bearerToken(r *http.Request, tok string) (actor string, e *apiError, ok bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return "", nil, false
	}
	hb, err := jwtB64.DecodeString(parts[0])
	var hdr jwtHeader
	if err != nil || json.Unmarshal(hb, &hdr) != nil {
		return "", nil, false
	}
	refuse := func(msg string) (string, *apiError, bool) {
		return "", &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: msg}, true
	}
	var claims map[string]any
	cb, err := jwtB64.DecodeString(parts[1])
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(cb))
		dec.UseNumber()
		err = dec.Decode(&claims)
	}
	if err != nil || claims == nil {
		return refuse("the access token is malformed")
	}
	if !s.opts.Faults.Has(FaultOAuthSkipsSignature) {
		sig, err := jwtB64.DecodeString(parts[2])
		if err != nil || hdr.Alg != "EdDSA" || hdr.Kid != s.okey.id ||
			!ed25519.Verify(s.okey.priv.Public().(ed25519.PublicKey), []byte(parts[0]+"."+parts[1]), sig) {
			return refuse("the access token's signature does not verify with a key of this server")
		}
	}
	base := baseURL(r)
	if iss, _ := claims["iss"].(string); iss != base && !s.opts.Faults.Has(FaultOAuthIgnoresIssuer) {
		return refuse("the access token was issued by an issuer this server does not trust")
	}
	way := streamWayOf(r) // "" for REST and SSE
	write := way == "" && r.Method != http.MethodGet && r.Method != http.MethodHead
	audienceIgnored := s.opts.Faults.Has(FaultOAuthIgnoresAudience) || s.opts.Faults.Has(FaultOAuthWSUpgradeAudience) && way == streamByUpgrade
	if !audienceHas(claims["aud"], base+"/v1") && !audienceIgnored {
		return refuse("the access token was issued for another audience")
	}
	exp, ok := claims["exp"].(json.Number)
	var expAt int64
	if ok {
		f, err := exp.Float64()
		ok, expAt = err == nil, int64(f)
	}
	if !ok {
		return refuse("the access token has no expiry (exp)")
	}
	expiryIgnored := s.opts.Faults.Has(FaultOAuthAcceptsExpired) || s.opts.Faults.Has(FaultOAuthExpiredOnWrites) && write ||
		s.opts.Faults.Has(FaultOAuthWSAuthFrameExpired) && way == streamByAuthFrame
	if !s.clock().Before(time.Unix(expAt+tokenClockSkew, 0)) && !expiryIgnored {
		return refuse("the access token has expired")
	}
	sub, _ := claims["sub"].(string)
	if !s.knownActor(sub) {
		return refuse("the access token's subject is not an actor of this server")
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	if s.opts.Faults.Has(FaultOAuthNotOnStreams) && strings.HasSuffix(path, "/stream") {
		return refuse("event streams take API keys only")
	}
	readsOpen := s.opts.Faults.Has(FaultOAuthReadsIgnoreScope) && (r.Method == http.MethodGet || r.Method == http.MethodHead)
	if op, found := oauth.Match(r.Method, path); found && !readsOpen {
		scope, _ := claims["scope"].(string)
		granted := oauth.ParseScope(scope)
		allowed := granted.Has(op.Scope)
		if !allowed && s.opts.Faults.Has(FaultOAuthReadScopeWrites) && strings.HasSuffix(op.Scope, ":write") {
			allowed = granted.Has(op.Resource + ":read")
		}
		if !allowed {
			return "", &apiError{Status: http.StatusForbidden, Code: "permission_denied",
				Message: fmt.Sprintf("the access token lacks scope %s, which %s %s requires", op.Scope, r.Method, op.Template),
				Details: map[string]any{"required_scope": op.Scope}}, true
		}
	}
	return sub, nil, true
}

// streamWay is how a WebSocket session's credential came (OpenStream):
// on the upgrade (way a) or in the auth frame (way b); some faults act on
// one way only.
type streamWay string

const (
	streamByUpgrade   streamWay = "upgrade"
	streamByAuthFrame streamWay = "auth frame"
)

type streamWayKey struct{}

// streamWayOf is the way of a WebSocket session's request ("" for any
// other request).
func streamWayOf(r *http.Request) streamWay {
	w, _ := r.Context().Value(streamWayKey{}).(streamWay)
	return w
}

// audienceHas reports whether an aud claim (a string or an array of
// strings, RFC 7519 §4.1.3) names want.
func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, v := range a {
			if v == want {
				return true
			}
		}
	}
	return false
}
