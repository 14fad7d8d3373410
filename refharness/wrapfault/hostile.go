package wrapfault

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness/fault"
)

// Hostile input: wire faults of the hostile-input pass (suites/*/hostile.go).
func init() {
	wireFault(fault.Fault{Name: "error-echoes-body",
		Doc:   "a 400 answer to a Core write repeats the refused request body, credentials and all, in error.details.request_body",
		Fails: []string{"CORE-NEG-004"}},
		plain(echoBody(requirements.Core)))
	wireFault(fault.Fault{Name: "ext-error-echoes-body",
		Doc:   "a 400 answer to an Extended write repeats the refused request body, credentials and all, in error.details.request_body",
		Fails: []string{"EXT-NEG-004"}},
		plain(echoBody(requirements.Extended)))
	// The pass leaves out a local-server route only where the evidence
	// says it is not offered (suites/extended/hostile.go): a list that
	// fails with 500 is served, and probed.
	wireFault(fault.Fault{Name: "permission-list-500",
		Doc:   "GET /v1/permission-requests answers every request 500 internal_error, malformed ones too",
		Fails: []string{"EXT-HOST-001", "EXT-NEG-001"}},
		plain(permissionList500))
}

// permissionList500 answers GET /v1/permission-requests 500 internal_error.
func permissionList500(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/v1/permission-requests" {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"code": "internal_error", "message": "the approval queue is unavailable", "type": "server_error"}})
	})
}

// maxEcho bounds the body the echo keeps: the fault repeats a body, it
// does not buffer an unbounded one.
const maxEcho = 8 << 20

// echoBody puts the request body into the error.details of every 400
// answer to an operation of level.
func echoBody(level requirements.Level) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			doc, err := openapi.Default()
			op, ok := openapi.Operation{}, false
			if err == nil {
				op, ok = doc.Match(r.Method, r.URL.Path)
			}
			if !ok || !op.HasBody || negative.LevelOf(op) != level {
				next.ServeHTTP(w, r)
				return
			}
			body, _ := io.ReadAll(io.LimitReader(r.Body, maxEcho))
			r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			out := rec.Body.Bytes()
			if rec.Code == http.StatusBadRequest {
				out = withBody(out, body)
			}
			copyRecorded(w, rec, out)
		})
	}
}

// withBody is an error answer with the request body in it: in
// error.details.request_body of an error envelope, after the text of any
// other answer.
func withBody(answer, body []byte) []byte {
	var v map[string]any
	if json.Unmarshal(answer, &v) == nil {
		if e, ok := v["error"].(map[string]any); ok {
			d, _ := e["details"].(map[string]any)
			if d == nil {
				d = map[string]any{}
			}
			d["request_body"] = string(body)
			e["details"] = d
			if b, err := json.Marshal(v); err == nil {
				return b
			}
		}
	}
	return append(append(bytes.TrimRight(answer, "\n"), "\nrequest body: "...), body...)
}
