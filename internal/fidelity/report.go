package fidelity

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// Schema is the marker every report carries in its "schema" field; the
// JSON Schema is fixtures/schemas/fidelity-report.v1.schema.json.
const Schema = "conform-fidelity-report/v1"

// Status is a report's verdict.
type Status string

// The three verdicts. The command line maps them to exit codes 0, 2 and 3.
const (
	StatusEqual    Status = "equal"
	StatusDiverged Status = "diverged"
	StatusError    Status = "error" // an input could not be read
)

// Category is a stable tag for one kind of divergence. Tags are never
// renamed or reused.
type Category string

// Record-by-record categories (byte-identical, semantic, phase-aware).
const (
	MissingRecord       Category = "missing_record"        // A has a record at this position, B has ended
	ExtraRecord         Category = "extra_record"          // B has a record at this position, A has ended
	KindMismatch        Category = "kind_mismatch"         // the aligned records are of different kinds
	PhaseMismatch       Category = "phase_mismatch"        // same kind, different phase
	SeqMismatch         Category = "seq_mismatch"          // byte-identical only: different seq
	TimingDrift         Category = "timing_drift"          // byte-identical only: virtual_time_ms, monotonic_ms, duration_ms of a process, latency_ms of an MCP call
	PayloadHashMismatch Category = "payload_hash_mismatch" // a content hash or digest differs
	FieldMismatch       Category = "field_mismatch"        // any other kind field differs (path, args, exit_code, clock value, ...)
	UnknownKind         Category = "unknown_kind"          // a record kind this checker does not know; it cannot be compared
)

// Outcome categories.
const (
	WriteSetMismatch     Category = "write_set_mismatch"      // a path's final state (content hash or deleted) differs
	ExitStatusMismatch   Category = "exit_status_mismatch"    // the last process_spawn's exit code differs, or only one tape spawned
	LLMCallCountMismatch Category = "llm_call_count_mismatch" // the number of llm_call records differs
)

// Input categories: the comparison could not run to the end.
const (
	VersionUnsupported Category = "version_unsupported" // a tape's header version is newer than this checker supports
	UnreadableInput    Category = "unreadable_input"    // a tape could not be opened or parsed (the message names the line and the tape error code)
)

// Categories lists every category, in the order documented.
var Categories = []Category{
	MissingRecord, ExtraRecord, KindMismatch, PhaseMismatch, SeqMismatch, TimingDrift,
	PayloadHashMismatch, FieldMismatch, UnknownKind,
	WriteSetMismatch, ExitStatusMismatch, LLMCallCountMismatch,
	VersionUnsupported, UnreadableInput,
}

// Report is a FidelityReport: the result of comparing tape A (the
// reference, usually the recorded run) with tape B (usually the replay).
type Report struct {
	Schema          string           `json:"schema"`
	Mode            Mode             `json:"mode"`
	Status          Status           `json:"status"`
	A               Input            `json:"a"`
	B               Input            `json:"b"`
	Compared        int              `json:"compared"`
	DivergenceCount int              `json:"divergence_count"`
	ByCategory      map[Category]int `json:"by_category"`
	// Truncated is set when more divergences were found than the report
	// keeps; DivergenceCount and ByCategory still count all of them.
	Truncated   bool         `json:"truncated"`
	Divergences []Divergence `json:"divergences"`
}

// Input describes one compared tape.
type Input struct {
	Name        string `json:"name"`
	Version     int64  `json:"version,omitempty"`
	HarnVersion string `json:"harn_version,omitempty"`
	// Records is how many records were read (all phases), and Unknown how
	// many of them were of an unknown kind.
	Records int `json:"records"`
	Unknown int `json:"unknown_records"`
}

// Divergence is one difference between the tapes.
type Divergence struct {
	Category Category `json:"category"`
	// Stream names the compared sequence: "all", or in phase-aware mode
	// "user_script" or "runtime_finalize".
	Stream string `json:"stream,omitempty"`
	// Index is the 0-based position in that stream at which the records
	// were aligned. Absent for outcome facets and input errors.
	Index *int `json:"index,omitempty"`
	// Field is the wire name of the differing field ("response.content_hash",
	// "virtual_time_ms"), or for a write set divergence the file path.
	Field string `json:"field,omitempty"`
	// Input is "a" or "b" for a divergence about one input only: an
	// unreadable tape, an unsupported version, an unknown record in the
	// outcome mode.
	Input   string `json:"input,omitempty"`
	A       *Side  `json:"a,omitempty"`
	B       *Side  `json:"b,omitempty"`
	Message string `json:"message"`
}

// Side locates the record on one side of a divergence and, when a field
// differs, carries that side's value.
type Side struct {
	Seq   int64  `json:"seq"`
	Line  int    `json:"line"`
	Kind  string `json:"kind"`
	Phase string `json:"phase"`
	Value any    `json:"value,omitempty"`
}

// Summary returns one line stating the verdict and counts.
func (r *Report) Summary() string {
	switch r.Status {
	case StatusEqual:
		return fmt.Sprintf("%s: equal (%d aligned records compared; A %d records, B %d records)", r.Mode, r.Compared, r.A.Records, r.B.Records)
	case StatusError:
		return fmt.Sprintf("%s: error: could not compare %s and %s", r.Mode, r.A.Name, r.B.Name)
	}
	return fmt.Sprintf("%s: %d divergence(s) (%d aligned records compared; A %d records, B %d records)", r.Mode, r.DivergenceCount, r.Compared, r.A.Records, r.B.Records)
}

// Source is a tape the oracle can open, possibly more than once (the
// phase-aware mode reads each tape once per phase, which keeps memory
// independent of tape length).
type Source struct {
	Name string
	Open func() (io.ReadCloser, error)
}

// Memory returns a Source over a tape held in memory, for a suite that
// records a run into a buffer.
func Memory(name string, data []byte) Source {
	return Source{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
}

// File returns a Source reading the tape at path.
func File(path string) Source {
	return Source{Name: path, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
}
