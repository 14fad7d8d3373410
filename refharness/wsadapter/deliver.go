package wsadapter

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/coder/websocket"

	"github.com/harn-conform/conform/refharness"
)

// runReq starts a delivery run (section 6.1): on connect, or for a resume
// frame.
type runReq struct {
	cursor  string  // "": from the start of the resource's log
	param   string  // the member naming the cursor, for cursor_expired
	connect bool    // the connect cursor: ready goes first
	frameID *string // the auth frame (connect, way b) or the resume frame it answers
}

// deliver is the deliverer goroutine: ready, then delivery runs (history,
// pending requests, live events and the requests they open), with a ping
// frame every heartbeat interval, until the connection closes. It is the
// only writer of event and request frames, so a resume's result is
// followed by no frame of the previous run.
func (c *conn) deliver(first runReq) {
	defer c.wrote.Done()
	defer c.recover()
	hb := time.NewTicker(c.a.opts.HeartbeatInterval)
	defer hb.Stop()
	req := first
	for {
		next, ok := c.runOnce(req, hb)
		if !ok {
			return
		}
		req = next
	}
}

// runOnce is one delivery run; it returns the next run's request when a
// resume frame ends it, ok false when the connection is over.
func (c *conn) runOnce(req runReq, hb *time.Ticker) (next runReq, ok bool) {
	run, e := c.st.Start(req.cursor, req.param)
	if e != nil {
		// An unusable cursor: no event frame of that run, the error
		// (answering the auth or resume frame), close 4410. On connect
		// there is no ready: the error is the auth frame's one answer.
		c.fail(req.frameID, e, closeCodeFor(e))
		return runReq{}, false
	}
	var taken *string
	if req.cursor != "" {
		taken = &req.cursor
	}
	if req.connect {
		if c.send(c.ready(taken, req.frameID)) != nil {
			return runReq{}, false
		}
	} else {
		body, _ := json.Marshal(map[string]any{"object": "ws.resume", "last_event_id": taken})
		if c.send(resultFrame(*req.frameID, http.StatusOK, body)) != nil {
			return runReq{}, false
		}
	}
	after := run.From
	history := true
	// FaultWSSubscribersLost: a session stream's run is woken by its own
	// channel, registered in the subscriber list once the history is sent.
	var sub *refharness.Subscription
	if c.a.srv.Fault(refharness.FaultWSSubscribersLost) && c.st.Resource().Object == "session" {
		sub = c.a.srv.Subscribe()
		defer c.a.srv.Unsubscribe(sub)
	}
	registered := false
	// FaultWSResumeSkipsEvent: a run from a cursor loses its first event.
	skip := req.cursor != "" && c.a.srv.Fault(refharness.FaultWSResumeSkipsEvent)
	for {
		select {
		case <-c.done:
			return runReq{}, false
		case r := <-c.resume:
			return r, true
		case <-hb.C:
			if c.ping() != nil {
				return runReq{}, false
			}
		default:
		}
		b, err := c.st.Read(after, batchSize)
		if err != nil {
			c.fail(nil, refharness.NewError(http.StatusInternalServerError, "internal_error", "", "cannot read the event log", nil), websocket.StatusInternalError)
			return runReq{}, false
		}
		for _, ev := range b.Events {
			replayed := !ev.Cursor.After(run.H)
			if history && !replayed {
				history = false
				if c.sendPending(run.Pending) != nil {
					return runReq{}, false
				}
			}
			after = ev.Cursor
			if skip {
				skip = false
				continue
			}
			if c.sendEvent(ev, replayed) != nil {
				return runReq{}, false
			}
			if !replayed && ev.Opens != nil {
				if c.sendRequest(ev.Opens, false) != nil {
					return runReq{}, false
				}
			}
		}
		if b.More {
			continue
		}
		if history {
			history = false
			if c.sendPending(run.Pending) != nil {
				return runReq{}, false
			}
		}
		wake := b.Wake
		if sub != nil {
			if !registered {
				c.a.srv.Register(sub)
				registered = true
				continue // what was appended meanwhile: only the lost update is the bug
			}
			wake = sub.Wake
		}
		for woken := false; !woken; {
			select {
			case <-wake:
				woken = true
			case <-c.done:
				return runReq{}, false
			case r := <-c.resume:
				return r, true
			case <-hb.C:
				if c.ping() != nil {
					return runReq{}, false
				}
				// FaultWSSubscribersLost: the heartbeat only pings; a run
				// nobody wakes stays asleep (else the tick would read the
				// log and hide the lost registration within a heartbeat).
				woken = sub == nil
			}
		}
	}
}

// ready is the ready frame (section 3).
func (c *conn) ready(cursor, inReplyTo *string) []byte {
	b, _ := json.Marshal(readyFrame{Type: "ready", Profile: Profile, ProtocolVersion: refharness.ProtocolVersion,
		ConnectionID: c.id, Resource: c.st.Resource(),
		HeartbeatIntervalMS: c.a.opts.HeartbeatInterval.Milliseconds(), PongTimeoutMS: c.a.opts.PongTimeout.Milliseconds(),
		MaxFrameBytes: c.a.opts.MaxFrameBytes, LastEventID: cursor, InReplyTo: inReplyTo})
	return b
}

// send writes a text frame.
func (c *conn) send(b []byte) error { return c.write(b, false) }

// sendEvent writes an event frame: the Event as the REST list renders it.
func (c *conn) sendEvent(ev refharness.StreamEvent, replayed bool) error {
	data := ev.JSON
	if c.a.srv.Fault(refharness.FaultWSEventFrameDiffers) {
		data = emptyPayload(data)
	}
	if replayed && c.a.srv.Fault(refharness.FaultWSReplayedUnmarked) {
		replayed = false
	}
	return c.write(eventFrame(ev.ID, replayed, data), c.a.srv.Fault(refharness.FaultWSBinaryEventFrames))
}

// emptyPayload is FaultWSEventFrameDiffers: the Event with its payload
// emptied (the REST copy keeps it).
func emptyPayload(data []byte) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(data, &m) != nil {
		return data
	}
	m["payload"] = json.RawMessage(`{}`)
	b, err := json.Marshal(m)
	if err != nil {
		return data
	}
	return b
}

// sendPending writes the request frames pending at the run's start,
// replayed (section 6.1, step 3).
func (c *conn) sendPending(rs []refharness.Request) error {
	for i := range rs {
		if err := c.sendRequest(&rs[i], true); err != nil {
			return err
		}
	}
	return nil
}

func (c *conn) sendRequest(r *refharness.Request, replayed bool) error {
	if r.Kind == "input_request" && c.a.srv.Fault(refharness.FaultWSNoInputRequest) {
		return nil
	}
	if replayed && c.a.srv.Fault(refharness.FaultWSReplayedUnmarked) {
		replayed = false
	}
	b, err := requestFrame(r, replayed)
	if err != nil {
		return fmt.Errorf("wsadapter: request frame: %w", err)
	}
	return c.send(b)
}

// ping sends a heartbeat (section 7), unless FaultWSNoHeartbeat.
func (c *conn) ping() error {
	if c.a.srv.Fault(refharness.FaultWSNoHeartbeat) {
		return nil
	}
	n := c.pings.Add(1)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"ping","id":"s-ping-%d","sent_at":%q}`, n, c.a.srv.Now())
	return c.send(b.Bytes())
}
