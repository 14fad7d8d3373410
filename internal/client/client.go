// Package client is the checker's HTTP client for a target Harness: JSON
// requests with the protocol's headers, bounded reads, per-request timeouts,
// SSE streams read raw by internal/sse, harn-ws.v1 sessions over
// internal/ws, and a transcript of every exchange with credentials and
// configured secrets redacted. The streams and sessions are Feeds
// (feed.go): the one seam a transport-neutral spec reads Events through.
package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/internal/redact"
)

// VersionHeader is the protocol's version header.
const VersionHeader = "Harn-Agents-Protocol-Version"

// Options configure a Client.
type Options struct {
	BaseURL         string        // may carry a path prefix
	APIKey          string        // sent as "Authorization: Bearer <key>"
	ProtocolVersion string        // sent in VersionHeader
	Timeout         time.Duration // per REST exchange, and to receive stream headers
	MaxBodyBytes    int64         // cap on any response body read
	CAFile          string        // extra PEM roots for HTTPS
	Redactor        *redact.Redactor
	HTTPClient      *http.Client // nil = a client built from the options
}

// Client talks to one target. It is safe for concurrent use; WithRecorder
// returns a copy that records into a spec's own transcript, WithObserver one
// that shows every exchange to an observer (the OpenAPI traffic oracle).
type Client struct {
	opts Options
	base *url.URL
	hc   *http.Client
	rec  *Recorder
	obs  Observer
	// health is shared by every copy of the client.
	health *Health
}

// New validates the options and builds a client.
func New(opts Options) (*Client, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q is not an http(s) URL", opts.BaseURL)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	if opts.Timeout <= 0 {
		opts.Timeout = 10 * time.Second
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 8 << 20
	}
	hc := opts.HTTPClient
	if hc == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = opts.Timeout
		tr.MaxIdleConnsPerHost = 64
		if opts.CAFile != "" {
			pool, err := loadRoots(opts.CAFile)
			if err != nil {
				return nil, err
			}
			tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
		}
		// No overall client timeout: streams live longer than one exchange;
		// REST exchanges get a per-request context deadline instead.
		hc = &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	return &Client{opts: opts, base: u, hc: hc, health: &Health{}}, nil
}

func loadRoots(path string) (*x509.CertPool, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("client: CA file: %w", err)
	}
	defer f.Close()
	pem, err := io.ReadAll(io.LimitReader(f, 4<<20))
	if err != nil {
		return nil, fmt.Errorf("client: CA file %s: %w", path, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("client: CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// WithRecorder returns a copy of c whose exchanges go to r.
func (c *Client) WithRecorder(r *Recorder) *Client {
	cp := *c
	cp.rec = r
	return &cp
}

// Traffic is one exchange as an Observer sees it: what the suite sent and
// what came back, before any check looked at it.
type Traffic struct {
	// Kind is "http" (Do), "sse" (Stream), "websocket" (an upgrade:
	// OpenWS) or KindWSFrame (the data of one received WebSocket frame).
	Kind   string
	Method string
	// Path is Request.Path: below the protocol root (the base URL's prefix
	// is not in it), escaped as sent, without the query.
	Path  string
	Query url.Values
	// RequestHeader is what was sent, redacted: credential headers keep
	// only their scheme ("Bearer [REDACTED]"), so presence and scheme can be
	// judged and the key never travels further.
	RequestHeader http.Header
	RequestBody   []byte
	// Probe is Request.Probe: non-empty when the request is a deliberate
	// negative probe, with the reason.
	Probe          string
	Status         int
	ResponseHeader http.Header
	// ResponseBody is the whole body as read (bounded by
	// Options.MaxBodyBytes, not cut for the report). For a stream it is nil
	// (the events are not part of the exchange), except for an answer that
	// was not an event stream, whose bounded sample it holds. For a
	// accepted WebSocket upgrade it is nil; a refused one's holds at most
	// its first 1 KiB. Bodies are not redacted: whoever prints
	// them redacts, as the suite does for every message.
	ResponseBody []byte
	Truncated    bool // the body was longer than the cap and was cut
	// Component and Label are set for KindWSFrame: ResponseBody is frame
	// data that no operation describes (the Event of a harn-ws.v1 event
	// frame), to be judged against this component schema of the document;
	// Label names the frame ("GET /v1/tasks/t1/stream frame 3"). Method and
	// Path are then the upgrade's; there is no request to judge.
	Component, Label string
}

// KindWSFrame is the Traffic kind of one received WebSocket frame's data.
const KindWSFrame = "websocket-frame"

// BodyRead reports whether ResponseBody is the body the target sent (or its
// bounded prefix, see Truncated), as opposed to a body the client did not
// read: an event stream's, or an accepted WebSocket upgrade's. A refused
// upgrade's body is read (at most 1 KiB, Truncated when cut).
func (t Traffic) BodyRead() bool {
	return t.Kind == "http" || ((t.Kind == "sse" || t.Kind == "websocket") && t.ResponseBody != nil)
}

// Observer sees every completed exchange of a client made WithObserver. It
// runs synchronously on the goroutine that made the call (concurrently, for
// concurrent calls), so it must be quick and must not keep or modify the
// slices and maps it is given beyond the call.
type Observer func(Traffic)

// WithObserver returns a copy of c that shows every exchange to o: each
// REST exchange once its body is read, each stream and WebSocket upgrade
// once the response head arrives. Exchanges that fail below HTTP are not
// shown. A nil o observes nothing.
func (c *Client) WithObserver(o Observer) *Client {
	cp := *c
	cp.obs = o
	return &cp
}

// observe builds a Traffic only when someone is watching.
func (c *Client) observe(kind string, req Request, hr *http.Request, reqBody []byte, hresp *http.Response, respBody []byte, truncated bool) {
	if c.obs == nil || hresp == nil {
		return
	}
	var q url.Values
	if len(req.Query) > 0 {
		q = make(url.Values, len(req.Query))
		for k, vs := range req.Query {
			q[k] = append([]string(nil), vs...)
		}
	}
	c.obs(Traffic{
		Kind: kind, Method: hr.Method, Path: req.Path, Query: q,
		RequestHeader: c.Redactor().Header(hr.Header), RequestBody: reqBody, Probe: req.Probe,
		Status: hresp.StatusCode, ResponseHeader: hresp.Header.Clone(), ResponseBody: respBody, Truncated: truncated,
	})
}

// Recorder is the transcript this client records into (nil if none).
func (c *Client) Recorder() *Recorder { return c.rec }

// Options returns the client's options (with the key; never print them).
func (c *Client) Options() Options { return c.opts }

// HTTPClient is the client's HTTP client (its transport carries the CA
// roots), for requests to the target's side services such as an OAuth2
// token endpoint, which are not protocol operations and are not recorded.
func (c *Client) HTTPClient() *http.Client { return c.hc }

// Redactor is the client's redactor (never nil).
func (c *Client) Redactor() *redact.Redactor {
	if c.opts.Redactor == nil {
		return redact.New(c.opts.APIKey)
	}
	return c.opts.Redactor
}

// Request is one call. The zero values send the configured key and version.
type Request struct {
	Method string
	Path   string     // from the protocol root, e.g. "/v1/tasks/task_1"; the base URL's prefix is prepended
	Query  url.Values //
	Header http.Header
	// Body is JSON-encoded; RawBody is sent as is (for malformed-body checks).
	Body    any
	RawBody []byte
	// IdempotencyKey sets the Idempotency-Key header when non-empty.
	IdempotencyKey string
	// NoAuth omits Authorization; Authorization, when set, is sent verbatim.
	NoAuth        bool
	Authorization string
	// NoVersion omits the version header; Version overrides its value.
	NoVersion bool
	Version   string
	// Timeout overrides the client's per-exchange timeout.
	Timeout time.Duration
	// Probe, when non-empty, marks a deliberate negative probe (malformed
	// JSON, missing auth, wrong version, unknown route, oversize body…) and
	// says why, so that an Observer does not take the request for a suite
	// bug. The request is sent as built; only observers read Probe.
	Probe string
}

// Seg escapes one path segment. Ids come from the target and may hold
// anything ("../admin", "a/b"); every id spliced into a Request.Path goes
// through Seg so it stays one segment.
func Seg(id string) string { return url.PathEscape(id) }

// URL resolves the request's full URL against the base. Request.Path is an
// escaped path (see Seg).
func (c *Client) URL(req Request) string {
	u := *c.base
	raw := c.base.EscapedPath() + req.Path
	if p, err := url.PathUnescape(raw); err == nil {
		u.Path, u.RawPath = p, raw
	} else {
		u.Path, u.RawPath = raw, ""
	}
	if len(req.Query) > 0 {
		u.RawQuery = req.Query.Encode()
	}
	return u.String()
}

func (c *Client) build(ctx context.Context, req Request) (*http.Request, []byte, error) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	var body []byte
	switch {
	case req.RawBody != nil:
		body = req.RawBody
	case req.Body != nil:
		b, err := json.Marshal(req.Body)
		if err != nil {
			return nil, nil, fmt.Errorf("client: encoding request body: %w", err)
		}
		body = b
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	hr, err := http.NewRequestWithContext(ctx, method, c.URL(req), rd)
	if err != nil {
		return nil, nil, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		hr.Header.Set("Content-Type", "application/json")
	}
	hr.Header.Set("Accept", "application/json")
	hr.Header.Set("User-Agent", "conform")
	if !req.NoVersion {
		v := c.opts.ProtocolVersion
		if req.Version != "" {
			v = req.Version
		}
		hr.Header.Set(VersionHeader, v)
	}
	switch {
	case req.Authorization != "":
		hr.Header.Set("Authorization", req.Authorization)
	case !req.NoAuth && c.opts.APIKey != "":
		hr.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
	}
	if req.IdempotencyKey != "" {
		hr.Header.Set("Idempotency-Key", req.IdempotencyKey)
	}
	for k, vs := range req.Header {
		hr.Header[http.CanonicalHeaderKey(k)] = vs
	}
	return hr, body, nil
}

// Response is what came back.
type Response struct {
	Method    string
	URL       string
	Status    int
	Header    http.Header
	Body      []byte
	Truncated bool // the body was longer than the cap and was cut
	Duration  time.Duration
}

// String names the exchange for messages: "POST /v1/tasks → 202".
func (r *Response) String() string {
	return fmt.Sprintf("%s %s → %d", r.Method, pathOf(r.URL), r.Status)
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.RawQuery != "" {
		return u.Path + "?" + u.RawQuery
	}
	return u.Path
}

// JSON decodes the body into generic values, numbers kept as json.Number.
func (r *Response) JSON() (any, error) {
	if r.Truncated {
		return nil, fmt.Errorf("%s: body larger than the %d-byte cap; not decoded", r, len(r.Body))
	}
	dec := json.NewDecoder(bytes.NewReader(r.Body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("%s: body is not JSON: %v (body starts %q)", r, err, snippet(r.Body))
	}
	if dec.More() {
		return nil, fmt.Errorf("%s: body has data after the JSON value", r)
	}
	return v, nil
}

// Object decodes the body as a JSON object.
func (r *Response) Object() (map[string]any, error) {
	v, err := r.JSON()
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: body is JSON %s, want an object", r, jsonv.Kind(v))
	}
	return m, nil
}

func snippet(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "…"
	}
	return string(b)
}

// TransportError is a failure below HTTP: the target could not be reached,
// the exchange timed out, the connection broke. Checks report these as
// errors, never as the target's nonconformance.
type TransportError struct {
	Method, URL string
	Err         error
}

func (e *TransportError) Error() string {
	return fmt.Sprintf("%s %s: %v", e.Method, e.URL, e.Err)
}
func (e *TransportError) Unwrap() error { return e.Err }

// Timeout reports whether the failure was a deadline.
func (e *TransportError) Timeout() bool {
	var ne net.Error
	return errors.Is(e.Err, context.DeadlineExceeded) || (errors.As(e.Err, &ne) && ne.Timeout())
}

// Do performs one REST exchange. Its error is a *TransportError (or a
// request-building error); any HTTP status is a Response.
func (c *Client) Do(ctx context.Context, req Request) (*Response, error) {
	timeout := c.opts.Timeout
	if req.Timeout > 0 {
		timeout = req.Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hr, body, err := c.build(ctx, req)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if err := c.health.check(); err != nil {
		terr := &TransportError{Method: hr.Method, URL: c.Redactor().String(hr.URL.String()), Err: err}
		c.rec.add(c.exchange("http", hr, body, nil, nil, false, start, terr))
		return nil, terr
	}
	hresp, err := c.hc.Do(hr)
	if err != nil {
		c.health.unanswered(ctx, err)
		terr := &TransportError{Method: hr.Method, URL: c.Redactor().String(hr.URL.String()), Err: scrubErr(c.Redactor(), err)}
		c.rec.add(c.exchange("http", hr, body, nil, nil, false, start, terr))
		return nil, terr
	}
	c.health.answered()
	defer hresp.Body.Close()
	b, truncated, rerr := readBounded(hresp.Body, c.opts.MaxBodyBytes)
	resp := &Response{Method: hr.Method, URL: hr.URL.String(), Status: hresp.StatusCode, Header: hresp.Header,
		Body: b, Truncated: truncated, Duration: time.Since(start)}
	if rerr != nil {
		terr := &TransportError{Method: hr.Method, URL: c.Redactor().String(hr.URL.String()), Err: fmt.Errorf("reading body: %w", scrubErr(c.Redactor(), rerr))}
		c.rec.add(c.exchange("http", hr, body, hresp, b, truncated, start, terr))
		return nil, terr
	}
	c.rec.add(c.exchange("http", hr, body, hresp, b, truncated, start, nil))
	c.observe("http", req, hr, body, hresp, b, truncated)
	return resp, nil
}

type scrubbed struct {
	msg   string
	inner error
}

func (s scrubbed) Error() string { return s.msg }
func (s scrubbed) Unwrap() error { return s.inner }

// scrubErr keeps the error chain (for Timeout and errors.Is) while making
// its text safe to print.
func scrubErr(r *redact.Redactor, err error) error {
	if msg := r.String(err.Error()); msg != err.Error() {
		return scrubbed{msg: msg, inner: err}
	}
	return err
}

// readBounded reads at most limit bytes and drains nothing more: a target
// that streams gigabytes costs us limit bytes of memory and one closed
// connection.
func readBounded(r io.Reader, limit int64) ([]byte, bool, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	if int64(len(b)) > limit {
		return b[:limit], true, nil
	}
	return b, false, err
}

// Curl renders a shell command that reproduces the request as it would be
// sent, with the configured key read from $CONFORM_API_KEY (see curl).
func (c *Client) Curl(req Request) string {
	hr, body, err := c.build(context.Background(), req)
	if err != nil {
		return ""
	}
	return curl(c.Redactor(), c.opts.APIKey, hr.Method, hr.URL.String(), hr.Header, body)
}
