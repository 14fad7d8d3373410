package refharness

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gowebpki/jcs"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: routing: request bodies, idempotency, creates and
// pagination.
var (
	FaultForgetIdempotency = declare(fault.Fault{Name: "forget-idempotency",
		Doc:   "Idempotency-Key ignored: retries create duplicates",
		Fails: []string{"CORE-IDEM-001", "CORE-IDEM-002", "CORE-IDEM-003", "CORE-IDEM-004", "CORE-IDEM-005", "CORE-IDEM-008", "CORE-IDEM-009"}})
	FaultIdempotencyNoConflict = declare(fault.Fault{Name: "idempotency-no-conflict",
		Doc:   "same key + different body replays the first response instead of 409",
		Fails: []string{"CORE-IDEM-002", "CORE-IDEM-005", "CORE-IDEM-009"}})
	// A race, not a missing feature: the idempotency layer of a middleware
	// that looks a key up when the request arrives and records the first
	// response once the write is durable, with nothing held in between.
	// Sequential retries replay; requests that arrive before the first is
	// recorded all write.
	FaultDuplicateOnConcurrentRetry = declare(fault.Fault{Name: "duplicate-on-concurrent-retry",
		Doc:   "Task submits and Message appends look their Idempotency-Key up on arrival and record it once the write is durable: retries fired at once all write; sequential retries work",
		Fails: []string{"CORE-IDEM-003", "CORE-IDEM-008", "CORE-IDEM-009"}, Race: true})
	FaultWrongCreateStatus = declare(fault.Fault{Name: "wrong-create-status",
		Doc:   "creates answer 200 instead of 201/202",
		Fails: []string{"CORE-READ-010", "CORE-READ-011", "CORE-TASK-001", "CORE-TASK-002"}})
	FaultNo413 = declare(fault.Fault{Name: "no-413",
		Doc:   "bodies over the limit are accepted",
		Fails: []string{"CORE-ERR-006"}})
	FaultLimitIgnored = declare(fault.Fault{Name: "limit-ignored",
		Doc:       "list ?limit= is ignored (default page size used)",
		Fails:     []string{"CORE-PAGE-002"},
		Tolerated: []string{"CORE-EVT-004"},
		Why:       "the harness breaks event ranges the same way; the event page walk (CORE-EVT-004) sees it"})
	FaultPaginationRepeats = declare(fault.Fault{Name: "pagination-repeats",
		Doc:       "each next page repeats the last item of the previous page",
		Fails:     []string{"CORE-PAGE-003"},
		Tolerated: []string{"CORE-EVT-004"},
		Why:       "the harness breaks event ranges the same way; the event page walk (CORE-EVT-004) sees it"})
	FaultIdempotencyIgnoresTarget = declare(fault.Fault{Name: "idempotency-ignores-target",
		Doc:   "idempotency scope ignores the target: a key reused on another path conflicts",
		Fails: []string{"CORE-IDEM-007"}})
	FaultMalformedJSONAs500 = declare(fault.Fault{Name: "malformed-json-500",
		Doc:       "a body that is not JSON answers 500 internal_error instead of 400",
		Fails:     []string{"CORE-ERR-004"},
		Tolerated: []string{"CORE-NEG-001"},
		Why:       "the hostile-input pass sends malformed JSON to every Core write and sees the same 500 (CORE-NEG-001)"})
	FaultIdempotencyScopeNoActor = declare(fault.Fault{Name: "idempotency-scope-without-actor",
		Doc:   "the idempotency scope leaves out the actor: another actor's request with the same key, target and body is answered with the first actor's resource",
		Fails: []string{"EXT-IDEM-005"},
		Run:   fault.Actors})
	FaultIdempotencyKeyLength = declare(fault.Fault{Name: "idempotency-key-length",
		Doc:   "Idempotency-Key length is not checked (empty or >255 accepted)",
		Warns: []string{"CORE-IDEM-006"}})
	FaultIdempotencyByteCompare = declare(fault.Fault{Name: "idempotency-byte-compare",
		Doc:      "retries are compared by raw body bytes: an equivalent body with reordered keys gets 409",
		Fails:    []string{"CORE-IDEM-001"},
		Hookless: true})
)

// call is one routed request.
type call struct {
	r      *http.Request
	actor  string
	params []string // values of the {} path segments, in order
	q      url.Values
	body   obj
	idem   string
	target string // canonical path: the "canonical target" of idempotency scopes
	arr    arrival
}

// arrival is what a write's handler read when the request arrived, before
// it took the write lock: nothing, but under the race faults the state a
// real server reads too early (a check on arrival, then an act under the
// lock, with nothing held in between).
type arrival struct {
	seqs map[Pointer]int64 // resources' last sequence numbers (FaultSessionSequenceReadEarly, server.go)
	task *Task             // the task as a cancel first read it (FaultCancelNoRecheck, tasks.go)
	// nextID is the next event position when the write arrived
	// (FaultEventIDReadEarly, state.go), read when idRead.
	nextID uint64
	idRead bool
}

// arrive makes the early reads of the race faults for a write of route rt,
// before the write lock, and reports whether it made one.
func (s *Server) arrive(c *call, rt route) bool {
	switch w := c.r.Method + " " + rt.pattern; {
	case w == "POST sessions/{}/messages":
		s.readSequenceEarly(c) // server.go
		s.readIDEarly(c)       // state.go
		return c.arr.seqs != nil || c.arr.idRead
	case w == "POST tasks/{}/cancel":
		s.readTaskEarly(c) // tasks.go
		return c.arr.task != nil
	}
	return false
}

// raceGap is the time between a race fault's early read and its act: the
// round trip to a store that a real server's read makes. A planted race
// shows only when requests overlap in its window; with the gap, every
// request that arrives within it reads the same state (in a synctest
// bubble, every request released at once does), so a race check meets the
// bug in its first round rather than by the scheduler's chance. Only the
// race faults wait it (fault.Fault.Race); a clean server never does.
const raceGap = 5 * time.Millisecond

// result is what a write produces under the lock.
type result struct {
	status int
	body   any
	c      *commit
	after  func() // runs once the commit is durable
}

type route struct {
	method  string
	pattern string                               // segments after /v1/, "{}" matches one id
	get     func(c *call) (any, *apiError)       // read under the read lock
	write   func(c *call) (*result, *apiError)   // write under the write lock
	raw     func(w http.ResponseWriter, c *call) // streams and bytes
	noBody  bool                                 // write accepts an empty body
}

func (s *Server) routes() []route {
	return append([]route{
		{method: "GET", pattern: "workspaces", get: s.listWorkspaces},
		{method: "POST", pattern: "workspaces", write: s.createWorkspace},
		{method: "GET", pattern: "workspaces/{}", get: s.getWorkspace},
		{method: "PATCH", pattern: "workspaces/{}", write: s.patchWorkspace},

		{method: "GET", pattern: "sessions", get: s.listSessions},
		{method: "POST", pattern: "sessions", write: s.createSession},
		{method: "GET", pattern: "sessions/{}", get: s.getSession},
		{method: "PATCH", pattern: "sessions/{}", write: s.patchSession},
		{method: "POST", pattern: "sessions/{}/close", write: s.closeSession, noBody: true},
		{method: "POST", pattern: "sessions/{}/fork", write: s.forkSession, noBody: true},
		{method: "POST", pattern: "sessions/{}/truncate", write: s.truncateSession},
		{method: "GET", pattern: "sessions/{}/messages", get: s.listSessionMessages},
		{method: "POST", pattern: "sessions/{}/messages", write: s.appendSessionMessage},
		{method: "GET", pattern: "sessions/{}/tasks", get: s.listSessionTasks},
		{method: "POST", pattern: "sessions/{}/tasks", write: s.submitSessionTask},
		{method: "GET", pattern: "sessions/{}/events", get: s.listSessionEvents},
		{method: "GET", pattern: "sessions/{}/events/stream", raw: s.streamSession},

		{method: "GET", pattern: "tasks", get: s.listTasks},
		{method: "POST", pattern: "tasks", write: s.submitTask},
		{method: "GET", pattern: "tasks/{}", get: s.getTask},
		{method: "POST", pattern: "tasks/{}/cancel", write: s.cancelTask, noBody: true},
		{method: "POST", pattern: "tasks/{}/messages", write: s.appendTaskMessage},
		{method: "GET", pattern: "tasks/{}/events", get: s.listTaskEvents},
		{method: "GET", pattern: "tasks/{}/stream", raw: s.streamTask},

		{method: "GET", pattern: "messages/{}", get: s.getMessage},

		{method: "GET", pattern: "artifacts", get: s.listArtifacts},
		{method: "POST", pattern: "artifacts", write: s.registerArtifact},
		{method: "GET", pattern: "artifacts/{}", get: s.getArtifact},
		{method: "GET", pattern: "artifacts/{}/content", raw: s.artifactContent},

		{method: "GET", pattern: "events", get: s.listEvents},
		{method: "GET", pattern: "events/stream", raw: s.streamGlobal},
		{method: "GET", pattern: "events/{}", get: s.getEvent},

		{method: "GET", pattern: "outcomes", get: s.listOutcomes},
		{method: "GET", pattern: "outcomes/{}", get: s.getOutcome},
		{method: "GET", pattern: "personas", get: s.listPersonas},
		{method: "GET", pattern: "personas/{}", get: s.getPersona},
		{method: "POST", pattern: "personas", write: s.createPersona},         // personas.go
		{method: "PATCH", pattern: "personas/{}", write: s.patchPersona},      // personas.go
		{method: "GET", pattern: "sessions/{}/branches", get: s.listBranches}, // branches.go
		{method: "POST", pattern: "sessions/{}/branches", write: s.createBranch},
		{method: "GET", pattern: "branches/{}", get: s.getBranch},
		{method: "GET", pattern: "skills", get: s.listSkills},
		{method: "GET", pattern: "skills/{}", get: s.getSkill},
	}, slices.Concat(s.receiptRoutes(), s.mgmtRoutes(), s.permissionRoutes(), s.localRoutes(), s.replayRoutes())...) // mgmt.go, permissions.go, local.go, replay.go
}

// match reports whether segs fit pattern, returning the {} values.
func match(pattern string, segs []string) ([]string, bool) {
	ps := strings.Split(pattern, "/")
	if len(ps) != len(segs) {
		return nil, false
	}
	var params []string
	for i, p := range ps {
		if p == "{}" {
			if segs[i] == "" {
				return nil, false
			}
			params = append(params, segs[i])
			continue
		}
		if p != segs[i] {
			return nil, false
		}
	}
	return params, true
}

func (s *Server) route(w http.ResponseWriter, r *http.Request, segs []string, actor string) {
	var allow []string
	for _, rt := range s.table {
		params, ok := match(rt.pattern, segs)
		if !ok {
			continue
		}
		// A literal segment beats {}: "events/stream" is listed before "events/{}".
		// HEAD works on plain reads; streams and bytes answer GET only.
		if rt.method != r.Method && !(rt.method == "GET" && r.Method == "HEAD" && rt.raw == nil) {
			allow = append(allow, rt.method)
			continue
		}
		c := &call{r: r, actor: actor, params: params, q: r.URL.Query(), target: "/v1/" + strings.Join(segs, "/")}
		switch {
		case rt.get != nil:
			s.mu.RLock()
			e := s.gateLocked(c, rt) // authz.go
			var v any
			if e == nil {
				v, e = rt.get(c)
			}
			seq := s.lastSeq
			s.mu.RUnlock()
			if err := s.wait(seq); err != nil {
				e = &apiError{Status: http.StatusServiceUnavailable, Code: "service_unavailable", Message: err.Error()}
			}
			if e != nil {
				s.writeError(w, r, e)
				return
			}
			s.writeJSON(w, http.StatusOK, v)
		case rt.raw != nil:
			s.mu.RLock()
			e := s.gateLocked(c, rt) // authz.go
			s.mu.RUnlock()
			if e != nil {
				s.writeError(w, r, e)
				return
			}
			rt.raw(w, c)
		default:
			s.doWrite(w, c, rt)
		}
		return
	}
	if len(allow) > 0 {
		s.methodNotAllowed(w, r, allow...)
		return
	}
	s.unknownRoute(w, r)
}

// readBody reads at most MaxBodyBytes; a larger body is 413.
func (s *Server) readBody(r *http.Request) ([]byte, *apiError) {
	limit := s.opts.MaxBodyBytes
	if s.opts.Faults.Has(FaultNo413) {
		limit = 64 << 20 // still bounded: the fault removes the protocol limit, not memory safety
	}
	tooLarge := &apiError{Status: http.StatusRequestEntityTooLarge, Code: "payload_too_large",
		Message: fmt.Sprintf("request body exceeds the limit of %d bytes", s.opts.MaxBodyBytes),
		Details: map[string]any{"max_bytes": s.opts.MaxBodyBytes}}
	if r.ContentLength > limit {
		return nil, tooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, badRequest("", "cannot read request body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, tooLarge
	}
	return b, nil
}

// doWrite runs a write: body limits, parsing, idempotency, the mutation under
// the lock, durability, and the response.
func (s *Server) doWrite(w http.ResponseWriter, c *call, rt route) {
	r := c.r
	raw, e := s.readBody(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if vals, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; ok {
		c.idem = vals[0]
		if n := utf8.RuneCountInString(c.idem); (n < 1 || n > 255) && !s.opts.Faults.Has(FaultIdempotencyKeyLength) {
			s.writeError(w, r, badRequest("Idempotency-Key", "Idempotency-Key has %d characters, want 1..255", n))
			return
		}
	}
	c.body, e = parseObject(raw, rt.noBody)
	if e != nil && s.opts.Faults.Has(FaultMalformedJSONAs500) && strings.HasPrefix(e.Message, "malformed JSON") {
		e = internal(errString("cannot decode body"))
	}
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// What the OpenAPI document declares invalid is refused here, before
	// the write acts (hostile.go).
	refusal, storedAnyway := s.checkBody(c, raw)
	if refusal != nil && !storedAnyway {
		s.writeError(w, r, refusal)
		return
	}
	if storedAnyway {
		c.body = obj{m: storedBody(c)}
	}
	useIdem := c.idem != "" && refusal == nil && !s.opts.Faults.Has(FaultForgetIdempotency) && !s.keyIgnored(c, rt) // keyIgnored: personas.go
	var fp string
	if useIdem {
		fp = fingerprint(raw)
		if s.opts.Faults.Has(FaultIdempotencyByteCompare) {
			fp = sha256hex(raw) // the fault: bytes, not the canonical JSON
		}
	}

	// late: the key is looked up now and recorded once the write is
	// durable, with nothing held in between (FaultDuplicateOnConcurrentRetry
	// and its Extended twin: lateIdem).
	late := useIdem && s.lateIdem(c, rt)
	early := s.arrive(c, rt)
	var scope string
	if late {
		s.mu.RLock()
		scope = s.idemScope(c, rt)
		rec, ok := s.st.idem[scope]
		s.mu.RUnlock()
		if ok && rec.live(s.clock(), s.opts.IdempotencyTTL) {
			s.answerRecorded(w, r, rt, rec, fp)
			return
		}
	}
	if late || early {
		time.Sleep(raceGap) // between the race fault's read and its act
	}
	s.mu.Lock()
	if useIdem && !late {
		scope = s.idemScope(c, rt)
		if rec, ok := s.st.idem[scope]; ok && rec.live(s.clock(), s.opts.IdempotencyTTL) {
			s.mu.Unlock()
			s.answerRecorded(w, r, rt, rec, fp)
			return
		}
	}
	e = s.gateLocked(c, rt) // authz.go
	if e == nil {
		e = s.keyRefused(c, rt) // personas.go: a fault's refusal of the key
	}
	if e == nil {
		e = s.answersLocked(r) // core.go: a transport's answer to a request that is no longer pending
	}
	var res *result
	if e == nil {
		res, e = s.gateWrite(c, rt) // rt.write, but for a fault's refusal (hostev.go)
	}
	if e == nil {
		s.ownLocked(c, res.c) // authz.go
	}
	if e != nil {
		s.mu.Unlock()
		s.writeError(w, r, e)
		return
	}
	body, err := json.Marshal(res.body)
	if err != nil {
		s.mu.Unlock()
		s.writeError(w, r, internal(err))
		return
	}
	if res.c == nil {
		res.c = &commit{}
	}
	res.c.arr = &c.arr
	idem := &idemRecord{Scope: scope, Fingerprint: fp, Status: res.status, Body: body, CreatedAt: s.now()}
	if useIdem && !late {
		res.c.Idem = idem
		s.pruneIdemLocked()
	}
	var seq uint64
	if len(res.c.Events)+len(res.c.Puts)+len(res.c.Deletes) > 0 || res.c.Idem != nil || res.c.Mgmt != nil {
		seq, err = s.commitLocked(res.c)
	}
	s.mu.Unlock()
	if err == nil {
		err = s.wait(seq)
	}
	if err == nil && late {
		// The bug's second half: the response is recorded only now.
		s.mu.Lock()
		seq, err = s.commitLocked(&commit{Idem: idem})
		s.mu.Unlock()
		if err == nil {
			err = s.wait(seq)
		}
	}
	if err != nil {
		s.writeError(w, r, &apiError{Status: http.StatusServiceUnavailable, Code: "service_unavailable",
			Message: "the write was not made durable: " + err.Error()})
		return
	}
	if res.after != nil {
		res.after()
	}
	if refusal != nil {
		s.writeError(w, r, refusal) // a fault's: the refused body was stored anyway
		return
	}
	s.writeJSON(w, s.createStatus(res.status), json.RawMessage(body))
}

// idemScope is the idempotency scope of a keyed write: actor, workspace,
// method, canonical target and key. Holds s.mu (read or write).
func (s *Server) idemScope(c *call, rt route) string {
	if s.opts.Faults.Has(FaultIdempotencyIgnoresTarget) {
		return c.actor + "\x00" + c.idem
	}
	actor := c.actor
	if s.opts.Faults.Has(FaultIdempotencyScopeNoActor) {
		actor = "" // the fault: every actor shares one scope
	}
	return strings.Join([]string{actor, s.scopeWorkspace(c, rt), c.r.Method, c.target, c.idem}, "\x00")
}

// answerRecorded answers a keyed write whose scope has a record: the first
// response again for an equivalent body, 409 idempotency_key_reused for
// another.
func (s *Server) answerRecorded(w http.ResponseWriter, r *http.Request, rt route, rec *idemRecord, fp string) {
	if rec.Fingerprint != fp && !s.opts.Faults.Has(FaultIdempotencyNoConflict) && !s.reuseReplays(rt) { // reuseReplays: personas.go
		s.writeError(w, r, &apiError{Status: http.StatusConflict, Code: "idempotency_key_reused",
			Message: "Idempotency-Key was already used with a different request body", Param: "Idempotency-Key"})
		return
	}
	if err := s.wait(rec.seq); err != nil {
		s.writeError(w, r, internal(err))
		return
	}
	w.Header().Set("Idempotent-Replayed", "true")
	s.writeJSON(w, s.createStatus(rec.Status), json.RawMessage(rec.Body))
}

// lateIdem reports whether a fault makes route rt look its key up on
// arrival and record it only once the write is durable: the Core writes
// under FaultDuplicateOnConcurrentRetry, the Extended ones under
// FaultExtDuplicateOnConcurrentRetry (extWriteRoutes, personas.go), a
// transport's commands under FaultWSCommandIdempotencyRaced (core.go).
func (s *Server) lateIdem(c *call, rt route) bool {
	w := c.r.Method + " " + rt.pattern
	switch {
	case s.opts.Faults.Has(FaultDuplicateOnConcurrentRetry) && (w == "POST sessions/{}/tasks" || w == "POST tasks" || w == "POST sessions/{}/messages"):
		return true
	case s.opts.Faults.Has(FaultExtDuplicateOnConcurrentRetry) && extWriteRoutes[w]:
		return true
	case s.opts.Faults.Has(FaultWSCommandIdempotencyRaced) && isCommand(c.r): // core.go
		return true
	}
	return false
}

// pruneIdemLocked drops expired idempotency records from memory, scanning
// once per 1,024 keyed writes so the cost stays amortized. (Restarts drop
// them too: expired records are not loaded.)
func (s *Server) pruneIdemLocked() {
	s.idemWrites++
	if s.idemWrites%1024 != 0 {
		return
	}
	now := s.clock()
	for k, r := range s.st.idem {
		if !r.live(now, s.opts.IdempotencyTTL) {
			delete(s.st.idem, k)
		}
	}
}

func (s *Server) createStatus(status int) int {
	if s.opts.Faults.Has(FaultWrongCreateStatus) && (status == http.StatusCreated || status == http.StatusAccepted) {
		return http.StatusOK
	}
	return status
}

// fingerprint hashes the canonical (RFC 8785) form of a body, so retries that
// differ only in key order or whitespace count as the same request.
func fingerprint(raw []byte) string {
	canon, err := jcs.Transform(raw)
	if err != nil {
		canon = raw
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// scopeWorkspace finds the workspace part of an idempotency scope: the body's
// workspace_id, else the workspace of the session or task the path names.
func (s *Server) scopeWorkspace(c *call, rt route) string {
	if ws, ok := c.body.m["workspace_id"].(string); ok {
		return ws
	}
	if id, ok := c.body.m["session_id"].(string); ok {
		if se, ok := s.st.sessions.get(id); ok {
			return se.WorkspaceID
		}
	}
	if len(c.params) == 0 {
		return ""
	}
	switch {
	case strings.HasPrefix(rt.pattern, "sessions/"):
		if se, ok := s.st.sessions.get(c.params[0]); ok {
			return se.WorkspaceID
		}
	case strings.HasPrefix(rt.pattern, "tasks/"):
		if t, ok := s.st.tasks.get(c.params[0]); ok {
			return t.WorkspaceID
		}
	case strings.HasPrefix(rt.pattern, "workspaces/"):
		return c.params[0]
	}
	return ""
}

// pageArgs parses limit and cursor.
func (s *Server) pageArgs(c *call) (limit, after int, e *apiError) {
	limit, after = 50, -1
	if v := c.q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			return 0, 0, badRequest("limit", "limit = %q, want an integer in 1..200", v)
		}
		if !s.opts.Faults.Has(FaultLimitIgnored) {
			limit = n
		}
	}
	if v := c.q.Get("cursor"); v != "" {
		n, ok := decodeCursor(v)
		if !ok {
			return 0, 0, badRequest("cursor", "cursor %q was not issued by this server", v)
		}
		after = n
	}
	return limit, after, nil
}

// listPage pages a table into a List.
func listPage[T any](s *Server, c *call, t *table[T], keep func(*T) bool) (*List, *apiError) {
	limit, after, e := s.pageArgs(c)
	if e != nil {
		return nil, e
	}
	items, last, more := t.page(after, limit, listKeep(s, c, keep)) // authz.go
	l := &List{Object: "list", Data: make([]any, 0, len(items))}
	for _, it := range items {
		l.Data = append(l.Data, it)
	}
	if more {
		if s.opts.Faults.Has(FaultPaginationRepeats) {
			last--
		}
		l.Page = Page{HasMore: true, NextCursor: ptr(encodeCursor(last))}
	}
	return l, nil
}

func (s *Server) emptyList(c *call) (any, *apiError) {
	if _, _, e := s.pageArgs(c); e != nil {
		return nil, e
	}
	return List{Object: "list", Data: []any{}}, nil
}
