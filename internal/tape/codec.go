package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// wireLine is every field any line may carry. Pointers tell a missing field
// from a zero value, so the decoder can name the field a producer forgot.
// Fields a kind does not use are ignored, which lets a producer add fields
// without breaking older readers (spec 003: only renames need a bump).
type wireLine struct {
	Type *string `json:"type"`

	Version         *int64    `json:"version"`
	HarnVersion     *string   `json:"harn_version"`
	StartedAtUnixMs *int64    `json:"started_at_unix_ms"`
	ScriptPath      *string   `json:"script_path"`
	Argv            *[]string `json:"argv"`

	Seq           *int64  `json:"seq"`
	Phase         *string `json:"phase"`
	VirtualTimeMs *int64  `json:"virtual_time_ms"`
	MonotonicMs   *int64  `json:"monotonic_ms"`
	Kind          *string `json:"kind"`

	Source          *string      `json:"source"`
	ValueMs         *int64       `json:"value_ms"`
	DurationMs      *int64       `json:"duration_ms"`
	RequestDigest   *string      `json:"request_digest"`
	Response        *wirePayload `json:"response"`
	Path            *string      `json:"path"`
	ContentHash     *string      `json:"content_hash"`
	LenBytes        *int64       `json:"len_bytes"`
	Program         *string      `json:"program"`
	Args            *[]string    `json:"args"`
	Cwd             *string      `json:"cwd"`
	ExitCode        *int64       `json:"exit_code"`
	StdoutPayload   *wirePayload `json:"stdout_payload"`
	StderrPayload   *wirePayload `json:"stderr_payload"`
	Server          *string      `json:"server"`
	Method          *string      `json:"method"`
	ResponseDigest  *string      `json:"response_digest"`
	LatencyMs       *int64       `json:"latency_ms"`
	RequestPayload  *wirePayload `json:"request_payload"`
	ResponsePayload *wirePayload `json:"response_payload"`
}

type wirePayload struct {
	ContentHash *string `json:"content_hash"`
	Text        *string `json:"text"`
	LenBytes    *int64  `json:"len_bytes"`
}

// envelope names the fields every record carries; an unknown kind keeps
// all its other fields.
var envelope = map[string]bool{
	"type": true, "seq": true, "phase": true, "virtual_time_ms": true,
	"monotonic_ms": true, "kind": true,
}

// isEnvelope matches the way encoding/json matches keys to struct fields
// (case-insensitively), so a field kept for an unknown kind can never
// shadow an envelope field when the record is read back.
func isEnvelope(k string) bool {
	for e := range envelope {
		if strings.EqualFold(e, k) {
			return true
		}
	}
	return false
}

// fieldError is a decoding problem with one line; the reader adds the name
// and line number.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func badf(format string, args ...any) error {
	return &fieldError{fmt.Sprintf(format, args...)}
}

// decodeLine parses one line into w. It reports JSON syntax and type errors
// as fieldErrors.
func decodeLine(line []byte, w *wireLine) error {
	*w = wireLine{}
	if err := json.Unmarshal(line, w); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return badf("not valid JSON: %v", err)
		}
		return badf("%v", err)
	}
	return nil
}

func lineType(w *wireLine) string {
	if w.Type == nil {
		return ""
	}
	return *w.Type
}

// headerFrom checks a decoded header line. The version is checked first:
// a newer header may have changed shape, and the caller must be told about
// the version rather than about a field it does not know.
func headerFrom(w *wireLine) (Header, error) {
	var h Header
	if lineType(w) != "header" {
		return h, badf("first line has type %q, want \"header\"", lineType(w))
	}
	if w.Version == nil {
		return h, badf("header: missing field \"version\"")
	}
	h.Version = *w.Version
	if h.Version < 1 {
		return h, badf("header: version = %d, want >= 1", h.Version)
	}
	if h.Version > FormatVersion {
		return h, nil // the caller turns this into a version error
	}
	// harn_version, started_at_unix_ms and script_path may be null or absent:
	// the upstream producer writes null when a run used the real clock or
	// had no script path.
	if w.HarnVersion != nil {
		h.HarnVersion = *w.HarnVersion
	}
	if w.StartedAtUnixMs != nil {
		h.StartedAtUnixMs = *w.StartedAtUnixMs
	}
	if w.ScriptPath != nil {
		h.ScriptPath = *w.ScriptPath
	}
	if w.Argv != nil && len(*w.Argv) > 0 {
		h.Argv = *w.Argv
	}
	return h, nil
}

// recordFrom builds a Record from a decoded record line. line is the raw
// text, needed only to keep the fields of an unknown kind.
func recordFrom(w *wireLine, line []byte) (Record, error) {
	var r Record
	if t := lineType(w); t != "record" {
		if t == "header" {
			return r, badf("second header line; a tape has exactly one header")
		}
		return r, badf("type = %q, want \"record\"", t)
	}
	if err := need(w.Seq, "record", "seq"); err != nil {
		return r, err
	}
	if err := need(w.VirtualTimeMs, "record", "virtual_time_ms"); err != nil {
		return r, err
	}
	if err := need(w.MonotonicMs, "record", "monotonic_ms"); err != nil {
		return r, err
	}
	if err := need(w.Kind, "record", "kind"); err != nil {
		return r, err
	}
	r.Seq, r.VirtualTimeMs, r.MonotonicMs = *w.Seq, *w.VirtualTimeMs, *w.MonotonicMs
	if r.Seq < 0 {
		return r, badf("seq = %d, want >= 0", r.Seq)
	}
	// A missing phase means user_script: the upstream producer defaults it,
	// and tapes written before phases existed have none.
	r.Phase = PhaseUserScript
	if w.Phase != nil {
		switch p := Phase(*w.Phase); p {
		case PhaseUserScript, PhaseRuntimeFinalize:
			r.Phase = p
		default:
			return r, badf("phase = %q, want %q or %q", clip(*w.Phase), PhaseUserScript, PhaseRuntimeFinalize)
		}
	}
	body, err := bodyFrom(w, line)
	if err != nil {
		return r, err
	}
	r.Body = body
	return r, nil
}

func bodyFrom(w *wireLine, line []byte) (Body, error) {
	kind := *w.Kind
	switch Kind(kind) {
	case KindClockRead:
		if err := need(w.Source, kind, "source"); err != nil {
			return nil, err
		}
		if err := need(w.ValueMs, kind, "value_ms"); err != nil {
			return nil, err
		}
		src := ClockSource(*w.Source)
		if src != SourceWall && src != SourceMonotonic {
			return nil, badf("clock_read: source = %q, want %q or %q", clip(*w.Source), SourceWall, SourceMonotonic)
		}
		return &ClockRead{Source: src, ValueMs: *w.ValueMs}, nil
	case KindClockSleep:
		d, err := nonNegative(w.DurationMs, kind, "duration_ms")
		if err != nil {
			return nil, err
		}
		return &ClockSleep{DurationMs: d}, nil
	case KindLLMCall:
		if err := need(w.RequestDigest, kind, "request_digest"); err != nil {
			return nil, err
		}
		resp, err := payloadFrom(w.Response, kind, "response")
		if err != nil {
			return nil, err
		}
		return &LLMCall{RequestDigest: *w.RequestDigest, Response: resp}, nil
	case KindFileRead, KindFileWrite:
		if err := need(w.Path, kind, "path"); err != nil {
			return nil, err
		}
		if err := need(w.ContentHash, kind, "content_hash"); err != nil {
			return nil, err
		}
		if err := checkHash(*w.ContentHash); err != nil {
			return nil, badf("%s: %v", kind, err)
		}
		n, err := nonNegative(w.LenBytes, kind, "len_bytes")
		if err != nil {
			return nil, err
		}
		if Kind(kind) == KindFileRead {
			return &FileRead{Path: *w.Path, ContentHash: *w.ContentHash, LenBytes: n}, nil
		}
		return &FileWrite{Path: *w.Path, ContentHash: *w.ContentHash, LenBytes: n}, nil
	case KindFileDelete:
		if err := need(w.Path, kind, "path"); err != nil {
			return nil, err
		}
		return &FileDelete{Path: *w.Path}, nil
	case KindProcessSpawn:
		return processFrom(w)
	case KindMCPCall:
		return mcpFrom(w)
	}
	return unknownFrom(kind, line)
}

func processFrom(w *wireLine) (Body, error) {
	const kind = "process_spawn"
	if err := need(w.Program, kind, "program"); err != nil {
		return nil, err
	}
	if err := need(w.ExitCode, kind, "exit_code"); err != nil {
		return nil, err
	}
	d, err := nonNegative(w.DurationMs, kind, "duration_ms")
	if err != nil {
		return nil, err
	}
	out, err := payloadFrom(w.StdoutPayload, kind, "stdout_payload")
	if err != nil {
		return nil, err
	}
	errp, err := payloadFrom(w.StderrPayload, kind, "stderr_payload")
	if err != nil {
		return nil, err
	}
	p := &ProcessSpawn{Program: *w.Program, ExitCode: *w.ExitCode, DurationMs: d, Stdout: out, Stderr: errp}
	// args may be absent for a program run without arguments, and cwd is
	// null upstream when the sandbox default was used.
	if w.Args != nil && len(*w.Args) > 0 {
		p.Args = *w.Args
	}
	if w.Cwd != nil {
		p.Cwd = *w.Cwd
	}
	return p, nil
}

func mcpFrom(w *wireLine) (Body, error) {
	const kind = "mcp_json_rpc"
	for _, f := range []struct {
		v    *string
		name string
	}{{w.Server, "server"}, {w.Method, "method"}, {w.RequestDigest, "request_digest"}, {w.ResponseDigest, "response_digest"}} {
		if err := need(f.v, kind, f.name); err != nil {
			return nil, err
		}
	}
	lat, err := nonNegative(w.LatencyMs, kind, "latency_ms")
	if err != nil {
		return nil, err
	}
	req, err := payloadFrom(w.RequestPayload, kind, "request_payload")
	if err != nil {
		return nil, err
	}
	resp, err := payloadFrom(w.ResponsePayload, kind, "response_payload")
	if err != nil {
		return nil, err
	}
	return &MCPCall{
		Server: *w.Server, Method: *w.Method,
		RequestDigest: *w.RequestDigest, ResponseDigest: *w.ResponseDigest,
		LatencyMs: lat, Request: req, Response: resp,
	}, nil
}

// unknownFrom keeps every non-envelope field of a record whose kind this
// version does not know, so it can be reported and written back unchanged.
func unknownFrom(kind string, line []byte) (Body, error) {
	if kind == "" {
		return nil, badf("record: kind is empty")
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(line, &all); err != nil {
		return nil, badf("%v", err)
	}
	u := &Unknown{Name: kind}
	for k, v := range all {
		if isEnvelope(k) {
			continue
		}
		if u.Fields == nil {
			u.Fields = make(map[string]json.RawMessage)
		}
		// Compact so the field reads back byte-equal after a write.
		var buf bytes.Buffer
		if err := json.Compact(&buf, v); err != nil {
			return nil, badf("%s: field %q: %v", clip(kind), clip(k), err)
		}
		u.Fields[k] = buf.Bytes()
	}
	return u, nil
}

func payloadFrom(p *wirePayload, kind, field string) (Payload, error) {
	if p == nil {
		return Payload{}, badf("%s: missing field %q", kind, field)
	}
	if p.ContentHash == nil {
		return Payload{}, badf("%s: %s: missing field \"content_hash\"", kind, field)
	}
	if err := checkHash(*p.ContentHash); err != nil {
		return Payload{}, badf("%s: %s: %v", kind, field, err)
	}
	switch {
	case p.Text != nil:
		// Inline. A len_bytes next to text is redundant; it is accepted
		// only when it agrees, since a disagreement means a broken writer.
		if p.LenBytes != nil && *p.LenBytes != int64(len(*p.Text)) {
			return Payload{}, badf("%s: %s: len_bytes = %d but text has %d bytes", kind, field, *p.LenBytes, len(*p.Text))
		}
		return Payload{Hash: *p.ContentHash, Text: *p.Text}, nil
	case p.LenBytes != nil:
		if *p.LenBytes < 0 {
			return Payload{}, badf("%s: %s: len_bytes = %d, want >= 0", kind, field, *p.LenBytes)
		}
		return Payload{Hash: *p.ContentHash, Spilled: true, Len: *p.LenBytes}, nil
	}
	return Payload{}, badf("%s: %s: has neither \"text\" (inline) nor \"len_bytes\" (spilled)", kind, field)
}

func need[T any](v *T, kind, field string) error {
	if v == nil {
		return badf("%s: missing field %q", kind, field)
	}
	return nil
}

func nonNegative(v *int64, kind, field string) (int64, error) {
	if v == nil {
		return 0, badf("%s: missing field %q", kind, field)
	}
	if *v < 0 {
		return 0, badf("%s: %s = %d, want >= 0", kind, field, *v)
	}
	return *v, nil
}

// encoder appends one JSON object with fields in a fixed order, so equal
// records always serialize to equal bytes.
type encoder struct {
	buf   []byte
	first bool
	err   error
}

func (e *encoder) begin() { e.buf = append(e.buf, '{'); e.first = true }
func (e *encoder) end()   { e.buf = append(e.buf, '}') }

func (e *encoder) key(k string) {
	if !e.first {
		e.buf = append(e.buf, ',')
	}
	e.first = false
	e.buf = appendString(e.buf, k)
	e.buf = append(e.buf, ':')
}

func (e *encoder) str(k, v string) {
	if e.err == nil && !utf8.ValidString(v) {
		e.err = fmt.Errorf("field %q is not valid UTF-8", k)
	}
	e.key(k)
	e.buf = appendString(e.buf, v)
}

func (e *encoder) int(k string, v int64) {
	e.key(k)
	e.buf = strconv.AppendInt(e.buf, v, 10)
}

func (e *encoder) strs(k string, vs []string) {
	e.key(k)
	e.buf = append(e.buf, '[')
	for i, v := range vs {
		if e.err == nil && !utf8.ValidString(v) {
			e.err = fmt.Errorf("field %q item %d is not valid UTF-8", k, i)
		}
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		e.buf = appendString(e.buf, v)
	}
	e.buf = append(e.buf, ']')
}

func (e *encoder) raw(k string, v json.RawMessage) {
	e.key(k)
	e.buf = append(e.buf, v...)
}

func (e *encoder) payload(k string, p Payload) {
	if e.err == nil {
		if err := checkHash(p.Hash); err != nil {
			e.err = fmt.Errorf("field %q: %v", k, err)
		}
	}
	e.key(k)
	sub := encoder{buf: e.buf}
	sub.begin()
	sub.str("content_hash", p.Hash)
	if p.Spilled {
		sub.int("len_bytes", p.Len)
	} else {
		sub.str("text", p.Text)
	}
	sub.end()
	e.buf = sub.buf
	if e.err == nil {
		e.err = sub.err
	}
}

// appendHeader appends the header line (without newline).
func appendHeader(buf []byte, h Header) ([]byte, error) {
	e := encoder{buf: buf}
	e.begin()
	e.str("type", "header")
	e.int("version", h.Version)
	e.str("harn_version", h.HarnVersion)
	e.int("started_at_unix_ms", h.StartedAtUnixMs)
	e.str("script_path", h.ScriptPath)
	e.strs("argv", h.Argv)
	e.end()
	return e.buf, e.err
}

// appendRecord appends one record line (without newline).
func appendRecord(buf []byte, r Record) ([]byte, error) {
	switch r.Phase {
	case PhaseUserScript, PhaseRuntimeFinalize:
	default:
		return buf, fmt.Errorf("record seq %d: phase %q, want %q or %q", r.Seq, r.Phase, PhaseUserScript, PhaseRuntimeFinalize)
	}
	if r.Body == nil {
		return buf, fmt.Errorf("record seq %d: no body", r.Seq)
	}
	e := encoder{buf: buf}
	e.begin()
	e.str("type", "record")
	e.int("seq", r.Seq)
	e.str("phase", string(r.Phase))
	e.int("virtual_time_ms", r.VirtualTimeMs)
	e.int("monotonic_ms", r.MonotonicMs)
	switch b := r.Body.(type) {
	case *ClockRead:
		e.str("kind", string(KindClockRead))
		e.str("source", string(b.Source))
		e.int("value_ms", b.ValueMs)
	case *ClockSleep:
		e.str("kind", string(KindClockSleep))
		e.int("duration_ms", b.DurationMs)
	case *LLMCall:
		e.str("kind", string(KindLLMCall))
		e.str("request_digest", b.RequestDigest)
		e.payload("response", b.Response)
	case *FileRead:
		e.str("kind", string(KindFileRead))
		e.str("path", b.Path)
		e.str("content_hash", b.ContentHash)
		e.int("len_bytes", b.LenBytes)
	case *FileWrite:
		e.str("kind", string(KindFileWrite))
		e.str("path", b.Path)
		e.str("content_hash", b.ContentHash)
		e.int("len_bytes", b.LenBytes)
	case *FileDelete:
		e.str("kind", string(KindFileDelete))
		e.str("path", b.Path)
	case *ProcessSpawn:
		e.str("kind", string(KindProcessSpawn))
		e.str("program", b.Program)
		e.strs("args", b.Args)
		e.str("cwd", b.Cwd)
		e.int("exit_code", b.ExitCode)
		e.int("duration_ms", b.DurationMs)
		e.payload("stdout_payload", b.Stdout)
		e.payload("stderr_payload", b.Stderr)
	case *MCPCall:
		e.str("kind", string(KindMCPCall))
		e.str("server", b.Server)
		e.str("method", b.Method)
		e.str("request_digest", b.RequestDigest)
		e.str("response_digest", b.ResponseDigest)
		e.int("latency_ms", b.LatencyMs)
		e.payload("request_payload", b.Request)
		e.payload("response_payload", b.Response)
	case *Unknown:
		if isKnown(b.Name) || b.Name == "" {
			return buf, fmt.Errorf("record seq %d: unknown record needs the producer's kind name, got %q", r.Seq, b.Name)
		}
		e.str("kind", b.Name)
		keys := make([]string, 0, len(b.Fields))
		for k := range b.Fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if isEnvelope(k) {
				return buf, fmt.Errorf("record seq %d: unknown record field %q clashes with the envelope", r.Seq, k)
			}
			if !json.Valid(b.Fields[k]) {
				return buf, fmt.Errorf("record seq %d: unknown record field %q is not valid JSON", r.Seq, k)
			}
			e.raw(k, b.Fields[k])
		}
	default:
		return buf, fmt.Errorf("record seq %d: unsupported body type %T", r.Seq, r.Body)
	}
	e.end()
	if e.err != nil {
		return buf, fmt.Errorf("record seq %d (%s): %v", r.Seq, r.KindName(), e.err)
	}
	return e.buf, nil
}

func isKnown(name string) bool {
	for _, k := range Kinds {
		if string(k) == name {
			return true
		}
	}
	return false
}

// appendString appends s as a JSON string. Unlike encoding/json it leaves
// <, > and & alone, so tapes stay readable in a terminal.
func appendString(buf []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c == '\n':
			buf = append(buf, '\\', 'n')
		case c == '\r':
			buf = append(buf, '\\', 'r')
		case c == '\t':
			buf = append(buf, '\\', 't')
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}
