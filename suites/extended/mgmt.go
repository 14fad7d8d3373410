package extended

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// Shared by the specs of memories.go, vaults.go, quotas.go and
// connectors.go: the test hooks of docs/scenarios.md they use, the
// resources they set up, and their waits (each a condition polled until a
// deadline, never a sleep).

// The hooks' discovery capabilities (docs/scenarios.md#resource-hooks).
const (
	capScenarios    = "conform.scenarios"
	capVaultSecrets = "conform.vault_secrets"
	capQuotas       = "conform.quotas"
	capConnectors   = "conform.connectors"
)

// hookRemedy is what to do when the run lacks hook cap.
func hookRemedy(cap string) string {
	return fmt.Sprintf("implement the %s test hook (docs/scenarios.md#resource-hooks) and advertise it in discovery, so the suite can set this up", cap)
}

// hooked reports whether the target advertises every hook of caps.
func hooked(caps ...string) (missing string, ok bool) {
	for _, c := range caps {
		if v, _ := suite.Env().Discovery.Capabilities[c].(string); v == "" {
			return c, false
		}
	}
	return "", true
}

// needHooks ends the spec unverified unless the target advertises caps.
func needHooks(caps ...string) {
	GinkgoHelper()
	if c, ok := hooked(caps...); !ok {
		suite.Unverified(fmt.Sprintf("discovery does not advertise capabilities[%q]: the suite cannot set up what this check needs through the protocol alone", c), hookRemedy(c))
	}
}

// hookProbe marks a request of a test hook: it is no OpenAPI operation.
func hookProbe(cap string) string {
	return "the " + cap + " test hook (docs/scenarios.md#resource-hooks), outside the OpenAPI document"
}

// offered checks the answer to a resource's collection or create: a route
// the target does not serve (404, 405, 501) says the resource is not
// offered, which an Extended server must (Conformance levels / Extended).
func offered(resp *client.Response, what string, want int) error {
	switch {
	case resp.Status == want:
		return nil
	case resp.Status == http.StatusNotFound || resp.Status == http.StatusMethodNotAllowed || resp.Status == http.StatusNotImplemented:
		return fmt.Errorf("%s: status %d: the target does not offer %s, which the Extended level requires", resp, resp.Status, what)
	}
	return fmt.Errorf("%s: status %d, want %d", resp, resp.Status, want)
}

// object decodes a resource answer, or says why it cannot.
func object(resp *client.Response) (map[string]any, error) {
	m, err := resp.Object()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", resp, err)
	}
	return m, nil
}

// listAll reads every page of a list (at most maxPages), returning its
// items; a page that is not a list is an error.
func listAll(ctx context.Context, path string, q url.Values, reqs ...string) ([]map[string]any, *client.Response, error) {
	GinkgoHelper()
	const maxPages = 20
	var items []map[string]any
	var first *client.Response
	query := url.Values{"limit": {"200"}}
	for k, v := range q {
		query[k] = v
	}
	for range maxPages {
		resp := suite.Do(ctx, client.Request{Path: path, Query: query}, reqs...)
		if first == nil {
			first = resp
		}
		if resp.Status != http.StatusOK {
			return items, first, fmt.Errorf("%s: status %d, want 200", resp, resp.Status)
		}
		p, err := check.ListPage(resp)
		if err != nil {
			return items, first, err
		}
		items = append(items, p.Items...)
		if !p.HasMore {
			return items, first, nil
		}
		query.Set(cursorParam(path), p.NextCursor)
	}
	return items, first, nil
}

// ids lists the items' ids.
func ids(items []map[string]any) []string {
	out := make([]string, 0, len(items))
	for _, it := range items {
		id, _ := it["id"].(string)
		out = append(out, id)
	}
	return out
}

// poll calls cond until it reports done, an error, or the deadline of d
// passes (then it returns errTimeout). Each round trip of cond is a
// request to the target, paced by suite.Pace.
func poll(ctx context.Context, d time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(d)
	var pace suite.Pace
	for {
		done, err := cond()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return errTimeout
		}
		if !pace.Wait(ctx) {
			return ctx.Err()
		}
	}
}

var errTimeout = errors.New("deadline passed")

// pollErr turns poll's error into the spec's: a canceled context is the
// run's (a transport error), a timeout is what the target did not do.
func pollErr(ctx context.Context, err error, what string, reqs ...string) error {
	GinkgoHelper()
	if err != nil && ctx.Err() != nil {
		suite.Transport(&client.TransportError{Method: "GET", URL: what, Err: ctx.Err()}, reqs...)
	}
	return err
}

// newSession makes a session in workspace ws, or ends the spec unverified.
func newSession(ctx context.Context, ws string, reqs ...string) string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions",
		Body: map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": suite.Env().RunID}}}, reqs...)
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		suite.Unverified(fmt.Sprintf("setting up a session: %s, want 201 with an id", resp), "make session create work (Core)")
	}
	return id
}

// ownWorkspace creates a workspace for this spec alone (a quota bound to it
// must not touch other specs' sessions), or ends the spec unverified.
func ownWorkspace(ctx context.Context, reqs ...string) string {
	GinkgoHelper()
	key := suite.Key("conform-ws")
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/workspaces", IdempotencyKey: key,
		Body: map[string]any{"name": key, "root": "conform://" + key}}, reqs...)
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		suite.Unverified(fmt.Sprintf("the check needs a workspace of its own and POST /v1/workspaces answers %s", resp),
			"offer POST /v1/workspaces (EXT-WORKSPACE-001) so the suite can make a workspace whose quota touches nothing else")
	}
	return id
}

// submitText submits a plain text task (the target's own agent) to sess.
func submitText(ctx context.Context, sess, text string, reqs ...string) *client.Response {
	GinkgoHelper()
	return suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks",
		Body: echoTask(text), IdempotencyKey: suite.Key("mgmt")}, reqs...)
}

// submitSteps submits a task driven by the scenario hook.
func submitSteps(ctx context.Context, sess string, steps []map[string]any, reqs ...string) *client.Response {
	GinkgoHelper()
	body := echoTask("conform scenario")
	body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	return suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks",
		Body: body, IdempotencyKey: suite.Key("mgmt")}, reqs...)
}

// waitTerminal reads task id until it is terminal and returns it; nil when
// it is not within --task-timeout.
func waitTerminal(ctx context.Context, id string, reqs ...string) map[string]any {
	GinkgoHelper()
	var last map[string]any
	err := poll(ctx, suite.Env().Config.Timeouts.Task, func() (bool, error) {
		m, _ := suite.Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)}, reqs...).Object()
		st, _ := m["status"].(string)
		last = m
		return check.Terminal(st), nil
	})
	if pollErr(ctx, err, "/v1/tasks/"+id, reqs...) != nil {
		return nil
	}
	return last
}

// eventKinds lists the "event" members of events.
func eventKinds(evs []map[string]any) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		k, _ := e["event"].(string)
		out = append(out, k)
	}
	return out
}

// payload is an event's payload object.
func payload(e map[string]any) map[string]any {
	p, _ := e["payload"].(map[string]any)
	return p
}

// secretIn says where in raw JSON text (a body, an SSE data line) secret
// material shows: canary verbatim, or a credential-named member or a
// credential-shaped string (receipt.FindSecrets).
func secretIn(raw []byte, canary string) []string {
	var found []string
	if sp := check.SecretSpelled(string(raw), canary); canary != "" && sp != "" {
		found = append(found, "the canary secret the suite stored ("+sp+")")
	}
	var doc any
	if json.Unmarshal(raw, &doc) == nil {
		found = append(found, findSecrets(doc)...)
	}
	return found
}

// noneOf reports the first of bad that occurs in kinds.
func noneOf(kinds []string, bad ...string) string {
	for _, k := range kinds {
		for _, b := range bad {
			if k == b || strings.HasSuffix(b, ".") && strings.HasPrefix(k, b) {
				return k
			}
		}
	}
	return ""
}

// jsonText renders v as compact JSON for a message.
func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// findSecrets is the receipt verifier's scan for credential material, on
// any decoded JSON.
var findSecrets = receipt.FindSecrets

// readCollection checks a collection a client can only read (GET path and
// GET path/{id}) for req: it is offered, lists the resource the test hook
// cap created (created, "" without the hook), every listed item has the
// fields fields wants, and one of them reads back by id. An empty list
// with nothing created is unverified: there is nothing to read.
func readCollection(ctx context.Context, req, kind, resource, path, cap, created string, fields func(map[string]any) error) {
	GinkgoHelper()
	items, list, err := listAll(ctx, path, nil, req)
	if list != nil {
		suite.Must(req, offered(list, fmt.Sprintf("the %s resource (GET %s)", resource, path), http.StatusOK))
	}
	suite.Must(req, err)
	if created != "" && !slices.Contains(ids(items), created) {
		suite.Check(req, fmt.Errorf("GET %s does not list %s %s, which the %s hook created (listed: %v)", path, kind, created, cap, ids(items)))
	}
	if len(items) == 0 && created == "" {
		suite.Unverified(fmt.Sprintf("GET %s lists no %s, so there is none to read", path, kind),
			fmt.Sprintf("configure a %s the API key can see, or %s", kind, hookRemedy(cap)))
	}
	for _, it := range items {
		suite.Check(req, fields(it))
	}
	id := created
	if id == "" {
		id, _ = items[0]["id"].(string)
	}
	got := suite.Do(ctx, client.Request{Path: path + "/" + client.Seg(id)}, req)
	if suite.Check(req, check.Status(got, http.StatusOK)) {
		m, err := object(got)
		if suite.Check(req, err) {
			if m["id"] != id {
				suite.Check(req, fmt.Errorf("%s: id = %s, want %q", got, jsonText(m["id"]), id))
			}
			suite.Check(req, fields(m))
		}
	}
}
