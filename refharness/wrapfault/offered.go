package wrapfault

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
)

// "Not offered" by evidence (docs/interpretations.md#offered-by-evidence):
// faults that refuse an operation the Harness offers with the 404 of a
// missing resource, about a resource the suite has just made, and the
// legal target that really leaves optional operations out, answering them
// and every unknown route alike.
func init() {
	wireFault(fault.Fault{Name: "session-close-404",
		Doc:   "POST /v1/sessions/{id}/close answers 404 resource_not_found for the session just created, and closes nothing",
		Fails: []string{"CORE-SESSION-001"}},
		answering404(http.MethodPost, regexp.MustCompile(`^/v1/sessions/([^/]+)/close$`), "session"))

	// The Harness's router answers a route it does not know 404
	// route_not_found, so the suite tells this refusal from a missing route
	// by comparing the two.
	wireFault(fault.Fault{Name: "tool-read-404",
		Doc:   "GET /v1/tools lists tools, and GET /v1/tools/{id} answers 404 resource_not_found for each of them",
		Fails: []string{"EXT-LOCAL-001"}},
		answering404(http.MethodGet, regexp.MustCompile(`^/v1/tools/([^/]+)$`), "tool"))

	wireFault(fault.Fault{Name: "file-read-404",
		Doc:   "a workspace file written with PUT /v1/workspaces/{id}/files reads back 404 resource_not_found",
		Fails: []string{"EXT-LOCAL-001"}},
		answering404(http.MethodGet, regexp.MustCompile(`^/v1/workspaces/([^/]+)/files$`), "workspace file of"))

	wireFault(fault.Fault{Name: "permission-list-404",
		Doc:   "GET /v1/tasks/{id}/permission-requests answers 404 resource_not_found for a task waiting for authorization (the other list and respond work)",
		Fails: []string{"EXT-HOST-001"}},
		answering404(http.MethodGet, regexp.MustCompile(`^/v1/tasks/([^/]+)/permission-requests$`), "task"))

	// Here the 404 cannot be told from a missing route: every route the
	// Harness does not know is answered the same way. What shows the REST
	// truncate is offered is the WebSocket truncate_session of the same
	// session, which works (it runs in the Harness, behind this middleware).
	wireFault(fault.Fault{Name: "truncate-404",
		Doc:       "POST /v1/sessions/{id}/truncate answers 404 resource_not_found, as every unknown route is, while the WebSocket truncate_session works",
		Fails:     []string{"EXT-SESSION-003"},
		Tolerated: []string{"EXT-SESSION-005"},
		Why:       "a REST truncate proved offered that answers 404 is also a REST surface that does not cover truncation (EXT-SESSION-005)"},
		func(next http.Handler, env Env) (http.Handler, error) {
			h, err := answering404(http.MethodPost, regexp.MustCompile(`^/v1/sessions/([^/]+)/truncate$`), "session")(next, env)
			if err != nil {
				return nil, err
			}
			return genericNotFound(h, env), nil
		})

	wireVariant(fault.Variant{Name: "generic-router",
		Doc: "the local-server and permission-request routes are left out, and they and every route the Harness does not serve answer 404 resource_not_found",
		// Extended: the run judges those operations and the routes
		// a Harness may leave out.
		Level: "extended", Met: true},
		func(next http.Handler, env Env) (http.Handler, error) {
			return leavingOut(genericNotFound(next, env), env, leftOut), nil
		})
}

// leftOut are the routes the generic-router variant does not serve: the
// local server's and the permission requests' (optional: the narrative's
// REST surface names neither).
var leftOut = regexp.MustCompile(`^/(health|version|openapi\.json|v1/(runtime|capabilities|tools(/[^/]+)?|workspaces/[^/]+/files|permission-requests(/.*)?|tasks/[^/]+/permission-requests))$`)

// notFoundBody is a 404 resource_not_found error answer.
func notFoundBody(w http.ResponseWriter, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "resource_not_found", "message": msg, "type": "not_found_error"}})
}

// answering404 answers method on paths matching path with 404
// resource_not_found for the kind named by the path's first group, and
// passes the rest on.
func answering404(method string, path *regexp.Regexp, kind string) Wrap {
	return func(next http.Handler, env Env) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			m := path.FindStringSubmatch(r.URL.Path)
			if r.Method != method || m == nil || refharness.IsUpgrade(r) {
				next.ServeHTTP(w, r)
				return
			}
			env.Used()
			notFoundBody(w, fmt.Sprintf("%s %q not found", kind, m[1]))
		}), nil
	}
}

// genericNotFound answers what the Harness answers 404 route_not_found or
// 501 not_implemented (a route it does not know, a protocol operation it
// does not offer) with 404 resource_not_found, as a generic router does.
// Other answers, streams among them, pass through as they are written.
func genericNotFound(next http.Handler, env Env) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if refharness.IsUpgrade(r) {
			next.ServeHTTP(w, r)
			return
		}
		iw := &interceptWriter{ResponseWriter: w}
		next.ServeHTTP(iw, r)
		if iw.held == nil {
			return
		}
		var e struct {
			Error struct{ Code string } `json:"error"`
		}
		if json.Unmarshal(iw.held.Body.Bytes(), &e) == nil && (e.Error.Code == refharness.CodeRouteNotFound || e.Error.Code == refharness.CodeNotImplemented) {
			env.Used()
			notFoundBody(w, "not found")
			return
		}
		copyRecorded(w, iw.held, iw.held.Body.Bytes())
	})
}

// interceptWriter holds an answer whose status is 404 or 501 (in held)
// and writes every other answer through, flushes included.
type interceptWriter struct {
	http.ResponseWriter
	held    *httptest.ResponseRecorder
	decided bool
}

func (w *interceptWriter) WriteHeader(code int) {
	if w.decided {
		return
	}
	w.decided = true
	if code == http.StatusNotFound || code == http.StatusNotImplemented {
		w.held = httptest.NewRecorder()
		for k, vs := range w.ResponseWriter.Header() {
			w.held.Header()[k] = vs
		}
		w.held.WriteHeader(code)
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *interceptWriter) Write(b []byte) (int, error) {
	if !w.decided {
		w.WriteHeader(http.StatusOK)
	}
	if w.held != nil {
		return w.held.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

func (w *interceptWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.held == nil {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (w *interceptWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// leavingOut answers the paths matching out 404 resource_not_found, as
// genericNotFound answers unknown routes, and passes the rest on.
func leavingOut(next http.Handler, env Env, out *regexp.Regexp) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !out.MatchString(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		env.Used()
		notFoundBody(w, "not found")
	})
}
