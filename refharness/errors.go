package refharness

import (
	"fmt"
	"net/http"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: the error envelope.
var (
	FaultErrorWithoutEnvelope = declare(fault.Fault{Name: "error-without-envelope",
		Doc:       "errors are plain text, not the error envelope",
		Fails:     []string{"CORE-ERR-002"},
		Tolerated: []string{"CORE-IDEM-009"},
		Why:       "the 409 of a key reused with another body, fired at once, is plain text too: no idempotency_key_reused code to read (CORE-IDEM-009)"})
	FaultWrongErrorType = declare(fault.Fault{Name: "wrong-error-type",
		Doc:   "error.type does not match error.code",
		Fails: []string{"CORE-ERR-003"}})
	FaultNotFoundAs400 = declare(fault.Fault{Name: "not-found-as-400",
		Doc:   "missing resources answer 400 invalid_request instead of 404",
		Fails: []string{"CORE-ERR-001"}})
	FaultNoParamOnBadRequest = declare(fault.Fault{Name: "no-param-on-bad-request",
		Doc:   "400 errors omit error.param",
		Warns: []string{"CORE-ERR-005"}})
)

// apiError is a protocol error on its way to the error envelope.
type apiError struct {
	Status  int
	Code    string
	Message string
	Param   string
	Details map[string]any
	route   bool // an unknown route, not a missing resource
}

func (e *apiError) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// errorTypes maps each error code to its type, from the spec's tables.
var errorTypes = map[string]string{
	"invalid_request":              "request_error",
	"method_not_allowed":           "request_error",   // not in the taxonomy: 405 has no code there
	"route_not_found":              "not_found_error", // not in the taxonomy: a path the protocol does not define (local.go)
	"not_implemented":              "server_error",    // not in the taxonomy: a protocol operation the Harness does not offer (501)
	"unsupported_media_type":       "request_error",   // not in the taxonomy: a body that is not JSON by its Content-Type (415; hostile.go)
	"invalid_state_transition":     "request_error",
	"unauthenticated":              "auth_error",
	"permission_denied":            "permission_error",
	"resource_not_found":           "not_found_error",
	"conflict":                     "conflict_error",
	"idempotency_key_reused":       "conflict_error",
	"cursor_expired":               "request_error",
	"payload_too_large":            "request_error",
	"policy_violation":             "permission_error",
	"resource_locked":              "conflict_error",
	"unsupported_protocol_version": "request_error",
	"rate_limited":                 "rate_limit_error",
	"client_closed_request":        "request_error",
	"internal_error":               "server_error",
	"upstream_unavailable":         "upstream_error",
	"service_unavailable":          "server_error",
	"deadline_exceeded":            "server_error",
}

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: "invalid_request", Param: param, Message: fmt.Sprintf(format, args...)}
}

func notFound(kind, id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: "resource_not_found", Message: fmt.Sprintf("%s %q not found", kind, id)}
}

func conflict(format string, args ...any) *apiError {
	return &apiError{Status: http.StatusConflict, Code: "conflict", Message: fmt.Sprintf(format, args...)}
}

func internal(err error) *apiError {
	return &apiError{Status: http.StatusInternalServerError, Code: "internal_error", Message: "internal error: " + err.Error()}
}

// envelope renders the error body, applying the error-shape faults.
func (s *Server) errorBody(e *apiError, requestID string) map[string]any {
	body := map[string]any{
		"code":       e.Code,
		"message":    e.Message,
		"type":       errorTypes[e.Code],
		"request_id": requestID,
	}
	if body["type"] == "" {
		body["type"] = "server_error"
	}
	if s.opts.Faults.Has(FaultWrongErrorType) {
		if body["type"] == "request_error" {
			body["type"] = "server_error"
		} else {
			body["type"] = "request_error"
		}
	}
	if e.Param != "" && !(s.opts.Faults.Has(FaultNoParamOnBadRequest) && e.Status == http.StatusBadRequest) {
		body["param"] = e.Param
	}
	if e.Details != nil {
		body["details"] = e.Details
	}
	return map[string]any{"error": body}
}

func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if s.opts.Faults.Has(FaultNotFoundAs400) && e.Code == "resource_not_found" && !e.route {
		e = &apiError{Status: http.StatusBadRequest, Code: "invalid_request", Message: e.Message, Param: "id"}
	}
	if s.opts.Faults.Has(FaultErrorWithoutEnvelope) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(e.Status)
		fmt.Fprintln(w, e.Message)
		return
	}
	s.writeJSON(w, e.Status, s.errorBody(e, s.ids.NewID("req")))
}
