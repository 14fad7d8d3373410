package refharness

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"
)

var fuzzMethods = []string{"GET", "POST", "PATCH", "DELETE", "PUT", "HEAD", "OPTIONS"}

// FuzzHandler sends arbitrary methods, paths, bodies and idempotency keys:
// the handler must never panic, and every error must be an error envelope
// with a code whose type matches the spec's table.
func FuzzHandler(f *testing.F) {
	f.Add(uint8(1), "/v1/workspaces", `{"name":"a","root":"/"}`, "")
	f.Add(uint8(1), "/v1/sessions", `{"workspace_id":"workspace_000001","initial_messages":[{"role":"user","parts":[{"type":"text","text":"x","visibility":"public"}]}]}`, "k")
	f.Add(uint8(1), "/v1/sessions/session_000001/tasks", `{"input":{},"metadata":{"conform.scenario":{"steps":[{"op":"emit","count":2}]}}}`, "k2")
	f.Add(uint8(1), "/v1/tasks", `{"session_id":"session_000001","input":{"role":"user","parts":[]}}`, "")
	f.Add(uint8(1), "/v1/tasks/task_000001/cancel", `{"reason":7}`, "")
	f.Add(uint8(1), "/v1/tasks/task_000001/messages", `{"kind":"input","message":{"role":"user","parts":[{"type":"tool_call"}]}}`, "")
	f.Add(uint8(1), "/v1/sessions/session_000001/truncate", `{"keep_first":1e99}`, "")
	f.Add(uint8(1), "/v1/sessions/session_000001/fork", `{"at_event_id":"event_000000000001"}`, "")
	f.Add(uint8(2), "/v1/sessions/session_000001", `{"summary":null,"metadata":{"a":[1,2]}}`, "")
	f.Add(uint8(1), "/v1/artifacts", `{"kind":"log","mime_type":"x","visibility":"public","content_base64":"!!"}`, "")
	f.Add(uint8(0), "/v1/events", ``, "")
	f.Add(uint8(0), "/v1/tasks/task_000001/events", ``, "")
	f.Add(uint8(0), "/v1/events/stream", ``, "")
	f.Add(uint8(3), "/v1/tasks", ``, "")
	f.Add(uint8(0), "/v1/../v1/tasks", ``, "")
	f.Add(uint8(1), "/v1/workspaces", "\xff\xfe", strings.Repeat("k", 300))

	f.Fuzz(func(t *testing.T, m uint8, path, body, idem string) {
		// A fresh server per input: scenario workers started by earlier inputs
		// must not pile up and slow later ones down.
		h := fuzzServer(t)
		defer h.Close()
		method := fuzzMethods[int(m)%len(fuzzMethods)]
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond) // streams end here
		defer cancel()
		req := (&http.Request{
			Method: method, URL: &url.URL{Path: path, RawQuery: "limit=2"}, Header: http.Header{},
			Body: io.NopCloser(bytes.NewReader([]byte(body))), ContentLength: int64(len(body)), Host: "example.test",
		}).WithContext(ctx)
		req.Header.Set(VersionHeader, ProtocolVersion)
		req.Header.Set("Authorization", "Bearer "+testKey)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 200 && rec.Code < 300 {
			return
		}
		var env struct {
			Error *struct{ Code, Message, Type string } `json:"error"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil || env.Error == nil {
			t.Fatalf("%s %q: status %d without error envelope: %q", method, path, rec.Code, rec.Body.Bytes())
		}
		if env.Error.Code == "" || env.Error.Message == "" || env.Error.Type != errorTypes[env.Error.Code] {
			t.Fatalf("%s %q: bad envelope %+v", method, path, env.Error)
		}
		if rec.Code == 500 {
			t.Fatalf("%s %q: internal error: %s", method, path, env.Error.Message)
		}
	})
}

// fuzzServer is an in-memory harness with a workspace, a session and a task,
// so fuzzed paths can reach deeper handlers.
func fuzzServer(t *testing.T) *Server {
	h, err := New(Options{APIKeys: map[string]string{testKey: "actor_default"}, MaxBodyBytes: 4096, IDs: &SeqIDs{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ path, body string }{
		{"/v1/workspaces", `{"name":"w","root":"/"}`},
		{"/v1/sessions", `{"workspace_id":"workspace_000001"}`},
		{"/v1/sessions/session_000001/tasks", `{"input":{"text":"x"}}`},
	} {
		req := httptest.NewRequest("POST", r.path, strings.NewReader(r.body))
		req.Header.Set(VersionHeader, ProtocolVersion)
		req.Header.Set("Authorization", "Bearer "+testKey)
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	return h
}
