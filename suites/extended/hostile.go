package extended

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// hostileReqs are the requirements of the Extended hostile-input pass, by
// rule (error.param is Core's SHOULD, judged by the Core pass).
var hostileReqs = map[negative.Rule]string{
	negative.RuleAnswered:  "EXT-NEG-001",
	negative.RuleRefused:   "EXT-NEG-002",
	negative.RuleUnchanged: "EXT-NEG-003",
	negative.RuleNoEcho:    "EXT-NEG-004",
	negative.RuleOpen:      "EXT-NEG-005",
}

// localEvidence are the reads that show a local-server route is served
// (each may be left out: Operation.LocalServer), by the operations they
// stand for.
var localEvidence = []struct {
	path string
	ops  []string
}{
	{"/v1/runtime", []string{"getRuntime"}},
	{"/v1/capabilities", []string{"listCapabilities"}},
	{"/v1/tools", []string{"listTools", "getTool"}},
	{"/v1/permission-requests", []string{"listPermissionRequests", "listTaskPermissionRequests", "respondPermissionRequest"}},
}

var _ = Describe("Hostile input (Extended)", func() {
	It("answers generated malformed requests to every Extended operation it offers with a 4xx error that carries no credential, and changes nothing",
		suite.Req("EXT-NEG-001", "EXT-NEG-002", "EXT-NEG-003", "EXT-NEG-004", "EXT-NEG-005"), func(ctx SpecContext) {
			ws := xWorkspace(ctx)
			ids := map[string]string{"workspace_id": ws}
			run := suite.Env().RunID
			create := func(name, path string, body map[string]any) {
				resp, err := suite.Client().Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: body})
				suite.Transport(err, suite.SpecReqs()...)
				if m, err := resp.Object(); err == nil && resp.Status/100 == 2 {
					ids[name] = xID(m)
				}
			}
			create("session_id", "/v1/sessions", map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": run}})
			create("persona_id", "/v1/personas", map[string]any{"name": "conform-hostile", "version": "1.0.0", "entry_workflow": "conform/echo",
				"description": "conform hostile-input fixture", "autonomy_tier": "suggest", "receipt_policy": "optional"})
			create("vault_id", "/v1/vaults", map[string]any{"provider": "conform-test", "capabilities": []any{}, "workspace_id": ws})
			if s := ids["session_id"]; s != "" {
				create("branch_id", "/v1/sessions/"+client.Seg(s)+"/branches", map[string]any{"kind": "session", "base_ref": "conform-hostile"})
				create("memory_id", "/v1/memories", map[string]any{"scope": "session", "owner_id": s, "content": "conform hostile-input fixture",
					"provenance": map[string]any{"actor": "conform"}})
			}
			for _, l := range []struct{ name, path string }{
				{"connector_id", "/v1/connectors"}, {"skill_id", "/v1/skills"}, {"quota_id", "/v1/quotas"},
				{"request_id", "/v1/permission-requests"}, {"tool_id", "/v1/tools"},
			} {
				ids[l.name] = firstListed(ctx, l.path)
			}
			// The later revision's local-server routes, which a target may
			// leave out, are left out of the pass only where the evidence
			// says the target does not offer them (suite.Unoffered: a 405 or
			// 501, or a 404 a made-up route beside it gets too), never for
			// any refusal of the read: a route that answers 403 or 500 is
			// served, and probed.
			skip := map[string]string{}
			for _, l := range localEvidence {
				req := client.Request{Path: l.path}
				resp, err := suite.Client().Do(ctx, req)
				suite.Transport(err, suite.SpecReqs()...)
				if why := localUnoffered(ctx, req, resp); why != "" {
					for _, op := range l.ops {
						skip[op] = why
					}
				}
			}
			files := "/v1/workspaces/" + client.Seg(ws) + "/files"
			req := client.Request{Method: http.MethodPut, Path: files, Query: url.Values{"path": {"conform-hostile.txt"}},
				Body: map[string]any{"content": "conform hostile-input fixture"}}
			put, err := suite.Client().Do(ctx, req)
			suite.Transport(err, suite.SpecReqs()...)
			if why := localUnoffered(ctx, req, put, "workspace "+ws+" (just read)"); why != "" {
				skip["writeWorkspaceFile"], skip["readWorkspaceFile"] = why, why
			}
			for _, op := range slices.Sorted(maps.Keys(skip)) {
				suite.Note(fmt.Sprintf("hostile-input pass (extended): %s not probed: %s", op, skip[op]))
			}
			suite.HostileInput(ctx, requirements.Extended, hostileReqs, negative.Fixtures{IDs: ids, RunID: run, Skip: skip})
		})
})

// localUnoffered is why the evidence says the target does not offer the
// operation req was sent to ("" when it is offered: any answer but 404,
// 405 and 501, or a refusal the evidence contradicts, which is noted: the
// operation's own spec judges the refusal, and the pass probes it).
func localUnoffered(ctx context.Context, req client.Request, resp *client.Response, known ...string) string {
	why, err := suite.Unoffered(ctx, suite.Offering{Request: req, Answer: resp, Known: known}, suite.SpecReqs()...)
	if err != nil {
		suite.Note("hostile-input pass (extended): " + err.Error() + ": probed as offered")
	}
	return why
}

// firstListed is the id of the first item a list shows, "" when it shows
// none or is not served.
func firstListed(ctx context.Context, path string) string {
	resp, err := suite.Client().Do(ctx, client.Request{Path: path})
	suite.Transport(err, suite.SpecReqs()...)
	if resp.Status != http.StatusOK {
		return ""
	}
	if p, err := check.ListPage(resp); err == nil && len(p.IDs) > 0 {
		return p.IDs[0]
	}
	return ""
}
