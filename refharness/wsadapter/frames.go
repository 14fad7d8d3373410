package wsadapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness"
)

// Profile is the frame profile this adapter speaks, the subprotocol it
// selects (docs/websocket.md).
const Profile = "harn-ws.v1"

// frame is a decoded client frame.
type frame map[string]any

// decodeFrame decodes a text message that must be exactly one JSON object
// (section 2), numbers kept exact.
func decodeFrame(data []byte) (frame, error) {
	if !utf8.Valid(data) {
		return nil, errors.New("the message is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the message is not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the message holds more than one JSON value")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the message is a JSON %s, want one object", jsonv.Kind(v))
	}
	return frame(m), nil
}

// invalid is a 400 invalid_request naming member param (a JSON Pointer).
func invalid(param, format string, args ...any) *refharness.Error {
	return refharness.NewError(http.StatusBadRequest, "invalid_request", param, fmt.Sprintf(format, args...), nil)
}

// frameID is the frame's id: "" when it has none (or one that is not a
// usable id, which ok reports).
func (f frame) frameID() (id string, ok bool) {
	v, present := f["id"]
	if !present {
		return "", true
	}
	s, isStr := v.(string)
	if !isStr || s == "" || utf8.RuneCountInString(s) > 128 {
		return "", false
	}
	return s, true
}

// replyTo is what in_reply_to names for an error about f: its id when it
// has a usable one (a string of 1 to 128 characters), else nothing.
func (f frame) replyTo() *string {
	if s, ok := f.frameID(); ok && s != "" {
		return &s
	}
	return nil
}

// str reads a string member; required members must be non-empty.
func (f frame) str(name string, required bool) (string, *refharness.Error) {
	v, ok := f[name]
	if !ok || v == nil {
		if required {
			return "", invalid("/"+name, "member %s is required", name)
		}
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr {
		return "", invalid("/"+name, "member %s: got %s, want a string", name, jsonv.Kind(v))
	}
	if required && s == "" {
		return "", invalid("/"+name, "member %s is empty", name)
	}
	return s, nil
}

// boolean reads a required boolean member.
func (f frame) boolean(name string) (bool, *refharness.Error) {
	v, ok := f[name]
	if !ok {
		return false, invalid("/"+name, "member %s is required", name)
	}
	b, isBool := v.(bool)
	if !isBool {
		return false, invalid("/"+name, "member %s: got %s, want a boolean", name, jsonv.Kind(v))
	}
	return b, nil
}

// need checks that member name is present (its value is judged by the
// REST operation, as for a REST body).
func (f frame) need(name string) *refharness.Error {
	if _, ok := f[name]; !ok {
		return invalid("/"+name, "member %s is required", name)
	}
	return nil
}

// cursor reads an optional cursor member: a non-empty string or null.
func (f frame) cursor(name string) (string, *refharness.Error) {
	v, ok := f[name]
	if !ok || v == nil {
		return "", nil
	}
	s, isStr := v.(string)
	if !isStr || s == "" {
		return "", invalid("/"+name, "member %s: got %s, want an event id or null", name, jsonv.Kind(v))
	}
	return s, nil
}

// ---- server frames ----

type readyFrame struct {
	Type                string              `json:"type"`
	Profile             string              `json:"profile"`
	ProtocolVersion     string              `json:"protocol_version"`
	ConnectionID        string              `json:"connection_id"`
	Resource            refharness.Resource `json:"resource"`
	HeartbeatIntervalMS int64               `json:"heartbeat_interval_ms"`
	PongTimeoutMS       int64               `json:"pong_timeout_ms"`
	MaxFrameBytes       int64               `json:"max_frame_bytes"`
	LastEventID         *string             `json:"last_event_id"`
	InReplyTo           *string             `json:"in_reply_to,omitempty"`
}

// eventFrame is an event frame around the Event's rendered JSON, which it
// carries byte for byte (section 3: the Event as the REST list holds it).
func eventFrame(id string, replayed bool, event []byte) []byte {
	b := make([]byte, 0, len(event)+len(id)+64)
	b = append(b, `{"type":"event","event_id":`...)
	b = strconv.AppendQuote(b, id) // event ids are ASCII: Go and JSON quoting agree
	b = append(b, `,"replayed":`...)
	b = strconv.AppendBool(b, replayed)
	b = append(b, `,"event":`...)
	b = append(b, event...)
	return append(b, '}')
}

// requestFrame renders a pending request (section 3, request frames).
func requestFrame(r *refharness.Request, replayed bool) ([]byte, error) {
	m := map[string]any{"type": r.Kind, "request_id": r.ID, "task_id": r.TaskID, "event_id": r.EventID,
		"replayed": replayed, "created_at": r.CreatedAt}
	if r.SessionID != "" {
		m["session_id"] = r.SessionID
	}
	switch r.Kind {
	case "input_request":
		m["prompt"] = r.Prompt
	case "authorization_request":
		m["reason"] = r.Reason
		m["kind"] = "approval"
		if r.Permission {
			m["kind"] = "permission"
		}
		m["action"] = r.Action
	case "approval_request":
		m["tool_call_id"], m["name"], m["input"] = r.ToolCallID, r.Name, r.Input
		if r.Reason != "" {
			m["reason"] = r.Reason
		}
	}
	return json.Marshal(m)
}

// resultFrame carries a command's REST answer (its body is a JSON object).
func resultFrame(inReplyTo string, status int, body []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"result","in_reply_to":`)
	q, _ := json.Marshal(inReplyTo)
	b.Write(q)
	b.WriteString(`,"status":`)
	b.WriteString(strconv.Itoa(status))
	b.WriteString(`,"result":`)
	b.Write(body)
	b.WriteByte('}')
	return b.Bytes()
}

// errorFrame is the REST error envelope env ({"error": {...}}) plus type,
// status and in_reply_to (section 3). A REST answer that is no envelope
// (a fault's plain text) is wrapped in one with a code for its status.
// The error's param, a REST member path (message.parts[0].type), becomes
// the JSON Pointer of the frame member (/message/parts/0/type).
func errorFrame(inReplyTo *string, status int, env []byte) []byte {
	var doc struct {
		Error map[string]any `json:"error"`
	}
	dec := json.NewDecoder(bytes.NewReader(env))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil || doc.Error == nil {
		doc.Error = map[string]any{"code": codeFor(status), "type": "server_error", "message": strings.TrimSpace(string(env))}
	}
	if p, ok := doc.Error["param"].(string); ok {
		doc.Error["param"] = pointer(p)
	}
	out := map[string]any{"type": "error", "status": status, "error": doc.Error, "in_reply_to": nil}
	if inReplyTo != nil {
		out["in_reply_to"] = *inReplyTo
	}
	b, err := json.Marshal(out)
	if err != nil {
		return []byte(`{"type":"error","status":500,"in_reply_to":null,"error":{"code":"internal_error","type":"server_error","message":"cannot render error"}}`)
	}
	return b
}

// codeFor names the error code of a status, for an answer without one.
func codeFor(status int) string {
	switch status {
	case 400:
		return "invalid_request"
	case 401:
		return "unauthenticated"
	case 403:
		return "permission_denied"
	case 404:
		return "resource_not_found"
	case 409:
		return "conflict"
	case 413:
		return "payload_too_large"
	case 426:
		return "unsupported_protocol_version"
	case 429:
		return "rate_limited"
	case 503:
		return "service_unavailable"
	}
	return "internal_error"
}

var indexRE = regexp.MustCompile(`\[(\d+)\]`)

// pointer turns a REST error param into a JSON Pointer into the frame:
// "message.parts[0].type" -> "/message/parts/0/type"; the Idempotency-Key
// header is the frame's idempotency_key. A param that already is a
// pointer is kept, and so is a header name (Last-Event-ID: the upgrade's
// header).
func pointer(p string) string {
	switch {
	case p == "" || strings.HasPrefix(p, "/"):
		return p
	case strings.EqualFold(p, "Idempotency-Key"):
		return "/idempotency_key"
	case p[0] >= 'A' && p[0] <= 'Z':
		return p
	}
	p = indexRE.ReplaceAllString(p, ".$1")
	return jsonv.Pointer(strings.Split(p, ".")...)
}
