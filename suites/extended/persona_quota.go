package extended

import (
	"fmt"
	"net/http"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// A Task naming a Persona is held to the Persona's quota (EXT-PERSONA-005;
// docs/interpretations.md#persona-quota). Quotas are read-only over the
// API, so the conform.quotas hook binds a hard quota with a "tasks" limit of
// 1 to a Persona of the spec's own (docs/scenarios.md#conformquotas). The
// tasks run in a workspace of the spec's own with no quota, in a session
// that names no Persona, so only the Persona the task names can hold them.

const reqPersonaQuota = "EXT-PERSONA-005"

var _ = Describe("Persona quotas", func() {
	It("holds a task naming a Persona to the Persona's hard quota: refused, or ended without work, once the quota is spent", suite.Req(reqPersonaQuota), func(ctx SpecContext) {
		needHooks(capQuotas)
		persona := createPersona(ctx, nil)
		ws := ownWorkspace(ctx, reqPersonaQuota)
		sess := newSession(ctx, ws, reqPersonaQuota)
		q := hookQuota(ctx, map[string]any{"scope": "persona", "owner_id": persona, "limits": map[string]any{"tasks": 1},
			"usage": map[string]any{"tasks": 0}, "hard_limit": true}, reqPersonaQuota)
		submit := func(text string) *client.Response {
			body := echoTask(text)
			body["persona_id"] = persona
			return suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: body,
				IdempotencyKey: suite.Key("persona-quota")}, reqPersonaQuota)
		}

		// With room left, the Persona's quota lets a task through: a target
		// that refuses every task naming a Persona would otherwise pass.
		first := submit("within the persona's quota")
		m, _ := first.Object()
		firstID := xID(m)
		if first.Status != http.StatusAccepted || firstID == "" {
			suite.Must(reqPersonaQuota, fmt.Errorf("%s: status %d, want 202: persona %s's quota %s (tasks: limit 1, usage 0) has room for this task%s", first, first.Status, persona, q, xHint(first)))
		}
		if waitTerminal(ctx, firstID, reqPersonaQuota) == nil {
			suite.Unverified(fmt.Sprintf("task %s did not end within --task-timeout %s", firstID, suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
		}

		// Now the quota is spent: the next task naming the Persona must not run.
		over := submit("over the persona's quota")
		if over.Status/100 != 2 {
			suite.Check(reqPersonaQuota, quotaRefusal(over, q))
			tasks, _, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/tasks", nil, reqPersonaQuota)
			if suite.Check(reqPersonaQuota, err) && !slices.Equal(ids(tasks), []string{firstID}) {
				suite.Check(reqPersonaQuota, fmt.Errorf("after the refused submit (%d) session %s lists tasks %v, want only %s: a refused task must not exist", over.Status, sess, ids(tasks), firstID))
			}
			return
		}
		m, _ = over.Object()
		overID := xID(m)
		if overID == "" {
			suite.Must(reqPersonaQuota, fmt.Errorf("%s: accepted with no task id", over))
		}
		t := waitTerminal(ctx, overID, reqPersonaQuota)
		if t == nil {
			suite.Must(reqPersonaQuota, fmt.Errorf("task %s names persona %s, whose hard quota %s is exhausted, and did not end within --task-timeout %s: want it refused or failed before work",
				overID, persona, q, suite.Env().Config.Timeouts.Task))
		}
		if st, _ := t["status"].(string); st == check.Completed {
			suite.Check(reqPersonaQuota, fmt.Errorf("task %s names persona %s, whose hard quota %s is exhausted, and COMPLETED: the persona's quota did not hold it", overID, persona, q))
		}
		kinds := taskEventKinds(ctx, overID, reqPersonaQuota)
		if k := noneOf(kinds, "task.started", "agent.", "tool.", "span.", "artifact."); k != "" {
			suite.Check(reqPersonaQuota, fmt.Errorf("task %s names persona %s, whose hard quota %s is exhausted, and did work before it was stopped (%s; events %v)", overID, persona, q, k, kinds))
		}
	})
})
