package extended

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The WebSocket frame profile harn-ws.v1 (docs/websocket.md): how the
// specs of websocket*.go connect, wait for frames and judge every frame a
// session received. Dialing (the two ways to authenticate, the
// subprotocol) is client.OpenWS, the frames are ws.Frame; each session is
// recorded into the spec's transcript (client.WSSession); when the spec ends, however it ends, every server
// frame it received is judged against the profile: a frame that is not a
// text message of one JSON object fails EXT-WS-003 whichever spec saw it,
// and a frame that breaks its schema fails the requirement of its type
// (frameReq; a warning for a SHOULD or MAY). A spec whose subject is not the connection itself needs one
// as a prerequisite: when no session opens, it is unverified with the
// remedy to serve the profile (EXT-WS-001), never failed.

const (
	reqWSOffer    = "EXT-WS-001" // authenticated upgrade on both paths, the profile spoken, unauthenticated refused
	reqWSScheme   = "EXT-WS-002" // wss://, ws:// only on loopback or trusted development
	reqWSText     = "EXT-WS-003" // text frames of one JSON object
	reqWSMessage  = "EXT-WS-004" // user_message appends to the Session
	reqWSCancel   = "EXT-WS-005" // cancel_task as a REST cancel
	reqWSTruncate = "EXT-WS-006" // truncate_session keep_first
	reqWSEvents   = "EXT-WS-007" // event frames are the REST event list
	reqWSRequests = "EXT-WS-008" // input and authorization requests, answered on the socket
	reqWSHost     = "EXT-WS-009" // MAY: approval and tool requests
	reqWSResume   = "EXT-WS-010" // resume from a cursor; cursor_expired
	reqWSBeat     = "EXT-WS-011" // SHOULD: heartbeats within 30 s
	reqWSReplayed = "EXT-WS-012" // replayed marks history, not live frames
	reqWSIdem     = "EXT-WS-015" // a command repeated with its idempotency key acts once (the key itself is the client's MAY, EXT-WS-013)
	reqWSNoSub    = "EXT-WS-014" // SHOULD: an upgrade offering no subprotocol is harn-ws.v1
)

// remedyWS is the remedy of a spec whose WebSocket session did not open.
const remedyWS = "serve the harn-ws.v1 WebSocket profile (docs/websocket.md) on /v1/sessions/{id}/events/stream and /v1/tasks/{id}/stream (EXT-WS-001); this spec checks its own requirement once a session opens"

// wsLink is an open session with the ready frame that opened it.
type wsLink struct {
	*client.WSSession
	ready ws.Frame
}

func wsStream() time.Duration { return suite.Env().Config.Timeouts.Stream }

// wsProgress bounds a wait for frames that come from a task's progress
// (its agent may take up to --task-timeout), not from the suite's own
// command.
func wsProgress() time.Duration {
	return max(suite.Env().Config.Timeouts.Task, suite.Env().Config.Timeouts.Stream)
}

func sessionStream(sess string) string { return "/v1/sessions/" + client.Seg(sess) + "/events/stream" }
func taskStream(task string) string    { return "/v1/tasks/" + client.Seg(task) + "/stream" }

// plainRemote says why a WebSocket URL may not carry a credential ("" when
// it may): ws.PlainRemote with the operator's --ws-trusted-dev.
func plainRemote(raw string) string { return ws.PlainRemote(raw, suite.Env().Config.WSTrustedDev) }

// wsBaseURL is the URL the suite's WebSocket connections use.
func wsBaseURL() string { return ws.URL(strings.TrimRight(suite.Client().Options().BaseURL, "/")) }

// wsBlocked says why the suite may not open a WebSocket on the target
// ("" when it may): no credential travels over plain ws:// to a host
// other than loopback (the scheme is EXT-WS-002's to judge).
func wsBlocked() string {
	if why := plainRemote(wsBaseURL()); why != "" {
		return "the suite sends no credential over it: " + why
	}
	return ""
}

// wsAllowed ends the spec unverified when the suite may not send a
// credential over the target's WebSocket URL (section 1.1): the
// connection itself is EXT-WS-002's to judge.
func wsAllowed() {
	GinkgoHelper()
	if why := plainRemote(wsBaseURL()); why != "" {
		suite.Unverified("the suite sends no credential over plain ws:// to a host other than loopback: "+why,
			"serve the target over https:// so WebSocket runs over wss:// (EXT-WS-002), or state that this is a trusted development deployment with --ws-trusted-dev (CONFORM_WS_TRUSTED_DEV=true)")
	}
}

// wsAdvertised says where the target advertises its WebSocket transport:
// discovery's capabilities.websocket and the agent card's websocket
// interfaces ("" when it does neither).
func wsAdvertised(ctx context.Context) string {
	GinkgoHelper()
	var where []string
	if v, _ := suite.Env().Discovery.Capabilities["websocket"].(bool); v {
		where = append(where, "discovery capabilities.websocket is true")
	}
	if _, urls := advertised(ctx); len(urls["websocket"]) > 0 {
		where = append(where, fmt.Sprintf("the agent card lists websocket interfaces %v", urls["websocket"]))
	}
	return strings.Join(where, "; ")
}

// wsAttempt opens a connection as d says, with no verdict: the session
// (nil when the upgrade was refused or failed), the upgrade's answer, and
// the error (client.OpenWS). Every session opened is closed and its frames
// judged when the spec ends (judgeFrames).
func wsAttempt(ctx context.Context, d client.WSDial) (*client.WSSession, *client.Response, error) {
	GinkgoHelper()
	wsAllowed()
	s, resp, err := suite.Client().OpenWS(ctx, d)
	wsJudgeAtEnd(s)
	return s, resp, err
}

// wsJudgeAtEnd closes session s (when there is one) and judges its frames
// when the spec ends (judgeFrames): for every session a spec opened, or
// took over from an observation made beside the run (suite.Watch).
func wsJudgeAtEnd(s *client.WSSession) {
	if s != nil {
		suite.AtSpecEnd(func() { s.Close(); judgeFrames(s) })
	}
}

// Breakers (suite.Breaker, docs/interpretations.md#fail-fast): a feature
// of the target's WebSocket that times out twice in a row is not waited on
// again, so a silent server gets its verdict fast; each watches one
// feature and is consulted only where a requirement depends on it.
var (
	// wsReadyBreaker watches the first frame of authenticated sessions:
	// a transport that upgrades and then says nothing. Refusal probes
	// (unauthenticated, a bad cursor) never feed it: their silence is
	// their own requirement's.
	wsReadyBreaker = suite.NewBreaker("a first frame on an authenticated harn-ws.v1 session", 2)
	// wsCommandBreaker watches the result or error frames that answer
	// commands (docs/websocket.md section 4).
	wsCommandBreaker = suite.NewBreaker("a result or error frame answering a harn-ws.v1 command", 2)
	// wsRefusalBreakers watch the error frames refusing a connection or
	// a cursor, one per refusal's error code (so per requirement).
	wsRefusalBreakers sync.Map // error code → *suite.Breaker
)

// wsRefusalBreaker is the breaker of refusals with error code code.
func wsRefusalBreaker(code string) *suite.Breaker {
	b, _ := wsRefusalBreakers.LoadOrStore(code, suite.NewBreaker("an error frame "+code+" refusing a harn-ws.v1 connection or cursor", 2))
	return b.(*suite.Breaker)
}

// wsReady waits for the session's first frame and wants it to be ready
// (naming the auth frame's id when there was one): nil when it is.
func wsReady(ctx context.Context, s *client.WSSession) (ws.Frame, error) {
	if err := wsReadyBreaker.Open(); err != nil {
		return ws.Frame{}, fmt.Errorf("no ready frame waited for: %w", err)
	}
	f, err := s.Await(ctx, wsStream(), 0, func(ws.Frame) bool { return true })
	if err != nil {
		var we *client.WaitError
		if errors.As(err, &we) && we.Timeout() {
			wsReadyBreaker.Timeout(fmt.Sprintf("GET %s got no frame at all within --stream-timeout %s of its upgrade", s.Path, wsStream()))
		}
		return f, fmt.Errorf("no ready frame: %w (--stream-timeout %s)", err, wsStream())
	}
	wsReadyBreaker.Answered()
	switch {
	case f.Type == ws.TypeError:
		return f, fmt.Errorf("the first frame is an error instead of ready: %s", bounded(f.Raw))
	case f.Type != ws.TypeReady:
		return f, fmt.Errorf("the first frame is %s, want ready: %s", f, bounded(f.Raw))
	case f.Str("profile") != schemas.WSProfile:
		return f, fmt.Errorf("the ready frame names profile %v, want %q", f.Obj["profile"], schemas.WSProfile)
	case s.AuthID != "" && f.Str("in_reply_to") != s.AuthID:
		return f, fmt.Errorf("the ready frame answers in_reply_to %v, want the auth frame's id %q", f.Obj["in_reply_to"], s.AuthID)
	}
	return f, nil
}

// wsConnect opens a session and waits for its ready frame, with no
// verdict: the link, or why there is none.
func wsConnect(ctx context.Context, d client.WSDial) (*wsLink, error) {
	GinkgoHelper()
	s, resp, err := wsAttempt(ctx, d)
	return wsConnected(ctx, d, s, resp, err)
}

// wsConnected is wsConnect for an attempt already made (wsAttempt's
// results, or an observation's that the spec took over): the link, or
// why there is none.
func wsConnected(ctx context.Context, d client.WSDial, s *client.WSSession, resp *client.Response, err error) (*wsLink, error) {
	GinkgoHelper()
	if s == nil {
		var te *client.TransportError
		if resp == nil && errors.As(err, &te) {
			suite.Transport(err)
		}
		return nil, wsRefusal(resp, err)
	}
	if err != nil {
		suite.Transport(err)
	}
	want := schemas.WSProfile
	if d.NoSubprotocol {
		want = "" // RFC 6455 section 4.2.2: none offered, none selected
	}
	if sub := s.Response.Header.Get("Sec-WebSocket-Protocol"); sub != want {
		return nil, fmt.Errorf("GET %s upgraded (101) selecting subprotocol %q, want %q", d.Path, sub, want)
	}
	ready, err := wsReady(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("GET %s (authenticated with %s): %w", d.Path, d.Way, err)
	}
	return &wsLink{WSSession: s, ready: ready}, nil
}

// wsRefusal describes a refused upgrade.
func wsRefusal(resp *client.Response, err error) error {
	switch {
	case resp == nil:
		return err
	case resp.Status == http.StatusSwitchingProtocols:
		// Switched, but the handshake is broken (Sec-WebSocket-Accept, an
		// extension or subprotocol not offered): the client said why.
		return fmt.Errorf("%s, but the WebSocket handshake is invalid: %v", resp, err)
	}
	return fmt.Errorf("%s, want 101 Switching Protocols%s", resp, xHint(resp))
}

// wsOpen opens a session that the spec needs but does not judge: when none
// opens, the spec is unverified (remedyWS), naming what the target
// advertises.
func wsOpen(ctx context.Context, d client.WSDial) *wsLink {
	GinkgoHelper()
	l, err := wsConnect(ctx, d)
	return wsOpened(ctx, d, l, err)
}

// wsOpened is wsOpen for a connection already attempted (wsConnected's
// results).
func wsOpened(ctx context.Context, d client.WSDial, l *wsLink, err error) *wsLink {
	GinkgoHelper()
	if err != nil {
		adv := wsAdvertised(ctx)
		if adv == "" {
			adv = "the target advertises no WebSocket transport (discovery capabilities.websocket, agent card)"
		}
		suite.Unverified(fmt.Sprintf("opening a harn-ws.v1 session on %s (%s): %v; %s", d.Path, d.Way, err, adv), remedyWS)
	}
	return l
}

// await waits up to d for a frame after frame number after that
// satisfies want; why says in words why none came ("" when one did).
func (l *wsLink) await(ctx context.Context, d time.Duration, after int, what string, want func(ws.Frame) bool) (ws.Frame, string) {
	f, err := l.Await(ctx, d, after, want)
	if err == nil {
		return f, ""
	}
	var we *client.WaitError
	if errors.As(err, &we) && we.Timeout() {
		limit := "--stream-timeout"
		if d != wsStream() {
			limit = "--task-timeout"
		}
		return f, fmt.Sprintf("no %s frame on %s within %s (%s)", what, l.Path, d, limit)
	}
	return f, fmt.Sprintf("no %s frame: %v", what, err)
}

// command sends a command frame and waits for its result or error
// (wsCommand); why says why none came ("" when one did).
func (l *wsLink) command(ctx context.Context, frame map[string]any) (ws.Frame, string) {
	GinkgoHelper()
	f, err := wsCommand(ctx, l.WSSession, frame)
	if err == nil {
		return f, ""
	}
	var te *client.TransportError
	if errors.As(err, &te) {
		suite.Transport(err)
	}
	var we *client.WaitError
	if errors.As(err, &we) && we.Timeout() {
		return f, fmt.Sprintf("the %v command (id %v) got no result or error frame on %s within --stream-timeout (%s)", frame["type"], frame["id"], l.Path, wsStream())
	}
	return f, fmt.Sprintf("the %v command: %v", frame["type"], err)
}

// wsCommand sends a command frame on s and waits up to --stream-timeout
// for its result or error frame. Once commands have gone unanswered twice
// in a row (wsCommandBreaker), the command is not sent, and the error says
// so at once.
func wsCommand(ctx context.Context, s *client.WSSession, frame map[string]any) (ws.Frame, error) {
	if err := wsCommandBreaker.Open(); err != nil {
		return ws.Frame{}, fmt.Errorf("not sent, nor its answer waited for: %w", err)
	}
	f, err := s.Command(ctx, wsStream(), frame)
	var we *client.WaitError
	switch {
	case err == nil:
		wsCommandBreaker.Answered()
	case errors.As(err, &we) && we.Timeout():
		wsCommandBreaker.Timeout(fmt.Sprintf("%v on %s", frame["type"], s.Path))
	}
	return f, err
}

// resultOf wants a command's answer to be a result with one of statuses,
// and returns its result member.
func resultOf(f ws.Frame, what string, statuses ...int) (map[string]any, error) {
	if f.Type != ws.TypeResult || !slices.Contains(statuses, f.Status()) {
		return nil, fmt.Errorf("%s: answered %s %s, want a result frame with status %v", what, f, bounded(f.Raw), statuses)
	}
	r := f.Member("result")
	if r == nil {
		return nil, fmt.Errorf("%s: the result frame's result is %v, want the REST answer's body (an object)", what, f.Obj["result"])
	}
	return r, nil
}

func bounded(b []byte) string {
	s := suite.Env().Redactor.String(string(b))
	if r := []rune(s); len(r) > 300 {
		return string(r[:300]) + "…"
	}
	return s
}

// withEventID matches an event frame carrying event id.
func withEventID(id string) func(ws.Frame) bool {
	return func(f ws.Frame) bool { return f.Type == ws.TypeEvent && f.Str("event_id") == id }
}

// eventOf matches an event frame of kind about task (any task when "").
func eventOf(task string, kinds ...string) func(ws.Frame) bool {
	return func(f ws.Frame) bool {
		if f.Type != ws.TypeEvent || !slices.Contains(kinds, f.EventKind()) {
			return false
		}
		if task == "" {
			return true
		}
		e := f.Event()
		r, _ := e["resource"].(map[string]any)
		return e["task_id"] == task || (r["object"] == "task" && r["id"] == task)
	}
}

// terminalKinds are the events that end a task.
var terminalKinds = []string{"task.completed", "task.failed", "task.canceled"}

// sessionEvents reads every event of session sess (xPrereq on failure).
func sessionEvents(ctx context.Context, sess string) []map[string]any {
	GinkgoHelper()
	return xPrereqList(ctx, "reading the session's events (GET /v1/sessions/{id}/events)", "CORE-EVT-001", "/v1/sessions/"+client.Seg(sess)+"/events", nil)
}

// eventIDs are the ids of events.
func eventIDs(evs []map[string]any) []string {
	ids := make([]string, 0, len(evs))
	for _, e := range evs {
		ids = append(ids, xID(e))
	}
	return ids
}

// parity compares the events a WebSocket delivered with the REST list.
func parity(restName string, rest []map[string]any, wsName string, got []map[string]any) error {
	ds := check.Parity([]check.View{{Transport: "rest", Name: restName, Events: rest}, {Transport: "websocket", Name: wsName, Events: got}},
		check.ParityOptions{Redact: suite.Env().Redactor.String})
	if len(ds) == 0 {
		return nil
	}
	return ds[0]
}

// ---- judging every frame a session received ----

// commandReqs maps the type of a client frame to the requirement its
// answer (result or error) belongs to.
var commandReqs = map[string]string{
	ws.TypeAuth: reqWSOffer, ws.TypeUserMessage: reqWSMessage, ws.TypeCancelTask: reqWSCancel, ws.TypeTruncateSession: reqWSTruncate,
	ws.TypeInputResponse: reqWSRequests, ws.TypeAuthorizationResponse: reqWSRequests, ws.TypeApprovalResponse: reqWSHost, ws.TypeToolResult: reqWSHost,
	ws.TypeResume: reqWSResume, ws.TypePing: reqWSBeat,
}

// frameReq is the requirement a schema problem of frame f belongs to.
func frameReq(s interface{ SentType(id string) string }, f ws.Frame, p schemas.Problem) string {
	at := func(ptr string) bool { return p.Location == ptr || strings.HasPrefix(p.Location, ptr+"/") }
	switch f.Type {
	case ws.TypeReady:
		if at("/heartbeat_interval_ms") || at("/pong_timeout_ms") {
			return reqWSBeat
		}
		return reqWSOffer
	case ws.TypeEvent:
		if at("/replayed") {
			return reqWSReplayed
		}
		return reqWSEvents
	case ws.TypeInputRequest, ws.TypeAuthorizationRequest:
		if at("/replayed") {
			return reqWSReplayed
		}
		return reqWSRequests
	case ws.TypeApprovalRequest, ws.TypeToolRequest:
		if at("/replayed") {
			return reqWSReplayed
		}
		return reqWSHost
	case ws.TypePing, ws.TypePong:
		return reqWSBeat
	case ws.TypeResult, ws.TypeError:
		if r, ok := commandReqs[s.SentType(f.Str("in_reply_to"))]; ok {
			return r
		}
		if f.Type == ws.TypeError && f.ErrorCode() == "cursor_expired" {
			return reqWSResume
		}
		return reqWSOffer // a connection-level error: the profile spoken at all
	}
	return reqWSText
}

// judgeFrames judges every server frame of session s: a message that is not
// text holding one JSON object fails EXT-WS-003, a frame that breaks its
// schema the requirement of its type (a SHOULD's or MAY's is a warning), a second
// ready frame EXT-WS-001. A frame of a type the profile does not name is
// noted: a client must ignore it. One verdict per requirement and session,
// naming the first frame and how many more.
func judgeFrames(s *client.WSSession) {
	reg, err := requirements.Default()
	if err != nil {
		return // Validate reported it before the run
	}
	type finding struct {
		first string
		more  int
	}
	byReq := map[string]*finding{}
	var order []string
	add := func(req, msg string) {
		if f := byReq[req]; f != nil {
			f.more++
			return
		}
		byReq[req] = &finding{first: msg}
		order = append(order, req)
	}
	var unknown []string
	readies := 0
	for _, f := range s.Frames() {
		if f.Type == ws.TypeReady {
			readies++
			if readies == 2 {
				add(reqWSOffer, fmt.Sprintf("GET %s %s: a second ready frame; the profile sends one, first after authentication", s.Path, f))
			}
		}
		if len(f.Problems) == 0 {
			continue
		}
		if f.Binary || f.Obj == nil {
			add(reqWSText, fmt.Sprintf("GET %s %s: %s; received: %s", s.Path, f, f.Problems[0].Message, bounded(f.Raw)))
			continue
		}
		if f.Type != "" && !slices.Contains(ws.ServerTypes, f.Type) {
			unknown = append(unknown, f.Type)
			continue
		}
		for _, p := range f.Problems {
			add(frameReq(s, f, p), fmt.Sprintf("GET %s %s breaks the harn-ws.v1 frame schema: %s; received: %s", s.Path, f, p, bounded(f.Raw)))
		}
	}
	if len(unknown) > 0 {
		suite.Note(fmt.Sprintf("GET %s: the server sent frames of types the harn-ws.v1 profile does not name (%v); a client ignores them (docs/websocket.md section 2)", s.Path, unknown))
	}
	for _, req := range order {
		f := byReq[req]
		msg := f.first
		if f.more > 0 {
			msg += fmt.Sprintf(" (and %d more like it on this connection)", f.more)
		}
		err := errors.New(msg)
		if r, _ := reg.Lookup(req); r.Keyword.Mandatory() {
			suite.Check(req, err)
		} else {
			// A SHOULD, or a MAY the target took up: a warning, as the
			// OpenAPI oracle records them.
			suite.Should(req, err)
		}
	}
}
