package core

import (
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Idempotency", func() {
	It("replays a Task submit retried with the same key and body", suite.Req("CORE-IDEM-001"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-001")
		key := suite.Key("idem-task")
		req := client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask("once"), IdempotencyKey: key}
		first := suite.Do(ctx, req, "CORE-IDEM-001")
		suite.Must("CORE-IDEM-001", check.Status(first, http.StatusOK, http.StatusCreated, http.StatusAccepted))
		retry := suite.Do(ctx, req, "CORE-IDEM-001")
		suite.Check("CORE-IDEM-001", check.Replayed(first, retry, "session_id", "input"))
		items, complete, readable := listAll(ctx, "CORE-IDEM-001", "/v1/sessions/"+client.Seg(sess)+"/tasks", nil)
		if !readable {
			listFailed("CORE-IDEM-001", "CORE-IDEM-001")
		}
		if complete && len(items) != 1 {
			suite.Check("CORE-IDEM-001", fmt.Errorf("GET /v1/sessions/%s/tasks lists %d tasks after one submit and its retry, want 1", sess, len(items)))
		}
	})

	It("refuses a Task submit key reused with a different body with 409", suite.Req("CORE-IDEM-002", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-002")
		key := suite.Key("idem-task")
		path := "/v1/sessions/" + client.Seg(sess) + "/tasks"
		first := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: echoTask("first body"), IdempotencyKey: key}, "CORE-IDEM-002")
		suite.Must("CORE-IDEM-002", check.Status(first, http.StatusOK, http.StatusCreated, http.StatusAccepted))
		second := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: echoTask("another body"), IdempotencyKey: key}, "CORE-IDEM-002")
		expectError(second, "CORE-IDEM-002", http.StatusConflict, "idempotency_key_reused")
	})

	It("replays a Message append retried with the same key and body", suite.Req("CORE-IDEM-004"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-004")
		req := client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages",
			Body: map[string]any{"message": textMessage("user", "said once")}, IdempotencyKey: suite.Key("idem-msg")}
		first := suite.Do(ctx, req, "CORE-IDEM-004")
		suite.Must("CORE-IDEM-004", check.Status(first, http.StatusOK, http.StatusCreated))
		retry := suite.Do(ctx, req, "CORE-IDEM-004")
		suite.Check("CORE-IDEM-004", check.Replayed(first, retry, "role", "parts"))
		items, complete, readable := listAll(ctx, "CORE-IDEM-004", "/v1/sessions/"+client.Seg(sess)+"/messages", nil)
		if !readable {
			listFailed("CORE-IDEM-004", "CORE-IDEM-004")
		}
		if complete && len(items) != 1 {
			suite.Check("CORE-IDEM-004", fmt.Errorf("GET /v1/sessions/%s/messages lists %d messages after one append and its retry, want 1", sess, len(items)))
		}
	})

	It("refuses a Message append key reused with a different body with 409", suite.Req("CORE-IDEM-005", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-005")
		key := suite.Key("idem-msg")
		path := "/v1/sessions/" + client.Seg(sess) + "/messages"
		first := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: map[string]any{"message": textMessage("user", "one")}, IdempotencyKey: key}, "CORE-IDEM-005")
		suite.Must("CORE-IDEM-005", check.Status(first, http.StatusOK, http.StatusCreated))
		second := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: map[string]any{"message": textMessage("user", "two")}, IdempotencyKey: key}, "CORE-IDEM-005")
		expectError(second, "CORE-IDEM-005", http.StatusConflict, "idempotency_key_reused")
	})

	It("accepts keys of 1 to 255 characters and refuses empty or longer ones", suite.Req("CORE-IDEM-006"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-IDEM-006")
		path := "/v1/sessions/" + client.Seg(sess) + "/messages"
		body := map[string]any{"message": textMessage("user", "key length")}
		unique := suite.Key("k")
		long := unique + strings.Repeat("k", 255-len(unique))
		// A one-character key cannot be run-unique, but the scope includes the
		// target path, and this spec's Session is its own.
		for _, key := range []string{"k", long} {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: body, IdempotencyKey: key}, "CORE-IDEM-006")
			if err := check.Status(resp, http.StatusOK, http.StatusCreated); err != nil {
				suite.Should("CORE-IDEM-006", fmt.Errorf("a %d-character Idempotency-Key: %w", len(key), err))
			}
		}
		for _, key := range []string{"", long + "k"} {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: body,
				Header: http.Header{"Idempotency-Key": {key}}, Probe: "Idempotency-Key of a refused length"}, "CORE-IDEM-006")
			if err := check.Status(resp, http.StatusBadRequest); err != nil {
				suite.Should("CORE-IDEM-006", fmt.Errorf("a %d-character Idempotency-Key: %w", len(key), err))
			}
		}
	})

	It("scopes a key to its target path", suite.Req("CORE-IDEM-007"), func(ctx SpecContext) {
		a, b := sessionID(ctx, "CORE-IDEM-007"), sessionID(ctx, "CORE-IDEM-007")
		key := suite.Key("idem-scope")
		var ids []string
		for i, sess := range []string{a, b} {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks",
				Body: echoTask(fmt.Sprintf("scope %d", i)), IdempotencyKey: key}, "CORE-IDEM-007")
			if err := check.Status(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted); err != nil {
				suite.Check("CORE-IDEM-007", fmt.Errorf("the same Idempotency-Key on another Session's task path: %w", err))
				return
			}
			ids = append(ids, idOf(succeeded("CORE-IDEM-007", resp)))
		}
		if ids[0] == ids[1] {
			suite.Check("CORE-IDEM-007", fmt.Errorf("submits on two Sessions with one Idempotency-Key both answered task %q, want two Tasks", ids[0]))
		}
	})
})
