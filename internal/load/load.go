// Package load is the concurrency checks' load driver: it fires a round of
// requests at once against a target, politely (at most Limits.N at once, a
// rate cap over time, a deadline per round, 429 and 503 answers honoured
// by waiting their Retry-After and sending again), and keeps what an
// implementer needs to see the interleaving when a round exposes a race:
// each request's method, path and key, its start and end relative to the
// round's release, its answer, and a shell script that fires the same
// requests at once again (docs/concurrency.md).
//
// The driver judges nothing: the verifiers of internal/check do, over the
// answers it returns and what the spec reads afterwards.
package load

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/harn-conform/conform/internal/client"
)

// Limits bound a driver.
type Limits struct {
	// N is the most requests a round fires at once.
	N int
	// Rate caps the requests per second over time (0: no cap). A burst of
	// N may go at once; the next waits until the cap allows it.
	Rate float64
	// RoundTimeout is the deadline of one round (its retries included).
	RoundTimeout time.Duration
	// MaxRetryAfter is the longest Retry-After the driver waits before it
	// sends a refused request again (0: DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
}

// DefaultMaxRetryAfter is the longest Retry-After honoured by default: a
// target that asks for longer than this leaves the round unjudged rather
// than stalling the run.
const DefaultMaxRetryAfter = 5 * time.Second

// retryWithout is the wait before sending again after a 503 or 429 that
// named no Retry-After.
const retryWithout = 200 * time.Millisecond

// Driver fires rounds against one target.
type Driver struct {
	c   *client.Client
	lim Limits

	mu     sync.Mutex
	tokens float64   // the rate cap's bucket: at most lim.N
	filled time.Time // when tokens was last topped up
	warm   int       // idle connections made by Warm
}

// New builds a driver over c (whose exchanges are recorded and observed as
// any spec's are).
func New(c *client.Client, lim Limits) *Driver {
	if lim.N < 1 {
		lim.N = 1
	}
	if lim.RoundTimeout <= 0 {
		lim.RoundTimeout = 10 * time.Second
	}
	if lim.MaxRetryAfter <= 0 {
		lim.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return &Driver{c: c, lim: lim, tokens: float64(lim.N)}
}

// Limits returns the driver's limits.
func (d *Driver) Limits() Limits { return d.lim }

// Client is the driver's client.
func (d *Driver) Client() *client.Client { return d.c }

// Shot is one request of a round.
type Shot struct {
	// Label names the request in a timeline ("#1", "ws#2").
	Label string
	// Req is the REST request; for a shot Send makes, its REST
	// equivalent (method, path, key and body name it in the timeline).
	Req client.Request
	// Send, when set, makes the request another way (a WebSocket command)
	// and returns its answer as a REST status and body. Nil: Req is sent
	// over REST with the driver's client.
	Send func(ctx context.Context) (Answer, error)
	// Transport names how Send sends it ("websocket"); "" for REST.
	Transport string
	// Script is how a reproduction script shows a Send shot: a comment
	// saying what to send, when curl cannot send it (a WebSocket command).
	Script string
	// Shell, when set, is the shell command that reproduces a Send shot
	// (a curl -N that opens a stream).
	Shell string
	// Lag holds the shot this long after the round's release: a round
	// that tries one order of arrival (one transport's requests inside the
	// other's window) rather than whichever the network gives.
	Lag time.Duration
}

// Refusal is a 429 or 503 answer the driver honoured by waiting and
// sending the request again.
type Refusal struct {
	Status     int           `json:"status"`
	RetryAfter string        `json:"retry_after,omitempty"`
	At         time.Duration `json:"at_ns"`
}

// Answer is what one shot got.
type Answer struct {
	Label     string `json:"label"`
	Transport string `json:"transport"`
	Method    string `json:"method"`
	Path      string `json:"path"`
	Key       string `json:"idempotency_key,omitempty"`
	// Start and End are relative to the round's release (its t0): when the
	// last try was sent and when its answer was read.
	Start time.Duration `json:"start_ns"`
	End   time.Duration `json:"end_ns"`
	// Status and Body are the (last) answer's; Location its Location
	// header.
	Status   int    `json:"status,omitempty"`
	Body     []byte `json:"-"`
	Location string `json:"location,omitempty"`
	// Err is a failure below HTTP (a *client.TransportError) or of Send.
	Err error `json:"-"`
	// Refusals are the 429 and 503 answers honoured before this one.
	Refusals []Refusal `json:"refusals,omitempty"`
	// GaveUp: the target was still refusing (429, 503) when the round's
	// deadline came; the answer is that refusal.
	GaveUp bool `json:"gave_up,omitempty"`

	retryAfter string // the answer's Retry-After header
}

// Object decodes the answer's body as a JSON object (nil when it is not
// one).
func (a Answer) Object() map[string]any {
	r := client.Response{Method: a.Method, URL: a.Path, Status: a.Status, Body: a.Body}
	m, err := r.Object()
	if err != nil {
		return nil
	}
	return m
}

// Response is the answer as a client.Response, for the verifiers that
// take one.
func (a Answer) Response() *client.Response {
	h := http.Header{}
	if a.Location != "" {
		h.Set("Location", a.Location)
	}
	return &client.Response{Method: a.Method, URL: a.Path, Status: a.Status, Header: h, Body: a.Body}
}

// Round is one burst of requests fired at once.
type Round struct {
	// Started is when the round was released (the answers' t0).
	Started time.Time `json:"started"`
	Answers []Answer  `json:"requests"`
	// Throttled: some request was refused with 429 or 503 and the driver
	// waited and sent it again; GaveUp: one was still refused at the
	// deadline, so the round cannot be judged.
	Throttled bool `json:"throttled,omitempty"`
	GaveUp    bool `json:"gave_up,omitempty"`

	shots []Shot
	c     *client.Client
}

// Failed lists the answers whose request failed below HTTP.
func (r *Round) Failed() []Answer {
	var out []Answer
	for _, a := range r.Answers {
		if a.Err != nil {
			out = append(out, a)
		}
	}
	return out
}

// TransportError is the first failure below HTTP of the round (a
// *client.TransportError), nil when every request was answered.
func (r *Round) TransportError() error {
	for _, a := range r.Answers {
		var te *client.TransportError
		if errors.As(a.Err, &te) {
			return a.Err
		}
	}
	return nil
}

// ErrTooMany is returned by Fire for a round of more shots than Limits.N.
var ErrTooMany = errors.New("load: more shots than the driver may fire at once")

// Warm opens up to n idle connections to the target (n requests of GET
// /v1, at once), so that a round's requests go out together rather than
// each behind a new connection's handshake. It is done once per size.
func (d *Driver) Warm(ctx context.Context, n int) {
	d.mu.Lock()
	if n <= d.warm {
		d.mu.Unlock()
		return
	}
	d.warm = n
	d.mu.Unlock()
	quiet := d.c.WithRecorder(nil)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, _ = quiet.Do(ctx, client.Request{Path: "/v1", Probe: "warming a connection for a concurrency round"})
		})
	}
	wg.Wait()
}

// Fire releases the shots at once and returns what each got, once every
// one is answered, failed, or given up at the round's deadline. It waits
// first, when the rate cap asks for it. The error is ctx's, or ErrTooMany.
func (d *Driver) Fire(ctx context.Context, shots []Shot) (*Round, error) {
	if len(shots) > d.lim.N {
		return nil, fmt.Errorf("%w: %d > %d", ErrTooMany, len(shots), d.lim.N)
	}
	if err := d.take(ctx, len(shots)); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, d.lim.RoundTimeout)
	defer cancel()
	r := &Round{Answers: make([]Answer, len(shots)), shots: shots, c: d.c}
	AtOnce(len(shots), func() { r.Started = time.Now() }, func(i int) { r.Answers[i] = d.shoot(rctx, r, shots[i]) })
	for _, a := range r.Answers {
		r.Throttled = r.Throttled || len(a.Refusals) > 0
		r.GaveUp = r.GaveUp || a.GaveUp
	}
	return r, nil
}

// AtOnce runs f(0…n-1) in n goroutines released together: each waits
// until all n are running, then released (if not nil) runs, then they go;
// AtOnce returns when every f has returned.
func AtOnce(n int, released func(), f func(i int)) {
	release := make(chan struct{})
	var ready, done sync.WaitGroup
	for i := range n {
		ready.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			ready.Done()
			<-release
			f(i)
		}()
	}
	ready.Wait()
	if released != nil {
		released()
	}
	close(release)
	done.Wait()
}

// shoot sends one shot, honouring 429 and 503 refusals within the round's
// deadline.
func (d *Driver) shoot(ctx context.Context, r *Round, s Shot) Answer {
	if s.Lag > 0 {
		t := time.NewTimer(s.Lag)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	var refusals []Refusal
	for {
		start := time.Since(r.Started)
		a := d.send(ctx, s)
		a.Start, a.End = start, time.Since(r.Started)
		a.Label, a.Method, a.Path, a.Key = s.Label, cmpOr(s.Req.Method, http.MethodGet), s.Req.Path, s.Req.IdempotencyKey
		if a.Transport == "" {
			a.Transport = cmpOr(s.Transport, "rest")
		}
		if a.Err != nil || (a.Status != http.StatusTooManyRequests && a.Status != http.StatusServiceUnavailable) {
			a.Refusals = refusals
			return a
		}
		ra := a.retryAfter
		refusals = append(refusals, Refusal{Status: a.Status, RetryAfter: ra, At: a.End})
		wait, ok := retryAfter(ra, time.Now())
		if !ok {
			wait = retryWithout
		}
		if wait > d.lim.MaxRetryAfter {
			a.Refusals, a.GaveUp = refusals[:len(refusals)-1], true
			return a
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			a.Refusals, a.GaveUp = refusals[:len(refusals)-1], true
			return a
		case <-t.C:
		}
	}
}

// send makes one try of a shot.
func (d *Driver) send(ctx context.Context, s Shot) Answer {
	if s.Send != nil {
		a, err := s.Send(ctx)
		if err != nil {
			a.Err = err
		}
		return a
	}
	resp, err := d.c.Do(ctx, s.Req)
	if err != nil {
		return Answer{Err: err}
	}
	a := Answer{Status: resp.Status, Body: resp.Body, Location: resp.Header.Get("Location")}
	if v := resp.Header.Get("Retry-After"); v != "" {
		a.retryAfter = v
	}
	return a
}

// retryAfter parses a Retry-After value: delta seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if n, err := strconv.Atoi(v); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// take waits until the rate cap lets n requests go (a token bucket of at
// most Limits.N tokens, refilled at Limits.Rate per second).
func (d *Driver) take(ctx context.Context, n int) error {
	if d.lim.Rate <= 0 {
		return nil
	}
	for {
		d.mu.Lock()
		now := time.Now()
		if !d.filled.IsZero() {
			d.tokens = min(float64(d.lim.N), d.tokens+now.Sub(d.filled).Seconds()*d.lim.Rate)
		}
		d.filled = now
		if d.tokens >= float64(n) {
			d.tokens -= float64(n)
			d.mu.Unlock()
			return nil
		}
		wait := time.Duration((float64(n) - d.tokens) / d.lim.Rate * float64(time.Second))
		d.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
