package check

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/redact"
)

func TestTypeFits(t *testing.T) {
	for _, ok := range []APIError{
		{Code: "unauthenticated", Type: "auth_error"},
		{Code: "invalid_state_transition", Type: "conflict_error"},
		{Code: "vendor_specific", Type: "server_error"},
	} {
		if err := TypeFits(resp(400, ""), ok); err != nil {
			t.Errorf("TypeFits(%+v) = %v", ok, err)
		}
	}
	for _, bad := range []APIError{
		{Code: "unauthenticated", Type: "request_error"},
		{Code: "unsupported_protocol_version", Type: "server_error"},
		{Code: "resource_not_found", Type: "request_error"},
	} {
		if err := TypeFits(resp(400, ""), bad); err == nil || !strings.Contains(err.Error(), "does not fit error.code") {
			t.Errorf("TypeFits(%+v) = %v, want a misfit", bad, err)
		}
	}
}

func TestParamNames(t *testing.T) {
	for _, p := range []string{"session_id", "Session_ID", "body.session_id", "/session_id", "input", "message.role", "parts[0].visibility"} {
		field := p
		switch {
		case strings.Contains(p, "role"):
			field = "role"
		case strings.Contains(p, "visibility"):
			field = "visibility"
		case strings.EqualFold(p, "session_id") || strings.Contains(p, "session_id"):
			field = "session_id"
		}
		if err := ParamNames(resp(400, ""), APIError{Param: p, HasParam: true}, field); err != nil {
			t.Errorf("ParamNames(%q, %q) = %v", p, field, err)
		}
	}
	if err := ParamNames(resp(400, ""), APIError{}, "input"); err == nil || !strings.Contains(err.Error(), "error.param is missing") {
		t.Errorf("ParamNames(no param) = %v", err)
	}
	if err := ParamNames(resp(400, ""), APIError{Param: "session_identifier", HasParam: true}, "session_id"); err == nil {
		t.Error("ParamNames(session_identifier, session_id) = nil, want a mismatch")
	}
}

func TestNoSecret(t *testing.T) {
	red := redact.New("sk-secret-key-123")
	clean := &client.Response{Method: "GET", URL: "http://h/v1/tasks", Status: 401, Header: http.Header{"X-Request-Id": {"r1"}}, Body: []byte(`{"error":{}}`)}
	if err := NoSecret(clean, red.Contains); err != nil {
		t.Errorf("NoSecret(clean) = %v", err)
	}
	leaky := &client.Response{Method: "GET", URL: "http://h/v1/tasks", Status: 401,
		Header: http.Header{"Www-Authenticate": {`Bearer error="sk-secret-key-123"`}},
		Body:   []byte(`{"error":{"message":"key \"sk-secret-key-123\" is not valid"}}`)}
	err := NoSecret(leaky, red.Contains)
	if err == nil || !strings.Contains(err.Error(), "the body and header Www-Authenticate") {
		t.Fatalf("NoSecret(leaky) = %v", err)
	}
	if strings.Contains(err.Error(), "sk-secret-key-123") {
		t.Errorf("NoSecret's message repeats the secret: %v", err)
	}
}
