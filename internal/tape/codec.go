package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"unicode/utf8"
)

// field names a key a line may carry.
type field uint8

const (
	fType field = iota
	fVersion
	fHarnVersion
	fStartedAt
	fScriptPath
	fArgv
	fSeq
	fPhase
	fVirtualTime
	fMonotonic
	fKind
	fSource
	fValueMs
	fDurationMs
	fRequestDigest
	fResponse
	fPath
	fContentHash
	fLenBytes
	fProgram
	fArgs
	fCwd
	fExitCode
	fStdout
	fStderr
	fServer
	fMethod
	fResponseDigest
	fLatencyMs
	fRequestPayload
	fResponsePayload
	numFields
)

var fieldNames = [numFields]string{
	"type", "version", "harn_version", "started_at_unix_ms", "script_path", "argv",
	"seq", "phase", "virtual_time_ms", "monotonic_ms", "kind",
	"source", "value_ms", "duration_ms", "request_digest", "response", "path",
	"content_hash", "len_bytes", "program", "args", "cwd", "exit_code",
	"stdout_payload", "stderr_payload", "server", "method", "response_digest",
	"latency_ms", "request_payload", "response_payload",
}

var fieldIDs = func() map[string]field {
	m := make(map[string]field, numFields)
	for i, n := range fieldNames {
		m[n] = field(i)
	}
	return m
}()

// wireLine is one scanned line: where each known key's value sits. Values
// are interpreted only once the kind is known, so a field this version
// knows, reused with another type by a newer kind, does not break loading
// that kind as unknown. A null value counts as absent.
type wireLine struct {
	line []byte
	span [numFields]span
}

// span locates one value in the line. A string value is decoded while the
// line is scanned and kept in text, so it is not scanned twice.
type span struct {
	start, end int
	isString   bool
	text       []byte
}

// envelope names the fields every record carries; an unknown kind keeps
// all its other fields.
var envelope = map[string]bool{
	"type": true, "seq": true, "phase": true, "virtual_time_ms": true,
	"monotonic_ms": true, "kind": true,
}

func isEnvelope(k string) bool { return envelope[k] }

// fieldError is a decoding problem with one line; the reader adds the name
// and line number.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func badf(format string, args ...any) error {
	return &fieldError{fmt.Sprintf(format, args...)}
}

// decodeLine checks that line is one JSON object and records where each
// known key's value is. A repeated key keeps its last value.
func decodeLine(line []byte, w *wireLine) error {
	w.line = line
	w.span = [numFields]span{}
	s := scanner{b: line}
	if s.peek() != '{' {
		return badf("not valid JSON: want an object")
	}
	err := s.object(func(key []byte) error {
		f, known := fieldIDs[string(key)]
		s.ws()
		start := s.i
		switch {
		case s.null():
			if known {
				w.span[f] = span{}
			}
		case known && s.peek() == '"':
			text, err := s.rawString()
			if err != nil {
				return err
			}
			w.span[f] = span{start: start, end: s.i, isString: true, text: text}
		default:
			if err := s.skip(0); err != nil {
				return err
			}
			if known {
				w.span[f] = span{start: start, end: s.i}
			}
		}
		return nil
	})
	if err == nil {
		err = s.end()
	}
	if err != nil {
		return badf("not valid JSON: %v", err)
	}
	return nil
}

func (w *wireLine) has(f field) bool { return w.span[f].end > 0 }

func (w *wireLine) sub(f field) *scanner {
	return &scanner{b: w.line[:w.span[f].end], i: w.span[f].start}
}

func (w *wireLine) str(kind string, f field) (string, error) {
	if !w.has(f) {
		return "", badf("%s: missing field %q", kind, fieldNames[f])
	}
	if !w.span[f].isString {
		return "", badf("%s: %s: want a string", kind, fieldNames[f])
	}
	return string(w.span[f].text), nil
}

// optStr is str for a field that may be absent or null.
func (w *wireLine) optStr(kind string, f field) (string, error) {
	if !w.has(f) {
		return "", nil
	}
	return w.str(kind, f)
}

func (w *wireLine) int(kind string, f field) (int64, error) {
	if !w.has(f) {
		return 0, badf("%s: missing field %q", kind, fieldNames[f])
	}
	v, err := w.sub(f).int(fieldNames[f])
	if err != nil {
		return 0, badf("%s: %v", kind, err)
	}
	return v, nil
}

func (w *wireLine) nonNegative(kind string, f field) (int64, error) {
	v, err := w.int(kind, f)
	if err == nil && v < 0 {
		err = badf("%s: %s = %d, want >= 0", kind, fieldNames[f], v)
	}
	return v, err
}

func (w *wireLine) strs(kind string, f field) ([]string, error) {
	if !w.has(f) {
		return nil, nil
	}
	v, err := w.sub(f).strings(fieldNames[f])
	if err != nil {
		return nil, badf("%s: %v", kind, err)
	}
	if len(v) == 0 {
		return nil, nil // absent and empty read the same
	}
	return v, nil
}

func (w *wireLine) hash(kind string, f field) (string, error) {
	v, err := w.str(kind, f)
	if err != nil {
		return "", err
	}
	if err := checkHash(v); err != nil {
		return "", badf("%s: %v", kind, err)
	}
	return v, nil
}

func lineType(w *wireLine) string {
	if !w.has(fType) {
		return ""
	}
	t, err := w.str("line", fType)
	if err != nil {
		return ""
	}
	return t
}

// headerFrom checks a decoded header line. The version is checked first:
// a newer header may have changed shape, and the caller must be told about
// the version rather than about a field it does not know.
func headerFrom(w *wireLine) (Header, error) {
	var h Header
	if lineType(w) != "header" {
		return h, badf("first line has type %q, want \"header\"", lineType(w))
	}
	v, err := w.int("header", fVersion)
	if err != nil {
		return h, err
	}
	h.Version = v
	if h.Version < 1 {
		return h, badf("header: version = %d, want >= 1", h.Version)
	}
	if h.Version > FormatVersion {
		return h, nil // the caller turns this into a version error
	}
	// harn_version, started_at_unix_ms and script_path may be null or absent:
	// the upstream producer writes null when a run used the real clock or
	// had no script path.
	if h.HarnVersion, err = w.optStr("header", fHarnVersion); err != nil {
		return h, err
	}
	if w.has(fStartedAt) {
		if h.StartedAtUnixMs, err = w.int("header", fStartedAt); err != nil {
			return h, err
		}
	}
	if h.ScriptPath, err = w.optStr("header", fScriptPath); err != nil {
		return h, err
	}
	if h.Argv, err = w.strs("header", fArgv); err != nil {
		return h, err
	}
	return h, nil
}

// recordFrom builds a Record from a decoded record line.
func recordFrom(w *wireLine) (Record, error) {
	var r Record
	if t := lineType(w); t != "record" {
		if t == "header" {
			return r, badf("second header line; a tape has exactly one header")
		}
		if w.has(fType) && t == "" {
			if _, err := w.str("line", fType); err != nil {
				return r, err
			}
		}
		return r, badf("type = %q, want \"record\"", clip(t))
	}
	var err error
	if r.Seq, err = w.nonNegative("record", fSeq); err != nil {
		return r, err
	}
	if r.VirtualTimeMs, err = w.int("record", fVirtualTime); err != nil {
		return r, err
	}
	if r.MonotonicMs, err = w.int("record", fMonotonic); err != nil {
		return r, err
	}
	kind, err := w.str("record", fKind)
	if err != nil {
		return r, err
	}
	// A missing phase means user_script: the upstream producer defaults it,
	// and tapes written before phases existed have none.
	r.Phase = PhaseUserScript
	if w.has(fPhase) {
		p, err := w.str("record", fPhase)
		if err != nil {
			return r, err
		}
		switch Phase(p) {
		case PhaseUserScript, PhaseRuntimeFinalize:
			r.Phase = Phase(p)
		default:
			return r, badf("phase = %q, want %q or %q", clip(p), PhaseUserScript, PhaseRuntimeFinalize)
		}
	}
	body, err := bodyFrom(w, kind)
	if err != nil {
		return r, err
	}
	r.Body = body
	return r, nil
}

func bodyFrom(w *wireLine, kind string) (Body, error) {
	switch Kind(kind) {
	case KindClockRead:
		src, err := w.str(kind, fSource)
		if err != nil {
			return nil, err
		}
		if ClockSource(src) != SourceWall && ClockSource(src) != SourceMonotonic {
			return nil, badf("clock_read: source = %q, want %q or %q", clip(src), SourceWall, SourceMonotonic)
		}
		v, err := w.int(kind, fValueMs)
		if err != nil {
			return nil, err
		}
		return &ClockRead{Source: ClockSource(src), ValueMs: v}, nil
	case KindClockSleep:
		d, err := w.nonNegative(kind, fDurationMs)
		if err != nil {
			return nil, err
		}
		return &ClockSleep{DurationMs: d}, nil
	case KindLLMCall:
		req, err := w.str(kind, fRequestDigest)
		if err != nil {
			return nil, err
		}
		resp, err := w.payload(kind, fResponse)
		if err != nil {
			return nil, err
		}
		return &LLMCall{RequestDigest: req, Response: resp}, nil
	case KindFileRead, KindFileWrite:
		path, err := w.str(kind, fPath)
		if err != nil {
			return nil, err
		}
		h, err := w.hash(kind, fContentHash)
		if err != nil {
			return nil, err
		}
		n, err := w.nonNegative(kind, fLenBytes)
		if err != nil {
			return nil, err
		}
		if Kind(kind) == KindFileRead {
			return &FileRead{Path: path, ContentHash: h, LenBytes: n}, nil
		}
		return &FileWrite{Path: path, ContentHash: h, LenBytes: n}, nil
	case KindFileDelete:
		path, err := w.str(kind, fPath)
		if err != nil {
			return nil, err
		}
		return &FileDelete{Path: path}, nil
	case KindProcessSpawn:
		return processFrom(w)
	case KindMCPCall:
		return mcpFrom(w)
	}
	return unknownFrom(kind, w.line)
}

func processFrom(w *wireLine) (Body, error) {
	const kind = "process_spawn"
	var p ProcessSpawn
	var err error
	if p.Program, err = w.str(kind, fProgram); err != nil {
		return nil, err
	}
	// args may be absent for a program run without arguments, and cwd is
	// null upstream when the sandbox default was used.
	if p.Args, err = w.strs(kind, fArgs); err != nil {
		return nil, err
	}
	if p.Cwd, err = w.optStr(kind, fCwd); err != nil {
		return nil, err
	}
	if p.ExitCode, err = w.int(kind, fExitCode); err != nil {
		return nil, err
	}
	if p.DurationMs, err = w.nonNegative(kind, fDurationMs); err != nil {
		return nil, err
	}
	if p.Stdout, err = w.payload(kind, fStdout); err != nil {
		return nil, err
	}
	if p.Stderr, err = w.payload(kind, fStderr); err != nil {
		return nil, err
	}
	return &p, nil
}

func mcpFrom(w *wireLine) (Body, error) {
	const kind = "mcp_json_rpc"
	var m MCPCall
	var err error
	for _, f := range []struct {
		dst *string
		id  field
	}{{&m.Server, fServer}, {&m.Method, fMethod}, {&m.RequestDigest, fRequestDigest}, {&m.ResponseDigest, fResponseDigest}} {
		if *f.dst, err = w.str(kind, f.id); err != nil {
			return nil, err
		}
	}
	if m.LatencyMs, err = w.nonNegative(kind, fLatencyMs); err != nil {
		return nil, err
	}
	if m.Request, err = w.payload(kind, fRequestPayload); err != nil {
		return nil, err
	}
	if m.Response, err = w.payload(kind, fResponsePayload); err != nil {
		return nil, err
	}
	return &m, nil
}

// unknownFrom keeps every non-envelope field of a record whose kind this
// version does not know, so it can be reported and written back unchanged.
func unknownFrom(kind string, line []byte) (Body, error) {
	if kind == "" {
		return nil, badf("record: kind is empty")
	}
	u := &Unknown{Name: kind}
	s := scanner{b: line}
	err := s.object(func(key []byte) error {
		s.ws()
		start := s.i
		if err := s.skip(0); err != nil {
			return err
		}
		k := string(key)
		if isEnvelope(k) {
			return nil
		}
		if u.Fields == nil {
			u.Fields = make(map[string]json.RawMessage)
		}
		// Compact so the field reads back byte-equal after a write.
		var buf bytes.Buffer
		if err := json.Compact(&buf, line[start:s.i]); err != nil {
			return badf("%s: field %q: %v", clip(kind), clip(k), err)
		}
		u.Fields[k] = buf.Bytes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return u, nil
}

// payload reads a payload object: {content_hash, text} inline or
// {content_hash, len_bytes} spilled.
func (w *wireLine) payload(kind string, f field) (Payload, error) {
	name := fieldNames[f]
	if !w.has(f) {
		return Payload{}, badf("%s: missing field %q", kind, name)
	}
	sc := w.sub(f)
	if sc.peek() != '{' {
		return Payload{}, badf("%s: %s: want an object", kind, name)
	}
	var hash, text *string
	var size *int64
	err := sc.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "content_hash", "text":
			if sc.null() {
				return nil
			}
			if sc.peek() != '"' {
				return badf("%s: want a string", key)
			}
			var v string
			if v, err = sc.str(); err == nil {
				if string(key) == "text" {
					text = &v
				} else {
					hash = &v
				}
			}
		case "len_bytes":
			if sc.null() {
				return nil
			}
			var v int64
			if v, err = sc.int("len_bytes"); err == nil {
				size = &v
			}
		default:
			err = sc.skip(0)
		}
		return err
	})
	if err != nil {
		return Payload{}, badf("%s: %s: %v", kind, name, err)
	}
	if hash == nil {
		return Payload{}, badf("%s: %s: missing field \"content_hash\"", kind, name)
	}
	if err := checkHash(*hash); err != nil {
		return Payload{}, badf("%s: %s: %v", kind, name, err)
	}
	switch {
	case text != nil:
		// Inline. A len_bytes next to text is redundant; it is accepted
		// only when it agrees, since a disagreement means a broken writer.
		if size != nil && *size != int64(len(*text)) {
			return Payload{}, badf("%s: %s: len_bytes = %d but text has %d bytes", kind, name, *size, len(*text))
		}
		return Payload{Hash: *hash, Text: *text}, nil
	case size != nil:
		if *size < 0 {
			return Payload{}, badf("%s: %s: len_bytes = %d, want >= 0", kind, name, *size)
		}
		return Payload{Hash: *hash, Spilled: true, Len: *size}, nil
	}
	return Payload{}, badf("%s: %s: has neither \"text\" (inline) nor \"len_bytes\" (spilled)", kind, name)
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

// count writes a field the reader requires to be >= 0.
func (e *encoder) count(k string, v int64) {
	if e.err == nil && v < 0 {
		e.err = fmt.Errorf("field %q = %d, want >= 0", k, v)
	}
	e.int(k, v)
}

// hash writes a content hash field, which must be lowercase hex BLAKE3.
func (e *encoder) hash(k, v string) {
	if e.err == nil {
		if err := checkHash(v); err != nil {
			e.err = fmt.Errorf("field %q: %v", k, err)
		}
	}
	e.str(k, v)
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
		sub.count("len_bytes", p.Len)
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
	e.count("seq", r.Seq)
	e.str("phase", string(r.Phase))
	e.int("virtual_time_ms", r.VirtualTimeMs)
	e.int("monotonic_ms", r.MonotonicMs)
	switch b := r.Body.(type) {
	case *ClockRead:
		e.str("kind", string(KindClockRead))
		if b.Source != SourceWall && b.Source != SourceMonotonic {
			return buf, fmt.Errorf("record seq %d: clock_read source %q, want %q or %q", r.Seq, b.Source, SourceWall, SourceMonotonic)
		}
		e.str("source", string(b.Source))
		e.int("value_ms", b.ValueMs)
	case *ClockSleep:
		e.str("kind", string(KindClockSleep))
		e.count("duration_ms", b.DurationMs)
	case *LLMCall:
		e.str("kind", string(KindLLMCall))
		e.str("request_digest", b.RequestDigest)
		e.payload("response", b.Response)
	case *FileRead:
		e.str("kind", string(KindFileRead))
		e.str("path", b.Path)
		e.hash("content_hash", b.ContentHash)
		e.count("len_bytes", b.LenBytes)
	case *FileWrite:
		e.str("kind", string(KindFileWrite))
		e.str("path", b.Path)
		e.hash("content_hash", b.ContentHash)
		e.count("len_bytes", b.LenBytes)
	case *FileDelete:
		e.str("kind", string(KindFileDelete))
		e.str("path", b.Path)
	case *ProcessSpawn:
		e.str("kind", string(KindProcessSpawn))
		e.str("program", b.Program)
		e.strs("args", b.Args)
		e.str("cwd", b.Cwd)
		e.int("exit_code", b.ExitCode)
		e.count("duration_ms", b.DurationMs)
		e.payload("stdout_payload", b.Stdout)
		e.payload("stderr_payload", b.Stderr)
	case *MCPCall:
		e.str("kind", string(KindMCPCall))
		e.str("server", b.Server)
		e.str("method", b.Method)
		e.str("request_digest", b.RequestDigest)
		e.str("response_digest", b.ResponseDigest)
		e.count("latency_ms", b.LatencyMs)
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
			if !utf8.ValidString(k) {
				return buf, fmt.Errorf("record seq %d: unknown record field name %q is not valid UTF-8", r.Seq, k)
			}
			if isEnvelope(k) {
				return buf, fmt.Errorf("record seq %d: unknown record field %q clashes with the envelope", r.Seq, k)
			}
			// Compact, as the reader does, so whitespace inside a value
			// cannot break the one-line-per-record framing.
			var v bytes.Buffer
			if err := json.Compact(&v, b.Fields[k]); err != nil {
				return buf, fmt.Errorf("record seq %d: unknown record field %q is not valid JSON: %v", r.Seq, k, err)
			}
			e.raw(k, v.Bytes())
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
