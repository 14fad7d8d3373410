package receipts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// A run is the tasks the live specs judge: made once, in sequence (each
// finished before the next is submitted, so consecutive receipts of one
// issuer are adjacent unless another client's task ends in between), on a
// session of the run's own.
type run struct {
	workspace string // the workspace the suite made the session in
	session   string
	tasks     []*finished
	// canary is the secret handed to the secret task ("" when there is none);
	// noCanary says why the canary checks cannot run.
	canary   string
	noCanary string
	// thought is the hidden reasoning handed to the reasoning task (a
	// canary; "" when there is none); noThought says why there is none.
	thought   string
	noThought string

	// policy is the receipt policy in force for the run's tasks, which
	// name no Persona: the agent card's receipt_policy when it is one of
	// the three values, else "required" (docs/interpretations.md#receipt-per-task).
	policy string

	receipts map[string][][]byte // task id -> raw receipts, as listed
	keys     *receipt.KeySet
	keysAt   string // where the key set was read
	noKeys   string // why there is no key set
}

// finished is one task of the run, read once it was terminal.
type finished struct {
	name    string
	id      string
	status  string
	task    map[string]any
	secret  bool // ran the use_secret step
	thought bool // ran the reason step (its hidden reasoning is run.thought)
	how     string
	hooked  bool // driven by the scenario hook

	outcomeRead bool
	outcome     map[string]any // the task's Outcome, nil when there is none to read
	noOutcome   string         // why outcome is nil
}

// newCanary is a secret no target can know: random, and shaped like no
// credential format, so only an exact match finds it.
func newCanary() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "conformcanary" + hex.EncodeToString(b)
}

// Remedies for what the live specs could not verify.
const (
	remedySetup   = "fix the Core failures this run reports (sessions, task submission, task reads), so the suite can make the tasks whose receipts it checks"
	remedyCanary  = "implement the conform.scenarios test hook with its use_secret step (docs/scenarios.md), so the suite can hand the agent a canary secret and look for it"
	remedyThought = "implement the conform.scenarios test hook with its reason step (docs/scenarios.md), so the suite can have the agent think a canary and look for it"
)

// setupFailed ends the spec when the run cannot be set up: the
// requirements it names could not be observed, so they are unverified —
// the failure itself is a Core finding, not a receipt's — and every later
// live spec ends the same way.
func setupFailed(remedy, format string, args ...any) {
	GinkgoHelper()
	reason := "setup: " + fmt.Sprintf(format, args...)
	if shared.r == nil && shared.failed == "" {
		shared.failed, shared.remedy = reason, remedy
	}
	suite.Unverified(reason, remedy)
}

// do is one exchange; a transport failure ends the spec as an error.
func do(ctx context.Context, req client.Request, reqs ...string) *client.Response {
	GinkgoHelper()
	return suite.Do(ctx, req, reqs...)
}

// shared is the run every live spec judges, made by the first of them.
// (Specs stay independent Its rather than an Ordered container: each
// records its own verdicts and transcript.)
var shared struct {
	r      *run
	failed string // why making the run failed: every spec ends with it
	remedy string
}

// theRun returns the shared run, making it on first use.
func theRun(ctx context.Context) *run {
	GinkgoHelper()
	if shared.failed != "" {
		suite.Unverified(shared.failed, shared.remedy)
	}
	if shared.r == nil {
		// A setup that ends on a transport error leaves shared.failed
		// empty: the next spec tries again rather than inherit a reason.
		shared.r = newRun(ctx)
	}
	return shared.r
}

// newRun creates the session and drives the tasks: three of the target's
// own agent (a plain one, one canceled at once, one with an empty prompt)
// and, with the scenario contract, for what those did not show, a task
// that completes with an artifact, one that fails and one canceled while
// working, and always one that uses a canary secret and one that thinks
// a canary (hidden reasoning).
func newRun(ctx context.Context) *run {
	GinkgoHelper()
	r := &run{receipts: map[string][][]byte{}}
	r.policy = cardReceiptPolicy(ctx)
	ws, err := suite.Workspace(ctx)
	if err != nil {
		setupFailed(suite.RemedyWorkspace, "%v", err)
	}
	r.workspace = ws
	r.session = created(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})

	// The target's own agent first (docs/interpretations.md#evidence-sources):
	// a plain task; one canceled right after its submit, which a target
	// whose agent takes a moment has still running; and one with an empty
	// prompt, which agents built for text fail.
	r.add(ctx, "echo", nil, false)
	r.addCanceledPlain(ctx)
	r.addEmptyPrompt(ctx)
	if suite.Env().Discovery.Scenarios() == "" {
		r.noCanary = `the target does not advertise the conform.scenarios contract, so no task can be handed a canary secret`
		r.noThought = `the target does not advertise the conform.scenarios contract, so no task can be made to think a canary`
		return r
	}
	// Then the hook, for what the target's own tasks did not show.
	if !r.hasArtifacts(ctx) {
		r.add(ctx, "completed", []any{
			map[string]any{"op": "emit", "count": 2, "text": "conform receipt probe"},
			map[string]any{"op": "artifact", "kind": "log", "content": "conform receipt artifact", "name": "receipt-probe.log"},
			map[string]any{"op": "complete", "summary": "receipt probe done"},
		}, false)
	}
	if !r.hasStatus(check.Failed) {
		r.add(ctx, "failed", []any{map[string]any{"op": "fail", "code": "conform_receipt_failure", "message": "the scenario asked to fail"}}, false)
	}
	if !r.hasStatus(check.Canceled) {
		r.add(ctx, "canceled", []any{map[string]any{"op": "work", "ms": 60000}}, false)
	}
	r.canary = newCanary()
	if !r.add(ctx, "secret", []any{map[string]any{"op": "use_secret", "secret": r.canary}, map[string]any{"op": "complete"}}, true) {
		r.canary = ""
	}
	// Hidden reasoning (RCPT-REDACT-004): the agent thinks a canary, which
	// no receipt may reveal; a target may refuse the step (400).
	r.thought = "conform hidden reasoning " + newCanary()
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: taskBody([]any{
		map[string]any{"op": "reason", "text": r.thought, "summary": "weighed the options"}, map[string]any{"op": "complete"}})})
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	switch {
	case resp.Status == http.StatusBadRequest:
		r.thought, r.noThought = "", fmt.Sprintf("the target refused the reason scenario step (%s), so no task thought a canary", resp)
	case resp.Status/100 != 2 || id == "":
		setupFailed(remedySetup, "%s did not accept the reasoning task", resp)
	default:
		t := r.await(ctx, id, check.Terminal)
		status, _ := t["status"].(string)
		r.tasks = append(r.tasks, &finished{name: "reason", id: id, status: status, task: t, thought: true,
			how: "a task driven by the scenario steps of the reason task", hooked: true})
	}
	return r
}

// addCanceledPlain submits a plain task and cancels it at once. A target
// whose agent takes a moment cancels it while it runs, and the run then
// has a CANCELED task without the hook; one that had finished is just
// another finished task. (Whether the cancel was answered right is
// Core's to judge.)
func (r *run) addCanceledPlain(ctx context.Context) {
	GinkgoHelper()
	id, _ := r.submit(ctx, "plain-canceled", nil)
	do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/cancel", Body: map[string]any{"reason": "conform receipts probe"}})
	r.finish(ctx, "plain-canceled", id, false, "a plain task canceled right after its submit")
	if f := r.tasks[len(r.tasks)-1]; f.status == check.Canceled && r.movedAfterEnd(ctx, id) {
		// The cancel moved a finished task (Core's CORE-CANCEL-002): its
		// receipt describes the end it had, not this one.
		r.tasks = r.tasks[:len(r.tasks)-1]
		suite.Note(fmt.Sprintf("receipts: task %s had ended when its cancel moved it to CANCELED; the run goes on without it", id))
	}
}

// movedAfterEnd reports whether task id's events show it ended and then
// moved to CANCELED (a cancel that moved a finished task).
func (r *run) movedAfterEnd(ctx context.Context, id string) bool {
	GinkgoHelper()
	raw, err := readEvents(ctx, "/v1/tasks/"+client.Seg(id)+"/events")
	if err != nil {
		return false
	}
	var evs []check.Event
	for _, m := range raw {
		if e, err := check.DecodeEvent(m); err == nil {
			evs = append(evs, e)
		}
	}
	cs, err := check.Changes(id, evs)
	return err == nil && check.CanceledAfterEnd("", cs) != nil
}

// addEmptyPrompt submits a task with an empty prompt: a target whose agent
// fails it gives the run a FAILED task without the hook. A target that
// refuses it at submit is within its rights: the run goes on without it.
func (r *run) addEmptyPrompt(ctx context.Context) {
	GinkgoHelper()
	body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "", "visibility": "public"}}}}
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: body})
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		suite.Note(fmt.Sprintf("receipts: %s did not take a task with an empty prompt; the run goes on without it", resp))
		return
	}
	r.finish(ctx, "empty-prompt", id, false, "a plain task with an empty prompt")
}

// submit submits a task with the run's input (and scenario steps, when
// given) and returns its id; a target that does not accept it ends the
// run's setup.
func (r *run) submit(ctx context.Context, name string, steps []any) (string, *client.Response) {
	GinkgoHelper()
	body := map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "conform receipts probe", "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: body})
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		setupFailed(remedySetup, "%s did not accept the %s task", resp, name)
	}
	return id, resp
}

// finish waits for the task's end and adds it to the run.
func (r *run) finish(ctx context.Context, name, id string, secret bool, how string) {
	GinkgoHelper()
	t := r.await(ctx, id, check.Terminal)
	status, _ := t["status"].(string)
	r.tasks = append(r.tasks, &finished{name: name, id: id, status: status, task: t, secret: secret, how: how})
}

// hasStatus reports whether a task of the run ended in status.
func (r *run) hasStatus(status string) bool {
	return slices.ContainsFunc(r.tasks, func(f *finished) bool { return f.status == status })
}

// hasArtifacts reports whether the Outcome of a task of the run lists an
// artifact.
func (r *run) hasArtifacts(ctx context.Context) bool {
	GinkgoHelper()
	for _, f := range r.tasks {
		if o := r.outcome(ctx, f); len(check.OutcomeArtifactIDs(o)) > 0 {
			return true
		}
	}
	return false
}

// sources records, in the current spec's evidence, where the run's tasks
// came from: the target's own agent, or the hook.
func (r *run) sources(reqs ...string) {
	for _, f := range r.tasks {
		src := evidence.Source{Kind: evidence.SourceRun, Object: fmt.Sprintf("task %s (%s)", f.id, f.status), How: f.how, Requirements: reqs}
		if f.hooked {
			src.Kind, src.Hook = evidence.SourceHook, "conform.scenarios"
		}
		suite.Evidence(src)
	}
}

// created performs a setup write and returns the new resource's id.
func created(ctx context.Context, req client.Request) string {
	GinkgoHelper()
	resp := do(ctx, req)
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		setupFailed(remedySetup, "%s did not create a resource with an id", resp)
	}
	return id
}

// add submits one task and waits for its end (canceling it once WORKING
// when its name says so). It returns false when the target refused a
// secret task's scenario, which only the canary checks need.
func (r *run) add(ctx context.Context, name string, steps []any, secret bool) bool {
	GinkgoHelper()
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: taskBody(steps)})
	if secret && resp.Status == http.StatusBadRequest {
		r.noCanary = fmt.Sprintf("the target refused the use_secret scenario step (%s), so no canary secret was used", resp)
		return false
	}
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		setupFailed(remedySetup, "%s did not accept the %s task", resp, name)
	}
	how, hooked := "a plain task", steps != nil
	if hooked {
		how = "a task driven by the scenario steps of the " + name + " task"
	}
	if name == "canceled" {
		t := r.await(ctx, id, func(s string) bool { return s == check.Working || check.Terminal(s) })
		if t["status"] == check.Working {
			c := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/cancel", Body: map[string]any{"reason": "conform receipts probe"}})
			// A cancel that is refused or does nothing is a Core finding:
			// the run goes on without a CANCELED task (no receipt of one
			// is then looked at) rather than end on it.
			if c.Status != http.StatusOK {
				suite.Note(fmt.Sprintf("receipts: %s: the working task %s could not be canceled, so no receipt of a CANCELED task was checked", c, id))
				return true
			}
			t, _, why := r.poll(ctx, id, check.Terminal)
			if why != "" {
				suite.Note(fmt.Sprintf("receipts: the working task %s was canceled with 200 but did not end (%s), so no receipt of a CANCELED task was checked", id, why))
				return true
			}
			status, _ := t["status"].(string)
			r.tasks = append(r.tasks, &finished{name: name, id: id, status: status, task: t, secret: secret, how: how, hooked: hooked})
			return true
		}
	}
	r.finish(ctx, name, id, secret, how)
	r.tasks[len(r.tasks)-1].hooked = hooked
	return true
}

// taskBody is a task submission with steps as its scenario (nil: none).
func taskBody(steps []any) map[string]any {
	body := map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "conform receipts probe", "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	return body
}

// await polls the task until want holds or the task timeout passes; if it
// does not, the run cannot be made (setupFailed).
func (r *run) await(ctx context.Context, id string, want func(string) bool) map[string]any {
	GinkgoHelper()
	m, remedy, why := r.poll(ctx, id, want)
	if why != "" {
		setupFailed(remedy, "%s", why)
	}
	return m
}

// poll polls the task until want holds, and otherwise says why not and
// what would help. A status outside the TaskStatus enum ends the wait at
// once: it will never match (Core reports it).
func (r *run) poll(ctx context.Context, id string, want func(string) bool) (task map[string]any, remedy, why string) {
	GinkgoHelper()
	limit := suite.Env().Config.Timeouts.Task
	deadline := time.Now().Add(limit)
	var pace suite.Pace
	waitRemedy := suite.RemedyAgentEnds
	if suite.Env().Discovery.Scenarios() != "" {
		waitRemedy = remedySetup
	}
	for {
		resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)})
		m, err := resp.Object()
		if resp.Status != http.StatusOK || err != nil {
			return nil, remedySetup, fmt.Sprintf("%s: cannot read the task", resp)
		}
		s, _ := m["status"].(string)
		if want(s) {
			return m, "", ""
		}
		if !check.KnownStatus(s) {
			return nil, remedySetup, fmt.Sprintf("task %s has status %v, which is not a TaskStatus value: the suite cannot tell when it ends", id, m["status"])
		}
		if time.Now().After(deadline) {
			return nil, waitRemedy, fmt.Sprintf("task %s is still %v after %s", id, m["status"], limit)
		}
		if !pace.Wait(ctx) {
			return nil, remedySetup, fmt.Sprintf("waiting for task %s: %v", id, ctx.Err())
		}
	}
}

// listed returns the receipts listed for a task, fetched once. A list that
// cannot be read fails RCPT-RES-002, and the task's receipts are then not
// checked by the spec (its requirements are blocked by that failure); an
// empty one fails it too unless the agent card's receipt_policy lets a task
// go without one — judged on every call, so each spec that reads the list
// records its own verdict. The spec goes on with the other tasks.
func (r *run) listed(ctx context.Context, f *finished) [][]byte {
	GinkgoHelper()
	if f.hooked {
		// What the spec judges of this task's receipts rests on the hook
		// that drove the task (docs/interpretations.md#hook-attested).
		suite.UsedHook(evidence.HookScenarios, "the receipts of task "+f.id+" ("+f.how+")")
	}
	rs, ok := r.receipts[f.id]
	where := "GET /v1/tasks/" + f.id + "/receipts"
	if !ok {
		resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(f.id) + "/receipts"}, "RCPT-RES-002")
		var err error
		rs, err = check.ReceiptList(resp)
		if !suite.CheckBlocks("RCPT-RES-002", err, suite.SpecReqs()...) {
			return nil
		}
		r.receipts[f.id] = rs
	}
	switch {
	case len(rs) > 0:
	case r.policy != "required":
		suite.NotApplicableTo("RCPT-RES-002", fmt.Sprintf("%s: the %s task lists no receipt, and the agent card's receipt_policy is %q", where, f.status, r.policy))
	default:
		suite.Check("RCPT-RES-002", fmt.Errorf("%s: the %s task lists no receipt, want at least one (receipt_policy required)", where, f.status))
	}
	return rs
}

// all returns every receipt of the run with its task, in task order.
func (r *run) all(ctx context.Context) []listedReceipt {
	GinkgoHelper()
	var out []listedReceipt
	for _, f := range r.tasks {
		for _, raw := range r.listed(ctx, f) {
			d, err := check.DecodeReceipt(raw)
			// A receipt that is no JSON object is checked for nothing
			// else; the others still are.
			if !suite.CheckBlocks("RCPT-SHAPE-001", err, suite.SpecReqs()...) {
				continue
			}
			out = append(out, listedReceipt{task: f, raw: raw, doc: d})
		}
	}
	if len(out) == 0 {
		// Nothing to look at: what receipts would show is unverified, never
		// passed (docs/interpretations.md#receipt-per-task).
		suite.Unverified(fmt.Sprintf("none of the run's %d finished tasks lists a receipt (receipt_policy %q)", len(r.tasks), r.policy),
			"issue receipts for finished tasks that name no Persona (agent card receipt_policy required)")
	}
	return out
}

type listedReceipt struct {
	task *finished
	raw  []byte
	doc  check.ReceiptDoc
}

// keySet fetches the key directory once, from where discovery advertises
// it (capabilities[check.KeyDirectoryCapability]) or else from the
// documented location; noKeys says why there is none. /v1/receipts/keys is
// never read: on a target that follows the OpenAPI it is the receipt
// "keys".
func (r *run) keySet(ctx context.Context) *receipt.KeySet {
	GinkgoHelper()
	if r.keys != nil || r.noKeys != "" {
		return r.keys
	}
	env := suite.Env()
	path, q, advertised, err := check.KeyDirectoryPath(env.Discovery.Raw, env.Config.Target)
	if err != nil {
		r.noKeys = err.Error()
		return nil
	}
	where := fmt.Sprintf("discovery advertises no capabilities[%q], and the documented location", check.KeyDirectoryCapability)
	if advertised {
		where = "the location discovery advertises"
	}
	req := client.Request{Path: path, Query: q}
	if path != check.DefaultKeyDirectory {
		// The target's own choice of location: no OpenAPI operation, by design.
		req.Probe = "the key directory location the target advertises in capabilities[\"" + check.KeyDirectoryCapability + "\"], outside the OpenAPI document"
	}
	resp := do(ctx, req, "RCPT-SIGN-002")
	if resp.Status != http.StatusOK {
		r.noKeys = fmt.Sprintf("%s answers %s", where, resp)
		return nil
	}
	ks, err := receipt.ParseKeySet(resp.Body)
	if err != nil {
		r.noKeys = fmt.Sprintf("%s answers %s: %v", where, resp, err)
		return nil
	}
	r.keys, r.keysAt = ks, path
	return ks
}

// verify runs the suite's own verification of a receipt against the
// published keys (when there are any).
func (r *run) verify(ctx context.Context, raw []byte) receipt.Result {
	GinkgoHelper()
	return receipt.Verify(raw, receipt.Options{Keys: r.keySet(ctx)})
}

// readOutcome reads the task's Outcome (named by its outcome_id) once.
// When there is none, why says so; a dangling outcome_id is a Core
// finding, so receipt checks only record that they had nothing to compare.
func (r *run) readOutcome(ctx context.Context, f *finished) (map[string]any, string) {
	GinkgoHelper()
	if f.outcomeRead {
		return f.outcome, f.noOutcome
	}
	f.outcomeRead = true
	oid, _ := f.task["outcome_id"].(string)
	if oid == "" {
		f.noOutcome = fmt.Sprintf("the %s task %s has no outcome_id", f.status, f.id)
		return nil, f.noOutcome
	}
	resp := do(ctx, client.Request{Path: "/v1/outcomes/" + client.Seg(oid)})
	m, err := resp.Object()
	if resp.Status != http.StatusOK || err != nil {
		f.noOutcome = fmt.Sprintf("%s: the outcome_id of task %s cannot be read", resp, f.id)
		return nil, f.noOutcome
	}
	f.outcome = m
	return m, ""
}

// outcome is the task's Outcome, or nil.
func (r *run) outcome(ctx context.Context, f *finished) map[string]any {
	GinkgoHelper()
	o, _ := r.readOutcome(ctx, f)
	return o
}

// cardReceiptPolicy reads the agent card's receipt_policy: the Harness's
// policy for tasks that name no Persona. Anything but optional or disabled
// (absent, null, an unknown value, an unreadable card) means required.
func cardReceiptPolicy(ctx context.Context) string {
	GinkgoHelper()
	resp := do(ctx, client.Request{Path: "/v1/agent-card", NoAuth: true})
	if m, err := resp.Object(); err == nil && resp.Status == http.StatusOK {
		switch p, _ := m["receipt_policy"].(string); p {
		case "optional", "disabled":
			return p
		}
	}
	return "required"
}
