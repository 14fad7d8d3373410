package extended

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/ws"
)

// The WebSocket profile's two long timers, observed beside the rest of the
// run (suite.Watch, docs/interpretations.md#protocol-timers): the heartbeat
// (EXT-WS-011: two heartbeats, each up to heartbeat_interval_ms, at most
// 30 s, apart) and the auth frame's deadline (EXT-WS-001: a connection that
// never authenticates is refused after 10 s). Each watch opens a session of
// its own as the run starts; the specs of websocket.go that report them
// take the observation over and judge it, so a run waits for the longer of
// the two, not for both in turn.

// wsAuthDeadline is how long the profile gives an upgrade without
// credentials to send its auth frame (docs/websocket.md section 1.3).
const wsAuthDeadline = 10 * time.Second

// A wsFinding is one thing an observation saw, in order, for the spec that
// reports it to record: a warning of the spec's SHOULD, a note, or the
// transport error that ended the observation.
type wsFinding struct {
	warn      error
	note      string
	transport error
}

// record records f for requirement req (a SHOULD).
func (f wsFinding) record(req string) {
	GinkgoHelper()
	switch {
	case f.transport != nil:
		suite.Transport(f.transport)
	case f.warn != nil:
		suite.Should(req, f.warn)
	case f.note != "":
		suite.Note(f.note)
	}
}

// wsWatchSession creates the session an observation outside a spec opens
// its stream on, with c: the stream's path. Nothing is judged: when it
// fails, the spec that reports the observation makes its own session (and
// judges that).
func wsWatchSession(ctx context.Context, c *client.Client) (string, error) {
	// The suite's own rule (wsBlocked), for c: an observation outside a
	// spec must not touch the spec's client.
	if why := plainRemote(ws.URL(strings.TrimRight(c.Options().BaseURL, "/"))); why != "" {
		return "", errors.New("the suite sends no credential over it: " + why)
	}
	wsID, err := suite.FindWorkspace(ctx, c)
	if err != nil {
		return "", err
	}
	resp, err := c.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions",
		Body: map[string]any{"workspace_id": wsID, "metadata": map[string]any{"conform.run": suite.Env().RunID}}})
	if err != nil {
		return "", err
	}
	m, err := resp.Object()
	if err != nil || resp.Status/100 != 2 {
		return "", fmt.Errorf("creating a Session (POST /v1/sessions): %s", resp)
	}
	id, _ := m["id"].(string)
	if id == "" {
		return "", fmt.Errorf("creating a Session (POST /v1/sessions): %s names no id", resp)
	}
	return sessionStream(id), nil
}

// An opening is a connection attempt made outside a spec (the results of
// OpenWS), for the spec to take over.
type opening struct {
	// setup says why the observation made no attempt (its session could
	// not be created, or no credential may travel to the target's
	// WebSocket): the spec then makes its own, as any spec does.
	setup error
	d     client.WSDial
	s     *client.WSSession
	resp  *client.Response
	err   error
	at    time.Time // when the upgrade was answered
}

// open attempts d with c.
func open(ctx context.Context, c *client.Client, d client.WSDial) opening {
	o := opening{d: d}
	o.s, o.resp, o.err = c.OpenWS(ctx, d)
	o.at = time.Now()
	return o
}

// takeOver makes the spec the owner of o's session: it is closed and its
// frames judged when the spec ends.
func (o opening) takeOver() { wsJudgeAtEnd(o.s) }

// heartbeatWatch is the observation of EXT-WS-011: a session opened by
// headers, its ready frame, and what observeHeartbeats saw on it (nil
// when no ready frame came in time: the spec then judges the opening and
// observes on it itself).
type heartbeatWatch struct {
	opening
	findings []wsFinding
	observed bool
}

var wsHeartbeats = suite.NewWatch("the harn-ws.v1 heartbeats (EXT-WS-011)", suite.Req(reqWSBeat),
	func(ctx context.Context, c *client.Client) heartbeatWatch {
		path, err := wsWatchSession(ctx, c)
		if err != nil {
			return heartbeatWatch{opening: opening{setup: err}}
		}
		w := heartbeatWatch{opening: open(ctx, c, client.WSDial{Path: path, Way: ws.ByHeaders})}
		if w.s == nil || w.err != nil {
			return w
		}
		f, err := w.s.Await(ctx, wsStream(), 0, func(ws.Frame) bool { return true })
		if err != nil || f.Type != ws.TypeReady {
			return w // the spec judges the first frame (wsReady) and waits no more
		}
		w.findings, w.observed = observeHeartbeats(ctx, &wsLink{WSSession: w.s, ready: f}), true
		// Observed: the connection is not needed any more (and a restart
		// of the target must not find it open).
		w.s.Close()
		return w
	})

// observeHeartbeats observes EXT-WS-011 on l: the ready frame's
// heartbeat_interval_ms, a pong answering the client's ping, and two
// heartbeats, each within an interval of the one before (the first of
// ready). It records nothing: it returns what it found, in order.
func observeHeartbeats(ctx context.Context, l *wsLink) []wsFinding {
	var out []wsFinding
	interval := 30 * time.Second
	if n, ok := l.ready.Int("heartbeat_interval_ms"); ok && n >= 1 && n <= 30000 {
		interval = time.Duration(n) * time.Millisecond
	} else {
		out = append(out, wsFinding{warn: fmt.Errorf("the ready frame's heartbeat_interval_ms is %v, want 1…30000; the heartbeat is judged against 30 s", l.ready.Obj["heartbeat_interval_ms"])})
	}
	// A client ping gets a pong naming it.
	id := l.NewID()
	after := l.Len()
	if err := l.Send(ctx, map[string]any{"type": "ping", "id": id}); err != nil {
		return append(out, wsFinding{transport: err})
	}
	if _, why := l.await(ctx, wsStream(), after, "pong", func(f ws.Frame) bool { return f.Type == "pong" && f.Str("in_reply_to") == id }); why != "" {
		out = append(out, wsFinding{warn: fmt.Errorf("the client's ping frame %q: %s", id, why)})
	}
	// Two heartbeats, each within an interval of the one before (the
	// first of ready): a margin for the network and a busy machine.
	margin := max(2*time.Second, interval/5)
	from := l.ready.At
	kinds := map[string]int{}
	for i := range 2 {
		f, at, ok := l.AwaitHeartbeat(ctx, time.Until(from.Add(interval+margin)), from)
		if !ok || at.Sub(from) > interval+margin {
			return append(out, wsFinding{warn: fmt.Errorf("GET %s: no heartbeat (ping frame or RFC 6455 Ping) within heartbeat_interval_ms %s (+%s) of the %s (%s)",
				l.Path, interval, margin, map[bool]string{true: "ready frame", false: "previous heartbeat"}[i == 0], endOrOpen(l))})
		}
		if f.Seq > 0 {
			kinds["ping frames"]++
		} else {
			kinds["RFC 6455 Ping control frames"]++
		}
		from = at
	}
	if kinds["ping frames"] == 0 {
		out = append(out, wsFinding{note: fmt.Sprintf("%s: GET %s sent its heartbeats as RFC 6455 Ping control frames, not ping frames (accepted, docs/interpretations.md#ws-heartbeat; browser code cannot see them)", reqWSBeat, l.Path)})
	}
	return out
}

// silentDial is the upgrade of a browser that never sends its auth frame.
func silentDial(path string) client.WSDial {
	return client.WSDial{Path: path, Way: ws.ByAuthFrame, NoAuth: true, Probe: "a browser's upgrade that never sends its auth frame"}
}

// wsSilent is the observation of the auth frame's deadline (EXT-WS-001): an
// upgrade without a credential that sends nothing, kept until the
// connection ends or the deadline and --stream-timeout have passed. The
// spec judges the session (judgeRefused), which by then waits no more.
var wsSilent = suite.NewWatch("the harn-ws.v1 auth frame's deadline (EXT-WS-001)", suite.Req(reqWSOffer),
	func(ctx context.Context, c *client.Client) opening {
		path, err := wsWatchSession(ctx, c)
		if err != nil {
			return opening{setup: err}
		}
		o := open(ctx, c, silentDial(path))
		if o.s != nil {
			o.s.AwaitEnd(ctx, time.Until(o.at.Add(wsAuthDeadline+wsStream())))
		}
		return o
	})

// watched is what w saw (suite.Watch.Result); a spec stopped first ends.
func watched[T any](ctx context.Context, w *suite.Watch[T]) T {
	GinkgoHelper()
	v, err := w.Result(ctx)
	if err != nil {
		Fail(fmt.Sprintf("stopped while waiting for an observation made beside the run: %v", err))
	}
	return v
}
