package extended

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/suite"
)

// Idempotency of Extended writes (EXT-IDEM-002…005; EXT-IDEM-001 is in
// artifacts.go). EXT-IDEM-004 and -005 are generated probes (probes.go):
// every keyed write of the OpenAPI, and every create two actors can send
// to the same target.

const (
	reqExtIdemReuse = "EXT-IDEM-004" // a reused key with another body: 409, no effect
	reqExtIdemActor = "EXT-IDEM-005" // a key's scope includes the actor
)

// coreReuse are the keyed writes whose reuse the Core level checks
// (CORE-IDEM-002, CORE-IDEM-005).
var coreReuse = map[string]bool{"submitSessionTask": true, "appendSessionMessage": true}

// sharedTargets are the creates whose target and body name no resource of
// an actor's, so that two actors can send the very same request (method,
// canonical target, body, key): EXT-IDEM-005's probes.
var sharedTargets = map[string]bool{"createWorkspace": true, "createPersona": true, "registerArtifact": true, "createVault": true}

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
				// A refusal that does not name the key may still be about it:
				// the same write without the key tells.
				bare := suite.Do(ctx, client.Request{Method: w.method, Path: w.path, Body: w.body, Probe: "the write refused with an Idempotency-Key, sent again without it"}, reqExtIdem)
				if bare.Status/100 == 2 {
					suite.Check(reqExtIdem, fmt.Errorf("%s %s (%s) refused the write with Idempotency-Key %q (%s%s) and carried it out without the key (%s): the key is what it refuses",
						w.method, w.path, w.op, key, first, xHint(first), bare))
					judged++
					continue
				}
				skipped = append(skipped, fmt.Sprintf("%s (%s%s, and without the key %s)", w.op, first, xHint(first), bare))
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

	It("refuses a reused Idempotency-Key with another body on every keyed write of the OpenAPI, with 409 idempotency_key_reused and no effect", suite.Req(reqExtIdemReuse), func(ctx SpecContext) {
		fx := actorFixtures(ctx)
		// With the scenario hook, cancel and task input address tasks waiting
		// for input, so that their first write is carried out.
		waiting := map[string]string{}
		if suite.Env().Discovery.Scenarios() != "" {
			for _, op := range []string{"cancelTask", "appendTaskMessage"} {
				id := xSubmit(ctx, fx.ids["session_id"], nil, xStep("input_required"))
				if m, ok := xAwait(ctx, id, func(s string) bool { return s == check.InputRequired || check.Terminal(s) }); ok && xStr(m, "status") == check.InputRequired {
					waiting[op] = id
				}
			}
		}
		first, second := suite.Key("conform-first"), suite.Key("conform-refused")
		judged := 0
		var notJudged []string
		for _, op := range documentOps(func(op openapi.Operation) bool {
			return op.Idempotent && writeOp(op) && op.HasBody && !coreReuse[op.ID]
		}) {
			ids := fx.ids
			if t := waiting[op.ID]; t != "" {
				ids = maps.Clone(fx.ids)
				ids["task_id"] = t
			}
			a, b := address(op, ids, first), address(op, ids, second)
			if len(a.missing) > 0 {
				notJudged = append(notJudged, fmt.Sprintf("%s (no %s to address)", op.ID, strings.Join(a.missing, ", ")))
				continue
			}
			key := suite.Key("conform-reuse")
			a.req.IdempotencyKey, b.req.IdempotencyKey = key, key
			b.req.Probe = "an Idempotency-Key reused with another body"
			firstResp := suite.Do(ctx, a.req, reqExtIdemReuse)
			if firstResp.Status/100 != 2 {
				notJudged = append(notJudged, fmt.Sprintf("%s (the first write: %s%s)", op.ID, firstResp, xHint(firstResp)))
				continue
			}
			judged++
			if err := check.Refused(suite.Do(ctx, b.req, reqExtIdemReuse), []int{http.StatusConflict}, "idempotency_key_reused"); err != nil {
				suite.Check(reqExtIdemReuse, fmt.Errorf("%s, its Idempotency-Key reused with another body: %w", op.ID, err))
			}
		}
		if len(notJudged) > 0 {
			suite.Note(fmt.Sprintf("%s: not judged: %s", reqExtIdemReuse, strings.Join(notJudged, "; ")))
		}
		if judged == 0 {
			suite.NothingToCheck(reqExtIdemReuse, "no keyed write of the OpenAPI could be made: "+strings.Join(notJudged, "; "), "offer the Extended writes (docs/interpretations.md#generated-probes)")
		}
		// The refused bodies' marker shows in nothing the writes could change.
		suite.Check(reqExtIdemReuse, check.NoEffect("writes reusing a key with another body", check.Effects{}, effectsOf(ctx, fx), second))
	})

	It("scopes an Idempotency-Key to its actor: another actor's same create with the same key is a create of its own", suite.Req(reqExtIdemActor), func(ctx SpecContext) {
		other := suite.Env().Config.SecondAPIKey
		if other == "" {
			suite.Unverified("the run has no second actor's key, so it cannot send one key as two actors", remedySecondKey)
		}
		bAuth := "Bearer " + other
		keyWorks(ctx, bAuth, "the second API key", remedySecondKey)
		marker := suite.Key("conform-two-actors")
		judged := 0
		var notJudged []string
		for _, op := range documentOps(func(op openapi.Operation) bool {
			return sharedTargets[op.ID] && op.Idempotent && len(op.PathParams) == 0
		}) {
			p := address(op, map[string]string{}, marker)
			body, _ := p.req.Body.(map[string]any)
			for k, v := range body {
				if v == "" {
					delete(body, k) // the resource members an actor-neutral body leaves out
				}
			}
			p.req.IdempotencyKey = suite.Key("conform-two-actors")
			mine := suite.Do(ctx, p.req, reqExtIdemActor)
			m, _ := mine.Object()
			if mine.Status/100 != 2 || xID(m) == "" {
				notJudged = append(notJudged, fmt.Sprintf("%s (the first actor's write: %s%s)", op.ID, mine, xHint(mine)))
				continue
			}
			p.req.Probe = "the first actor's Idempotency-Key, target and body, sent by the second actor"
			theirs := asActor(ctx, bAuth, p.req)
			t, _ := theirs.Object()
			switch {
			case theirs.Status/100 == 2 && xID(t) == xID(m):
				judged++
				suite.Check(reqExtIdemActor, fmt.Errorf("%s (%s): the second actor, sending the first actor's Idempotency-Key with the same target and body, was answered with the first actor's %s %s: the key's scope leaves out the actor",
					theirs, op.ID, xStr(m, "object"), xID(m)))
			case theirs.Status == http.StatusConflict:
				judged++
				suite.Check(reqExtIdemActor, fmt.Errorf("%s (%s): the second actor's write with the first actor's Idempotency-Key was refused as a reuse (%s): the key's scope leaves out the actor",
					theirs, op.ID, xHint(theirs)))
			case theirs.Status/100 == 2 && xID(t) != "":
				judged++
			default:
				notJudged = append(notJudged, fmt.Sprintf("%s (the second actor's write: %s%s)", op.ID, theirs, xHint(theirs)))
			}
		}
		if len(notJudged) > 0 {
			suite.Note(fmt.Sprintf("%s: not judged: %s", reqExtIdemActor, strings.Join(notJudged, "; ")))
		}
		if judged == 0 {
			suite.NothingToCheck(reqExtIdemActor, "no create could be sent by both actors: "+strings.Join(notJudged, "; "), remedySecondKey)
		}
	})
})
