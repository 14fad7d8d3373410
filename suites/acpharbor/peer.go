package acpharbor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/harbor"
	"github.com/harn-conform/conform/internal/suite"
)

// Requirement ids the helpers judge.
const (
	reqFraming   = acp.ReqFraming
	reqResponse  = acp.ReqResponse
	reqErrorObj  = acp.ReqErrorObject
	reqInit      = "ACP-INIT-001"
	reqUpdate    = "ACP-UPD-001"
	reqNote      = "ACP-NOTIF-001"
	reqAdvertise = "ACP-CAP-003"
	reqNames     = "ACP-NAME-001"
	reqNoteForm  = "ACP-NOTIF-003"
)

// initializeParams is the client's initialize: the protocol version, no
// file-system or terminal capability (the checker serves neither, so an
// agent must not ask), and who the client is.
func initializeParams(version int) sdk.InitializeRequest {
	return sdk.InitializeRequest{
		ProtocolVersion:    sdk.ProtocolVersion(version),
		ClientCapabilities: sdk.ClientCapabilities{Fs: sdk.FileSystemCapabilities{}, Terminal: false},
		ClientInfo:         &sdk.Implementation{Name: "conform", Version: "acp-harbor-profile"},
	}
}

// someLines shortens a log to about n lines: the first two (where a
// program says what is wrong before its usage) and the last ones.
func someLines(s string, n int) string {
	var lines []string
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	if len(lines) > n && n > 2 {
		lines = append(append(lines[:2:2], "…"), lines[len(lines)-(n-2):]...)
	}
	return strings.Join(lines, " | ")
}

// peer is one spec's agent: the process, the connection, and what the
// spec learnt (the initialize result, the Harbor bundle, the sessions it
// created, the names Harbor methods answer under).
type peer struct {
	ctx      context.Context
	conn     *acp.Conn
	dir      string
	init     map[string]any
	bundle   *harbor.Bundle
	sessions []string
	prefix   map[string]string // Harbor method → the prefix it answered under
	only     []string          // Harbor methods that answered only as harbor/…
	judged   map[string]bool   // session/update lines already judged (by position)
	wireFrom int               // problems before this index were judged by the spec
}

// start runs the agent for the current spec. It is ended, and the spec's
// wire judged and its transcript kept, when the spec ends (AtSpecEnd).
func start(ctx context.Context) *peer {
	GinkgoHelper()
	env := suite.Env()
	cfg := env.Config
	dir, err := os.MkdirTemp("", "conform-acp-")
	if err != nil {
		Fail("creating the agent's working directory: " + err.Error())
	}
	conn, err := acp.Start(ctx, acp.Options{Command: cfg.AgentCommand, Dir: dir, Redactor: env.Redactor,
		MaxMessage: int(min(cfg.MaxBodyBytes, 1<<30)), Write: cfg.Timeouts.Request})
	if err != nil {
		os.RemoveAll(dir)
		suite.Transport(&client.TransportError{Method: "start", URL: "stdio:agent", Err: err})
	}
	p := &peer{ctx: ctx, conn: conn, dir: dir, prefix: map[string]string{}, judged: map[string]bool{}}
	suite.AtSpecEnd(p.finish)
	return p
}

// finish ends the agent and judges what the whole spec saw: every line
// against JSON-RPC framing, every session/update against ACP's schema,
// every Harbor notification against its row; then keeps the transcript.
// Only failures are recorded here (a spec that names these requirements
// judges them itself): a spec's own verdicts stay its own.
func (p *peer) finish() {
	p.conn.Close()
	defer os.RemoveAll(p.dir)
	probs, more := p.conn.Problems()
	byReq := map[string][]string{}
	for _, pr := range probs[min(p.wireFrom, len(probs)):] {
		if pr.Req == "" {
			suite.Note(CurrentSpecReport().FullText() + ": " + pr.String())
			continue
		}
		byReq[pr.Req] = append(byReq[pr.Req], pr.String())
	}
	reqs := make([]string, 0, len(byReq))
	for r := range byReq {
		reqs = append(reqs, r)
	}
	sort.Strings(reqs)
	for _, r := range reqs {
		msgs := byReq[r]
		msg := fmt.Sprintf("%d line(s) of the agent's stdout: %s", len(msgs), strings.Join(first(msgs, 3), "; "))
		if more > 0 {
			msg += fmt.Sprintf(" (and %d more problems not kept)", more)
		}
		suite.Check(r, errors.New(msg))
	}
	if err := p.updateProblems(0); err != nil {
		suite.Check(reqUpdate, err)
	}
	if err := p.noteProblems(0); err != nil {
		suite.Check(reqNote, err)
	}
	p.keepTranscript()
}

func first(xs []string, n int) []string {
	if len(xs) > n {
		return append(xs[:n:n], fmt.Sprintf("… %d more", len(xs)-n))
	}
	return xs
}

// keepTranscript attaches the agent's transcript and the calls' latencies
// to the spec when it did not simply pass (the Harn specs keep theirs on
// failure the same way).
func (p *peer) keepTranscript() {
	ex, dropped := p.conn.Exchanges()
	var samples []evidence.LatencySample
	for _, e := range ex {
		if e.Error == "" && e.ResponseBody != "" && e.Kind == acp.KindStdio && e.Op != "agent process" {
			samples = append(samples, evidence.LatencySample{Op: "ACP " + e.Op, MS: e.DurationMS})
		}
	}
	if len(samples) > 0 {
		AddReportEntry(evidence.EntryLatency, samples, ReportEntryVisibilityNever)
	}
	clean := !CurrentSpecReport().Failed()
	for _, e := range CurrentSpecReport().ReportEntries {
		switch e.Name {
		case evidence.EntryVerdict:
			if v, err := evidence.Decode[evidence.Verdict](e); err == nil && v.Verdict != evidence.VerdictNotApplicable {
				clean = false
			}
		case evidence.EntrySkip:
			if k, err := evidence.Decode[evidence.Skip](e); err == nil && k.Kind != evidence.SkipNotApplicable {
				clean = false
			}
		}
	}
	if !clean {
		AddReportEntry(evidence.EntryTranscript, evidence.Transcript{Exchanges: ex, Dropped: dropped}, ReportEntryVisibilityNever)
	}
}

// updateProblems judges the session/update notifications from position
// from on that were not judged yet: each validates against ACP's
// SessionNotification and names a session of this connection (Harbor's
// custom updates are the Harbor requirements' to judge).
func (p *peer) updateProblems(from int) error {
	var probs []string
	for i, m := range p.conn.Received(from) {
		key := strconv.Itoa(from + i)
		if m.Method != "session/update" || p.judged[key] {
			continue
		}
		p.judged[key] = true
		if harbor.IsHarborUpdate(m) {
			continue
		}
		found, err := acp.Validate("SessionNotification", m.Params)
		if err != nil {
			Fail(err.Error()) // the embedded schema: the checker's own defect
		}
		if len(found) > 0 {
			probs = append(probs, fmt.Sprintf("a session/update does not match ACP's SessionNotification (%s): %s", strings.Join(first(found, 3), "; "), clipS(string(m.Raw))))
			continue
		}
		var n struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &n)
		if !slices.Contains(p.sessions, n.SessionID) {
			probs = append(probs, fmt.Sprintf("a session/update names session %q, which this connection never created (its sessions: %s)", n.SessionID, strings.Join(p.sessions, ", ")))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(first(probs, 3), "; "))
}

// noteProblems judges every Harbor notification from position from on.
func (p *peer) noteProblems(from int) error {
	var probs []string
	for _, n := range harbor.Notes(p.conn.Received(from)) {
		if err := harbor.CheckNote(n); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return errors.New(strings.Join(first(probs, 3), "; "))
}

// judgeNoteForms records ACP-NOTIF-003 for the Harbor notifications from
// position from on: conform's client never asks for custom session
// updates, so each must be an extension notification (_ah/…). It returns
// how many there were (none: nothing judged).
func (p *peer) judgeNoteForms(from int) int {
	notes := harbor.Notes(p.conn.Received(from))
	var probs []string
	for _, n := range notes {
		if err := harbor.CheckNoteForm(n); err != nil {
			probs = append(probs, err.Error())
		}
	}
	if len(probs) > 0 {
		suite.Should(reqNoteForm, fmt.Errorf("%d of %d Harbor notification(s): %s", len(probs), len(notes), strings.Join(first(probs, 2), "; ")))
	}
	return len(notes)
}

func clipS(s string) string {
	if len(s) > 300 {
		return s[:300] + "…"
	}
	return s
}

// call sends one request and waits up to the request timeout. An agent
// that cannot be spoken to ends the spec with an error verdict for reqs.
func (p *peer) call(method string, params any, reqs ...string) *acp.Response {
	GinkgoHelper()
	return p.callWithin(suite.Env().Config.Timeouts.Request, method, params, reqs...)
}

func (p *peer) callWithin(d time.Duration, method string, params any, reqs ...string) *acp.Response {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(p.ctx, d)
	defer cancel()
	resp, err := p.conn.Call(ctx, method, params)
	suite.Transport(err, reqs...)
	return resp
}

// initialize performs the handshake and keeps what the agent advertised.
// A result that cannot be read at all fails ACP-INIT-001 (the spec that
// names it says how); an agent that chose another major version than 1
// leaves the spec unverified: this profile checks ACP v1.
func (p *peer) initialize(reqs ...string) *acp.Response {
	GinkgoHelper()
	resp := p.call(sdk.AgentMethodInitialize, initializeParams(sdk.ProtocolVersionNumber), reqs...)
	if resp.Error != nil {
		suite.Must(reqInit, fmt.Errorf("initialize (protocol version 1) was answered with an error: %v", resp.Error))
	}
	obj, err := harbor.Object(resp.Result)
	if err != nil {
		suite.Must(reqInit, fmt.Errorf("initialize result: %v", err))
	}
	p.init = obj
	if v, ok := version(obj["protocolVersion"]); ok && v != sdk.ProtocolVersionNumber {
		suite.Unverified(fmt.Sprintf("the agent chose ACP protocol version %d; this profile checks version 1", v),
			"let the agent speak ACP v1 when a client asks for it (version negotiation keeps 1 when the agent supports it)")
	}
	p.bundle = harbor.FindBundle(obj)
	if p.bundle == nil {
		p.bundle = &harbor.Bundle{} // advertises nothing: Claimed is false
	}
	p.authenticate() // auth.go: with --acp-auth-method
	return resp
}

// version reads a protocol version leniently (an integer, or digits in a
// string: ACP-INIT-001 judges the type; the other specs go on).
func version(v any) (int, bool) {
	if n, ok := harbor.Int(v); ok {
		return int(n), true
	}
	if s, ok := v.(string); ok {
		if n, err := strconv.Atoi(s); err == nil {
			return n, true
		}
	}
	return 0, false
}

// newSession opens a session in the spec's working directory. An agent
// that requires authentication conform was not given leaves the spec
// unverified (auth.go).
func (p *peer) newSession(reqs ...string) (string, *acp.Response) {
	GinkgoHelper()
	id, resp := p.rawSession(reqs...)
	p.needAuth(sdk.AgentMethodSessionNew, resp)
	return id, resp
}

// rawSession is session/new, whatever the answer.
func (p *peer) rawSession(reqs ...string) (string, *acp.Response) {
	GinkgoHelper()
	resp := p.call(sdk.AgentMethodSessionNew, sdk.NewSessionRequest{Cwd: p.dir, McpServers: []sdk.McpServer{}}, reqs...)
	var r struct {
		SessionID any `json:"sessionId"`
	}
	_ = json.Unmarshal(resp.Result, &r)
	id := ""
	switch v := r.SessionID.(type) {
	case string:
		id = v
	case float64:
		id = strconv.FormatFloat(v, 'f', -1, 64)
	}
	if id != "" {
		p.sessions = append(p.sessions, id)
	}
	return id, resp
}

// mustSession is newSession for specs about something else: a session
// the agent will not open leaves them nothing to check.
func (p *peer) mustSession() string {
	GinkgoHelper()
	id, resp := p.newSession()
	if resp.Error != nil || id == "" {
		suite.Unverified("the agent did not open a session (session/new: "+clipS(string(resp.Raw))+")", "fix ACP-SESS-001 first")
	}
	return id
}

// prompt runs one turn with a text prompt, waiting up to the task timeout.
func (p *peer) prompt(session, text string, reqs ...string) *acp.Response {
	GinkgoHelper()
	resp := p.callWithin(suite.Env().Config.Timeouts.Task, sdk.AgentMethodSessionPrompt,
		sdk.PromptRequest{SessionId: sdk.SessionId(session), Prompt: []sdk.ContentBlock{sdk.TextBlock(text)}}, reqs...)
	p.needAuth(sdk.AgentMethodSessionPrompt, resp) // an agent that checks its credentials lazily
	return resp
}

// sync is a round trip after which every message the agent sent before
// answering it has been read: a session/new (cheap, and every agent has
// it; an error answer is a round trip too).
func (p *peer) sync() {
	GinkgoHelper()
	p.rawSession()
}

// --- Harbor ----------------------------------------------------------------

// needHarbor ends the spec as not applicable when the agent does not
// advertise the block (nil) the spec is about.
func (p *peer) needHarbor(blk *harbor.Block, what string) {
	GinkgoHelper()
	if !p.bundle.Claimed() {
		suite.NotApplicable("not claimed: the agent advertises no agent.harbor bundle in its initialize result, so the Harbor extensions do not apply")
	}
	if blk == nil {
		suite.NotApplicable("not claimed: the agent's Harbor bundle has no " + what + " block")
	}
}

// harbor calls a Harbor method by its name without prefix ("snapshot_create"),
// under _ah/ first and then harbor/ (the text uses both), and returns the
// answer, or nil when both spellings are Method not found.
func (p *peer) harbor(name string, params map[string]any) *acp.Response {
	GinkgoHelper()
	order := []string{harbor.PrefixAH, harbor.PrefixHarbor}
	if p.prefix[name] == harbor.PrefixHarbor {
		order = []string{harbor.PrefixHarbor, harbor.PrefixAH}
	}
	for _, pre := range order {
		resp := p.call(pre+name, params)
		if resp.Error != nil && resp.Error.CodeOK && resp.Error.Code == acp.CodeMethodNotFound {
			continue
		}
		if p.prefix[name] == "" {
			p.prefix[name] = pre
			if pre == harbor.PrefixHarbor {
				p.only = append(p.only, name)
			}
		}
		p.needAuth(pre+name, resp)
		return resp
	}
	return nil
}

// mustHarbor is harbor for a method a block the agent advertises covers:
// Method not found under both names fails ACP-CAP-003 and ends the spec.
func (p *peer) mustHarbor(name, block string, params map[string]any) *acp.Response {
	GinkgoHelper()
	resp := p.harbor(name, params)
	if resp == nil {
		suite.Must(reqAdvertise, notImplemented(name, block))
	}
	return resp
}

// optHarbor is mustHarbor for a method only some requirements of the spec
// depend on: Method not found fails ACP-CAP-003, leaves blocks unverified
// and returns nil, and the spec goes on with the rest.
func (p *peer) optHarbor(name, block string, params map[string]any, blocks ...string) *acp.Response {
	GinkgoHelper()
	resp := p.harbor(name, params)
	if resp == nil {
		suite.CheckBlocks(reqAdvertise, notImplemented(name, block), blocks...)
	}
	return resp
}

func notImplemented(name, block string) error {
	return fmt.Errorf("the agent advertises %s, but %s%s and %s%s both answer Method not found", block, harbor.PrefixAH, name, harbor.PrefixHarbor, name)
}

// judgeNames records ACP-NAME-001 for the methods this spec called.
func (p *peer) judgeNames() {
	if len(p.only) > 0 {
		suite.Should(reqNames, fmt.Errorf("%s answered only under harbor/…, not _ah/… (ACP reserves method names without a leading underscore for itself)", strings.Join(p.only, ", ")))
	}
}

// object reads a Harbor answer as an object; a refusal or a non-object
// fails req.
func (p *peer) object(req, what string, resp *acp.Response) map[string]any {
	GinkgoHelper()
	if ref := harbor.Refused(resp); ref.Refused {
		suite.Must(req, fmt.Errorf("%s was refused: %s", what, refusalText(ref, resp)))
	}
	m, err := harbor.Object(resp.Result)
	if err != nil {
		suite.Must(req, fmt.Errorf("%s: %v", what, err))
	}
	return m
}

func refusalText(ref harbor.Refusal, resp *acp.Response) string {
	if ref.How == "problem" {
		return "a Problem+JSON result " + harbor.Raw(ref.Problem)
	}
	return clipS(string(resp.Raw))
}

// waitNote waits (up to the stream timeout) for a Harbor notification of
// kind from position from on that match accepts.
func (p *peer) waitNote(from int, kind string, match func(harbor.Note) bool) (harbor.Note, bool) {
	ctx, cancel := context.WithTimeout(p.ctx, suite.Env().Config.Timeouts.Stream)
	defer cancel()
	var found harbor.Note
	_, _, err := p.conn.Wait(ctx, from, func(m acp.Message) bool {
		n, ok := harbor.ParseNote(m)
		if ok && n.Kind == kind && (match == nil || match(n)) {
			found = n
			return true
		}
		return false
	})
	return found, err == nil
}
