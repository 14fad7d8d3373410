package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/suite"
)

// Authorization with more than one actor (EXT-AUTHZ-001, -002, -008, -009;
// docs/interpretations.md#authz-tenancy). The run's first key is actor A;
// --second-api-key is actor B, of another tenant, which makes a workspace
// of its own; --read-only-api-key is an actor that may read A's resources
// but change none. A's resources must be invisible to B over every
// operation of the OpenAPI that names one (B's answer is exactly the
// answer for an id that does not exist), B's lists and streams never show
// them, the read-only actor's writes are refused with 403, no refused
// write has an effect, and no refusal repeats a credential or secret.

const (
	reqAuthzPermission = "EXT-AUTHZ-001" // an actor lacking a permission gets 403, no effect
	reqAuthzMembership = "EXT-AUTHZ-002" // another tenant's resources: refused (403/404), unlisted, unchanged
	reqAuthzNoSecret   = "EXT-AUTHZ-008" // refusals carry no credential or secret
	reqAuthzHidden     = "EXT-AUTHZ-009" // refused exactly like an id that does not exist
)

// remedySecondKey and remedyReadOnlyKey say how to give the run the actor
// it lacks.
var (
	remedySecondKey = fmt.Sprintf("give the run the API key of a second actor, of another tenant than the first key's and allowed to create a workspace: %s or --second-api-key-file FILE (conform serve makes one: docs/ci.md#a-second-actor---second-api-key---read-only-api-key)",
		config.EnvName("second_api_key"))
	remedyReadOnlyKey = fmt.Sprintf("give the run the API key of an actor that may read the first key's resources but change none: %s or --read-only-api-key-file FILE (conform serve makes one: docs/ci.md#a-second-actor---second-api-key---read-only-api-key)",
		config.EnvName("read_only_api_key"))
)

// actorFx is what actor A owns, by OpenAPI path parameter name.
type actorFx struct {
	ids       map[string]string // path parameter -> A's resource
	workspace string
	taskBy    string // created_by of A's task
	canary    string // the secret of A's vault ("" without the hook)
}

var _ = Describe("Authorization between actors", func() {
	It("hides every resource of another tenant from a second actor, over every operation that names one, and attributes writes to the key's actor",
		suite.Req(reqAuthzMembership, reqAuthzHidden, reqAuthzNoSecret), func(ctx SpecContext) {
			second := suite.Env().Config.SecondAPIKey
			if second == "" {
				suite.Unverified("the run has no second actor's key, so it cannot ask for one actor's resources as another", remedySecondKey)
			}
			bAuth := "Bearer " + second
			keyWorks(ctx, bAuth, "the second API key", remedySecondKey)
			fx := actorFixtures(ctx)
			marker := suite.Key("conform-refused")
			before := effectsOf(ctx, fx)
			var refusals []*client.Response

			// B's own work: its workspace, session and task (created_by).
			bWS := asActor(ctx, bAuth, client.Request{Method: http.MethodPost, Path: "/v1/workspaces", IdempotencyKey: suite.Key("authz-b"),
				Body: map[string]any{"name": suite.Key("conform-ws-b"), "root": "conform://second-actor"}})
			bWSID := createdOrUnverified(bWS, "the second actor creating a workspace of its own")
			bSess := createdOrUnverified(asActor(ctx, bAuth, client.Request{Method: http.MethodPost, Path: "/v1/sessions",
				Body: map[string]any{"workspace_id": bWSID, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}), "the second actor creating a session")
			bTask := asActor(ctx, bAuth, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(bSess) + "/tasks",
				Body: echoTask("second actor"), IdempotencyKey: suite.Key("authz-b")})
			bTaskID := createdOrUnverified(bTask, "the second actor submitting a task")
			bt, _ := bTask.Object()
			suite.Check(reqAuthzMembership, attribution(fx, bt, ctx, bAuth, bTaskID))

			// Every operation that names one of A's resources, as B, against
			// the same operation naming an id that does not exist.
			probed := 0
			var missing, unoffered []string
			for _, p := range idProbes(fx, marker) {
				if p.real == nil {
					missing = append(missing, p.op.ID)
					continue
				}
				probed++
				real := sendAs(ctx, *p.real, p.op.Stream, bAuth)
				fake := sendAs(ctx, p.fake, p.op.Stream, bAuth)
				refusals = append(refusals, real, fake)
				if real.Status == fake.Status && (real.Status == http.StatusNotImplemented || real.Status == http.StatusMethodNotAllowed) {
					unoffered = append(unoffered, p.op.ID) // the same refusal whatever the id: the operation is not offered
					continue
				}
				suite.Check(reqAuthzMembership, refusedToOther(real, p.op.ID))
				suite.Check(reqAuthzHidden, sameAsMissing(real, fake, p.op.ID, p.what))
				suite.Check(reqAuthzHidden, noLeak(real, fx, p.what, p.sent))
			}
			if len(missing) > 0 {
				suite.Note(fmt.Sprintf("EXT-AUTHZ-002/009: %d operations were not probed for want of a resource of that kind (the target made none for the first key): %s",
					len(missing), strings.Join(missing, ", ")))
			}
			if len(unoffered) > 0 {
				suite.Note(fmt.Sprintf("EXT-AUTHZ-002/009: the target does not offer %s (the same 405 or 501 for any id), so they were not judged", strings.Join(unoffered, ", ")))
			}
			if probed == 0 {
				suite.NothingToCheck(reqAuthzHidden, "no operation naming a resource could be probed", remedySecondKey)
			}

			// Nothing B tried changed A's resources.
			suite.Check(reqAuthzMembership, check.NoEffect("requests refused to the second actor", before, effectsOf(ctx, fx), marker))

			// B's lists, unfiltered and filtered by A's workspace, and the
			// global event stream never show A's resources.
			suite.Check(reqAuthzMembership, listsHide(ctx, bAuth, fx))
			suite.Check(reqAuthzMembership, streamHides(ctx, bAuth, fx, bSess))

			// No refusal repeats a credential or A's secret; a key that is
			// not valid gets a 401 that does not repeat it either.
			bogus := "sk-conform-authz-bogus-" + strings.ReplaceAll(suite.Key("k"), "-", "")
			suite.Env().Redactor.Add(bogus)
			refusals = append(refusals, suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(fx.ids["task_id"]), Authorization: "Bearer " + bogus,
				Probe: "authorization: a bearer credential that is not a valid key"}, reqAuthzNoSecret))
			suite.Check(reqAuthzNoSecret, refusalsClean(refusals, fx.canary, bogus))
		})

	It("refuses every write of the OpenAPI to an actor that may only read, with 403 permission_denied and no effect",
		suite.Req(reqAuthzPermission, reqAuthzNoSecret), func(ctx SpecContext) {
			ro := suite.Env().Config.ReadOnlyAPIKey
			if ro == "" {
				suite.Unverified("the run has no read-only actor's key, so it cannot hold a credential that lacks a permission", remedyReadOnlyKey)
			}
			rAuth := "Bearer " + ro
			keyWorks(ctx, rAuth, "the read-only API key", remedyReadOnlyKey)
			fx := actorFixtures(ctx)
			// The control: the read-only actor reads the first key's session,
			// so its refusals below are about permission, not visibility.
			read := asActor(ctx, rAuth, client.Request{Path: "/v1/sessions/" + client.Seg(fx.ids["session_id"])})
			if read.Status != http.StatusOK {
				suite.Unverified(fmt.Sprintf("%s with the read-only key: status %d, want 200: its actor must be able to read the first key's resources for its refused writes to be about permission", read, read.Status), remedyReadOnlyKey)
			}
			// Every write of the document (probes.go), addressed at the first
			// key's resources with a valid body carrying the marker.
			marker := suite.Key("conform-refused")
			before := effectsOf(ctx, fx)
			var refusals []*client.Response
			var missing, unoffers []string
			judged := 0
			for _, op := range documentOps(writeOp) {
				p := address(op, fx.ids, marker)
				if len(p.missing) > 0 {
					missing = append(missing, op.ID)
					continue
				}
				if op.Idempotent {
					p.req.IdempotencyKey = suite.Key("authz-ro")
				}
				resp := sendOp(ctx, p, rAuth, "authorization: a write of an actor that may only read")
				refusals = append(refusals, resp)
				if unoffered(ctx, p, rAuth, resp) {
					unoffers = append(unoffers, fmt.Sprintf("%s (%d)", op.ID, resp.Status))
					continue
				}
				judged++
				if err := check.Refused(resp, []int{http.StatusForbidden}, "permission_denied"); err != nil {
					suite.Check(reqAuthzPermission, fmt.Errorf("%s, a write of the read-only actor: %w", op.ID, err))
				}
			}
			if len(missing) > 0 {
				suite.Note(fmt.Sprintf("%s: %d writes were not probed for want of a resource of that kind (the target made none for the first key): %s",
					reqAuthzPermission, len(missing), strings.Join(missing, ", ")))
			}
			if len(unoffers) > 0 {
				suite.Note(fmt.Sprintf("%s: the target does not offer %s, so they were not judged", reqAuthzPermission, strings.Join(unoffers, ", ")))
			}
			if judged == 0 {
				suite.NothingToCheck(reqAuthzPermission, "no write of the OpenAPI could be probed", remedyReadOnlyKey)
			}
			suite.Check(reqAuthzPermission, check.NoEffect("writes refused to the read-only actor", before, effectsOf(ctx, fx), marker))
			suite.Check(reqAuthzNoSecret, refusalsClean(refusals, fx.canary, ""))
		})
})

// keyWorks ends the spec unverified unless the credential reads a list.
func keyWorks(ctx context.Context, auth, what, remedy string) {
	GinkgoHelper()
	resp := asActor(ctx, auth, client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}})
	if resp.Status != http.StatusOK {
		suite.Unverified(fmt.Sprintf("%s with %s: status %d, want 200: the key is not accepted", resp, what, resp.Status), remedy)
	}
}

// asActor sends req with another actor's credential; the exchange is the
// spec's, judged by the OpenAPI oracle like every other.
func asActor(ctx context.Context, auth string, req client.Request) *client.Response {
	GinkgoHelper()
	req.Authorization = auth
	return suite.Do(ctx, req, suite.SpecReqs()...)
}

// sendAs sends req as auth; a stream is opened and closed at once.
func sendAs(ctx context.Context, req client.Request, stream bool, auth string) *client.Response {
	GinkgoHelper()
	if !stream {
		return asActor(ctx, auth, req)
	}
	req.Authorization = auth
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := suite.Client().Stream(sctx, req)
	suite.Transport(err, suite.SpecReqs()...)
	st.Close()
	return st.Response
}

// createdOrUnverified is the id of a 2xx answer, or the spec ends unverified.
func createdOrUnverified(resp *client.Response, what string) string {
	GinkgoHelper()
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || id == "" {
		suite.Unverified(fmt.Sprintf("%s: %s, want a 2xx answer with an id", what, resp), remedySecondKey)
	}
	return id
}

func userMessage(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}
}

// actorFixtures makes one resource of each kind the first key can make: a
// workspace with a session, a finished task (its events, outcome and
// receipt), a message, an artifact, a branch, a persona, a memory and a
// vault (holding a canary secret when the hook lets it).
func actorFixtures(ctx context.Context) actorFx {
	GinkgoHelper()
	ws := ownWorkspace(ctx, suite.SpecReqs()...)
	fx := actorFx{ids: map[string]string{"workspace_id": ws}, workspace: ws}
	sess := newSession(ctx, ws, suite.SpecReqs()...)
	fx.ids["session_id"] = sess
	task := submitText(ctx, sess, "first actor", suite.SpecReqs()...)
	tm, _ := task.Object()
	taskID, _ := tm["id"].(string)
	if task.Status != http.StatusAccepted || taskID == "" {
		suite.Unverified(fmt.Sprintf("setting up a task: %s, want 202", task), "make task submit work (Core)")
	}
	fx.ids["task_id"] = taskID
	fx.taskBy, _ = tm["created_by"].(string)
	if t := waitTerminal(ctx, taskID, suite.SpecReqs()...); t != nil {
		for param, field := range map[string]string{"receipt_id": "receipt_id", "outcome_id": "outcome_id"} {
			if id, _ := t[field].(string); id != "" {
				fx.ids[param] = id
			}
		}
	}
	evs := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(taskID) + "/events", Query: url.Values{"limit": {"1"}}}, suite.SpecReqs()...)
	if p, err := check.ListPage(evs); err == nil && len(p.IDs) > 0 {
		fx.ids["event_id"] = p.IDs[0]
	}
	made := func(param string, req client.Request) {
		resp := suite.Do(ctx, req, suite.SpecReqs()...)
		if m, err := resp.Object(); err == nil && resp.Status/100 == 2 {
			if id, _ := m["id"].(string); id != "" {
				fx.ids[param] = id
			}
		}
	}
	made("message_id", client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages", Body: map[string]any{"message": userMessage("first actor's message")}})
	made("artifact_id", client.Request{Method: http.MethodPost, Path: "/v1/artifacts", IdempotencyKey: suite.Key("authz"),
		Body: map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "session_id": sess, "content_base64": "Zmlyc3QgYWN0b3I="}})
	made("branch_id", client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/branches", IdempotencyKey: suite.Key("authz"),
		Body: map[string]any{"kind": "session", "base_ref": "main"}})
	made("persona_id", client.Request{Method: http.MethodPost, Path: "/v1/personas", IdempotencyKey: suite.Key("authz"), Body: personaBody(suite.Key("conform-persona"), nil)})
	made("memory_id", client.Request{Method: http.MethodPost, Path: "/v1/memories", IdempotencyKey: suite.Key("authz"),
		Body: map[string]any{"scope": "workspace", "owner_id": ws, "content": "first actor's memory", "provenance": map[string]any{"actor": "conform"}}})
	vault := map[string]any{"provider": "conform-test", "capabilities": []string{"use"}, "workspace_id": ws}
	if _, ok := hooked(capVaultSecrets); ok {
		fx.canary = newCanary()
		vault["secrets"] = map[string]any{secretName: fx.canary}
	}
	made("vault_id", client.Request{Method: http.MethodPost, Path: "/v1/vaults", IdempotencyKey: suite.Key("authz"), Body: vault})
	if _, ok := hooked(capQuotas); ok {
		made("quota_id", client.Request{Method: http.MethodPost, Path: "/v1/conform/quotas", Probe: hookProbe(capQuotas),
			Body: map[string]any{"scope": "workspace", "owner_id": ws, "limits": map[string]any{"tasks": 1e9}, "hard_limit": false}})
	}
	if _, ok := hooked(capConnectors); ok {
		made("connector_id", client.Request{Method: http.MethodPost, Path: "/v1/conform/connectors", Probe: hookProbe(capConnectors),
			Body: map[string]any{"provider": "conform-test", "workspace_id": ws, "event_kinds": []string{"issue.opened"}, "target_session_id": sess}})
	}
	return fx
}

// bodyRefs are the body members that name a resource, with the fixture
// (path parameter) they name.
var bodyRefs = map[string]string{"workspace_id": "workspace_id", "session_id": "session_id", "task_id": "task_id", "owner_id": "workspace_id",
	"persona_id": "persona_id", "branch_id": "branch_id", "parent_task_id": "task_id"}

// idProbe is one operation naming A's resources, and the same operation
// naming ids that do not exist.
type idProbe struct {
	op   openapi.Operation
	what string
	real *client.Request // nil when A has no resource of a kind it names
	fake client.Request
	sent []string // A's ids the real request names
}

// idProbes lists every non-public operation of the OpenAPI whose path
// names a resource (skills are the Harness's, not an actor's), and the
// writes whose body names A's workspace or session; bodies are the
// generated probes' (probes.go), carrying marker.
func idProbes(fx actorFx, marker string) []idProbe {
	GinkgoHelper()
	doc, err := openapi.Default()
	if err != nil {
		Fail("the vendored OpenAPI document does not load: " + err.Error())
	}
	var out []idProbe
	for _, op := range doc.Operations() {
		if op.Public || len(op.PathParams) == 0 || slices.Contains(op.PathParams, "skill_id") || slices.Contains(op.PathParams, "tool_id") {
			continue
		}
		p := idProbe{op: op, what: "the first key's " + strings.Join(op.PathParams, ", ")}
		realPath, fakePath, ok := op.Template, op.Template, true
		for _, name := range op.PathParams {
			id := fx.ids[name]
			if id == "" {
				ok = false
			}
			p.sent = append(p.sent, id)
			realPath = strings.ReplaceAll(realPath, "{"+name+"}", client.Seg(id))
			fakePath = strings.ReplaceAll(fakePath, "{"+name+"}", client.Seg(suite.Key("conform-missing")))
		}
		var body any
		if op.HasBody {
			body = opBody(op.ID, fx.ids, marker)
		}
		p.fake = client.Request{Method: op.Method, Path: fakePath, Body: body}
		if slices.Contains(op.QueryParams, "path") {
			p.fake.Query = url.Values{"path": {"conform-authz.txt"}} // the workspace file routes name a file
		}
		if op.Idempotent {
			p.fake.IdempotencyKey = suite.Key("authz")
		}
		if ok {
			r := p.fake
			r.Path = realPath
			if op.Idempotent {
				r.IdempotencyKey = suite.Key("authz")
			}
			p.real = &r
		}
		out = append(out, p)
	}
	// The writes whose body names A's resource (every write of the
	// document without a path parameter whose generated body names one),
	// against the same body naming an id that does not exist.
	missing := suite.Key("conform-missing")
	for _, op := range documentOps(func(op openapi.Operation) bool { return writeOp(op) && op.HasBody && len(op.PathParams) == 0 }) {
		body, _ := opBody(op.ID, fx.ids, marker).(map[string]any)
		for _, field := range slices.Sorted(maps.Keys(body)) {
			param, names := bodyRefs[field]
			id, _ := body[field].(string)
			if !names || id == "" || id != fx.ids[param] {
				continue
			}
			real := client.Request{Method: op.Method, Path: op.Template, Body: body, IdempotencyKey: suite.Key("authz")}
			fake := real
			fake.IdempotencyKey = suite.Key("authz")
			fb := maps.Clone(body)
			fb[field] = missing
			fake.Body = fb
			out = append(out, idProbe{op: openapi.Operation{ID: op.ID + " (" + field + ")", Method: op.Method}, what: "the first key's " + field + " in the body",
				real: &real, fake: fake, sent: []string{id}})
		}
	}
	return out
}

// refusedToOther judges B's answer for A's resource: refused with 403 or
// 404 (docs/interpretations.md#authorization-readings), never served.
func refusedToOther(resp *client.Response, op string) error {
	switch resp.Status {
	case http.StatusForbidden, http.StatusNotFound:
		return nil
	}
	if resp.Status/100 == 2 {
		return fmt.Errorf("%s (%s) with the second actor's key, naming the first key's resource: served (%d); an actor outside a workspace may neither read nor change its resources", resp, op, resp.Status)
	}
	return fmt.Errorf("%s (%s) with the second actor's key, naming the first key's resource: status %d, want 403 or 404", resp, op, resp.Status)
}

// sameAsMissing judges B's answers for A's resource and for an id that
// does not exist: the same status, error code and type.
func sameAsMissing(real, fake *client.Response, op, what string) error {
	if real.Status != fake.Status {
		return fmt.Errorf("%s (%s) with the second actor's key: status %d for %s but %d for an id that does not exist (%s): the answer tells that the resource exists",
			real, op, real.Status, what, fake.Status, fake)
	}
	if real.Status/100 == 2 {
		return nil // served both ways: EXT-AUTHZ-002's failure, not a leak of existence
	}
	re, rerr := check.Envelope(real)
	fe, ferr := check.Envelope(fake)
	if rerr != nil || ferr != nil {
		if (rerr == nil) != (ferr == nil) {
			return fmt.Errorf("%s (%s): one of the answers for %s and for an id that does not exist is an error envelope and the other is not", real, op, what)
		}
		return nil
	}
	if re.Code != fe.Code || re.Type != fe.Type || re.HasParam != fe.HasParam {
		return fmt.Errorf("%s (%s) with the second actor's key: error %s/%s (param %q) for %s, but %s/%s (param %q) for an id that does not exist: the answer tells that the resource exists",
			real, op, re.Code, re.Type, re.Param, what, fe.Code, fe.Type, fe.Param)
	}
	return nil
}

// noLeak checks that B's refusal names nothing of A's but the id B sent:
// no other resource of A's, not A's actor.
func noLeak(resp *client.Response, fx actorFx, what string, sent []string) error {
	if resp.Status/100 == 2 {
		return nil // EXT-AUTHZ-002's failure
	}
	body := string(resp.Body)
	var found []string
	for param, id := range fx.ids {
		if id != "" && strings.Contains(body, id) && !slices.Contains(sent, id) {
			found = append(found, fmt.Sprintf("%s %s", param, id))
		}
	}
	if fx.taskBy != "" && strings.Contains(body, fx.taskBy) {
		found = append(found, "the first key's actor "+fx.taskBy)
	}
	sort.Strings(found)
	if len(found) > 0 {
		return fmt.Errorf("%s, refusing %s to the second actor, names %s: a refusal may not tell what the actor is not allowed to know", resp, what, strings.Join(found, ", "))
	}
	return nil
}

// attribution checks that the key's actor is what a write records: B's task
// names a creator, not A's, and the task.submitted event names the same
// actor when it names one.
func attribution(fx actorFx, bt map[string]any, ctx context.Context, bAuth, bTask string) error {
	GinkgoHelper()
	by, _ := bt["created_by"].(string)
	switch {
	case by == "" || fx.taskBy == "":
		return fmt.Errorf("tasks created_by %q (first key) and %q (second key): want the actor of each key", fx.taskBy, by)
	case by == fx.taskBy:
		return fmt.Errorf("a task the second key submitted has created_by %q, the same actor as the first key's task: the API keys are not bound to their own actors", by)
	}
	resp := asActor(ctx, bAuth, client.Request{Path: "/v1/tasks/" + client.Seg(bTask) + "/events", Query: url.Values{"limit": {"200"}}})
	p, err := check.ListPage(resp)
	if err != nil {
		return nil // the event list is the Core level's to judge
	}
	for _, e := range p.Items {
		if e["event"] != "task.submitted" {
			continue
		}
		if a, ok := e["actor"].(string); ok && a != "" && a != by {
			return fmt.Errorf("task %s: created_by %q but its task.submitted event names actor %q: the write is attributed to another actor", bTask, by, a)
		}
	}
	return nil
}

// listsHide reads B's lists, and its lists filtered by A's workspace and
// session, and looks for A's ids.
func listsHide(ctx context.Context, bAuth string, fx actorFx) error {
	GinkgoHelper()
	type list struct {
		path string
		q    url.Values
	}
	ws, sess := url.Values{"workspace_id": {fx.workspace}}, url.Values{"session_id": {fx.ids["session_id"]}}
	lists := []list{{"/v1/workspaces", nil}, {"/v1/sessions", nil}, {"/v1/sessions", ws}, {"/v1/tasks", nil}, {"/v1/tasks", ws}, {"/v1/tasks", sess},
		{"/v1/artifacts", nil}, {"/v1/artifacts", sess}, {"/v1/outcomes", nil}, {"/v1/personas", nil}, {"/v1/memories", nil}, {"/v1/vaults", nil},
		{"/v1/quotas", nil}, {"/v1/connectors", nil}, {"/v1/events", nil}, {"/v1/events", sess}}
	mine := map[string]string{}
	for param, id := range fx.ids {
		mine[id] = param
	}
	var errs []string
	for _, l := range lists {
		q := url.Values{"limit": {"200"}}
		for k, v := range l.q {
			q[k] = v
		}
		for range 20 {
			resp := asActor(ctx, bAuth, client.Request{Path: l.path, Query: q})
			p, err := check.ListPage(resp)
			if resp.Status != http.StatusOK || err != nil {
				break // not offered, or the list's own requirement's to judge
			}
			for _, id := range p.IDs {
				if param, ok := mine[id]; ok {
					errs = append(errs, fmt.Sprintf("%s lists the first key's %s %s", resp, param, id))
				}
			}
			if !p.HasMore {
				break
			}
			q.Set(cursorParam(l.path), p.NextCursor)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("the second actor's lists show another tenant's resources: %s", strings.Join(errs, "; "))
	}
	return nil
}

// cursorParam is the query parameter a list pages by: event lists page by
// after_event_id, the others by cursor.
func cursorParam(path string) string {
	if strings.HasSuffix(path, "/events") {
		return "after_event_id"
	}
	return "cursor"
}

// streamHides opens the global event stream as B, has A's task run before
// B's, and reads until B's task ends: no event of A's may come by.
func streamHides(ctx context.Context, bAuth string, fx actorFx, bSess string) error {
	GinkgoHelper()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := suite.Client().Stream(sctx, client.Request{Path: "/v1/events/stream", Authorization: bAuth})
	suite.Transport(err, suite.SpecReqs()...)
	defer st.Close()
	if st.Response.Status != http.StatusOK {
		return nil // the stream is the Core level's to judge
	}
	a := submitText(ctx, fx.ids["session_id"], "first actor, streamed", suite.SpecReqs()...)
	am, _ := a.Object()
	aTask, _ := am["id"].(string)
	if aTask == "" || waitTerminal(ctx, aTask, suite.SpecReqs()...) == nil {
		return nil
	}
	b := asActor(ctx, bAuth, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(bSess) + "/tasks", Body: echoTask("second actor, streamed"), IdempotencyKey: suite.Key("authz-b")})
	bm, _ := b.Object()
	bTask, _ := bm["id"].(string)
	if bTask == "" {
		return nil
	}
	wctx, done := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Task)
	defer done()
	for {
		f, err := st.NextEvent(wctx)
		if err != nil {
			return nil // B's task never showed: nothing more to see (its events are Core's to judge)
		}
		var e map[string]any
		if json.Unmarshal([]byte(f.Data), &e) != nil {
			continue
		}
		ws, _ := e["workspace_id"].(string)
		task, _ := e["task_id"].(string)
		sess, _ := e["session_id"].(string)
		if ws == fx.workspace || task == aTask || sess == fx.ids["session_id"] {
			return fmt.Errorf("the second actor's GET /v1/events/stream delivered event %v (%v) of the first key's workspace %s", e["id"], e["event"], fx.workspace)
		}
		if k, _ := e["event"].(string); task == bTask && (k == "task.completed" || k == "task.failed" || k == "task.canceled") {
			return nil
		}
	}
}

// refusalsClean checks every refusal (401, 403, 404, 422) for a credential
// or secret in its body or headers: the run's keys, a bogus key it sent,
// and the canary secret of the first key's vault.
func refusalsClean(resps []*client.Response, canary, bogus string) error {
	cfg := suite.Env().Config
	secrets := map[string]string{"the API key": cfg.APIKey, "the second actor's API key": cfg.SecondAPIKey, "the read-only actor's API key": cfg.ReadOnlyAPIKey,
		"the vault's canary secret": canary, "the invalid key the suite sent": bogus}
	names := make([]string, 0, len(secrets))
	for n, v := range secrets {
		if len(v) >= 4 {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	var errs []string
	for _, r := range resps {
		switch r.Status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity:
		default:
			continue
		}
		var head strings.Builder
		for k, vs := range r.Header {
			head.WriteString(k + ": " + strings.Join(vs, ", ") + "\n")
		}
		for _, n := range names {
			v := secrets[n]
			for where, text := range map[string]string{"body": string(r.Body), "headers": head.String()} {
				if sp := check.SecretSpelled(text, v); sp != "" {
					errs = append(errs, fmt.Sprintf("%s carries %s in its %s (%s)", r, n, where, sp))
				}
			}
		}
	}
	sort.Strings(errs)
	if len(errs) > 0 {
		return fmt.Errorf("refusals must not leak secret values: %s", strings.Join(slices.Compact(errs), "; "))
	}
	return nil
}
