package tape

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
)

// Reader streams the records of one tape. It holds one line at a time.
type Reader struct {
	name   string
	br     *bufio.Reader
	line   int // number of the line last read
	buf    []byte
	w      wireLine
	header Header
	err    error // sticky: once reading failed, every Next returns it
}

// NewReader reads and checks the header of the tape in r. name is used in
// errors. A header version newer than FormatVersion is refused with an
// *Error of code CodeVersionUnsupported.
func NewReader(r io.Reader, name string) (*Reader, error) {
	tr := &Reader{name: name, br: bufio.NewReaderSize(r, 64<<10)}
	line, complete, err := tr.readLine()
	if err == io.EOF {
		return nil, tr.fail(0, CodeMissingHeader, "empty tape: want a header line first")
	}
	if err != nil {
		return nil, err
	}
	if err := decodeLine(line, &tr.w); err != nil {
		code := CodeMalformed
		if !complete {
			code = CodeTornLine
		}
		return nil, tr.fail(tr.line, code, "header: "+err.Error())
	}
	if t := lineType(&tr.w); t != "header" {
		return nil, tr.fail(tr.line, CodeMissingHeader, fmt.Sprintf("first line has type %q: want a header line first", clip(t)))
	}
	h, err := headerFrom(&tr.w)
	if err != nil {
		return nil, tr.fail(tr.line, CodeMalformed, err.Error())
	}
	if h.Version > FormatVersion {
		e := &Error{
			Name: name, Line: tr.line, Code: CodeVersionUnsupported,
			Msg:     fmt.Sprintf("tape format version %d is newer than the supported version %d; refusing to read it rather than drop what this version cannot interpret", h.Version, FormatVersion),
			Version: h.Version, Supported: FormatVersion,
		}
		tr.err = e
		return nil, e
	}
	tr.header = h
	return tr, nil
}

// Header returns the tape's header.
func (r *Reader) Header() Header { return r.header }

// Name returns the name the reader was opened with.
func (r *Reader) Name() string { return r.name }

// Line returns the 1-based line number of the record Next last returned.
func (r *Reader) Line() int { return r.line }

// Next returns the next record, or io.EOF after the last one. Any other
// error is an *Error naming the line.
func (r *Reader) Next() (Record, error) {
	if r.err != nil {
		return Record{}, r.err
	}
	line, complete, err := r.readLine()
	if err != nil {
		if err == io.EOF {
			r.err = io.EOF
		}
		return Record{}, err
	}
	if err := decodeLine(line, &r.w); err != nil {
		if !complete {
			return Record{}, r.fail(r.line, CodeTornLine, "last line has no newline and does not parse (was the recorder interrupted?): "+err.Error())
		}
		return Record{}, r.fail(r.line, CodeMalformed, err.Error())
	}
	rec, err := recordFrom(&r.w)
	if err != nil {
		return Record{}, r.fail(r.line, CodeMalformed, err.Error())
	}
	return rec, nil
}

// readLine returns the next non-blank line without its line ending, and
// whether it ended with a newline. The returned slice is valid until the
// next call.
func (r *Reader) readLine() (line []byte, complete bool, err error) {
	for {
		line, complete, err = r.readRawLine()
		if err != nil {
			return nil, false, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			return line, complete, nil
		}
	}
}

func (r *Reader) readRawLine() ([]byte, bool, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > MaxLineBytes+1 {
			return nil, false, r.fail(r.line+1, CodeLineTooLong, fmt.Sprintf("line is longer than %d bytes", MaxLineBytes))
		}
		switch {
		case err == nil:
			r.line++
			var line []byte
			if len(r.buf) == 0 {
				line = chunk // common case: no copy
			} else {
				r.buf = append(r.buf, chunk...)
				line = r.buf
			}
			return trimEOL(line), true, nil
		case errors.Is(err, bufio.ErrBufferFull):
			r.buf = append(r.buf, chunk...)
		case err == io.EOF:
			r.buf = append(r.buf, chunk...)
			if len(r.buf) == 0 {
				return nil, false, io.EOF
			}
			r.line++
			return trimEOL(r.buf), false, nil
		default:
			return nil, false, r.fail(r.line+1, CodeIO, err.Error())
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte{'\n'})
	return bytes.TrimSuffix(b, []byte{'\r'})
}

func (r *Reader) fail(line int, code Code, msg string) error {
	e := &Error{Name: r.name, Line: line, Code: code, Msg: msg}
	r.err = e
	return e
}

// File is a Reader over a tape file on disk.
type File struct {
	*Reader
	f *os.File
}

// Open opens the tape at path and reads its header.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Name: path, Code: CodeIO, Msg: err.Error()}
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	return &File{Reader: r, f: f}, nil
}

// Close closes the file.
func (f *File) Close() error { return f.f.Close() }

// Tape is a whole tape in memory: for tests, fixtures and small tapes.
// Comparing and validating stream instead.
type Tape struct {
	Header  Header
	Records []Record
}

// Read reads a whole tape from r.
func Read(r io.Reader, name string) (*Tape, error) {
	tr, err := NewReader(r, name)
	if err != nil {
		return nil, err
	}
	t := &Tape{Header: tr.Header()}
	for {
		rec, err := tr.Next()
		if err == io.EOF {
			return t, nil
		}
		if err != nil {
			return nil, err
		}
		t.Records = append(t.Records, rec)
	}
}

// Load reads the whole tape file at path.
func Load(path string) (*Tape, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &Error{Name: path, Code: CodeIO, Msg: err.Error()}
	}
	defer f.Close()
	return Read(f, path)
}

// CASDir returns the sidecar directory of the tape at path.
func CASDir(path string) string { return path + CASSuffix }
