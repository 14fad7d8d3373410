package extended

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Idempotency of Extended writes (EXT-IDEM-002, EXT-IDEM-003; EXT-IDEM-001
// is in artifacts.go).

// keyedWrite is one Extended write the OpenAPI gives an Idempotency-Key.
type keyedWrite struct {
	op     string // operationId, for messages
	method string
	path   string
	body   any
	// same compares a first answer and its retry: "" when they are the
	// same resource (and, for a result, the same result).
	same func(a, b map[string]any) string
}

// sameID: a retried create answers the resource the first one made.
func sameID(a, b map[string]any) string {
	if xID(a) == "" || xID(a) != xID(b) {
		return fmt.Sprintf("answered id %q, then %q", xID(a), xID(b))
	}
	return ""
}

// sameTruncate: a retried truncate answers the first one's counts.
func sameTruncate(a, b map[string]any) string {
	for _, f := range []string{"session_id", "kept_turn_count", "removed_turn_count"} {
		if fmt.Sprint(a[f]) != fmt.Sprint(b[f]) {
			return fmt.Sprintf("answered %s %v, then %v", f, a[f], b[f])
		}
	}
	return ""
}

// keyedWrites builds the writes EXT-IDEM-003 names, each on state of its own.
func keyedWrites(ctx context.Context) []keyedWrite {
	GinkgoHelper()
	ws := xWorkspace(ctx)
	persona := createPersona(ctx, nil)
	wsOwn := xID(xSetup(ctx, "creating a Workspace (POST /v1/workspaces)", reqWorkspace, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
		Body: map[string]any{"name": suite.Key("conform-ws"), "root": "conform://idem"}}))
	forked := xID(xSession(ctx, ws, ""))
	xAppend(ctx, forked, 1, "fork me")
	walked := xID(xSession(ctx, ws, ""))
	xAppend(ctx, walked, 3, "walk back")
	branched := xID(xSession(ctx, ws, ""))
	return []keyedWrite{
		{"createPersona", http.MethodPost, "/v1/personas", personaBody(suite.Key("conform-persona"), nil), sameID},
		{"updatePersona", http.MethodPatch, "/v1/personas/" + client.Seg(persona), map[string]any{"description": "patched once"}, sameID},
		{"createWorkspace", http.MethodPost, "/v1/workspaces", map[string]any{"name": suite.Key("conform-ws"), "root": "conform://idem"}, sameID},
		{"updateWorkspace", http.MethodPatch, "/v1/workspaces/" + client.Seg(wsOwn), map[string]any{"name": "patched once"}, sameID},
		{"createSessionBranch", http.MethodPost, "/v1/sessions/" + client.Seg(branched) + "/branches", map[string]any{"kind": "session", "base_ref": "conform-idem"}, sameID},
		{"forkSession", http.MethodPost, "/v1/sessions/" + client.Seg(forked) + "/fork", map[string]any{}, sameID},
		{"truncateSession", http.MethodPost, "/v1/sessions/" + client.Seg(walked) + "/truncate", map[string]any{"keep_first": 1}, sameTruncate},
		{"createMemory", http.MethodPost, "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "conform idempotency probe",
			"provenance": map[string]any{"actor": "conform"}}, sameID},
		{"createVault", http.MethodPost, "/v1/vaults", map[string]any{"workspace_id": ws, "provider": "conform-test", "capabilities": []any{"read"}}, sameID},
	}
}

var _ = Describe("Idempotency of Extended writes", func() {
	It("accepts Idempotency-Key on the Extended writes that are not naturally idempotent, and a retry repeats the first answer", suite.Req(reqExtIdem), func(ctx SpecContext) {
		judged, skipped := 0, []string{}
		for _, w := range keyedWrites(ctx) {
			key := suite.Key("conform-idem")
			req := client.Request{Method: w.method, Path: w.path, Body: w.body, IdempotencyKey: key}
			first := suite.Do(ctx, req, reqExtIdem)
			// docs/interpretations.md#offered-by-evidence: a refusal the
			// evidence contradicts is the write's own requirement's to
			// judge, not this one's: noted with the others.
			if why, err := suite.Unoffered(ctx, suite.Offering{Request: req, Answer: first}, reqExtIdem); why != "" || err != nil {
				skipped = append(skipped, fmt.Sprintf("%s (%v)", w.op, cmp.Or(why, fmt.Sprint(err))))
				continue
			}
			if first.Status/100 != 2 {
				if e, err := check.Envelope(first); err == nil && strings.EqualFold(e.Param, "Idempotency-Key") {
					suite.Check(reqExtIdem, fmt.Errorf("%s %s (%s) refuses the Idempotency-Key: %s (error %s: %s)", w.method, w.path, w.op, first, e.Code, e.Message))
					judged++
					continue
				}
				skipped = append(skipped, fmt.Sprintf("%s (%s%s)", w.op, first, xHint(first)))
				continue
			}
			retry := suite.Do(ctx, req, reqExtIdem)
			judged++
			a, errA := first.Object()
			b, errB := retry.Object()
			switch {
			case retry.Status/100 != 2:
				suite.Check(reqExtIdem, fmt.Errorf("%s %s (%s) retried with the same Idempotency-Key and body: %s%s, want the first answer again", w.method, w.path, w.op, retry, xHint(retry)))
			case errA != nil || errB != nil:
				suite.Check(reqExtIdem, fmt.Errorf("%s %s (%s): answers are not JSON objects: %v %v", w.method, w.path, w.op, errA, errB))
			default:
				if d := w.same(a, b); d != "" {
					suite.Check(reqExtIdem, fmt.Errorf("%s %s (%s) retried with Idempotency-Key %q and the same body %s, want the first answer's resource", w.method, w.path, w.op, key, d))
				}
			}
		}
		if len(skipped) > 0 {
			suite.Note(fmt.Sprintf("%s: not judged: %s", reqExtIdem, strings.Join(skipped, "; ")))
		}
		if judged == 0 {
			suite.NothingToCheck(reqExtIdem, "none of the Extended writes could be made with an Idempotency-Key: "+strings.Join(skipped, "; "),
				"offer the Extended resources' writes (POST /v1/personas, /v1/workspaces, /v1/sessions/{id}/branches, fork, truncate, …)")
		}
	})

	It("records one approval for a retried tool confirmation with the same Idempotency-Key", suite.Req(reqApprovalIdem), func(ctx SpecContext) {
		xHook("no task can be made to wait for an approval")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		id := xSubmit(ctx, sess, nil, xStep("tool_approval", "tool", "conform.noop"))
		m, ok := xAwait(ctx, id, func(s string) bool { return s == check.AuthRequired || check.Terminal(s) })
		if !ok || xStr(m, "status") != check.AuthRequired {
			suite.Unverified(fmt.Sprintf("task %s with a tool_approval step did not wait for an approval (it is %v)", id, m["status"]),
				"run the tool_approval step as docs/scenarios.md says: AUTH_REQUIRED until a tool_confirmation")
		}
		key := suite.Key("conform-approval")
		first := approve(ctx, id, key)
		retry := suite.Do(ctx, approveRequest(id, key), reqApprovalIdem)
		a, _ := first.Object()
		b, err := retry.Object()
		if retry.Status/100 != 2 || err != nil || xID(a) == "" || xID(a) != xID(b) {
			suite.Check(reqApprovalIdem, fmt.Errorf("a tool_confirmation retried with Idempotency-Key %q and the same body: the first answer was message %q, the retry %s with id %q%s",
				key, xID(a), retry, xID(b), xHint(retry)))
		}
		xTerminal(ctx, id)
		k := xKinds(xEvents(ctx, id))
		if k["user.tool_confirmation"] != 1 || k["tool.approved"] > 1 {
			suite.Check(reqApprovalIdem, fmt.Errorf("task %s records %d user.tool_confirmation and %d tool.approved events for one approval sent twice with the same Idempotency-Key, want one of each",
				id, k["user.tool_confirmation"], k["tool.approved"]))
		}
	})
})
