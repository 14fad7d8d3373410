package tape

import "fmt"

// Code is a stable tag naming what is wrong with a tape. Codes appear in
// reports and on the command line; they are never renamed.
type Code string

// Codes for tapes that cannot be read.
const (
	CodeVersionUnsupported Code = "version_unsupported" // header version newer than FormatVersion
	CodeMissingHeader      Code = "missing_header"      // empty file or first line not a header
	CodeMalformed          Code = "malformed_line"      // a line that is not a valid header or record
	CodeTornLine           Code = "torn_line"           // last line cut short (no newline, not valid JSON)
	CodeLineTooLong        Code = "line_too_long"       // a line longer than MaxLineBytes
	CodeIO                 Code = "io_error"            // the file system refused
)

// Codes for problems Validate finds in a tape that can be read.
const (
	CodeCASMissing    Code = "cas_missing"          // a spilled payload's file is absent
	CodeCASCorrupt    Code = "cas_corrupt"          // a CAS file's bytes do not match its name or the record
	CodeInlineHash    Code = "inline_hash_mismatch" // an inline payload's text does not hash to its content_hash
	CodeInlineTooBig  Code = "inline_too_large"     // an inline payload over MaxInlineBytes, which spec 003 spills
	CodeSeqOrder      Code = "seq_not_increasing"   // seq did not grow from one record to the next
	CodeUnknownKind   Code = "unknown_kind"         // a record kind this version does not know (a warning)
	CodeCASUnexpected Code = "cas_unreferenced"     // a sidecar file no record refers to (a warning)
)

// Requirement is the registry id (spec 003, internal/requirements/tapes.yaml)
// a finding or reading error of this code is about, or "" for a limit of
// this reader (line_too_long, io_error) or a notice that breaks nothing
// (cas_unreferenced). version_unsupported names the loaders' rule the
// refusal keeps, not a fault of the tape.
func (c Code) Requirement() string {
	switch c {
	case CodeMissingHeader, CodeMalformed, CodeTornLine:
		return "RPLY-TAPE-001"
	case CodeSeqOrder:
		return "RPLY-TAPE-002"
	case CodeUnknownKind:
		return "RPLY-TAPE-004"
	case CodeCASMissing, CodeInlineTooBig:
		return "RPLY-TAPE-005"
	case CodeInlineHash, CodeCASCorrupt:
		return "RPLY-TAPE-006"
	case CodeVersionUnsupported:
		return "RPLY-ORACLE-001"
	}
	return ""
}

// Error is a structured failure to read a tape. Use errors.As to get it.
type Error struct {
	Name string // the tape's name, usually its path
	Line int    // 1-based line number, or 0 when the error is not about a line
	Code Code
	Msg  string
	// Version and Supported are set for CodeVersionUnsupported.
	Version, Supported int64
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s: %s", e.Name, e.Line, e.Code, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Name, e.Code, e.Msg)
}
