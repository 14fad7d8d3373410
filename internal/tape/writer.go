package tape

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode/utf8"
)

// Writer writes a tape: the header at creation, then one record per Write.
// It is not safe for concurrent use; a recorder fed from several
// goroutines must serialise its calls (seq order is the recorder's to
// decide anyway).
type Writer struct {
	bw     *bufio.Writer
	f      *os.File // set when the Writer owns the file
	cas    *CAS
	stored map[string]bool // hashes already in the CAS, so a shared payload is written once
	buf    []byte
	err    error
}

// NewWriter writes the header to w and returns a Writer for the records.
// cas may be nil for a tape that never spills; Payload then fails for a
// payload that would have to. A zero h.Version means FormatVersion.
func NewWriter(w io.Writer, cas *CAS, h Header) (*Writer, error) {
	if h.Version == 0 {
		h.Version = FormatVersion
	}
	if h.Version < 0 {
		return nil, fmt.Errorf("header version %d, want >= 1", h.Version)
	}
	tw := &Writer{bw: bufio.NewWriterSize(w, 64<<10), cas: cas, stored: make(map[string]bool)}
	line, err := appendHeader(nil, h)
	if err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	if err := tw.writeLine(line); err != nil {
		return nil, err
	}
	return tw, nil
}

// Create creates (or truncates) the tape file at path, with its sidecar at
// CASDir(path). The sidecar directory appears only if a payload spills.
func Create(path string, h Header) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(f, &CAS{Dir: CASDir(path)}, h)
	if err != nil {
		f.Close()
		return nil, err
	}
	w.f = f
	return w, nil
}

// Payload turns raw bytes into a record payload: inline when at most
// MaxInlineBytes of valid UTF-8, otherwise spilled to the CAS. Binary
// payloads always spill because the inline form is a JSON string, which
// cannot carry arbitrary bytes losslessly.
func (w *Writer) Payload(b []byte) (Payload, error) {
	if len(b) <= MaxInlineBytes && utf8.Valid(b) {
		return Payload{Hash: Hash(b), Text: string(b)}, nil
	}
	if w.cas == nil {
		return Payload{}, fmt.Errorf("payload of %d bytes must spill, but the writer has no CAS sidecar", len(b))
	}
	h := Hash(b)
	if !w.stored[h] {
		if _, err := w.cas.Put(b); err != nil {
			return Payload{}, fmt.Errorf("store payload %s: %w", h, err)
		}
		w.stored[h] = true
	}
	return Payload{Hash: h, Spilled: true, Len: int64(len(b))}, nil
}

// Write appends one record.
func (w *Writer) Write(r Record) error {
	if w.err != nil {
		return w.err
	}
	line, err := appendRecord(w.buf[:0], r)
	if err != nil {
		return err // the record was refused; the tape is still consistent
	}
	w.buf = line
	return w.writeLine(line)
}

func (w *Writer) writeLine(line []byte) error {
	if len(line) > MaxLineBytes {
		return fmt.Errorf("line of %d bytes is longer than the %d a reader accepts", len(line), MaxLineBytes)
	}
	if _, err := w.bw.Write(line); err != nil {
		w.err = err
		return err
	}
	if err := w.bw.WriteByte('\n'); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Close flushes the tape and, for a Writer from Create, closes the file.
func (w *Writer) Close() error {
	err := w.bw.Flush()
	if w.err != nil {
		err = w.err
	}
	if w.f != nil {
		err = errors.Join(err, w.f.Close())
		w.f = nil
	}
	return err
}

// WriteTape writes a whole in-memory tape to w. Spilled payloads are
// written as references only; their bytes must already be in the CAS.
func WriteTape(w io.Writer, t *Tape) error {
	tw, err := NewWriter(w, nil, t.Header)
	if err != nil {
		return err
	}
	for _, r := range t.Records {
		if err := tw.Write(r); err != nil {
			return err
		}
	}
	return tw.Close()
}
