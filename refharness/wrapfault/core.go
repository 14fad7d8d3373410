package wrapfault

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
)

// Core REST and stream behaviour: wire faults and variants of the Core
// level.
func init() {
	wireFault(fault.Fault{Name: "lists-without-page",
		Doc:       "list answers carry no page object",
		Fails:     []string{"CORE-PAGE-001"},
		Tolerated: []string{"CORE-EVT-004", "CORE-RESUME-001"},
		Why:       "the event-range walk reads lists too (CORE-EVT-004), as do the pagers of a session growing under appends (CORE-RESUME-001)"},
		rewriting(func(_ *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && m["object"] == "list" {
				delete(m, "page")
			}
		}))

	wireFault(fault.Fault{Name: "messages-reversed",
		Doc:       "a session's message list is served in reverse order",
		Fails:     []string{"CORE-READ-012"},
		Tolerated: []string{"CORE-ORDER-001"},
		Why:       "the reversed list disagrees with the event list on the order of messages appended at once (CORE-ORDER-001)"},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/messages") {
				if data, ok := m["data"].([]any); ok {
					slices.Reverse(data)
				}
			}
		}))

	wireFault(fault.Fault{Name: "content-not-matching-sha256",
		Doc:      "artifact content no longer matches the artifact's sha256 (a byte is appended)",
		Fails:    []string{"CORE-READ-013"},
		Hookless: true},
		plain(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/content") {
					next.ServeHTTP(w, r)
					return
				}
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				body := rec.Body.Bytes()
				if rec.Code == http.StatusOK {
					body = append(body, '!') // the bytes, not an error answer
				}
				copyRecorded(w, rec, body)
			})
		}))

	wireFault(fault.Fault{Name: "events-without-payload",
		Doc:   "events are served without their payload",
		Fails: []string{"CORE-EVT-001"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "event", func(e map[string]any) { delete(e, "payload") })
		}))

	wireFault(fault.Fault{Name: "event-ranges-ignore-limit",
		Doc:   "event lists ignore ?limit= (the default page size is used)",
		Fails: []string{"CORE-EVT-004"}},
		plain(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasSuffix(r.URL.Path, "/events") {
					q := r.URL.Query()
					q.Del("limit")
					r.URL.RawQuery = q.Encode()
				}
				next.ServeHTTP(w, r)
			})
		}))

	wireFault(fault.Fault{Name: "unknown-session-state",
		Doc:   "sessions that are not CLOSED report the state HIBERNATING, which the protocol does not define",
		Warns: []string{"CORE-READ-009"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "session", func(m map[string]any) {
				if m["state"] != "CLOSED" { // a closed session stays closed (CORE-SESSION-001)
					m["state"] = "HIBERNATING"
				}
			})
		}))

	wireFault(fault.Fault{Name: "bare-a2a-card",
		Doc:   "the agent card's a2a_card lacks defaultInputModes",
		Warns: []string{"CORE-CARD-002"}},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/agent-card" {
				if a, ok := m["a2a_card"].(map[string]any); ok {
					delete(a, "defaultInputModes")
				}
			}
		}))

	// docs/interpretations.md#a2a-card: the A2A card declares how to authenticate.
	wireFault(fault.Fault{Name: "a2a-card-without-security",
		Doc:   "the agent card's a2a_card declares no security schemes",
		Warns: []string{"CORE-CARD-002"}},
		rewriting(func(r *http.Request, v any) {
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/agent-card" {
				if a, ok := m["a2a_card"].(map[string]any); ok {
					delete(a, "securitySchemes")
					delete(a, "security")
				}
			}
		}))

	// The reference Harness offers replay since issue 12: discovery's flag is
	// turned off, the card's claim kept or added.
	wireFault(fault.Fault{Name: "card-claims-replay",
		Doc:   "the agent card claims replay, which discovery flags false",
		Warns: []string{"CORE-CARD-003"}},
		rewriting(func(r *http.Request, v any) {
			m, ok := v.(map[string]any)
			if !ok {
				return
			}
			switch r.URL.Path {
			case "/v1":
				if caps, ok := m["capabilities"].(map[string]any); ok {
					caps["replay"] = false
				}
			case "/v1/agent-card":
				caps, _ := m["capabilities"].([]any)
				if !slices.Contains(caps, any("replay")) {
					m["capabilities"] = append(caps, "replay")
				}
			}
		}))

	wireFault(fault.Fault{Name: "failure-hidden",
		Doc:   "failed tasks and their task.failed events say nothing of the failure",
		Warns: []string{"CORE-LIFE-003"}},
		rewriting(func(_ *http.Request, v any) {
			eachObject(v, "task", func(m map[string]any) { delete(m, "failure") })
			eachObject(v, "event", func(e map[string]any) {
				if p, ok := e["payload"].(map[string]any); ok && e["event"] == "task.failed" {
					for _, k := range []string{"failure", "error", "reason", "message"} {
						delete(p, k)
					}
				}
			})
		}))

	wireFault(fault.Fault{Name: "outcome-unreachable",
		Doc:   "tasks name no outcome_id and the outcome list by task is empty",
		Warns: []string{"CORE-OUT-002"}},
		rewriting(func(r *http.Request, v any) {
			eachObject(v, "task", func(m map[string]any) { delete(m, "outcome_id") })
			if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/outcomes" && r.URL.Query().Get("task_id") != "" {
				m["data"] = []any{}
			}
		}))

	wireVariant(fault.Variant{Name: "clamped-limit",
		Doc:   "out-of-range limits are clamped instead of refused",
		Level: "core"},
		plain(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				q := r.URL.Query()
				if v := q.Get("limit"); v != "" {
					switch n, err := strconv.Atoi(v); {
					case err == nil && n < 1:
						q.Set("limit", "1")
					case err == nil && n > 200:
						q.Set("limit", "200")
					}
					r.URL.RawQuery = q.Encode()
				}
				next.ServeHTTP(w, r)
			})
		}))

	wireVariant(fault.Variant{Name: "replay-answers-200",
		Doc:   "an idempotent replay is answered 200 rather than the first 201/202",
		Level: "core"},
		plain(func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					next.ServeHTTP(w, r)
					return
				}
				rec := httptest.NewRecorder()
				next.ServeHTTP(rec, r)
				for k, vs := range rec.Header() {
					w.Header()[k] = vs
				}
				code := rec.Code
				if rec.Header().Get("Idempotent-Replayed") == "true" && (code == http.StatusCreated || code == http.StatusAccepted) {
					code = http.StatusOK
				}
				w.WriteHeader(code)
				w.Write(rec.Body.Bytes())
			})
		}))

	wireVariant(fault.Variant{Name: "param-json-pointer",
		Doc:   "error.param is a JSON Pointer",
		Level: "core"},
		rewriting(func(_ *http.Request, v any) {
			if m, ok := v.(map[string]any); ok {
				if e, ok := m["error"].(map[string]any); ok {
					if p, ok := e["param"].(string); ok && p != "" {
						e["param"] = "/" + strings.NewReplacer(".", "/", "[", "/", "]", "").Replace(p)
					}
				}
			}
		}))

	wireVariant(fault.Variant{Name: "utc-spellings",
		Doc:   "UTC is spelled +00:00 and with lower-case t and z",
		Level: "core"},
		rewriting(func(_ *http.Request, v any) { respellUTC(v) }))

	// The lifecycle and stream specs create their workspace without the
	// fallback to a listed one that the REST specs' newSession has.
	wireVariant(fault.Variant{Name: "no-workspace-create",
		Doc:   "clients may not create workspaces (403 permission_denied); the operator provisioned one",
		Level: "core"},
		func(next http.Handler, env Env) (http.Handler, error) {
			if rec := setupRequest(next, env, http.MethodPost, "/v1/workspaces", `{"name":"preset","root":"conform://preset"}`); rec.Code != http.StatusCreated {
				return nil, &setupError{what: "preset workspace", code: rec.Code, body: rec.Body.String()}
			}
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/workspaces" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusForbidden)
					io.WriteString(w, `{"error":{"code":"permission_denied","type":"permission_error","message":"workspaces are provisioned by the operator"}}`)
					return
				}
				next.ServeHTTP(w, r)
			}), nil
		})

	wireFault(fault.Fault{Name: "cancel-refused-while-running",
		Doc:          "a cancel of a task that has not ended is refused with 409 conflict, as if it were terminal",
		Fails:        []string{"CORE-CANCEL-001"},
		SlowHookless: true},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				id, ok := strings.CutPrefix(r.URL.Path, "/v1/tasks/")
				if id, ok = strings.CutSuffix(id, "/cancel"); !ok || r.Method != http.MethodPost || strings.Contains(id, "/") {
					next.ServeHTTP(w, r)
					return
				}
				rec := setupRequest(next, env, http.MethodGet, "/v1/tasks/"+id, "")
				var task struct{ Status string }
				if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &task) != nil || refharness.Terminal(task.Status) {
					next.ServeHTTP(w, r)
					return
				}
				env.Used()
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusConflict)
				io.WriteString(w, `{"error":{"code":"conflict","type":"conflict_error","message":"the task cannot be canceled now"}}`)
			}), nil
		})

	// A Core server that offers no artifact registration (an Extended
	// write): POST /v1/artifacts is an unknown route. Artifact reads are
	// untouched; Core reads the artifacts the run makes by other means.
	wireVariant(fault.Variant{Name: "no-artifact-registration",
		Doc:   "POST /v1/artifacts is an unknown route (404): a Core server without artifact registration, which is Extended",
		Level: "core"},
		func(next http.Handler, env Env) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/artifacts" {
					env.Used()
					noArtifactRoute(w)
					return
				}
				next.ServeHTTP(w, r)
			}), nil
		})

	// A Core server that shows no Artifact at all: none registered (POST
	// /v1/artifacts is an unknown route), none listed, none in an
	// Outcome. Legal (Core requires reading the artifacts a server has,
	// not having any); TestCoreWithoutArtifacts proves the run then leaves
	// only the artifact checks unverified.
	wireVariant(fault.Variant{Name: "no-artifacts-shown",
		Doc: "no artifact is registered, listed or named by an Outcome: a Core server that shows none"},
		func(next http.Handler, env Env) (http.Handler, error) {
			hide := rewritingFunc(func(r *http.Request, v any) {
				if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1/artifacts" {
					if data, _ := m["data"].([]any); len(data) > 0 {
						env.Used()
					}
					m["data"] = []any{}
					if pg, ok := m["page"].(map[string]any); ok {
						pg["has_more"], pg["next_cursor"] = false, nil
					}
				}
				eachObject(v, "outcome", func(o map[string]any) {
					if arts, _ := o["artifacts"].([]any); len(arts) > 0 {
						env.Used()
						o["artifacts"] = []any{}
					}
				})
			})(next)
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost && r.URL.Path == "/v1/artifacts" {
					env.Used()
					noArtifactRoute(w)
					return
				}
				hide.ServeHTTP(w, r)
			}), nil
		})

	// Readings of the spec the reference Harness does not take but a
	// reasonable implementer could; each calls env.Used when it changes an
	// answer.
	wireVariant(fault.Variant{Name: "hold-streams-open",
		Doc:   "task streams stay open after the task ended",
		Level: "core",
		Met:   true},
		holdStreamsOpen)

	wireVariant(fault.Variant{Name: "refuse-unknown-cursor",
		Doc:   "an unknown Last-Event-ID is refused with 410 cursor_expired",
		Level: "core",
		Met:   true},
		refuseUnknownCursor)

	wireVariant(fault.Variant{Name: "status-changed-only",
		Doc:   "every transition after submission is task.status_changed",
		Level: "core",
		Met:   true},
		statusChangedOnly)

}

type setupError struct {
	what string
	code int
	body string
}

func (e *setupError) Error() string {
	return "wrapfault: " + e.what + ": " + strconv.Itoa(e.code) + " " + e.body
}

// respellUTC rewrites every "…Z" timestamp to "…+00:00", alternating the
// case of the T and Z letters RFC 3339 lets a server choose.
func respellUTC(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, c := range x {
			if s, ok := c.(string); ok && strings.HasSuffix(k, "_at") && strings.HasSuffix(s, "Z") {
				if len(k)%2 == 0 {
					x[k] = strings.TrimSuffix(s, "Z") + "+00:00"
				} else {
					x[k] = strings.ToLower(s)
				}
				continue
			}
			respellUTC(c)
		}
	case []any:
		for _, c := range x {
			respellUTC(c)
		}
	}
}

// holdStreamsOpen keeps a task stream open with keep-alive comments after
// the reference Harness ends it (it ends task streams once the task is
// over; the spec does not say either way). Error streams still close.
func holdStreamsOpen(next http.Handler, env Env) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasPrefix(r.URL.Path, "/v1/tasks/") || !strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		sw := &sniffWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		if sw.status != http.StatusOK || bytes.Contains(sw.seen, []byte("event: error")) {
			return
		}
		env.Used()
		// The server's behaviour, not a wait of the test: a comment every
		// 20 ms until the client goes away.
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tick.C:
				if _, err := io.WriteString(w, ": still here\n\n"); err != nil {
					return
				}
				w.(http.Flusher).Flush()
			}
		}
	}), nil
}

// sniffWriter remembers the status and the first bytes written.
type sniffWriter struct {
	http.ResponseWriter
	status int
	seen   []byte
}

func (s *sniffWriter) WriteHeader(code int) { s.status = code; s.ResponseWriter.WriteHeader(code) }
func (s *sniffWriter) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	if len(s.seen) < 4096 {
		s.seen = append(s.seen, b...)
	}
	return s.ResponseWriter.Write(b)
}
func (s *sniffWriter) Flush() { s.ResponseWriter.(http.Flusher).Flush() }

// refuseUnknownCursor answers a stream request whose Last-Event-ID is not
// an event the Harness holds with 410 cursor_expired instead of an error
// event: a clear error that does not pretend the stream is continuous.
func refuseUnknownCursor(next http.Handler, env Env) (http.Handler, error) {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		last := r.Header.Get("Last-Event-ID")
		if last == "" || !strings.HasSuffix(r.URL.Path, "/stream") {
			next.ServeHTTP(w, r)
			return
		}
		probe := httptest.NewRequest(http.MethodGet, "/v1/events/"+url.PathEscape(last), nil)
		probe.Header = r.Header.Clone()
		probe.Header.Del("Last-Event-ID")
		probe.Header.Set("Accept", "application/json")
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, probe)
		if rec.Code != http.StatusNotFound {
			next.ServeHTTP(w, r)
			return
		}
		env.Used()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusGone)
		io.WriteString(w, `{"error":{"code":"cursor_expired","message":"that cursor is not held","type":"request_error","param":"Last-Event-ID"}}`)
	}), nil
}

// statusChangedOnly announces every task transition after submission as
// task.status_changed with only payload.status (no previous_status), in
// event lists and on streams: the taxonomy's generic state event.
func statusChangedOnly(next http.Handler, env Env) (http.Handler, error) {
	specific := map[string]bool{"task.started": true, "task.input_required": true, "task.auth_required": true,
		"task.completed": true, "task.failed": true, "task.canceled": true}
	event := func(e map[string]any) {
		if k, _ := e["event"].(string); specific[k] {
			e["event"] = "task.status_changed"
			if p, ok := e["payload"].(map[string]any); ok {
				delete(p, "previous_status")
			}
			env.Used()
		}
	}
	lists := rewritingFunc(func(_ *http.Request, v any) { eachObject(v, "event", event) })(next)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/stream") {
			lists.ServeHTTP(w, r)
			return
		}
		next.ServeHTTP(&frameRewriter{ResponseWriter: w, specific: specific, event: event}, r)
	}), nil
}

// frameRewriter rewrites SSE lines as the reference Harness writes them
// (whole frames per Write): event: lines of specific task state kinds, and
// data: lines holding an Event.
type frameRewriter struct {
	http.ResponseWriter
	specific map[string]bool
	event    func(map[string]any)
}

func (fr *frameRewriter) Write(b []byte) (int, error) {
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if k, ok := strings.CutPrefix(l, "event: "); ok && fr.specific[k] {
			lines[i] = "event: task.status_changed"
		}
		if d, ok := strings.CutPrefix(l, "data: "); ok {
			dec := json.NewDecoder(strings.NewReader(d))
			dec.UseNumber()
			var m map[string]any
			if dec.Decode(&m) == nil && m["object"] == "event" {
				fr.event(m)
				if nb, err := json.Marshal(m); err == nil {
					lines[i] = "data: " + string(nb)
				}
			}
		}
	}
	if _, err := fr.ResponseWriter.Write([]byte(strings.Join(lines, "\n"))); err != nil {
		return 0, err
	}
	return len(b), nil
}

func (fr *frameRewriter) Flush() { fr.ResponseWriter.(http.Flusher).Flush() }

// noArtifactRoute answers a POST /v1/artifacts as a server without the
// route would: 404 with the error envelope.
func noArtifactRoute(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"error":{"code":"resource_not_found","type":"not_found_error","message":"no route POST /v1/artifacts"}}`)
}
