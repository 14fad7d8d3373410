package openapi

import (
	"net/http"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzValidateResponse feeds hostile answers to the oracle: it must never
// panic, must answer the same way twice, and must keep its findings sorted
// and bounded.
func FuzzValidateResponse(f *testing.F) {
	d, err := Default()
	if err != nil {
		f.Fatal(err)
	}
	seeds := []struct {
		method, path string
		status       int
		ct           string
		body         []byte
	}{
		{"GET", "/v1/tasks/t1", 200, "application/json", js(task())},
		{"GET", "/v1/tasks/t1", 200, "application/json", js(with(with(task(), "status", "x"), "input", "y"))},
		{"GET", "/v1/tasks", 200, "application/json", js(list(task(), outcome(), event()))},
		{"GET", "/v1/messages/m", 200, "application/json", js(with(msgObj(), "parts/0/type", "audio"))},
		{"GET", "/v1/outcomes/o", 200, "application/json", js(outcome())},
		{"GET", "/v1/agent-card", 200, "application/json", js(agentCard())},
		{"GET", "/v1/tasks/t1", 404, "application/json", js(errorEnv("x", "y"))},
		{"POST", "/v1/tasks", 400, "text/plain", []byte("nope")},
		{"GET", "/v1/receipts/r", 200, "application/json", []byte(`{"schema":"receipt-2026-04-25","chain":{"receipt_hash":5}}`)},
		{"GET", "/v1/tasks/t1/stream", 200, "text/event-stream", []byte("data: {}\n\n")},
		{"GET", "/v1/x/%zz/../", 500, "application/json; charset=\"", []byte(`{"error":{"code":"internal_error","message":"m","type":"server_error","details":[]}}`)},
		{"PUT", "/v1/tasks/t1", 302, "", nil},
		{"GET", "/v1/tasks", 200, "application/json", []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`)},
		{"GET", "/v1/tasks/t1", 200, "application/json", []byte("{\"id\":\"\xff\xfe\",\"a\":1e999999,\"b\":-0}")},
	}
	for _, s := range seeds {
		f.Add(s.method, s.path, s.status, s.ct, s.body)
	}
	f.Fuzz(func(t *testing.T, method, path string, status int, ct string, body []byte) {
		h := http.Header{"Content-Type": {ct}}
		a := d.ValidateResponse(method, path, status, h, body)
		b := d.ValidateResponse(method, path, status, h, body)
		if !slices.EqualFunc(a, b, sameViolation) {
			t.Fatalf("not deterministic:\n%v\n%v", a, b)
		}
		if len(a) > maxViolations {
			t.Fatalf("%d violations, over the cap", len(a))
		}
		for i, v := range a {
			if len(v.Value) > maxValueBytes || len(v.Message) > maxMessageBytes {
				t.Fatalf("unbounded violation: %d-byte value, %d-byte message", len(v.Value), len(v.Message))
			}
			if !utf8.ValidString(v.Value) && utf8.ValidString(string(body)) {
				t.Fatalf("value %q is not valid UTF-8", v.Value)
			}
			if i > 0 && i < len(a)-1 && a[i-1].Pointer > v.Pointer {
				t.Fatalf("not sorted: %q before %q", a[i-1].Pointer, v.Pointer)
			}
			_ = v.Error()
		}
		d.ValidateRequest(method, path, nil, h, body)
	})
}
