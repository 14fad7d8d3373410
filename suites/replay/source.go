package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// Sources and replays for the specs of api.go, events.go, modes.go,
// ranges.go and refresh.go: a source task submitted with given replay
// steps (docs/scenarios.md, "Replay steps") or none (the target's own
// agent on a plain text task), run to its end, with its events and the
// override keys its events name; and a replay of it, run to its end, with
// its events. Reads go through the fixture's helpers (fixturerun.go) on the
// target's side.

// tgt is the target's side of the fixture helpers (await, events).
var tgt = &fixtureRun{h: fxTarget}

// Remedies of this file's prerequisites.
const (
	remedyHookReplay = "implement the conform.scenarios hook with the replay steps (docs/scenarios.md, \"Replay steps: recorded dependencies\") so the suite can run a source task with known recorded dependencies"
	remedyCore       = "fix the Core failures this run reports (sessions, task submission and reads)"
)

// source is a finished source task.
type source struct {
	session, workspace, id string
	task                   map[string]any
	events                 []map[string]any
	// keys maps each override key the source's events name
	// (payload.override_key) to the last event that recorded it.
	keys map[string]string
}

// needReplay ends a spec on a target that does not claim the level: asked
// for it anyway (--levels replay), it is never judged, never passed.
func needReplay() {
	GinkgoHelper()
	if !suite.Env().Discovery.Claims(requirements.Replay) {
		suite.Unverified("the target does not advertise replay (capabilities.replay), so it is not asked to replay", remedyFxReplay)
	}
}

// needHook ends a spec that needs the scenario hook's replay steps on a
// target without it: unverified, never passed.
func needHook(what string) {
	GinkgoHelper()
	if suite.Env().Discovery.Scenarios() == "" {
		suite.Unverified("the target does not advertise the conform.scenarios hook, so "+what+" cannot be run on it", remedyHookReplay)
	}
}

// hooked reports whether the target advertises the scenario hook.
func hooked() bool { return suite.Env().Discovery.Scenarios() != "" }

// newSession makes a session in the run's workspace.
func newSession(ctx context.Context) (ws, session string) {
	GinkgoHelper()
	ws, err := suite.Workspace(ctx)
	if err != nil {
		suite.Unverified("no workspace for a replay source: "+err.Error(), suite.RemedyWorkspace)
	}
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})
	m, _ := resp.Object()
	session, _ = m["id"].(string)
	if resp.Status/100 != 2 || session == "" {
		suite.Unverified(fmt.Sprintf("%s: no session for a replay source", resp), remedyCore)
	}
	return ws, session
}

// submitSource submits a task with steps as its scenario (nil: a plain
// text task for the target's own agent) on session (a new one when "")
// and waits for it to finish COMPLETED; its events and override keys are
// read. A refused scenario, or a source that does not complete, ends the
// spec unverified.
func submitSource(ctx context.Context, session string, steps []any, text string) *source {
	GinkgoHelper()
	s := &source{session: session, keys: map[string]string{}}
	if s.session == "" {
		s.workspace, s.session = newSession(ctx)
	}
	body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": text, "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(s.session) + "/tasks", Body: body})
	t, _ := resp.Object()
	s.id, _ = t["id"].(string)
	switch {
	case resp.Status == http.StatusBadRequest && steps != nil:
		suite.Unverified(fmt.Sprintf("the target refused a source scenario with replay steps: %s %s", resp, fxClip(resp.Body)), remedyHookReplay)
	case resp.Status/100 != 2 || s.id == "":
		suite.Unverified(fmt.Sprintf("%s: a replay source task was not accepted", resp), remedyCore)
	}
	task, why := tgt.await(ctx, s.id)
	switch {
	case why != "":
		suite.Unverified("a replay source task: "+why, suite.RemedyAgentEnds)
	case task["status"] != check.Completed:
		suite.Unverified(fmt.Sprintf("the replay source task %s ended %v, not COMPLETED, so it has no history to replay", s.id, task["status"]), suite.RemedyAgentEnds)
	}
	s.task = task
	if s.workspace == "" {
		s.workspace, _ = task["workspace_id"].(string)
	}
	evs, err := tgt.events(ctx, s.id)
	if err != nil {
		suite.Unverified(fmt.Sprintf("the events of the replay source task %s cannot be read: %v", s.id, err), "fix the Core failures this run reports (event lists)")
	}
	if len(evs) == 0 {
		suite.Unverified(fmt.Sprintf("GET /v1/tasks/%s/events: the finished replay source task has no events, so there is no history to read or replay", s.id), "fix the Core failures this run reports (event lists)")
	}
	s.events = evs
	for _, e := range evs {
		if k := payloadStr(e, "override_key"); k != "" {
			s.keys[k] = str(e, "id")
		}
	}
	return s
}

// keyOf is the override key the source recorded for the event kind whose
// payload member m is v (e.g. agent.message with call_id main:1): "" when
// none.
func (s *source) keyOf(kind, m, v string) string {
	for _, e := range s.events {
		if str(e, "event") == kind && payloadStr(e, m) == v {
			if k := payloadStr(e, "override_key"); k != "" {
				return k
			}
		}
	}
	return ""
}

// needKey ends the spec unverified when the source recorded no key for
// what.
func (s *source) needKey(key, what string) string {
	GinkgoHelper()
	if key == "" {
		suite.Unverified(fmt.Sprintf("no event of the source task %s names the override key of %s (payload.override_key)", s.id, what), remedyFxKeys)
	}
	return key
}

// index is the position of each source event id in the source's log.
func (s *source) index() map[string]int {
	out := map[string]int{}
	for i, e := range s.events {
		out[str(e, "id")] = i
	}
	return out
}

// replayRun is one replay request and, when accepted, its task as it
// ended and its events.
type replayRun struct {
	resp   *client.Response
	answer map[string]any // the 2xx answer's Task
	id     string
	task   map[string]any
	status string
	events []map[string]any
	why    string // why the task was not followed to its end
}

// accepted reports whether the request got a 2xx with a Task.
func (r *replayRun) accepted() bool { return r.resp.Status/100 == 2 && r.id != "" }

// output is the replay's output: every event of the replay task but its
// own lifecycle (replaydet.Output), whatever each says of itself
// (docs/interpretations.md#replay-whole-output).
func (r *replayRun) output() []map[string]any { return replaydet.Output(r.events) }

// replayOf asks for a replay of source with body (nil: no body at all)
// and, when it is accepted, follows the replay task to its end and reads
// its events.
func replayOf(ctx context.Context, source string, body any) *replayRun {
	GinkgoHelper()
	req := client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(source) + "/replay"}
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			Fail("the suite's own replay request: " + err.Error())
		}
		req.RawBody = b
	}
	r := &replayRun{resp: suite.Do(ctx, req)}
	r.answer, _ = r.resp.Object()
	if r.resp.Status/100 == 2 {
		r.id, _ = r.answer["id"].(string)
	}
	if !r.accepted() {
		return r
	}
	task, why := tgt.await(ctx, r.id)
	if why != "" {
		r.why = why
		return r
	}
	r.task = task
	r.status, _ = task["status"].(string)
	evs, err := tgt.events(ctx, r.id)
	if err != nil {
		r.why = fmt.Sprintf("the events of replay task %s cannot be read: %v", r.id, err)
	}
	r.events = evs
	return r
}

// mustReplay is replayOf for a replay the spec needs: a refused request or
// a task that cannot be followed ends the spec unverified (the specs of
// RPLY-API-001 and RPLY-MODE-001 judge the acceptance).
func mustReplay(ctx context.Context, source string, body any, what string) *replayRun {
	GinkgoHelper()
	r := replayOf(ctx, source, body)
	switch {
	case !r.accepted():
		suite.Unverified(fmt.Sprintf("%s was refused: %s %s", what, r.resp, fxClip(r.resp.Body)), "accept the replay request (RPLY-API-001, RPLY-MODE-001 report it)")
	case r.why != "":
		suite.Unverified(what+": "+r.why, "let the replay task finish within --task-timeout and serve its events")
	}
	return r
}

// completed ends the spec unverified when the replay did not complete.
func (r *replayRun) completed(what string) {
	GinkgoHelper()
	if r.status != check.Completed {
		b, _ := json.Marshal(r.task["failure"])
		suite.Unverified(fmt.Sprintf("%s (task %s) ended %s (failure %s), so there is nothing to compare", what, r.id, r.status, b), "let a replay of a fully recorded source complete (RPLY-MODE-002)")
	}
}

// replayMeta is an event's replay metadata object (nil when none).
func replayMeta(e map[string]any) map[string]any {
	m, _ := e["replay"].(map[string]any)
	if m == nil {
		if md, ok := e["metadata"].(map[string]any); ok {
			m, _ = md["replay"].(map[string]any)
		}
	}
	return m
}

func str(m map[string]any, k string) string { s, _ := m[k].(string); return s }

func payloadStr(e map[string]any, k string) string {
	p, _ := e["payload"].(map[string]any)
	s, _ := p[k].(string)
	return s
}

// kinds lists the event kinds of evs.
func kinds(evs []map[string]any) []string {
	var out []string
	for _, e := range evs {
		out = append(out, str(e, "event"))
	}
	return out
}

// ofKind is the events of evs of one kind.
func ofKind(evs []map[string]any, kind string) []map[string]any {
	var out []map[string]any
	for _, e := range evs {
		if str(e, "event") == kind {
			out = append(out, e)
		}
	}
	return out
}

// jsonOf is v's JSON for messages and comparisons (Go's encoder sorts
// object keys, so equal values give equal text).
func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
