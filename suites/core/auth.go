package core

import (
	"encoding/base64"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// presentedKeyEchoed checks that a key the client presented (not
// necessarily the configured one) does not come back in the answer.
func presentedKeyEchoed(resp *client.Response, key string) error {
	return check.NoSecret(resp, check.HoldsSecret(key))
}

var _ = Describe("Authentication", func() {
	It("refuses a request without Authorization with 401 unauthenticated", suite.Req("CORE-AUTH-001", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", NoAuth: true, Probe: "no Authorization"}, "CORE-AUTH-001")
		expectError(resp, "CORE-AUTH-001", http.StatusUnauthorized, "unauthenticated")
		// A write too: the body names no real Session, so a target that
		// skips authentication refuses it for another reason and creates nothing.
		resp = suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks", NoAuth: true, Probe: "no Authorization",
			Body: map[string]any{"session_id": suite.Key("conform-missing"), "input": textMessage("user", "x")}}, "CORE-AUTH-001")
		expectError(resp, "CORE-AUTH-001", http.StatusUnauthorized, "unauthenticated")
	})

	It("refuses malformed Authorization headers with 401 unauthenticated", suite.Req("CORE-AUTH-002", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		basic := base64.StdEncoding.EncodeToString([]byte("conform:" + suite.Key("not-a-key")))
		for _, h := range []string{
			"Bearer",                          // no credential
			"Basic " + basic,                  // another scheme
			"Token " + suite.Key("not-a-key"), // an unknown scheme
		} {
			resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Authorization: h, Probe: "malformed Authorization"}, "CORE-AUTH-002")
			expectError(resp, "CORE-AUTH-002", http.StatusUnauthorized, "unauthenticated")
		}
	})

	It("refuses a wrong API key with 401 and accepts the configured one", suite.Req("CORE-AUTH-003", "CORE-AUTH-004", "CORE-ERR-002", "CORE-ERR-003"), func(ctx SpecContext) {
		ok := suite.Do(ctx, client.Request{Path: "/v1/tasks"}, "CORE-AUTH-003")
		if err := check.Status(ok, http.StatusOK); err != nil {
			observeError(ok)
			// The wrong keys are still judged: their refusals do not
			// depend on the right key being accepted.
			suite.Check("CORE-AUTH-003", fmt.Errorf("the configured API key is not accepted: %w", err))
		}
		// Two wrong keys: an unrelated one, and the real key with a suffix,
		// so an echo of the presented key also leaks the real one.
		wrong := suite.Key("sk-conform-wrong")
		for _, key := range []string{wrong, suite.Env().Config.APIKey + "-conform-wrong"} {
			resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Authorization: "Bearer " + key}, "CORE-AUTH-003")
			expectError(resp, "CORE-AUTH-003", http.StatusUnauthorized, "unauthenticated")
			if err := presentedKeyEchoed(resp, key); err != nil {
				suite.Check("CORE-AUTH-004", fmt.Errorf("the presented (wrong) key is echoed: %w", err))
			}
		}
	})

	It("never shows the API key in the resources and events a client reads", suite.Req("CORE-AUTH-004"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-AUTH-004")
		sub := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks",
			Body: echoTask("who am I?"), IdempotencyKey: suite.Key("auth")}, "CORE-AUTH-004")
		task := succeeded(reqSubmit, sub)
		id := idOf(task)
		final, _ := awaitTerminal(ctx, "CORE-AUTH-004", id)
		events := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/events"}, "CORE-AUTH-004")
		session := suite.Do(ctx, client.Request{Path: "/v1/sessions/" + client.Seg(sess) + "/events"}, "CORE-AUTH-004")
		for _, r := range []*client.Response{sub, final, events, session} {
			suite.Check("CORE-AUTH-004", check.NoSecret(r, suite.Env().Redactor.Contains))
		}
	})
})
