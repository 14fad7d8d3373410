package check

import (
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/client"
)

func resp(status int, body string) *client.Response {
	return &client.Response{Method: "GET", URL: "http://h/v1/tasks/x", Status: status, Header: http.Header{}, Body: []byte(body)}
}

func TestStatus(t *testing.T) {
	if err := Status(resp(201, ""), 201); err != nil {
		t.Errorf("Status(201, want 201) = %v", err)
	}
	err := Status(resp(200, `{"a":1}`), 201, 202)
	if err == nil || !strings.Contains(err.Error(), "status = 200, want 201 or 202") || !strings.Contains(err.Error(), `{\"a\":1}`) {
		t.Errorf("Status(200, want 201|202) = %v", err)
	}
}

func TestError(t *testing.T) {
	ok := `{"error":{"code":"unsupported_protocol_version","message":"m","type":"request_error","details":{"supported_versions":["v"]}}}`
	e, err := Error(resp(426, ok), 426, "unsupported_protocol_version")
	if err != nil || e.Details == nil {
		t.Fatalf("Error(valid) = %+v, %v", e, err)
	}
	if err := Consistent(resp(426, ok), e); err != nil {
		t.Errorf("Consistent(valid) = %v", err)
	}
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{200, ok, "status = 200, want 426"},
		{426, `<html>`, "not JSON"},
		{426, `{"code":"x"}`, `no "error" object`},
		{426, `{"error":{"code":"unsupported_protocol_version","type":"request_error"}}`, "error.message is missing"},
		{426, `{"error":{"code":"x","message":"m","type":"request_error"}}`, `error.code = "x", want "unsupported_protocol_version"`},
		{426, `{"error":{"code":"unsupported_protocol_version","message":"m","type":"t","param":3}}`, "error.param is"},
	} {
		if _, err := Error(resp(tc.status, tc.body), 426, "unsupported_protocol_version"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Error(%d %s) = %v, want %q", tc.status, tc.body, err, tc.want)
		}
	}
	for _, tc := range []struct {
		status int
		e      APIError
		want   string
	}{
		{404, APIError{Code: "unauthenticated", Type: "auth_error"}, "belongs with HTTP 401"},
		{400, APIError{Code: "invalid_request", Type: "bad_error"}, "error.type"},
	} {
		if err := Consistent(resp(tc.status, ""), tc.e); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Consistent(%d, %+v) = %v, want %q", tc.status, tc.e, err, tc.want)
		}
	}
	if err := Consistent(resp(418, ""), APIError{Code: "vendor_teapot", Type: "server_error"}); err != nil {
		t.Errorf("Consistent(unknown code, known type) = %v, want nil", err)
	}
}
