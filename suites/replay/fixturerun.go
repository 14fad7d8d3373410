package replay

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	fixture "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/replaydet"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// The determinism fixture, live (docs/replay.md, "Determinism"): the
// source task of fixtures/replay (scenario/source.json, one replay step per
// dependency) runs on a Harness; the bytes the fixture's artifact overrides
// name are uploaded; the fixture's with_overrides request, its event_id
// and artifact_id members rewritten to that Harness's ids, is replayed
// (twice on the target, for RPLY-DET-002's second comparison), and its
// exact request once. What each replay left (its task, receipt and tape)
// is what the determinism, delta and tape specs judge. The target's run is
// made once per process, by the first spec that needs it; the reference
// Harness's run (RPLY-DET-002 against the reference) by that spec alone.

// fxSide is one Harness the fixture runs on: the target, or the reference
// Harness started in this process.
type fxSide struct {
	name string
	ref  *client.Client // nil for the target
}

var fxTarget = &fxSide{name: "the target"}

// remedyFxReference is what to do when the in-process reference Harness
// could not play its part: nothing on the target's side.
const remedyFxReference = "none on the target's side: the suite's in-process reference Harness failed; report it as a conform bug"

// do is one exchange. A target that cannot be spoken to ends the spec with
// an error verdict; a reference Harness that cannot leaves it unverified.
func (h *fxSide) do(ctx context.Context, req client.Request) *client.Response {
	GinkgoHelper()
	if h.ref == nil {
		return suite.Do(ctx, req)
	}
	resp, err := h.ref.Do(ctx, req)
	if err != nil {
		suite.Unverified("the reference Harness did not answer: "+err.Error(), remedyFxReference)
	}
	return resp
}

// fxReplay is one replay task the fixture made, as it ended.
type fxReplay struct {
	what    string // "the with_overrides replay 1"
	refused *client.Response
	id      string
	status  string
	task    map[string]any
	// receipt is its receipt's raw JSON (nil when there is none: noReceipt
	// says why).
	receipt   []byte
	noReceipt string
}

// ended says how a replay that did not complete ended.
func (r *fxReplay) ended() string {
	if r.refused != nil {
		return fmt.Sprintf("%s was refused: %s %s", r.what, r.refused, fxClip(r.refused.Body))
	}
	msg := fmt.Sprintf("%s (task %s) ended %s", r.what, r.id, r.status)
	if f, ok := r.task["failure"].(map[string]any); ok {
		b, _ := json.Marshal(f)
		msg += " with failure " + string(b)
	}
	return msg
}

func (r *fxReplay) completed() bool { return r.refused == nil && r.status == check.Completed }

// fixtureRun is the fixture run on one Harness.
type fixtureRun struct {
	h        *fxSide
	manifest *fixture.Manifest
	session  string
	source   string
	// skip and remedy say why the fixture cannot run here: every spec
	// that needs it is then unverified (never passed).
	skip, remedy string
	// sources maps each source event that recorded a dependency to its
	// key; keyEvent each fixture key to the event the request names (the
	// last source event that recorded it).
	sources  replaydet.Sources
	keyEvent map[string]string
	uploads  map[string]string // fixture artifact id -> this Harness's
	// request and exactRequest are the bodies sent.
	request, exactRequest []byte
	overrides             []*fxReplay // the with_overrides replays, in order
	exact                 *fxReplay
}

// Remedies of the fixture's prerequisites.
const (
	remedyFxSteps   = "implement the replay steps of the conform.scenarios hook (docs/scenarios.md, \"Replay steps: recorded dependencies\"): clock_read, model_call, mcp_call, host_fact and secret_read"
	remedyFxUpload  = "keep the bytes of an Artifact registered with content_base64 (docs/interpretations.md#artifact-upload) and serve them at GET /v1/artifacts/{id}/content, so the fixture's artifact overrides can name them"
	remedyFxKeys    = "record the fixture's dependencies under the recommended override keys (spec 002, \"Override keys\"): time:started_at, llm:main:1, mcp:search:call_0002, host:git:call_0003, secret:deploy_token"
	remedyFxReplay  = "advertise capabilities.replay: true in discovery and offer POST /v1/tasks/{id}/replay (docs/replay.md, \"The replay surface a target offers\")"
	remedyFxReceipt = "issue a receipt for every finished replay task (receipt_id on the task, GET /v1/tasks/{id}/receipts)"
	remedyFxDet001  = "make the fixture's with_overrides replay complete (RPLY-DET-001, reported by its own spec)"
)

// fxShared is the target's fixture run, made by the first spec that needs
// it. A setup that ended on a transport error leaves it unmade: the next
// spec tries again.
var fxShared struct {
	r   *fixtureRun
	gen int64 // suite.Restarts() when it was made
}

// theFixture returns the target's fixture run, making it on first use. A
// target without the scenario hook cannot run the fixture's source task:
// the spec is unverified.
func theFixture(ctx context.Context) *fixtureRun {
	GinkgoHelper()
	if !suite.Env().Discovery.Claims(requirements.Replay) {
		// Asked for the level anyway (--levels replay): not claimed, so
		// never judged, and never passed.
		suite.Unverified("the target does not advertise replay (capabilities.replay), so it is not asked to replay the fixture", remedyFxReplay)
	}
	if suite.Env().Discovery.Scenarios() == "" {
		suite.Unverified("the target does not advertise the conform.scenarios hook, so the fixture's source task (its recorded dependencies) cannot be run on it",
			remedyFxSteps)
	}
	if fxShared.r == nil || fxShared.gen != suite.Restarts() {
		gen := suite.Restarts()
		fxShared.r, fxShared.gen = runFixture(ctx, fxTarget, 2), gen
	}
	// Its source task is driven by the hook's replay steps, whichever spec
	// made it (docs/interpretations.md#hook-attested).
	suite.UsedHook(evidence.HookScenarios, "the replay fixture's source task, run by its replay steps")
	return fxShared.r
}

// usable ends the spec, unverified, when the fixture could not run.
func (r *fixtureRun) usable() {
	GinkgoHelper()
	if r.skip != "" {
		suite.Unverified(r.skip, r.remedy)
	}
}

// completedReplay returns the first with_overrides replay, ending the spec
// unverified when it did not complete (RPLY-DET-001's finding).
func (r *fixtureRun) completedReplay() *fxReplay {
	GinkgoHelper()
	r.usable()
	o := r.overrides[0]
	if !o.completed() {
		suite.Unverified("the fixture's replay did not complete on "+r.h.name+", so there is nothing to judge: "+o.ended(), remedyFxDet001)
	}
	return o
}

// runFixture runs the fixture on h: the source task, the uploads, n
// with_overrides replays and one exact replay.
func runFixture(ctx context.Context, h *fxSide, n int) *fixtureRun {
	GinkgoHelper()
	m, err := fixture.Load()
	if err != nil {
		Fail("fixtures/replay: " + err.Error()) // an embedded fixture that does not load is the suite's bug
	}
	r := &fixtureRun{h: h, manifest: m, sources: replaydet.Sources{}, keyEvent: map[string]string{}, uploads: map[string]string{}}
	// The fixture's secrets are canaries: they must never show in a
	// transcript or report either.
	suite.Env().Redactor.Add(fixture.SecretRecorded, fixture.SecretOverride, base64.StdEncoding.EncodeToString([]byte(fixture.SecretOverride)))
	if !r.start(ctx) || !r.recorded(ctx) || !r.upload(ctx) {
		return r
	}
	req, err := fixture.Read(m.Scenario.Request)
	if err != nil {
		Fail("fixtures/replay: " + err.Error())
	}
	if r.request, err = r.rewrite(req); err != nil {
		Fail("fixtures/replay: " + err.Error())
	}
	if r.exactRequest, err = fixture.Read(m.Scenario.ExactRequest); err != nil {
		Fail("fixtures/replay: " + err.Error())
	}
	for i := range n {
		r.overrides = append(r.overrides, r.replay(ctx, fmt.Sprintf("the fixture's with_overrides replay %d", i+1), r.request))
	}
	r.exact = r.replay(ctx, "the fixture's exact replay", r.exactRequest)
	return r
}

// start creates a session and runs the fixture's source task to its end.
func (r *fixtureRun) start(ctx context.Context) bool {
	GinkgoHelper()
	ws, err := r.workspace(ctx)
	if err != nil {
		r.skip, r.remedy = "no workspace for the fixture's session: "+err.Error(), suite.RemedyWorkspace
		return false
	}
	resp := r.h.do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})
	s, _ := resp.Object()
	if r.session, _ = s["id"].(string); resp.Status/100 != 2 || r.session == "" {
		r.skip, r.remedy = fmt.Sprintf("%s: no session for the fixture's source task", resp), "fix the Core failures this run reports (sessions, task submission)"
		return false
	}
	steps, err := r.manifest.SourceScenario()
	if err != nil {
		Fail("fixtures/replay: " + err.Error())
	}
	body := map[string]any{
		"input":    map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "conform replay determinism fixture", "visibility": "public"}}},
		"metadata": map[string]any{"conform.scenario": json.RawMessage(steps)},
	}
	resp = r.h.do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: body})
	t, _ := resp.Object()
	r.source, _ = t["id"].(string)
	switch {
	case resp.Status == http.StatusBadRequest:
		r.skip, r.remedy = fmt.Sprintf("%s refused the fixture's source scenario (its replay steps): %s", r.h.name, fxClip(resp.Body)), remedyFxSteps
		return false
	case resp.Status/100 != 2 || r.source == "":
		r.skip, r.remedy = fmt.Sprintf("%s: the fixture's source task was not accepted", resp), "fix the Core failures this run reports (task submission)"
		return false
	}
	task, why := r.await(ctx, r.source)
	switch {
	case why != "":
		r.skip, r.remedy = "the fixture's source task: "+why, "fix the Core failures this run reports (task reads, the scenario contract)"
		return false
	case task["status"] != check.Completed:
		r.skip, r.remedy = fmt.Sprintf("the fixture's source task %s ended %v, not COMPLETED, so it has no history to replay", r.source, task["status"]), remedyFxSteps
		return false
	}
	return true
}

// workspace finds a workspace: the run's on the target, a new one on the
// reference Harness.
func (r *fixtureRun) workspace(ctx context.Context) (string, error) {
	GinkgoHelper()
	if r.h.ref == nil {
		return suite.Workspace(ctx)
	}
	key := suite.Key("conform-replay-ref")
	resp := r.h.do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/workspaces", Body: map[string]any{"name": key, "root": "conform://" + key}})
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || id == "" {
		return "", fmt.Errorf("%s", resp)
	}
	return id, nil
}

// recorded reads the source task's events: which event recorded each
// dependency (payload.override_key). The fixture's request names its
// dependencies by the fixture's keys; a Harness that records them under
// other keys (RPLY-OVERRIDE-002 and -003, SHOULDs, judge that) cannot
// take it.
func (r *fixtureRun) recorded(ctx context.Context) bool {
	GinkgoHelper()
	evs, err := r.events(ctx, r.source)
	if err != nil {
		r.skip, r.remedy = fmt.Sprintf("the events of the fixture's source task %s cannot be read: %v", r.source, err), "fix the Core failures this run reports (event lists)"
		return false
	}
	for _, e := range evs {
		p, _ := e["payload"].(map[string]any)
		key, _ := p["override_key"].(string)
		id, _ := e["id"].(string)
		if key != "" && id != "" {
			r.sources[id] = key
			r.keyEvent[key] = id // the last one wins
		}
	}
	var missing, got []string
	for _, d := range r.manifest.Scenario.Dependencies {
		if r.keyEvent[d.Key] == "" {
			missing = append(missing, d.Key)
		}
	}
	for k := range r.keyEvent {
		got = append(got, k)
	}
	slices.Sort(got)
	if len(missing) > 0 {
		r.skip = fmt.Sprintf("no event of the fixture's source task %s carries payload.override_key %s (it recorded %s): the fixture's request names its dependencies by those keys",
			r.source, strings.Join(missing, ", "), fxOrNone(got))
		r.remedy = remedyFxKeys
		return false
	}
	return true
}

// upload registers the bytes the fixture's artifact overrides name, and
// checks (where the artifact's visibility lets it be read back) that the
// Harness kept them.
func (r *fixtureRun) upload(ctx context.Context) bool {
	GinkgoHelper()
	for _, u := range r.manifest.Scenario.Uploads {
		b, err := u.Bytes()
		if err != nil {
			Fail("fixtures/replay: " + err.Error())
		}
		sum := sha256.Sum256(b)
		hexSum := hex.EncodeToString(sum[:])
		body := map[string]any{"kind": u.Kind, "mime_type": u.MimeType, "visibility": u.Visibility, "sha256": hexSum, "session_id": r.session,
			"content_base64": base64.StdEncoding.EncodeToString(b), "metadata": map[string]any{"conform.run": suite.Env().RunID, "conform.fixture_artifact": u.ArtifactID}}
		resp := r.h.do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/artifacts", Body: body})
		a, _ := resp.Object()
		id, _ := a["id"].(string)
		if resp.Status/100 != 2 || id == "" {
			r.skip, r.remedy = fmt.Sprintf("%s: the artifact the fixture's override names as %s could not be registered", resp, u.ArtifactID), remedyFxUpload
			return false
		}
		r.uploads[u.ArtifactID] = id
		if u.Visibility == "receipt_only" {
			continue // not readable back by design; the replay's answer tells
		}
		c := r.h.do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(id) + "/content"})
		got := sha256.Sum256(c.Body)
		if c.Status != http.StatusOK || got != sum {
			r.skip, r.remedy = fmt.Sprintf("%s: the bytes uploaded for the fixture's artifact %s (artifact %s) are not served back", c, u.ArtifactID, id), remedyFxUpload
			return false
		}
	}
	return true
}

// rewrite turns the fixture's request into this Harness's: each override's
// event_id the event that recorded its key here, each artifact_id the
// artifact uploaded for it.
func (r *fixtureRun) rewrite(body []byte) ([]byte, error) {
	var req map[string]any
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, err
	}
	ov, _ := req["override"].(map[string]any)
	for key, v := range ov {
		o, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("override %s is not an object", key)
		}
		if _, ok := o["event_id"]; ok {
			o["event_id"] = r.keyEvent[key]
		}
		if a, ok := o["artifact_id"].(string); ok {
			id, up := r.uploads[a]
			if !up {
				return nil, fmt.Errorf("override %s names artifact %s, which no upload provides", key, a)
			}
			o["artifact_id"] = id
		}
	}
	return json.Marshal(req)
}

// replay sends one replay request of the source task and follows the
// replay task to its end and its receipt.
func (r *fixtureRun) replay(ctx context.Context, what string, body []byte) *fxReplay {
	GinkgoHelper()
	rp := &fxReplay{what: what}
	resp := r.h.do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(r.source) + "/replay", RawBody: body})
	t, _ := resp.Object()
	if rp.id, _ = t["id"].(string); resp.Status/100 != 2 || rp.id == "" {
		rp.refused = resp
		return rp
	}
	task, why := r.await(ctx, rp.id)
	if why != "" {
		rp.status, rp.task = "unfinished ("+why+")", t
		return rp
	}
	rp.task = task
	rp.status, _ = task["status"].(string)
	r.readReceipt(ctx, rp)
	return rp
}

// readReceipt reads a finished replay task's receipt: the one its
// receipt_id names, else the one its receipt list holds for it. It reads
// whatever discovery claims: a Replay server owes receipt deltas without
// claiming Receipts (docs/interpretations.md#replay-only-deltas).
func (r *fixtureRun) readReceipt(ctx context.Context, rp *fxReplay) {
	GinkgoHelper()
	var why []string
	if r.h.ref == nil && !suite.Env().Discovery.Claims(requirements.Receipts) {
		why = append(why, "the target does not advertise receipts (capabilities.receipts)")
	}
	if id, _ := rp.task["receipt_id"].(string); id != "" {
		resp := r.h.do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)})
		if _, err := check.DecodeReceipt(resp.Body); resp.Status == http.StatusOK && err == nil {
			rp.receipt = resp.Body
			return
		}
		why = append(why, fmt.Sprintf("%s: its receipt_id does not serve a receipt", resp))
	}
	resp := r.h.do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(rp.id) + "/receipts"})
	list, err := check.ReceiptList(resp)
	if err != nil {
		rp.noReceipt = fmt.Sprintf("%s (task %s): %s", rp.what, rp.id, strings.Join(append(why, fmt.Sprintf("%s: %v", resp, err)), "; "))
		return
	}
	for _, raw := range list {
		if d, err := check.DecodeReceipt(raw); err == nil && d.Str("subject", "id") == rp.id {
			rp.receipt = raw
		}
	}
	if rp.receipt == nil && len(list) > 0 {
		rp.receipt = list[len(list)-1]
	}
	if rp.receipt == nil {
		rp.noReceipt = fmt.Sprintf("%s (task %s) has no receipt: %s", rp.what, rp.id, strings.Join(append(why, "it names no receipt_id and lists no receipt"), "; "))
	}
}

// await polls a task until it ends (or its status leaves the TaskStatus
// enum), within the task timeout; why says why it did not.
func (r *fixtureRun) await(ctx context.Context, id string) (map[string]any, string) {
	GinkgoHelper()
	limit := suite.Env().Config.Timeouts.Task
	deadline := time.Now().Add(limit)
	var pace suite.Pace
	for {
		resp := r.h.do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)})
		m, err := resp.Object()
		if resp.Status != http.StatusOK || err != nil {
			return nil, fmt.Sprintf("%s: cannot read task %s", resp, id)
		}
		s, _ := m["status"].(string)
		switch {
		case check.Terminal(s):
			return m, ""
		case !check.KnownStatus(s):
			return nil, fmt.Sprintf("task %s has status %v, which is not a TaskStatus value", id, m["status"])
		case time.Now().After(deadline):
			return nil, fmt.Sprintf("task %s is still %s after %s", id, s, limit)
		}
		if !pace.Wait(ctx) {
			return nil, fmt.Sprintf("waiting for task %s: %v", id, ctx.Err())
		}
	}
}

// events reads a task's events, following at most 20 pages.
func (r *fixtureRun) events(ctx context.Context, task string) ([]map[string]any, error) {
	GinkgoHelper()
	var out []map[string]any
	q := url.Values{"limit": {"200"}}
	for range 20 {
		resp := r.h.do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(task) + "/events", Query: q})
		if err := check.Status(resp, http.StatusOK); err != nil {
			return out, err
		}
		p, err := check.ListPage(resp)
		if err != nil {
			return out, err
		}
		out = append(out, p.Items...)
		if !p.HasMore || p.NextCursor == "" {
			return out, nil
		}
		q.Set("after_event_id", p.NextCursor)
	}
	return out, fmt.Errorf("more than 20 pages of events")
}

// expect is what the receipt of a completed with_overrides replay is
// judged against.
func (r *fixtureRun) expect() replaydet.Expect {
	GinkgoHelper()
	e, err := replaydet.ExpectFrom(r.request, r.sources)
	if err != nil {
		Fail("the suite's own replay request: " + err.Error())
	}
	return e
}

func fxOrNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}

// clip shortens a body for a message.
func fxClip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}
