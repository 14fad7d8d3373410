package extended

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Personas (EXT-PERSONA-001…004). A Persona is policy: tasks naming one
// may use only the tools and capabilities it grants, act within its
// autonomy tier, and end with a receipt when its receipt_policy is
// required. A client cannot make an agent try a tool, so the policy checks
// drive tasks with the scenario contract's tool_call step
// (docs/scenarios.md), whose side effect is an artifact owned by the task
// and a tool.completed event; without the hook they are unverified.

var (
	personaTiers    = []string{"shadow", "suggest", "act_with_approval", "act_auto"}
	personaReceipts = []string{"required", "optional", "disabled"}
)

// remedyPersonaPolicy is what to do when a persona's grants cannot be set.
const remedyPersonaPolicy = "accept the Persona's tools and capabilities lists on POST /v1/personas (they are Persona fields the create schema does not list; docs/interpretations.md#persona-policy) and return them on reads"

// personaBody is a persona create body with over's members on top.
func personaBody(name string, over map[string]any) map[string]any {
	b := map[string]any{"name": name, "version": "1", "entry_workflow": "conform.probe",
		"description": "conform persona " + name, "autonomy_tier": "act_auto", "receipt_policy": "optional",
		"metadata": map[string]any{"conform.run": suite.Env().RunID}}
	for k, v := range over {
		b[k] = v
	}
	return b
}

// personaFields checks a Persona's required fields and, for the members of
// want, their values.
func personaFields(resp *client.Response, m map[string]any, want map[string]any) error {
	var errs []string
	if m["object"] != "persona" {
		errs = append(errs, fmt.Sprintf("object = %v, want \"persona\"", m["object"]))
	}
	for _, f := range []string{"id", "name", "version", "entry_workflow", "description"} {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %v, want a non-empty string", f, m[f]))
		}
	}
	if s, _ := m["autonomy_tier"].(string); !slices.Contains(personaTiers, s) {
		errs = append(errs, fmt.Sprintf("autonomy_tier = %v, want one of %v", m["autonomy_tier"], personaTiers))
	}
	if s, _ := m["receipt_policy"].(string); !slices.Contains(personaReceipts, s) {
		errs = append(errs, fmt.Sprintf("receipt_policy = %v, want one of %v", m["receipt_policy"], personaReceipts))
	}
	errs = append(errs, sameValues(m, want)...)
	return xFindings(resp, "persona", errs)
}

// sameValues lists the members of want whose value m does not have.
func sameValues(m, want map[string]any) []string {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if fmt.Sprint(m[k]) != fmt.Sprint(want[k]) {
			errs = append(errs, fmt.Sprintf("%s = %v, want %v (as sent)", k, m[k], want[k]))
		}
	}
	return errs
}

func xFindings(resp *client.Response, what string, errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %s: %v", resp, what, errs)
}

// createPersona creates a persona for a policy spec (a prerequisite:
// EXT-PERSONA-001 is judged by its own spec) and checks that the policy
// members were kept; a target that drops them cannot be given the policy.
func createPersona(ctx context.Context, over map[string]any) string {
	GinkgoHelper()
	name := suite.Key("conform-persona")
	p := xSetup(ctx, "creating a Persona (POST /v1/personas)", reqPersona, client.Request{Method: http.MethodPost, Path: "/v1/personas", Body: personaBody(name, over)})
	for _, f := range []string{"tools", "capabilities", "autonomy_tier", "receipt_policy"} {
		want, ok := over[f]
		if ok && fmt.Sprint(p[f]) != fmt.Sprint(want) {
			suite.Unverified(fmt.Sprintf("the Persona was created with %s %v, but the target answered %v: the policy under test cannot be set", f, want, p[f]), remedyPersonaPolicy)
		}
	}
	return xID(p)
}

var _ = Describe("Personas", func() {
	It("lists, creates (201), reads and patches (200) Personas with their required fields", suite.Req(reqPersona), func(ctx SpecContext) {
		list := suite.Do(ctx, client.Request{Path: "/v1/personas"}, reqPersona)
		suite.Check(reqPersona, check.Status(list, http.StatusOK))
		name := suite.Key("conform-persona")
		body := personaBody(name, map[string]any{"autonomy_tier": "suggest"})
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/personas", Body: body}, reqPersona)
		if resp.Status/100 != 2 {
			suite.Must(reqPersona, check.Status(resp, http.StatusCreated))
		}
		suite.Check(reqPersona, check.Status(resp, http.StatusCreated))
		p, err := resp.Object()
		suite.Must(reqPersona, err)
		id := xID(p)
		if id == "" {
			suite.Must(reqPersona, fmt.Errorf("%s: the created Persona has no id", resp))
		}
		sent := map[string]any{"name": name, "version": "1", "entry_workflow": "conform.probe", "autonomy_tier": "suggest", "receipt_policy": "optional"}
		suite.Check(reqPersona, personaFields(resp, p, sent))
		path := "/v1/personas/" + client.Seg(id)
		read := suite.Do(ctx, client.Request{Path: path}, reqPersona)
		if suite.Check(reqPersona, check.Status(read, http.StatusOK)) {
			got, err := read.Object()
			if suite.Check(reqPersona, err) {
				suite.Check(reqPersona, check.SameID(read, got, id))
				suite.Check(reqPersona, personaFields(read, got, sent))
			}
		}
		if items, ok := xList(ctx, reqPersona, "/v1/personas", nil); ok && !slices.Contains(xIDs(items), id) {
			suite.Check(reqPersona, fmt.Errorf("GET /v1/personas: the Persona %s just created is on no page of the list (%d listed)", id, len(items)))
		}
		// A second Persona: the list holds two of the spec's, so its cursor
		// is followed in every run.
		second := xSetup(ctx, "creating a second Persona (POST /v1/personas)", reqPersona, client.Request{Method: http.MethodPost, Path: "/v1/personas",
			Body: personaBody(suite.Key("conform-persona"), nil)})
		xPaged(ctx, reqPersona, "/v1/personas", nil, []string{id, xID(second)}, 2)
		// PATCH: the answer and every later read show the change.
		patch := map[string]any{"description": "patched " + name, "receipt_policy": "required"}
		pr := suite.Do(ctx, client.Request{Method: http.MethodPatch, Path: path, Body: patch}, reqPersona)
		if suite.Check(reqPersona, check.Status(pr, http.StatusOK)) {
			got, err := pr.Object()
			if suite.Check(reqPersona, err) {
				suite.Check(reqPersona, personaFields(pr, got, patch))
			}
			again := suite.Do(ctx, client.Request{Path: path}, reqPersona)
			if suite.Check(reqPersona, check.Status(again, http.StatusOK)) {
				got, err := again.Object()
				if suite.Check(reqPersona, err) {
					want := map[string]any{"name": name, "autonomy_tier": "suggest"}
					for k, v := range patch {
						want[k] = v
					}
					suite.Check(reqPersona, personaFields(again, got, want))
				}
			}
		}
	})

	It("denies a task the tools and capabilities its Persona does not grant, with no side effect", suite.Req(reqPersonaGrant), func(ctx SpecContext) {
		xHook("no task can be made to attempt a tool")
		persona := createPersona(ctx, map[string]any{"tools": []any{"conform.granted"}, "capabilities": []any{"conform.cap.granted"}})
		sess := xID(xSession(ctx, xWorkspace(ctx), persona))
		run := func(tool, capability string) (string, []check.Event, []map[string]any) {
			st := xStep("tool_call", "tool", tool, "capability", capability)
			id := xSubmit(ctx, sess, map[string]any{"persona_id": persona}, st)
			xTerminal(ctx, id)
			return id, xEvents(ctx, id), xArtifactsOf(ctx, id)
		}
		// The control: a granted tool and capability run, and their side
		// effect is seen where the denied calls' would be.
		ctl, ctlEvents, ctlArts := run("conform.granted", "conform.cap.granted")
		if xKinds(ctlEvents)["tool.completed"] == 0 || len(ctlArts) == 0 {
			suite.Unverified(fmt.Sprintf("task %s, whose tool_call the Persona grants, left %d tool.completed events and %d artifacts: the step's side effect, by which a denial is judged, cannot be seen",
				ctl, xKinds(ctlEvents)["tool.completed"], len(ctlArts)), "run the tool_call step as docs/scenarios.md says: a granted call emits tool.completed and registers an artifact owned by the task")
		}
		for _, c := range []struct{ tool, capability, what string }{
			{"conform.not_granted", "", "a tool the Persona does not grant"},
			{"conform.granted", "conform.cap.not_granted", "a granted tool needing a capability the Persona does not grant"},
		} {
			id, evs, arts := run(c.tool, c.capability)
			suite.Check(reqPersonaGrant, judgeDenied(id, c.what, evs, arts, xTask(ctx, id)))
		}
	})

	It("acts within the Persona's autonomy tier: approval first under act_with_approval, no side effect under shadow or suggest", suite.Req(reqPersonaTier), func(ctx SpecContext) {
		xHook("no task can be made to attempt a tool")
		ws := xWorkspace(ctx)
		// act_with_approval: the call waits for an approval, and runs once approved.
		ask := createPersona(ctx, map[string]any{"autonomy_tier": "act_with_approval", "tools": []any{"conform.granted"}})
		sess := xID(xSession(ctx, ws, ask))
		id := xSubmit(ctx, sess, map[string]any{"persona_id": ask}, xStep("tool_call", "tool", "conform.granted"))
		m, ok := xAwait(ctx, id, func(s string) bool { return s == check.AuthRequired || check.Terminal(s) })
		if !ok {
			suite.Unverified(fmt.Sprintf("task %s is still %v after --task-timeout", id, m["status"]), suite.RemedyAgentEnds)
		}
		evs, arts := xEvents(ctx, id), xArtifactsOf(ctx, id)
		if xStr(m, "status") != check.AuthRequired {
			if xKinds(evs)["tool.completed"] > 0 || len(arts) > 0 {
				suite.Check(reqPersonaTier, fmt.Errorf("task %s of an act_with_approval Persona ran its tool without asking: it ended %v with %d tool.completed events and %d artifacts, and was never AUTH_REQUIRED",
					id, m["status"], xKinds(evs)["tool.completed"], len(arts)))
			} else {
				suite.NothingToCheck(reqPersonaTier, fmt.Sprintf("task %s of an act_with_approval Persona ended %v without asking and without acting: no approval to watch", id, m["status"]),
					"under act_with_approval, hold a granted tool_call for an approval (tool.approval_required, AUTH_REQUIRED) as docs/scenarios.md says")
			}
		} else {
			if xKinds(evs)["tool.completed"] > 0 || len(arts) > 0 {
				suite.Check(reqPersonaTier, fmt.Errorf("task %s is AUTH_REQUIRED for its approval, but its tool already ran: %d tool.completed events, %d artifacts", id, xKinds(evs)["tool.completed"], len(arts)))
			}
			if xKinds(evs)["tool.approval_required"] == 0 && xKinds(evs)["task.auth_required"] == 0 {
				suite.Check(reqPersonaTier, fmt.Errorf("task %s waits for an approval, but its events say neither tool.approval_required nor task.auth_required", id))
			}
			approve(ctx, id, "")
			xTerminal(ctx, id)
			if evs, arts := xEvents(ctx, id), xArtifactsOf(ctx, id); xKinds(evs)["tool.completed"] == 0 || len(arts) == 0 {
				suite.NothingToCheck(reqPersonaTier, fmt.Sprintf("task %s did not run its tool once approved (%d tool.completed, %d artifacts): the tool_call step's side effect cannot be seen, so its absence proves nothing", id, xKinds(evs)["tool.completed"], len(arts)),
					"run an approved tool_call as docs/scenarios.md says: tool.completed and an artifact owned by the task")
			}
		}
		// shadow and suggest: no side effect, even when approved.
		for _, tier := range []string{"shadow", "suggest"} {
			p := createPersona(ctx, map[string]any{"autonomy_tier": tier, "tools": []any{"conform.granted"}})
			sess := xID(xSession(ctx, ws, p))
			id := xSubmit(ctx, sess, map[string]any{"persona_id": p}, xStep("tool_call", "tool", "conform.granted"))
			m, ok := xAwait(ctx, id, func(s string) bool { return s == check.AuthRequired || check.Terminal(s) })
			if ok && xStr(m, "status") == check.AuthRequired {
				approve(ctx, id, "")
			}
			xTerminal(ctx, id)
			evs, arts := xEvents(ctx, id), xArtifactsOf(ctx, id)
			if n := xKinds(evs)["tool.completed"]; n > 0 || len(arts) > 0 {
				suite.Check(reqPersonaTier, fmt.Errorf("task %s of a %s Persona carried out its tool call: %d tool.completed events, %d artifacts (%v)", id, tier, n, len(arts), xIDs(arts)))
			}
		}
	})

	It("ends a task naming a Persona whose receipt_policy is required with a receipt", suite.Req(reqPersonaReceipt), func(ctx SpecContext) {
		body := personaBody(suite.Key("conform-persona"), map[string]any{"receipt_policy": "required"})
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/personas", Body: body}, reqPersonaReceipt)
		p, err := resp.Object()
		if resp.Status/100 == 4 && resp.Status != http.StatusNotFound {
			// A Harness that issues no receipts may refuse the policy it
			// cannot honour (docs/interpretations.md#persona-receipt-policy).
			suite.NotApplicableTo(reqPersonaReceipt, fmt.Sprintf("%s: the target refuses to create a Persona with receipt_policy required%s", resp, xHint(resp)))
			return
		}
		if resp.Status/100 != 2 || err != nil || xID(p) == "" {
			xPrereq("creating a Persona (POST /v1/personas)", resp, reqPersona)
		}
		if p["receipt_policy"] != "required" {
			suite.Unverified(fmt.Sprintf("the Persona was created with receipt_policy required but reads %v", p["receipt_policy"]), "keep the receipt_policy a Persona is created with (EXT-PERSONA-001)")
		}
		sess := xID(xSession(ctx, xWorkspace(ctx), xID(p)))
		id := xSubmit(ctx, sess, map[string]any{"persona_id": xID(p)})
		t := xTerminal(ctx, id)
		if rid, _ := t["receipt_id"].(string); rid == "" {
			suite.Check(reqPersonaReceipt, fmt.Errorf("task %s names Persona %s (receipt_policy required) and ended %v with receipt_id %v, want a receipt id", id, xID(p), t["status"], t["receipt_id"]))
		}
		rl := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/receipts"}, reqPersonaReceipt)
		if suite.Check(reqPersonaReceipt, check.Status(rl, http.StatusOK)) {
			pg, err := check.ListPage(rl)
			if suite.Check(reqPersonaReceipt, err) && len(pg.Items) == 0 {
				suite.Check(reqPersonaReceipt, fmt.Errorf("%s: task %s names a Persona whose receipt_policy is required, and its receipts list is empty", rl, id))
			}
		}
	})
})

// xTask reads task id.
func xTask(ctx context.Context, id string) map[string]any {
	GinkgoHelper()
	return xRead(ctx, "reading the Task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(id), nil)
}

// approveRequest is an approving tool_confirmation for task id.
func approveRequest(id, key string) client.Request {
	body := map[string]any{"kind": "tool_confirmation", "message": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "json", "value": map[string]any{"decision": "approve"}, "visibility": "public"}}}}
	return client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/messages", Body: body, IdempotencyKey: key}
}

// judgeDenied judges a tool call the Persona does not grant: denied
// (tool.denied, or the task FAILED with policy_violation) and without
// its side effect (no tool.completed, no artifact).
func judgeDenied(id, what string, evs []check.Event, arts []map[string]any, task map[string]any) error {
	k := xKinds(evs)
	var errs []string
	if k["tool.completed"] > 0 || len(arts) > 0 {
		errs = append(errs, fmt.Sprintf("the call ran: %d tool.completed events and %d artifacts %v", k["tool.completed"], len(arts), xIDs(arts)))
	}
	failed := false
	if f, ok := task["failure"].(map[string]any); ok && task["status"] == check.Failed && f["code"] == "policy_violation" {
		failed = true
	}
	if k["tool.denied"] == 0 && !failed {
		errs = append(errs, fmt.Sprintf("it was not denied: no tool.denied event, and the task ended %v without failure code policy_violation", task["status"]))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("task %s attempted %s: %v", id, what, errs)
}

// approve answers a waiting task's approval request with an approving
// tool_confirmation (key: an Idempotency-Key, or none).
func approve(ctx context.Context, id, key string) *client.Response {
	GinkgoHelper()
	resp := suite.Do(ctx, approveRequest(id, key), suite.SpecReqs()...)
	if resp.Status/100 != 2 {
		xPrereq("answering the approval (POST /v1/tasks/{id}/messages, kind tool_confirmation)", resp, "CORE-LIFE-001")
	}
	return resp
}
