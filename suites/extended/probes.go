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
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/suite"
)

// Negative probes generated from the OpenAPI document
// (docs/interpretations.md#generated-probes). A negative rule is tried on
// every operation it governs, as the vendored document lists them, not on
// routes picked by hand: operations × actor classes (the read-only actor on
// every write, the second actor on every operation naming a resource:
// authz.go) × token classes (every refused token on every read, write and
// stream, the WebSocket upgrade and the auth frame: oauth.go), a reused
// Idempotency-Key with another body on every keyed write and one key sent
// by two actors (idempotency.go). This file holds what they share: the
// operations, each addressed at the first actor's resources with a valid
// body carrying a run-unique marker, and what refused requests must leave
// unchanged.

// probeMarkerMember is the metadata member a probe's body marks itself by.
const probeMarkerMember = "conform.probe"

// opProbe is one operation of the document, addressed at the resources of
// a fixture set.
type opProbe struct {
	op  openapi.Operation
	req client.Request // without credential or key: a valid body carrying the marker
	// missing are the path parameters the fixtures name no resource for
	// (a made-up id stands in).
	missing []string
}

// documentOps are the document's non-public operations that keep selects,
// in the document's order (by path, then method).
func documentOps(keep func(openapi.Operation) bool) []openapi.Operation {
	GinkgoHelper()
	doc, err := openapi.Default()
	if err != nil {
		Fail("the vendored OpenAPI document does not load: " + err.Error())
	}
	var out []openapi.Operation
	for _, op := range doc.Operations() {
		if !op.Public && (keep == nil || keep(op)) {
			out = append(out, op)
		}
	}
	if len(out) == 0 {
		Fail("the OpenAPI document lists no operation to probe")
	}
	return out
}

// writeOp reports whether op may change state: every method but GET and
// HEAD, except verifyReceipt, which only reads a receipt (the reference
// Harness lets a read-only actor verify).
func writeOp(op openapi.Operation) bool {
	return op.Method != http.MethodGet && op.Method != http.MethodHead && op.ID != "verifyReceipt"
}

// address builds op's request at the resources ids names (by path
// parameter); a parameter ids has no resource for gets a made-up id and
// is listed in missing. marker marks the body.
func address(op openapi.Operation, ids map[string]string, marker string) opProbe {
	p := opProbe{op: op}
	path := op.Template
	for _, name := range op.PathParams {
		id := ids[name]
		if id == "" {
			id = marker + "-missing"
			p.missing = append(p.missing, name)
		}
		path = strings.ReplaceAll(path, "{"+name+"}", client.Seg(id))
	}
	p.req = client.Request{Method: op.Method, Path: path}
	if slices.Contains(op.QueryParams, "path") {
		p.req.Query = url.Values{"path": {"conform-probe.txt"}} // the workspace file routes name a file
	} else if slices.Contains(op.QueryParams, "limit") {
		p.req.Query = url.Values{"limit": {"1"}}
	}
	if op.HasBody {
		p.req.Body = opBody(op.ID, ids, marker)
	}
	return p
}

// opBody is a valid body (the document's request schema:
// TestOpBodiesAreValid) for the operation id, naming the resources of ids
// where it must name one, and carrying marker where the body has room: a
// name, a description, metadata, a message's text, a reason. An operation
// the table does not know gets an empty object (TestOpBodiesAreValid lists
// the document's operations, so a new one is noticed).
func opBody(id string, ids map[string]string, marker string) any {
	meta := map[string]any{probeMarkerMember: marker}
	text := func() map[string]any {
		return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": marker, "visibility": "public"}}}
	}
	switch id {
	case "registerArtifact":
		return map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "session_id": ids["session_id"], "metadata": meta}
	case "createMemory":
		return map[string]any{"scope": "workspace", "owner_id": ids["workspace_id"], "content": marker, "provenance": map[string]any{"actor": "conform"}, "metadata": meta}
	case "respondPermissionRequest":
		return map[string]any{"approved": false, "reason": marker, "metadata": meta}
	case "createPersona":
		return map[string]any{"name": marker, "version": "1", "entry_workflow": "conform.probe", "description": marker,
			"autonomy_tier": "act_auto", "receipt_policy": "optional", "metadata": meta}
	case "updatePersona":
		return map[string]any{"description": marker, "metadata": meta}
	case "verifyReceipt":
		return map[string]any{}
	case "createSession":
		return map[string]any{"workspace_id": ids["workspace_id"], "metadata": meta}
	case "updateSession":
		return map[string]any{"summary": marker, "metadata": meta}
	case "createSessionBranch":
		return map[string]any{"kind": "session", "base_ref": "main", "metadata": meta}
	case "forkSession":
		return map[string]any{"metadata": meta}
	case "appendSessionMessage":
		return map[string]any{"message": text()}
	case "submitSessionTask":
		return map[string]any{"input": text(), "metadata": meta}
	case "truncateSession":
		return map[string]any{"keep_first": 0, "reason": marker}
	case "submitTask":
		return map[string]any{"input": text(), "session_id": ids["session_id"], "metadata": meta}
	case "cancelTask":
		return map[string]any{"reason": marker}
	case "appendTaskMessage":
		return map[string]any{"kind": "input", "message": text()}
	case "replayTask":
		return map[string]any{"mode": "exact", "reason": marker, "metadata": meta}
	case "createVault":
		return map[string]any{"workspace_id": ids["workspace_id"], "provider": "conform-test", "capabilities": []any{"read"}, "metadata": meta}
	case "createWorkspace":
		return map[string]any{"name": marker, "root": "conform://probe", "metadata": meta}
	case "updateWorkspace":
		return map[string]any{"name": marker, "metadata": meta}
	case "writeWorkspaceFile":
		return map[string]any{"path": "conform-probe.txt", "content": marker, "metadata": meta}
	}
	return map[string]any{}
}

// sendOp sends p with the credential auth ("" for the run's API key),
// marked as the deliberate probe what; a stream is opened and closed at
// once (its answer's head is what a refusal is judged on).
func sendOp(ctx context.Context, p opProbe, auth, what string) *client.Response {
	GinkgoHelper()
	r := p.req
	r.Authorization = auth
	r.Probe = fmt.Sprintf("%s (%s)", what, p.op.ID)
	if !p.op.Stream {
		return suite.Do(ctx, r, suite.SpecReqs()...)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := suite.Client().Stream(sctx, r)
	suite.Transport(err, suite.SpecReqs()...)
	st.Close()
	return st.Response
}

// unoffered reports whether the target does not serve p's operation at
// all, so that resp, the answer to p sent with the credential auth, says
// nothing about the rule probed. A status alone is no evidence
// (docs/interpretations.md#offered-by-evidence): an answer of 404, 405 or
// 501 is weighed by suite.Unoffered (a 404 against a route that cannot
// exist beside the operation's, asked with the same credential), and the
// operation is unoffered only if the first actor's own request — made-up
// ids and an empty body, so it can change nothing — is weighed so too.
func unoffered(ctx context.Context, p opProbe, auth string, resp *client.Response) bool {
	GinkgoHelper()
	if !notOffered(ctx, p, auth, resp) {
		return false
	}
	ctl := address(p.op, nil, suite.Key("conform-control"))
	if p.op.HasBody {
		ctl.req.Body = map[string]any{}
	}
	return notOffered(ctx, ctl, "", sendOp(ctx, ctl, "", "whether the operation is offered: the run's own key, made-up ids and an empty body"))
}

// notOffered reports whether resp, the answer to p sent with auth, shows
// by evidence that the target does not offer p's operation.
func notOffered(ctx context.Context, p opProbe, auth string, resp *client.Response) bool {
	GinkgoHelper()
	if !check.UnofferedStatus(resp.Status) {
		return false
	}
	req := p.req
	req.Authorization = auth
	why, _ := suite.Unoffered(ctx, suite.Offering{Request: req, Answer: resp}, suite.SpecReqs()...)
	return why != ""
}

// effectsOf reads what refused requests addressed at fx could have
// changed: its resources by id, the lists only this spec writes to (exact
// ids; every create of the document but persona and workspace names the
// workspace or session), and the shared persona and workspace lists
// (searched for the marker). Unreadable reads are left out.
func effectsOf(ctx context.Context, fx actorFx) check.Effects {
	GinkgoHelper()
	s := check.Effects{Objects: map[string]map[string]any{}, Lists: map[string][]string{}, Texts: map[string]string{}}
	for _, r := range []struct{ param, path string }{
		{"workspace_id", "/v1/workspaces/"}, {"session_id", "/v1/sessions/"}, {"task_id", "/v1/tasks/"}, {"persona_id", "/v1/personas/"},
		{"memory_id", "/v1/memories/"}, {"vault_id", "/v1/vaults/"}, {"artifact_id", "/v1/artifacts/"}, {"branch_id", "/v1/branches/"},
		{"message_id", "/v1/messages/"},
	} {
		id := fx.ids[r.param]
		if id == "" {
			continue
		}
		p := r.path + client.Seg(id)
		resp := suite.Do(ctx, client.Request{Path: p}, suite.SpecReqs()...)
		if m, err := resp.Object(); err == nil && resp.Status == http.StatusOK {
			s.Objects[p] = m
			s.Texts["GET "+p] = string(resp.Body)
		}
	}
	ws, sess := url.Values{"workspace_id": {fx.workspace}}, url.Values{"session_id": {fx.ids["session_id"]}}
	sessPath := "/v1/sessions/" + client.Seg(fx.ids["session_id"])
	lists := []struct {
		path  string
		q     url.Values
		exact bool
	}{
		{"/v1/sessions", ws, true}, {"/v1/tasks", ws, true}, {sessPath + "/tasks", nil, true}, {sessPath + "/messages", nil, true},
		{sessPath + "/branches", nil, true}, {"/v1/artifacts", sess, true},
		// A refused request may leave an event (an audit trail is no effect),
		// but none that carries its body.
		{sessPath + "/events", nil, false},
		{"/v1/memories", ws, true}, {"/v1/vaults", ws, true},
		// Personas and workspaces name no workspace to filter by: a refused
		// create would show in the shared list, by its marker.
		{"/v1/personas", nil, false}, {"/v1/workspaces", nil, false},
	}
	for _, l := range lists {
		name := "GET " + l.path
		if len(l.q) > 0 {
			name += "?" + l.q.Encode()
		}
		items, resp, err := listAll(ctx, l.path, l.q, suite.SpecReqs()...)
		if err != nil || resp == nil || resp.Status != http.StatusOK {
			continue
		}
		if l.exact {
			s.Lists[name] = append([]string{}, ids(items)...)
		}
		s.Texts[name] = jsonText(items)
	}
	return s
}
