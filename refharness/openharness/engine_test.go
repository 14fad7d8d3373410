package openharness

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	oh "github.com/harn-conform/conform/internal/openharness"
)

const key = "oh-test-key"

// do sends one request to an Engine and decodes the answer.
func do(t *testing.T, e *Engine, method, ct, auth, body string) (*httptest.ResponseRecorder, map[string]any) {
	t.Helper()
	r := httptest.NewRequest(method, "/openharness", strings.NewReader(body))
	if ct != "" {
		r.Header.Set("Content-Type", ct)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	e.ServeHTTP(w, r)
	doc, err := oh.Decode(w.Body.Bytes())
	if err != nil {
		t.Fatalf("%s %q: the answer is no envelope: %v\n%s", method, body, err, w.Body)
	}
	return w, doc
}

func TestEngineAnswers(t *testing.T) {
	clock := time.Unix(0, 0)
	e := New(Options{APIKey: key, Now: func() time.Time { return clock }})
	bearer := "Bearer " + key
	const plain = `{"protocol_version":"1.0.0","request_id":"r1","correlation_id":"c1","capabilities":{"openharness.streaming":true,"openharness.ui.approval":true,"x.unknown":1},"request":{"context":{"user_intent":"secret plans for alice@example.com","attachments":[{"ref_id":"a"}]}}}`
	for _, tc := range []struct {
		name, method, ct, auth, body string
		status                       int
		code                         string // "" = success
	}{
		{"success", http.MethodPost, "application/json", bearer, plain, 200, ""},
		{"no content type", http.MethodPost, "", bearer, plain, 200, ""},
		{"get", http.MethodGet, "", bearer, "", 405, "method_not_allowed"},
		{"no auth", http.MethodPost, "application/json", "", plain, 401, "unauthorized"},
		{"wrong auth", http.MethodPost, "application/json", "Bearer nope", plain, 401, "unauthorized"},
		{"form", http.MethodPost, "application/x-www-form-urlencoded", bearer, "a=b", 415, "unsupported_media_type"},
		{"truncated", http.MethodPost, "application/json", bearer, `{"protocol_version":`, 400, "invalid_request"},
		{"array", http.MethodPost, "application/json", bearer, `[]`, 400, "invalid_request"},
		{"no version", http.MethodPost, "application/json", bearer, `{"request":{}}`, 400, "invalid_request"},
		{"not semver", http.MethodPost, "application/json", bearer, `{"protocol_version":"one","request":{}}`, 400, "invalid_request"},
		{"major 2", http.MethodPost, "application/json", bearer, `{"protocol_version":"2.0.0","request_id":"r9","request":{}}`, 400, "protocol_version_unsupported"},
		{"no request", http.MethodPost, "application/json", bearer, `{"protocol_version":"1.0.0"}`, 400, "invalid_request"},
		{"too large", http.MethodPost, "application/json", bearer, `{"x":"` + strings.Repeat("a", oh.MaxMessageBytes) + `"}`, 413, "payload_too_large"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, doc := do(t, e, tc.method, tc.ct, tc.auth, tc.body)
			if w.Code != tc.status {
				t.Errorf("HTTP %d, want %d", w.Code, tc.status)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			r := oh.Validate(doc, oh.Response)
			if !r.Valid || len(r.Findings) > 0 {
				t.Errorf("the answer has findings: %+v", r.Findings)
			}
			if tc.code == "" {
				if oh.Status(doc) != "success" {
					t.Fatalf("status %q, want success: %s", oh.Status(doc), w.Body)
				}
				return
			}
			if oh.Status(doc) != "error" || oh.ErrorCode(doc) != tc.code {
				t.Errorf("status %q code %q, want error %s", oh.Status(doc), oh.ErrorCode(doc), tc.code)
			}
			if strings.Contains(w.Body.String(), "alice@example.com") {
				t.Errorf("the error repeats the request's intent: %s", w.Body)
			}
		})
	}
	_, doc := do(t, e, http.MethodPost, "application/json", bearer, plain)
	if doc["request_id"] != "r1" || doc["correlation_id"] != "c1" {
		t.Errorf("ids not echoed: %v %v", doc["request_id"], doc["correlation_id"])
	}
	denials := oh.Denials(doc)
	if len(denials) != 1 || denials[0]["capability"] != "openharness.streaming" || denials[0]["code"] != "not_supported" {
		t.Errorf("capability_denials = %v, want the streaming one alone (x.unknown is ignored)", denials)
	}
	if n := len(oh.Directives(doc)); n != 3 {
		t.Errorf("%d directives, want a message, an attachments note and an approval request", n)
	}
	if strings.Contains(mustJSON(doc), "alice@example.com") {
		t.Error("the answer repeats the intent")
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestParseFault(t *testing.T) {
	for _, f := range AllFaults() {
		if got, err := ParseFault(string(f)); err != nil || got != f {
			t.Errorf("ParseFault(%s) = %v, %v", f, got, err)
		}
	}
	if _, err := ParseFault("no-such"); err == nil {
		t.Error("ParseFault of an unknown name succeeded")
	}
}

// FuzzEngine: whatever the body, the Engine answers with a response
// envelope (never a panic, never a non-JSON body), and an error never
// repeats a planted token.
func FuzzEngine(f *testing.F) {
	f.Add([]byte(`{"protocol_version":"1.0.0","request":{"auth":{"token":"TOKEN-CANARY"}}}`))
	f.Add([]byte(`{"protocol_version":"9.9.9","request":{"auth":{"token":"TOKEN-CANARY"}}}`))
	f.Add([]byte(`{"protocol_version":"1.0.0","capabilities":{"a":{}},"request":{"context":{"attachments":[1,{}]}}}`))
	f.Add([]byte(`{`))
	e := New(Options{})
	f.Fuzz(func(t *testing.T, body []byte) {
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		doc, err := oh.Decode(w.Body.Bytes())
		if err != nil {
			t.Fatalf("no envelope for %q: %v", body, err)
		}
		if oh.Status(doc) == "error" && bytes.Contains(body, []byte("TOKEN-CANARY")) && strings.Contains(w.Body.String(), "TOKEN-CANARY") {
			t.Fatalf("an error repeats the token: %s", w.Body)
		}
	})
}
