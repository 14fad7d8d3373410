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

// Branches (EXT-BRANCH-001, -002): the resource, and the lineage a client
// reads to tell main-path work from alternate-path work.

var branchKinds = []string{"workspace", "session", "task", "sandbox"}

// branchFields checks a Branch's required fields and, for the members of
// want, their values.
func branchFields(resp *client.Response, m, want map[string]any) error {
	var errs []string
	if m["object"] != "branch" {
		errs = append(errs, fmt.Sprintf("object = %v, want \"branch\"", m["object"]))
	}
	for _, f := range []string{"id", "workspace_id", "base_ref"} {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %v, want a non-empty string", f, m[f]))
		}
	}
	if k, _ := m["kind"].(string); !slices.Contains(branchKinds, k) {
		errs = append(errs, fmt.Sprintf("kind = %v, want one of %v", m["kind"], branchKinds))
	}
	errs = append(errs, sameValues(m, want)...)
	return xFindings(resp, "branch", errs)
}

var _ = Describe("Branches", func() {
	It("creates a session Branch (201) that its session's list and GET /v1/branches/{id} return", suite.Req(reqBranch), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		base := suite.Key("conform-base")
		sent := map[string]any{"kind": "session", "base_ref": base}
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/branches", Body: sent}, reqBranch)
		if resp.Status/100 != 2 {
			suite.Must(reqBranch, check.Status(resp, http.StatusCreated))
		}
		suite.Check(reqBranch, check.Status(resp, http.StatusCreated))
		b, err := resp.Object()
		suite.Must(reqBranch, err)
		id := xID(b)
		if id == "" {
			suite.Must(reqBranch, fmt.Errorf("%s: the created Branch has no id", resp))
		}
		suite.Check(reqBranch, branchFields(resp, b, sent))
		if items, ok := xList(ctx, reqBranch, "/v1/sessions/"+client.Seg(sess)+"/branches", nil); ok && !slices.Contains(xIDs(items), id) {
			suite.Check(reqBranch, fmt.Errorf("GET /v1/sessions/%s/branches: the Branch %s just created on the session is on no page of the list (%d listed)", sess, id, len(items)))
		}
		// A second Branch: the session's list holds two, read one a page
		// to its end.
		second := xSetup(ctx, "creating a second Branch (POST /v1/sessions/{id}/branches)", reqBranch, client.Request{Method: http.MethodPost,
			Path: "/v1/sessions/" + client.Seg(sess) + "/branches", Body: map[string]any{"kind": "session", "base_ref": suite.Key("conform-base")}})
		xPaged(ctx, reqBranch, "/v1/sessions/"+client.Seg(sess)+"/branches", nil, []string{id, xID(second)}, 20)
		read := suite.Do(ctx, client.Request{Path: "/v1/branches/" + client.Seg(id)}, reqBranch)
		if suite.Check(reqBranch, check.Status(read, http.StatusOK)) {
			got, err := read.Object()
			if suite.Check(reqBranch, err) {
				suite.Check(reqBranch, check.SameID(read, got, id))
				suite.Check(reqBranch, branchFields(read, got, sent))
			}
		}
	})

	It("tells main-path work from alternate-path work by branch lineage", suite.Req(reqLineage), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		br := xSetup(ctx, "creating a Branch (POST /v1/sessions/{id}/branches)", reqBranch, client.Request{Method: http.MethodPost,
			Path: "/v1/sessions/" + client.Seg(sess) + "/branches", Body: map[string]any{"kind": "session", "base_ref": suite.Key("conform-base")}})
		b := xID(br)
		// The Branch names where it came from.
		if br["parent_branch_id"] == nil && br["session_id"] != sess && br["task_id"] == nil {
			suite.Check(reqLineage, fmt.Errorf("branch %s, made on session %s, names no parent: parent_branch_id %v, session_id %v, task_id %v",
				b, sess, br["parent_branch_id"], br["session_id"], br["task_id"]))
		}
		// A task submitted on the branch names it; a main-path task does not.
		onBranch := xSubmit(ctx, sess, map[string]any{"branch_id": b})
		if t := xTask(ctx, onBranch); t["branch_id"] != b {
			suite.Check(reqLineage, fmt.Errorf("task %s, submitted with branch_id %s, reads with branch_id %v", onBranch, b, t["branch_id"]))
		}
		main := xSubmit(ctx, sess, nil)
		if t := xTask(ctx, main); t["branch_id"] == b {
			suite.Check(reqLineage, fmt.Errorf("task %s, submitted without a branch_id, claims the alternate branch %s", main, b))
		}
		// An artifact made for the branch's task leads back to it: by its own
		// branch_id, or by its task_id (docs/interpretations.md#artifact-lineage).
		art := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: map[string]any{"kind": "log", "mime_type": "text/plain",
			"visibility": "public", "uri": nil, "task_id": onBranch, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, reqLineage)
		if a, err := art.Object(); art.Status/100 == 2 && err == nil {
			if a["branch_id"] != b && a["task_id"] != onBranch {
				suite.Check(reqLineage, fmt.Errorf("%s: artifact %s registered for task %s (on branch %s) names neither that branch (branch_id %v) nor the task (task_id %v)",
					art, xID(a), onBranch, b, a["branch_id"], a["task_id"]))
			}
		}
		// A fork is an alternate path too: it names its parent or its branch.
		fork := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/fork"}, reqLineage)
		if f, err := fork.Object(); fork.Status/100 == 2 && err == nil && xID(f) != "" {
			suite.Check(reqLineage, forkLinked(ctx, sess, f))
		}
	})
})
