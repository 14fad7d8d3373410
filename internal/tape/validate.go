package tape

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
)

// MaxFindings bounds how many findings Validate keeps, so a hostile tape
// with a million bad records yields a bounded report. Findings past the
// bound are counted in Report.Dropped.
const MaxFindings = 1000

// maxRemembered bounds how many distinct hashes Validate remembers, so
// memory stays bounded on a hostile tape with millions of payloads. Past
// it, repeated payloads are checked again and the unreferenced-file check
// is skipped (with a warning). A variable so tests can lower it.
var maxRemembered = 1 << 20

// Finding is one problem (or, with Warning set, one notice) in a tape.
type Finding struct {
	Line    int   // 1-based line of the record, 0 for sidecar-level findings
	Seq     int64 // the record's seq, or -1
	Code    Code
	Msg     string
	Warning bool
}

func (f Finding) String() string {
	sev := "error"
	if f.Warning {
		sev = "warning"
	}
	loc := ""
	if f.Line > 0 {
		loc = fmt.Sprintf("line %d (seq %d): ", f.Line, f.Seq)
	}
	return fmt.Sprintf("%s: %s: %s%s", sev, f.Code, loc, f.Msg)
}

// Report is what Validate found.
type Report struct {
	Header   Header
	Records  int
	Payloads int // distinct spilled payloads checked in the sidecar
	Findings []Finding
	Dropped  int // findings beyond MaxFindings, counted but not kept
}

// Valid reports whether the tape has no error findings (warnings allowed).
func (r *Report) Valid() bool {
	for _, f := range r.Findings {
		if !f.Warning {
			return false
		}
	}
	return r.Dropped == 0
}

func (r *Report) add(f Finding) {
	if len(r.Findings) >= MaxFindings {
		r.Dropped++
		return
	}
	r.Findings = append(r.Findings, f)
}

// Validate reads the whole tape at path and checks what a loader does not:
// inline payloads hash to their content_hash and stay within
// MaxInlineBytes, every spilled payload is in
// the sidecar with the right length and bytes that hash to its name, seq
// grows strictly, and (as warnings) unknown kinds and unreferenced sidecar
// files. It returns an error, an *Error, only when the tape cannot be read
// at all; problems within a readable tape are Findings.
func Validate(path string) (*Report, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cas := CAS{Dir: CASDir(path)}
	rep := &Report{Header: f.Header()}
	spilled := make(map[string]int64) // hash -> len_bytes of every checked spilled payload
	contents := make(map[string]bool) // file content hashes, which may legitimately sit in the sidecar
	prevSeq := int64(-1)
	forgot := false // a map hit maxRemembered
	remember := func(m map[string]bool, h string) {
		if len(m) < maxRemembered {
			m[h] = true
		} else {
			forgot = true
		}
	}
	for {
		rec, err := f.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return rep, err
		}
		rep.Records++
		at := func(code Code, warn bool, format string, args ...any) {
			rep.add(Finding{Line: f.Line(), Seq: rec.Seq, Code: code, Msg: fmt.Sprintf(format, args...), Warning: warn})
		}
		if rec.Seq <= prevSeq {
			at(CodeSeqOrder, false, "seq %d follows seq %d; want strictly increasing", rec.Seq, prevSeq)
		}
		prevSeq = rec.Seq
		switch b := rec.Body.(type) {
		case *Unknown:
			at(CodeUnknownKind, true, "record kind %q is not part of format version %d; its fields were not checked", clip(b.Name), FormatVersion)
		case *FileRead:
			remember(contents, b.ContentHash)
		case *FileWrite:
			remember(contents, b.ContentHash)
		}
		for _, np := range rec.Payloads() {
			p := np.Payload
			if !p.Spilled {
				if got := Hash([]byte(p.Text)); got != p.Hash {
					at(CodeInlineHash, false, "%s: text hashes to %s, content_hash says %s", np.Field, got, p.Hash)
				}
				if len(p.Text) > MaxInlineBytes {
					at(CodeInlineTooBig, false, "%s: %d bytes inline; a payload over %d bytes (MAX_INLINE_BYTES) spills to the sidecar", np.Field, len(p.Text), MaxInlineBytes)
				}
				continue
			}
			if prev, seen := spilled[p.Hash]; seen {
				if prev != p.Len {
					at(CodeCASCorrupt, false, "%s: len_bytes %d for %s, an earlier record said %d", np.Field, p.Len, p.Hash, prev)
				}
				continue
			}
			if len(spilled) < maxRemembered {
				spilled[p.Hash] = p.Len
			} else {
				forgot = true
			}
			if err := cas.Check(p.Hash, p.Len); err != nil {
				var te *Error
				if errors.As(err, &te) {
					at(te.Code, false, "%s: %s: %s", np.Field, te.Name, te.Msg)
				} else {
					at(CodeIO, false, "%s: %v", np.Field, err)
				}
			}
		}
	}
	rep.Payloads = len(spilled)
	if forgot {
		// Without the full set of references an unreferenced file cannot be
		// told from a referenced one; say so rather than guess.
		rep.add(Finding{Seq: -1, Code: CodeCASUnexpected, Warning: true, Msg: fmt.Sprintf("more than %d distinct hashes: duplicate payloads were re-checked and the sidecar was not searched for unreferenced files", maxRemembered)})
		return rep, nil
	}
	checkSidecar(cas, spilled, contents, rep)
	return rep, nil
}

// checkSidecar looks at files no record referred to. A file named by a
// file_read/file_write content hash is allowed (a producer may keep file
// contents for replay) but must still hash to its name.
func checkSidecar(cas CAS, spilled map[string]int64, contents map[string]bool, rep *Report) {
	entries, err := os.ReadDir(cas.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return // the sidecar is optional
	}
	if err != nil {
		rep.add(Finding{Seq: -1, Code: CodeIO, Msg: err.Error()})
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	for _, e := range entries {
		name := e.Name()
		if _, ok := spilled[name]; ok {
			continue
		}
		if checkHash(name) != nil {
			rep.add(Finding{Seq: -1, Code: CodeCASUnexpected, Warning: true, Msg: fmt.Sprintf("%s: sidecar entry %q is not a BLAKE3 hex name", cas.Dir, clip(name))})
			continue
		}
		if err := cas.Check(name, -1); err != nil {
			var te *Error
			code := CodeIO
			if errors.As(err, &te) {
				code = te.Code
			}
			rep.add(Finding{Seq: -1, Code: code, Msg: err.Error()})
			continue
		}
		if !contents[name] {
			rep.add(Finding{Seq: -1, Code: CodeCASUnexpected, Warning: true, Msg: fmt.Sprintf("%s: no record refers to %s", cas.Dir, name)})
		}
	}
}
