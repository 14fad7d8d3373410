// Package refharness is the reference Harness: a real, minimal implementation
// of the Harn Agents Protocol v1 Core surface over an event-sourced store. It
// lets the conformance suites test themselves and serves as a local stand-in
// for implementers (`conform serve`).
//
// Every change is a commit appended to a journal (in memory, or fsync'd on
// disk under Options.DataDir); resources are projections of the commits and
// are rebuilt from the journal at start-up. Tasks are driven by the scenario
// language of package scenario, or by a deterministic echo agent.
package refharness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
	"github.com/harn-conform/conform/refharness/journal"
)

// Faults of this area: version and credential checks, and what every request
// passes through.
var (
	FaultSkipVersionCheck = declare(fault.Fault{Name: "skip-version-check",
		Doc:   "missing/unsupported version header accepted instead of 426",
		Fails: []string{"CORE-VER-001", "CORE-VER-002"}})
	FaultNoSupportedVersions = declare(fault.Fault{Name: "no-supported-versions",
		Doc:   "426 body does not list the supported versions (no details, message names none)",
		Warns: []string{"CORE-VER-003"}})
	FaultAcceptMissingKey = declare(fault.Fault{Name: "accept-missing-key",
		Doc:   "a request without Authorization is served",
		Fails: []string{"CORE-AUTH-001"}})
	FaultAcceptAnyKey = declare(fault.Fault{Name: "accept-any-key",
		Doc:   "an unknown API key is accepted (missing still 401)",
		Fails: []string{"CORE-AUTH-003"}})
	FaultEchoKeyInError = declare(fault.Fault{Name: "echo-key-in-error",
		Doc:   "the 401 message repeats the presented key",
		Fails: []string{"CORE-AUTH-004"}})
	FaultSequenceNotIncreasing = declare(fault.Fault{Name: "sequence-not-increasing",
		Doc:   "per-resource event sequence repeats",
		Fails: []string{"CORE-EVT-002"}})
	// A race: a non-atomic sequence counter. The handler reads the
	// Session's last sequence number from the store when the request
	// arrives (answered, like any read, once what it read is durable) and
	// writes the event with the next one once it holds the write lock;
	// appends that arrive together number their events alike.
	FaultSessionSequenceReadEarly = declare(fault.Fault{Name: "session-sequence-read-early",
		Doc:   "a Message append reads its Session's last event sequence on arrival and numbers its event from it under the lock: appends fired at once repeat sequence numbers; sequential ones are right",
		Fails: []string{"CORE-EVT-002"}, Race: true})
	FaultUnknownRouteNot404 = declare(fault.Fault{Name: "unknown-route-not-404",
		Doc:       "unknown routes answer 200 with an empty object",
		Fails:     []string{"CORE-ERR-001"},
		Tolerated: []string{"CORE-NEG-002"},
		Why:       "a hostile path id with a slash in it makes an unknown route, which the hostile-input pass sees served (CORE-NEG-002)"})
	FaultPublicNeedsVersion = declare(fault.Fault{Name: "public-needs-version",
		Doc:   "GET /v1 and /v1/agent-card answer 426 without the version header",
		Fails: []string{"CORE-VER-004"}})
	FaultAcceptMalformedAuth = declare(fault.Fault{Name: "accept-malformed-auth",
		Doc:   "an Authorization header that is not a Bearer credential is accepted",
		Fails: []string{"CORE-AUTH-002"}})
	// Enforcement on /v1/tasks only: a suite that probed only there passed
	// these. The suite probes every operation of the OpenAPI.
	FaultAuthOnlyOnTasks = declare(fault.Fault{Name: "auth-only-on-tasks",
		Doc:      "requests without Authorization are served everywhere but under /v1/tasks",
		Fails:    []string{"CORE-AUTH-001"},
		Hookless: true})
	FaultVersionOnlyOnTasks = declare(fault.Fault{Name: "version-only-on-tasks",
		Doc:      "the version header is checked only under /v1/tasks",
		Fails:    []string{"CORE-VER-001"},
		Hookless: true})
)

// VariantCoreOnly offers no Workspace API (Core does not include it):
// /v1/workspaces routes are unknown, and the operator provisioned one
// workspace, ProvisionedWorkspaceID, that every key may use.
var VariantCoreOnly = declareVariant(fault.Variant{Name: "core-only",
	Doc: "no Workspace API (/v1/workspaces unknown); every key may use the one provisioned workspace, " + ProvisionedWorkspaceID})

// ProvisionedWorkspaceID is the workspace VariantCoreOnly provisions.
const ProvisionedWorkspaceID = "workspace_provisioned"

var _ http.Handler = (*Server)(nil)

// Server is the reference harness. Create it with New; it is an http.Handler.
type Server struct {
	opts  Options
	clock func() time.Time
	ids   IDSource

	mu       sync.RWMutex
	st       *state
	jl       *journal.Journal // nil in memory mode
	lastSeq  uint64           // journal sequence of the latest commit
	notify   chan struct{}    // closed and replaced whenever events are appended
	closed   bool             // no more commits
	stopping bool             // no more workers
	runners  map[string]*runner
	// idemWrites counts keyed writes, to pace pruning of expired records.
	idemWrites int
	// rangeReads counts event range reads under FaultReplayRangeUnstable.
	rangeReads atomic.Int64
	// subs are the session streams' wake-up channels under
	// FaultSSESubscribersLost (events.go): a copy-on-write list updated
	// without a lock.
	subs    atomic.Pointer[[]chan struct{}]
	table   []route
	upgrade upgrader   // a mounted transport adapter (core.go)
	rkey    signingKey // signs receipts (receipts_api.go)
	okey    signingKey // signs OAuth2 access tokens (oauth.go)

	// bootPos is the first event position of this process: the events
	// before it were replayed from the journal at start-up.
	bootPos uint64

	ctx    context.Context // canceled by Close; stops workers and streams
	stop   context.CancelFunc
	wg     sync.WaitGroup
	closeO sync.Once
	errC   error
}

const defaultMaxBody = 1 << 20

// New builds a server. With a DataDir it opens (or creates) the journal there
// and rebuilds every resource from it; tasks that were running when the
// previous process stopped are recovered as the spec requires.
func New(opts Options) (*Server, error) {
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = defaultMaxBody
	}
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.IdempotencyTTL < 24*time.Hour {
		opts.IdempotencyTTL = 24 * time.Hour
	}
	if opts.EventRetention < 0 {
		return nil, fmt.Errorf("refharness: EventRetention = %d, want >= 0", opts.EventRetention)
	}
	s := &Server{opts: opts, clock: opts.Clock, st: newState(), notify: make(chan struct{}), runners: map[string]*runner{}}
	s.st.swapIDs = opts.Faults.Has(FaultEventIDsNotMonotonic)
	s.st.earlyIDs = opts.Faults.Has(FaultEventIDReadEarly)
	s.ids = opts.IDs
	if s.ids == nil {
		s.ids = randomIDs{clock: opts.Clock}
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.table = s.routes()
	if s.opts.Variants.Has(VariantCoreOnly) {
		// A Core-only server offers no Workspace API at all.
		s.table = slices.DeleteFunc(s.table, func(rt route) bool { return strings.HasPrefix(rt.pattern, "workspaces") })
	}
	if opts.DataDir != "" {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("refharness: data dir: %w", err)
		}
		jl, err := journal.Open(filepath.Join(opts.DataDir, "events.journal"), s.replay, nil)
		if err != nil {
			return nil, fmt.Errorf("refharness: %w", err)
		}
		s.jl = jl
		s.st.visible = s.st.nextPos
	}
	s.bootPos = s.st.nextPos
	if err := s.seed(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.loadReceiptKey(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.loadOAuthKey(); err != nil {
		s.Close()
		return nil, err
	}
	if err := s.recoverTasks(); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// replay applies one journal record at start-up.
func (s *Server) replay(_ uint64, rec []byte) error {
	var c commit
	dec := json.NewDecoder(bytes.NewReader(rec))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return fmt.Errorf("decode commit: %w", err)
	}
	if c.Idem != nil && !c.Idem.live(s.clock(), s.opts.IdempotencyTTL) {
		c.Idem = nil // expired: not worth keeping in memory
	}
	return s.st.apply(&c, s.opts.EventRetention)
}

var errClosed = errors.New("refharness: server closed")

// commitLocked assigns event ids and sequences, applies c to the projection
// and appends it to the journal. The caller holds s.mu and must call
// s.wait(seq) after releasing it, before acknowledging the write.
//
// The projection runs ahead of the disk by at most one group commit; every
// read path therefore waits for s.lastSeq (taken under the lock) to be
// durable before it answers, so no client ever sees state that a crash could
// take back — in particular no event id that could be reused.
func (s *Server) commitLocked(c *commit) (uint64, error) {
	if s.closed {
		return 0, errClosed
	}
	s.expandToolEventsLocked(c) // hostev.go: agent.tool_* and span.* beside tool.* events
	pos := s.st.nextPos
	seqs := map[Pointer]int64{}
	last := map[Pointer]string{}
	for i, e := range c.Events {
		e.ID = s.st.eventID(pos)
		if s.st.earlyIDs {
			c.Positions = append(c.Positions, pos)
			if c.arr != nil && c.arr.idRead && i == 0 {
				e.ID = s.st.eventID(c.arr.nextID) // FaultEventIDReadEarly: the id read on arrival
			}
		}
		pos++
		if e.Replay != nil && e.Replay.cursorIsID {
			e.Replay.ReplayCursor = ptr(e.ID) // replay_run.go, replayMeta
		}
		n, ok := seqs[e.Resource]
		if !ok {
			n, ok = s.st.seqs[e.Resource]
			if early, read := c.arr.seq(e.Resource); read {
				n, ok = early, true // FaultSessionSequenceReadEarly: the number read on arrival
			}
			if !ok {
				n = -1
			}
		}
		n++
		if s.opts.Faults.Has(FaultSequenceNotIncreasing) && n > 0 {
			n-- // repeat the previous sequence number
		}
		seqs[e.Resource] = n
		e.Sequence = n
		prev, ok := last[e.Resource]
		if !ok {
			prev, ok = s.st.lastEvent[e.Resource]
		}
		if ok {
			e.PreviousEventID = ptr(prev)
		}
		last[e.Resource] = e.ID
	}
	if err := s.st.apply(c, s.opts.EventRetention); err != nil {
		return 0, err
	}
	s.st.visible = s.st.nextPos
	close(s.notify)
	s.notify = make(chan struct{})
	s.wakeSubscribers() // events.go: FaultSSESubscribersLost's list
	if s.jl == nil {
		return 0, nil
	}
	// The record is encoded by the journal's flusher, after s.mu is released:
	// a commit's values never change once committed (every change is a new
	// commit of new values), so encoding it later gives the same bytes.
	seq, err := s.jl.AppendLazy(func() ([]byte, error) { return json.Marshal(c) })
	if err != nil {
		return 0, err
	}
	if c.Idem != nil {
		c.Idem.seq = seq
	}
	s.lastSeq = seq
	return seq, nil
}

// readSequenceEarly is FaultSessionSequenceReadEarly's early read: the
// Session's last event sequence number when the append arrives (routes.go,
// arrive).
func (s *Server) readSequenceEarly(c *call) {
	if !s.opts.Faults.Has(FaultSessionSequenceReadEarly) {
		return
	}
	p := Pointer{"session", c.params[0]}
	s.mu.RLock()
	if n, ok := s.st.seqs[p]; ok {
		c.arr.seqs = map[Pointer]int64{p: n}
	}
	seq := s.lastSeq
	s.mu.RUnlock()
	_ = s.wait(seq) // read from the store, as every read: once durable
}

// seq is the last sequence number of resource p read on arrival, if one
// was.
func (a *arrival) seq(p Pointer) (int64, bool) {
	if a == nil {
		return 0, false
	}
	n, ok := a.seqs[p]
	return n, ok
}

// wait blocks until journal record seq is durable (no-op in memory mode).
func (s *Server) wait(seq uint64) error {
	if s.jl == nil || seq == 0 {
		return nil
	}
	return s.jl.Wait(seq)
}

// Close stops task workers and streams, flushes and closes the journal. Safe to call twice.
func (s *Server) Close() error {
	s.closeO.Do(func() {
		s.stop()
		s.mu.Lock() // after this, startWorker sees stopping and never calls wg.Add
		s.stopping = true
		s.mu.Unlock()
		s.wg.Wait() // workers finish their in-flight commit, then see the canceled context
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		if s.jl != nil {
			s.errC = s.jl.Close()
		}
	})
	return s.errC
}

func (s *Server) now() string { return formatTime(s.clock()) }

func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

func (s *Server) envelope(kind, object string, meta map[string]any) Envelope {
	now := s.now()
	if meta == nil {
		meta = map[string]any{}
	}
	return Envelope{ID: s.freshID(kind), Object: object, CreatedAt: now, UpdatedAt: now, Metadata: meta}
}

// freshID mints an id no stored resource has. The default source never
// repeats, but a caller's IDSource might (a counter restarted over an
// existing DataDir): ids are skipped rather than recycled, and after a
// bounded number of collisions the random source takes over. Holds s.mu.
func (s *Server) freshID(kind string) string {
	for i := 0; i < 1<<16; i++ {
		if id := s.ids.NewID(kind); !s.st.used(id) {
			return id
		}
	}
	return randomIDs{clock: s.clock}.NewID(kind)
}

// newEvent builds an event; the id and sequence are assigned at commit.
func (s *Server) newEvent(kind string, res Pointer, payload map[string]any, ws, sess, task, actor string) *Event {
	now := s.now()
	if payload == nil {
		payload = map[string]any{}
	}
	e := &Event{Envelope: Envelope{Object: "event", CreatedAt: now, UpdatedAt: now, Metadata: map[string]any{}},
		Event: kind, Resource: res, Payload: payload}
	if ws != "" {
		e.WorkspaceID = ptr(ws)
	}
	if sess != "" {
		e.SessionID = ptr(sess)
	}
	if task != "" {
		e.TaskID = ptr(task)
	}
	if actor != "" {
		e.Actor = ptr(actor)
	}
	return e
}

// seed creates the built-in persona and skill on a fresh journal.
func (s *Server) seed() error {
	s.mu.Lock()
	if s.st.personas.len() > 0 {
		s.mu.Unlock()
		return nil
	}
	p := &Persona{Envelope: s.envelope("persona", "persona", nil), Name: "conform echo agent", Version: "1",
		EntryWorkflow: "conform.echo", Description: "Deterministic agent of the reference harness: runs conform.scenario steps or echoes the task input.",
		AutonomyTier: "act_auto", ReceiptPolicy: "required", Tools: []string{}, Capabilities: []string{}}
	sk := scenarioSkill(s.envelope("skill", "skill", nil))
	puts := []put{{Persona: p}, {Skill: sk}}
	if s.opts.Variants.Has(VariantCoreOnly) {
		w := &Workspace{Envelope: s.envelope("workspace", "workspace", nil), Name: "provisioned by the operator", Root: "conform://provisioned", Capabilities: []string{}}
		w.ID = ProvisionedWorkspaceID
		puts = append(puts, put{Workspace: w})
	}
	seq, err := s.commitLocked(&commit{Puts: puts})
	s.mu.Unlock()
	if err != nil {
		return err
	}
	return s.wait(seq)
}

// writeJSON renders v with the output faults and variants applied.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	if status == http.StatusNoContent { // a delete: no body, so no content type either
		w.WriteHeader(status)
		return
	}
	b, err := s.render(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal_error","type":"server_error","message":"cannot render response"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
	w.Write([]byte("\n"))
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.writeError(w, r, internal(fmt.Errorf("panic: %v", v)))
		}
	}()
	path := r.URL.Path
	if path != "/" {
		path = strings.TrimSuffix(path, "/")
	}
	if h := s.upgradeHandler(); h != nil && IsUpgrade(r) {
		// A WebSocket upgrade on a per-resource stream path goes to the
		// mounted adapter (core.go) before the version and credential
		// checks: a browser's upgrade carries neither header.
		if _, ok := StreamResource(path); ok {
			h.ServeHTTP(w, r)
			return
		}
	}
	if path == "/v1" || path == "/v1/agent-card" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.methodNotAllowed(w, r, "GET")
			return
		}
		if s.opts.Faults.Has(FaultPublicNeedsVersion) && r.Header.Get(VersionHeader) != ProtocolVersion {
			s.writeError(w, r, &apiError{Status: http.StatusUpgradeRequired, Code: "unsupported_protocol_version",
				Message: "missing or unsupported " + VersionHeader, Details: map[string]any{"supported_versions": []string{ProtocolVersion}}})
			return
		}
		if path == "/v1" {
			s.writeJSON(w, http.StatusOK, s.advertiseOAuth(s.advertiseKeyDirectory(s.discovery())))
		} else {
			s.serveCard(w, r) // signed: card.go
		}
		return
	}
	if path == OAuthTokenPath {
		s.serveToken(w, r) // oauth.go
		return
	}
	if s.servePublicLocal(w, r, path) { // local.go
		return
	}
	if !strings.HasPrefix(path, "/v1/") {
		s.unknownRoute(w, r)
		return
	}
	if e := s.checkVersion(r); e != nil {
		s.writeError(w, r, e)
		return
	}
	actor, e := s.authenticate(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.route(w, r, strings.Split(strings.TrimPrefix(path, "/v1/"), "/"), actor)
}

func (s *Server) checkVersion(r *http.Request) *apiError {
	if s.opts.Faults.Has(FaultSkipVersionCheck) ||
		s.opts.Faults.Has(FaultVersionOnlyOnTasks) && !strings.HasPrefix(r.URL.Path, "/v1/tasks") {
		return nil
	}
	got := r.Header.Get(VersionHeader)
	if got == ProtocolVersion {
		return nil
	}
	msg := fmt.Sprintf("missing %s header, want %q", VersionHeader, ProtocolVersion)
	if got != "" {
		msg = fmt.Sprintf("unsupported protocol version %q, want %q", got, ProtocolVersion)
	}
	e := &apiError{Status: http.StatusUpgradeRequired, Code: "unsupported_protocol_version", Message: msg}
	if s.opts.Faults.Has(FaultNoSupportedVersions) {
		// The fault withholds the supported versions everywhere, the message included.
		e.Message = fmt.Sprintf("missing or unsupported %s header", VersionHeader)
		return e
	}
	e.Details = map[string]any{"supported_versions": []string{ProtocolVersion}}
	return e
}

func (s *Server) authenticate(r *http.Request) (string, *apiError) {
	h := r.Header.Get("Authorization")
	if h == "" {
		if s.opts.Faults.Has(FaultAcceptMissingKey) ||
			s.opts.Faults.Has(FaultAuthOnlyOnTasks) && !strings.HasPrefix(r.URL.Path, "/v1/tasks") {
			return "actor_anonymous", nil
		}
		return "", &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "missing Authorization header, want \"Bearer <api-key>\""}
	}
	key, ok := strings.CutPrefix(h, "Bearer ")
	if !ok && s.opts.Faults.Has(FaultAcceptMalformedAuth) {
		return "actor_anonymous", nil
	}
	if !ok {
		return "", &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: "Authorization header is not a Bearer credential"}
	}
	if actor, ok := s.opts.APIKeys[key]; ok && key != "" {
		return actor, nil
	}
	if actor, e, ok := s.bearerToken(r, key); ok { // an OAuth2 access token: oauth.go
		return actor, e
	}
	if s.opts.Faults.Has(FaultAcceptAnyKey) {
		return "actor_anonymous", nil
	}
	msg := "the API key is not valid"
	if s.opts.Faults.Has(FaultEchoKeyInError) {
		msg = fmt.Sprintf("the API key %q is not valid", key)
	}
	return "", &apiError{Status: http.StatusUnauthorized, Code: "unauthenticated", Message: msg}
}

func (s *Server) unknownRoute(w http.ResponseWriter, r *http.Request) {
	if s.opts.Faults.Has(FaultUnknownRouteNot404) {
		s.writeJSON(w, http.StatusOK, map[string]any{})
		return
	}
	s.writeError(w, r, unofferedError(r, r.URL.Path)) // local.go: 501 for a protocol path, 404 route_not_found otherwise
}

func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request, allow ...string) {
	allow = slices.Compact(allow)
	w.Header().Set("Allow", strings.Join(allow, ", "))
	// The taxonomy has no code for 405; invalid_request belongs with 400
	// (CORE-ERR-003), so the method gets a code of its own.
	s.writeError(w, r, &apiError{Status: http.StatusMethodNotAllowed, Code: "method_not_allowed",
		Message: fmt.Sprintf("method %s not allowed on %s, want %s", r.Method, r.URL.Path, strings.Join(allow, " or "))})
}
