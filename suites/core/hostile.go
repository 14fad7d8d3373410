package core

import (
	"context"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// hostileReqs are the requirements of the Core hostile-input pass, by rule.
var hostileReqs = map[negative.Rule]string{
	negative.RuleAnswered:  "CORE-NEG-001",
	negative.RuleRefused:   "CORE-NEG-002",
	negative.RuleUnchanged: "CORE-NEG-003",
	negative.RuleNoEcho:    "CORE-NEG-004",
	negative.RuleOpen:      "CORE-NEG-005",
	negative.RuleParam:     "CORE-ERR-005",
}

var _ = Describe("Hostile input", func() {
	It("answers generated malformed requests to every Core operation with a 4xx error that carries no credential, and changes nothing",
		suite.Req("CORE-NEG-001", "CORE-NEG-002", "CORE-NEG-003", "CORE-NEG-004", "CORE-NEG-005", "CORE-ERR-005"), func(ctx SpecContext) {
			ids := map[string]string{"workspace_id": workspaceFor(ctx, reqSessionCreate)}
			sess := sessionID(ctx, reqSessionCreate)
			ids["session_id"] = sess
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask("conform hostile-input fixture")}, reqSubmit)
			task := idOf(succeeded(reqSubmit, resp))
			ids["task_id"] = task
			// The pass reads the session's state before and after the
			// refused requests: a task still running would change it.
			settle(ctx, task)
			ids["message_id"] = firstID(ctx, "/v1/sessions/"+client.Seg(sess)+"/messages", nil)
			ids["event_id"] = firstID(ctx, "/v1/tasks/"+client.Seg(task)+"/events", nil)
			ids["artifact_id"] = firstID(ctx, "/v1/artifacts", url.Values{"session_id": {sess}}, url.Values{})
			ids["outcome_id"] = firstID(ctx, "/v1/outcomes", url.Values{"task_id": {task}}, url.Values{})
			suite.HostileInput(ctx, requirements.Core, hostileReqs, negative.Fixtures{IDs: ids, RunID: suite.Env().RunID})
		})
})

// settle waits, within the task timeout, for a task to end; one that does
// not is left running (the pass then notes the state it cannot compare).
func settle(ctx context.Context, task string) {
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for time.Now().Before(deadline) {
		resp, err := suite.Client().Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(task)})
		if err != nil || resp.Status != http.StatusOK {
			return
		}
		m, _ := resp.Object()
		if st, _ := m["status"].(string); check.Terminal(st) {
			return
		}
		if !pace.Wait(ctx) {
			return
		}
	}
}

// firstID is the id of the first item a list read shows, trying each
// query in turn; "" when none shows one.
func firstID(ctx context.Context, path string, queries ...url.Values) string {
	if len(queries) == 0 {
		queries = []url.Values{nil}
	}
	for _, q := range queries {
		resp, err := suite.Client().Do(ctx, client.Request{Path: path, Query: q})
		if err != nil || resp.Status != http.StatusOK {
			continue
		}
		if p, err := check.ListPage(resp); err == nil && len(p.IDs) > 0 && p.IDs[0] != "" {
			return p.IDs[0]
		}
	}
	return ""
}
