package core

// Where a spec finds the object in a state its checks need
// (docs/interpretations.md#evidence-sources): first what the target itself
// shows — a task of the spec's own, run by the target's own agent and
// caught in the state, or what the target lists — then the
// conform.scenarios hook; for an Artifact, last, a write another level owns
// (registration is Extended). Each spec records the source it used in its
// evidence (evidence.Source), so the report says which verdicts rest on the
// hook.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/suite"
)

// plainTries is how many plain tasks a spec tries to catch in a state
// before it turns to the hook: a target whose agent takes a moment over a
// task gives one at the first try, one that answers at once seldom does.
const plainTries = 3

// fromRun records that the spec's checks judged a task of its own, run by
// the target's own agent: no hook involved.
func fromRun(object, how string) {
	suite.Evidence(evidence.Source{Kind: evidence.SourceRun, Object: object, How: how, Requirements: suite.SpecReqs()})
}

// fromHook records that the spec's checks judged a task driven by the
// conform.scenarios hook.
func fromHook(object, how string) {
	suite.Evidence(evidence.Source{Kind: evidence.SourceHook, Hook: "conform.scenarios", Object: object, How: how, Requirements: suite.SpecReqs()})
}

// needHook ends the spec as unverified, with why the target's own tasks
// did not show the state and remedy, unless the target implements the
// scenario hook, which the spec then uses.
func needHook(why, remedy string) {
	GinkgoHelper()
	if suite.Env().Discovery.Scenarios() == "" {
		suite.Unverified(why+`; the target does not advertise the conform.scenarios contract (GET /v1 capabilities["conform.scenarios"]), so no task can be driven into this state`, remedy)
	}
}

// cancelPlain submits plain tasks and cancels each at once (once it reads
// WORKING, when working is set), until a cancel takes: answered 200 and
// the task ends CANCELED. It checks every cancel answer on the way: a
// refusal is right only for a task that had ended (CORE-CANCEL-001), a 200
// answer is the Task (CORE-CANCEL-001) and never CANCELED with
// completed_at (CORE-CANCEL-003), and an accepted cancel ends the task. It
// returns the canceled task, or "" and what each try saw.
func (f *flow) cancelPlain(ctx context.Context, working bool) (string, string) {
	GinkgoHelper()
	var tries []string
	for range plainTries {
		id := f.submit(ctx, nil)
		if working {
			if _, ok := f.await(ctx, id, func(s string) bool { return s == check.Working || check.Terminal(s) }); !ok || f.last(id) != check.Working {
				tries = append(tries, fmt.Sprintf("task %s was not read WORKING (%s)", id, seqOf(f.reads[id])))
				continue
			}
		}
		resp, body := f.cancel(ctx, id)
		if resp.Status != http.StatusOK {
			after := f.lastRead(ctx, id)
			suite.Check("CORE-CANCEL-001", check.CancelRefusal(resp, after))
			if resp.Status >= 400 {
				observeError(resp)
			}
			tries = append(tries, fmt.Sprintf("task %s had ended (%s) when %s answered its cancel", id, after, resp))
			continue
		}
		if got, _ := body["id"].(string); got != id {
			suite.Check("CORE-CANCEL-001", fmt.Errorf("%s: the answer's id is %q, want the Task %s", resp, got, id))
		}
		suite.Check("CORE-CANCEL-003", check.NoCompletedAt(resp.String(), body))
		final, _ := f.awaitTerminal(ctx, id)
		switch {
		case final == check.Canceled:
			// Caught running, unless the events say the task had ended
			// and the cancel moved it (CORE-CANCEL-002's failure; the task
			// then shows nothing of a cancel of a running one).
			task := "/v1/tasks/" + client.Seg(id)
			if evs, err := f.events(ctx, task+"/events"); err == nil {
				if cs, err := check.Changes(id, evs); err == nil {
					if moved := check.CanceledAfterEnd("GET "+task+"/events", cs); moved != nil {
						suite.Check("CORE-CANCEL-002", moved)
						tries = append(tries, fmt.Sprintf("task %s had ended before its cancel moved it", id))
						continue
					}
				}
			}
			return id, ""
		case !check.Terminal(final):
			suite.Check("CORE-CANCEL-001", fmt.Errorf("GET /v1/tasks/%s: the cancel was answered 200, but %s later the task is still %s; want it ended",
				id, suite.Env().Config.Timeouts.Task, final))
			return "", fmt.Sprintf("task %s did not end after its cancel was accepted", id)
		}
		// Cancellation is cooperative: it may have finished first.
		tries = append(tries, fmt.Sprintf("task %s ended %s although its cancel was answered 200 (it finished first)", id, final))
	}
	return "", fmt.Sprintf("no plain task was caught running: %s", strings.Join(tries, "; "))
}

// failPlain submits a task of the target's own agent with nothing to work
// on — an empty prompt, which agents built for text fail — and returns it
// when it ends FAILED, or "" and what happened. Whatever the target does
// with it is legal: a refusal at submit, or an answer, is only not what
// the spec needs.
func (f *flow) failPlain(ctx context.Context) (string, string) {
	GinkgoHelper()
	body := map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "", "visibility": "public"}}}}
	id, resp := f.submitBody(ctx, body)
	if id == "" {
		if resp.Status >= 400 {
			observeError(resp)
		}
		return "", fmt.Sprintf("%s did not take a task with an empty prompt", resp)
	}
	final, _ := f.awaitTerminal(ctx, id)
	if final != check.Failed {
		return "", fmt.Sprintf("task %s with an empty prompt ended %s", id, seqOf(f.reads[id]))
	}
	return id, ""
}

// failedTask gets a FAILED task: the target's own agent failing an empty
// prompt, else (with the hook) a task whose scenario steps fail.
func (f *flow) failedTask(ctx context.Context, steps []any) string {
	GinkgoHelper()
	id, why := f.failPlain(ctx)
	if id != "" {
		fromRun("task "+id+" (FAILED)", "a task of the spec with an empty prompt, which the target's agent failed")
		return id
	}
	needHook(why, suite.RemedyFailed)
	id = f.submit(ctx, steps)
	f.driveTo(ctx, id, check.Failed)
	fromHook("task "+id+" (FAILED)", "a task whose scenario fails")
	return id
}

// artifactFor finds an Artifact for the artifact spec to read, and records
// where: an artifact of a plain task the spec submits (its Outcome's
// artifacts, or GET /v1/artifacts?task_id=), else one the target lists
// (the first pages of GET /v1/artifacts), else one made by the hook's
// artifact step, else — nothing else having shown an Artifact — one
// registered by POST /v1/artifacts, a write of the Extended level that Core
// never needs. An artifact with a sha256 is preferred, so that
// CORE-READ-013 has bytes to check: a source that shows only artifacts
// without one is passed over for a later one that has one. Without any the
// spec is unverified, and says that only Artifacts went unread. It returns
// the artifact and the filter of the list it is to be found in.
func artifactFor(ctx context.Context, req string) (string, url.Values) {
	GinkgoHelper()
	type candidate struct {
		id     string
		filter url.Values
		src    evidence.Source
	}
	var first *candidate // the first artifact seen, with bytes or not
	var tried []string
	// keep remembers the first artifact of items as the fallback, if
	// there is none yet.
	keep := func(items []map[string]any, filter url.Values, src evidence.Source) {
		for _, a := range items {
			if idOf(a) != "" && first == nil {
				src.Object = "artifact " + idOf(a)
				first = &candidate{idOf(a), filter, src}
			}
		}
	}
	// take picks an artifact with bytes from items and says whether it
	// found one; otherwise it keeps the first of any kind as the fallback.
	take := func(items []map[string]any, filter url.Values, src evidence.Source) (candidate, bool) {
		for _, a := range items {
			if idOf(a) != "" && check.ArtifactWithBytes(a) {
				src.Object = "artifact " + idOf(a)
				return candidate{idOf(a), filter, src}, true
			}
		}
		keep(items, filter, src)
		return candidate{}, false
	}
	use := func(c candidate) (string, url.Values) {
		c.src.Requirements = suite.SpecReqs()
		suite.Evidence(c.src)
		return c.id, c.filter
	}

	// 1. A plain task of the spec's own: the target's agent may keep what
	// it produces as artifacts.
	sess := sessionID(ctx, req)
	sub := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: echoTask("keep what you write")}, req)
	task := idOf(succeeded(reqSubmit, sub))
	if _, final, ended := awaitEnd(ctx, req, task); !ended {
		tried = append(tried, fmt.Sprintf("the plain task %s did not end within --task-timeout", task))
	} else {
		src := evidence.Source{Kind: evidence.SourceRun, How: "an artifact of a plain task the spec submitted (task " + task + ": GET /v1/artifacts?task_id= and its Outcome's artifacts)"}
		filter := url.Values{"task_id": {task}}
		listed, _, _ := listAll(ctx, req, "/v1/artifacts", filter)
		if c, ok := take(listed, filter, src); ok {
			return use(c)
		}
		n := len(listed)
		if oid, _ := final["outcome_id"].(string); oid != "" {
			resp := suite.Do(ctx, client.Request{Path: "/v1/outcomes/" + client.Seg(oid)}, req)
			observe(resp)
			if o, err := resp.Object(); err == nil && resp.Status == http.StatusOK {
				arts, _ := o["artifacts"].([]any)
				for _, a := range arts {
					m, _ := a.(map[string]any)
					// An artifact the Outcome lists need not be the
					// task's own: then it is looked for in the whole list.
					f := url.Values{}
					if m["task_id"] == task {
						f = filter
					}
					if c, ok := take([]map[string]any{m}, f, src); ok {
						return use(c)
					}
					n++
				}
			}
		}
		tried = append(tried, fmt.Sprintf("the plain task %s kept no artifact with a sha256 (%d without)", task, n))
	}

	// 2. What the target lists already: whatever earlier specs or other
	// clients left, so only one whose bytes are served counts as one with
	// bytes (a registered artifact may have a sha256 and no content yet).
	listed, _, _ := listPages(ctx, req, "/v1/artifacts", nil, 3)
	src := evidence.Source{Kind: evidence.SourceTarget, How: "an artifact the target lists (GET /v1/artifacts) whose bytes it serves"}
	if c, ok := take(servedBytes(ctx, req, listed), url.Values{}, src); ok {
		return use(c)
	}
	keep(listed, url.Values{}, src)
	tried = append(tried, fmt.Sprintf("GET /v1/artifacts lists no artifact with a sha256 whose bytes it serves in its first pages (%d listed)", len(listed)))

	// 3. The hook's artifact step.
	if suite.Env().Discovery.Scenarios() != "" {
		body := echoTask("make an artifact")
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": []any{
			map[string]any{"op": "artifact", "kind": "log", "mime_type": "text/plain", "content": "conform artifact", "name": "conform.log"},
			map[string]any{"op": "complete", "summary": "artifact made"},
		}}}
		sub := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", Body: body}, req)
		id := idOf(succeeded(reqSubmit, sub))
		awaitTerminal(ctx, req, id)
		filter := url.Values{"task_id": {id}}
		items, _, listed := listAll(ctx, req, "/v1/artifacts", filter)
		if !listed {
			// No list, no artifact to read: nothing else can run.
			suite.Stop(req, reqListShape)
		}
		var own []map[string]any
		for _, a := range items {
			if a["task_id"] == id {
				own = append(own, a)
			}
		}
		if len(own) == 0 {
			suite.Must(req, fmt.Errorf("task %s ran an artifact step but GET /v1/artifacts lists no artifact with its task_id", id))
		}
		src := evidence.Source{Kind: evidence.SourceHook, Hook: "conform.scenarios", How: "the artifact step of task " + id}
		if c, ok := take(own, filter, src); ok {
			return use(c)
		}
	}
	if first != nil {
		return use(*first)
	}

	// 4. Registration, an Extended write: only when nothing else showed
	// an Artifact, and not judged here.
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts",
		Body: map[string]any{"kind": "log", "mime_type": "text/plain", "visibility": "public", "uri": nil}}, req)
	if resp.Status == http.StatusOK || resp.Status == http.StatusCreated {
		if m, err := resp.Object(); err == nil && idOf(m) != "" {
			return use(candidate{idOf(m), url.Values{}, evidence.Source{Kind: evidence.SourceHigherLevel, Object: "artifact " + idOf(m),
				How: "registered by POST /v1/artifacts (an Extended write), nothing else having shown an Artifact"}})
		}
	}
	tried = append(tried, fmt.Sprintf("artifact registration (an Extended write) answered %s", resp))
	if suite.Env().Discovery.Scenarios() == "" {
		tried = append(tried, "the target implements no conform.scenarios hook")
	}
	suite.Unverified(fmt.Sprintf("no Artifact to read: %s. Only Artifacts went unread: the other resources these requirements cover are judged by the other specs",
		strings.Join(tried, "; ")),
		"let the target's agent keep what it produces as Artifacts of its tasks (listed by GET /v1/artifacts), or implement the conform.scenarios hook (its artifact step, docs/scenarios.md)")
	return "", nil
}

// workingPlain submits plain tasks until one is read WORKING by a poll
// before it ends: a target whose agent takes a moment shows one at once.
// It returns that task, or "" and what each try saw.
func (f *flow) workingPlain(ctx context.Context) (string, string) {
	GinkgoHelper()
	var tries []string
	for range plainTries {
		id := f.submit(ctx, nil)
		if _, ok := f.await(ctx, id, func(s string) bool { return s == check.Working || check.Terminal(s) }); ok && f.last(id) == check.Working {
			return id, ""
		}
		tries = append(tries, fmt.Sprintf("task %s was not read WORKING (%s)", id, seqOf(f.reads[id])))
	}
	return "", "no plain task was read WORKING: " + strings.Join(tries, "; ")
}

// maxContentProbes bounds how many listed artifacts the artifact spec asks
// for bytes.
const maxContentProbes = 5

// servedBytes returns the first of items with a sha256 whose content the
// target serves (GET /v1/artifacts/{id}/content answers 200), asking for at
// most maxContentProbes of them; nil when none does.
func servedBytes(ctx context.Context, req string, items []map[string]any) []map[string]any {
	GinkgoHelper()
	probes := 0
	for _, a := range items {
		if idOf(a) == "" || !check.ArtifactWithBytes(a) {
			continue
		}
		if probes++; probes > maxContentProbes {
			return nil
		}
		resp := suite.Do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(idOf(a)) + "/content"}, req)
		if resp.Status == http.StatusOK {
			return []map[string]any{a}
		}
	}
	return nil
}
