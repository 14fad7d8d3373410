package extended

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Host-mediated input and authorization (EXT-HOST-001), approval before
// side effects (EXT-AUTHZ-007) and the idempotency of permission request
// answers (EXT-IDEM-002). A client cannot make an agent ask for input or
// approval, so these specs drive tasks with the scenario contract's
// input_required, auth_required, tool_approval and tool_call steps
// (docs/scenarios.md); without the hook they are unverified.
//
// The permission request operations (listPermissionRequests,
// listTaskPermissionRequests, respondPermissionRequest) come from the later
// OpenAPI revision and are optional: a target that does not offer them
// (404, 405 or 501) is judged on the task message path alone; one that
// offers them must list a waiting task's request and take its answer
// (docs/interpretations.md#permission-requests).

const (
	reqHost      = "EXT-HOST-001"  // input or authorization requested, answered over REST, back to WORKING
	reqApproval  = "EXT-AUTHZ-007" // no side effect without its approval; a denial is tool.denied with none
	permRespond  = "/v1/permission-requests/%s/respond"
	permTaskList = "/v1/tasks/%s/permission-requests"
)

// xAwaitStatus waits for task id to reach want (or end); false when it did not.
func xAwaitStatus(ctx context.Context, id, want string) (map[string]any, bool) {
	GinkgoHelper()
	m, _ := xAwait(ctx, id, func(s string) bool { return s == want || check.Terminal(s) })
	return m, xStr(m, "status") == want
}

// xLeaves waits until task id is no longer in status from: ok is false
// when it still is after --task-timeout.
func xLeaves(ctx context.Context, id, from string) (map[string]any, bool) {
	GinkgoHelper()
	return xAwait(ctx, id, func(s string) bool { return s != from })
}

// xTransitioned reports whether evs hold a task event moving from → to
// (payload.previous_status and payload.status).
func xTransitioned(evs []check.Event, from, to string) bool {
	return slices.ContainsFunc(evs, func(e check.Event) bool {
		return strings.HasPrefix(e.Kind, "task.") && e.Payload["previous_status"] == from && e.Payload["status"] == to
	})
}

// xTaskInput answers a waiting task with a task message of kind.
func xTaskInput(ctx context.Context, id, kind string, part map[string]any, req string) *client.Response {
	GinkgoHelper()
	body := map[string]any{"kind": kind, "message": map[string]any{"role": "user", "parts": []any{part}}}
	return suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/messages", Body: body}, req)
}

func xTextPart(text string) map[string]any {
	return map[string]any{"type": "text", "text": text, "visibility": "public"}
}

func xDecision(d string) map[string]any {
	return map[string]any{"type": "json", "value": map[string]any{"decision": d}, "visibility": "public"}
}

// permissionRequests lists task id's permission requests: offered is
// false when the target does not offer the operation, read false when it
// does but the list could not be read (the failure is recorded).
func permissionRequests(ctx context.Context, id string) (items []map[string]any, offered, read bool) {
	GinkgoHelper()
	r := client.Request{Path: fmt.Sprintf(permTaskList, client.Seg(id))}
	resp := suite.Do(ctx, r, reqHost)
	if check.UnofferedStatus(resp.Status) {
		// docs/interpretations.md#offered-by-evidence: the other list of
		// the same requests may show the operation is offered.
		o := suite.Offering{Request: r, Answer: resp, Known: []string{"task " + id + " (just submitted)"}}
		all := suite.Do(ctx, client.Request{Path: "/v1/permission-requests", Query: url.Values{"task_id": {id}}}, reqHost)
		if p, err := check.ListPage(all); err == nil && all.Status == http.StatusOK && pendingOf(p.Items, id) != nil {
			o.Shown = []string{fmt.Sprintf("%s lists the task's request %s", all, xID(pendingOf(p.Items, id)))}
		}
		if ok, _ := xOffered(ctx, reqHost, o); !ok {
			return nil, false, false
		}
		return nil, true, false // refused, and its failure recorded
	}
	items, read = xList(ctx, reqHost, fmt.Sprintf(permTaskList, client.Seg(id)), nil)
	return items, true, read
}

// pendingOf is the first pending request of items naming task id.
func pendingOf(items []map[string]any, id string) map[string]any {
	for _, it := range items {
		if xStr(it, "status") == "pending" && xStr(it, "task_id") == id {
			return it
		}
	}
	return nil
}

var _ = Describe("Host-mediated input and authorization", func() {
	It("moves a task to INPUT_REQUIRED or AUTH_REQUIRED, takes the host's answer over REST and returns it to WORKING", suite.Req(reqHost), func(ctx SpecContext) {
		xHook("no task can be made to ask for input or authorization")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))

		// Input: INPUT_REQUIRED with task.input_required, answered by a task message.
		in := xSubmit(ctx, sess, nil, xStep("input_required", "prompt", "which file?"), xStep("complete", "summary", "got input"))
		if m, ok := xAwaitStatus(ctx, in, check.InputRequired); !ok {
			suite.Check(reqHost, fmt.Errorf("task %s with an input_required step is %v, want INPUT_REQUIRED", in, m["status"]))
		} else {
			if k := xKinds(xEvents(ctx, in)); k["task.input_required"] == 0 {
				suite.Check(reqHost, fmt.Errorf("task %s is INPUT_REQUIRED without a task.input_required event (events %v)", in, k))
			}
			resp := xTaskInput(ctx, in, "input", xTextPart("conform.txt"), reqHost)
			if suite.Check(reqHost, check.Status(resp, http.StatusCreated, http.StatusOK, http.StatusAccepted)) {
				host1Back(ctx, in, check.InputRequired, "an input message (POST /v1/tasks/{id}/messages, kind input)")
			}
		}

		// Authorization: AUTH_REQUIRED with task.auth_required, answered by
		// the permission request path when offered, else by a tool_confirmation.
		au := xSubmit(ctx, sess, nil, xStep("auth_required", "reason", "conform host mediation"), xStep("complete", "summary", "authorized"))
		m, ok := xAwaitStatus(ctx, au, check.AuthRequired)
		if !ok {
			suite.Check(reqHost, fmt.Errorf("task %s with an auth_required step is %v, want AUTH_REQUIRED", au, m["status"]))
			return
		}
		if k := xKinds(xEvents(ctx, au)); k["task.auth_required"] == 0 {
			suite.Check(reqHost, fmt.Errorf("task %s is AUTH_REQUIRED without a task.auth_required event (events %v)", au, k))
		}
		items, offered, read := permissionRequests(ctx, au)
		if offered && !read {
			xTaskInput(ctx, au, "tool_confirmation", xDecision("approve"), reqHost) // let it finish
			return
		}
		if !offered {
			suite.Note(reqHost + ": the target does not offer GET /v1/tasks/{id}/permission-requests; the authorization is answered by a tool_confirmation message")
			resp := xTaskInput(ctx, au, "tool_confirmation", xDecision("approve"), reqHost)
			if suite.Check(reqHost, check.Status(resp, http.StatusCreated, http.StatusOK, http.StatusAccepted)) {
				host1Back(ctx, au, check.AuthRequired, "a tool_confirmation message")
			}
			return
		}
		pr := pendingOf(items, au)
		if pr == nil {
			suite.Check(reqHost, fmt.Errorf("GET /v1/tasks/%s/permission-requests: the task waits for authorization (AUTH_REQUIRED), but none of the %d requests listed is a pending one naming it: %v", au, len(items), xIDs(items)))
			xTaskInput(ctx, au, "tool_confirmation", xDecision("approve"), reqHost) // let it finish
			return
		}
		if all, ok := xList(ctx, reqHost, "/v1/permission-requests", url.Values{"task_id": {au}}); ok && !slices.Contains(xIDs(all), xID(pr)) {
			suite.Check(reqHost, fmt.Errorf("GET /v1/permission-requests?task_id=%s does not list the task's pending request %s (listed: %v)", au, xID(pr), xIDs(all)))
		}
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: fmt.Sprintf(permRespond, client.Seg(xID(pr))),
			Body: map[string]any{"approved": true, "reviewer": "conform", "reason": "conform host mediation"}}, reqHost)
		if !suite.Check(reqHost, check.Status(resp, http.StatusOK)) {
			return
		}
		if got, err := resp.Object(); suite.Check(reqHost, err) && (xID(got) != xID(pr) || xStr(got, "status") != "approved") {
			suite.Check(reqHost, fmt.Errorf("%s: answered permission request %q with status %v, want %s approved", resp, xID(got), got["status"], xID(pr)))
		}
		host1Back(ctx, au, check.AuthRequired, "an approving permission request response (POST /v1/permission-requests/{id}/respond)")
		if after, _, ok := permissionRequests(ctx, au); ok {
			for _, it := range after {
				if xID(it) == xID(pr) && xStr(it, "status") != "approved" {
					suite.Check(reqHost, fmt.Errorf("permission request %s reads status %v after it was approved", xID(pr), it["status"]))
				}
			}
		}
	})
})

// host1Back checks that task id, answered by how, leaves status from for
// WORKING (a task event from → WORKING) and ends COMPLETED.
func host1Back(ctx context.Context, id, from, how string) {
	GinkgoHelper()
	m, ok := xLeaves(ctx, id, from)
	if !ok {
		suite.Check(reqHost, fmt.Errorf("task %s is still %s after --task-timeout %s, although the host answered it with %s", id, from, suite.Env().Config.Timeouts.Task, how))
		return
	}
	m = xTerminal(ctx, id)
	evs := xEvents(ctx, id)
	if !xTransitioned(evs, from, check.Working) {
		suite.Check(reqHost, fmt.Errorf("task %s, answered with %s, has no task event from %s to WORKING (events %v)", id, how, from, xKinds(evs)))
	}
	if xStr(m, "status") != check.Completed {
		suite.Check(reqHost, fmt.Errorf("task %s, answered with %s, ended %v, want COMPLETED (its scenario completes once answered)", id, how, m["status"]))
	}
}

var _ = Describe("Approval before side effects", func() {
	It("holds a side effect that needs approval until it is approved, and a denial leaves tool.denied and no side effect", suite.Req(reqApproval), func(ctx SpecContext) {
		xHook("no task can be made to attempt a tool that needs approval")
		ws := xWorkspace(ctx)

		// A tool call that waits for its approval, then is denied.
		sess := xID(xSession(ctx, ws, ""))
		id := xSubmit(ctx, sess, nil, xStep("tool_approval", "tool", "conform.noop"))
		judgeDenial(ctx, id, "a tool_approval step", false)

		// A Persona's act_with_approval tier: the side effect is an artifact.
		p := createPersona(ctx, map[string]any{"autonomy_tier": "act_with_approval", "tools": []any{"conform.granted"}})
		psess := xID(xSession(ctx, ws, p))
		pid := xSubmit(ctx, psess, map[string]any{"persona_id": p}, xStep("tool_call", "tool", "conform.granted"))
		judgeDenial(ctx, pid, "a tool_call under an act_with_approval Persona", true)
	})
})

// judgeDenial checks task id, whose tool call needs an approval: it waits
// (AUTH_REQUIRED, tool.approval_required) without acting, and once denied
// shows tool.denied and no side effect (no tool.completed or tool.approved,
// and with artifacts, no artifact of the task).
func judgeDenial(ctx context.Context, id, what string, artifacts bool) {
	GinkgoHelper()
	effects := func() (map[string]int, int) {
		n := 0
		if artifacts {
			n = len(xArtifactsOf(ctx, id))
		}
		return xKinds(xEvents(ctx, id)), n
	}
	m, waiting := xAwaitStatus(ctx, id, check.AuthRequired)
	k, arts := effects()
	if !waiting {
		if k["tool.completed"] > 0 || arts > 0 {
			suite.Check(reqApproval, fmt.Errorf("task %s (%s) carried out its tool without an approval: it is %v with %d tool.completed events and %d artifacts, and never waited (AUTH_REQUIRED)", id, what, m["status"], k["tool.completed"], arts))
		} else {
			suite.NothingToCheck(reqApproval, fmt.Sprintf("task %s (%s) is %v: it neither waited for an approval nor acted", id, what, m["status"]),
				"hold a tool call that needs approval in AUTH_REQUIRED with tool.approval_required, as docs/scenarios.md says")
		}
		return
	}
	if k["tool.completed"] > 0 || arts > 0 {
		suite.Check(reqApproval, fmt.Errorf("task %s (%s) waits for its approval, but the tool already ran: %d tool.completed events, %d artifacts", id, what, k["tool.completed"], arts))
	}
	if k["tool.approval_required"] == 0 {
		suite.Check(reqApproval, fmt.Errorf("task %s (%s) is AUTH_REQUIRED for its tool, but emitted no tool.approval_required (events %v)", id, what, k))
	}
	resp := xTaskInput(ctx, id, "tool_confirmation", xDecision("deny"), reqApproval)
	if resp.Status/100 != 2 {
		xPrereq("denying the approval (POST /v1/tasks/{id}/messages, kind tool_confirmation)", resp, "CORE-LIFE-001")
	}
	xTerminal(ctx, id)
	k, arts = effects()
	var errs []string
	if k["tool.denied"] == 0 {
		errs = append(errs, "no tool.denied event")
	}
	if k["tool.completed"] > 0 || k["tool.approved"] > 0 {
		errs = append(errs, fmt.Sprintf("%d tool.approved and %d tool.completed events", k["tool.approved"], k["tool.completed"]))
	}
	if arts > 0 {
		errs = append(errs, fmt.Sprintf("%d artifacts written by the tool", arts))
	}
	if len(errs) > 0 {
		suite.Check(reqApproval, fmt.Errorf("task %s (%s) was denied its approval: %s", id, what, strings.Join(errs, "; ")))
	}
}

var _ = Describe("Idempotency of permission request answers", func() {
	It("records one approval for a permission request response retried with the same Idempotency-Key", suite.Req(reqApprovalIdem), func(ctx SpecContext) {
		xHook("no task can be made to wait for an authorization")
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		id := xSubmit(ctx, sess, nil, xStep("auth_required", "reason", "conform idempotency"))
		if m, ok := xAwaitStatus(ctx, id, check.AuthRequired); !ok {
			suite.Unverified(fmt.Sprintf("task %s with an auth_required step is %v, not AUTH_REQUIRED", id, m["status"]), "run the auth_required step as docs/scenarios.md says")
		}
		list := client.Request{Path: fmt.Sprintf(permTaskList, client.Seg(id))}
		resp := suite.Do(ctx, list, reqApprovalIdem)
		switch why, err := suite.Unoffered(ctx, suite.Offering{Request: list, Answer: resp, Known: []string{"task " + id + " (just submitted)"}}, reqApprovalIdem); {
		case err != nil:
			xPrereq("listing the task's permission requests (GET /v1/tasks/{id}/permission-requests)", resp, reqHost)
		case why != "":
			suite.NotApplicableTo(reqApprovalIdem, why+", so there is no permission request response to retry")
			return
		}
		p, err := check.ListPage(resp)
		pr := pendingOf(p.Items, id)
		if resp.Status != http.StatusOK || err != nil || pr == nil {
			suite.NothingToCheck(reqApprovalIdem, fmt.Sprintf("%s: no pending permission request names task %s, so there is none to answer twice", resp, id),
				"list a waiting task's permission request (EXT-HOST-001)")
			return
		}
		key := suite.Key("conform-respond")
		req := client.Request{Method: http.MethodPost, Path: fmt.Sprintf(permRespond, client.Seg(xID(pr))), Body: map[string]any{"approved": true}, IdempotencyKey: key}
		first := suite.Do(ctx, req, reqApprovalIdem)
		if first.Status/100 != 2 {
			xPrereq("answering the permission request (POST /v1/permission-requests/{id}/respond)", first, reqHost)
		}
		retry := suite.Do(ctx, req, reqApprovalIdem)
		a, _ := first.Object()
		b, err := retry.Object()
		if retry.Status/100 != 2 || err != nil || xID(b) != xID(a) || xStr(b, "status") != xStr(a, "status") {
			suite.Check(reqApprovalIdem, fmt.Errorf("a permission request response retried with Idempotency-Key %q and the same body: the first answer was %s with status %v, the retry %s with id %q status %v%s",
				key, xID(a), a["status"], retry, xID(b), b["status"], xHint(retry)))
		}
		xLeaves(ctx, id, check.AuthRequired) // a target may record the answer as the task takes it
		if n := xKinds(xEvents(ctx, id))["user.tool_confirmation"]; n > 1 {
			suite.Check(reqApprovalIdem, fmt.Errorf("task %s records %d user.tool_confirmation events for one permission request response sent twice with the same Idempotency-Key, want one", id, n))
		}
	})
})
