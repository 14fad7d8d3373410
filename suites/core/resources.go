package core

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

// Requirement ids the REST helpers record under, whichever spec calls them.
const (
	reqEnvelope  = "CORE-READ-001"
	reqTimes     = "CORE-READ-002"
	reqObject    = "CORE-READ-003"
	reqEnums     = "CORE-READ-009"
	reqErrShape  = "CORE-ERR-002"
	reqErrTable  = "CORE-ERR-003"
	reqNoKeyEcho = "CORE-AUTH-004"
	reqListShape = "CORE-PAGE-001"
	// The requirements that own the set-up steps of other specs: a spec
	// that cannot create its session or submit its task records the
	// failure under these, and its own requirements are blocked by it.
	reqSessionCreate = "CORE-READ-010"
	reqSubmit        = "CORE-TASK-001"
	reqAppend        = "CORE-READ-011"
)

// resourceReqs are the requirements observeResource checks on a resource
// of kind: what a read that fails keeps from being checked.
func resourceReqs(kind string) []string {
	reqs := []string{reqEnvelope, reqTimes, reqObject, reqEnums}
	if id, ok := fieldsReq[kind]; ok {
		reqs = append(reqs, id)
	}
	return reqs
}

// fieldsReq is the requirement that lists a kind's required fields.
var fieldsReq = map[string]string{
	"task": "CORE-READ-004", "session": "CORE-READ-005", "message": "CORE-READ-006",
	"artifact": "CORE-READ-007", "outcome": "CORE-READ-008",
}

// observeResource records the shape checks of one resource read: envelope,
// timestamps, discriminator, the kind's required fields, and its enums.
// They are soft: each names its own requirement and the spec goes on.
func observeResource(resp *client.Response, kind string, m map[string]any) {
	suite.Check(reqEnvelope, check.ResourceEnvelope(resp, m))
	suite.Check(reqTimes, check.Timestamps(resp, m))
	suite.Check(reqObject, check.Discriminator(resp, m, kind))
	if id, ok := fieldsReq[kind]; ok {
		suite.Check(id, check.Fields(resp, kind, m))
	}
	if kind == "task" {
		suite.Check(fieldsReq[kind], check.TaskStatusKnown(resp, m))
	}
	suite.Should(reqEnums, check.Enums(resp, kind, m))
}

// observeError records the checks every error answer gets: the envelope,
// the code↔status table and the type, and no API key in it. It returns the
// decoded error, and false when there is none to read a code from.
func observeError(resp *client.Response) (check.APIError, bool) {
	suite.Check(reqNoKeyEcho, check.NoSecret(resp, suite.Env().Redactor.Contains))
	e, err := check.Envelope(resp)
	if err != nil {
		// No envelope, no code to hold to the table.
		suite.CheckBlocks(reqErrShape, err, reqErrTable)
		return e, false
	}
	suite.Check(reqErrTable, check.Consistent(resp, e))
	suite.Check(reqErrTable, check.TypeFits(resp, e))
	return e, true
}

// expectError records an expected error answer: the status and the code
// under req, everything observeError checks under its own ids. A missing
// envelope is the envelope requirement's failure only, so req is judged on
// the status alone then. It reports whether status and code were right.
func expectError(resp *client.Response, req string, status int, codes ...string) (check.APIError, bool) {
	if err := check.Status(resp, status); err != nil {
		suite.Check(req, err)
		if resp.Status >= 400 {
			observeError(resp)
		}
		return check.APIError{}, false
	}
	e, ok := observeError(resp)
	if !ok {
		return e, false
	}
	if len(codes) > 0 && !slices.Contains(codes, e.Code) {
		suite.Check(req, fmt.Errorf("%s: error.code = %q, want %s", resp, e.Code, orQuoted(codes)))
		return e, false
	}
	return e, true
}

func orQuoted(xs []string) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += " or "
		}
		s += fmt.Sprintf("%q", x)
	}
	return s
}

// readObject GETs path and decodes a JSON object; anything else ends the
// spec as req's failure (use it when the rest of the spec needs the object).
func readObject(ctx context.Context, req, path string, query url.Values) (*client.Response, map[string]any) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: path, Query: query}, req)
	observe(resp)
	suite.Must(req, check.Status(resp, http.StatusOK))
	m, err := resp.Object()
	suite.Must(req, err)
	return resp, m
}

// tryObject GETs path and decodes a JSON object; anything else is req's
// failure, and blocks (the requirements the caller would check on the
// object) are recorded as blocked by it. The spec goes on; ok says whether
// there is an object to check.
func tryObject(ctx context.Context, req, path string, query url.Values, blocks ...string) (*client.Response, map[string]any, bool) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Path: path, Query: query}, req)
	observe(resp)
	if !suite.CheckBlocks(req, check.Status(resp, http.StatusOK), blocks...) {
		return resp, nil, false
	}
	m, err := resp.Object()
	if !suite.CheckBlocks(req, err, blocks...) {
		return resp, nil, false
	}
	return resp, m, true
}

// observe records what every answer is checked for, whatever the spec
// wants of it: no API key anywhere in it, and a well-formed error if it is one.
func observe(resp *client.Response) {
	if resp.Status >= 400 {
		observeError(resp)
		return
	}
	suite.Check(reqNoKeyEcho, check.NoSecret(resp, suite.Env().Redactor.Contains))
}

// succeeded ends the spec as req's failure unless resp is a 2xx JSON object.
func succeeded(req string, resp *client.Response) map[string]any {
	GinkgoHelper()
	observe(resp)
	if resp.Status < 200 || resp.Status > 299 {
		suite.Must(req, check.Status(resp, http.StatusOK, http.StatusCreated, http.StatusAccepted))
	}
	m, err := resp.Object()
	suite.Must(req, err)
	if id, _ := m["id"].(string); id == "" {
		suite.Must(req, fmt.Errorf("%s: the created resource has no id", resp))
	}
	return m
}

// workspaceFor finds a workspace to own the spec's sessions: a new one when
// the target lets clients create workspaces (an Extended resource), else the
// first one it lists. Core targets must make one of the two possible, since
// a Session needs a workspace_id.
func workspaceFor(ctx context.Context, req string) string {
	GinkgoHelper()
	id, err := suite.Workspace(ctx, req)
	if err != nil {
		suite.Unverified(err.Error(), suite.RemedyWorkspace)
	}
	return id
}

// newSession creates a Session of its own for the spec and returns the
// create answer and the Session.
func newSession(ctx context.Context, req string) (*client.Response, map[string]any) {
	GinkgoHelper()
	ws := workspaceFor(ctx, req)
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions",
		Body: map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, req)
	// Creating the session is CORE-READ-010's: a spec that cannot is
	// blocked by that failure, not failed for it.
	return resp, succeeded(reqSessionCreate, resp)
}

// sessionID creates a Session and returns its id.
func sessionID(ctx context.Context, req string) string {
	GinkgoHelper()
	_, m := newSession(ctx, req)
	return m["id"].(string)
}

// echoTask is a submit body the default agent of any Harness can run: one
// user text message.
func echoTask(text string) map[string]any {
	return map[string]any{"input": textMessage("user", text)}
}

func textMessage(role, text string) map[string]any {
	return map[string]any{"role": role, "parts": []any{
		map[string]any{"type": "text", "text": text, "visibility": "public"}}}
}

func idOf(m map[string]any) string { id, _ := m["id"].(string); return id }

// awaitTerminal polls a Task until it is COMPLETED, FAILED or CANCELED;
// if the task timeout passes first, the spec is unverified (the target's
// agent did not finish: nothing to judge).
func awaitTerminal(ctx context.Context, req, taskID string) (*client.Response, map[string]any) {
	GinkgoHelper()
	resp, m, ended := awaitEnd(ctx, req, taskID)
	if !ended {
		suite.Unverified(fmt.Sprintf("%s: task %s is still %v after --task-timeout %s", resp, taskID, m["status"], suite.Env().Config.Timeouts.Task), suite.RemedyAgentEnds)
	}
	return resp, m
}

// awaitEnd polls a Task until it is COMPLETED, FAILED or CANCELED, or the
// task timeout passes (ended false, with the last read). A read that fails
// is req's failure.
func awaitEnd(ctx context.Context, req, taskID string) (resp *client.Response, task map[string]any, ended bool) {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		resp, m := readObject(ctx, req, "/v1/tasks/"+client.Seg(taskID), nil)
		st, _ := m["status"].(string)
		if check.Terminal(st) {
			return resp, m, true
		}
		if !check.KnownStatus(st) {
			// No wait can end on a value outside the closed enum.
			suite.Must("CORE-READ-004", fmt.Errorf("%s: task status is %s, want one of the seven upper-case lifecycle states", resp, quote(m["status"])))
		}
		if time.Now().After(deadline) {
			return resp, m, false
		}
		if !pace.Wait(ctx) {
			suite.Must(req, fmt.Errorf("waiting for task %s: %w", taskID, ctx.Err()))
		}
	}
}

// listAll follows next_cursor from the first page of path and returns every
// item. It stops after 50 pages so a target that never ends its list cannot
// hang the spec; complete says whether the list ended. A page that is not
// a 200 is req's failure, one that is no list envelope CORE-PAGE-001's;
// either way the spec goes on with readable false (and complete false),
// and the caller says what the list's failure blocked (suite.Blocked).
func listAll(ctx context.Context, req, path string, query url.Values) (items []map[string]any, complete, readable bool) {
	GinkgoHelper()
	return listPages(ctx, req, path, query, 50)
}

// listPages is listAll reading at most maxPages pages.
func listPages(ctx context.Context, req, path string, query url.Values, maxPages int) (items []map[string]any, complete, readable bool) {
	GinkgoHelper()
	q := url.Values{}
	for k, v := range query {
		q[k] = v
	}
	for range maxPages {
		resp := suite.Do(ctx, client.Request{Path: path, Query: q}, req)
		observe(resp)
		if !suite.Check(req, check.Status(resp, http.StatusOK)) {
			return items, false, false
		}
		p, err := check.ListPage(resp)
		if !suite.Check(reqListShape, err) {
			return items, false, false
		}
		items = append(items, p.Items...)
		if !p.HasMore {
			return items, true, true
		}
		q.Set("cursor", p.NextCursor)
	}
	return items, false, true
}

// listFailed is the requirement a failed listAll of req recorded its
// failure under (the status under req, the envelope under CORE-PAGE-001),
// for suite.Blocked.
func listFailed(req string, blocks ...string) {
	suite.Blocked(req, blocks...)
	suite.Blocked(reqListShape, blocks...)
}

var _ = Describe("Resource reads", func() {
	It("creates a Session with 201 and reads it back", suite.Req("CORE-READ-010", "CORE-READ-005", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-READ-009", "CORE-ID-001"), func(ctx SpecContext) {
		created, s := newSession(ctx, "CORE-READ-010")
		suite.Check("CORE-READ-010", check.Status(created, http.StatusCreated))
		observeResource(created, "session", s)
		id := idOf(s)
		for range 2 {
			resp, got, ok := tryObject(ctx, "CORE-READ-010", "/v1/sessions/"+client.Seg(id), nil, append(resourceReqs("session"), "CORE-ID-001")...)
			if !ok {
				continue
			}
			suite.Check("CORE-ID-001", check.SameID(resp, got, id))
			observeResource(resp, "session", got)
		}
	})

	It("appends a Message with 201 and reads it by id and in the Session's list", suite.Req("CORE-READ-011", "CORE-READ-006", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-READ-009", "CORE-ID-001", "CORE-ID-002"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-READ-011")
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages",
			Body: map[string]any{"message": textMessage("user", "hello from conform")}}, "CORE-READ-011")
		msg := succeeded("CORE-READ-011", resp)
		suite.Check("CORE-READ-011", check.Status(resp, http.StatusCreated))
		observeResource(resp, "message", msg)
		id := idOf(msg)
		read, got, readOK := tryObject(ctx, "CORE-READ-011", "/v1/messages/"+client.Seg(id), nil, append(resourceReqs("message"), "CORE-ID-001", "CORE-ID-002")...)
		if readOK {
			suite.Check("CORE-ID-001", check.SameID(read, got, id))
			observeResource(read, "message", got)
		}
		items, complete, listed := listAll(ctx, "CORE-READ-011", "/v1/sessions/"+client.Seg(sess)+"/messages", nil)
		if !listed {
			listFailed("CORE-READ-011", "CORE-ID-002")
		}
		found := false
		for _, it := range items {
			if idOf(it) == id {
				found = true
				if readOK {
					suite.Check("CORE-ID-002", check.Agree(read, it, got, "role"))
				}
			}
		}
		if !found && complete {
			suite.Check("CORE-READ-011", fmt.Errorf("GET /v1/sessions/%s/messages: message %q is not listed (%d items)", sess, id, len(items)))
		}
	})

	It("keeps a Session's messages in the order they were appended", suite.Req("CORE-READ-012"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-READ-012")
		var want []string
		for i := range 3 {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages",
				Body: map[string]any{"message": textMessage("user", fmt.Sprintf("turn %d", i+1))}}, "CORE-READ-012")
			want = append(want, idOf(succeeded(reqAppend, resp)))
		}
		items, complete, readable := listAll(ctx, "CORE-READ-012", "/v1/sessions/"+client.Seg(sess)+"/messages", nil)
		if !readable {
			listFailed("CORE-READ-012", "CORE-READ-012")
			return
		}
		if !complete {
			suite.Must("CORE-READ-012", fmt.Errorf("GET /v1/sessions/%s/messages: a list of 3 messages did not end within the page bound", sess))
		}
		listed := make([]string, 0, len(items))
		for _, it := range items {
			listed = append(listed, idOf(it))
		}
		suite.Check("CORE-READ-012", check.InOrder("GET /v1/sessions/"+sess+"/messages", listed, want))
	})

	It("reads a Task, its Outcome and its Events with stable ids and valid shapes", suite.Req("CORE-READ-004", "CORE-READ-008", "CORE-READ-014", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-ID-001", "CORE-ID-002"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-READ-004")
		sub := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask("read me")}, "CORE-READ-004")
		task := succeeded(reqSubmit, sub)
		observeResource(sub, "task", task)
		id := idOf(task)
		_, final := awaitTerminal(ctx, "CORE-READ-004", id)
		var read *client.Response
		var got map[string]any
		readOK := false
		for range 2 {
			r, m, ok := tryObject(ctx, "CORE-READ-004", "/v1/tasks/"+client.Seg(id), nil, append(resourceReqs("task"), "CORE-ID-001", "CORE-ID-002")...)
			if !ok {
				continue
			}
			read, got, readOK = r, m, true
			suite.Check("CORE-ID-001", check.SameID(read, got, id))
			observeResource(read, "task", got)
		}
		tasks, _, listed := listAll(ctx, "CORE-READ-004", "/v1/sessions/"+client.Seg(sess)+"/tasks", nil)
		if !listed {
			listFailed("CORE-READ-004", "CORE-ID-002")
		}
		for _, it := range tasks {
			if idOf(it) == id && readOK {
				suite.Check("CORE-ID-002", check.Agree(read, it, got, "session_id", "workspace_id"))
			}
		}

		// The Outcome: by the Task's outcome_id when it names one, else by
		// the outcome list (a completed Task SHOULD have one; the spec only
		// reads what exists).
		outcomes, complete, _ := listAll(ctx, "CORE-READ-008", "/v1/outcomes", url.Values{"task_id": {id}})
		oid, _ := final["outcome_id"].(string)
		if oid == "" {
			for _, o := range outcomes {
				if o["task_id"] == id {
					oid = idOf(o)
				}
			}
		}
		if oid != "" {
			if resp, o, ok := tryObject(ctx, "CORE-READ-008", "/v1/outcomes/"+client.Seg(oid), nil, append(resourceReqs("outcome"), "CORE-ID-001")...); ok {
				suite.Check("CORE-ID-001", check.SameID(resp, o, oid))
				observeResource(resp, "outcome", o)
				if o["task_id"] != id {
					suite.Check("CORE-READ-008", fmt.Errorf("%s: task_id = %v, want %q (the task whose outcome_id names it)", resp, o["task_id"], id))
				}
			}
			if complete && !slices.ContainsFunc(outcomes, func(x map[string]any) bool { return idOf(x) == oid }) {
				suite.Check("CORE-READ-008", fmt.Errorf("GET /v1/outcomes?task_id=%s: outcome %q is not listed (%d items)", id, oid, len(outcomes)))
			}
		}

		// One Event, by id, as the Event resource. Event lists page with
		// after_event_id, so only the first page is read here.
		evResp := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/events"}, "CORE-READ-001")
		if !suite.CheckBlocks("CORE-READ-001", check.Status(evResp, http.StatusOK), "CORE-READ-014") {
			return
		}
		evs, err := check.ListPage(evResp)
		if !suite.CheckBlocks(reqListShape, err, "CORE-READ-014") {
			return
		}
		for _, listed := range evs.Items {
			eid := idOf(listed)
			resp, e, ok := tryObject(ctx, "CORE-READ-014", "/v1/events/"+client.Seg(eid), nil, append(resourceReqs("event"), "CORE-ID-001")...)
			if !ok {
				continue
			}
			suite.Check("CORE-ID-001", check.SameID(resp, e, eid))
			observeResource(resp, "event", e)
			suite.Check("CORE-READ-014", check.SameEvent(resp, listed, e))
		}
	})

	It("reads an Artifact by id, in the artifact list and its bytes", suite.Req("CORE-READ-007", "CORE-READ-013", "CORE-READ-001", "CORE-READ-002", "CORE-READ-003", "CORE-READ-009", "CORE-ID-001", "CORE-ID-002"), func(ctx SpecContext) {
		id, filter := artifactFor(ctx, "CORE-READ-007")
		resp, a := readObject(ctx, "CORE-READ-007", "/v1/artifacts/"+client.Seg(id), nil)
		suite.Check("CORE-ID-001", check.SameID(resp, a, id))
		observeResource(resp, "artifact", a)
		found := false
		items, complete, listed := listAll(ctx, "CORE-READ-007", "/v1/artifacts", filter)
		if !listed {
			listFailed("CORE-READ-007", "CORE-ID-002")
		}
		for _, it := range items {
			if idOf(it) == id {
				found = true
				suite.Check("CORE-ID-002", check.Agree(resp, a, it, "kind", "sha256"))
			}
		}
		if !found && complete {
			suite.Check("CORE-READ-007", fmt.Errorf("GET /v1/artifacts?%s: artifact %q is not listed", filter.Encode(), id))
		}
		// The bytes, where the server offers them (404 or 501 when it
		// does not), must hash to the advertised sha256.
		sha, ok := a["sha256"].(string)
		if !ok {
			suite.NothingToCheck("CORE-READ-013", fmt.Sprintf("artifact %s has no sha256 to check its bytes against", id),
				"give Artifacts whose bytes are stable their sha256")
		} else {
			content := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(id) + "/content"}, "CORE-READ-013")
			switch content.Status {
			case http.StatusOK:
				suite.Check("CORE-READ-013", check.ContentHash(content, sha))
			case http.StatusNotFound, http.StatusNotImplemented:
				observe(content)
				suite.NotApplicableTo("CORE-READ-013", fmt.Sprintf("%s: the target does not serve artifact bytes (Core does not require it)", content))
			default:
				observe(content)
				suite.Check("CORE-READ-013", check.Status(content, http.StatusOK, http.StatusNotFound, http.StatusNotImplemented))
			}
		}
	})
})
