// Package acp drives an Agent Client Protocol agent as its client over
// stdio (https://agentclientprotocol.com/protocol/transports): it starts the
// agent command, speaks JSON-RPC 2.0 one message per line, and keeps every
// line it sends and receives, bounded and redacted, for the report. It is a
// checker's client, not an application's: every line the agent writes is
// decoded strictly and each deviation is kept as a Problem naming the
// requirement it breaks, instead of being logged and dropped, so a check
// can fail with what actually came back.
//
// The ACP request and response types come from github.com/coder/acp-go-sdk
// (docs/acp-harbor.md says why its connection is not used for the wire).
package acp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Kind is what a JSON-RPC message is.
type Kind int

const (
	KindInvalid      Kind = iota
	KindRequest           // method and id
	KindNotification      // method, no id
	KindResponse          // id and result or error, no method
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindNotification:
		return "notification"
	case KindResponse:
		return "response"
	}
	return "invalid"
}

// Requirement ids the decoder's findings are judged under (registry
// acp_harbor.yaml).
const (
	// ReqFraming: every line on the agent's stdout is one UTF-8 JSON-RPC
	// 2.0 message (ACP transports: "The agent MUST NOT write anything to
	// its stdout that is not a valid ACP message").
	ReqFraming = "ACP-RPC-001"
	// ReqResponse: a response names its request's id and carries exactly
	// one of result and error.
	ReqResponse = "ACP-RPC-002"
	// ReqErrorObject: an error member is an object with an integer code
	// and a string message.
	ReqErrorObject = "ACP-RPC-003"
)

// Message is one decoded JSON-RPC message. Decode fills what it could read
// even when the message breaks the protocol (Problems says how), so a check
// can go on with what the agent meant.
type Message struct {
	Kind   Kind
	Method string
	// ID is the raw id ("" when absent); IDKey its canonical form for
	// matching a response to its request.
	ID     json.RawMessage
	IDKey  string
	Params json.RawMessage
	Result json.RawMessage
	Error  *RPCError
	// Raw is the line as received (without its newline).
	Raw []byte
}

// RPCError is a JSON-RPC error object as the agent sent it. Code is valid
// only when CodeOK (an integer was sent).
type RPCError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
	CodeOK  bool            `json:"-"`
}

func (e *RPCError) Error() string {
	if e == nil {
		return "<nil>"
	}
	s := fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
	if len(e.Data) > 0 {
		s += " (data " + clip(string(e.Data), 300) + ")"
	}
	return s
}

// Standard JSON-RPC 2.0 error codes.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603
)

// Problem is one way a line broke JSON-RPC 2.0 or ACP framing: the
// requirement it breaks and what was wrong, with the line.
type Problem struct {
	Req     string
	Message string
	Line    string // the offending line, clipped
}

func (p Problem) String() string {
	if p.Line == "" {
		return p.Message
	}
	return p.Message + ": " + p.Line
}

// ErrNotJSON is wrapped by Decode's error for a line that is not one JSON
// object at all (nothing of it can be used).
var ErrNotJSON = errors.New("not a JSON object")

// Decode reads one line the agent wrote. It returns the message as far as
// it could be read and the problems found; an error (wrapping ErrNotJSON)
// means the line holds no usable message. Decode never panics on any input
// (FuzzDecode).
func Decode(line []byte) (Message, []Problem, error) {
	m := Message{Raw: line}
	var probs []Problem
	bad := func(req, format string, args ...any) {
		probs = append(probs, Problem{Req: req, Message: fmt.Sprintf(format, args...), Line: clip(string(line), 400)})
	}
	if !utf8.Valid(line) {
		// ACP transports: "JSON-RPC messages MUST be UTF-8 encoded".
		bad(ReqFraming, "the line is not valid UTF-8")
	}
	trimmed := bytes.TrimSpace(line)
	if len(trimmed) == 0 {
		return m, []Problem{{Req: ReqFraming, Message: "an empty line on stdout (messages are delimited by newlines; an empty line is no message)"}}, fmt.Errorf("empty line: %w", ErrNotJSON)
	}
	if trimmed[0] == '[' {
		p := Problem{Req: ReqFraming, Message: "a JSON array (a JSON-RPC batch) on stdout: ACP v1 over stdio exchanges single messages", Line: clip(string(line), 400)}
		return m, append(probs, p), fmt.Errorf("batch: %w", ErrNotJSON)
	}
	if trimmed[0] != '{' {
		p := Problem{Req: ReqFraming, Message: "not a JSON object", Line: clip(string(line), 400)}
		return m, append(probs, p), fmt.Errorf("%w: starts with %q", ErrNotJSON, trimmed[0])
	}
	var w map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&w); err != nil {
		p := Problem{Req: ReqFraming, Message: "not a JSON object: " + err.Error(), Line: clip(string(line), 400)}
		return m, append(probs, p), fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	if rest := bytes.TrimSpace(trimmed[dec.InputOffset():]); len(rest) > 0 {
		bad(ReqFraming, "trailing bytes after the JSON object: %s", clip(string(rest), 60))
	}
	// Members are present when their key is, whatever their value: a
	// "result": null is a result.
	jsonrpc, hasVersion := w["jsonrpc"]
	id, hasID := w["id"]
	method, hasMethod := w["method"]
	params, hasParams := w["params"]
	result, hasResult := w["result"]
	errMember, hasError := w["error"]

	if !hasVersion {
		bad(ReqFraming, `the "jsonrpc" member is missing (JSON-RPC 2.0 requires "2.0")`)
	} else if string(bytes.TrimSpace(jsonrpc)) != `"2.0"` {
		bad(ReqFraming, `"jsonrpc" is %s, want "2.0"`, clip(string(jsonrpc), 40))
	}
	if hasMethod {
		if err := json.Unmarshal(method, &m.Method); err != nil || m.Method == "" {
			bad(ReqFraming, `"method" is %s, want a non-empty string`, clip(string(method), 60))
		}
	}
	if hasID {
		m.ID = append(json.RawMessage(nil), bytes.TrimSpace(id)...)
		key, err := IDKey(m.ID)
		if err != nil {
			bad(ReqFraming, `"id" %s: %v`, clip(string(m.ID), 60), err)
		} else {
			m.IDKey = key
		}
	}
	if hasParams {
		m.Params = params
		if p := bytes.TrimSpace(params); len(p) > 0 && p[0] != '{' && p[0] != '[' {
			// JSON-RPC 2.0 §4.2: params, if present, is a structured value.
			bad(ReqFraming, `"params" is %s, want an object or array`, clip(string(p), 60))
		}
	}
	switch {
	case hasMethod:
		m.Kind = KindNotification
		if hasID {
			m.Kind = KindRequest
		}
		if hasResult || hasError {
			bad(ReqFraming, `a message with "method" also carries "result" or "error"`)
		}
	case hasResult || hasError:
		m.Kind = KindResponse
		if !hasID {
			bad(ReqResponse, `a response without "id" (JSON-RPC 2.0 §5: the id is required, null when it could not be read)`)
		}
		if hasResult && hasError {
			bad(ReqResponse, `a response with both "result" and "error" (JSON-RPC 2.0 §5: exactly one; "error" must not exist without an error)`)
		}
		if hasResult {
			m.Result = result
		}
		if hasError {
			m.Error = decodeError(errMember, bad)
		}
	case hasID:
		m.Kind = KindResponse
		bad(ReqResponse, `a response with neither "result" nor "error" (JSON-RPC 2.0 §5: exactly one)`)
	default:
		bad(ReqFraming, `an object that is no JSON-RPC message (no "method", "id", "result" or "error")`)
	}
	return m, probs, nil
}

// decodeError reads an error member, reporting every deviation from the
// JSON-RPC 2.0 error object (§5.1).
func decodeError(raw json.RawMessage, bad func(string, string, ...any)) *RPCError {
	e := &RPCError{}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		bad(ReqErrorObject, `"error" is %s, want an object with "code" and "message"`, clip(string(raw), 80))
		return e
	}
	if c, ok := obj["code"]; !ok {
		bad(ReqErrorObject, `the error object has no "code"`)
	} else if n, err := strconv.ParseInt(string(bytes.TrimSpace(c)), 10, 64); err != nil {
		bad(ReqErrorObject, `the error "code" is %s, want an integer`, clip(string(c), 40))
	} else {
		e.Code, e.CodeOK = n, true
	}
	if msg, ok := obj["message"]; !ok {
		bad(ReqErrorObject, `the error object has no "message"`)
	} else if err := json.Unmarshal(msg, &e.Message); err != nil {
		bad(ReqErrorObject, `the error "message" is %s, want a string`, clip(string(msg), 60))
	}
	if d, ok := obj["data"]; ok {
		e.Data = d
	}
	return e
}

// IDKey is the canonical form of a JSON-RPC id for matching: a string's
// JSON encoding, an integer's decimal digits, "null". Fractions and other
// types are refused (JSON-RPC 2.0 §4: numbers SHOULD NOT have fractional
// parts; this client only ever sends integers).
func IDKey(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", errors.New("empty id")
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		b, _ := json.Marshal(s)
		return string(b), nil
	case 'n':
		if string(raw) == "null" {
			return "null", nil
		}
	default:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return strconv.FormatInt(n, 10), nil
		}
		var f float64
		if err := json.Unmarshal(raw, &f); err == nil && f == float64(int64(f)) && f < 1<<53 && f > -(1<<53) {
			// 1.0 or 1e0 name the integer 1.
			return strconv.FormatInt(int64(f), 10), nil
		}
	}
	return "", fmt.Errorf("not a string, an integer or null")
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary so a clipped line stays valid UTF-8.
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
