package ws

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
)

// The harn-ws.v1 frame profile (docs/websocket.md) as a client reads it:
// the frame types, a received frame decoded and judged against the
// profile's server-to-client schema, the two ways a connection
// authenticates, and the auth frame. What a frame's problems mean for a
// verdict is the caller's to say.

// The frame types of the profile (docs/websocket.md, frame index).
const (
	TypeReady                 = "ready"
	TypeEvent                 = "event"
	TypeInputRequest          = "input_request"
	TypeAuthorizationRequest  = "authorization_request"
	TypeApprovalRequest       = "approval_request"
	TypeToolRequest           = "tool_request"
	TypeResult                = "result"
	TypeError                 = "error"
	TypePing                  = "ping"
	TypePong                  = "pong"
	TypeAuth                  = "auth"
	TypeUserMessage           = "user_message"
	TypeCancelTask            = "cancel_task"
	TypeTruncateSession       = "truncate_session"
	TypeInputResponse         = "input_response"
	TypeAuthorizationResponse = "authorization_response"
	TypeApprovalResponse      = "approval_response"
	TypeToolResult            = "tool_result"
	TypeResume                = "resume"
)

// ServerTypes are the frame types a server sends, in the index's order.
var ServerTypes = []string{TypeReady, TypeEvent, TypeInputRequest, TypeAuthorizationRequest, TypeApprovalRequest, TypeToolRequest,
	TypeResult, TypeError, TypePing, TypePong}

// ClientTypes are the frame types a client sends, in the index's order.
var ClientTypes = []string{TypePing, TypePong, TypeAuth, TypeUserMessage, TypeCancelTask, TypeTruncateSession, TypeInputResponse,
	TypeAuthorizationResponse, TypeApprovalResponse, TypeToolResult, TypeResume}

// CommandTypes are the client frames that are REST operations (section 4):
// each is answered by a result or an error frame.
var CommandTypes = []string{TypeUserMessage, TypeCancelTask, TypeTruncateSession, TypeInputResponse, TypeAuthorizationResponse,
	TypeApprovalResponse, TypeToolResult}

// Frame is one data message a server sent, decoded.
type Frame struct {
	Seq    int       // 1 for the connection's first server frame, and so on (set by whoever numbers them)
	At     time.Time // when it arrived
	Binary bool      // a binary message (the profile allows text only)
	Raw    []byte    // the message as received
	// Obj is the message decoded as one JSON object (numbers as
	// json.Number), nil when it is not one. A binary message holding one
	// is decoded too, so that a check of what the frame says is not also
	// failed by how it was framed.
	Obj  map[string]any
	Type string // Obj's "type" when a string
	// Problems are the frame's departures from the profile: not a text
	// message of one JSON object (reported alone, at the root), or what
	// the server_frame schema finds.
	Problems []schemas.Problem
}

var (
	serverSchemaOnce sync.Once
	serverSchema     *jsonschema.Schema
	serverSchemaErr  error
)

// Judge decodes a message a server sent and judges it against the
// profile's server-to-client schema.
func Judge(m Message) Frame {
	serverSchemaOnce.Do(func() { serverSchema, serverSchemaErr = schemas.CompileWSFrame(schemas.ServerToClient) })
	f := Frame{At: m.ArrivedAt, Binary: m.Type == websocket.MessageBinary, Raw: m.Data}
	inst, p := schemas.DecodeFrame(false, m.Data)
	if obj, ok := inst.(map[string]any); ok {
		f.Obj = obj
		f.Type, _ = obj["type"].(string)
	}
	switch {
	case f.Binary:
		f.Problems = []schemas.Problem{{Message: "binary message: the profile carries text frames only (close 1003)"}}
	case p != nil:
		f.Problems = []schemas.Problem{*p}
	case serverSchemaErr != nil:
		f.Problems = []schemas.Problem{{Message: "the suite could not compile the frame schema: " + serverSchemaErr.Error()}}
	default:
		f.Problems = schemas.Problems(serverSchema, inst)
	}
	return f
}

// Str is a string member of the frame ("" when absent or not a string).
func (f Frame) Str(k string) string { s, _ := f.Obj[k].(string); return s }

// Member is a member of the frame as an object (nil when it is not one).
func (f Frame) Member(k string) map[string]any { m, _ := f.Obj[k].(map[string]any); return m }

// Int is an integer member of the frame; ok is false when it is not one.
func (f Frame) Int(k string) (int64, bool) {
	n, ok := f.Obj[k].(interface{ Int64() (int64, error) })
	if !ok {
		return 0, false
	}
	v, err := n.Int64()
	return v, err == nil
}

// Status is a result or error frame's status (0 when not an integer).
func (f Frame) Status() int {
	n, _ := f.Int("status")
	return int(n)
}

// ErrorCode is an error frame's error.code.
func (f Frame) ErrorCode() string { c, _ := f.Member("error")["code"].(string); return c }

// Event is an event frame's Event (nil when it is not an object).
func (f Frame) Event() map[string]any { return f.Member("event") }

// EventKind is an event frame's Event kind.
func (f Frame) EventKind() string { k, _ := f.Event()["event"].(string); return k }

// String names the frame for messages: `frame 3 (event evt_1)`.
func (f Frame) String() string {
	what := f.Type
	switch {
	case f.Obj == nil:
		what = "not a JSON object"
	case f.Type == TypeEvent:
		what += " " + f.Str("event_id")
	case f.Type == TypeResult || f.Type == TypeError || f.Type == TypePong:
		what += " in reply to " + f.Str("in_reply_to")
	case strings.HasSuffix(f.Type, "_request"):
		what += " " + f.Str("request_id")
	}
	if f.Binary {
		what = "binary, " + what
	}
	return fmt.Sprintf("frame %d (%s)", f.Seq, what)
}

// Events are the Events of the event frames among fs, in order (nil for
// an event frame whose event is not an object).
func Events(fs []Frame) []map[string]any {
	var out []map[string]any
	for _, f := range fs {
		if f.Type == TypeEvent {
			out = append(out, f.Event())
		}
	}
	return out
}

// Way is how a connection authenticates (section 1.3).
type Way int

const (
	// ByHeaders sends Authorization and the version header on the upgrade.
	ByHeaders Way = iota
	// ByAuthFrame is a browser's upgrade, with neither header, then an
	// auth frame.
	ByAuthFrame
)

func (w Way) String() string {
	if w == ByAuthFrame {
		return "an auth frame"
	}
	return "headers on the upgrade"
}

// AuthFrame is the auth frame of way ByAuthFrame: id, the value an
// Authorization header would carry, the protocol version, and the resume
// cursor ("" for none: null).
func AuthFrame(id, authorization, version, cursor string) map[string]any {
	var c any
	if cursor != "" {
		c = cursor
	}
	return map[string]any{"type": TypeAuth, "id": id, "authorization": authorization, "protocol_version": version, "last_event_id": c}
}
