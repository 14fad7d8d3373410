package client

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Limits that keep one spec's transcript small enough for a report.
const (
	maxExchanges     = 100
	maxBodyInReport  = 8 << 10
	maxFramesPerExch = 50
	maxFrameInReport = 2 << 10
)

// Exchange is one recorded HTTP exchange, SSE stream or WebSocket session,
// already redacted and size-bounded.
type Exchange struct {
	Kind           string              `json:"kind"` // http | sse | websocket
	Op             string              `json:"op"`   // "GET /v1/tasks/{id}": the latency bucket
	Method         string              `json:"method"`
	URL            string              `json:"url"`
	RequestHeader  map[string][]string `json:"request_header,omitempty"`
	RequestBody    string              `json:"request_body,omitempty"`
	Status         int                 `json:"status,omitempty"`
	ResponseHeader map[string][]string `json:"response_header,omitempty"`
	ResponseBody   string              `json:"response_body,omitempty"`
	BodyTruncated  bool                `json:"body_truncated,omitempty"`
	Frames         []string            `json:"frames,omitempty"`
	FramesDropped  int                 `json:"frames_dropped,omitempty"`
	Error          string              `json:"error,omitempty"`
	Started        time.Time           `json:"started"`
	DurationMS     float64             `json:"duration_ms"`
	Curl           string              `json:"curl,omitempty"`

	// tail holds a WebSocket session's latest frames past its first
	// wsHead (a ring, next is where the next one goes), so that a
	// transcript shows how a long session began and how it ended.
	tail []string
	next int
}

// Recorder collects one spec's exchanges. A nil *Recorder records nothing.
type Recorder struct {
	mu      sync.Mutex
	ex      []*Exchange
	dropped int
}

// NewRecorder returns an empty transcript.
func NewRecorder() *Recorder { return &Recorder{} }

func (r *Recorder) add(e *Exchange) *Exchange {
	if r == nil || e == nil {
		return e
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.ex) >= maxExchanges {
		r.dropped++
		return e
	}
	r.ex = append(r.ex, e)
	return e
}

// Len is how many exchanges have been made so far, the dropped included:
// a verdict recorded now is about the Len-th exchange or an earlier one.
func (r *Recorder) Len() int {
	if r == nil {
		return 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ex) + r.dropped
}

// Exchanges returns copies of the recorded exchanges, and how many were
// dropped past the limit.
func (r *Recorder) Exchanges() ([]Exchange, int) {
	if r == nil {
		return nil, 0
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Exchange, len(r.ex))
	for i, e := range r.ex {
		out[i] = *e
		out[i].Frames = append([]string(nil), e.Frames...)
		if len(e.tail) > 0 {
			if e.FramesDropped > 0 {
				out[i].Frames = append(out[i].Frames, fmt.Sprintf("… %d frames not shown …", e.FramesDropped))
			}
			out[i].Frames = append(out[i].Frames, e.tail[e.next:]...)
			out[i].Frames = append(out[i].Frames, e.tail[:e.next]...)
		}
		out[i].tail, out[i].next = nil, 0
	}
	return out, r.dropped
}

// Include adds copies of exchanges recorded by another Recorder (an
// observation made outside the spec that reports it, suite.Watch) to this
// transcript, within its limit.
func (r *Recorder) Include(ex []Exchange) {
	for i := range ex {
		e := ex[i]
		e.Frames = append([]string(nil), e.Frames...)
		e.tail, e.next = nil, 0
		r.add(&e)
	}
}

// wsHead and wsTail split a WebSocket session's recorded frames: its first
// wsHead and its last wsTail are kept, the ones between only counted.
const (
	wsHead = maxFramesPerExch / 2
	wsTail = maxFramesPerExch - wsHead
)

// addWSFrame records one frame of a WebSocket session (direction mark
// included): the first wsHead, then the latest wsTail.
func (r *Recorder) addWSFrame(e *Exchange, raw string) {
	if r == nil || e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	raw = bound(raw, maxFrameInReport)
	switch {
	case len(e.Frames) < wsHead:
		e.Frames = append(e.Frames, raw)
	case len(e.tail) < wsTail:
		e.tail = append(e.tail, raw)
	default:
		e.tail[e.next] = raw
		e.next = (e.next + 1) % wsTail
		e.FramesDropped++
	}
}

func (r *Recorder) addFrame(e *Exchange, raw string) {
	if r == nil || e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(e.Frames) >= maxFramesPerExch {
		e.FramesDropped++
		return
	}
	e.Frames = append(e.Frames, bound(raw, maxFrameInReport))
}

func (r *Recorder) finish(e *Exchange, err error, d time.Duration) {
	if r == nil || e == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && e.Error == "" {
		e.Error = err.Error()
	}
	e.DurationMS = float64(d.Microseconds()) / 1000
}

func bound(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…[truncated]"
}

func (c *Client) exchange(kind string, hr *http.Request, reqBody []byte, hresp *http.Response, respBody []byte, truncated bool, start time.Time, err error) *Exchange {
	if c.rec == nil {
		return nil
	}
	red := c.Redactor()
	e := &Exchange{
		Kind:          kind,
		Op:            Op(hr.Method, hr.URL.Path, c.base.Path),
		Method:        hr.Method,
		URL:           red.String(hr.URL.String()),
		RequestHeader: red.Header(hr.Header),
		Started:       start.UTC(),
		DurationMS:    float64(time.Since(start).Microseconds()) / 1000,
		Curl:          curl(red, c.opts.APIKey, hr.Method, hr.URL.String(), hr.Header, reqBody),
	}
	if reqBody != nil {
		e.RequestBody = bound(red.String(string(reqBody)), maxBodyInReport)
	}
	if hresp != nil {
		e.Status = hresp.StatusCode
		e.ResponseHeader = red.Header(hresp.Header)
		e.ResponseBody = bound(red.String(string(respBody)), maxBodyInReport)
		e.BodyTruncated = truncated || len(respBody) > maxBodyInReport
	}
	if err != nil {
		e.Error = red.String(err.Error())
	}
	return e
}

// protocolWords are the fixed path segments of the protocol; any other
// segment is a resource id and becomes {id} in an operation name, so that
// latencies group by operation rather than by resource.
var protocolWords = map[string]bool{
	"v1": true, "agent-card": true, "personas": true, "workspaces": true, "sessions": true, "tasks": true,
	"branches": true, "messages": true, "artifacts": true, "content": true, "events": true, "stream": true,
	"receipts": true, "verify": true, "memories": true, "vaults": true, "connectors": true, "skills": true,
	"quotas": true, "outcomes": true, "close": true, "fork": true, "truncate": true, "cancel": true,
	"replay": true, "permission-requests": true, "respond": true, "keys": true, "files": true,
	"capabilities": true, "runtime": true, "tools": true,
}

// Op names an operation for latency grouping: the method and the path below
// the base prefix with ids replaced by {id}.
func Op(method, path, basePath string) string {
	p := strings.TrimPrefix(path, basePath)
	segs := strings.Split(strings.Trim(p, "/"), "/")
	for i, s := range segs {
		if s != "" && !protocolWords[s] {
			segs[i] = "{id}"
		}
	}
	return method + " /" + strings.Join(segs, "/")
}
