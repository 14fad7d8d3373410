// Package tape reads, writes and checks Harn event tapes: the NDJSON record
// of every non-deterministic input a script consumed during a run, with its
// BLAKE3 content-addressed sidecar (spec 003, "Event tape format").
//
// A tape is a file (conventionally run.tape) whose first line is a header and
// whose following lines are records. Payloads larger than MaxInlineBytes live
// in the sidecar directory <tape>.cas/, one file per distinct payload, named
// by the BLAKE3-256 hex digest of its bytes.
//
// Reading is streaming: Reader yields one record at a time with a bounded line
// length, so callers never hold a whole tape (or any CAS payload) in memory.
package tape

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"lukechampine.com/blake3"
)

// FormatVersion is the newest header version this package understands.
// Tapes with a higher version are refused with a version_unsupported error,
// so a downgrade never silently drops records it cannot interpret.
const FormatVersion = 1

// MaxInlineBytes is the spill threshold: a payload whose raw bytes exceed it
// is written to the CAS sidecar instead of inline.
const MaxInlineBytes = 4 * 1024

// MaxLineBytes bounds one NDJSON line. Inline payloads are at most 4 KiB
// before JSON escaping (at most 6 bytes per input byte) and a record holds
// at most two of them, so honest lines stay far below this; the bound exists
// so a hostile or corrupt file cannot make the reader allocate without limit.
const MaxLineBytes = 4 << 20

// CASSuffix is appended to the tape path to name its sidecar directory.
const CASSuffix = ".cas"

// Header is the first line of every tape.
type Header struct {
	Version         int64
	HarnVersion     string
	StartedAtUnixMs int64
	ScriptPath      string
	Argv            []string
}

// Phase says which part of a run produced a record.
type Phase string

// The phases of spec 003.
const (
	PhaseUserScript      Phase = "user_script"
	PhaseRuntimeFinalize Phase = "runtime_finalize"
)

// Kind names a record kind as written on the wire.
type Kind string

// The record kinds of format version 1, and KindUnknown for kinds a newer
// producer may emit.
const (
	KindClockRead    Kind = "clock_read"
	KindClockSleep   Kind = "clock_sleep"
	KindLLMCall      Kind = "llm_call"
	KindFileRead     Kind = "file_read"
	KindFileWrite    Kind = "file_write"
	KindFileDelete   Kind = "file_delete"
	KindProcessSpawn Kind = "process_spawn"
	KindMCPCall      Kind = "mcp_json_rpc"
	KindUnknown      Kind = "unknown"
)

// Kinds lists the known kinds in a stable order.
var Kinds = []Kind{
	KindClockRead, KindClockSleep, KindLLMCall, KindFileRead, KindFileWrite,
	KindFileDelete, KindProcessSpawn, KindMCPCall,
}

// Record is one captured event: the wrapping fields every record carries,
// and a Body holding the kind-specific fields.
type Record struct {
	Seq           int64
	Phase         Phase
	VirtualTimeMs int64
	MonotonicMs   int64
	Body          Body
}

// Kind returns the record's kind (KindUnknown for kinds this package does
// not know).
func (r Record) Kind() Kind {
	if r.Body == nil {
		return KindUnknown
	}
	return r.Body.Kind()
}

// KindName returns the kind as it appeared on the wire, which for unknown
// kinds is the producer's name rather than "unknown".
func (r Record) KindName() string {
	if u, ok := r.Body.(*Unknown); ok {
		return u.Name
	}
	return string(r.Kind())
}

// Body is the kind-specific part of a record. The concrete types are the
// pointer types below.
type Body interface {
	Kind() Kind
}

// ClockSource says which face of the unified clock a clock_read observed.
type ClockSource string

// The two clock sources of spec 003.
const (
	SourceWall      ClockSource = "wall"
	SourceMonotonic ClockSource = "monotonic"
)

// ClockRead is a now_ms() or monotonic_ms() read.
type ClockRead struct {
	Source  ClockSource
	ValueMs int64
}

// ClockSleep is a sleep(...) or advance_time(...).
type ClockSleep struct {
	DurationMs int64
}

// LLMCall is one intercepted LLM provider call.
type LLMCall struct {
	RequestDigest string
	Response      Payload
}

// FileRead is a read_file(...). The file's content is identified by its
// hash; the bytes themselves are not part of the tape.
type FileRead struct {
	Path        string
	ContentHash string
	LenBytes    int64
}

// FileWrite is a write_file(...) or append_file(...); ContentHash names the
// file's content after the write.
type FileWrite struct {
	Path        string
	ContentHash string
	LenBytes    int64
}

// FileDelete is a remove_file(...).
type FileDelete struct {
	Path string
}

// ProcessSpawn is one sandboxed subprocess invocation.
type ProcessSpawn struct {
	Program    string
	Args       []string
	Cwd        string
	ExitCode   int64
	DurationMs int64
	Stdout     Payload
	Stderr     Payload
}

// MCPCall is one MCP JSON-RPC exchange (kind mcp_json_rpc). The payloads are
// the redacted request and response as the producer wrote them.
type MCPCall struct {
	Server         string
	Method         string
	RequestDigest  string
	ResponseDigest string
	LatencyMs      int64
	Request        Payload
	Response       Payload
}

// Unknown is a record of a kind this package does not know. Name is the
// kind as written; Fields holds every non-envelope field as compact JSON,
// so the record survives a read-write cycle unchanged.
type Unknown struct {
	Name   string
	Fields map[string]json.RawMessage
}

func (*ClockRead) Kind() Kind    { return KindClockRead }
func (*ClockSleep) Kind() Kind   { return KindClockSleep }
func (*LLMCall) Kind() Kind      { return KindLLMCall }
func (*FileRead) Kind() Kind     { return KindFileRead }
func (*FileWrite) Kind() Kind    { return KindFileWrite }
func (*FileDelete) Kind() Kind   { return KindFileDelete }
func (*ProcessSpawn) Kind() Kind { return KindProcessSpawn }
func (*MCPCall) Kind() Kind      { return KindMCPCall }
func (*Unknown) Kind() Kind      { return KindUnknown }

// Payload is a blob carried by a record, either inline (Text) or spilled to
// the CAS sidecar (Spilled, with Len bytes stored under Hash).
type Payload struct {
	// Hash is the lowercase hex BLAKE3-256 digest of the raw bytes.
	Hash    string
	Spilled bool
	// Len is len_bytes of a spilled payload; unused inline.
	Len int64
	// Text holds the bytes of an inline payload.
	Text string
}

// Size is the payload's length in bytes.
func (p Payload) Size() int64 {
	if p.Spilled {
		return p.Len
	}
	return int64(len(p.Text))
}

// Payloads returns the payloads a record carries, with the wire name of the
// field holding each, in a stable order.
func (r Record) Payloads() []NamedPayload {
	switch b := r.Body.(type) {
	case *LLMCall:
		return []NamedPayload{{"response", b.Response}}
	case *ProcessSpawn:
		return []NamedPayload{{"stdout_payload", b.Stdout}, {"stderr_payload", b.Stderr}}
	case *MCPCall:
		return []NamedPayload{{"request_payload", b.Request}, {"response_payload", b.Response}}
	}
	return nil
}

// NamedPayload pairs a payload with its field name.
type NamedPayload struct {
	Field   string
	Payload Payload
}

// Hash returns the lowercase hex BLAKE3-256 digest of b, the content_hash of
// spec 003.
func Hash(b []byte) string {
	sum := blake3.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// hashLen is the length of a hex BLAKE3-256 digest.
const hashLen = 64

// checkHash reports whether s is a lowercase hex BLAKE3-256 digest. Hashes
// become file names in the CAS directory, so anything else (a path
// separator, "..") must be refused before it reaches the file system.
func checkHash(s string) error {
	if len(s) != hashLen {
		return fmt.Errorf("content hash %q has %d characters, want %d lowercase hex", clip(s), len(s), hashLen)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return fmt.Errorf("content hash %q has %q at offset %d, want lowercase hex", clip(s), c, i)
		}
	}
	return nil
}

// clip shortens s for error messages, so a hostile megabyte string does not
// end up in a report.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}
