package core

import (
	"fmt"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// ownedBy checks that a submitted Task names the Session it was submitted
// on and that Session's Workspace.
func ownedBy(resp *client.Response, task, session map[string]any) error {
	if sid, _ := task["session_id"].(string); sid == "" || sid != idOf(session) {
		return fmt.Errorf("%s: session_id = %v, want %v (the Session it was submitted on)", resp, task["session_id"], session["id"])
	}
	if ws, ok := session["workspace_id"].(string); ok && task["workspace_id"] != ws {
		return fmt.Errorf("%s: workspace_id = %v, want %q (the workspace of its Session)", resp, task["workspace_id"], ws)
	}
	return nil
}

var _ = Describe("Task submit", func() {
	It("accepts a Task on its Session's path with 202", suite.Req("CORE-TASK-001", "CORE-READ-004", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003"), func(ctx SpecContext) {
		_, session := newSession(ctx, "CORE-TASK-001")
		sess := idOf(session)
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask("submit on the session path")}, "CORE-TASK-001")
		task := succeeded("CORE-TASK-001", resp)
		suite.Check("CORE-TASK-001", check.Status(resp, http.StatusAccepted))
		suite.Check("CORE-TASK-001", ownedBy(resp, task, session))
		observeResource(resp, "task", task)
	})

	It("accepts a Task on POST /v1/tasks with 202", suite.Req("CORE-TASK-002", "CORE-READ-004", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003"), func(ctx SpecContext) {
		_, session := newSession(ctx, "CORE-TASK-002")
		sess := idOf(session)
		body := echoTask("submit on the top-level path")
		body["session_id"] = sess
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks", Body: body}, "CORE-TASK-002")
		task := succeeded("CORE-TASK-002", resp)
		suite.Check("CORE-TASK-002", check.Status(resp, http.StatusAccepted))
		suite.Check("CORE-TASK-002", ownedBy(resp, task, session))
		observeResource(resp, "task", task)
	})

	It("lists a Session's Tasks and no others, on both list paths, and filters by Workspace", suite.Req("CORE-TASK-003", "CORE-PAGE-001"), func(ctx SpecContext) {
		_, session := newSession(ctx, "CORE-TASK-003")
		mine, other := idOf(session), sessionID(ctx, "CORE-TASK-003")
		var want []string
		for i, sess := range []string{mine, mine, other} {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask(fmt.Sprintf("list me %d", i))}, "CORE-TASK-003")
			task := succeeded(reqSubmit, resp)
			if sess == mine {
				want = append(want, idOf(task))
			}
		}
		for _, src := range []struct {
			path  string
			query url.Values
		}{
			{"/v1/sessions/" + client.Seg(mine) + "/tasks", nil},
			{"/v1/tasks", url.Values{"session_id": {mine}}},
		} {
			items, complete, readable := listAll(ctx, "CORE-PAGE-001", src.path, src.query)
			if !readable {
				listFailed("CORE-PAGE-001", "CORE-TASK-003")
				continue
			}
			if !complete {
				suite.Check("CORE-TASK-003", fmt.Errorf("GET %s?%s: a list of %d tasks did not end within the page bound", src.path, src.query.Encode(), len(want)))
				continue
			}
			var ids []string
			var foreign []string
			for _, it := range items {
				ids = append(ids, idOf(it))
				if it["session_id"] != mine {
					foreign = append(foreign, fmt.Sprintf("%s (session %v)", idOf(it), it["session_id"]))
				}
			}
			if len(foreign) > 0 {
				suite.Check("CORE-TASK-003", fmt.Errorf("GET %s?%s lists tasks of other sessions: %v", src.path, src.query.Encode(), foreign))
			}
			if err := check.Walk([][]string{ids}, want, true); err != nil {
				suite.Check("CORE-TASK-003", fmt.Errorf("GET %s?%s: %w", src.path, src.query.Encode(), err))
			}
		}
		// By Workspace: the Workspace may hold other Tasks (it may be shared
		// when the target provisions workspaces), but every listed Task is
		// in it, and this Session's Tasks are among them.
		ws, _ := session["workspace_id"].(string)
		if ws == "" {
			return
		}
		q := url.Values{"workspace_id": {ws}}
		items, complete, readable := listAll(ctx, "CORE-PAGE-001", "/v1/tasks", q)
		if !readable {
			listFailed("CORE-PAGE-001", "CORE-TASK-003")
		}
		var ids, foreign []string
		for _, it := range items {
			ids = append(ids, idOf(it))
			if it["workspace_id"] != ws {
				foreign = append(foreign, fmt.Sprintf("%s (workspace %v)", idOf(it), it["workspace_id"]))
			}
		}
		if len(foreign) > 0 {
			suite.Check("CORE-TASK-003", fmt.Errorf("GET /v1/tasks?%s lists tasks of other workspaces: %v", q.Encode(), foreign))
		}
		if complete {
			if err := check.Walk([][]string{ids}, want, true); err != nil {
				suite.Check("CORE-TASK-003", fmt.Errorf("GET /v1/tasks?%s: %w", q.Encode(), err))
			}
		}
	})
})
