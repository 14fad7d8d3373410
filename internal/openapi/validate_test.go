package openapi

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/receipts"
)

var jsonCT = http.Header{"Content-Type": {"application/json; charset=utf-8"}}

// found renders violations as "pointer req" pairs ("status req" for those
// without a pointer), the part of a finding these tests pin.
func found(vs []Violation) []string {
	out := []string{}
	for _, v := range vs {
		p := v.Pointer
		if p == "" {
			p = "-"
		}
		out = append(out, p+" "+v.Req)
	}
	return out
}

var receiptsRead = receipts.Read

func receiptFixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := receipts.Read("valid/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestValidateResponse(t *testing.T) {
	d := mustDoc(t)
	longID := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name         string
		method, path string
		status       int
		header       http.Header
		body         []byte
		want         []string
	}{
		// --- conformant answers --------------------------------------------------
		{"task", "GET", "/v1/tasks/task_1", 200, jsonCT, js(task()), nil},
		{"task with structured input", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "input", map[string]any{"text": "hi"})), nil},
		{"task list", "GET", "/v1/tasks", 200, jsonCT, js(list(task(), task())), nil},
		{"submit 202", "POST", "/v1/sessions/ses_1/tasks", 202, jsonCT, js(task()), nil},
		{"session", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(session()), nil},
		{"session transcript link", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(with(session(), "transcript", "/v1/sessions/ses_1/messages")), nil},
		{"message", "GET", "/v1/messages/msg_1", 200, jsonCT, js(msgObj()), nil},
		{"artifact", "GET", "/v1/artifacts/art_1", 200, jsonCT, js(artifact()), nil},
		{"artifact unhashed", "GET", "/v1/artifacts/art_1", 200, jsonCT, js(with(artifact(), "sha256", nil)), nil},
		{"outcome", "GET", "/v1/outcomes/out_1", 200, jsonCT, js(outcome()), nil},
		{"event", "GET", "/v1/events/evt_1", 200, jsonCT, js(event()), nil},
		{"event list", "GET", "/v1/tasks/task_1/events", 200, jsonCT, js(list(event())), nil},
		{"discovery", "GET", "/v1", 200, jsonCT, js(discovery()), nil},
		{"agent card", "GET", "/v1/agent-card", 200, jsonCT, js(agentCard()), nil},
		{"error", "GET", "/v1/tasks/nope", 404, jsonCT, js(errorEnv("resource_not_found", "not_found_error")), nil},
		{"error 426 with versions", "GET", "/v1/tasks", 426, jsonCT,
			js(with(errorEnv("unsupported_protocol_version", "request_error"), "error/details", map[string]any{"supported_versions": []any{"agents-protocol-2026-04-25"}})), nil},
		{"delete 204", "DELETE", "/v1/memories/m1", 204, http.Header{}, nil, nil},
		{"stream head", "GET", "/v1/tasks/task_1/stream", 200, http.Header{"Content-Type": {"text/event-stream"}}, nil, nil},
		{"artifact bytes", "GET", "/v1/artifacts/art_1/content", 200, http.Header{"Content-Type": {"text/plain"}}, []byte("not json"), nil},
		{"websocket upgrade", "GET", "/v1/tasks/task_1/stream", 101, http.Header{}, nil, nil},
		{"unknown route 200 is not judged here", "GET", "/v1/nothing", 200, jsonCT, []byte(`{}`), nil},
		{"unknown fields are ignored", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "x_vendor", map[string]any{"a": 1})), nil},
		{"receipt", "GET", "/v1/receipts/r1", 200, jsonCT, receiptFixture(t, "task-completed.json"), nil},
		{"signed receipt", "GET", "/v1/receipts/r1", 200, jsonCT, receiptFixture(t, "signed.json"), nil},
		{"receipt list", "GET", "/v1/tasks/task_1/receipts", 200, jsonCT, []byte(`{"object":"list","data":[` + string(receiptFixture(t, "chain-1.json")) + `],"page":{"has_more":false}}`), nil},
		{"verify", "POST", "/v1/receipts/r1/verify", 200, jsonCT, []byte(`{"valid":true,"checked_at":"` + ts + `","reason":null}`), nil},
		{"key directory", "GET", "/v1/receipt-keys", 200, jsonCT, []byte(`{"object":"receipt_key_directory","keys":[{"key_id":"k","algorithm":"ed25519","public_key":"AAAA"}]}`), nil},
		// P4: an A2A 0.3 card (endpoint in url).
		{"a2a 0.3 card", "GET", "/v1/agent-card", 200, jsonCT,
			js(with(with(agentCard(), "a2a_card/supportedInterfaces", del), "a2a_card/url", "https://h.example/a2a")), nil},
		// P5: resources nested in an outcome need not carry the envelope.
		{"outcome with bare nested message and artifact", "GET", "/v1/outcomes/out_1", 200, jsonCT,
			js(with(with(outcome(), "messages", []any{map[string]any{"id": "m", "role": "agent", "parts": []any{textPart()}, "created_at": ts}}),
				"artifacts", []any{with(with(with(with(artifact(), "object", del), "created_at", del), "updated_at", del), "metadata", del)})), nil},
		// P6: the agent card without resource timestamps.
		{"card without timestamps", "GET", "/v1/agent-card", 200, jsonCT,
			js(with(with(with(agentCard(), "created_at", del), "updated_at", del), "metadata", del)), nil},

		// --- one defect each: the mapping must hold even when the validator
		// reports a single error (it then collapses its error tree) ---------------
		{"task status", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "status", "completed")), []string{"/status CORE-READ-004"}},
		{"task without id", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "id", del)), []string{"/id CORE-READ-001"}},
		{"task id not a string", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "id", 7)), []string{"/id CORE-READ-001"}},
		{"task without updated_at", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "updated_at", del)), []string{"/updated_at CORE-READ-001"}},
		{"task object", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "object", "Task")), []string{"/object CORE-READ-003"}},
		{"task without object", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "object", del)), []string{"/object CORE-READ-003"}},
		{"task started_at", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "started_at", "yesterday")), []string{"/started_at CORE-READ-002"}},
		{"task created_at", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "created_at", "2026-04-25 19:00")), []string{"/created_at CORE-READ-002"}},
		{"task without created_by", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "created_by", del)), []string{"/created_by CORE-READ-004"}},
		{"task input not an object", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "input", "hi")), []string{"/input CORE-READ-004"}},
		{"task in a list", "GET", "/v1/sessions/ses_1/tasks", 200, jsonCT, js(list(task(), with(task(), "status", "done"))), []string{"/data/1/status CORE-READ-004"}},
		{"session state", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(with(session(), "state", "active")), []string{"/state CORE-READ-009"}},
		{"session transcript", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(with(session(), "transcript", del)), []string{"/transcript CORE-READ-005"}},
		{"session transcript number", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(with(session(), "transcript", 3)), []string{"/transcript CORE-READ-005"}},
		{"session metadata", "GET", "/v1/sessions/ses_1", 200, jsonCT, js(with(session(), "metadata", del)), []string{"/metadata CORE-READ-001"}},
		{"message role", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "role", "robot")), []string{"/role CORE-READ-009"}},
		{"message parts", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts", del)), []string{"/parts CORE-READ-006"}},
		{"part type", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts/0/type", "audio")), []string{"/parts/0/type CORE-READ-009"}},
		{"part visibility", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts/0/visibility", "secret")), []string{"/parts/0/visibility CORE-READ-009"}},
		{"part without visibility", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts/0/visibility", del)), []string{"/parts/0/visibility CORE-READ-006"}},
		{"part without text", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts/0/text", del)), []string{"/parts/0/text CORE-READ-006"}},
		{"part not an object", "GET", "/v1/messages/msg_1", 200, jsonCT, js(with(msgObj(), "parts/0", "hi")), []string{"/parts/0 CORE-READ-006"}},
		{"part inside task input", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "input", with(msgObj(), "parts/0/visibility", "secret"))), nil}, // input may be any object
		{"artifact sha prefixed", "GET", "/v1/artifacts/art_1", 200, jsonCT, js(with(artifact(), "sha256", "sha256:"+strings.Repeat("ab", 32))), []string{"/sha256 CORE-READ-007"}},
		{"artifact kind", "GET", "/v1/artifacts/art_1", 200, jsonCT, js(with(artifact(), "kind", "video")), []string{"/kind CORE-READ-009"}},
		{"artifact uri missing", "GET", "/v1/artifacts/art_1", 200, jsonCT, js(with(artifact(), "uri", del)), []string{"/uri CORE-READ-007"}},
		{"outcome status", "GET", "/v1/outcomes/out_1", 200, jsonCT, js(with(outcome(), "status", "COMPLETED")), []string{"/status CORE-OUT-001"}},
		{"outcome nested part", "GET", "/v1/outcomes/out_1", 200, jsonCT, js(with(outcome(), "messages/0/parts/0/visibility", del)), []string{"/messages/0/parts/0/visibility CORE-READ-006"}},
		{"outcome nested artifact object", "GET", "/v1/outcomes/out_1", 200, jsonCT, js(with(outcome(), "artifacts/0/object", "file")), []string{"/artifacts/0/object CORE-READ-003"}},
		{"outcome without summary", "GET", "/v1/outcomes/out_1", 200, jsonCT, js(with(outcome(), "summary", del)), []string{"/summary CORE-READ-008"}},
		{"event sequence", "GET", "/v1/events/evt_1", 200, jsonCT, js(with(event(), "sequence", -1)), []string{"/sequence CORE-EVT-001"}},
		{"event resource", "GET", "/v1/events/evt_1", 200, jsonCT, js(with(event(), "resource/id", del)), []string{"/resource/id CORE-EVT-001"}},
		{"event replay metadata", "GET", "/v1/events/evt_1", 200, jsonCT, js(with(event(), "replay", map[string]any{"source_task_id": 1, "replay_task_id": "t2"})), []string{"/replay/source_task_id CORE-EVT-001"}},
		{"event timestamp", "GET", "/v1/events/evt_1", 200, jsonCT, js(with(event(), "created_at", "today")), []string{"/created_at CORE-READ-002"}},
		{"list page", "GET", "/v1/tasks/task_1/events", 200, jsonCT, js(with(list(event()), "page/has_more", del)), []string{"/page/has_more CORE-PAGE-001"}},
		{"list object", "GET", "/v1/artifacts", 200, jsonCT, js(with(list(), "object", "array")), []string{"/object CORE-PAGE-001"}},
		{"list without page", "GET", "/v1/outcomes", 200, jsonCT, js(with(list(), "page", del)), []string{"/page CORE-PAGE-001"}},
		{"discovery object", "GET", "/v1", 200, jsonCT, js(with(discovery(), "object", "discovery")), []string{"/object CORE-DISC-001"}},
		{"discovery flag", "GET", "/v1", 200, jsonCT, js(with(discovery(), "capabilities/sse", "yes")), []string{"/capabilities/sse CORE-DISC-001"}},
		{"card without a2a_card", "GET", "/v1/agent-card", 200, jsonCT, js(with(agentCard(), "a2a_card", del)), []string{"/a2a_card CORE-CARD-001"}},
		{"card a2a_card not an object", "GET", "/v1/agent-card", 200, jsonCT, js(with(agentCard(), "a2a_card", "x")), []string{"/a2a_card CORE-CARD-001"}},
		{"a2a card without name", "GET", "/v1/agent-card", 200, jsonCT, js(with(agentCard(), "a2a_card/name", del)), []string{"/a2a_card/name CORE-CARD-002"}},
		{"a2a card without interface", "GET", "/v1/agent-card", 200, jsonCT, js(with(agentCard(), "a2a_card/supportedInterfaces", del)), []string{"/a2a_card CORE-CARD-002"}},
		{"card object", "GET", "/v1/agent-card", 200, jsonCT, js(with(agentCard(), "object", "agent_card")), []string{"/object CORE-CARD-001"}},
		// P7: a code outside the core table, with a core type, is accepted.
		{"error code outside the table", "GET", "/v1/tasks/nope", 404, jsonCT, js(errorEnv("not_found", "not_found_error")), nil},
		{"error type", "GET", "/v1/tasks/nope", 404, jsonCT, js(errorEnv("resource_not_found", "missing")), []string{"/error/type CORE-ERR-003"}},
		{"error without type", "GET", "/v1/tasks/nope", 404, jsonCT, js(with(errorEnv("resource_not_found", "x"), "error/type", del)), []string{"/error/type CORE-ERR-002"}},
		{"error without envelope", "GET", "/v1/tasks/nope", 404, jsonCT, []byte(`{"code":"resource_not_found"}`), []string{"/error CORE-ERR-002"}},
		{"error in plain text", "POST", "/v1/tasks", 400, http.Header{"Content-Type": {"text/plain"}}, []byte("bad request"), []string{"- CORE-ERR-002", "- CORE-ERR-002"}},
		{"error JSON sent as text", "POST", "/v1/tasks", 400, http.Header{"Content-Type": {"text/plain"}}, js(errorEnv("invalid_request", "request_error")), []string{"- CORE-ERR-002"}},
		{"error with empty body", "GET", "/v1/tasks", 401, http.Header{}, nil, []string{"- CORE-ERR-002"}},
		{"unknown route error", "GET", "/v1/nothing", 404, http.Header{"Content-Type": {"text/html"}}, []byte("<html>"), []string{"- CORE-ERR-002", "- CORE-ERR-002"}},
		{"public route error", "GET", "/v1", 503, jsonCT, []byte(`{"error":{}}`), []string{"/error/code CORE-ERR-002", "/error/message CORE-ERR-002", "/error/type CORE-ERR-002"}},
		{"receipt schema marker", "GET", "/v1/receipts/r1", 200, jsonCT,
			[]byte(strings.Replace(string(receiptFixture(t, "task-completed.json")), `"receipt-2026-04-25"`, `"receipt-2026-01-01"`, 1)), []string{"/schema RCPT-SHAPE-002"}},
		{"receipt extra member", "GET", "/v1/receipts/r1", 200, jsonCT,
			[]byte(strings.Replace(string(receiptFixture(t, "task-completed.json")), `{`, `{"x_note":1,`, 1)), []string{"/x_note RCPT-SHAPE-001"}},
		{"receipt wrapped", "GET", "/v1/receipts/r1", 200, jsonCT, []byte(`{"receipt":{}}`), nil /* checked below */},
		{"receipt list envelope", "GET", "/v1/tasks/task_1/receipts", 200, jsonCT, []byte(`{"object":"list","data":[]}`), []string{"/page RCPT-RES-002"}},
		{"verify without valid", "POST", "/v1/receipts/r1/verify", 200, jsonCT, []byte(`{"checked_at":"` + ts + `"}`), []string{"/valid RCPT-VERIFY-001"}},
		{"key directory without keys", "GET", "/v1/receipt-keys", 200, jsonCT, []byte(`{}`), []string{"/keys RCPT-SIGN-002"}},
		{"persona", "GET", "/v1/personas", 200, jsonCT, js(list(map[string]any{"id": "p"})), nil /* checked below */},

		// --- statuses and content types ------------------------------------------
		{"create answered 200", "POST", "/v1/sessions", 200, jsonCT, js(session()), []string{"- CORE-READ-010"}},
		{"submit answered 201", "POST", "/v1/tasks", 201, jsonCT, js(task()), []string{"- CORE-TASK-002"}},
		{"submit 200 with a broken task", "POST", "/v1/sessions/s/tasks", 200, jsonCT, js(with(task(), "status", "x")), []string{"- CORE-TASK-001", "/status CORE-READ-004"}},
		{"redirect", "GET", "/v1/tasks/t", 302, http.Header{"Location": {"/x"}}, nil, []string{"- CORE-READ-004"}},
		{"success without content type", "GET", "/v1/tasks/task_1", 200, http.Header{}, js(task()), []string{"- CORE-READ-004"}},
		{"success with empty body", "GET", "/v1/sessions/s", 200, jsonCT, nil, []string{"- CORE-READ-005"}},
		{"success not JSON", "GET", "/v1", 200, jsonCT, []byte("{"), []string{"- CORE-DISC-001"}},
		{"long value is bounded", "GET", "/v1/tasks/task_1", 200, jsonCT, js(with(task(), "status", longID)), []string{"/status CORE-READ-004"}},
		{"a served local-server route is judged", "GET", "/health", 200, jsonCT, []byte(`{}`), []string{"/ok EXT-LOCAL-001", "/status EXT-LOCAL-001", "/version EXT-LOCAL-001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := d.ValidateResponse(tc.method, tc.path, tc.status, tc.header, tc.body)
			got := found(vs)
			switch tc.name {
			case "receipt wrapped":
				// A wrapper instead of the document: every finding is under the
				// receipt shape requirements.
				if len(vs) < 5 || slices.ContainsFunc(vs, func(v Violation) bool { return v.Req != "RCPT-SHAPE-001" && v.Req != "RCPT-SHAPE-002" }) {
					t.Errorf("violations = %v, want several, all RCPT-SHAPE-001 or -002", vs)
				}
				return
			case "persona":
				if len(vs) < 5 || slices.ContainsFunc(vs, func(v Violation) bool { return v.Req != "EXT-PERSONA-001" }) {
					t.Errorf("violations = %v, want several, all EXT-PERSONA-001", vs)
				}
				return
			}
			want := tc.want
			if want == nil {
				want = []string{}
			}
			if !slices.Equal(got, want) {
				t.Errorf("ValidateResponse(%s %s → %d) = %q, want %q\n%s", tc.method, tc.path, tc.status, got, want, errs(vs))
			}
			for _, v := range vs {
				if v.Kind != KindResponse || len(v.Value) > maxValueBytes || len(v.Message) > maxMessageBytes {
					t.Errorf("violation %+v: wrong kind or unbounded value/message", v)
				}
			}
		})
	}
}

func errs(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("  " + v.Error() + "\n")
	}
	return b.String()
}

func TestViolationError(t *testing.T) {
	d := mustDoc(t)
	vs := d.ValidateResponse("GET", "/v1/tasks/t1", 200, jsonCT, js(with(task(), "status", "completed")))
	want := `GET /v1/tasks/t1 → 200: /status = "completed": value must be one of "SUBMITTED", "WORKING", "INPUT_REQUIRED", "AUTH_REQUIRED", "COMPLETED", "FAILED", "CANCELED" (CORE-READ-004)`
	if len(vs) != 1 || vs[0].Error() != want {
		t.Fatalf("got %q\nwant %q", errs(vs), want)
	}
	if vs[0].OperationID != "getTask" {
		t.Errorf("OperationID = %q, want getTask", vs[0].OperationID)
	}
	for _, tc := range []struct {
		v    Violation
		want string
	}{
		{Violation{Op: "POST /v1/tasks → 200", Message: "status 200 is not declared", Req: "CORE-TASK-002"}, "POST /v1/tasks → 200: status 200 is not declared (CORE-TASK-002)"},
		{Violation{Op: "GET /v1 → 200", Value: "[]", Message: "value is an array, want object"}, "GET /v1 → 200: body = []: value is an array, want object"},
		{Violation{Op: "GET /v1/tasks/t → 200", Pointer: "/id", Message: "required member is missing", Req: "CORE-READ-001"}, "GET /v1/tasks/t → 200: /id: required member is missing (CORE-READ-001)"},
	} {
		if got := tc.v.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestValueIsBoundedJSON(t *testing.T) {
	d := mustDoc(t)
	long := strings.Repeat("é", 300) // 600 bytes
	vs := d.ValidateResponse("GET", "/v1/tasks/t1", 200, jsonCT, js(with(task(), "status", long)))
	if len(vs) != 1 {
		t.Fatalf("violations = %v", vs)
	}
	v := vs[0].Value
	if len(v) > maxValueBytes || !strings.HasPrefix(v, `"éé`) || !strings.HasSuffix(v, "…") || !strings.Contains(vs[0].Error(), v) {
		t.Errorf("Value = %q (%d bytes), want a JSON string cut at %d bytes on a rune boundary", v, len(v), maxValueBytes)
	}
}

func TestViolationsAreSortedDeterministicAndCapped(t *testing.T) {
	d := mustDoc(t)
	var items []any
	for i := 0; i < 60; i++ {
		items = append(items, with(with(task(), "status", "x"), "id", del))
	}
	body := js(list(items...))
	first := d.ValidateResponse("GET", "/v1/tasks", 200, jsonCT, body)
	if len(first) != maxViolations {
		t.Fatalf("%d violations, want the cap %d", len(first), maxViolations)
	}
	if last := first[len(first)-1]; !strings.Contains(last.Message, "21 more violations not listed") {
		t.Errorf("last violation = %q, want the count of those left out (120 found)", last.Message)
	}
	for i := 1; i < len(first)-1; i++ {
		if first[i-1].Pointer > first[i].Pointer {
			t.Fatalf("not sorted by pointer at %d: %q > %q", i, first[i-1].Pointer, first[i].Pointer)
		}
	}
	for range 20 {
		if again := d.ValidateResponse("GET", "/v1/tasks", 200, jsonCT, body); !slices.EqualFunc(again, first, sameViolation) {
			t.Fatal("ValidateResponse is not deterministic")
		}
	}
}

func TestValidateRequest(t *testing.T) {
	d := mustDoc(t)
	h := func(kv ...string) http.Header {
		out := http.Header{"Authorization": {"Bearer [REDACTED]"}, "Harn-Agents-Protocol-Version": {"agents-protocol-2026-04-25"},
			"Content-Type": {"application/json"}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "" && kv[i] != "Idempotency-Key" {
				out.Del(kv[i])
				continue
			}
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	input := []byte(`{"input":{"role":"user","parts":[{"type":"text","text":"hi","visibility":"public"}]}}`)
	for _, tc := range []struct {
		name         string
		method, path string
		query        url.Values
		header       http.Header
		body         []byte
		want         []string // messages' prefixes, or pointers for body findings
	}{
		{"submit", "POST", "/v1/sessions/s1/tasks", nil, h("Idempotency-Key", "k1"), input, nil},
		{"submit structured", "POST", "/v1/tasks", nil, h(), []byte(`{"session_id":"s","input":{"goal":"x"}}`), nil},
		{"public without headers", "GET", "/v1", nil, http.Header{}, nil, nil},
		{"list with query", "GET", "/v1/tasks", url.Values{"limit": {"200"}, "session_id": {"s"}, "unknown": {"x"}}, h(), nil, nil},
		{"fork without body", "POST", "/v1/sessions/s/fork", nil, h(), nil, nil},
		{"cancel without body", "POST", "/v1/tasks/t/cancel", nil, h(), nil, nil},
		{"resume header", "GET", "/v1/tasks/t/stream", nil, h("Last-Event-ID", "e1"), nil, nil},
		{"no version", "GET", "/v1/tasks", nil, h("Harn-Agents-Protocol-Version", ""), nil, []string{"header parameter Harn-Agents-Protocol-Version is required"}},
		{"wrong version", "GET", "/v1/tasks", nil, h("Harn-Agents-Protocol-Version", "v0"), nil, []string{`header parameter Harn-Agents-Protocol-Version ("v0"): value must be "agents-protocol-2026-04-25"`}},
		{"no auth", "GET", "/v1/tasks", nil, h("Authorization", ""), nil, []string{"no Authorization: Bearer credential"}},
		{"basic auth", "GET", "/v1/tasks", nil, h("Authorization", "Basic [REDACTED]"), nil, []string{"no Authorization: Bearer credential"}},
		{"empty idempotency key", "POST", "/v1/tasks/t/cancel", nil, h("Idempotency-Key", ""), nil, []string{"header parameter Idempotency-Key"}},
		{"long idempotency key", "POST", "/v1/tasks/t/cancel", nil, h("Idempotency-Key", strings.Repeat("k", 256)), nil, []string{"header parameter Idempotency-Key"}},
		{"limit too big", "GET", "/v1/tasks", url.Values{"limit": {"201"}}, h(), nil, []string{`query parameter limit ("201"): maximum`}},
		{"limit not a number", "GET", "/v1/tasks", url.Values{"limit": {"ten"}}, h(), nil, []string{`query parameter limit ("ten"): not a number`}},
		{"limit not an integer", "GET", "/v1/tasks", url.Values{"limit": {"1.5"}}, h(), nil, []string{`query parameter limit ("1.5"): value is a number, want integer`}},
		{"limit twice", "GET", "/v1/tasks", url.Values{"limit": {"1", "2"}}, h(), nil, []string{"query parameter limit is given 2 times"}},
		{"missing body", "POST", "/v1/sessions/s/tasks", nil, h(), nil, []string{"the operation requires a request body"}},
		{"body not JSON", "POST", "/v1/sessions/s/tasks", nil, h(), []byte("{"), []string{"the body is not JSON"}},
		{"body without input", "POST", "/v1/sessions/s/tasks", nil, h(), []byte(`{}`), []string{"/input"}},
		{"input without parts", "POST", "/v1/sessions/s/messages", nil, h(), []byte(`{"message":{"role":"user"}}`), []string{"/message/parts"}},
		{"body with text content type", "POST", "/v1/sessions/s/tasks", nil, h("Content-Type", "text/plain"), input, []string{`request Content-Type "text/plain"`}},
		{"unmatched", "GET", "/v1/nothing", nil, h(), nil, []string{"no operation of the OpenAPI document matches GET /v1/nothing"}},
		{"wrong method", "PUT", "/v1/tasks/t1", nil, h(), nil, []string{"no operation of the OpenAPI document matches PUT /v1/tasks/t1 (the path takes GET)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := d.ValidateRequest(tc.method, tc.path, tc.query, tc.header, tc.body)
			if len(vs) != len(tc.want) {
				t.Fatalf("ValidateRequest = %d violations, want %d:\n%s", len(vs), len(tc.want), errs(vs))
			}
			for i, v := range vs {
				if !strings.HasPrefix(v.Message, tc.want[i]) && v.Pointer != tc.want[i] {
					t.Errorf("violation %d = %q, want it to start with %q", i, v.Error(), tc.want[i])
				}
				wantKind := KindRequest
				if strings.HasPrefix(tc.want[i], "no operation") {
					wantKind = KindUnmatched
				}
				if v.Kind != wantKind || v.Req != "" {
					t.Errorf("violation %d: kind %q req %q, want %q and no requirement (it is the suite's)", i, v.Kind, v.Req, wantKind)
				}
			}
		})
	}
}

func TestValidateComponent(t *testing.T) {
	d := mustDoc(t)
	if vs := d.ValidateComponent("Event", "frame 1", js(event())); vs != nil {
		t.Errorf("a valid event frame: %s", errs(vs))
	}
	vs := d.ValidateComponent("Event", "GET /v1/tasks/t/stream frame 3", js(with(event(), "payload", "x")))
	if len(vs) != 1 || vs[0].Req != "CORE-EVT-001" || vs[0].Pointer != "/payload" || !strings.HasPrefix(vs[0].Error(), "GET /v1/tasks/t/stream frame 3: /payload") {
		t.Errorf("bad payload: %s", errs(vs))
	}
	vs = d.ValidateComponent("ErrorResponse", "error frame", []byte(`not json`))
	if len(vs) != 1 || vs[0].Req != "CORE-ERR-002" {
		t.Errorf("error frame not JSON: %s", errs(vs))
	}
	if vs := d.ValidateComponent("NoSuchThing", "x", []byte(`{}`)); len(vs) != 1 {
		t.Errorf("unknown component: %v", vs)
	}
}
