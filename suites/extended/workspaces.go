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

// Workspaces (EXT-WORKSPACE-001, -002): the resource itself, and the
// workspace_id every stateful resource made in one carries.

// workspaceFields checks a Workspace's required fields and, for the
// members of want, their values.
func workspaceFields(resp *client.Response, m, want map[string]any) error {
	var errs []string
	if m["object"] != "workspace" {
		errs = append(errs, fmt.Sprintf("object = %v, want \"workspace\"", m["object"]))
	}
	for _, f := range []string{"id", "name", "root"} {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %v, want a non-empty string", f, m[f]))
		}
	}
	if v, ok := m["default_branch_id"]; !ok {
		errs = append(errs, "default_branch_id is missing, want a Branch id or null")
	} else if _, isStr := v.(string); v != nil && !isStr {
		errs = append(errs, fmt.Sprintf("default_branch_id is %v, want a Branch id or null", v))
	}
	errs = append(errs, sameValues(m, want)...)
	return xFindings(resp, "workspace", errs)
}

var _ = Describe("Workspaces", func() {
	It("lists, creates (201), reads and patches (200) Workspaces with their required fields", suite.Req(reqWorkspace), func(ctx SpecContext) {
		list := suite.Do(ctx, client.Request{Path: "/v1/workspaces"}, reqWorkspace)
		suite.Check(reqWorkspace, check.Status(list, http.StatusOK))
		name := suite.Key("conform-ws")
		sent := map[string]any{"name": name, "root": "conform://" + name}
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
			Body: map[string]any{"name": name, "root": "conform://" + name, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, reqWorkspace)
		if resp.Status/100 != 2 {
			suite.Must(reqWorkspace, check.Status(resp, http.StatusCreated))
		}
		suite.Check(reqWorkspace, check.Status(resp, http.StatusCreated))
		w, err := resp.Object()
		suite.Must(reqWorkspace, err)
		id := xID(w)
		if id == "" {
			suite.Must(reqWorkspace, fmt.Errorf("%s: the created Workspace has no id", resp))
		}
		suite.Check(reqWorkspace, workspaceFields(resp, w, sent))
		path := "/v1/workspaces/" + client.Seg(id)
		read := suite.Do(ctx, client.Request{Path: path}, reqWorkspace)
		if suite.Check(reqWorkspace, check.Status(read, http.StatusOK)) {
			got, err := read.Object()
			if suite.Check(reqWorkspace, err) {
				suite.Check(reqWorkspace, check.SameID(read, got, id))
				suite.Check(reqWorkspace, workspaceFields(read, got, sent))
				// default_branch_id, when set, is a Branch id: it reads as one.
				if b, ok := got["default_branch_id"].(string); ok && b != "" {
					br := suite.Do(ctx, client.Request{Path: "/v1/branches/" + client.Seg(b)}, reqWorkspace)
					if br.Status != http.StatusOK {
						suite.Check(reqWorkspace, fmt.Errorf("%s: workspace %s names default_branch_id %q, which does not read as a Branch (GET /v1/branches/{id} answers %d)", read, id, b, br.Status))
					}
				}
			}
		}
		if items, ok := xList(ctx, reqWorkspace, "/v1/workspaces", nil); ok && !slices.Contains(xIDs(items), id) {
			suite.Check(reqWorkspace, fmt.Errorf("GET /v1/workspaces: the Workspace %s just created is on no page of the list (%d listed)", id, len(items)))
		}
		// A second Workspace: the list holds two of the spec's, so its
		// cursor is followed in every run.
		key := suite.Key("conform-ws")
		second := xSetup(ctx, "creating a second Workspace (POST /v1/workspaces)", reqWorkspace, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
			Body: map[string]any{"name": key, "root": "conform://" + key}})
		xPaged(ctx, reqWorkspace, "/v1/workspaces", nil, []string{id, xID(second)}, 2)
		patch := map[string]any{"name": "renamed " + name}
		pr := suite.Do(ctx, client.Request{Method: http.MethodPatch, Path: path, Body: patch}, reqWorkspace)
		if suite.Check(reqWorkspace, check.Status(pr, http.StatusOK)) {
			got, err := pr.Object()
			if suite.Check(reqWorkspace, err) {
				suite.Check(reqWorkspace, workspaceFields(pr, got, patch))
			}
			again := suite.Do(ctx, client.Request{Path: path}, reqWorkspace)
			if suite.Check(reqWorkspace, check.Status(again, http.StatusOK)) {
				got, err := again.Object()
				if suite.Check(reqWorkspace, err) {
					suite.Check(reqWorkspace, workspaceFields(again, got, map[string]any{"name": patch["name"], "root": sent["root"]}))
				}
			}
		}
	})

	It("names the Workspace on the sessions, tasks, branches and forks made in it", suite.Req(reqWorkspaceIDs), func(ctx SpecContext) {
		// A workspace of the spec's own (not the first one a target lists):
		// a target that stamps one workspace on everything is caught.
		name := suite.Key("conform-ws")
		ws := xID(xSetup(ctx, "creating a Workspace (POST /v1/workspaces)", reqWorkspace, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
			Body: map[string]any{"name": name, "root": "conform://" + name}}))
		named := func(what string, m map[string]any) {
			if got := m["workspace_id"]; got != ws {
				suite.Check(reqWorkspaceIDs, fmt.Errorf("%s %s made in workspace %s has workspace_id %v", what, xID(m), ws, got))
			}
		}
		se := xSession(ctx, ws, "")
		sess := xID(se)
		named("session", se)
		named("session (read back)", xRead(ctx, "reading the Session", "CORE-READ-005", "/v1/sessions/"+client.Seg(sess), nil))
		task := xSubmit(ctx, sess, nil)
		named("task", xTask(ctx, task))
		br := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/branches",
			Body: map[string]any{"kind": "session", "base_ref": "conform-main"}}, reqWorkspaceIDs)
		if m, err := br.Object(); br.Status/100 == 2 && err == nil && xID(m) != "" {
			named("branch", m)
			named("branch (read back)", xRead(ctx, "reading the Branch", reqBranch, "/v1/branches/"+client.Seg(xID(m)), nil))
		} else {
			suite.Note(fmt.Sprintf("%s: %s could not create a Branch (EXT-BRANCH-001 judges that), so no branch's workspace_id was checked", reqWorkspaceIDs, br))
		}
		fork := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/fork"}, reqWorkspaceIDs)
		if m, err := fork.Object(); fork.Status/100 == 2 && err == nil && xID(m) != "" {
			named("forked session", m)
		}
	})
})
