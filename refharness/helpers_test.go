package refharness

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

const testKey = "test-key-0123456789"

// harness is a server plus a tiny client for tests.
type harness struct {
	t *testing.T
	s *Server
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	if opts.APIKeys == nil {
		opts.APIKeys = map[string]string{testKey: "actor_default"}
	}
	s, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return &harness{t: t, s: s}
}

// resp is a decoded response.
type resp struct {
	Code   int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

func (r resp) str(path ...string) string {
	var v any = r.Body
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	s, _ := v.(string)
	return s
}

func (r resp) list() []map[string]any {
	var out []map[string]any
	data, _ := r.Body["data"].([]any)
	for _, d := range data {
		out = append(out, d.(map[string]any))
	}
	return out
}

// do sends a request with the version header and key unless hdr overrides
// them ("-Name" removes a header).
func (h *harness) do(method, path string, body any, hdr ...string) resp {
	h.t.Helper()
	var rd *bytes.Reader
	switch b := body.(type) {
	case nil:
		rd = bytes.NewReader(nil)
	case string:
		rd = bytes.NewReader([]byte(b))
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, err := json.Marshal(b)
		if err != nil {
			h.t.Fatal(err)
		}
		rd = bytes.NewReader(j)
	}
	req := httptest.NewRequest(method, path, rd)
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+testKey)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		if strings.HasPrefix(hdr[i], "-") {
			req.Header.Del(hdr[i][1:])
			continue
		}
		req.Header.Set(hdr[i], hdr[i+1])
	}
	rec := httptest.NewRecorder()
	h.s.ServeHTTP(rec, req)
	r := resp{Code: rec.Code, Header: rec.Header(), Raw: rec.Body.Bytes()}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
			h.t.Fatalf("%s %s: response is not JSON: %v\n%s", method, path, err, r.Raw)
		}
	}
	return r
}

// must fails the test unless the response has the wanted status.
func (h *harness) must(want int, r resp, what string) resp {
	h.t.Helper()
	if r.Code != want {
		h.t.Fatalf("%s: status = %d, want %d; body %s", what, r.Code, want, r.Raw)
	}
	return r
}

// wantError checks an error envelope.
func wantError(t *testing.T, r resp, status int, code, param string) {
	t.Helper()
	if r.Code != status {
		t.Fatalf("status = %d, want %d; body %s", r.Code, status, r.Raw)
	}
	e, ok := r.Body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error envelope in %s", r.Raw)
	}
	if e["code"] != code {
		t.Errorf("error.code = %v, want %s (body %s)", e["code"], code, r.Raw)
	}
	if e["type"] != errorTypes[code] {
		t.Errorf("error.type = %v, want %s", e["type"], errorTypes[code])
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("error.message is empty")
	}
	if param != "" && e["param"] != param {
		t.Errorf("error.param = %v, want %s (body %s)", e["param"], param, r.Raw)
	}
}

// session creates a workspace and a session and returns the session id.
func (h *harness) session() string {
	h.t.Helper()
	ws := h.mustOK(h.do("POST", "/v1/workspaces", map[string]any{"name": "w", "root": "/tmp/w"}), "create workspace")
	se := h.mustOK(h.do("POST", "/v1/sessions", map[string]any{"workspace_id": ws.str("id")}), "create session")
	return se.str("id")
}

// submit submits a task with the given scenario steps (nil = echo agent).
func (h *harness) submit(sess string, steps []map[string]any, hdr ...string) resp {
	h.t.Helper()
	body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "hello", "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	return h.mustOK(h.do("POST", "/v1/sessions/"+sess+"/tasks", body, hdr...), "submit task")
}

// mustOK fails the test unless the response is a 2xx (helpers that set up
// state must work under the wrong-create-status fault too).
func (h *harness) mustOK(r resp, what string) resp {
	h.t.Helper()
	if r.Code < 200 || r.Code > 299 {
		h.t.Fatalf("%s: status = %d, want 2xx; body %s", what, r.Code, r.Raw)
	}
	return r
}

// waitLimit bounds the waits of these tests for something that must
// happen: a hang guard, not a speed target (what they wait for takes
// milliseconds). In a synctest bubble it is the bubble's time, which
// passes only when nothing else can happen.
const waitLimit = time.Minute

// waitStatus waits (on the server's change notifications, with a deadline)
// until the task has the wanted status.
func (h *harness) waitStatus(id, want string) *Task {
	h.t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		h.s.mu.RLock()
		t, _ := h.s.st.tasks.get(id)
		wake := h.s.notify
		h.s.mu.RUnlock()
		if t != nil && t.Status == want {
			return t
		}
		select {
		case <-wake:
		case <-deadline.C:
			got := "missing"
			if t != nil {
				got = t.Status
			}
			h.t.Fatalf("task %s: status = %s, want %s within %s", id, got, want, waitLimit)
		}
	}
}

// events returns the event kinds of a task.
func (h *harness) taskEvents(id string) (kinds []string, evs []map[string]any) {
	h.t.Helper()
	r := h.must(200, h.do("GET", "/v1/tasks/"+id+"/events?limit=200", nil), "task events")
	for _, e := range r.list() {
		kinds = append(kinds, e["event"].(string))
		evs = append(evs, e)
	}
	return kinds, evs
}

func step(op string, kv ...any) map[string]any {
	m := map[string]any{"op": op}
	for i := 0; i+1 < len(kv); i += 2 {
		m[fmt.Sprint(kv[i])] = kv[i+1]
	}
	return m
}
