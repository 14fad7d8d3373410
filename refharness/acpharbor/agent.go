// Package acpharbor is the reference ACP Agent Harbor agent: an Agent
// Client Protocol agent over stdio, built on the agent side of
// github.com/coder/acp-go-sdk, that implements the Harbor extensions
// (spec text 004: the _meta["agent.harbor"] bundle, the _ah/* workspace,
// snapshot, branch, session and pipeline methods, harbor/* updates). It
// makes the acp-harbor profile self-testing: `conform serve-acp` runs it,
// `conform selftest --profiles acp-harbor` checks it, and each Fault
// breaks one requirement on purpose (docs/acp-harbor.md).
//
// Everything is in memory and per process, as an ACP agent serves the one
// client that started it. Shell pipelines named in a prompt run on a few
// built-in commands over bytes (runPipeline): no prompt ever starts a
// process on the host.
package acpharbor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/coder/acp-go-sdk"
)

// Version is the reference agent's version (its agentInfo).
const Version = "1.0.0"

// HoldWord in a prompt keeps the turn open until the client cancels it
// (or Options.Hold passes): the suite's cancellation check needs a turn
// that is still running when its session/cancel arrives. A real agent's
// turn takes the seconds a model takes.
const HoldWord = "conform:hold"

// Options configures the reference agent.
type Options struct {
	Faults  []Fault
	Variant Variant
	// Hold bounds a held turn (HoldWord); 0 means 10 s.
	Hold time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Token is the credential the auth-required variant's method wants in
	// the agent's environment (TokenEnv; Main reads it): authenticate
	// succeeds only when it is set.
	Token string
}

// The auth-required variant's one authentication method, and the
// variable of the agent's environment it reads.
const (
	AuthMethodID = "conform-token"
	TokenEnv     = "CONFORM_ACP_AGENT_TOKEN"
)

// Serve runs the agent on in/out until in ends or ctx is done. Log lines
// go to errw (ACP lets an agent log to its stderr).
func Serve(ctx context.Context, in io.Reader, out, errw io.Writer, opts Options) error {
	if opts.Hold <= 0 {
		opts.Hold = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	faults := map[Fault]bool{}
	for _, f := range opts.Faults {
		faults[f] = true
	}
	w := newWire(out, faults)
	if opts.Variant == VariantHarborPrefix {
		in = renameMethods(in)
	}
	a := &agent{opts: opts, faults: faults, w: w, sessions: map[string]*session{}, snapshots: map[string]*snapshot{},
		branches: map[string]*branch{}, execs: map[string]*execution{}}
	if faults[FaultStdoutLogLine] {
		if err := w.raw("reference Harbor agent: starting"); err != nil {
			return err
		}
	}
	fmt.Fprintf(errw, "conform serve-acp: reference ACP Harbor agent %s (faults %v, variant %q)\n", Version, opts.Faults, opts.Variant)
	// No SetLogger: in acp-go-sdk v0.13.5 it races with the reader
	// goroutine NewAgentSideConnection has already started (the race
	// detector sees it when the input ends at once). The SDK logs through
	// slog.Default, which Main points at stderr.
	// NewAgentSideConnection starts its reader goroutine before it
	// returns, and finishes setting up the connection (and we a.conn)
	// after: the reader sees no input until both are done, so a request
	// that arrives at once never races them.
	ready := make(chan struct{})
	conn := acp.NewAgentSideConnection(a, w, gatedReader{r: in, ready: ready})
	a.conn = conn
	close(ready)
	select {
	case <-conn.Done():
	case <-ctx.Done():
	}
	return nil
}

// gatedReader holds every Read until ready is closed.
type gatedReader struct {
	r     io.Reader
	ready <-chan struct{}
}

func (g gatedReader) Read(p []byte) (int, error) {
	<-g.ready
	return g.r.Read(p)
}

type agent struct {
	opts   Options
	faults map[Fault]bool
	w      *wire
	conn   *acp.AgentSideConnection

	mu        sync.Mutex
	seq       int
	sessions  map[string]*session
	snapshots map[string]*snapshot
	snapOrder []*snapshot
	branches  map[string]*branch
	brOrder   []*branch
	execs     map[string]*execution
	// customUpdates: the client asked for Harbor notifications as custom
	// session/update (clientCapabilities._meta["agent.harbor"]); authed:
	// authenticate succeeded (the auth-required variant).
	customUpdates bool
	authed        bool
}

type session struct {
	id, cwd string
	ws      *workspace
	branch  string // the branch its workspace is on ("" = its own)
}

var (
	_ acp.Agent                  = (*agent)(nil)
	_ acp.ExtensionMethodHandler = (*agent)(nil)
)

// newID mints an id of a kind, unique in the process. a.mu held.
func (a *agent) newID(kind string) string {
	a.seq++
	return fmt.Sprintf("%s-%04d", kind, a.seq)
}

// --- Base ACP ---------------------------------------------------------------

func (a *agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	version := acp.ProtocolVersion(acp.ProtocolVersionNumber) // the only version it speaks, and so its latest
	if a.faults[FaultInitEchoVersion] {
		version = p.ProtocolVersion
	}
	resp := acp.InitializeResponse{
		ProtocolVersion:   version,
		AgentCapabilities: acp.AgentCapabilities{LoadSession: false},
		AgentInfo:         &acp.Implementation{Name: "conform-acp-harbor", Version: Version},
		AuthMethods:       []acp.AuthMethod{},
	}
	if a.faults[FaultInitNoInfo] {
		resp.AgentInfo = nil
	}
	a.mu.Lock()
	a.customUpdates = asksCustomUpdates(p.ClientCapabilities.Meta)
	a.mu.Unlock()
	if a.opts.Variant == VariantAuthRequired {
		desc := "a token the agent reads from " + TokenEnv + " in its environment"
		resp.AuthMethods = []acp.AuthMethod{{Agent: &acp.AuthMethodAgent{Id: AuthMethodID, Name: "conform test token", Description: &desc}}}
	}
	if a.opts.Variant != VariantNoHarbor {
		bundle := a.bundle()
		switch {
		case a.faults[FaultBundleInResultMeta]:
			resp.Meta = map[string]any{"agent.harbor": bundle}
		case a.opts.Variant == VariantNestedMeta:
			resp.AgentCapabilities.Meta = map[string]any{"agent": map[string]any{"harbor": bundle}}
		case a.opts.Variant == VariantGateAlias:
			snaps := bundle["snapshots"]
			delete(bundle, "snapshots")
			resp.AgentCapabilities.Meta = map[string]any{"agent.harbor": bundle, "agentHarborSnapshots": snaps}
		default:
			resp.AgentCapabilities.Meta = map[string]any{"agent.harbor": bundle}
		}
	}
	if a.faults[FaultInitVersionString] && p.ProtocolVersion == acp.ProtocolVersionNumber {
		a.w.onNextResponse(func(m map[string]any) {
			if r, ok := m["result"].(map[string]any); ok {
				r["protocolVersion"] = "1"
			}
		})
	}
	if a.faults[FaultCapsCustomRoot] {
		a.w.onNextResponse(func(m map[string]any) {
			if r, ok := m["result"].(map[string]any); ok {
				if c, ok := r["agentCapabilities"].(map[string]any); ok {
					c["harbor"] = true
				}
			}
		})
	}
	if a.faults[FaultExtraResponse] {
		// Right after the initialize response, in the same write: on the
		// wire before anything the client sends next is answered.
		a.w.trailNextResponse([]byte(`{"jsonrpc":"2.0","id":9999,"result":{}}`))
	}
	return resp, nil
}

// bundle is the agent.harbor capability bundle.
func (a *agent) bundle() map[string]any {
	version := any(1)
	if a.faults[FaultBundleVersionString] {
		version = "1"
	}
	return map[string]any{
		"snapshots":             map[string]any{"version": version, "supportsTimelineSeek": true, "supportsBranching": true, "supportsFollowPlayback": false},
		"pipelineIntrospection": map[string]any{"version": 1, "supportsStepStreaming": true},
		"workspace":             map[string]any{"version": 1, "supportsDiffs": true},
	}
}

// asksCustomUpdates reports whether a client's capabilities _meta asks for
// Harbor notifications as custom session/update:
// {"agent.harbor": {"notifications": {"customSessionUpdate": true}}}, the
// bundle flat or nested as the agent's may be (docs/acp-harbor.md,
// "Harbor notifications").
func asksCustomUpdates(meta map[string]any) bool {
	b, _ := meta["agent.harbor"].(map[string]any)
	if b == nil {
		ag, _ := meta["agent"].(map[string]any)
		b, _ = ag["harbor"].(map[string]any)
	}
	n, _ := b["notifications"].(map[string]any)
	return n["customSessionUpdate"] == true
}

// Authenticate is the auth-required variant's gate: its one method
// succeeds when the agent's environment holds the token. Without the
// variant there is nothing to authenticate and any call succeeds.
func (a *agent) Authenticate(_ context.Context, p acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if a.opts.Variant != VariantAuthRequired {
		return acp.AuthenticateResponse{}, nil
	}
	if p.MethodId != AuthMethodID {
		return acp.AuthenticateResponse{}, acp.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown authentication method %q (authMethods: %s)", p.MethodId, AuthMethodID)})
	}
	if a.opts.Token == "" {
		return acp.AuthenticateResponse{}, acp.NewAuthRequired(map[string]any{"error": TokenEnv + " is not set in the agent's environment"})
	}
	a.mu.Lock()
	a.authed = true
	a.mu.Unlock()
	return acp.AuthenticateResponse{}, nil
}

// needsAuth is the answer to a request that opens a session before the
// client authenticated, in the auth-required variant (nil otherwise).
func (a *agent) needsAuth() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.opts.Variant != VariantAuthRequired || a.authed {
		return nil
	}
	return acp.NewAuthRequired(map[string]any{"authMethods": []string{AuthMethodID}})
}

func (a *agent) Logout(context.Context, acp.LogoutRequest) (acp.LogoutResponse, error) {
	return acp.LogoutResponse{}, acp.NewMethodNotFound(acp.AgentMethodLogout)
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionClose)
}

func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionList)
}

func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionResume)
}

func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetConfigOption)
}

func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound(acp.AgentMethodSessionSetMode)
}

func (a *agent) Cancel(context.Context, acp.CancelNotification) error {
	// The SDK cancels the session's pending prompt context; Prompt sees it.
	return nil
}

func (a *agent) NewSession(_ context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if err := a.needsAuth(); err != nil {
		return acp.NewSessionResponse{}, err
	}
	a.mu.Lock()
	s := a.addSession(p.Cwd)
	if a.faults[FaultSessionIDReused] {
		// Every session/new answers the first session's id (the
		// sessions _ah/session/new and branches open keep theirs).
		delete(a.sessions, s.id)
		s.id = "sess-first"
		if a.sessions[s.id] == nil {
			a.sessions[s.id] = s
		}
	}
	a.mu.Unlock()
	if a.faults[FaultSessionBadModes] {
		// A member the schema defines, with the wrong type: the session
		// id stays usable.
		a.w.onNextResponse(func(m map[string]any) {
			if r, ok := m["result"].(map[string]any); ok {
				r["modes"] = "none"
			}
		})
	}
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id)}, nil
}

// addSession creates a session. a.mu held.
func (a *agent) addSession(cwd string) *session {
	id := a.newID("sess")
	s := &session{id: id, cwd: cwd, ws: newWorkspace(a.opts.Now())}
	a.sessions[id] = s
	return s
}

func (a *agent) session(id string) *session {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.sessions[id]
}

// update sends a standard session/update through the SDK.
// trailUpdate sends a text update right after the turn's response, in
// the same write, so the late update is on the wire before any later
// answer (a goroutine sending it could lose the race to the client's next
// request and the fault would not show).
func (a *agent) trailUpdate(sid, text string) {
	late, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "session/update",
		"params": acp.SessionNotification{SessionId: acp.SessionId(sid), Update: acp.UpdateAgentMessageText(text)}})
	if err == nil {
		a.w.trailNextResponse(late)
	}
}

func (a *agent) update(sid string, u acp.SessionUpdate) {
	_ = a.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: acp.SessionId(sid), Update: u})
}

func (a *agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	sid := string(p.SessionId)
	if a.session(sid) == nil {
		return acp.PromptResponse{}, acp.NewInvalidParams(map[string]any{"error": "unknown session " + sid})
	}
	var text strings.Builder
	for _, b := range p.Prompt {
		if b.Text != nil {
			text.WriteString(b.Text.Text)
		}
	}
	to := sid
	if a.faults[FaultUpdateWrongSess] {
		to = "sess-not-this-connection"
	}
	a.update(to, acp.UpdateAgentMessageText("Working on it."))
	if strings.Contains(text.String(), HoldWord) {
		t := time.NewTimer(a.opts.Hold)
		defer t.Stop()
		select {
		case <-ctx.Done():
			if a.faults[FaultCancelLateUpdate] {
				a.trailUpdate(sid, "(stopped)")
			}
			if a.faults[FaultCancelIgnored] {
				return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
			}
			return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
		case <-t.C:
		}
	}
	if cmd := pipelineIn(text.String()); cmd != "" {
		a.runTool(sid, to, cmd)
	}
	a.update(to, acp.UpdateAgentMessageText(" Done."))
	// Harbor snapshots the workspace at the end of every turn, announced
	// with harbor/snapshot_created (reason auto): so even a client that
	// only says hello receives Harbor notifications.
	if a.opts.Variant != VariantNoHarbor {
		a.mu.Lock()
		snap := a.addSnapshot(sid, "turn-end", nil, false)
		a.mu.Unlock()
		a.announceSnapshot(sid, snap, "auto")
	}
	if a.faults[FaultUpdateAfterResp] {
		a.trailUpdate(sid, " (one more thing)")
	}
	if a.faults[FaultPromptBadStop] {
		a.w.onNextResponse(func(m map[string]any) {
			if r, ok := m["result"].(map[string]any); ok {
				r["stopReason"] = "done"
			}
		})
	}
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

// runTool runs a pipeline as a tool call and records it as Harbor's
// recorder would: an execution with one pipeline, announced and streamed
// step by step, a timeline mark and an automatic snapshot.
func (a *agent) runTool(sid, to, cmd string) {
	now := a.opts.Now()
	steps, out := runPipeline(cmd)
	a.mu.Lock()
	ex := &execution{id: a.newID("exec"), session: sid}
	p := &pipeline{id: a.newID("pipe"), started: now, steps: steps}
	offset := 0
	for i, st := range steps {
		st.id = fmt.Sprintf("%s:%d", p.id, st.index)
		st.pid = 40000 + a.seq*10 + i
		st.started = now.Add(time.Duration(i) * time.Millisecond)
		st.ended = st.started.Add(time.Millisecond)
		st.stdoutStart, offset = offset, offset+st.stdout
		st.stderrFrom, offset = offset, offset+st.stderr
	}
	p.end = now.Add(time.Duration(len(steps)) * time.Millisecond)
	ex.pipelines = append(ex.pipelines, p)
	a.execs[ex.id] = ex
	a.mu.Unlock()

	call := acp.ToolCallId("call-" + ex.id)
	a.update(to, acp.StartToolCall(call, cmd, acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartRawInput(map[string]any{"command": cmd})))
	var ids []string
	for _, st := range steps {
		ids = append(ids, st.id)
	}
	if !a.faults[FaultPipelineSilent] {
		a.harbor(sid, "pipeline_detected", map[string]any{"sessionId": sid, "executionId": ex.id, "pipelineId": p.id, "steps": ids})
	}
	for _, st := range steps {
		m := st.meta(p, ex.id)
		if a.faults[FaultStepUnknownID] {
			m["stepId"] = p.id + ":99"
		}
		a.harbor(sid, "pipeline_step_updated", map[string]any{"sessionId": sid, "executionId": ex.id, "pipelineId": p.id, "step": m})
	}
	if !a.faults[FaultNoCheckpoints] {
		mark := map[string]any{"sessionId": sid, "executionId": ex.id, "byteOffset": offset, "label": "pipeline-end", "kind": "REC_MARK"}
		if a.faults[FaultCheckpointNoKind] {
			delete(mark, "kind")
		}
		a.harbor(sid, "timeline_checkpoint", mark)
	}
	a.update(to, acp.UpdateToolCall(call, acp.WithUpdateStatus(acp.ToolCallStatusCompleted),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(string(out)))})))
	a.mu.Lock()
	snap := a.addSnapshot(sid, "auto-after-"+ex.id, map[string]any{"executionId": ex.id, "byteOffset": offset, "timelineTs": 1.5}, false)
	a.mu.Unlock()
	a.announceSnapshot(sid, snap, "auto")
}

// harbor sends a Harbor notification of kind ("snapshot_created"…). By
// default (docs/interpretations.md, ah-notification-forms) it is an ACP
// extension notification _ah/<kind> whose params are the payload (with
// the session's id), which an ACP v1 client that does not know Harbor
// ignores; a client that asked for custom session updates
// (clientCapabilities._meta["agent.harbor"].notifications.customSessionUpdate)
// gets the text's own form, a session/update whose update is
// {"type": "custom", "customType": "harbor/…", …payload}. The
// harbor-updates-unasked fault sends that form to every client; two
// variants take the other readings the suite accepts.
func (a *agent) harbor(sid, kind string, payload map[string]any) {
	a.mu.Lock()
	custom := a.customUpdates || a.faults[FaultHarborUpdatesUnasked]
	a.mu.Unlock()
	var msg map[string]any
	switch {
	case a.opts.Variant == VariantMethodNotifications:
		msg = map[string]any{"jsonrpc": "2.0", "method": "harbor/" + kind, "params": payload}
	case a.opts.Variant == VariantUpdateDiscriminated:
		msg = map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid,
			"update": map[string]any{"sessionUpdate": "custom", "customType": "harbor/" + kind, "payload": payload}}}
	case custom:
		u := map[string]any{"type": "custom", "customType": "harbor/" + kind}
		for k, v := range payload {
			u[k] = v
		}
		msg = map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"sessionId": sid, "update": u}}
	default:
		params := map[string]any{"sessionId": sid}
		for k, v := range payload {
			params[k] = v
		}
		msg = map[string]any{"jsonrpc": "2.0", "method": "_ah/" + kind, "params": params}
	}
	_ = a.w.send(msg)
}

// HandleExtensionMethod serves the _ah/* methods; any other custom method
// is Method not found, as ACP's extensibility page says.
func (a *agent) HandleExtensionMethod(ctx context.Context, method string, params json.RawMessage) (any, error) {
	name, ok := strings.CutPrefix(method, "_ah/")
	if !ok || a.opts.Variant == VariantNoHarbor {
		switch {
		case a.faults[FaultExtUnknownSilent]:
			<-ctx.Done() // never answers; the SDK ends ctx with the connection
			return nil, ctx.Err()
		case a.faults[FaultExtUnknownError]:
			return nil, acp.NewInternalError(map[string]any{"error": "unexpected method " + method})
		}
		return nil, acp.NewMethodNotFound(method)
	}
	var p map[string]json.RawMessage
	if len(params) > 0 {
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, acp.NewInvalidParams(map[string]any{"error": "params must be an object: " + err.Error()})
		}
	}
	if a.faults[FaultTenantInvalid] && name != "session/new" && (p["tenantId"] != nil || p["projectId"] != nil) {
		return nil, acp.NewInvalidParams(map[string]any{"error": "unknown members tenantId, projectId"})
	}
	h, ok := a.methods()[name]
	if !ok {
		return nil, acp.NewMethodNotFound(method)
	}
	if name != "session/new" {
		var sid string
		_ = json.Unmarshal(p["sessionId"], &sid)
		if a.session(sid) == nil {
			return a.refuse(404, "session-not-found", fmt.Sprintf("no session %q on this connection", sid))
		}
	}
	return h(p)
}
