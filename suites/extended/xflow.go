package extended

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Helpers of the resource areas' specs (personas.go, workspaces.go,
// sessions.go, branches.go, artifacts.go, skills.go, idempotency.go). A
// step that sets up what a spec checks, and belongs to another
// requirement (a session to hold messages, a persona for a task), ends
// the spec unverified when it fails, with the failed step and the
// requirement to fix as the remedy: a prerequisite's failure is never
// blamed on the requirement that needed it, and never passes it.

// Requirement ids of these areas.
const (
	reqPersona        = "EXT-PERSONA-001" // persona resource: list, create 201, get, patch 200
	reqPersonaGrant   = "EXT-PERSONA-002" // tools and capabilities the persona does not grant are denied
	reqPersonaTier    = "EXT-PERSONA-003" // autonomy tier: approval before acting, no side effect under shadow/suggest
	reqPersonaReceipt = "EXT-PERSONA-004" // receipt_policy required: the task ends with a receipt
	reqWorkspace      = "EXT-WORKSPACE-001"
	reqWorkspaceIDs   = "EXT-WORKSPACE-002" // stateful resources name their workspace
	reqMsgOrder       = "EXT-SESSION-001"
	reqTruncate       = "EXT-SESSION-003"
	reqForkKeeps      = "EXT-SESSION-006" // a fork keeps every turn when its parent is truncated
	reqSurface        = "EXT-SESSION-005" // the REST surface covers close, fork and truncate
	reqBranch         = "EXT-BRANCH-001"
	reqLineage        = "EXT-BRANCH-002"
	reqArtifact       = "EXT-ARTIFACT-001"
	reqArtifactIdem   = "EXT-IDEM-001"
	reqApprovalIdem   = "EXT-IDEM-002"
	reqExtIdem        = "EXT-IDEM-003"
	reqSkill          = "EXT-SKILL-001"
)

// xPrereq ends the spec unverified: what, a step another requirement
// owns, failed (resp is its answer), so nothing here can be checked.
func xPrereq(what string, resp *client.Response, owner string) {
	GinkgoHelper()
	suite.Unverified(fmt.Sprintf("%s: %s%s, so this spec has nothing to check", what, resp, xHint(resp)),
		fmt.Sprintf("make %s work (%s); this spec checks its own requirements after that", what, owner))
}

func xHint(resp *client.Response) string {
	if e, err := check.Envelope(resp); err == nil && resp.Status >= 400 {
		return fmt.Sprintf(" (error %s: %s)", e.Code, e.Message)
	}
	return ""
}

// xSetup sends a set-up write owned by another requirement and returns
// the object it made; anything but a 2xx JSON object with an id ends the
// spec unverified (xPrereq).
func xSetup(ctx context.Context, what, owner string, req client.Request) map[string]any {
	GinkgoHelper()
	resp := suite.Do(ctx, req, suite.SpecReqs()...)
	m, err := resp.Object()
	if resp.Status/100 != 2 || err != nil || xID(m) == "" {
		xPrereq(what, resp, owner)
	}
	return m
}

// xRead GETs a set-up read owned by another requirement (xPrereq on failure).
func xRead(ctx context.Context, what, owner, path string, q url.Values) map[string]any {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: path, Query: q}, suite.SpecReqs()...)
	m, err := resp.Object()
	if resp.Status != http.StatusOK || err != nil {
		xPrereq(what, resp, owner)
	}
	return m
}

func xID(m map[string]any) string { id, _ := m["id"].(string); return id }

func xStr(m map[string]any, f string) string { s, _ := m[f].(string); return s }

// xWorkspace finds a workspace for the spec's sessions (suite.Workspace).
func xWorkspace(ctx context.Context) string {
	GinkgoHelper()
	id, err := suite.Workspace(ctx, suite.SpecReqs()...)
	if err != nil {
		suite.Unverified(err.Error(), suite.RemedyWorkspace)
	}
	return id
}

// xSession creates a session of the spec's own (in workspace ws, with
// persona when not "") and returns it.
func xSession(ctx context.Context, ws, persona string) map[string]any {
	GinkgoHelper()
	body := map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": suite.Env().RunID}}
	if persona != "" {
		body["persona_id"] = persona
	}
	return xSetup(ctx, "creating a Session (POST /v1/sessions)", "CORE-READ-010", client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: body})
}

// xText is a user message with one text part.
func xText(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}
}

// xAppend appends n user messages to session sess and returns their ids.
func xAppend(ctx context.Context, sess string, n int, label string) []string {
	GinkgoHelper()
	var ids []string
	for i := range n {
		m := xSetup(ctx, "appending a Message (POST /v1/sessions/{id}/messages)", "CORE-READ-011", client.Request{Method: http.MethodPost,
			Path: "/v1/sessions/" + client.Seg(sess) + "/messages", Body: map[string]any{"message": xText(fmt.Sprintf("%s %d", label, i+1))}})
		ids = append(ids, xID(m))
	}
	return ids
}

// xList reads every page of a list (at most 50) under req: a page that is
// not a 200 list is req's failure, and ok is false.
func xList(ctx context.Context, req, path string, q url.Values) (items []map[string]any, ok bool) {
	GinkgoHelper()
	query := url.Values{}
	for k, v := range q {
		query[k] = v
	}
	var prev []string
	for range 50 {
		resp := suite.Do(ctx, client.Request{Path: path, Query: query}, req)
		if !suite.Check(req, check.Status(resp, http.StatusOK)) {
			return items, false
		}
		p, err := check.ListPage(resp)
		if !suite.Check(req, err) {
			return items, false
		}
		if len(p.IDs) > 0 && slices.Equal(p.IDs, prev) {
			suite.Check(req, fmt.Errorf("%s: the page at next_cursor %q repeats the page before it (%v): the cursor was not followed", resp, query.Get("cursor"), p.IDs))
			return items, false
		}
		prev = p.IDs
		items = append(items, p.Items...)
		if !p.HasMore {
			return items, true
		}
		query.Set("cursor", p.NextCursor)
	}
	return items, true
}

// xPaged reads a list one item a page, following next_cursor, and judges
// it under req (suite.Paginate): want are at least two ids the spec made
// that the list holds, so the cursor is followed in every run, whatever
// earlier specs left behind (docs/interpretations.md#order-independent-lists).
// A list the spec does not own (every persona of the tenant) is read
// maxPages deep; one it owns, to its end.
func xPaged(ctx context.Context, req, path string, q url.Values, want []string, maxPages int) {
	GinkgoHelper()
	p := suite.Paginate(ctx, path, q, "cursor", 1, maxPages, want, req)
	if suite.Check(req, p.Read) {
		suite.Check(req, p.Limit)
		suite.Check(req, p.Walk)
	}
}

// xPrereqList reads every page of a list that a step owned by another
// requirement needs (xPrereq on failure).
func xPrereqList(ctx context.Context, what, owner, path string, q url.Values) []map[string]any {
	GinkgoHelper()
	query := url.Values{}
	for k, v := range q {
		query[k] = v
	}
	var items []map[string]any
	for range 50 {
		resp := suite.Do(ctx, client.Request{Path: path, Query: query}, suite.SpecReqs()...)
		p, err := check.ListPage(resp)
		if resp.Status != http.StatusOK || err != nil {
			xPrereq(what, resp, owner)
		}
		items = append(items, p.Items...)
		if !p.HasMore {
			break
		}
		query.Set("cursor", p.NextCursor)
	}
	return items
}

// xIDs are the ids of items.
func xIDs(items []map[string]any) []string {
	var ids []string
	for _, it := range items {
		ids = append(ids, xID(it))
	}
	return ids
}

// xHook ends the spec unverified unless the target implements the
// scenario contract (docs/scenarios.md).
func xHook(why string) {
	GinkgoHelper()
	if suite.Env().Discovery.Scenarios() == "" {
		suite.Unverified(`the target does not advertise the conform.scenarios contract (GET /v1 capabilities["conform.scenarios"]), so `+why,
			suite.RemedyScenarios)
	}
}

// xSubmit submits a task to sess (with steps: a scenario) and returns its id.
func xSubmit(ctx context.Context, sess string, extra map[string]any, steps ...map[string]any) string {
	GinkgoHelper()
	body := map[string]any{"input": xText("conform extended probe")}
	for k, v := range extra {
		body[k] = v
	}
	if len(steps) > 0 {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	return xID(xSetup(ctx, "submitting a Task (POST /v1/sessions/{id}/tasks)", "CORE-TASK-001",
		client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: body}))
}

// xStep is one scenario step.
func xStep(op string, kv ...any) map[string]any {
	m := map[string]any{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return m
}

// xAwait polls task id until its status satisfies want or --task-timeout
// passes; it returns the last read and whether want was met.
func xAwait(ctx context.Context, id string, want func(string) bool) (map[string]any, bool) {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		m := xRead(ctx, "reading the Task (GET /v1/tasks/{id})", "CORE-READ-004", "/v1/tasks/"+client.Seg(id), nil)
		st := xStr(m, "status")
		if want(st) {
			return m, true
		}
		if !check.KnownStatus(st) || time.Now().After(deadline) {
			// A status outside the closed enum never becomes another one
			// worth waiting for (Core judges the value itself).
			return m, false
		}
		if !pace.Wait(ctx) {
			return m, false
		}
	}
}

// xTerminal waits for task id to end; a task still running at the
// deadline leaves the spec unverified (the target's agent did not finish).
func xTerminal(ctx context.Context, id string) map[string]any {
	GinkgoHelper()
	m, ok := xAwait(ctx, id, check.Terminal)
	if !ok {
		suite.Unverified(fmt.Sprintf("task %s is still %v after --task-timeout %s", id, m["status"], suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
	}
	return m
}

// xEvents reads every event of task id (CORE's event reads; xPrereq on
// failure).
func xEvents(ctx context.Context, id string) []check.Event {
	GinkgoHelper()
	var all []check.Event
	q := url.Values{}
	seen := map[string]bool{}
	for range 100 {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/events", Query: q}, suite.SpecReqs()...)
		p, err := check.Events(resp)
		if err != nil {
			xPrereq("reading the task's events (GET /v1/tasks/{id}/events)", resp, "CORE-EVT-001")
		}
		all = append(all, p.Events...)
		if !p.HasMore || p.NextCursor == "" || seen[p.NextCursor] {
			break
		}
		seen[p.NextCursor] = true
		q = url.Values{"after_event_id": {p.NextCursor}}
	}
	return all
}

// xKinds counts the events of each kind.
func xKinds(evs []check.Event) map[string]int {
	n := map[string]int{}
	for _, e := range evs {
		n[e.Kind]++
	}
	return n
}

// xArtifactsOf lists the artifacts task id owns (GET /v1/artifacts?task_id=,
// keeping only those that name the task: a target that ignores the filter
// is not taken to have made the others).
func xArtifactsOf(ctx context.Context, id string) []map[string]any {
	GinkgoHelper()
	items := xPrereqList(ctx, "listing the task's artifacts (GET /v1/artifacts?task_id=)", "CORE-READ-007", "/v1/artifacts", url.Values{"task_id": {id}})
	return slices.DeleteFunc(items, func(a map[string]any) bool { return xStr(a, "task_id") != id })
}

// xOffered decides by evidence whether the target offers the operation o
// sent (suite.Unoffered, docs/interpretations.md#offered-by-evidence):
// false, with why, when it does not. A refusal as if not offered that the
// evidence contradicts (a 404 about what the spec has just made, a route
// that exists, an operation shown elsewhere) is req's failure, recorded
// here, and the operation is offered: its answer is then the caller's to
// judge or to stop at.
func xOffered(ctx context.Context, req string, o suite.Offering) (offered bool, why string) {
	GinkgoHelper()
	why, err := suite.Unoffered(ctx, o, req)
	suite.Check(req, err)
	return why == "", why
}
