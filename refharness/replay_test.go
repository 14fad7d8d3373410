package refharness

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gowebpki/jcs"

	replayfx "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/fidelity"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/tape"
)

// The fixture scenario: the source run of fixtures/replay as replay steps
// (docs/scenarios.md), its recorded material read from the fixture's
// source tape, so that replaying it with the fixture's request must give
// the fixture receipt's materials and deltas.
type fixtureRun struct {
	steps    []map[string]any
	request  map[string]any // requests/valid/with-overrides.json
	receipt  map[string]any // receipts/replay-overrides.json
	mcpBytes []byte         // the artifact the mcp override references
}

func loadFixtureRun(t *testing.T) *fixtureRun {
	t.Helper()
	raw, err := replayfx.Read("tapes/source.tape")
	if err != nil {
		t.Fatal(err)
	}
	tp, err := tape.Read(bytes.NewReader(raw), "source.tape")
	if err != nil {
		t.Fatal(err)
	}
	payload := func(p tape.Payload) []byte {
		if !p.Spilled {
			return []byte(p.Text)
		}
		b, err := replayfx.Read("tapes/source.tape.cas/" + p.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	clock := tp.Records[0].Body.(*tape.ClockRead)
	llm := tp.Records[2].Body.(*tape.LLMCall)
	mcp := tp.Records[3].Body.(*tape.MCPCall)
	proc := tp.Records[4].Body.(*tape.ProcessSpawn)
	fr := &fixtureRun{steps: []map[string]any{
		step("clock_read", "label", "started_at", "value_ms", clock.ValueMs),
		step("model_call", "call_id", "main:1", "response", json.RawMessage(payload(llm.Response))),
		step("mcp_call", "server", "search", "call_id", "call_0002", "arguments", map[string]any{"query": "replay"},
			"result", json.RawMessage(payload(mcp.Response))),
		step("host_fact", "capability", "git", "call_id", "call_0003", "value", string(payload(proc.Stdout))),
		step("secret_read", "name", "deploy_token", "secret", replayfx.SecretRecorded),
		step("complete", "summary", "fixture source ran"),
	}}
	for path, dst := range map[string]*map[string]any{"requests/valid/with-overrides.json": &fr.request, "receipts/replay-overrides.json": &fr.receipt} {
		b, err := replayfx.Read(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, dst); err != nil {
			t.Fatal(err)
		}
	}
	if fr.mcpBytes, err = replayfx.Read("artifacts/art_replay_mcp_search_0002.json"); err != nil {
		t.Fatal(err)
	}
	return fr
}

// sourceKeys maps each override key of task id's events to the last event
// recording it.
func (h *harness) sourceKeys(id string) map[string]string {
	h.t.Helper()
	_, evs := h.taskEvents(id)
	out := map[string]string{}
	for _, e := range evs {
		p, _ := e["payload"].(map[string]any)
		if k, _ := p["override_key"].(string); k != "" {
			out[k] = e["id"].(string)
		}
	}
	return out
}

// upload registers an artifact of session sess with content and returns its id.
func (h *harness) upload(sess string, content []byte, vis string) string {
	h.t.Helper()
	r := h.mustOK(h.do("POST", "/v1/artifacts", map[string]any{"kind": "other", "mime_type": "application/octet-stream", "visibility": vis,
		"session_id": sess, "content_base64": base64.StdEncoding.EncodeToString(content)}), "upload artifact")
	return r.str("id")
}

// fixtureRequest is the fixture's override request for source task src:
// its event ids and artifact ids mapped to the live ones.
func (h *harness) fixtureRequest(fr *fixtureRun, sess, src string) (body map[string]any, mcpArt, secretArt string) {
	h.t.Helper()
	keys := h.sourceKeys(src)
	mcpArt = h.upload(sess, fr.mcpBytes, "internal")
	secretArt = h.upload(sess, []byte(replayfx.SecretOverride), "receipt_only")
	b, _ := json.Marshal(fr.request)
	json.Unmarshal(b, &body)
	for key, o := range body["override"].(map[string]any) {
		om := o.(map[string]any)
		if keys[key] == "" {
			h.t.Fatalf("the source recorded no event under %s (keys %v)", key, keys)
		}
		om["event_id"] = keys[key]
		switch om["artifact_id"] {
		case "art_replay_mcp_search_0002":
			om["artifact_id"] = mcpArt
		case "art_replay_secret_deploy_token":
			om["artifact_id"] = secretArt
		}
	}
	return body, mcpArt, secretArt
}

// runSource runs steps to the end in a new session and returns both.
func (h *harness) runSource(steps []map[string]any) (sess, task string) {
	h.t.Helper()
	sess = h.session()
	task = h.submit(sess, steps).str("id")
	h.waitTerminalStatus(task)
	return sess, task
}

func (h *harness) waitTerminalStatus(id string) *Task {
	h.t.Helper()
	for {
		h.s.mu.RLock()
		t, _ := h.s.st.tasks.get(id)
		wake := h.s.notify
		h.s.mu.RUnlock()
		if t != nil && Terminal(t.Status) {
			return t
		}
		<-wake
	}
}

// replay asks for a replay of task src and, when it is accepted, waits for
// the replay task to end.
func (h *harness) replay(src string, body any, hdr ...string) (resp, *Task) {
	h.t.Helper()
	r := h.do("POST", "/v1/tasks/"+src+"/replay", body, hdr...)
	if r.Code != 202 {
		return r, nil
	}
	return r, h.waitTerminalStatus(r.str("id"))
}

// tapeOf returns task id's tape and its sidecar payloads, from its
// artifacts as a client reads them.
func (h *harness) tapeOf(id string) ([]byte, map[string][]byte) {
	h.t.Helper()
	var tapeBytes []byte
	cas := map[string][]byte{}
	tapeID := ""
	arts := h.must(200, h.do("GET", "/v1/artifacts?task_id="+id+"&limit=200", nil), "artifacts").list()
	for _, a := range arts {
		meta, _ := a["metadata"].(map[string]any)
		if meta["conform.tape"] == true {
			tapeID = a["id"].(string)
			tapeBytes = h.content(tapeID)
		}
	}
	for _, a := range arts {
		meta, _ := a["metadata"].(map[string]any)
		if meta["conform.tape_cas"] == tapeID && tapeID != "" {
			cas[meta["hash"].(string)] = h.content(a["id"].(string))
		}
	}
	if tapeBytes == nil {
		h.t.Fatalf("task %s has no tape artifact among %d artifacts", id, len(arts))
	}
	return tapeBytes, cas
}

func (h *harness) content(id string) []byte {
	h.t.Helper()
	r := h.do("GET", "/v1/artifacts/"+id+"/content", nil)
	if r.Code != 200 {
		h.t.Fatalf("artifact %s content: %d %s", id, r.Code, r.Raw)
	}
	return r.Raw
}

func (h *harness) receiptOf(task string) resp {
	h.t.Helper()
	tk := h.must(200, h.do("GET", "/v1/tasks/"+task, nil), "task")
	rid := tk.str("receipt_id")
	return h.must(200, h.do("GET", "/v1/receipts/"+rid, nil), "receipt")
}

// TestReplayFixtureScenario runs the fixture scenario, replays it with the
// fixture's override request, and compares what the suite's determinism
// check compares: the receipt's materials and deltas (ids mapped), its
// metadata and determinism, with the fixture's expected receipt; and the
// tapes with the fidelity oracle.
func TestReplayFixtureScenario(t *testing.T) {
	h := newHarness(t, Options{})
	fr := loadFixtureRun(t)
	sess, src := h.runSource(fr.steps)
	body, mcpArt, secretArt := h.fixtureRequest(fr, sess, src)
	r, rt := h.replay(src, body)
	if r.Code != 202 {
		t.Fatalf("replay: %d %s", r.Code, r.Raw)
	}
	if rt.Status != StatusCompleted {
		t.Fatalf("replay task ended %s: %+v", rt.Status, rt.Failure)
	}
	gotResp := h.receiptOf(rt.ID)
	got := gotResp.Body
	want := fr.receipt
	keys := h.sourceKeys(src)
	// Map the fixture's ids to the live ones.
	evMap := map[string]string{"evt_src_0005": keys["host:git:call_0003"], "evt_src_0003": keys["llm:main:1"], "evt_src_0004": keys["mcp:search:call_0002"],
		"evt_src_0006": keys["secret:deploy_token"], "evt_src_0001": keys["time:started_at"], "art_replay_mcp_search_0002": mcpArt,
		"art_replay_secret_deploy_token": secretArt, "artifact://art_replay_mcp_search_0002": "artifact://" + mcpArt,
		"artifact://art_replay_secret_deploy_token": "artifact://" + secretArt}
	mapIDs := func(v any) any {
		b, _ := json.Marshal(v)
		var out any
		json.Unmarshal(b, &out)
		var walk func(any) any
		walk = func(v any) any {
			switch x := v.(type) {
			case string:
				if m, ok := evMap[x]; ok {
					return m
				}
			case map[string]any:
				for k, vv := range x {
					x[k] = walk(vv)
				}
			case []any:
				for i := range x {
					x[i] = walk(x[i])
				}
			}
			return v
		}
		return walk(out)
	}
	canon := func(v any) string {
		b, _ := json.Marshal(v)
		c, err := jcs.Transform(b)
		if err != nil {
			t.Fatal(err)
		}
		return string(c)
	}
	wantMats := want["replay_input"].(map[string]any)["materials"].([]any)
	gotMats := got["replay_input"].(map[string]any)["materials"].([]any)
	if g, w := canon(gotMats[1:]), canon(mapIDs(wantMats[1:])); g != w {
		t.Errorf("override materials differ from the fixture's:\n got %s\nwant %s", g, w)
	}
	if g, w := canon(got["deltas"]), canon(mapIDs(want["deltas"])); g != w {
		t.Errorf("deltas differ from the fixture's:\n got %s\nwant %s", g, w)
	}
	wantLog := wantMats[0].(map[string]any)
	gotLog := gotMats[0].(map[string]any)
	if gotLog["kind"] != "event_log" || gotLog["id"] != "evlog_"+src || gotLog["content_type"] != wantLog["content_type"] ||
		gotLog["uri"] != "artifact://"+tapeArtifactID(src) {
		t.Errorf("event log material = %v", gotLog)
	}
	for _, f := range []string{"metadata", "subject", "replay_input"} {
		wm := want[f].(map[string]any)
		gm := got[f].(map[string]any)
		for k := range wm {
			switch {
			case f == "replay_input" && k == "materials", f == "subject" && k == "id":
				continue
			case f == "metadata" && k == "source_task_id":
				if gm[k] != src {
					t.Errorf("metadata.source_task_id = %v, want %s", gm[k], src)
				}
				continue
			}
			if canon(gm[k]) != canon(wm[k]) {
				t.Errorf("%s.%s = %v, want %v", f, k, gm[k], wm[k])
			}
		}
	}
	for _, f := range []string{"model_route", "cost", "side_effects", "final_artifacts", "redactions", "trust", "autonomy_budget"} {
		if canon(got[f]) != canon(want[f]) {
			t.Errorf("%s = %s, want the fixture's %s", f, canon(got[f]), canon(want[f]))
		}
	}
	// The receipt verifies with the harness's key directory, and holds
	// neither secret.
	raw := gotResp.Raw
	h.s.mu.RLock()
	ks := h.s.st.rc.keySet()
	h.s.mu.RUnlock()
	if res := receipt.Verify(raw, receipt.Options{Keys: ks}); !res.Valid() {
		t.Errorf("replay receipt does not verify: %v", res.Findings)
	}
	for _, sec := range []string{replayfx.SecretRecorded, replayfx.SecretOverride} {
		if bytes.Contains(raw, []byte(sec)) {
			t.Errorf("the replay receipt holds a secret")
		}
		_, evs := h.taskEvents(rt.ID)
		b, _ := json.Marshal(evs)
		if bytes.Contains(b, []byte(sec)) {
			t.Errorf("the replay task's events hold a secret")
		}
	}

	// Tapes: an exact replay equals the source in the semantic mode; the
	// override replay diverges exactly at the overridden records (all four
	// recorded dependencies: clock 0, llm 1, mcp 2, host 3).
	srcTape, srcCAS := h.tapeOf(src)
	_, exact := h.replay(src, nil)
	if exact.Status != StatusCompleted {
		t.Fatalf("exact replay ended %s: %+v", exact.Status, exact.Failure)
	}
	exactTape, exactCAS := h.tapeOf(exact.ID)
	if len(srcCAS) != 1 || len(exactCAS) != 1 {
		t.Errorf("sidecars: source %d payloads, exact replay %d; want the spilled MCP response each", len(srcCAS), len(exactCAS))
	}
	// The tape and its sidecar, as a client downloads them, are a valid
	// seed-003 tape (conform tape validate's check).
	dir := t.TempDir()
	path := filepath.Join(dir, src+".tape")
	if err := os.WriteFile(path, srcTape, 0o600); err != nil {
		t.Fatal(err)
	}
	for h, b := range srcCAS {
		if _, err := (tape.CAS{Dir: tape.CASDir(path)}).Put(b); err != nil {
			t.Fatal(err)
		} else if tape.Hash(b) != h {
			t.Errorf("sidecar artifact named %s holds bytes hashing to %s", h, tape.Hash(b))
		}
	}
	if rep, err := tape.Validate(path); err != nil || !rep.Valid() {
		t.Errorf("the source tape does not validate: %v %+v", err, rep)
	}
	rep := compareTapes(t, srcTape, exactTape)
	if rep.Status != fidelity.StatusEqual || rep.Compared != 4 {
		t.Errorf("source vs exact replay: %s, %d compared: %v", rep.Status, rep.Compared, rep.Divergences)
	}
	overTape, _ := h.tapeOf(rt.ID)
	rep = compareTapes(t, srcTape, overTape)
	at := map[int]bool{}
	for _, d := range rep.Divergences {
		if d.Index != nil {
			at[*d.Index] = true
		}
	}
	if rep.Status != fidelity.StatusDiverged || len(at) != 4 || !at[0] || !at[1] || !at[2] || !at[3] {
		t.Errorf("source vs override replay: %s, divergences %v; want at records 0..3 exactly", rep.Status, rep.Divergences)
	}
	for _, d := range rep.Divergences {
		if d.Category != fidelity.FieldMismatch && d.Category != fidelity.PayloadHashMismatch {
			t.Errorf("override replay divergence %v: want a value or payload difference only", d)
		}
	}
	for _, tp := range [][]byte{srcTape, overTape} {
		if bytes.Contains(tp, []byte(replayfx.SecretRecorded)) || bytes.Contains(tp, []byte(replayfx.SecretOverride)) {
			t.Errorf("a tape holds a secret")
		}
	}
}

func compareTapes(t *testing.T, a, b []byte) *fidelity.Report {
	t.Helper()
	rep, err := fidelity.Compare(fidelity.Memory("source", a), fidelity.Memory("replay", b), fidelity.Options{Mode: fidelity.Semantic})
	if err != nil {
		t.Fatalf("compare: %v", err)
	}
	return rep
}

// errParam is an error answer's param and details.
func errParam(r resp) (code, param string, details map[string]any) {
	e, _ := r.Body["error"].(map[string]any)
	code, _ = e["code"].(string)
	param, _ = e["param"].(string)
	details, _ = e["details"].(map[string]any)
	return
}

// Every invalid request of the fixtures is refused as docs/replay.md says,
// naming the member; a refused request creates no task. The SHOULD-level
// problems (a key of another form, a secret override that is not
// receipt_only) are not refused for what they are.
func TestReplayRequestRefusals(t *testing.T) {
	h := newHarness(t, Options{})
	fr := loadFixtureRun(t)
	sess, src := h.runSource(fr.steps)
	_, _, secretArt := h.fixtureRequest(fr, sess, src)
	m, err := replayfx.Load()
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { h.s.mu.RLock(); defer h.s.mu.RUnlock(); return h.s.st.tasks.len() }
	before := count()
	want := map[string]struct {
		status int
		param  string
	}{
		"requests/invalid/unknown-mode.json":       {400, "mode"},
		"requests/invalid/unknown-kind.json":       {400, "override.llm:main:1.kind"},
		"requests/invalid/missing-kind.json":       {400, "override.llm:main:1.kind"},
		"requests/invalid/bad-sha256-pattern.json": {400, "override.mcp:search:call_0002.sha256"},
		"requests/invalid/checkpoint-missing.json": {400, "checkpoint_id"},
		"requests/invalid/checkpoint-null.json":    {400, "checkpoint_id"},
		"requests/invalid/kind-mismatch.json":      {400, "override.llm:main:1.kind"},
		"requests/invalid/material-missing.json":   {400, "override.llm:main:1"},
		"requests/invalid/hash-mismatch.json":      {400, "override.llm:main:1.sha256"},
		"requests/invalid/overrides-in-exact.json": {400, "override"},
		// SHOULDs, accepted as such: what refuses them is that the source
		// recorded no model:main:1, and that the fixture's event ids are
		// no events of this Harness.
		"requests/invalid/bad-key-prefix.json": {404, "override.model:main:1"},
		"requests/invalid/secret-public.json":  {404, "override.secret:deploy_token.event_id"},
	}
	for _, rqst := range m.Requests {
		if rqst.Valid() {
			continue
		}
		w, ok := want[rqst.Path]
		if !ok {
			t.Errorf("%s: no expectation", rqst.Path)
			continue
		}
		b, _ := replayfx.Read(rqst.Path)
		r := h.do("POST", "/v1/tasks/"+src+"/replay", b)
		code, param, _ := errParam(r)
		if r.Code != w.status || param != w.param {
			t.Errorf("%s (%s): %d %s param %q, want %d param %q (%s)", rqst.Path, rqst.Problem, r.Code, code, param, w.status, w.param, r.Raw)
		}
	}
	// The secret override with visibility public is accepted once its
	// artifact exists (a SHOULD: receipt_only).
	r := h.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "with_overrides", "override": map[string]any{
		"secret:deploy_token": map[string]any{"kind": "secret_value", "artifact_id": secretArt, "visibility": "public"}}})
	if r.Code != 202 {
		t.Errorf("a public secret override: %d %s, want 202", r.Code, r.Raw)
	}
	before++
	h.waitTerminalStatus(r.str("id"))

	keys := h.sourceKeys(src)
	for _, tc := range []struct {
		name    string
		body    any
		status  int
		param   string
		details map[string]any
	}{
		{"unknown checkpoint id", map[string]any{"mode": "from_checkpoint", "checkpoint_id": "ckpt_none"}, 404, "checkpoint_id", map[string]any{"kind": "event", "id": "ckpt_none"}},
		{"unknown checkpoint event", map[string]any{"mode": "from_checkpoint", "checkpoint_event_id": "event_999999"}, 404, "checkpoint_event_id", map[string]any{"kind": "event", "id": "event_999999"}},
		{"unknown artifact", map[string]any{"mode": "with_overrides", "override": map[string]any{"mcp:search:call_0002": map[string]any{"kind": "mcp_tool_return", "artifact_id": "artifact_none"}}},
			404, "override.mcp:search:call_0002.artifact_id", map[string]any{"kind": "artifact", "id": "artifact_none"}},
		{"unrecorded key", map[string]any{"mode": "with_overrides", "override": map[string]any{"llm:other": map[string]any{"kind": "llm_provider_response", "value": map[string]any{}}}},
			404, "override.llm:other", map[string]any{"kind": "host", "id": "llm:other"}},
		{"unknown override event", map[string]any{"mode": "with_overrides", "override": map[string]any{"time:started_at": map[string]any{"kind": "time", "value": 1, "event_id": "event_999999"}}},
			404, "override.time:started_at.event_id", map[string]any{"kind": "event", "id": "event_999999"}},
		{"override event of another key", map[string]any{"mode": "with_overrides", "override": map[string]any{"time:started_at": map[string]any{"kind": "time", "value": 1, "event_id": keys["llm:main:1"]}}},
			400, "override.time:started_at.event_id", nil},
		{"clock substitute not an integer", map[string]any{"mode": "with_overrides", "override": map[string]any{"time:started_at": map[string]any{"kind": "time", "value": "noon"}}},
			400, "override.time:started_at", nil},
		{"host fact substitute not a string", map[string]any{"mode": "with_overrides", "override": map[string]any{"host:git:call_0003": map[string]any{"kind": "host_fact", "value": 1}}},
			400, "override.host:git:call_0003", nil},
		{"artifact hash mismatch", map[string]any{"mode": "with_overrides", "override": map[string]any{"secret:deploy_token": map[string]any{"kind": "secret_value", "artifact_id": secretArt,
			"sha256": "sha256:" + strings.Repeat("0", 64)}}}, 400, "override.secret:deploy_token.sha256", nil},
		{"refresh", map[string]any{"metadata": map[string]any{"refresh": true}}, 400, "metadata.refresh", nil},
		{"not an object", `[1]`, 400, "", nil},
	} {
		r := h.do("POST", "/v1/tasks/"+src+"/replay", tc.body)
		code, param, details := errParam(r)
		if r.Code != tc.status || param != tc.param {
			t.Errorf("%s: %d %s param %q, want %d param %q (%s)", tc.name, r.Code, code, param, tc.status, tc.param, r.Raw)
		}
		for k, v := range tc.details {
			if details[k] != v {
				t.Errorf("%s: details %v, want %v", tc.name, details, tc.details)
			}
		}
	}
	wantError(t, h.do("POST", "/v1/tasks/task_none/replay", nil), 404, "resource_not_found", "")
	// A source that has not finished.
	running := h.submit(sess, []map[string]any{step("input_required")}).str("id")
	h.waitStatus(running, StatusInputRequired)
	wantError(t, h.do("POST", "/v1/tasks/"+running+"/replay", nil), 409, "invalid_state_transition", "")
	if got := count(); got != before+1 { // the running task
		t.Errorf("%d tasks after the refusals, want %d: a refused replay made a task", got, before+1)
	}
}

// An exact replay replays the source's agent activity in order, each event
// with a new id, replayed: true and its replay metadata, between the live
// lifecycle and replay.started / replay.completed events; the replay task
// names its source and keeps its session, workspace and input.
func TestReplayExact(t *testing.T) {
	h := newHarness(t, Options{})
	sess, src := h.runSource([]map[string]any{step("emit", "count", 1, "text", "before"), step("clock_read", "label", "t0", "value_ms", 42),
		step("model_call", "call_id", "c1", "response", llmResponse("hello")), step("artifact", "content", "made", "name", "a.txt"),
		step("complete", "summary", "done")})
	r, rt := h.replay(src, nil)
	if r.Code != 202 || rt.Status != StatusCompleted {
		t.Fatalf("replay: %d %s, task %+v", r.Code, r.Raw, rt)
	}
	if r.str("parent_task_id") != src || r.str("session_id") != sess || r.str("id") == src {
		t.Errorf("202 answer: %s", r.Raw)
	}
	got := h.must(200, h.do("GET", "/v1/tasks/"+rt.ID, nil), "task")
	srcTask := h.must(200, h.do("GET", "/v1/tasks/"+src, nil), "source")
	if got.str("parent_task_id") != src || got.str("workspace_id") != srcTask.str("workspace_id") {
		t.Errorf("replay task: %s", got.Raw)
	}
	gi, _ := json.Marshal(got.Body["input"])
	si, _ := json.Marshal(srcTask.Body["input"])
	if !bytes.Equal(gi, si) {
		t.Errorf("replay input %s, want the source's %s", gi, si)
	}
	if meta, _ := got.Body["metadata"].(map[string]any)["replay"].(map[string]any); meta["source_task_id"] != src || meta["mode"] != "exact" {
		t.Errorf("metadata.replay = %v", meta)
	}
	_, srcEvs := h.taskEvents(src)
	kinds, evs := h.taskEvents(rt.ID)
	var wantKinds []string
	var sources []map[string]any
	for _, e := range srcEvs {
		if k := e["event"].(string); replayable(k) {
			wantKinds = append(wantKinds, k)
			sources = append(sources, e)
		}
	}
	want := append(append([]string{"task.submitted", "task.started", "replay.started"}, wantKinds...), "replay.completed", "task.completed")
	if !slices.Equal(kinds, want) {
		t.Fatalf("replay events %v\nwant %v", kinds, want)
	}
	for i, e := range evs[3 : 3+len(sources)] {
		s := sources[i]
		meta, _ := e["replay"].(map[string]any)
		if e["replayed"] != true || e["id"] == s["id"] || meta["original_event_id"] != s["id"] || meta["source_task_id"] != src ||
			meta["replay_task_id"] != rt.ID || meta["mode"] != "exact" || meta["override_key"] != nil || meta["replay_cursor"] == nil {
			t.Errorf("replayed event %d: %v (source %v)", i, e, s)
		}
		gp, sp := e["payload"].(map[string]any), s["payload"].(map[string]any)
		delete(gp, "message_id")
		delete(sp, "message_id")
		if g, w := fmt.Sprint(gp), fmt.Sprint(sp); g != w {
			t.Errorf("replayed %s payload %s, want the source's %s", e["event"], g, w)
		}
	}
	for _, e := range append(evs[:3], evs[3+len(sources):]...) {
		if e["replayed"] != false || e["replay"] != nil {
			t.Errorf("live event %s is marked as replayed: %v", e["event"], e)
		}
	}
	done := evs[len(evs)-2]["payload"].(map[string]any)
	if done["events_replayed"] != float64(len(sources)) || done["overrides_applied"] != float64(0) || done["source_task_id"] != src {
		t.Errorf("replay.completed payload %v", done)
	}
	// The replayed agent messages are new session messages.
	msgs := h.must(200, h.do("GET", "/v1/sessions/"+sess+"/messages?limit=200", nil), "messages").list()
	var texts []string
	for _, m := range msgs {
		for _, p := range m["parts"].([]any) {
			texts = append(texts, fmt.Sprint(p.(map[string]any)["text"]))
		}
	}
	if c := strings.Count(strings.Join(texts, "|"), "hello"); c != 2 {
		t.Errorf("session messages %v: want the model's answer twice (source and replay)", texts)
	}
	// The replayed events come over SSE marked as well.
	p := &probeEnv{harness: h}
	fs, _, err := p.frames("/v1/tasks/"+rt.ID+"/stream", "")
	if err != nil {
		t.Fatal(err)
	}
	marked := 0
	for _, f := range fs {
		var e map[string]any
		if json.Unmarshal([]byte(f.Data), &e) == nil && e["replayed"] == true && e["replay"] != nil {
			marked++
		}
	}
	if marked != len(sources) {
		t.Errorf("%d SSE frames marked replayed, want %d", marked, len(sources))
	}
}

// from_checkpoint replays only the events after the boundary, named by
// checkpoint_id or by checkpoint_event_id.
func TestReplayFromCheckpoint(t *testing.T) {
	h := newHarness(t, Options{})
	_, src := h.runSource([]map[string]any{step("clock_read", "label", "t0", "value_ms", 1), step("checkpoint", "checkpoint_id", "ck:1"),
		step("clock_read", "label", "t1", "value_ms", 2)})
	var ckEvent string
	_, evs := h.taskEvents(src)
	for _, e := range evs {
		if e["event"] == "agent.checkpoint" {
			ckEvent = e["id"].(string)
		}
	}
	for _, body := range []map[string]any{{"mode": "from_checkpoint", "checkpoint_id": "ck:1"}, {"mode": "from_checkpoint", "checkpoint_event_id": ckEvent},
		{"mode": "from_checkpoint", "checkpoint_id": "ck:1", "checkpoint_event_id": ckEvent}} {
		r, rt := h.replay(src, body)
		if r.Code != 202 || rt.Status != StatusCompleted {
			t.Fatalf("%v: %d %s", body, r.Code, r.Raw)
		}
		var labels []string
		for _, e := range h.replayedEvents(rt.ID) {
			labels = append(labels, fmt.Sprint(e["payload"].(map[string]any)["label"]))
		}
		if !slices.Equal(labels, []string{"t1"}) {
			t.Errorf("%v replayed %v, want only the reading after the checkpoint", body, labels)
		}
	}
	r := h.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "from_checkpoint", "checkpoint_id": "ck:1", "checkpoint_event_id": evs[0]["id"]})
	if _, param, _ := errParam(r); r.Code != 400 || param != "checkpoint_event_id" {
		t.Errorf("disagreeing checkpoint members: %d %s", r.Code, r.Raw)
	}
}

func (h *harness) replayedEvents(id string) []map[string]any {
	_, evs := h.taskEvents(id)
	var out []map[string]any
	for _, e := range evs {
		if e["replayed"] == true {
			out = append(out, e)
		}
	}
	return out
}

// Material not retained: an exact replay fails naming the event that
// recorded it, without refreshing it; an override replay that supplies it
// completes.
func TestReplayRetainFalse(t *testing.T) {
	h := newHarness(t, Options{})
	_, src := h.runSource([]map[string]any{step("clock_read", "label", "t0", "value_ms", 1),
		step("mcp_call", "server", "s", "call_id", "c", "result", "kept? no", "retain", false)})
	keys := h.sourceKeys(src)
	_, rt := h.replay(src, map[string]any{"mode": "exact"})
	if rt.Status != StatusFailed || rt.Failure == nil || rt.Failure.Code != "replay_dependency_missing" ||
		rt.Failure.Details["kind"] != "event" || rt.Failure.Details["id"] != keys["mcp:s:c"] || rt.Failure.Details["override_key"] != "mcp:s:c" {
		t.Fatalf("exact replay of material not retained: %s %+v", rt.Status, rt.Failure)
	}
	kinds, evs := h.taskEvents(rt.ID)
	failed := evs[len(evs)-2]
	if kinds[len(kinds)-2] != "replay.failed" || fmt.Sprint(failed["payload"].(map[string]any)["missing"]) != fmt.Sprint(rt.Failure.Details) {
		t.Errorf("events %v; replay.failed %v", kinds, failed)
	}
	for _, e := range h.replayedEvents(rt.ID) {
		if p := e["payload"].(map[string]any); p["override_key"] == "mcp:s:c" {
			t.Errorf("the missing material was replayed: %v", e)
		}
	}
	_, rt = h.replay(src, map[string]any{"mode": "with_overrides", "override": map[string]any{"mcp:s:c": map[string]any{"kind": "mcp_tool_return", "value": "supplied"}}})
	if rt.Status != StatusCompleted {
		t.Fatalf("override replay supplying it: %s %+v", rt.Status, rt.Failure)
	}
	doc := h.receiptOf(rt.ID).Body
	if ds := doc["deltas"].([]any); len(ds) != 1 || ds[0].(map[string]any)["event_id"] != keys["mcp:s:c"] {
		t.Errorf("deltas %v", ds)
	}
}

// A replay reads the memories as the source recorded them, whatever they
// are by then (RPLY-REFRESH-001/002).
func TestReplayMemoryAsRecorded(t *testing.T) {
	h := newHarness(t, Options{})
	sess := h.session()
	ws := h.do("GET", "/v1/sessions/"+sess, nil).str("workspace_id")
	mem := func(content string) string {
		return h.mustOK(h.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": content, "provenance": map[string]any{}}), "memory").str("id")
	}
	a := mem("first")
	b := mem("second")
	want := "first\nsecond"
	if b < a { // memory_id order
		want = "second\nfirst"
	}
	src := h.submit(sess, []map[string]any{step("memory_read", "call_id", "m")}).str("id")
	h.waitTerminalStatus(src)
	h.do("DELETE", "/v1/memories/"+a, nil)
	mem("third")
	_, rt := h.replay(src, nil)
	evs := h.replayedEvents(rt.ID)
	if len(evs) != 1 {
		t.Fatalf("replayed %v", evs)
	}
	p := evs[0]["payload"].(map[string]any)
	if p["text"] != want || len(p["memories"].([]any)) != 2 {
		t.Errorf("replayed memory_read %v, want the two recorded memories", p)
	}
}

// Idempotency-Key on replay works as on every POST.
func TestReplayIdempotency(t *testing.T) {
	h := newHarness(t, Options{})
	_, src := h.runSource([]map[string]any{step("clock_read", "label", "t0", "value_ms", 1)})
	a := h.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "exact"}, "Idempotency-Key", "r1")
	b := h.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "exact"}, "Idempotency-Key", "r1")
	if a.Code != 202 || b.Code != 202 || a.str("id") != b.str("id") || b.Header.Get("Idempotent-Replayed") != "true" {
		t.Errorf("retry: %d %s / %d %s", a.Code, a.str("id"), b.Code, b.str("id"))
	}
	wantError(t, h.do("POST", "/v1/tasks/"+src+"/replay", map[string]any{"mode": "with_overrides"}, "Idempotency-Key", "r1"), 409, "idempotency_key_reused", "Idempotency-Key")
}

// Everything replay needs is in the journal: a source run before a restart
// replays after it, with the same receipt deltas, and a replay accepted but
// not run before a restart runs after it.
func TestReplayAfterRestart(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, Options{DataDir: dir})
	fr := loadFixtureRun(t)
	sess, src := h.runSource(fr.steps)
	body, _, _ := h.fixtureRequest(fr, sess, src)
	_, first := h.replay(src, body)
	deltas := func(h *harness, id string) string {
		b, _ := json.Marshal(h.receiptOf(id).Body["deltas"])
		return string(b)
	}
	want := deltas(h, first.ID)
	srcTape, _ := h.tapeOf(src)

	h = reopenHarness(t, h, dir)
	if got, _ := h.tapeOf(src); !bytes.Equal(got, srcTape) {
		t.Errorf("the source's tape changed across the restart")
	}
	_, again := h.replay(src, body)
	if again.Status != StatusCompleted || deltas(h, again.ID) != want {
		t.Errorf("replay after restart: %s, deltas %s, want %s", again.Status, deltas(h, again.ID), want)
	}
	// Accepted, not run: workers are stopped before it starts.
	h.s.mu.Lock()
	h.s.stopping = true
	h.s.mu.Unlock()
	r := h.do("POST", "/v1/tasks/"+src+"/replay", body)
	if r.Code != 202 || r.str("status") != StatusSubmitted {
		t.Fatalf("replay: %d %s", r.Code, r.Raw)
	}
	h = reopenHarness(t, h, dir)
	late := h.waitTerminalStatus(r.str("id"))
	if late.Status != StatusCompleted || deltas(h, late.ID) != want {
		t.Errorf("replay recovered after restart: %s %+v, deltas %s", late.Status, late.Failure, deltas(h, late.ID))
	}
	// A replay of a replay.
	_, rr := h.replay(late.ID, nil)
	if rr.Status != StatusCompleted {
		t.Errorf("replay of a replay: %s %+v", rr.Status, rr.Failure)
	}
}

// Under the no-replay variant the Harness does not claim Replay.
func TestReplayNotOffered(t *testing.T) {
	h := newHarness(t, Options{Variants: Variants{VariantNoReplay: true}})
	if caps := h.do("GET", "/v1", nil).Body["capabilities"].(map[string]any); caps["replay"] != false {
		t.Errorf("discovery replay = %v", caps["replay"])
	}
	for _, c := range h.do("GET", "/v1/agent-card", nil).Body["capabilities"].([]any) {
		if c == "replay" {
			t.Errorf("the card lists replay")
		}
	}
	_, src := h.runSource([]map[string]any{step("clock_read", "label", "t0", "value_ms", 1)})
	wantError(t, h.do("POST", "/v1/tasks/"+src+"/replay", nil), 501, CodeNotImplemented, "")
	h2 := newHarness(t, Options{})
	found := false
	for _, c := range h2.do("GET", "/v1/agent-card", nil).Body["capabilities"].([]any) {
		found = found || c == "replay"
	}
	if !found {
		t.Errorf("the card of a Harness that offers replay does not list it")
	}
}
