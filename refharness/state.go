package refharness

import (
	"encoding/base64"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the event journal's ids.
var (
	FaultEventIDsNotMonotonic = declare(fault.Fault{Name: "event-ids-not-monotonic",
		Doc:      "event ids of adjacent positions are swapped (\u20262, \u20261, \u20264, \u20263), consistently in rendering and parsing",
		Fails:    []string{"CORE-EVT-006"},
		Hookless: true})
	// A race: a non-atomic id counter. A Message append reads the next
	// event id from the store when the request arrives (answered, like any
	// read, once what it read is durable) and gives it to its event once
	// it holds the write lock; appends that arrive together give their
	// events one id. A cursor naming that id resolves to the first of them, so a
	// page walk or a resumption from the second sees it again.
	FaultEventIDReadEarly = declare(fault.Fault{Name: "event-id-read-early",
		Doc:       "a Message append reads the next event id on arrival and numbers its event from it under the lock: appends fired at once give their events one id, and a page walk or resumption from that id repeats events",
		Fails:     []string{"CORE-EVT-004", "CORE-RESUME-001"},
		Tolerated: []string{"CORE-EVT-006", "CORE-FANOUT-001"},
		Why:       "the repeated id is on every view of a session appended to at once: ids that do not increase (CORE-EVT-006), and the subscribers of the fan-out check get an id twice (CORE-FANOUT-001)", Race: true})
)

// readIDEarly is FaultEventIDReadEarly's early read: the next event id when
// a Message append arrives (routes.go, arrive).
func (s *Server) readIDEarly(c *call) {
	if !s.st.earlyIDs {
		return
	}
	s.mu.RLock()
	c.arr.nextID, c.arr.idRead = s.st.nextPos, true
	seq := s.lastSeq
	s.mu.RUnlock()
	_ = s.wait(seq) // read from the store, as every read: once durable
}

// commit is one atomic change: the unit written to the journal and the only
// way state changes. Resources are projections of the sequence of commits, so
// replaying the journal at start-up rebuilds exactly the acknowledged state.
type commit struct {
	Events  []*Event          `json:"events,omitempty"`
	Puts    []put             `json:"puts,omitempty"`
	Deletes []Pointer         `json:"deletes,omitempty"`
	Idem    *idemRecord       `json:"idem,omitempty"`
	Blobs   map[string][]byte `json:"blobs,omitempty"` // artifact id -> content

	Receipts    []*storedReceipt `json:"receipts,omitempty"`     // issued receipts (receipts.go)
	ReceiptKeys []publishedKey   `json:"receipt_keys,omitempty"` // public keys of the key directory

	Mgmt *mgmtCommit `json:"mgmt,omitempty"` // memories, vaults, quotas, connectors (mgmt.go)

	Perms []*PermissionRequest `json:"permission_requests,omitempty"` // permissions.go
	Files []*WorkspaceFile     `json:"workspace_files,omitempty"`     // local.go

	Owners map[string]string `json:"owners,omitempty"` // new resource id -> the actor whose request created it (authz.go)

	Deps    []*depRecord `json:"replay_deps,omitempty"` // recorded dependencies of a task's run (replay.go)
	Replays []*replayRun `json:"replays,omitempty"`     // accepted replay requests (replay.go)

	arr *arrival // what the write that made it read on arrival (routes.go); not journaled

	// Positions are the events' positions in the log, written under
	// FaultEventIDReadEarly, whose event ids no longer name them.
	Positions []uint64 `json:"positions,omitempty"`
}

// put stores one resource version; exactly one field is set.
type put struct {
	Workspace *Workspace `json:"workspace,omitempty"`
	Session   *Session   `json:"session,omitempty"`
	Task      *Task      `json:"task,omitempty"`
	Message   *Message   `json:"message,omitempty"`
	Artifact  *Artifact  `json:"artifact,omitempty"`
	Outcome   *Outcome   `json:"outcome,omitempty"`
	Persona   *Persona   `json:"persona,omitempty"`
	Skill     *Skill     `json:"skill,omitempty"`
	Branch    *Branch    `json:"branch,omitempty"` // branches.go
}

// idemRecord is the first completed response for an idempotency scope.
type idemRecord struct {
	Scope       string `json:"scope"`
	Fingerprint string `json:"fingerprint"`
	Status      int    `json:"status"`
	Body        []byte `json:"body"`
	CreatedAt   string `json:"created_at"`

	seq uint64 // journal sequence that made it durable
}

// table holds one resource kind in insertion order. Lists page by ordinal.
type table[T any] struct {
	rows  map[string]*row[T]
	order []*row[T]
}

type row[T any] struct {
	ord     int
	v       *T
	deleted bool
}

func newTable[T any]() *table[T] { return &table[T]{rows: map[string]*row[T]{}} }

func (t *table[T]) put(id string, v *T) {
	if r, ok := t.rows[id]; ok {
		r.v, r.deleted = v, false
		return
	}
	r := &row[T]{ord: len(t.order), v: v}
	t.rows[id] = r
	t.order = append(t.order, r)
}

func (t *table[T]) del(id string) {
	if r, ok := t.rows[id]; ok {
		r.deleted = true
	}
}

func (t *table[T]) get(id string) (*T, bool) {
	r, ok := t.rows[id]
	if !ok || r.deleted {
		return nil, false
	}
	return r.v, true
}

func (t *table[T]) len() int { return len(t.rows) }

// page returns up to limit rows after ordinal `after` (-1 for the first page)
// that keep accepts; more says whether another matching row exists.
func (t *table[T]) page(after, limit int, keep func(*T) bool) (out []*T, last int, more bool) {
	last = after
	for i := after + 1; i < len(t.order); i++ {
		r := t.order[i]
		if r.deleted || (keep != nil && !keep(r.v)) {
			continue
		}
		if len(out) == limit {
			return out, last, true
		}
		out = append(out, r.v)
		last = r.ord
	}
	return out, last, false
}

// encodeCursor and decodeCursor make list cursors opaque to clients.
func encodeCursor(ord int) string {
	return base64.RawURLEncoding.EncodeToString([]byte("o:" + strconv.Itoa(ord)))
}

func decodeCursor(c string) (int, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || !strings.HasPrefix(string(b), "o:") {
		return 0, false
	}
	n, err := strconv.Atoi(string(b[2:]))
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// state is the projection of the journal. All access holds Server.mu.
type state struct {
	workspaces *table[Workspace]
	sessions   *table[Session]
	tasks      *table[Task]
	messages   *table[Message]
	artifacts  *table[Artifact]
	outcomes   *table[Outcome]
	personas   *table[Persona]
	skills     *table[Skill]
	branches   *table[Branch] // branches.go
	blobs      map[string][]byte
	sessMsgs   map[string][]string // session id -> message ids in order
	msgPos     map[string]uint64   // message id -> position of its append event (for fork at_event_id)
	idem       map[string]*idemRecord

	// Events: events[i] has position firstPos+i. Positions start at 1.
	events    []*Event
	firstPos  uint64
	nextPos   uint64
	visible   uint64 // events with pos < visible are durable and may be shown
	seqs      map[Pointer]int64
	lastEvent map[Pointer]string
	byTask    map[string][]uint64
	bySession map[string][]uint64

	rc receiptState // issued receipts and published keys
	mg mgmtState    // memories, vaults, quotas, connectors (mgmt.go)
	pr permState    // permission requests (permissions.go)
	rp replayState  // recorded dependencies and replay runs (replay.go)

	owners map[string]string // resource id -> creating actor (authz.go)

	// swapIDs renders and parses event ids with adjacent positions swapped
	// (FaultEventIDsNotMonotonic).
	swapIDs bool
	// earlyIDs: a Message append's event id is read on arrival, and may
	// not name the event's position (FaultEventIDReadEarly).
	earlyIDs bool
}

func newState() *state {
	return &state{
		workspaces: newTable[Workspace](), sessions: newTable[Session](), tasks: newTable[Task](),
		messages: newTable[Message](), artifacts: newTable[Artifact](), outcomes: newTable[Outcome](),
		personas: newTable[Persona](), skills: newTable[Skill](), branches: newTable[Branch](),
		blobs: map[string][]byte{}, sessMsgs: map[string][]string{}, msgPos: map[string]uint64{}, idem: map[string]*idemRecord{},
		firstPos: 1, nextPos: 1, visible: 1,
		seqs: map[Pointer]int64{}, lastEvent: map[Pointer]string{},
		byTask: map[string][]uint64{}, bySession: map[string][]uint64{},
		mg: newMgmtState(), pr: newPermState(),
	}
}

func eventID(pos uint64) string { return fmt.Sprintf("event_%012d", pos) }

func parseEventID(id string) (uint64, bool) {
	d, ok := strings.CutPrefix(id, "event_")
	if !ok || len(d) == 0 || len(d) > 20 {
		return 0, false
	}
	n, err := strconv.ParseUint(d, 10, 64)
	return n, err == nil && n > 0
}

// eventID is the id of the event at pos, and parseEventID its inverse, as
// this server renders them: under FaultEventIDsNotMonotonic positions 2k-1
// and 2k trade ids (an involution, so cursors still name the right event),
// and ids no longer increase in delivery order.
func (st *state) eventID(pos uint64) string { return eventID(st.swap(pos)) }

func (st *state) parseEventID(id string) (uint64, bool) {
	pos, ok := parseEventID(id)
	return st.swap(pos), ok
}

func (st *state) swap(pos uint64) uint64 {
	switch {
	case !st.swapIDs || pos == 0:
		return pos
	case pos%2 == 1:
		return pos + 1
	}
	return pos - 1
}

// apply folds one commit into the projection. It is used both for live
// commits and for journal replay, so it must depend on the commit alone.
func (st *state) apply(c *commit, retention int) error {
	for _, p := range c.Puts {
		switch {
		case p.Workspace != nil:
			st.workspaces.put(p.Workspace.ID, p.Workspace)
		case p.Session != nil:
			st.sessions.put(p.Session.ID, p.Session)
		case p.Task != nil:
			st.tasks.put(p.Task.ID, p.Task)
		case p.Message != nil:
			m := p.Message
			if _, existed := st.messages.rows[m.ID]; !existed && m.SessionID != nil && !m.indexLate {
				st.sessMsgs[*m.SessionID] = append(st.sessMsgs[*m.SessionID], m.ID)
			}
			st.messages.put(m.ID, m)
		case p.Artifact != nil:
			st.artifacts.put(p.Artifact.ID, p.Artifact)
		case p.Outcome != nil:
			st.outcomes.put(p.Outcome.ID, p.Outcome)
		case p.Persona != nil:
			st.personas.put(p.Persona.ID, p.Persona)
		case p.Skill != nil:
			st.skills.put(p.Skill.ID, p.Skill)
		case p.Branch != nil:
			st.branches.put(p.Branch.ID, p.Branch)
		default:
			return fmt.Errorf("empty put in commit")
		}
	}
	for _, d := range c.Deletes {
		switch d.Object {
		case "message":
			if m, ok := st.messages.get(d.ID); ok && m.SessionID != nil {
				ids := st.sessMsgs[*m.SessionID]
				for i, id := range ids {
					if id == d.ID {
						st.sessMsgs[*m.SessionID] = append(ids[:i:i], ids[i+1:]...)
						break
					}
				}
			}
			st.messages.del(d.ID)
		case "artifact": // FaultPrivRedactionDeletes (privacy.go)
			st.artifacts.del(d.ID)
			delete(st.blobs, d.ID)
		default:
			return fmt.Errorf("cannot delete %s", d.Object)
		}
	}
	for id, b := range c.Blobs {
		st.blobs[id] = b
	}
	for i, e := range c.Events {
		pos, ok := st.parseEventID(e.ID)
		if i < len(c.Positions) {
			pos, ok = c.Positions[i], true // FaultEventIDReadEarly: the id does not say
		}
		if !ok || pos != st.nextPos {
			return fmt.Errorf("event id %q out of order, want %s", e.ID, st.eventID(st.nextPos))
		}
		e.pos = pos
		st.events = append(st.events, e)
		st.nextPos++
		st.seqs[e.Resource] = e.Sequence
		st.lastEvent[e.Resource] = e.ID
		if e.TaskID != nil {
			st.byTask[*e.TaskID] = append(st.byTask[*e.TaskID], pos)
		}
		if e.Event == "session.message_appended" || e.Event == "agent.message" || strings.HasPrefix(e.Event, "user.") {
			if id, ok := e.Payload["message_id"].(string); ok {
				st.msgPos[id] = pos
			}
		}
		if e.SessionID != nil {
			st.bySession[*e.SessionID] = append(st.bySession[*e.SessionID], pos)
		}
	}
	if retention > 0 && len(st.events) > retention {
		drop := len(st.events) - retention
		for i, e := range st.events[:drop] {
			st.trimIndex(st.byTask, e.TaskID, e.pos)
			st.trimIndex(st.bySession, e.SessionID, e.pos)
			st.events[i] = nil // let the event be collected
		}
		st.events = st.events[drop:]
		if cap(st.events) > 2*retention+1024 {
			st.events = append(make([]*Event, 0, 2*retention), st.events...) // release the dead prefix
		}
		st.firstPos += uint64(drop)
	}
	if c.Idem != nil {
		st.idem[c.Idem.Scope] = c.Idem
	}
	st.rc.apply(c)
	st.mg.apply(c.Mgmt)
	st.pr.apply(c)
	st.rp.apply(c)
	for id, actor := range c.Owners {
		if st.owners == nil {
			st.owners = map[string]string{}
		}
		st.owners[id] = actor
	}
	return nil
}

// used reports whether any stored resource has id.
func (st *state) used(id string) bool {
	return st.workspaces.rows[id] != nil || st.sessions.rows[id] != nil || st.tasks.rows[id] != nil ||
		st.messages.rows[id] != nil || st.artifacts.rows[id] != nil || st.outcomes.rows[id] != nil ||
		st.personas.rows[id] != nil || st.skills.rows[id] != nil || st.branches.rows[id] != nil || st.rc.byID[id] != nil ||
		st.mg.used(id) || st.pr.used(id)
}

// trimIndex drops pos, the oldest entry, from a per-resource index.
func (st *state) trimIndex(idx map[string][]uint64, id *string, pos uint64) {
	if id == nil {
		return
	}
	ps := idx[*id]
	if len(ps) > 0 && ps[0] == pos {
		if len(ps) == 1 {
			delete(idx, *id)
			return
		}
		idx[*id] = ps[1:]
	}
}

// event returns the retained event at pos.
func (st *state) event(pos uint64) (*Event, bool) {
	if pos < st.firstPos || pos >= st.nextPos || pos >= st.visible {
		return nil, false
	}
	return st.events[pos-st.firstPos], true
}

// cursorValid reports whether an event id can be used as a resume point.
func (st *state) cursorValid(id string) (uint64, bool) {
	pos, ok := st.parseEventID(id)
	if !ok {
		return 0, false
	}
	_, ok = st.event(pos)
	return pos, ok
}

// eventsAfter returns up to limit visible events after position `after` that
// belong to the selected stream, and whether more exist.
func (st *state) eventsAfter(sel streamSel, after uint64, limit int) (out []*Event, more bool) {
	var positions []uint64
	switch {
	case sel.siblings != "":
		positions = st.bySession[sel.siblings]
	case sel.taskID != "":
		positions = st.byTask[sel.taskID]
	case sel.sessionID != "":
		positions = st.bySession[sel.sessionID]
	}
	if positions != nil || sel.taskID != "" || sel.sessionID != "" {
		i := sort.Search(len(positions), func(i int) bool { return positions[i] > after })
		for ; i < len(positions); i++ {
			e, ok := st.event(positions[i])
			if !ok {
				if positions[i] < st.firstPos {
					continue
				}
				break
			}
			if !sel.match(e) {
				continue
			}
			if len(out) == limit {
				return out, true
			}
			out = append(out, e)
		}
		return out, false
	}
	start := after + 1
	if start < st.firstPos {
		start = st.firstPos
	}
	for pos := start; pos < st.visible && pos < st.nextPos; pos++ {
		e := st.events[pos-st.firstPos]
		if !sel.match(e) {
			continue
		}
		if len(out) == limit {
			return out, true
		}
		out = append(out, e)
	}
	return out, false
}

// streamSel selects the events of one stream.
type streamSel struct {
	taskID, sessionID, workspaceID string
	// siblings, set with taskID under FaultEventsNotScoped, is the task's
	// session: every task event of that session is selected.
	siblings string
	// hide, when set, leaves out the events the caller may not see (authz.go).
	hide func(*Event) bool
}

func (sel streamSel) match(e *Event) bool {
	if sel.hide != nil && sel.hide(e) {
		return false
	}
	if sel.siblings != "" {
		return e.TaskID != nil
	}
	if sel.taskID != "" && (e.TaskID == nil || *e.TaskID != sel.taskID) {
		return false
	}
	if sel.sessionID != "" && (e.SessionID == nil || *e.SessionID != sel.sessionID) {
		return false
	}
	if sel.workspaceID != "" && (e.WorkspaceID == nil || *e.WorkspaceID != sel.workspaceID) {
		return false
	}
	return true
}

// live reports whether an idempotency record is still honoured.
func (r *idemRecord) live(now time.Time, ttl time.Duration) bool {
	t, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
	return err == nil && now.Sub(t) < ttl
}
