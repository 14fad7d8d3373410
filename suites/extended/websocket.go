package extended

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The WebSocket profile harn-ws.v1 (docs/websocket.md), part 1: the
// connection (EXT-WS-001, -002), framing (EXT-WS-003), event frames
// (EXT-WS-007) and heartbeats (EXT-WS-011). Commands are in
// websocket_commands.go, requests, resume and the replayed marker in
// websocket_resume.go; how sessions are opened and their frames judged,
// in wsconn.go; the heartbeat and the auth frame's deadline, observed
// beside the rest of the run, in websocket_timers.go.

// refusal is how a connection attempt must be refused.
type refusal struct {
	status int    // the error's HTTP status (401, 426, 410)
	code   string // its error code
	close  int    // the close code after an error frame (4401, 4426, 4410)
	http   bool   // a refusal of the upgrade itself (that status) is acceptable
	frame  bool   // an upgrade, then an error frame and that close, is acceptable
	// only: before the error the server sends nothing at all (an
	// unauthenticated connection, section 1.3); noEvents: no event or
	// request frame (an unusable cursor, section 6.3). Otherwise any frame
	// may come before the error.
	only, noEvents bool
	// details names a member the error's details must carry.
	details string
	// deadline: the refusal comes at a deadline the profile sets (the
	// auth frame's 10 s), not in answer to anything the suite sent: its
	// silence says nothing of other refusals and feeds no breaker.
	deadline bool
	// command: the refused thing is a command frame (resume), so its
	// answer is a command's (wsCommandBreaker).
	command bool
	// secret is a credential the suite sent, which no answer may echo.
	secret string
}

func (r refusal) want() string {
	var ways []string
	if r.http {
		ways = append(ways, fmt.Sprintf("HTTP %d %s refusing the upgrade", r.status, r.code))
	}
	if r.frame {
		ways = append(ways, fmt.Sprintf("an error frame %d %s and close %d", r.status, r.code, r.close))
	}
	return strings.Join(ways, ", or ")
}

// judgeRefused judges an attempt that must be refused: s is the session
// (nil when the upgrade was refused: resp and err say how), after the
// frames of s that came before the refused step, wait how long the
// connection may take to close.
func judgeRefused(ctx context.Context, what string, s *client.WSSession, resp *client.Response, err error, r refusal, after int, wait time.Duration) error {
	GinkgoHelper()
	if s == nil {
		if resp == nil {
			suite.Transport(err)
			return err
		}
		if !r.http || resp.Status != r.status {
			return fmt.Errorf("%s: %s%s, want %s", what, resp, xHint(resp), r.want())
		}
		e, eerr := check.Envelope(resp)
		switch {
		case eerr != nil:
			return fmt.Errorf("%s: %w", what, eerr)
		case e.Code != r.code:
			return fmt.Errorf("%s: %s with error code %q, want %q", what, resp, e.Code, r.code)
		case r.secret != "" && check.SecretSpelled(string(resp.Body), r.secret) != "":
			return fmt.Errorf("%s: %s echoes the credential the suite sent in its body (%s)", what, resp, check.SecretSpelled(string(resp.Body), r.secret))
		case r.details != "" && !hasDetail(e.Details, r.details):
			return fmt.Errorf("%s: %s: error.details has no %s", what, resp, r.details)
		}
		return nil
	}
	if !r.frame {
		return fmt.Errorf("%s: GET %s was upgraded (101), want %s", what, s.Path, r.want())
	}
	// A frame the refusal forbids decides the verdict as it arrives: a
	// server that answers a bad credential with ready is not waited on
	// until it closes (it never will).
	forbidden := func(f ws.Frame) bool {
		return (r.only && f.Type != "error") || (r.noEvents && (f.Type == "event" || strings.HasSuffix(f.Type, "_request")))
	}
	// Nothing came yet, and the target's WebSocket is known to say nothing
	// to an authenticated session, or to refusals like this one: not
	// waited on again (docs/interpretations.md#fail-fast).
	breaker := wsRefusalBreaker(r.code)
	if r.command {
		breaker = wsCommandBreaker
	}
	for _, b := range []*suite.Breaker{wsReadyBreaker, breaker} {
		if err := b.Open(); err != nil && s.Len() == after {
			return fmt.Errorf("%s: no frame, none waited for (%v); want %s", what, err, r.want())
		}
	}
	end := &client.WaitError{Transport: client.TransportWebSocket, Path: s.Path, Waited: wait}
	if _, err := s.Await(ctx, wait, after, forbidden); err != nil {
		var we *client.WaitError
		if errors.As(err, &we) {
			end = we
		}
	}
	switch {
	case r.deadline:
	case end.Timeout() && s.Len() == after:
		breaker.Timeout(fmt.Sprintf("%s: no frame within %s", what, wait))
	default:
		breaker.Answered()
	}
	var errFrame *ws.Frame
	var bad []string
	for _, f := range s.Frames()[after:] {
		switch {
		case f.Type == "error" && errFrame == nil:
			errFrame = &f
		case r.only, r.noEvents && (f.Type == "event" || strings.HasSuffix(f.Type, "_request")):
			bad = append(bad, f.String())
		}
		if sp := check.SecretSpelled(string(f.Raw), r.secret); r.secret != "" && sp != "" {
			return fmt.Errorf("%s: %s echoes the credential the suite sent (%s)", what, f, sp)
		}
	}
	switch {
	case len(bad) > 0:
		return fmt.Errorf("%s: the server sent %s on a connection it must refuse, want only %s", what, listed(bad), r.want())
	case errFrame == nil:
		return fmt.Errorf("%s: no error frame came (%s), want %s", what, endText(end), r.want())
	case errFrame.Status() != r.status || errFrame.ErrorCode() != r.code:
		return fmt.Errorf("%s: %s has status %v code %q, want %d %s: %s", what, errFrame, errFrame.Obj["status"], errFrame.ErrorCode(), r.status, r.code, bounded(errFrame.Raw))
	case r.details != "" && !hasDetail(errFrame.Member("error")["details"], r.details):
		return fmt.Errorf("%s: %s: error.details has no %s: %s", what, errFrame, r.details, bounded(errFrame.Raw))
	case end.Ended == nil:
		return fmt.Errorf("%s: after %s the connection was still open %s later, want it closed with %d", what, errFrame, wait, r.close)
	case !end.Closed || int(end.Code) != r.close:
		return fmt.Errorf("%s: after %s the connection ended without close code %d: %s", what, errFrame, r.close, endText(end))
	}
	return nil
}

// hasDetail reports whether an error's details (an object) carry member.
func hasDetail(details any, member string) bool {
	d, ok := details.(map[string]any)
	if !ok {
		return false
	}
	_, ok = d[member]
	return ok
}

func endText(e *client.WaitError) string {
	if e.Ended == nil {
		return "the connection is still open"
	}
	return e.Error()
}

var _ = Describe("WebSocket sessions (harn-ws.v1)", func() {
	It("opens an authenticated harn-ws.v1 session on both stream paths, by headers on the upgrade and by an auth frame", suite.Req(reqWSOffer), func(ctx SpecContext) {
		wsAllowed()
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		task := xSubmit(ctx, sess, nil)
		adv := wsAdvertised(ctx)
		opened := 0
		for _, r := range []struct{ path, object, id string }{{sessionStream(sess), "session", sess}, {taskStream(task), "task", task}} {
			for _, way := range []ws.Way{ws.ByHeaders, ws.ByAuthFrame} {
				l, err := wsConnect(ctx, client.WSDial{Path: r.path, Way: way})
				if err != nil {
					if adv == "" {
						err = fmt.Errorf("%w; the target does not advertise WebSocket either (discovery capabilities.websocket is not true, the agent card lists no websocket interface), but an Extended server offers harn-ws.v1 interactive sessions", err)
					}
					suite.Check(reqWSOffer, err)
					continue
				}
				opened++
				res := l.ready.Member("resource")
				if res["object"] != r.object || res["id"] != r.id {
					suite.Check(reqWSOffer, fmt.Errorf("GET %s (%s): the ready frame names resource %v, want {object: %s, id: %s}: %s", r.path, way, l.ready.Obj["resource"], r.object, r.id, bounded(l.ready.Raw)))
				}
				if v := l.ready.Str("protocol_version"); v != suite.Env().Config.ProtocolVersion {
					suite.Check(reqWSOffer, fmt.Errorf("GET %s (%s): the ready frame names protocol_version %q, want the version in use, %q", r.path, way, v, suite.Env().Config.ProtocolVersion))
				}
				if l.ready.Obj["last_event_id"] != nil {
					suite.Check(reqWSOffer, fmt.Errorf("GET %s (%s): opened without a cursor, the ready frame names last_event_id %v, want null (delivery from the start, section 1.4)", r.path, way, l.ready.Obj["last_event_id"]))
				}
				l.Close()
			}
		}
		if opened > 0 && adv == "" {
			suite.Note(fmt.Sprintf("%s: the target serves harn-ws.v1 but does not advertise it (discovery capabilities.websocket, agent card websocket interface)", reqWSOffer))
		}
	})

	It("serves an upgrade that offers no subprotocol as harn-ws.v1, as a browser's new WebSocket(url) and the upstream TypeScript SDK send it", suite.Req(reqWSNoSub), func(ctx SpecContext) {
		wsAllowed()
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		task := xSubmit(ctx, sess, nil)
		var probs []string
		for _, c := range []struct {
			path string
			way  ws.Way
		}{{taskStream(task), ws.ByAuthFrame}, {sessionStream(sess), ws.ByAuthFrame}, {sessionStream(sess), ws.ByHeaders}} {
			l, err := wsConnect(ctx, client.WSDial{Path: c.path, Way: c.way, NoSubprotocol: true})
			if err != nil {
				// The same upgrade offering harn-ws.v1: when that fails
				// too, the profile is not served at all (EXT-WS-001's).
				if l2, oerr := wsConnect(ctx, client.WSDial{Path: c.path, Way: c.way}); oerr != nil {
					suite.Unverified(fmt.Sprintf("GET %s (%s) offering harn-ws.v1 did not open either: %v", c.path, c.way, oerr), remedyWS)
				} else {
					l2.Close()
				}
				probs = append(probs, fmt.Sprintf("GET %s (%s) offering no subprotocol: %v", c.path, c.way, err))
				continue
			}
			if c.path == sessionStream(sess) && c.way == ws.ByAuthFrame {
				// A step of a client journey: the SDK's user sends a message.
				f, why := l.command(ctx, map[string]any{"type": "user_message", "session_id": sess, "message": xText("conform: a message over a session opened without a subprotocol")})
				if why == "" {
					_, err := resultOf(f, "user_message", http.StatusCreated)
					if err != nil {
						why = err.Error()
					}
				}
				if why != "" {
					probs = append(probs, fmt.Sprintf("GET %s (%s) offering no subprotocol: %s", c.path, c.way, why))
				}
			}
			l.Close()
		}
		if len(probs) > 0 {
			suite.Should(reqWSNoSub, fmt.Errorf("%s; an upgrade that offers no subprotocol is what a browser's new WebSocket(url) and the upstream TypeScript SDK's connectTaskEventsWebSocket send: serve it as harn-ws.v1, selecting no subprotocol (docs/websocket.md section 1.2)", strings.Join(probs, "; ")))
		}
	})

	It("refuses a session without a valid credential: 401 before the upgrade, or an error frame 401 and close 4401, and nothing else", suite.Req(reqWSOffer), suite.Late, func(ctx SpecContext) {
		wsAllowed()
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		path := sessionStream(sess)
		// A connection that never authenticates waits out the profile's
		// 10 s for the auth frame: opened as the run started, beside it
		// (wsSilent, websocket_timers.go), and judged last.
		wsSilent.Start()
		wrong := "Bearer conform-wrong-" + suite.Key("key")
		unauth := refusal{status: http.StatusUnauthorized, code: "unauthenticated", close: 4401, only: true, secret: strings.TrimPrefix(wrong, "Bearer ")}
		for _, c := range []struct {
			what  string
			d     client.WSDial
			first map[string]any // sent first instead of an auth frame
			r     refusal
		}{
			{"a wrong credential in the upgrade's Authorization header", client.WSDial{Path: path, Way: ws.ByHeaders, Authorization: wrong, Probe: "a wrong credential"}, nil, withHTTP(unauth)},
			{"a malformed Authorization header (no scheme)", client.WSDial{Path: path, Way: ws.ByHeaders, Authorization: "conform-no-scheme", Probe: "a malformed credential"}, nil, withHTTP(refusal{status: http.StatusUnauthorized, code: "unauthenticated", close: 4401, only: true})},
			{"an auth frame with a wrong credential", client.WSDial{Path: path, Way: ws.ByAuthFrame, Authorization: wrong, Probe: "a wrong credential in the auth frame"}, nil, withFrame(unauth)},
			{"a first frame that is not auth (a ping)", client.WSDial{Path: path, Way: ws.ByAuthFrame, NoAuth: true, Probe: "a first frame that is not auth"}, map[string]any{"type": "ping", "id": "c-1"}, withFrame(unauth)},
		} {
			s, resp, err := wsAttempt(ctx, c.d)
			if s != nil && c.first != nil {
				if err := s.Send(ctx, c.first); err != nil {
					suite.Transport(err)
				}
			}
			suite.Check(reqWSOffer, judgeRefused(ctx, c.what+" on "+path, s, resp, err, c.r, 0, wsStream()))
		}
		o := watched(ctx, wsSilent)
		if o.setup != nil {
			// The observation could not make its session: on this one.
			o = opening{d: silentDial(path)}
			o.s, o.resp, o.err = wsAttempt(ctx, o.d)
			o.at = time.Now()
		} else {
			o.takeOver()
		}
		if o.s == nil {
			// No credential and no version: the upgrade may not be
			// refused (it is how a browser connects).
			suite.Check(reqWSOffer, fmt.Errorf("a browser's upgrade (no Authorization, no version header) on %s: %v; want it completed (101), the auth frame to follow (docs/websocket.md section 1.3)", o.d.Path, wsRefusal(o.resp, o.err)))
			return
		}
		// Section 1.3: 10 s for the auth frame, then 401 and 4401.
		wait := time.Until(o.at.Add(wsAuthDeadline + wsStream()))
		atDeadline := withFrame(unauth)
		atDeadline.deadline = true
		suite.Check(reqWSOffer, judgeRefused(ctx, "an upgrade without a credential that sends no auth frame, on "+o.d.Path, o.s, nil, nil, atDeadline, 0, max(wait, time.Second)))
	})

	It("refuses an unsupported protocol version: 426 before the upgrade, or an error frame 426 and close 4426 after an auth frame", suite.Req(reqWSOffer), func(ctx SpecContext) {
		wsAllowed()
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		path := sessionStream(sess)
		const old = "agents-protocol-1999-01-01"
		r := refusal{status: http.StatusUpgradeRequired, code: "unsupported_protocol_version", close: 4426, only: true, details: "supported_versions"}
		s, resp, err := wsAttempt(ctx, client.WSDial{Path: path, Way: ws.ByHeaders, Version: old, Probe: "an unsupported protocol version"})
		suite.Check(reqWSOffer, judgeRefused(ctx, "an upgrade with "+"Harn-Agents-Protocol-Version: "+old+" on "+path, s, resp, err, withHTTP(r), 0, wsStream()))
		s, resp, err = wsAttempt(ctx, client.WSDial{Path: path, Way: ws.ByAuthFrame, Version: old, Probe: "an unsupported protocol version in the auth frame"})
		suite.Check(reqWSOffer, judgeRefused(ctx, "an auth frame with protocol_version "+old+" on "+path, s, resp, err, withFrame(r), 0, wsStream()))
	})

	It("runs over wss://, or ws:// only on loopback or a deployment the operator marks trusted development, and advertises no other ws:// URL", suite.Req(reqWSScheme), func(ctx SpecContext) {
		judged := 0
		_, urls := advertised(ctx)
		for _, u := range urls["websocket"] {
			judged++
			if why := plainRemote(u); why != "" {
				suite.Check(reqWSScheme, fmt.Errorf("the agent card (GET /v1/agent-card) advertises a websocket interface whose URL may not carry a credential: %s", why))
			}
		}
		for _, u := range wsURLsIn(suite.Env().Discovery.Raw) {
			judged++
			if why := plainRemote(u); why != "" {
				suite.Check(reqWSScheme, fmt.Errorf("discovery (GET /v1) advertises a WebSocket URL that may not carry a credential: %s", why))
			}
		}
		base := wsBaseURL()
		if why := plainRemote(base); why != "" {
			suite.Check(reqWSScheme, fmt.Errorf("the target's WebSocket sessions (under --target) run over %s; the suite sent no credential over it", why))
			return
		}
		l := wsOpen(ctx, client.WSDial{Path: sessionStream(xID(xSession(ctx, xWorkspace(ctx), ""))), Way: ws.ByHeaders})
		judged++
		if strings.HasPrefix(base, "ws://") {
			why := "a loopback address"
			if !ws.Loopback(hostOf(base)) {
				why = "a deployment marked trusted development (--ws-trusted-dev)"
			}
			suite.Note(fmt.Sprintf("%s: the WebSocket session on %s ran over plain ws://, acceptable on %s", reqWSScheme, l.Path, why))
		}
		if judged == 0 {
			suite.NothingToCheck(reqWSScheme, "no WebSocket URL was advertised or opened", remedyWS)
		}
	})

	It("sends only text frames holding one JSON object, and answers a binary or malformed client frame with an error frame and close 1003 or 1007", suite.Req(reqWSText), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		task := xSubmit(ctx, sess, nil)
		xTerminal(ctx, task)
		// Frames to judge: the ready frame and the task's history (every
		// frame of every session is judged when the spec ends).
		l := wsOpen(ctx, client.WSDial{Path: taskStream(task), Way: ws.ByHeaders})
		if _, why := l.await(ctx, wsStream(), 0, "terminal event", eventOf(task, terminalKinds...)); why != "" {
			suite.NothingToCheck(reqWSText, fmt.Sprintf("the finished task's stream delivered only %d frames: %s (EXT-WS-007 judges the delivery)", l.Len(), why), "deliver the task's events as event frames (EXT-WS-007)")
		}
		for _, c := range []struct {
			what   string
			binary bool
			data   string
			close  int
		}{
			{"a binary message", true, `{"type":"ping","id":"c-binary"}`, 1003},
			{"a text message that is not JSON", false, `conform: not JSON`, 1007},
			{"a text message holding a JSON array", false, `[{"type":"ping","id":"c-array"}]`, 1007},
			{"a text message holding two JSON objects", false, `{"type":"ping","id":"c-a"}{"type":"ping","id":"c-b"}`, 1007},
		} {
			p := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
			after := p.Len()
			if err := p.SendRaw(ctx, c.binary, []byte(c.data)); err != nil {
				suite.Transport(err)
			}
			r := refusal{status: http.StatusBadRequest, code: "invalid_request", close: c.close, frame: true}
			suite.Check(reqWSText, judgeRefused(ctx, fmt.Sprintf("%s sent on %s", c.what, p.Path), p.WSSession, nil, nil, r, after, wsStream()))
		}
	})

	It("pushes every Event of the resource as an event frame carrying the full Event of the REST event list, in its order, live and from history", suite.Req(reqWSEvents), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		live := wsOpen(ctx, client.WSDial{Path: sessionStream(sess), Way: ws.ByHeaders})
		task := xSubmit(ctx, sess, nil)
		xTerminal(ctx, task)
		judgeDelivery(ctx, live, "GET /v1/sessions/"+sess+"/events", sessionEvents(ctx, sess), wsProgress())
		hist := wsOpen(ctx, client.WSDial{Path: taskStream(task), Way: ws.ByAuthFrame})
		judgeDelivery(ctx, hist, "GET /v1/tasks/"+task+"/events", xRawEvents(ctx, task), wsStream())
	})

	It("sends a ping frame at least every heartbeat_interval_ms (at most 30 s) and answers the client's ping with pong", suite.Req(reqWSBeat), suite.Late, func(ctx SpecContext) {
		wsAllowed()
		// Observed beside the run, on a session opened as it started
		// (websocket_timers.go); made here when that session could not be.
		w := watched(ctx, wsHeartbeats)
		var l *wsLink
		if w.setup != nil {
			l = wsOpen(ctx, client.WSDial{Path: sessionStream(xID(xSession(ctx, xWorkspace(ctx), ""))), Way: ws.ByHeaders})
		} else {
			w.takeOver()
			c, err := wsConnected(ctx, w.d, w.s, w.resp, w.err)
			l = wsOpened(ctx, w.d, c, err)
		}
		findings := w.findings
		if !w.observed {
			findings = observeHeartbeats(ctx, l)
		}
		for _, f := range findings {
			f.record(reqWSBeat)
		}
	})
})

func withHTTP(r refusal) refusal  { r.http, r.frame = true, true; return r }
func withFrame(r refusal) refusal { r.frame = true; return r }

func endOrOpen(l *wsLink) string {
	if err := l.Ended(); err != nil {
		return "the connection ended: " + err.Error()
	}
	return "the connection stayed open"
}

func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Hostname()
}

// wsURLsIn finds every ws:// or wss:// URL among the string values of v.
func wsURLsIn(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		if l := strings.ToLower(x); strings.HasPrefix(l, "ws://") || strings.HasPrefix(l, "wss://") {
			out = append(out, x)
		}
	case map[string]any:
		for _, k := range xKeysAny(x) {
			out = append(out, wsURLsIn(x[k])...)
		}
	case []any:
		for _, e := range x {
			out = append(out, wsURLsIn(e)...)
		}
	}
	return out
}

func xKeysAny(m map[string]any) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// judgeDelivery waits on l until the last event of rest (the REST list
// named listName) arrives, then wants the event frames up to it to be the
// REST list: the same events in the same order, each the full Event, with
// event_id its id.
func judgeDelivery(ctx context.Context, l *wsLink, listName string, rest []map[string]any, wait time.Duration) {
	GinkgoHelper()
	if len(rest) == 0 {
		suite.NothingToCheck(reqWSEvents, listName+" lists no event, so there is no delivery to compare", "record the resource's events (CORE-EVT-001)")
		return
	}
	last := xID(rest[len(rest)-1])
	lastFrame, why := l.await(ctx, wait, 0, "event "+last, withEventID(last))
	var frames []ws.Frame
	for _, f := range l.Frames() {
		if f.Type == "event" && (why != "" || f.Seq <= lastFrame.Seq) {
			frames = append(frames, f)
		}
	}
	if why != "" {
		suite.Check(reqWSEvents, fmt.Errorf("GET %s delivered %d event frames, but none for %s, the last event of %s: %s", l.Path, len(frames), last, listName, why))
	}
	var errs []string
	for _, f := range frames {
		if id := xID(f.Member("event")); f.Str("event_id") != id {
			errs = append(errs, fmt.Sprintf("%s: event_id %v, but its Event's id is %q", f, f.Obj["event_id"], id))
		}
	}
	if len(errs) > 0 {
		suite.Check(reqWSEvents, fmt.Errorf("GET %s: event frames whose event_id is not the Event's id: %s", l.Path, strings.Join(errs, "; ")))
	}
	if err := parity(listName, rest, "GET "+l.Path+" (WebSocket)", ws.Events(frames)); err != nil {
		suite.Check(reqWSEvents, err)
	}
}
