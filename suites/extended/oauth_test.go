package extended

import (
	"crypto/ed25519"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/oauth"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/target"
)

func answer(status int, body string) *client.Response {
	return &client.Response{Method: "GET", URL: "http://h/v1/tasks", Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: []byte(body)}
}

func errBody(code string) string {
	return `{"error":{"code":"` + code + `","message":"m","type":"auth_error"}}`
}

func TestJudgeRefusal(t *testing.T) {
	const tok = "eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln"
	for _, tc := range []struct {
		resp *client.Response
		says string // "" = accepted
	}{
		{answer(401, errBody("unauthenticated")), ""},
		{answer(401, "not an envelope"), ""}, // the envelope is CORE-ERR-002's
		{answer(403, errBody("permission_denied")), "want 401"},
		{answer(200, `{"object":"list","data":[]}`), "want 401"},
		{answer(401, errBody("invalid_token")), `error.code = "invalid_token"`},
		{answer(401, `{"error":{"code":"unauthenticated","message":"token `+tok+` is bad","type":"auth_error"}}`), "repeats the presented token"},
	} {
		err := judgeRefusal(tc.resp, "a forged token", tok)
		if tc.says == "" && err != nil || tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
			t.Errorf("judgeRefusal(%d %s) = %v, want %q", tc.resp.Status, tc.resp.Body, err, tc.says)
		}
	}
}

func TestJudgeScoped(t *testing.T) {
	list := scopeProbe{op: openapi.Operation{ID: "listTasks", Method: "GET", Template: "/v1/tasks"}, scope: oauth.Operation{Scope: "tasks:read"}}
	get := scopeProbe{op: openapi.Operation{ID: "getTask", Method: "GET", Template: "/v1/tasks/{task_id}", PathParams: []string{"task_id"}}, scope: oauth.Operation{Scope: "tasks:read"}}
	for _, tc := range []struct {
		p       scopeProbe
		resp    *client.Response
		refused bool
		says    string // an error's text; "" = no error
	}{
		{list, answer(403, errBody("permission_denied")), true, ""},
		{list, answer(401, errBody("unauthenticated")), true, ""},
		{list, answer(200, `{}`), false, "served (200)"},
		{list, answer(403, errBody("unauthenticated")), false, `want "permission_denied"`},
		{list, answer(404, errBody("resource_not_found")), false, "status 404"}, // nothing but the credential can refuse a plain list
		{get, answer(404, errBody("resource_not_found")), false, ""},            // another reason: says nothing about scopes
		{get, answer(409, errBody("conflict")), false, ""},
		{get, answer(204, ``), false, "served (204)"},
	} {
		refused, err := judgeScoped(tc.resp, tc.p, "receipts:read")
		if refused != tc.refused || (tc.says == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("judgeScoped(%s, %d) = %v, %v; want %v, %q", tc.p.op.ID, tc.resp.Status, refused, err, tc.refused, tc.says)
		}
	}
}

func TestFixtureProblem(t *testing.T) {
	_, key, _ := ed25519.GenerateKey(nil)
	now := time.Unix(1_800_000_000, 0)
	mint := func(edit func(map[string]any)) string {
		c := map[string]any{"iss": "https://h", "aud": "https://h/v1", "exp": now.Add(time.Hour).Unix()}
		edit(c)
		tok, _ := oauth.Sign(c, "k", key)
		return tok
	}
	valid := mint(func(map[string]any) {})
	past := now.Add(-time.Minute).Unix()
	for _, tc := range []struct {
		kind, tok, says string
	}{
		{target.TokenExpired, mint(func(c map[string]any) { c["exp"] = past }), ""},
		{target.TokenExpired, valid, "has not expired"},
		{target.TokenExpired, "opaque-fixture", ""},
		{target.TokenWrongAudience, mint(func(c map[string]any) { c["aud"] = "https://other/v1" }), ""},
		{target.TokenWrongAudience, valid, "audience"},
		{target.TokenWrongAudience, mint(func(c map[string]any) { c["aud"] = "https://other/v1"; c["exp"] = past }), "has expired"},
		{target.TokenWrongIssuer, mint(func(c map[string]any) { c["iss"] = "https://other" }), ""},
		{target.TokenWrongIssuer, valid, "issuer"},
	} {
		got := fixtureProblem(tc.kind, tc.tok, valid, now)
		if tc.says == "" && got != "" || tc.says != "" && !strings.Contains(got, tc.says) {
			t.Errorf("fixtureProblem(%s) = %q, want %q", tc.kind, got, tc.says)
		}
	}
}

func TestUnrelatedScopes(t *testing.T) {
	declared, _ := oauth.DeclaredScopes()
	for _, r := range []string{"sessions", "tasks", "events", "artifacts", "receipts"} {
		for _, s := range unrelatedScopes(r) {
			res, _, _ := strings.Cut(s, ":")
			if res == r || (r != "receipts" && r != "artifacts" && (res == "sessions" || res == "tasks" || res == "events")) {
				t.Errorf("unrelatedScopes(%s) offers %s", r, s)
			}
			found := false
			for _, d := range declared {
				found = found || d == s
			}
			if !found {
				t.Errorf("unrelatedScopes(%s) offers %s, which the OpenAPI does not declare", r, s)
			}
		}
	}
	if !grantsResource(oauth.ParseScope("tasks:read receipts:read"), "tasks") || grantsResource(oauth.ParseScope("receipts:read"), "tasks") {
		t.Error("grantsResource is wrong")
	}
	if badTokenName("expired") != "an expired" || badTokenName("wrong_issuer") != "a wrong-issuer" {
		t.Error("badTokenName is wrong")
	}
}
