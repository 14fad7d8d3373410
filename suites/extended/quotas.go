package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Quotas (EXT-QUOTA-001, -002, EXT-AUTHZ-006). Quotas are read-only over the
// API: the conform.quotas hook (docs/scenarios.md#resource-hooks) makes one
// for the suite, with a "tasks" limit the target meters. Without it the
// suite reads whatever quotas the target lists, and cannot exhaust one.

const (
	reqQuota       = "EXT-QUOTA-001" // list, get, fields
	reqQuotaBefore = "EXT-QUOTA-002" // hard quotas are checked before work starts
	reqQuotaPolicy = "EXT-AUTHZ-006" // an exhausted quota refuses the action
)

var quotaScopes = []string{"persona", "workspace", "tenant", "organization"}

var _ = Describe("Quotas", func() {
	It("lists Quotas and reads each by id, with scope, numeric limits and a usage snapshot", suite.Req(reqQuota), func(ctx SpecContext) {
		created := ""
		if _, ok := hooked(capQuotas); ok {
			// A soft, roomy tenant quota: it is there to be read, and limits nothing.
			created = hookQuota(ctx, map[string]any{"scope": "tenant", "limits": map[string]any{"tasks": 1e9}, "usage": map[string]any{"tasks": 0}, "hard_limit": false}, reqQuota)
		}
		readCollection(ctx, reqQuota, "quota", "Quota", "/v1/quotas", capQuotas, created, quotaFields)
	})

	It("refuses work under an exhausted hard quota before any of it starts, and not before", suite.Req(reqQuotaBefore, reqQuotaPolicy), func(ctx SpecContext) {
		needHooks(capQuotas)
		ws := ownWorkspace(ctx, reqQuotaPolicy)
		sess := newSession(ctx, ws, reqQuotaPolicy)
		q := hookQuota(ctx, map[string]any{"scope": "workspace", "owner_id": ws, "limits": map[string]any{"tasks": 1}, "usage": map[string]any{"tasks": 0}, "hard_limit": true}, reqQuotaPolicy)

		// With room left, the quota lets a task through: a target that
		// refuses everything under a quota would otherwise pass.
		first := submitText(ctx, sess, "within the quota", reqQuotaPolicy)
		m, _ := first.Object()
		firstID, _ := m["id"].(string)
		if first.Status != http.StatusAccepted || firstID == "" {
			suite.Must(reqQuotaPolicy, fmt.Errorf("%s: status %d, want 202: quota %s (tasks: limit 1, usage 0) has room for this task", first, first.Status, q))
		}
		if waitTerminal(ctx, firstID, reqQuotaPolicy) == nil {
			suite.Unverified(fmt.Sprintf("task %s did not end within --task-timeout %s", firstID, suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
		}

		// Now the quota is spent: the next task must not run.
		over := submitText(ctx, sess, "over the quota", reqQuotaPolicy)
		if over.Status/100 != 2 {
			suite.Check(reqQuotaPolicy, quotaRefusal(over, q))
			tasks, _, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/tasks", nil, reqQuotaBefore)
			if suite.Check(reqQuotaBefore, err) && !slices.Equal(ids(tasks), []string{firstID}) {
				suite.Check(reqQuotaBefore, fmt.Errorf("after the refused submit (%d) session %s lists tasks %v, want only %s: a refused task must not exist", over.Status, sess, ids(tasks), firstID))
			}
			return
		}
		// Accepted: the task must end without having worked.
		m, _ = over.Object()
		overID, _ := m["id"].(string)
		if overID == "" {
			suite.Must(reqQuotaPolicy, fmt.Errorf("%s: accepted with no task id", over))
		}
		t := waitTerminal(ctx, overID, reqQuotaPolicy)
		if t == nil {
			suite.Check(reqQuotaPolicy, fmt.Errorf("task %s, submitted under exhausted hard quota %s, did not end within --task-timeout %s: want it refused or failed", overID, q, suite.Env().Config.Timeouts.Task))
			suite.Blocked(reqQuotaPolicy, reqQuotaBefore)
			return
		}
		if st, _ := t["status"].(string); st == check.Completed {
			suite.Check(reqQuotaPolicy, fmt.Errorf("task %s, submitted under exhausted hard quota %s, COMPLETED: the quota did not refuse it", overID, q))
		}
		kinds := taskEventKinds(ctx, overID, reqQuotaBefore)
		if k := noneOf(kinds, "task.started", "agent.", "tool.", "span.", "artifact."); k != "" {
			suite.Check(reqQuotaBefore, fmt.Errorf("task %s, submitted under exhausted hard quota %s, did work before the quota stopped it (%s; events %v): hard quotas are checked before work starts", overID, q, k, kinds))
		}
		if s, _ := t["started_at"].(string); s != "" {
			suite.Check(reqQuotaBefore, fmt.Errorf("task %s, submitted under exhausted hard quota %s, has started_at %s: it started work", overID, q, s))
		}
	})
})

// hookQuota creates a quota through the hook; a hook that fails is the
// target's failure of req (it advertised the hook).
func hookQuota(ctx context.Context, body map[string]any, req string) string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/conform/quotas", Body: body, Probe: hookProbe(capQuotas)}, req)
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || id == "" {
		suite.Must(req, fmt.Errorf("%s: the %s hook did not create a quota (status %d, want 201 with an id)", resp, capQuotas, resp.Status))
	}
	return id
}

// quotaFields checks a Quota's members.
func quotaFields(q map[string]any) error {
	var errs []string
	if q["object"] != "quota" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"quota\"", jsonText(q["object"])))
	}
	if s, _ := q["scope"].(string); !slices.Contains(quotaScopes, s) {
		errs = append(errs, fmt.Sprintf("scope = %s, want one of %s", jsonText(q["scope"]), strings.Join(quotaScopes, ", ")))
	}
	limits, ok := q["limits"].(map[string]any)
	numeric := 0
	for _, v := range limits {
		switch v.(type) {
		case float64, json.Number:
			numeric++
		}
	}
	if !ok || numeric == 0 {
		errs = append(errs, fmt.Sprintf("limits = %s, want an object with at least one numeric limit", jsonText(q["limits"])))
	}
	if _, ok := q["usage"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("usage = %s, want the current usage snapshot (an object)", jsonText(q["usage"])))
	}
	if len(errs) > 0 {
		return fmt.Errorf("quota %v: %s", q["id"], strings.Join(errs, "; "))
	}
	return nil
}

// quotaRefusal judges a refused submit under an exhausted quota: a policy
// or rate refusal the error table names for quotas (422 policy_violation,
// 429 rate_limited), or 403 permission_denied (docs/interpretations.md#quota-refusals).
func quotaRefusal(resp *client.Response, quota string) error {
	if err := check.Refused(resp, []int{http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusForbidden},
		"policy_violation", "rate_limited", "permission_denied"); err != nil {
		return fmt.Errorf("the submit under exhausted hard quota %s was refused, but not as a quota refusal: %w", quota, err)
	}
	return nil
}
