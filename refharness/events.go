package refharness

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: event lists, ranges and SSE streams.
var (
	FaultDropSSEID = declare(fault.Fault{Name: "drop-sse-id",
		Doc:      "SSE frames lack the id: line",
		Fails:    []string{"CORE-SSE-002"},
		Hookless: true})
	FaultIgnoreLastEventID = declare(fault.Fault{Name: "ignore-last-event-id",
		Doc:   "resume replays the stream from its start",
		Fails: []string{"CORE-RESUME-001"}})
	FaultResumeRepeatsEvent = declare(fault.Fault{Name: "resume-repeats-event",
		Doc:   "resume re-sends the Last-Event-ID event itself",
		Fails: []string{"CORE-RESUME-001"}})
	FaultNoCursorExpiredFrame = declare(fault.Fault{Name: "no-cursor-expired-frame",
		Doc:   "an expired/unknown cursor streams from the start, no error frame",
		Fails: []string{"CORE-RESUME-002"}})
	FaultSSEWrongContentType = declare(fault.Fault{Name: "sse-wrong-content-type",
		Doc:   "streams are served as text/plain",
		Fails: []string{"CORE-SSE-001"},
		Alone: true,
		Why:   "CORE-SSE-001 gates every stream: the suite reports what its failure blocks as unverified, so every partner would need a run of its own anyway"})
	FaultSSEDataNotJSON = declare(fault.Fault{Name: "sse-data-not-json",
		Doc:      "SSE data: is not a JSON Event",
		Fails:    []string{"CORE-SSE-003"},
		Hookless: true})
	// SSE alone changes agent messages' text: only transport parity can see
	// it.
	FaultSSEPayloadDrift = declare(fault.Fault{Name: "sse-payload-drift",
		Doc:   "SSE frames carry agent.message events with payload.text changed (ids, kinds and order kept; REST and WebSocket unchanged): only transport parity (EXT-TRANSPORT-004) can see it",
		Warns: []string{"EXT-TRANSPORT-004"}})
	FaultEventsRepeatOnRange = declare(fault.Fault{Name: "events-ignore-after-event-id",
		Doc:       "REST event lists ignore after_event_id",
		Fails:     []string{"CORE-EVT-003"},
		Tolerated: []string{"CORE-EVT-004", "CORE-RESUME-001"},
		Why:       "a range read that ignores its cursor also makes the event page walk repeat (CORE-EVT-004), the pagers of a session growing under appends too (CORE-RESUME-001)"})
	FaultEventByIDDiffers = declare(fault.Fault{Name: "event-by-id-differs",
		Doc:   "GET /v1/events/{id} answers the event with an empty payload",
		Fails: []string{"CORE-READ-014"}})
	FaultEventsNotScoped = declare(fault.Fault{Name: "events-not-scoped",
		Doc:      "a task's event list and stream also carry the other tasks' events of its session",
		Fails:    []string{"CORE-EVT-005"},
		Hookless: true})
	FaultReplayRangeSkips = declare(fault.Fault{Name: "replay-range-skips",
		Doc:   "an event list (task, session or global) read with after_event_id omits the first event that follows the cursor",
		Fails: []string{"RPLY-RANGE-001"}})
	FaultReplayRangeUnstable = declare(fault.Fault{Name: "replay-range-unstable",
		Doc:   "a repeated read of the same range returns the events with a payload member (payload.read_count) that changes per read",
		Fails: []string{"RPLY-RANGE-002"}})
	FaultReplayCursorUnknownEmpty = declare(fault.Fault{Name: "replay-cursor-unknown-empty",
		Doc:   "an unknown after_event_id answers 200 with an empty list instead of 410 cursor_expired",
		Fails: []string{"RPLY-RANGE-003"}})
	// A race: an unlocked subscriber list. A session stream reads the list
	// of subscribers when it opens and stores the list with itself added
	// once it has sent the history, so of streams that open at once only
	// the last one stored is woken by new events (until its keep-alive).
	FaultSSESubscribersLost = declare(fault.Fault{Name: "sse-subscribers-lost",
		Doc:       "session streams register for live events in a subscriber list updated without a lock (read on opening, stored after the history): of streams opened at once, some are never woken and deliver no live event",
		Fails:     []string{"CORE-FANOUT-001"},
		Tolerated: []string{"CORE-RESUME-001"},
		Why:       "a stream resumed while another one closes can lose its registration the same way (CORE-RESUME-001)", Race: true})
	FaultReplayUnmarkedSSE = declare(fault.Fault{Name: "replay-unmarked-sse",
		Doc:   "replayed events are served with replayed:false on SSE only",
		Fails: []string{"RPLY-MARK-001"}})
)

// Variants of this area: SSE framing a client must read.
var (
	VariantCRLF                = declareVariant(fault.Variant{Name: "sse-crlf", Doc: "SSE lines end in CRLF"})
	VariantKeepAliveEveryFrame = declareVariant(fault.Variant{Name: "sse-keepalive-every-frame", Doc: "a comment line before every SSE frame"})
	VariantMultilineData       = declareVariant(fault.Variant{Name: "sse-multiline-data", Doc: "the JSON of data: split over several data: lines"})
)

func sha256hex(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func cursorExpired(param, id string) *apiError {
	return &apiError{Status: http.StatusGone, Code: "cursor_expired", Param: param,
		Message: "event cursor " + strconv.Quote(id) + " is unknown or no longer retained; restart from the beginning of the stream"}
}

// ---- REST event ranges ----

func (s *Server) listEvents(c *call) (any, *apiError) {
	return s.eventRange(c, streamSel{taskID: c.q.Get("task_id"), sessionID: c.q.Get("session_id"), workspaceID: c.q.Get("workspace_id"), hide: s.eventHider(c)})
}

func (s *Server) listSessionEvents(c *call) (any, *apiError) {
	if _, ok := s.st.sessions.get(c.params[0]); !ok {
		return nil, notFound("session", c.params[0])
	}
	return s.eventRange(c, streamSel{sessionID: c.params[0]})
}

func (s *Server) listTaskEvents(c *call) (any, *apiError) {
	t, ok := s.st.tasks.get(c.params[0])
	if !ok {
		return nil, notFound("task", c.params[0])
	}
	return s.eventRange(c, s.taskSel(t))
}

// taskSel selects a task's events (under FaultEventsNotScoped, every task
// event of its session).
func (s *Server) taskSel(t *Task) streamSel {
	sel := streamSel{taskID: t.ID}
	if s.opts.Faults.Has(FaultEventsNotScoped) {
		sel.siblings = t.SessionID
	}
	return sel
}

func (s *Server) getEvent(c *call) (any, *apiError) {
	if pos, ok := s.st.parseEventID(c.params[0]); ok {
		if e, ok := s.st.event(pos); ok {
			if s.opts.Faults.Has(FaultEventByIDDiffers) {
				return &Event{Envelope: e.Envelope, Event: e.Event, Resource: e.Resource, Sequence: e.Sequence, Payload: map[string]any{},
					SessionID: e.SessionID, TaskID: e.TaskID, WorkspaceID: e.WorkspaceID, Actor: e.Actor}, nil
			}
			return e, nil
		}
	}
	return nil, notFound("event", c.params[0])
}

// eventRange serves ?after_event_id=&limit=. next_cursor is the last event id
// returned; it is accepted back as after_event_id (or as cursor).
func (s *Server) eventRange(c *call, sel streamSel) (any, *apiError) {
	limit := 50
	if v := c.q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 200 {
			return nil, badRequest("limit", "limit = %q, want an integer in 1..200", v)
		}
		if !s.opts.Faults.Has(FaultLimitIgnored) {
			limit = n
		}
	}
	after := uint64(0)
	param, cur := "after_event_id", c.q.Get("after_event_id")
	if cur == "" {
		param, cur = "cursor", c.q.Get("cursor")
	}
	if cur != "" && !s.opts.Faults.Has(FaultEventsRepeatOnRange) {
		pos, ok := s.st.cursorValid(cur)
		if !ok {
			if param == "after_event_id" && s.opts.Faults.Has(FaultReplayCursorUnknownEmpty) {
				return List{Object: "list", Data: []any{}}, nil // the fault: as if nothing followed it
			}
			return nil, cursorExpired(param, cur)
		}
		after = pos
	}
	evs, more := s.st.eventsAfter(sel, after, limit)
	served := evs
	if cur != "" && len(evs) > 0 && s.opts.Faults.Has(FaultReplayRangeSkips) {
		served = evs[1:] // the fault: the first event after the cursor is lost (the page goes on as before)
	}
	l := List{Object: "list", Data: make([]any, 0, len(served))}
	for _, e := range served {
		if cur != "" && s.opts.Faults.Has(FaultReplayRangeUnstable) {
			l.Data = append(l.Data, s.readCounted(e)) // the fault: each read of a range differs
			continue
		}
		l.Data = append(l.Data, e)
	}
	if more {
		last := evs[len(evs)-1].pos
		if s.opts.Faults.Has(FaultPaginationRepeats) && len(evs) > 1 {
			last = evs[len(evs)-2].pos
		}
		l.Page = Page{HasMore: true, NextCursor: ptr(s.st.eventID(last))}
	}
	return l, nil
}

// ---- SSE ----

func (s *Server) streamGlobal(w http.ResponseWriter, c *call) {
	s.stream(w, c, streamSel{taskID: c.q.Get("task_id"), sessionID: c.q.Get("session_id"), workspaceID: c.q.Get("workspace_id"), hide: s.eventHider(c)})
}

func (s *Server) streamSession(w http.ResponseWriter, c *call) {
	s.mu.RLock()
	_, ok := s.st.sessions.get(c.params[0])
	s.mu.RUnlock()
	if !ok {
		s.writeError(w, c.r, notFound("session", c.params[0]))
		return
	}
	s.stream(w, c, streamSel{sessionID: c.params[0]})
}

// streamTask ends the stream once the task is terminal and its last event was sent.
func (s *Server) streamTask(w http.ResponseWriter, c *call) {
	s.mu.RLock()
	t, ok := s.st.tasks.get(c.params[0])
	s.mu.RUnlock()
	if !ok {
		s.writeError(w, c.r, notFound("task", c.params[0]))
		return
	}
	defer s.streamOpened(t.ID)() // hostev.go
	s.stream(w, c, s.taskSel(t))
}

// sseBatch bounds how many events one wake-up writes before flushing.
const sseBatch = 256

// stream serves an SSE stream: the retained history of the selected events
// after Last-Event-ID (or from the start), then live events until the client
// goes away, the server closes, or (task streams) the task is over.
func (s *Server) stream(w http.ResponseWriter, c *call, sel streamSel) {
	fl, ok := w.(http.Flusher)
	if !ok {
		s.writeError(w, c.r, internal(errString("response writer cannot stream")))
		return
	}
	after := uint64(0)
	expired := ""
	if last := c.r.Header.Get("Last-Event-ID"); last != "" {
		s.mu.RLock()
		pos, ok := s.st.cursorValid(last)
		s.mu.RUnlock()
		switch {
		case ok && s.opts.Faults.Has(FaultIgnoreLastEventID):
			after = 0
		case ok && s.opts.Faults.Has(FaultResumeRepeatsEvent):
			after = pos - 1
		case ok:
			after = pos
		case !s.opts.Faults.Has(FaultNoCursorExpiredFrame):
			expired = last
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	if s.opts.Faults.Has(FaultSSEWrongContentType) {
		h.Set("Content-Type", "text/plain; charset=utf-8")
	}
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	var buf bytes.Buffer
	if expired != "" {
		b, _ := s.render(s.errorBody(cursorExpired("Last-Event-ID", expired), s.ids.NewID("req")))
		buf.WriteString("event: error\ndata: ")
		buf.Write(bytes.TrimSpace(b))
		buf.WriteString("\n\n")
		s.writeSSE(w, fl, &buf)
		return
	}
	// No opening comment: the headers go out at once, and the first block
	// of the body is the first event frame. WHATWG parsers skip comments,
	// but other tools count every block as a frame (the upstream runner
	// wants id, event and data in the first one: docs/interpretations.md,
	// sse-first-block).
	fl.Flush()

	ka := time.NewTicker(s.opts.KeepAlive)
	defer ka.Stop()
	// FaultSSESubscribersLost: the subscriber list as this stream found it,
	// and its own wake-up channel, stored into the list after the history.
	var listed *[]chan struct{}
	var mine chan struct{}
	registered := false
	if s.opts.Faults.Has(FaultSSESubscribersLost) && strings.HasPrefix(c.target, "/v1/sessions/") {
		mine = make(chan struct{}, 1)
		listed = s.subs.Load()
		defer s.unsubscribe(mine)
	}
	for {
		if c.r.Context().Err() != nil || s.ctx.Err() != nil {
			return // also between batches of a long replay
		}
		s.mu.RLock()
		evs, more := s.st.eventsAfter(sel, after, sseBatch)
		wake := s.notify
		if mine != nil {
			wake = mine
		}
		done := !more && sel.taskID != "" && s.taskOverLocked(sel.taskID, after, evs)
		seq := s.lastSeq
		s.mu.RUnlock()
		if s.wait(seq) != nil {
			return // the journal failed: end the stream rather than send undurable events
		}
		for _, e := range evs {
			s.frame(&buf, e)
			after = e.pos
		}
		if buf.Len() > 0 {
			if !s.writeSSE(w, fl, &buf) {
				return
			}
		}
		if done {
			return
		}
		if more {
			continue
		}
		if mine != nil && !registered {
			// The bug: the list read when the stream opened, plus this
			// stream, replaces whatever the list became meanwhile (a
			// store round trip later: raceGap, routes.go).
			time.Sleep(raceGap)
			s.subs.Store(withSub(listed, mine))
			registered = true
			continue // what was appended meanwhile: only the lost update is the bug
		}
		select {
		case <-wake:
		case <-ka.C:
			buf.WriteString(": keep-alive\n\n")
			if !s.writeSSE(w, fl, &buf) {
				return
			}
		case <-c.r.Context().Done():
			return
		case <-s.ctx.Done():
			return
		}
	}
}

// withSub is list (nil: empty) with ch added, as a new list.
func withSub(list *[]chan struct{}, ch chan struct{}) *[]chan struct{} {
	var out []chan struct{}
	if list != nil {
		out = slices.Clone(*list)
	}
	out = append(out, ch)
	return &out
}

// unsubscribe drops ch from the subscriber list, as carelessly as it was
// added (FaultSSESubscribersLost).
func (s *Server) unsubscribe(ch chan struct{}) {
	p := s.subs.Load()
	if p == nil {
		return
	}
	out := slices.DeleteFunc(slices.Clone(*p), func(c chan struct{}) bool { return c == ch })
	s.subs.Store(&out)
}

// wakeSubscribers wakes the streams of the subscriber list
// (FaultSSESubscribersLost; without it the list is empty). Holds s.mu.
func (s *Server) wakeSubscribers() {
	p := s.subs.Load()
	if p == nil {
		return
	}
	for _, ch := range *p {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// taskOverLocked reports whether a task is terminal and its final event has
// been (or is now being) sent.
func (s *Server) taskOverLocked(id string, after uint64, evs []*Event) bool {
	t, ok := s.st.tasks.get(id)
	if !ok || !Terminal(t.Status) {
		return false
	}
	lastID, ok := s.st.lastEvent[Pointer{"task", id}]
	if !ok {
		return false
	}
	pos, _ := s.st.parseEventID(lastID)
	if len(evs) > 0 {
		after = evs[len(evs)-1].pos
	}
	return pos < s.st.visible && pos <= after
}

// streamWriteTimeout drops a subscriber that stops reading: without it a
// stalled client would pin its stream goroutine forever.
const streamWriteTimeout = 30 * time.Second

func (s *Server) writeSSE(w http.ResponseWriter, fl http.Flusher, buf *bytes.Buffer) bool {
	b := buf.Bytes()
	if s.opts.Variants.Has(VariantCRLF) {
		b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n"))
	}
	// Not every ResponseWriter supports deadlines (httptest's does not); then
	// the client's own context still ends the stream.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(streamWriteTimeout))
	_, err := w.Write(b)
	buf.Reset()
	if err != nil {
		return false
	}
	fl.Flush()
	return true
}

// frame writes one event as an SSE frame.
func (s *Server) frame(buf *bytes.Buffer, e *Event) {
	data, err := s.wireJSON(e) // core.go
	if err != nil {
		return
	}
	if s.opts.Faults.Has(FaultSSEPayloadDrift) && e.Event == "agent.message" {
		data = driftText(data)
	}
	if s.opts.Faults.Has(FaultReplayUnmarkedSSE) && e.Replayed {
		data = unmarkReplayed(data)
	}
	if s.opts.Variants.Has(VariantKeepAliveEveryFrame) {
		buf.WriteString(": keep-alive\n")
	}
	if !s.opts.Faults.Has(FaultDropSSEID) {
		buf.WriteString("id: " + e.ID + "\n")
	}
	buf.WriteString("event: " + e.Event + "\n")
	switch {
	case s.opts.Faults.Has(FaultSSEDataNotJSON):
		buf.WriteString("data: " + e.Event + " " + e.ID + "\n")
	case s.opts.Variants.Has(VariantMultilineData):
		// Indented JSON has newlines only between tokens, so the lines joined
		// with "\n" by the client are the same JSON value.
		var ind bytes.Buffer
		if json.Indent(&ind, data, "", " ") != nil {
			ind.Reset()
			ind.Write(data)
		}
		for _, line := range strings.Split(ind.String(), "\n") {
			buf.WriteString("data: " + line + "\n")
		}
	default:
		buf.WriteString("data: ")
		buf.Write(data)
		buf.WriteString("\n")
	}
	buf.WriteString("\n")
}

type errString string

func (e errString) Error() string { return string(e) }

// driftText is FaultSSEPayloadDrift: the event's payload.text changed, on
// the SSE wire only.
func driftText(data []byte) []byte {
	var m map[string]any
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	p, ok := m["payload"].(map[string]any)
	if !ok {
		return data
	}
	t, _ := p["text"].(string)
	p["text"] = t + " (as the SSE stream tells it)"
	if b, err := json.Marshal(m); err == nil {
		return b
	}
	return data
}

// unmarkReplayed is FaultReplayUnmarkedSSE: a replayed event's replayed
// flag cleared, on the SSE wire only.
func unmarkReplayed(data []byte) []byte {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return data
	}
	m["replayed"] = false
	if b, err := json.Marshal(m); err == nil {
		return b
	}
	return data
}

// readCounted is FaultReplayRangeUnstable: event e as one read of a range
// returns it, its payload carrying how many ranges were read so far.
func (s *Server) readCounted(e *Event) any {
	b, err := json.Marshal(e)
	if err != nil {
		return e
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return e
	}
	p, _ := m["payload"].(map[string]any)
	if p == nil {
		p = map[string]any{}
		m["payload"] = p
	}
	p["read_count"] = s.rangeReads.Add(1)
	return m
}
