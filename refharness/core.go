package refharness

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// The core surface: what a transport adapter outside this package builds
// on (issue 11: one event-sourced core, each transport a thin adapter over
// it). The WebSocket adapter (package wsadapter) is the first such adapter;
// this surface is the seam the next ones use. It is deliberately small and
// holds no business logic of its own:
//
//   - Server.SetUpgradeHandler mounts an adapter on the two per-resource
//     stream paths (ServeHTTP hands it the requests that ask for a
//     WebSocket upgrade, before its own version and credential checks,
//     since a browser's upgrade carries neither header);
//   - Server.OpenStream authenticates a credential and checks the protocol
//     version and the caller's right to read the stream's resource exactly
//     as the REST stream route does, and returns a Stream;
//   - Stream.Exec runs a REST operation in-process for the stream's caller,
//     through the router: a transport's command IS the REST command (the
//     same validation, authorization, tenancy, idempotency records,
//     journal and events), and its answer is the REST status and body;
//   - Stream.Start and Stream.Read read the resource's events after a
//     cursor, as the SSE stream does (cursor validation, durability, the
//     same rendering, a wake-up channel for live events);
//   - the pending requests of the resource (tasks waiting for input or
//     authorization, with the Event that opened each wait), so a
//     transport can present them and have them answered.

// Faults of this area: the WebSocket profile harn-ws.v1 (docs/websocket.md):
// package wsadapter acts on them through Server.Fault, and only where it is
// mounted; two are this package's (the upgrade's credential check here, the
// card's interface in hostev.go).
var (
	FaultWSUpgradeUnauthenticated = declare(fault.Fault{Name: "ws-upgrade-unauthenticated",
		Doc:   "an upgrade with a wrong Authorization header, or a wrong credential in the auth frame, still gets ready and events",
		Fails: []string{"EXT-WS-001"}})
	FaultWSAdvertisesPlainRemote = declare(fault.Fault{Name: "ws-advertises-plain-remote",
		Doc:   "the agent card lists a websocket interface with a ws:// URL on a non-loopback host",
		Fails: []string{"EXT-WS-002"}})
	FaultWSBinaryEventFrames = declare(fault.Fault{Name: "ws-binary-event-frames",
		Doc:   "event frames are sent as binary messages (same bytes)",
		Fails: []string{"EXT-WS-003"}})
	FaultWSMessageNotAppended = declare(fault.Fault{Name: "ws-message-not-appended",
		Doc:       "user_message answers 201 with a Message-shaped body, but nothing is appended",
		Fails:     []string{"EXT-WS-004"},
		Tolerated: []string{"EXT-WS-016"},
		Why:       "each user_message answers a Message of its own making: the same broken command, which the race of a message sent over REST and WebSocket at once sees too (EXT-WS-016)"})
	FaultWSCancelIgnored = declare(fault.Fault{Name: "ws-cancel-ignored",
		Doc:         "cancel_task answers 200 with the task but does not cancel it",
		Fails:       []string{"EXT-WS-005"},
		TaskTimeout: 3 * time.Second,
		Why:         "the task works ten minutes and the cancel never takes: the wait for CANCELED (cancellation is cooperative) lasts the whole task timeout, and 3 s is ample for the reference Harness"})
	FaultWSTruncateKeepsAll = declare(fault.Fault{Name: "ws-truncate-keeps-all",
		Doc:   "truncate_session answers 200 but keeps every turn and emits nothing",
		Fails: []string{"EXT-WS-006"}})
	FaultWSEventFrameDiffers = declare(fault.Fault{Name: "ws-event-frame-differs",
		Doc:   "event frames carry the Event with its payload emptied (event_id still right)",
		Fails: []string{"EXT-WS-007"}})
	FaultWSNoInputRequest = declare(fault.Fault{Name: "ws-no-input-request",
		Doc:   "no input_request frame when a task waits for input (authorization requests unchanged)",
		Fails: []string{"EXT-WS-008"}})
	FaultWSApprovalAnswerIgnored = declare(fault.Fault{Name: "ws-approval-answer-ignored",
		Doc:   "an approval_response approved:true is answered result, and the tool call is denied",
		Warns: []string{"EXT-WS-009"}})
	FaultWSResumeSkipsEvent = declare(fault.Fault{Name: "ws-resume-skips-event",
		Doc:   "a delivery run from a cursor (connect or resume) skips the first event after it",
		Fails: []string{"EXT-WS-010"}})
	FaultWSNoHeartbeat = declare(fault.Fault{Name: "ws-no-heartbeat",
		Doc:   "no ping frames",
		Warns: []string{"EXT-WS-011"}})
	FaultWSReplayedUnmarked = declare(fault.Fault{Name: "ws-replayed-unmarked",
		Doc:   "frames delivered from history carry replayed:false",
		Fails: []string{"EXT-WS-012"}})
	FaultWSIdempotencyIgnored = declare(fault.Fault{Name: "ws-idempotency-ignored",
		Doc:   "a command's idempotency_key is ignored: a repeat acts twice",
		Fails: []string{"EXT-WS-015", "EXT-WS-016"}})
	// A race in the commands' idempotency: a command looks its key up
	// when it arrives and has its first answer recorded once the write is
	// durable (routes.go, lateIdem), while REST writes check and record
	// under one lock. A command repeated later replays; a command and its
	// REST request sent at once both act.
	FaultWSCommandIdempotencyRaced = declare(fault.Fault{Name: "ws-command-idempotency-raced",
		Doc:   "a WebSocket command looks its idempotency key up on arrival and records it once the write is durable: a command and its REST request with one key, sent at once, both act; a command repeated later replays",
		Fails: []string{"EXT-WS-016"}, Race: true})
	// A race: an unlocked subscriber list, on the WebSocket session
	// streams (as FaultSSESubscribersLost on SSE, events.go): a delivery
	// run reads the list when it starts and stores it with itself added
	// once it has sent the history; of sessions that open at once, some
	// are never woken for live events.
	FaultWSSubscribersLost = declare(fault.Fault{Name: "ws-subscribers-lost",
		Doc:       "WebSocket session streams register for live events in a subscriber list updated without a lock (read when a delivery run starts, stored after the history): of sessions opened at once, some deliver no live event",
		Fails:     []string{"EXT-WS-017"},
		Tolerated: []string{"EXT-WS-004", "EXT-WS-006", "EXT-WS-007", "EXT-WS-008", "EXT-WS-009", "EXT-WS-010", "EXT-WS-012"},
		Why:       "any session stream opened, or resumed, within a store round trip of another (a spec's observer beside the stream it sends its commands on) can lose its registration the same way, and then waits for a live event that never comes: the appended message (EXT-WS-004), the truncation (EXT-WS-006), the event frames (EXT-WS-007), the input or approval request (EXT-WS-008, EXT-WS-009), the events after a resumption (EXT-WS-010, EXT-WS-012)",
		Race:      true})
	// docs/interpretations.md#fail-fast: the suite's deliberately silent
	// probe gets no frame, while every authenticated session works; only
	// that probe's requirement may fail, whatever the spec order.
	FaultWSUnauthenticatedSilent = declare(fault.Fault{Name: "ws-unauthenticated-silent",
		Doc:   "an upgrade without a credential that never sends its auth frame is kept open and sent nothing: no error frame 401, no close 4401",
		Fails: []string{"EXT-WS-001"}})
)

// Resource names the Session or Task whose events a stream carries.
type Resource struct {
	Object string `json:"object"` // "session" or "task"
	ID     string `json:"id"`
}

// StreamResource reports whether path (a request path under the harness's
// mount point) is one of the per-resource stream paths,
// /v1/sessions/{id}/events/stream and /v1/tasks/{id}/stream, and names
// their resource. The global feed /v1/events/stream is not one.
func StreamResource(path string) (Resource, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(path, "/"), "/v1/")
	if !ok {
		return Resource{}, false
	}
	segs := strings.Split(rest, "/")
	if ps, ok := match("sessions/{}/events/stream", segs); ok {
		return Resource{Object: "session", ID: ps[0]}, true
	}
	if ps, ok := match("tasks/{}/stream", segs); ok {
		return Resource{Object: "task", ID: ps[0]}, true
	}
	return Resource{}, false
}

// IsUpgrade reports whether r asks for a WebSocket upgrade.
func IsUpgrade(r *http.Request) bool {
	for _, v := range r.Header.Values("Upgrade") {
		for _, tok := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), "websocket") {
				return true
			}
		}
	}
	return false
}

// upgrader holds the mounted upgrade handler (atomic: mounting may race
// with serving in a test).
type upgrader struct{ h atomic.Pointer[http.Handler] }

// SetUpgradeHandler mounts h for WebSocket upgrades on the per-resource
// stream paths; nil unmounts it. With a handler mounted, discovery
// advertises capabilities.websocket; without one, an upgrade request is
// served as any other request (SSE, or the REST errors).
func (s *Server) SetUpgradeHandler(h http.Handler) {
	if h == nil {
		s.upgrade.h.Store(nil)
		return
	}
	s.upgrade.h.Store(&h)
}

func (s *Server) upgradeHandler() http.Handler {
	if p := s.upgrade.h.Load(); p != nil {
		return *p
	}
	return nil
}

// Done is closed when the server closes: adapters end their connections.
func (s *Server) Done() <-chan struct{} { return s.ctx.Done() }

// Fault reports whether fault f is on (adapters implement their own
// transport's faults).
func (s *Server) Fault(f Fault) bool { return s.opts.Faults.Has(f) }

// NewID mints an id of kind from the server's id source (connection ids,
// request ids of error envelopes).
func (s *Server) NewID(kind string) string { return s.ids.NewID(kind) }

// Now is the server clock's current time as the protocol renders it.
func (s *Server) Now() string { return s.now() }

// CheckVersion checks a protocol version value as REST checks the
// version header of r's path (426 unsupported_protocol_version).
func (s *Server) CheckVersion(r *http.Request, version string) *Error {
	req := r.Clone(r.Context())
	req.Header = http.Header{}
	req.Header.Set(VersionHeader, version)
	if e := s.checkVersion(req); e != nil {
		return &Error{e}
	}
	return nil
}

// Error is a refusal as REST renders it: an HTTP status and an error code
// (and the rest of the error envelope).
type Error struct{ e *apiError }

// NewError builds an error of the protocol's taxonomy; param names the
// offending member, "" for none.
func NewError(status int, code, param, message string, details map[string]any) *Error {
	return &Error{&apiError{Status: status, Code: code, Param: param, Message: message, Details: details}}
}

// Status is the HTTP status of the error.
func (e *Error) Status() int { return e.e.Status }

// Code is the error code.
func (e *Error) Code() string { return e.e.Code }

func (e *Error) Error() string { return e.e.Error() }

// WriteError answers r with e as REST does (error envelope, faults applied).
func (s *Server) WriteError(w http.ResponseWriter, r *http.Request, e *Error) {
	s.writeError(w, r, e.e)
}

// ErrorEnvelope renders e as the REST error body, {"error": {...}}, with a
// fresh request id and the error-shape faults applied.
func (s *Server) ErrorEnvelope(e *Error) []byte {
	b, err := s.render(s.errorBody(e.e, s.ids.NewID("req")))
	if err != nil {
		return []byte(`{"error":{"code":"internal_error","type":"server_error","message":"cannot render error"}}`)
	}
	return b
}

// Stream is an authorized reader of one Session's or Task's events, and the
// caller on whose behalf a transport runs commands. It keeps the credential
// it was opened with in memory, so that every command is authenticated as
// its REST request would be (an OAuth2 token's scopes and expiry
// included); the credential is never rendered (String hides it).
type Stream struct {
	s        *Server
	res      Resource
	sel      streamSel
	actor    string
	auth     string // the Authorization value; never printed
	version  string
	host     string
	prefix   string // what a wrapping http.StripPrefix removed (baseURL)
	remote   string
	tlsState *tls.ConnectionState
}

// String names the stream without its credential.
func (st *Stream) String() string { return "stream of " + st.res.Object + " " + st.res.ID }

// GoString is String: %#v must not print the credential either.
func (st *Stream) GoString() string { return st.String() }

// Resource is the stream's Session or Task.
func (st *Stream) Resource() Resource { return st.res }

// Actor is the authenticated actor.
func (st *Stream) Actor() string { return st.actor }

// OpenStream authorizes a stream of the resource r's path names, for the
// credential authorization (the Authorization header's value) and the
// protocol version, with the same checks in the same order as the REST
// stream route: version (426), credential (401), the caller's right to
// read the resource (403, or 404 for a resource of another tenant) and its
// existence (404). r is the upgrade request; its Host, TLS state and mount
// prefix are those of the REST requests the stream's commands become.
func (s *Server) OpenStream(r *http.Request, authorization, version string) (*Stream, *Error) {
	res, ok := StreamResource(r.URL.Path)
	if !ok {
		return nil, &Error{notFound("stream", r.URL.Path)}
	}
	way := streamByAuthFrame
	if _, present := r.Header["Authorization"]; present {
		way = streamByUpgrade
	}
	req := r.Clone(context.WithValue(r.Context(), streamWayKey{}, way)) // oauth.go
	req.Method = http.MethodGet
	req.Header = http.Header{}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	if version != "" {
		req.Header.Set(VersionHeader, version)
	}
	if e := s.checkVersion(req); e != nil {
		return nil, &Error{e}
	}
	actor, e := s.authenticate(req)
	anonymous := false
	if e != nil && e.Status == http.StatusUnauthorized && s.opts.Faults.Has(FaultWSUpgradeUnauthenticated) {
		// The fault: a wrong credential opens the stream anyway, past the
		// tenancy check too (no actor owns anything).
		actor, e, anonymous = "actor_anonymous", nil, true
	}
	if e != nil {
		return nil, &Error{e}
	}
	pattern, target := "sessions/{}/events/stream", "/v1/sessions/"+res.ID+"/events/stream"
	if res.Object == "task" {
		pattern, target = "tasks/{}/stream", "/v1/tasks/"+res.ID+"/stream"
	}
	c := &call{r: req, actor: actor, params: []string{res.ID}, q: url.Values{}, target: target}
	st := &Stream{s: s, res: res, actor: actor, auth: authorization, version: version, host: r.Host,
		remote: r.RemoteAddr, tlsState: r.TLS}
	if u, err := url.ParseRequestURI(r.RequestURI); err == nil && strings.HasSuffix(u.Path, r.URL.Path) {
		st.prefix = strings.TrimSuffix(u.Path, r.URL.Path)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if e := s.gateLocked(c, route{method: http.MethodGet, pattern: pattern}); e != nil && !anonymous { // authz.go
		return nil, &Error{e}
	}
	switch res.Object {
	case "session":
		if _, ok := s.st.sessions.get(res.ID); !ok {
			return nil, &Error{notFound("session", res.ID)}
		}
		st.sel = streamSel{sessionID: res.ID}
	default:
		t, ok := s.st.tasks.get(res.ID)
		if !ok {
			return nil, &Error{notFound("task", res.ID)}
		}
		st.sel = s.taskSel(t)
	}
	return st, nil
}

// CoversTask reports whether task id belongs to the stream's resource: the
// Task itself, or a task of the Session.
func (st *Stream) CoversTask(id string) bool {
	if st.res.Object == "task" {
		return id == st.res.ID
	}
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	t, ok := st.s.st.tasks.get(id)
	return ok && t.SessionID == st.res.ID
}

// CoversSession reports whether session id is the stream's resource or the
// stream's Task's session.
func (st *Stream) CoversSession(id string) bool {
	if st.res.Object == "session" {
		return id == st.res.ID
	}
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	t, ok := st.s.st.tasks.get(st.res.ID)
	return ok && t.SessionID == id
}

// IsPermissionRequest reports whether id names a PermissionRequest (a
// request answered by POST /v1/permission-requests/{id}/respond).
func (st *Stream) IsPermissionRequest(id string) bool {
	st.s.mu.RLock()
	defer st.s.mu.RUnlock()
	_, ok := st.s.st.pr.reqs.get(id)
	return ok
}

// Command is one REST operation run in-process for a stream's caller.
type Command struct {
	Method string // POST, …
	// Path is the REST path below the mount point, e.g.
	// /v1/tasks/{id}/cancel, unescaped.
	Path           string
	IdempotencyKey string // "" for none
	Body           []byte // JSON; nil for none
	// Answers, when set, makes the command the answer to a pending
	// request: it is refused 404 when the request is unknown (or not of
	// the task) and 409 when it is no longer pending, checked under the
	// write lock after the idempotency records (so a retry of an answer
	// with the same key replays the first answer) and before the write.
	Answers *RequestRef
}

// RequestRef names a request a command answers.
type RequestRef struct {
	// Kinds are the kinds of request the command answers:
	// "input_request", or a decision's "authorization_request" and
	// "approval_request".
	Kinds  []string
	TaskID string
	ID     string // the request_id
	Param  string // the member a 404 names, e.g. "/request_id"
}

// Reply is a REST answer.
type Reply struct {
	Status int
	Body   []byte // the JSON body as sent (output faults applied)
	// Replayed: the idempotency layer answered with a first request's
	// response (Idempotent-Replayed: true).
	Replayed bool
}

// Exec runs cmd through the router as the stream's caller, with the
// credential and version the stream was opened with, and returns its REST
// answer.
func (st *Stream) Exec(ctx context.Context, cmd Command) Reply {
	u := &url.URL{Scheme: "http", Host: st.host, Path: cmd.Path}
	if st.tlsState != nil {
		u.Scheme = "https"
	}
	req, err := http.NewRequestWithContext(ctx, cmd.Method, u.String(), bytes.NewReader(cmd.Body))
	if err != nil {
		return st.internal(err)
	}
	req = req.WithContext(context.WithValue(req.Context(), commandKey{}, true))
	if cmd.Answers != nil {
		req = req.WithContext(context.WithValue(req.Context(), answersKey{}, *cmd.Answers))
	}
	req.Host = st.host
	req.RemoteAddr = st.remote
	req.RequestURI = st.prefix + u.EscapedPath()
	req.TLS = st.tlsState
	if st.auth != "" {
		req.Header.Set("Authorization", st.auth)
	}
	if st.version != "" {
		req.Header.Set(VersionHeader, st.version)
	}
	if cmd.Body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if cmd.IdempotencyKey != "" {
		req.Header.Set("Idempotency-Key", cmd.IdempotencyKey)
	}
	rec := &recorder{h: http.Header{}}
	st.s.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return Reply{Status: rec.status, Body: bytes.TrimSpace(rec.buf.Bytes()), Replayed: rec.h.Get("Idempotent-Replayed") == "true"}
}

func (st *Stream) internal(err error) Reply {
	return Reply{Status: http.StatusInternalServerError, Body: st.s.ErrorEnvelope(&Error{internal(err)})}
}

// recorder is the ResponseWriter of an in-process REST call.
type recorder struct {
	h      http.Header
	status int
	buf    bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.h }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	if r.buf.Len()+len(b) > 8<<20 { // bounded: no REST answer of this harness comes near it
		return 0, errors.New("refharness: in-process answer too large")
	}
	return r.buf.Write(b)
}

// answersKey carries a Command's RequestRef to doWrite.
type answersKey struct{}

// commandKey marks a request that is a transport's command (Stream.Exec).
type commandKey struct{}

// isCommand reports whether r is a transport's command.
func isCommand(r *http.Request) bool { v, _ := r.Context().Value(commandKey{}).(bool); return v }

// Subscription is a delivery run's registration for live events under
// FaultWSSubscribersLost: the subscriber list as the run found it, and
// its wake-up channel, stored into the list by Register.
type Subscription struct {
	listed *[]chan struct{}
	Wake   chan struct{}
}

// Subscribe starts a run's registration for live events in the
// subscriber list (FaultWSSubscribersLost): it reads the list now.
func (s *Server) Subscribe() *Subscription {
	return &Subscription{listed: s.subs.Load(), Wake: make(chan struct{}, 1)}
}

// Register stores the list the subscription read with its channel added,
// whatever the list became meanwhile (the fault's lost update), a store
// round trip (raceGap, routes.go) after it was read.
func (s *Server) Register(sub *Subscription) {
	time.Sleep(raceGap)
	s.subs.Store(withSub(sub.listed, sub.Wake)) // events.go
}

// Unsubscribe drops the subscription's channel from the list, as
// carelessly.
func (s *Server) Unsubscribe(sub *Subscription) { s.unsubscribe(sub.Wake) }

// answersLocked is the precondition of a command that answers a request
// (Command.Answers), nil for any other write. Holds s.mu.
func (s *Server) answersLocked(r *http.Request) *apiError {
	ref, ok := r.Context().Value(answersKey{}).(RequestRef)
	if !ok {
		return nil
	}
	req, pending, found := s.requestLocked(ref.TaskID, ref.ID)
	if !found || !slices.Contains(ref.Kinds, req.Kind) {
		e := notFound("request", ref.ID)
		e.Param = ref.Param
		return e
	}
	if !pending {
		return conflict("request %s of task %s is no longer pending", ref.ID, ref.TaskID)
	}
	return nil
}

// Cursor is a position in the event log: where a delivery run starts, or
// the last event a reader was given.
type Cursor struct{ pos uint64 }

// After reports whether c is a later position than d.
func (c Cursor) After(d Cursor) bool { return c.pos > d.pos }

// StreamEvent is one event of a stream, rendered.
type StreamEvent struct {
	ID   string
	Kind string // the Event's event type, e.g. task.input_required
	// JSON is the Event exactly as the REST event list renders it (and the
	// SSE data: line carries it), output faults and variants applied.
	JSON   []byte
	Cursor Cursor
	// Opens is the request this event opened, while it is still pending
	// when read (task.input_required, task.auth_required).
	Opens *Request
}

// Request is a wait of a task for its client: input (INPUT_REQUIRED), an
// authorization or a tool approval (AUTH_REQUIRED).
type Request struct {
	Kind      string // "input_request", "authorization_request" or "approval_request"
	ID        string // the request_id an answer names
	TaskID    string
	SessionID string
	EventID   string // the Event that opened the wait
	CreatedAt string
	// Permission: ID is a PermissionRequest's id, answered by POST
	// /v1/permission-requests/{id}/respond; otherwise an authorization is
	// answered by a tool_confirmation message of the task.
	Permission bool
	Prompt     string // input_request
	Reason     string // authorization_request, approval_request
	Action     any    // authorization_request: what is to be authorized
	ToolCallID string // approval_request
	Name       string
	Input      map[string]any
	pos        uint64
}

// Run is the start of a delivery run: the events after From up to H come
// from history, Pending are the resource's requests pending at H (in the
// order they were opened), and events after H are live.
type Run struct {
	From, H Cursor
	Pending []Request
}

// Start fixes a delivery run after the event lastEventID ("": from the
// start of the resource's log). A cursor the server never issued or no
// longer retains is refused 410 cursor_expired, param naming it.
func (st *Stream) Start(lastEventID, param string) (Run, *Error) {
	s := st.s
	s.mu.RLock()
	var from uint64
	if lastEventID != "" {
		pos, ok := s.st.cursorValid(lastEventID)
		if !ok {
			s.mu.RUnlock()
			return Run{}, &Error{cursorExpired(param, lastEventID)}
		}
		from = pos
	}
	h := s.st.visible - 1
	pending := st.pendingLocked()
	seq := s.lastSeq
	s.mu.RUnlock()
	if err := s.wait(seq); err != nil {
		return Run{}, &Error{&apiError{Status: http.StatusServiceUnavailable, Code: "service_unavailable", Message: err.Error()}}
	}
	return Run{From: Cursor{from}, H: Cursor{h}, Pending: pending}, nil
}

// Batch is what one Read returns.
type Batch struct {
	Events []StreamEvent
	More   bool            // more events are ready: read again at once
	Wake   <-chan struct{} // closed when new events may be ready
	// Over: a task stream whose task is terminal and whose last event is
	// in this batch or was before it.
	Over bool
}

// Read returns up to max events of the stream after `after`, once durable,
// each with the request it opened when that request is still pending.
func (st *Stream) Read(after Cursor, max int) (Batch, error) {
	s := st.s
	s.mu.RLock()
	evs, more := s.st.eventsAfter(st.sel, after.pos, max)
	b := Batch{More: more, Wake: s.notify}
	b.Over = !more && st.sel.taskID != "" && s.taskOverLocked(st.sel.taskID, after.pos, evs)
	b.Events = make([]StreamEvent, 0, len(evs))
	for _, e := range evs {
		out := StreamEvent{ID: e.ID, Kind: e.Event, Cursor: Cursor{e.pos}}
		if r, ok := s.openedLocked(e); ok {
			out.Opens = r
		}
		b.Events = append(b.Events, out)
	}
	seq := s.lastSeq
	s.mu.RUnlock()
	if err := s.wait(seq); err != nil {
		return Batch{}, err
	}
	for i, e := range evs {
		data, err := s.wireJSON(e)
		if err != nil {
			return Batch{}, err
		}
		b.Events[i].JSON = data
	}
	return b, nil
}

// openedLocked is the request event e opened, if it is still pending.
func (s *Server) openedLocked(e *Event) (*Request, bool) {
	if e.TaskID == nil {
		return nil, false
	}
	var id string
	switch e.Event {
	case "task.input_required":
		id = inputRequestPrefix + e.ID
	case "task.auth_required":
		id = s.st.pr.opens[e.ID]
		if id == "" {
			id = authRequestPrefix + e.ID
		}
	default:
		return nil, false
	}
	r, pending, ok := s.requestLocked(*e.TaskID, id)
	return r, ok && pending
}

// Request ids of the waits that have no resource of their own: the
// opening event's id behind a prefix. A tool approval or an authorization
// is a PermissionRequest, whose id is the request id (unless
// FaultPermissionNotListed opened none).
const (
	inputRequestPrefix = "inreq_"
	authRequestPrefix  = "authreq_"
)

// requestLocked finds request id of task taskID and whether it is still
// pending. Holds s.mu.
func (s *Server) requestLocked(taskID, id string) (r *Request, pending, found bool) {
	t, ok := s.st.tasks.get(taskID)
	if !ok {
		return nil, false, false
	}
	opening := func(prefix, kind string) (*Event, bool) {
		evID, ok := strings.CutPrefix(id, prefix)
		if !ok {
			return nil, false
		}
		pos, ok := s.st.parseEventID(evID)
		if !ok {
			return nil, false
		}
		e, ok := s.st.event(pos)
		if !ok || e.Event != kind || e.TaskID == nil || *e.TaskID != taskID {
			return nil, false
		}
		return e, true
	}
	if e, ok := opening(inputRequestPrefix, "task.input_required"); ok {
		prompt, _ := e.Payload["prompt"].(string)
		r = &Request{Kind: "input_request", ID: id, TaskID: taskID, SessionID: t.SessionID, EventID: e.ID, CreatedAt: e.CreatedAt,
			Prompt: prompt, pos: e.pos}
		return r, t.Status == StatusInputRequired && !s.answeredLocked(taskID, e.pos, "user.input_submitted"), true
	}
	if e, ok := opening(authRequestPrefix, "task.auth_required"); ok && s.st.pr.opens[e.ID] == "" {
		reason, _ := e.Payload["reason"].(string)
		r = &Request{Kind: "authorization_request", ID: id, TaskID: taskID, SessionID: t.SessionID, EventID: e.ID, CreatedAt: e.CreatedAt,
			Reason: reason, Action: map[string]any{"type": "authorization", "reason": e.Payload["reason"]}, pos: e.pos}
		if call, ok := e.Payload["tool_call_id"].(string); ok {
			r.Action = map[string]any{"type": "tool_call", "tool_call_id": call, "name": e.Payload["name"]}
		}
		return r, t.Status == StatusAuthRequired && !s.answeredLocked(taskID, e.pos, "user.tool_confirmation"), true
	}
	pr, ok := s.st.pr.reqs.get(id)
	if !ok || pr.TaskID == nil || *pr.TaskID != taskID {
		return nil, false, false
	}
	evID := s.st.pr.openedBy[pr.ID]
	pos, _ := s.st.parseEventID(evID)
	e, ok := s.st.event(pos)
	if evID == "" || !ok {
		return nil, false, false // its opening event is no longer retained
	}
	reason, _ := e.Payload["reason"].(string)
	r = &Request{Kind: "authorization_request", ID: pr.ID, TaskID: taskID, SessionID: t.SessionID, EventID: evID, CreatedAt: pr.CreatedAt,
		Permission: true, Reason: reason, Action: pr.Action, pos: pos}
	if a, _ := pr.Action.(map[string]any); a["type"] == "tool_call" {
		r.Kind = "approval_request"
		r.ToolCallID, _ = a["tool_call_id"].(string)
		r.Name, _ = a["name"].(string)
		r.Input, _ = s.st.pr.toolInput[pr.ID].(map[string]any)
		if r.Input == nil {
			r.Input = map[string]any{}
		}
		r.Action = nil
	}
	return r, pr.Status == PermPending && !Terminal(t.Status), true
}

// answeredLocked reports whether task id has an event of kind after pos, or
// a later wait (a state event): either way the wait opened at pos is over.
func (s *Server) answeredLocked(id string, pos uint64, kind string) bool {
	ps := s.st.byTask[id]
	i, _ := slices.BinarySearch(ps, pos+1)
	for _, p := range ps[i:] {
		e, ok := s.st.event(p)
		if !ok {
			continue
		}
		if e.Event == kind || strings.HasPrefix(e.Event, "task.") && e.Event != "task.submitted" {
			return true
		}
	}
	return false
}

// pendingLocked lists the stream resource's pending requests in the order
// they were opened. Holds s.mu.
func (st *Stream) pendingLocked() []Request {
	s := st.s
	var tasks []*Task
	if st.res.Object == "task" {
		if t, ok := s.st.tasks.get(st.res.ID); ok {
			tasks = append(tasks, t)
		}
	} else {
		for _, r := range s.st.tasks.order {
			if !r.deleted && r.v.SessionID == st.res.ID {
				tasks = append(tasks, r.v)
			}
		}
	}
	var out []Request
	for _, t := range tasks {
		if t.Status != StatusInputRequired && t.Status != StatusAuthRequired {
			continue
		}
		ps := s.st.byTask[t.ID]
		for i := len(ps) - 1; i >= 0; i-- { // the latest state event opened the current wait
			e, ok := s.st.event(ps[i])
			if !ok || !strings.HasPrefix(e.Event, "task.") {
				continue
			}
			if r, ok := s.openedLocked(e); ok {
				out = append(out, *r)
			}
			break
		}
	}
	slices.SortFunc(out, func(a, b Request) int { return cmp.Compare(a.pos, b.pos) })
	return out
}

// wireJSON is event e rendered for the wire, as the REST list and the SSE
// data: line carry it; rendered once and cached (a fan-out renders each
// event once).
func (s *Server) wireJSON(e *Event) ([]byte, error) {
	if p := e.wire.Load(); p != nil {
		return *p, nil
	}
	b, err := s.render(e)
	if err != nil {
		return nil, fmt.Errorf("render event %s: %w", e.ID, err)
	}
	data := bytes.TrimSpace(b)
	e.wire.Store(&data)
	return data, nil
}
