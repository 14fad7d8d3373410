package extended

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/oauth"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/internal/ws"
)

// OAuth2 client credentials (EXT-OAUTH-001…006; docs/oauth.md). The run
// gets its tokens from the target's token endpoint (--oauth-token-url, or
// the one the agent card advertises) with the client of --oauth-client-id;
// the tokens a target must refuse come from the operator's fixtures or the
// target's conform.oauth_test_tokens hook, except the forged ones, which
// the suite makes itself.

const (
	reqOAuthAccept   = "EXT-OAUTH-001" // a valid token works like an API key
	reqOAuthIssuer   = "EXT-OAUTH-002" // untrusted issuer (and forged tokens): 401
	reqOAuthAudience = "EXT-OAUTH-003" // another audience: 401
	reqOAuthExpiry   = "EXT-OAUTH-004" // expired: 401
	reqOAuthScope    = "EXT-OAUTH-005" // a scope the action needs is missing: refused, no effect
	reqOAuthNames    = "EXT-OAUTH-006" // SHOULD: resource:action scopes
)

// remedyOAuth is what to do when the run has no way to get tokens.
var remedyOAuth = fmt.Sprintf("give the run an OAuth2 client of the target: --oauth-client-id ID with its secret in %s (or --oauth-client-secret-file FILE), "+
	"and --oauth-token-url URL unless the agent card advertises the token endpoint on the target's own origin (docs/oauth.md)", config.EnvName("oauth_client_secret"))

// remedyBadToken is what to do when the run has no token of a kind.
func remedyBadToken(kind string) string {
	key := map[string]string{target.TokenExpired: "oauth_expired_token", target.TokenWrongAudience: "oauth_wrong_audience_token",
		target.TokenWrongIssuer: "oauth_wrong_issuer_token"}[kind]
	return fmt.Sprintf("give the run such a token from the target's issuer in %s or --%s-file FILE, or implement the %s hook (docs/oauth.md#test-tokens)",
		config.EnvName(key), config.FlagName(key), target.OAuthTestTokensCapability)
}

var _ = Describe("OAuth2 client credentials", func() {
	It("serves a client-credentials access token like an API key, over REST and SSE", suite.Req(reqOAuthAccept), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		if !strings.EqualFold(tok.TokenType, "bearer") {
			suite.Check(reqOAuthAccept, fmt.Errorf("the token endpoint %s issued token_type %q, want Bearer: the spec sends access tokens \"with the same bearer header\"", o.TokenURL, tok.TokenType))
		}
		auth := tok.Bearer()
		// The same read with the API key and with the token.
		list := client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}}
		key := suite.Do(ctx, list, reqOAuthAccept)
		list.Authorization = auth
		got := suite.Do(ctx, list, reqOAuthAccept)
		if key.Status == http.StatusOK {
			suite.Check(reqOAuthAccept, tokenAnswered(got, http.StatusOK))
		}
		// Writes and a stream with the token alone: a session, its event
		// stream opened before a task is submitted to it, the task read back.
		ws, err := suite.Workspace(ctx, reqOAuthAccept)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		se := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Authorization: auth,
			Body: map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, reqOAuthAccept)
		sess := createdID(reqOAuthAccept, se, http.StatusCreated)
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := suite.Client().Stream(sctx, client.Request{Path: "/v1/sessions/" + client.Seg(sess) + "/events/stream", Authorization: auth})
		suite.Transport(err, reqOAuthAccept)
		defer st.Close()
		streamOK := suite.Check(reqOAuthAccept, tokenAnswered(st.Response, http.StatusOK))
		task := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Authorization: auth,
			Body: echoTask("hello over OAuth2"), IdempotencyKey: suite.Key("oauth")}, reqOAuthAccept)
		id := createdID(reqOAuthAccept, task, http.StatusAccepted)
		read := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id), Authorization: auth}, reqOAuthAccept)
		suite.Check(reqOAuthAccept, tokenAnswered(read, http.StatusOK))
		if streamOK {
			wctx, done := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
			defer done()
			if _, err := st.NextEvent(wctx); err != nil {
				suite.Check(reqOAuthAccept, fmt.Errorf("%s with an access token: no event within --stream-timeout %s after a task was submitted to the session: %v",
					st.Response, suite.Env().Config.Timeouts.Stream, err))
			}
		}
	})

	It("refuses forged tokens and tokens of an issuer it does not trust with 401 unauthenticated", suite.Req(reqOAuthAccept, reqOAuthIssuer), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		tokenWorks(ctx, tok)
		claims, isJWT := oauth.Claims(tok.AccessToken)
		forged, err := oauth.Forge(claims, time.Now())
		suite.Must(reqOAuthIssuer, err)
		tampered, err := oauth.Tamper(tok.AccessToken)
		suite.Must(reqOAuthIssuer, err)
		suite.Env().Redactor.Add(forged, tampered) // the tampered one is the real token but for one claim
		what := "an opaque token with its last character changed"
		if isJWT {
			what = "the run's token with one claim added and its signature kept"
		}
		rt := newRefusedTokens(ctx, tok)
		rt.expect(ctx, reqOAuthIssuer, "a token of issuer "+oauth.ForeignIssuer+" signed by a key the target cannot know", forged)
		rt.expect(ctx, reqOAuthIssuer, what, tampered)
		badToken(ctx, o, rt, reqOAuthIssuer, target.TokenWrongIssuer, tok)
		rt.unchanged(ctx, reqOAuthIssuer)
	})

	It("refuses a token minted for another audience with 401 unauthenticated", suite.Req(reqOAuthAccept, reqOAuthAudience), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		tokenWorks(ctx, tok)
		rt := newRefusedTokens(ctx, tok)
		badToken(ctx, o, rt, reqOAuthAudience, target.TokenWrongAudience, tok)
		rt.unchanged(ctx, reqOAuthAudience)
	})

	It("refuses an expired token with 401 unauthenticated", suite.Req(reqOAuthAccept, reqOAuthExpiry), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		tokenWorks(ctx, tok)
		rt := newRefusedTokens(ctx, tok)
		badToken(ctx, o, rt, reqOAuthExpiry, target.TokenExpired, tok)
		rt.unchanged(ctx, reqOAuthExpiry)
	})

	It("refuses every scoped operation to a token without a scope it needs, and the refused writes change nothing", suite.Req(reqOAuthAccept, reqOAuthScope), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		tokenWorks(ctx, tok)
		fx := scopeFixtures(ctx, reqOAuthScope)
		before := fx.state(ctx)
		// One token per resource family, holding only a scope of an
		// unrelated resource: no reading of the scope names lets it call
		// the operation.
		tokens := map[string]*oauth.Token{}
		var unissued []string
		refused, inconclusive := 0, []string{}
		for _, p := range scopeProbes(fx) {
			t, seen := tokens[p.scope.Resource]
			if !seen {
				t = unrelatedToken(ctx, o, p.scope.Resource, &unissued)
				tokens[p.scope.Resource] = t
			}
			if t == nil {
				continue
			}
			resp := sendProbe(ctx, p, t, "a token with only "+t.Scope.String())
			ok, err := judgeScoped(resp, p, t.Scope.String())
			switch {
			case err != nil:
				suite.Check(reqOAuthScope, err)
			case ok:
				refused++
			default:
				inconclusive = append(inconclusive, fmt.Sprintf("%s (%s)", p.op.ID, resp))
			}
		}
		if len(inconclusive) > 0 {
			suite.Note(fmt.Sprintf("EXT-OAUTH-005: %d operations refused the under-scoped token for another reason than its scope (so they say nothing about scopes): %s",
				len(inconclusive), strings.Join(inconclusive, ", ")))
		}
		suite.Check(reqOAuthScope, fx.unchanged(ctx, before))
		if refused == 0 {
			reason := "no operation refused a token without its scope with 401 or 403"
			if len(unissued) > 0 {
				reason += "; the token endpoint issued none of " + strings.Join(unissued, ", ")
			}
			suite.NothingToCheck(reqOAuthScope, reason, "issue tokens for single scopes of the OpenAPI's oauth2ClientCredentials scheme (sessions:read, receipts:read, …) so the suite can hold a token that lacks one (docs/oauth.md#scopes)")
		}
	})

	It("names scopes by resource action: a read scope reads its resource but does not write it", suite.Req(reqOAuthAccept, reqOAuthNames), func(ctx SpecContext) {
		o := oauthSetup(ctx)
		tok := oauthToken(ctx, o, nil, reqOAuthAccept)
		tokenWorks(ctx, tok)
		fx := scopeFixtures(ctx, reqOAuthNames)
		// Which of the OpenAPI's scopes does the endpoint issue?
		declared, err := oauth.DeclaredScopes()
		suite.Must(reqOAuthNames, err)
		issued := map[string]*oauth.Token{}
		for _, s := range declared {
			if strings.HasPrefix(s, "receipts:") && !suite.Env().Discovery.Claims(requirements.Receipts) {
				continue // a target without receipts need not issue their scope
			}
			t, err := o.Client.Token(ctx, []string{s})
			suite.Transport(err, reqOAuthNames)
			if err != nil {
				suite.Should(reqOAuthNames, fmt.Errorf("the token endpoint does not issue the OpenAPI's scope %s: %v", s, err))
				continue
			}
			issued[s] = t
		}
		// A read scope alone reads its resource and writes nothing.
		for _, rc := range readOnlyCases(fx) {
			t := issued[rc.scope]
			if t == nil {
				continue
			}
			read := suite.Do(ctx, client.Request{Path: rc.read, Authorization: t.Bearer()}, reqOAuthNames)
			if read.Status != http.StatusOK {
				suite.Should(reqOAuthNames, fmt.Errorf("%s with a token holding only %s: status %d, want 200: the read scope should grant the read", read, rc.scope, read.Status))
			}
			w := rc.write
			w.Authorization, w.Probe = t.Bearer(), "OAuth: a token with only "+rc.scope
			wr := suite.Do(ctx, w, reqOAuthNames)
			if wr.Status/100 == 2 {
				suite.Should(reqOAuthNames, fmt.Errorf("%s with a token holding only %s: served (%d); a read scope should not grant writes", wr, rc.scope, wr.Status))
			}
		}
		// Every scoped operation refuses a token that holds every other
		// issued scope of the OpenAPI but its own.
		var all []string
		for s := range issued {
			all = append(all, s)
		}
		slices.Sort(all)
		without := map[string]*oauth.Token{}
		for _, p := range scopeProbes(fx) {
			if issued[p.scope.Scope] == nil {
				continue
			}
			t, seen := without[p.scope.Scope]
			if !seen {
				rest := slices.DeleteFunc(slices.Clone(all), func(s string) bool { return s == p.scope.Scope })
				if len(rest) > 0 {
					var err error
					t, err = o.Client.Token(ctx, rest)
					suite.Transport(err, reqOAuthNames)
					if err == nil && t.Scope.Has(p.scope.Scope) {
						t = nil // the server granted it anyway: no token lacks it
					}
				}
				without[p.scope.Scope] = t
			}
			if t == nil {
				continue
			}
			resp := sendProbe(ctx, p, t, "a token with every OpenAPI scope but "+p.scope.Scope)
			if resp.Status/100 == 2 {
				suite.Should(reqOAuthNames, fmt.Errorf("%s (%s) with a token holding every issued OpenAPI scope but %s: served (%d); the OpenAPI's scopes map %s %s to %s",
					resp, p.op.ID, p.scope.Scope, resp.Status, p.op.Method, p.op.Template, p.scope.Scope))
			}
		}
	})
})

// oauthSetup ends the spec unverified unless the run can get tokens.
func oauthSetup(ctx context.Context) *target.OAuth {
	GinkgoHelper()
	o := suite.Env().OAuth(ctx)
	suite.Transport(o.Err)
	if o.Client == nil {
		suite.Unverified(o.Missing, remedyOAuth)
	}
	return o
}

// oauthToken gets a token (nil scope: the run's default). A refused client
// is the operator's to fix (unverified); any other failure of the token
// endpoint is req's: a target that cannot issue tokens does not accept them.
func oauthToken(ctx context.Context, o *target.OAuth, scope []string, req string) *oauth.Token {
	GinkgoHelper()
	t, err := o.Client.Token(ctx, scope)
	suite.Transport(err, req)
	if target.ClientRefused(err) {
		suite.Unverified(err.Error(), remedyOAuth)
	}
	suite.Must(req, err)
	return t
}

// tokenWorks checks, before a refusal check, that the run's token is
// accepted on the request the refusals are probed on: a target that
// refuses every token must not pass them.
func tokenWorks(ctx context.Context, tok *oauth.Token) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}, Authorization: tok.Bearer()}, suite.SpecReqs()...)
	suite.Must(reqOAuthAccept, tokenAnswered(resp, http.StatusOK))
}

// tokenAnswered checks the answer to a request sent with a valid token.
func tokenAnswered(resp *client.Response, want int) error {
	if resp.Status == want {
		return nil
	}
	msg := fmt.Sprintf("%s with a valid access token: status %d, want %d", resp, resp.Status, want)
	if e, err := check.Envelope(resp); err == nil {
		msg += fmt.Sprintf(" (error %s: %s)", e.Code, e.Message)
	}
	return errors.New(msg)
}

// createdID ends the spec as req's failure unless resp created something.
func createdID(req string, resp *client.Response, want int) string {
	GinkgoHelper()
	suite.Must(req, tokenAnswered(resp, want))
	m, err := resp.Object()
	suite.Must(req, err)
	id, _ := m["id"].(string)
	if id == "" {
		suite.Must(req, fmt.Errorf("%s: the created resource has no id", resp))
	}
	return id
}

func echoTask(text string) map[string]any {
	return map[string]any{"input": map[string]any{"role": "user", "parts": []any{
		map[string]any{"type": "text", "text": text, "visibility": "public"}}}}
}

// refusedTokens are one spec's probes of tokens a target must refuse
// (EXT-OAUTH-002…004; docs/interpretations.md#generated-probes): every
// non-public operation of the OpenAPI (probes.go) — reads, writes and
// streams, addressed at the first key's resources with valid bodies, a
// made-up id where it has none of a kind (credentials are checked before
// the resource is looked up) — and the WebSocket upgrade and auth frame on
// both stream paths; and, at the end, the check that the refused writes
// changed nothing.
type refusedTokens struct {
	fx     actorFx
	marker string
	before check.Effects
	// noWS says why the WebSocket is not probed ("" when it is): a valid
	// token does not open a session either, or no credential may travel
	// over the target's ws:// URL.
	noWS string
	// sent names the tokens expect sent.
	sent []string
}

// newRefusedTokens makes the first key's resources (and reads a skill and
// a tool of the target's own), tries the WebSocket with the valid token,
// and reads what the refused writes must leave as it is.
func newRefusedTokens(ctx context.Context, valid *oauth.Token) *refusedTokens {
	GinkgoHelper()
	rt := &refusedTokens{fx: actorFixtures(ctx), marker: suite.Key("conform-refused")}
	for param, list := range map[string]string{"skill_id": "/v1/skills", "tool_id": "/v1/tools"} {
		resp := suite.Do(ctx, client.Request{Path: list, Query: url.Values{"limit": {"1"}}}, suite.SpecReqs()...)
		if p, err := check.ListPage(resp); err == nil && len(p.IDs) > 0 {
			rt.fx.ids[param] = p.IDs[0]
		}
	}
	if why := wsBlocked(); why != "" {
		rt.noWS = why
	} else if l, err := wsConnect(ctx, client.WSDial{Path: sessionStream(rt.fx.ids["session_id"]), Way: ws.ByHeaders, Authorization: valid.Bearer(),
		Probe: "OAuth: the run's valid access token, before the refused ones"}); err != nil {
		rt.noWS = fmt.Sprintf("the run's valid access token does not open a harn-ws.v1 session either: %v", err)
	} else {
		l.Close()
	}
	rt.before = effectsOf(ctx, rt.fx)
	return rt
}

// expect sends token, which what describes, on every probe and wants each
// refused with 401 unauthenticated without the token in the answer.
func (rt *refusedTokens) expect(ctx context.Context, req, what, token string) {
	GinkgoHelper()
	auth := "Bearer " + token
	rt.sent = append(rt.sent, what)
	var unoffers []string
	for _, op := range documentOps(nil) {
		p := address(op, rt.fx.ids, rt.marker)
		if op.Idempotent {
			p.req.IdempotencyKey = suite.Key("oauth-refused")
		}
		resp := sendOp(ctx, p, auth, "OAuth: "+what)
		if unoffered(ctx, p, auth, resp) {
			unoffers = append(unoffers, fmt.Sprintf("%s (%d)", op.ID, resp.Status))
			continue
		}
		suite.Check(req, judgeRefusal(resp, what+" ("+op.ID+")", token))
	}
	if len(unoffers) > 0 {
		suite.Note(fmt.Sprintf("%s: the target does not offer %s, so %s was not judged there", req, strings.Join(unoffers, ", "), what))
	}
	if rt.noWS != "" {
		suite.Note(fmt.Sprintf("%s: %s was not tried on the WebSocket: %s", req, what, rt.noWS))
		return
	}
	unauth := refusal{status: http.StatusUnauthorized, code: "unauthenticated", close: 4401, only: true, secret: token}
	for _, path := range []string{sessionStream(rt.fx.ids["session_id"]), taskStream(rt.fx.ids["task_id"])} {
		s, resp, err := wsAttempt(ctx, client.WSDial{Path: path, Way: ws.ByHeaders, Authorization: auth, Probe: "OAuth: " + what})
		suite.Check(req, judgeRefused(ctx, what+" in the WebSocket upgrade's Authorization header, on "+path, s, resp, err, withHTTP(unauth), 0, wsStream()))
		s, resp, err = wsAttempt(ctx, client.WSDial{Path: path, Way: ws.ByAuthFrame, Authorization: auth, Probe: "OAuth: " + what + " in the auth frame"})
		suite.Check(req, judgeRefused(ctx, what+" in the WebSocket auth frame, on "+path, s, resp, err, withFrame(unauth), 0, wsStream()))
	}
}

// unchanged checks that the writes sent with refused tokens had no effect.
func (rt *refusedTokens) unchanged(ctx context.Context, req string) {
	GinkgoHelper()
	if len(rt.sent) == 0 {
		return
	}
	suite.Check(req, check.NoEffect("writes sent with "+strings.Join(rt.sent, ", "), rt.before, effectsOf(ctx, rt.fx), rt.marker))
}

// judgeRefusal wants 401 unauthenticated (the code, when the body is an
// error envelope: the envelope itself is CORE-ERR-002's) and the token
// nowhere in the answer.
func judgeRefusal(resp *client.Response, what, token string) error {
	if resp.Status != http.StatusUnauthorized {
		return fmt.Errorf("%s with %s: status %d, want 401 unauthenticated", resp, what, resp.Status)
	}
	if e, err := check.Envelope(resp); err == nil && e.Code != "unauthenticated" {
		return fmt.Errorf("%s with %s: error.code = %q, want \"unauthenticated\"", resp, what, e.Code)
	}
	if err := check.NoSecret(resp, check.HoldsSecret(token)); err != nil {
		return fmt.Errorf("%s: the refusal repeats the presented token: %w", what, err)
	}
	return nil
}

// badToken checks a refused token of kind on rt's probes, or records req
// unverified when the run has none.
func badToken(ctx context.Context, o *target.OAuth, rt *refusedTokens, req, kind string, valid *oauth.Token) {
	GinkgoHelper()
	tok, from, err := o.BadToken(ctx, kind)
	suite.Transport(err, req)
	if err != nil {
		if target.ClientRefused(err) {
			suite.NothingToCheck(req, err.Error(), remedyOAuth)
			return
		}
		// The hook is the target's: a hook that fails is its failure.
		suite.Check(req, fmt.Errorf("the %s hook did not mint a %s token: %w", target.OAuthTestTokensCapability, kind, err))
		return
	}
	if tok == "" {
		suite.NothingToCheck(req, fmt.Sprintf("the run has no %s token from the target's issuer (no operator fixture, and discovery does not advertise %s)",
			strings.ReplaceAll(kind, "_", "-"), target.OAuthTestTokensCapability), remedyBadToken(kind))
		return
	}
	if from == target.TestTokenSource {
		suite.UsedHook(evidence.HookOAuthTestTokens, "a "+kind+" token minted with conform_test_token="+kind, req)
	}
	if why := fixtureProblem(kind, tok, valid.AccessToken, time.Now()); why != "" {
		suite.NothingToCheck(req, fmt.Sprintf("the %s token from %s cannot show this: %s", strings.ReplaceAll(kind, "_", "-"), from, why), remedyBadToken(kind))
		return
	}
	rt.expect(ctx, req, fmt.Sprintf("%s token (from %s)", badTokenName(kind), from), tok)
}

// badTokenName is "an expired", "a wrong-audience", "a wrong-issuer".
func badTokenName(kind string) string {
	name := strings.ReplaceAll(kind, "_", "-")
	if strings.HasPrefix(name, "e") {
		return "an " + name
	}
	return "a " + name
}

// fixtureProblem says why a bad token of kind cannot show what it should,
// when it and the run's valid token are JWTs whose claims say so: an
// expired token that has not expired, a wrong-audience or wrong-issuer
// token that has expired (it would be refused for that) or whose audience
// or issuer is the valid token's. Opaque tokens are taken on trust.
func fixtureProblem(kind, tok, valid string, now time.Time) string {
	c, ok := oauth.Claims(tok)
	if !ok {
		return ""
	}
	exp, hasExp := oauth.Expiry(c)
	v, vok := oauth.Claims(valid)
	switch kind {
	case target.TokenExpired:
		if hasExp && exp.After(now) {
			return fmt.Sprintf("it has not expired (exp %s)", exp.UTC().Format(time.RFC3339))
		}
		return ""
	case target.TokenWrongAudience:
		if vok && slices.Equal(oauth.Audiences(c), oauth.Audiences(v)) {
			return fmt.Sprintf("its audience %v is the run's own token's", oauth.Audiences(c))
		}
	case target.TokenWrongIssuer:
		if vok && c["iss"] == v["iss"] {
			return fmt.Sprintf("its issuer %v is the run's own token's", c["iss"])
		}
	}
	if hasExp && !exp.After(now) {
		return fmt.Sprintf("it has expired (exp %s), so a refusal would not show why; mint a fresh one", exp.UTC().Format(time.RFC3339))
	}
	return ""
}

// ---- scopes per operation ----

// scopeFx is the real resources the scope probes address, made with the
// API key.
type scopeFx struct {
	workspace, session, task, event, artifact, receipt string
	taskDone                                           bool
}

// scopeFixtures makes a session with a finished task, and an artifact when
// the target registers one; it reads an event id and the task's receipt.
func scopeFixtures(ctx context.Context, req string) scopeFx {
	GinkgoHelper()
	var fx scopeFx
	var err error
	if fx.workspace, err = suite.Workspace(ctx, req); err != nil {
		suite.Unverified(err.Error(), suite.RemedyWorkspace)
	}
	setup := func(resp *client.Response, want ...int) map[string]any {
		m, err := resp.Object()
		if !slices.Contains(want, resp.Status) || err != nil {
			suite.Unverified(fmt.Sprintf("setting up the resources the scope checks address: %s with the API key, want %v", resp, want),
				"make session create and task submit work with the API key (Core)")
		}
		return m
	}
	se := setup(suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions",
		Body: map[string]any{"workspace_id": fx.workspace, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, req), http.StatusCreated)
	fx.session, _ = se["id"].(string)
	tk := setup(suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(fx.session) + "/tasks",
		Body: echoTask("scope fixtures"), IdempotencyKey: suite.Key("oauth-fx")}, req), http.StatusAccepted)
	fx.task, _ = tk["id"].(string)
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for !fx.taskDone && time.Now().Before(deadline) {
		got := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(fx.task)}, req)
		m, _ := got.Object()
		st, _ := m["status"].(string)
		if fx.taskDone = check.Terminal(st); fx.taskDone {
			fx.receipt, _ = m["receipt_id"].(string)
			break
		}
		if !pace.Wait(ctx) {
			suite.Transport(&client.TransportError{Method: "GET", URL: "/v1/tasks/" + fx.task, Err: ctx.Err()}, req)
		}
	}
	evs := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(fx.task) + "/events", Query: url.Values{"limit": {"1"}}}, req)
	if p, err := check.ListPage(evs); err == nil && len(p.IDs) > 0 {
		fx.event = p.IDs[0]
	}
	art := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", IdempotencyKey: suite.Key("oauth-fx"),
		Body: map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "session_id": fx.session}}, req)
	if m, err := art.Object(); err == nil && art.Status/100 == 2 {
		fx.artifact, _ = m["id"].(string)
	}
	return fx
}

// fxState is what the refused writes must leave as it was.
type fxState struct {
	session, task map[string]any
	tasks         []string
}

func (fx scopeFx) state(ctx context.Context) fxState {
	GinkgoHelper()
	var s fxState
	s.session = readObj(ctx, "/v1/sessions/"+client.Seg(fx.session))
	if fx.taskDone {
		s.task = readObj(ctx, "/v1/tasks/"+client.Seg(fx.task))
	}
	l := suite.Do(ctx, client.Request{Path: "/v1/sessions/" + client.Seg(fx.session) + "/tasks", Query: url.Values{"limit": {"200"}}}, suite.SpecReqs()...)
	if p, err := check.ListPage(l); err == nil {
		s.tasks = p.IDs
	}
	return s
}

func readObj(ctx context.Context, path string) map[string]any {
	GinkgoHelper()
	m, _ := suite.Do(ctx, client.Request{Path: path}, suite.SpecReqs()...).Object()
	return m
}

// unchanged compares the session, the finished task and the session's task
// list before and after the refused writes.
func (fx scopeFx) unchanged(ctx context.Context, before fxState) error {
	GinkgoHelper()
	after := fx.state(ctx)
	var errs []string
	if err := check.Unchanged("session "+fx.session, before.session, after.session, "state", "updated_at", "summary", "metadata"); err != nil && before.session != nil {
		errs = append(errs, err.Error())
	}
	if err := check.Unchanged("task "+fx.task, before.task, after.task, "status", "updated_at"); err != nil && before.task != nil {
		errs = append(errs, err.Error())
	}
	if !slices.Equal(before.tasks, after.tasks) {
		errs = append(errs, fmt.Sprintf("session %s listed tasks %v before and %v after", fx.session, before.tasks, after.tasks))
	}
	if len(errs) > 0 {
		return fmt.Errorf("writes refused for want of a scope changed state: %s", strings.Join(errs, "; "))
	}
	return nil
}

// scopeProbe is one scoped operation, addressed at the fixtures.
type scopeProbe struct {
	op    openapi.Operation
	scope oauth.Operation
	req   client.Request // without credentials
	real  bool           // every path parameter names a real resource
}

// scopeProbes lists the operations of the OpenAPI whose scope the document
// declares (docs/oauth.md#scopes), leaving out the public ones, the later
// revision's local-server routes and the project's extensions.
func scopeProbes(fx scopeFx) []scopeProbe {
	GinkgoHelper()
	doc, err := openapi.Default()
	if err != nil {
		Fail("the vendored OpenAPI document does not load: " + err.Error())
	}
	ids := map[string]string{"session_id": fx.session, "task_id": fx.task, "event_id": fx.event, "artifact_id": fx.artifact, "receipt_id": fx.receipt}
	fake := suite.Key("conform-missing")
	marker := suite.Key("conform-scope")
	var out []scopeProbe
	for _, op := range doc.Operations() {
		sc, ok := oauth.ScopeOf(op.ID)
		if op.Public || op.LocalServer || op.Extension || !ok || !sc.Declared {
			continue
		}
		p := scopeProbe{op: op, scope: sc, real: true}
		path := op.Template
		for _, name := range op.PathParams {
			id := ids[name]
			if id == "" {
				id, p.real = fake, false
			}
			path = strings.ReplaceAll(path, "{"+name+"}", client.Seg(id))
		}
		p.req = client.Request{Method: op.Method, Path: path}
		if op.HasBody {
			p.req.Body = opBody(op.ID, map[string]string{"workspace_id": fx.workspace, "session_id": fx.session}, marker) // probes.go
		}
		if op.Idempotent {
			p.req.IdempotencyKey = suite.Key("oauth-scope")
		}
		out = append(out, p)
	}
	return out
}

// sendProbe sends p with token t; a stream is opened and closed at once.
func sendProbe(ctx context.Context, p scopeProbe, t *oauth.Token, what string) *client.Response {
	GinkgoHelper()
	r := p.req
	r.Authorization = t.Bearer()
	r.Probe = fmt.Sprintf("OAuth: %s (%s needs %s)", what, p.op.ID, p.scope.Scope)
	if !p.op.Stream {
		return suite.Do(ctx, r, suite.SpecReqs()...)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := suite.Client().Stream(sctx, r)
	suite.Transport(err, suite.SpecReqs()...)
	st.Close()
	return st.Response
}

// judgeScoped judges an operation's answer to a token without its scope.
// 401 unauthenticated and 403 permission_denied are refusals for the
// scope (ok); a 2xx means the operation was performed (an error), and so
// does a 401 or 403 with another code (the error table ties them). Any
// other refusal (a 404 for a made-up id, a 400, a 409) says nothing about
// scopes, except on a list that takes no id and no body, which nothing but
// the credential can refuse.
func judgeScoped(resp *client.Response, p scopeProbe, held string) (bool, error) {
	where := fmt.Sprintf("%s (%s, which needs %s) with a token holding only %s", resp, p.op.ID, p.scope.Scope, held)
	switch {
	case resp.Status/100 == 2:
		return false, fmt.Errorf("%s: served (%d), want 403 permission_denied or 401 unauthenticated", where, resp.Status)
	case resp.Status == http.StatusForbidden || resp.Status == http.StatusUnauthorized:
		want := map[int]string{http.StatusForbidden: "permission_denied", http.StatusUnauthorized: "unauthenticated"}[resp.Status]
		if e, err := check.Envelope(resp); err == nil && e.Code != want {
			return false, fmt.Errorf("%s: error.code = %q with status %d, want %q", where, e.Code, resp.Status, want)
		}
		return true, nil
	case len(p.op.PathParams) == 0 && !p.op.HasBody:
		return false, fmt.Errorf("%s: status %d, want 403 permission_denied or 401 unauthenticated", where, resp.Status)
	}
	return false, nil
}

// unrelatedScopes are the scopes tried, in order, for a token that may
// call none of resource's operations under any reading of the scope names.
func unrelatedScopes(resource string) []string {
	switch resource {
	case "receipts":
		return []string{"artifacts:read", "sessions:read"}
	case "artifacts":
		return []string{"receipts:read", "sessions:read"}
	}
	return []string{"receipts:read", "artifacts:read"} // sessions, tasks, events: one family
}

// unrelatedToken gets a token holding one unrelated scope (nil when the
// endpoint issues none of them, each noted in unissued).
func unrelatedToken(ctx context.Context, o *target.OAuth, resource string, unissued *[]string) *oauth.Token {
	GinkgoHelper()
	for _, s := range unrelatedScopes(resource) {
		t, err := o.Client.Token(ctx, []string{s})
		suite.Transport(err, suite.SpecReqs()...)
		if err != nil {
			if !slices.Contains(*unissued, s) {
				*unissued = append(*unissued, s)
			}
			continue
		}
		if grantsResource(t.Scope, resource) {
			continue // the server granted more than asked for
		}
		return t
	}
	return nil
}

func grantsResource(s oauth.ScopeSet, resource string) bool {
	for sc := range s {
		if strings.HasPrefix(sc, resource+":") {
			return true
		}
	}
	return false
}

// readOnlyCase is a read scope with a read it grants and a write it does not.
type readOnlyCase struct {
	scope string
	read  string
	write client.Request
}

func readOnlyCases(fx scopeFx) []readOnlyCase {
	cs := []readOnlyCase{
		{"sessions:read", "/v1/sessions/" + client.Seg(fx.session),
			client.Request{Method: http.MethodPatch, Path: "/v1/sessions/" + client.Seg(fx.session), Body: map[string]any{"metadata": map[string]any{"conform.probe": "read-only"}}}},
		{"tasks:read", "/v1/tasks/" + client.Seg(fx.task),
			client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(fx.session) + "/tasks", Body: echoTask("read-only probe"), IdempotencyKey: suite.Key("oauth-ro")}},
	}
	if fx.artifact != "" {
		cs = append(cs, readOnlyCase{"artifacts:read", "/v1/artifacts/" + client.Seg(fx.artifact),
			client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public"}, IdempotencyKey: suite.Key("oauth-ro")}})
	}
	return cs
}
