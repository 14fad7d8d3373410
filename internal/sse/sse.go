// Package sse reads a text/event-stream exactly as the WHATWG HTML Living Standard
// ("Server-sent events", § Interpreting an event stream) says a browser does, but
// returns every block raw, with comments, id-only and unknown-field blocks kept, so
// a conformance checker sees what a server really sent.
package sse

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Field is one `name:value` line of a block. Value has the one optional leading
// space removed but is otherwise the bytes received (not UTF-8 repaired).
type Field struct{ Name, Value string }

// Frame is one block of the stream, terminated by a blank line.
type Frame struct {
	Fields      []Field       // every field line of the block, in order, raw (including unknown ones)
	Comments    []string      // comment lines' text (without the leading ':'), in order
	ID          string        // value of the last valid `id` field in this block (if HasID)
	HasID       bool          // this block carried a valid `id` field (one without NUL)
	LastEventID string        // the stream's last-event-id buffer after this block
	Event       string        // value of `event`, "" if absent (a browser would use "message")
	Data        string        // joined data buffer, trailing LF removed
	HasData     bool          // at least one data field (a browser would dispatch this block)
	Retry       time.Duration // valid retry value, if HasRetry
	HasRetry    bool
	Raw         []byte    // the block's bytes as received, line ends included (see Reader)
	ArrivedAt   time.Time // when the block's terminating blank line was read
}

// Options bound what a Reader accepts. Zero values take the defaults.
type Options struct {
	MaxLineBytes  int              // 0 = 1 MiB; a longer line is a *LimitError
	MaxFrameBytes int              // 0 = 4 MiB; a longer block is a *LimitError
	Now           func() time.Time // nil = time.Now
}

// LimitError reports a line or block larger than the Reader allows. Nothing
// beyond the limit is buffered, so a hostile stream cannot grow memory.
type LimitError struct {
	Limit  string // "MaxLineBytes" or "MaxFrameBytes"
	Max    int    // the limit in bytes
	Offset int64  // stream offset of the first byte beyond the limit
}

func (e *LimitError) Error() string {
	what := "line"
	if e.Limit == "MaxFrameBytes" {
		what = "block"
	}
	return fmt.Sprintf("sse: %s longer than %s (%d bytes) at stream offset %d", what, e.Limit, e.Max, e.Offset)
}

// TruncatedError reports a stream that ended inside a block. WHATWG discards such
// a block; the checker gets its bytes so it can say "stream ended mid-frame".
type TruncatedError struct {
	Raw []byte // the unterminated block's bytes
	Err error  // io.ErrUnexpectedEOF at end of stream, else the read error
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("sse: stream ended inside a block after %d bytes without its blank line: %v", len(e.Raw), e.Err)
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// Reader parses an event stream block by block.
//
// Raw bytes: the concatenated Raw of all frames is the stream as received, except
// when a block ends with a CR whose LF had not yet arrived: the reader must not wait
// for it (a browser dispatches at the CR), so that LF starts the next block's Raw,
// or is dropped if the stream ends there. A leading BOM is kept in the first Raw.
// Such an LF is not counted against MaxFrameBytes, so the limits do not depend on
// how the stream was chunked, and a Raw is at most MaxFrameBytes+2 bytes.
type Reader struct {
	br       *bufio.Reader
	maxLine  int
	maxFrame int
	now      func() time.Time
	raw      []byte // the current block's bytes
	size     int    // bytes of raw counted against maxFrame
	offset   int64  // bytes consumed from the stream
	skipLF   bool   // the last line ended with CR; a following LF belongs to it
	started  bool   // the first line of the stream has been read (BOM handled)
	lastID   string // WHATWG's last-event-id buffer; it outlives blocks
	err      error  // sticky: once failed, Next keeps failing the same way
}

// NewReader returns a Reader of r.
func NewReader(r io.Reader, opts Options) *Reader {
	rd := &Reader{br: bufio.NewReaderSize(r, 16<<10), maxLine: opts.MaxLineBytes,
		maxFrame: opts.MaxFrameBytes, now: opts.Now}
	if rd.maxLine <= 0 {
		rd.maxLine = 1 << 20
	}
	if rd.maxFrame <= 0 {
		rd.maxFrame = 4 << 20
	}
	if rd.now == nil {
		rd.now = time.Now
	}
	return rd
}

// Next returns the next block terminated by a blank line, including blocks with
// only comments, only an id, or nothing at all. At a clean end of stream it returns
// io.EOF; an unterminated block at the end is a *TruncatedError. After any error,
// Next returns that error again.
func (r *Reader) Next() (Frame, error) {
	if r.err != nil {
		return Frame{}, r.err
	}
	f, err := r.next()
	r.err = err
	return f, err
}

func (r *Reader) next() (Frame, error) {
	r.raw, r.size = nil, 0
	var f Frame
	var data strings.Builder
	lines := 0
	for {
		line, err := r.readLine()
		if !r.started {
			// The UTF-8 decode step strips one leading BOM from the stream, once.
			line = bytes.TrimPrefix(line, []byte("\xEF\xBB\xBF"))
			r.started = err == nil
		}
		if err != nil {
			var le *LimitError
			switch {
			case errors.As(err, &le):
				return Frame{}, err
			case len(line) > 0 || lines > 0:
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return Frame{}, &TruncatedError{Raw: r.raw, Err: err}
			case err == io.EOF:
				return Frame{}, io.EOF
			}
			return Frame{}, fmt.Errorf("sse: read: %w", err)
		}
		if len(line) == 0 {
			r.endBlock()
			break
		}
		lines++
		r.interpret(&f, &data, line)
	}
	// Dispatch. WHATWG sets the last event ID before checking for data, so an
	// id-only block still moves it.
	f.LastEventID = r.lastID
	if f.HasData {
		d := data.String()
		f.Data = decode(d[:len(d)-1]) // the data buffer always ends with the LF we added
	}
	f.Raw = r.raw
	f.ArrivedAt = r.now()
	return f, nil
}

// interpret applies one non-blank line to the block being built.
func (r *Reader) interpret(f *Frame, data *strings.Builder, line []byte) {
	if line[0] == ':' {
		f.Comments = append(f.Comments, string(line[1:]))
		return
	}
	name, value, _ := bytes.Cut(line, []byte(":")) // no colon: the whole line names a field with an empty value
	value = bytes.TrimPrefix(value, []byte(" "))   // only one space, and only a space
	f.Fields = append(f.Fields, Field{Name: string(name), Value: string(value)})
	switch string(name) {
	case "event":
		f.Event = decode(string(value))
	case "data":
		f.HasData = true
		data.Write(value)
		data.WriteByte('\n')
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			r.lastID = decode(string(value))
			f.ID, f.HasID = r.lastID, true
		}
	case "retry":
		// WHATWG: only ASCII digits, otherwise ignored. We also ignore an empty value
		// and one too large for a time.Duration; the raw field stays in Fields.
		if ms, ok := digits(value); ok {
			f.Retry, f.HasRetry = time.Duration(ms)*time.Millisecond, true
		}
	}
}

func digits(b []byte) (int64, bool) {
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil && n <= math.MaxInt64/int64(time.Millisecond)
}

// readLine appends the next line and its line end (CR, LF or CRLF) to r.raw and
// returns the line without its end. On error it returns the partial line read.
func (r *Reader) readLine() ([]byte, error) {
	if r.skipLF {
		// The previous line ended with CR; an LF now completes that CRLF. Waiting
		// for this byte is fine: we need the next line anyway.
		r.skipLF = false
		b, err := r.br.Peek(1)
		if err != nil {
			return nil, err
		}
		if b[0] == '\n' {
			if len(r.raw) > 0 {
				if err := r.fits(1, 0); err != nil {
					return nil, err
				}
			}
			r.take(1) // at a block start it ends the previous block: not counted
		}
	}
	start := len(r.raw)
	for {
		if _, err := r.br.Peek(1); err != nil {
			return r.raw[start:], err
		}
		buf, _ := r.br.Peek(r.br.Buffered()) // never blocks: only what is buffered
		i := bytes.IndexAny(buf, "\r\n")
		n := i
		if i < 0 {
			n = len(buf)
		}
		if err := r.fits(n, len(r.raw)-start+n); err != nil {
			return r.raw[start:], err
		}
		r.take(n)
		if i < 0 {
			continue
		}
		if err := r.fits(1, 0); err != nil {
			return r.raw[start:], err
		}
		r.skipLF = buf[i] == '\r' // buf is still valid: take only discards
		line := r.raw[start:]
		r.take(1)
		return line[:len(line):len(line)], nil
	}
}

// endBlock takes the LF of a CRLF whose CR ended the block's blank line, if it has
// already arrived. It must not wait for it: a browser dispatches at the CR.
func (r *Reader) endBlock() {
	if !r.skipLF || r.br.Buffered() == 0 {
		return
	}
	r.skipLF = false
	if b, _ := r.br.Peek(1); b[0] == '\n' {
		r.take(1) // not counted against MaxFrameBytes, so limits do not depend on chunking
	}
}

// fits reports whether n more bytes keep the current line (lineLen bytes with
// them) and the block within their limits. If both break, the one broken at the
// earlier byte is reported, so the error does not depend on chunking.
func (r *Reader) fits(n, lineLen int) error {
	var err *LimitError
	if lineLen > r.maxLine {
		err = &LimitError{Limit: "MaxLineBytes", Max: r.maxLine, Offset: r.offset + int64(r.maxLine-(lineLen-n))}
	}
	if r.size+n > r.maxFrame {
		at := r.offset + int64(r.maxFrame-r.size)
		if err == nil || at < err.Offset {
			err = &LimitError{Limit: "MaxFrameBytes", Max: r.maxFrame, Offset: at}
		}
	}
	if err != nil {
		return err
	}
	r.size += n
	return nil
}

// take moves n buffered bytes into r.raw.
func (r *Reader) take(n int) {
	b, _ := r.br.Peek(n)
	r.raw = append(r.raw, b...)
	r.offset += int64(n)
	_, _ = r.br.Discard(n) // cannot fail: the bytes are buffered
}

// decode repairs invalid UTF-8 the way the WHATWG UTF-8 decoder does: each maximal
// subpart of an ill-formed sequence becomes one U+FFFD (strings.ToValidUTF8 would
// merge runs, utf8.DecodeRune splits them per byte; both differ from browsers).
// WHATWG decodes before splitting lines; decoding each value afterwards gives the
// same text because CR, LF, ':' and ' ' never belong to an ill-formed subpart.
func decode(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			n = maximalSubpart(s[i:])
		}
		b.WriteRune(r) // a real U+FFFD in the input also decodes to RuneError, n == 3
		i += n
	}
	return b.String()
}

// maximalSubpart returns the length of the longest prefix of s that starts a
// well-formed UTF-8 sequence (at least 1), per Unicode § 3.9 table 3-7.
func maximalSubpart(s string) int {
	lo, hi, need := byte(0x80), byte(0xBF), 0
	switch c := s[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	}
	n := 1
	for n <= need && n < len(s) && s[n] >= lo && s[n] <= hi {
		n++
		lo, hi = 0x80, 0xBF
	}
	return n
}
