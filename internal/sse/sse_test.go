package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// readAll reads frames until the first error and returns both.
func readAll(r io.Reader, opts Options) ([]Frame, error) {
	rd := NewReader(r, opts)
	var frames []Frame
	for {
		f, err := rd.Next()
		if err != nil {
			return frames, err
		}
		frames = append(frames, f)
	}
}

// chunked returns a reader that hands out in in pieces of the given sizes, then
// the rest.
func chunked(in []byte, sizes ...int) io.Reader {
	var rs []io.Reader
	for _, n := range sizes {
		n = min(n, len(in))
		rs = append(rs, &onceReader{in[:n]})
		in = in[n:]
	}
	return io.MultiReader(append(rs, &onceReader{in})...)
}

// onceReader returns all its bytes in one Read, however large p is (up to len(p)).
type onceReader struct{ b []byte }

func (o *onceReader) Read(p []byte) (int, error) {
	if len(o.b) == 0 {
		return 0, io.EOF
	}
	n := copy(p, o.b)
	o.b = o.b[n:]
	return n, nil
}

// readings are the ways each table input is fed to the reader: whole, one byte
// at a time, with the last data and EOF together, split at every byte boundary,
// and several seeded random chunkings.
func readings(in []byte) map[string]io.Reader {
	m := map[string]io.Reader{
		"whole":   bytes.NewReader(in),
		"onebyte": iotest.OneByteReader(bytes.NewReader(in)),
		"dataerr": iotest.DataErrReader(bytes.NewReader(in)),
		"half":    iotest.HalfReader(bytes.NewReader(in)),
	}
	for i := 1; i < len(in); i++ {
		m[fmt.Sprintf("split@%d", i)] = chunked(in, i)
	}
	rng := rand.New(rand.NewPCG(uint64(len(in)), 7))
	for k := range 8 {
		var sizes []int
		for left := len(in); left > 0; {
			n := 1 + rng.IntN(5)
			sizes = append(sizes, n)
			left -= n
		}
		m[fmt.Sprintf("random%d", k)] = chunked(in, sizes...)
	}
	return m
}

var ignoreWire = cmpopts.IgnoreFields(Frame{}, "Raw", "ArrivedAt")

// checkRaw checks that the frames' Raw (and a truncated tail) put together give
// back the input, but for the bytes the Reader documents it may drop at the end.
func checkRaw(t *testing.T, in []byte, frames []Frame, err error) {
	t.Helper()
	var got []byte
	for _, f := range frames {
		got = append(got, f.Raw...)
	}
	var te *TruncatedError
	if errors.As(err, &te) {
		got = append(got, te.Raw...)
	}
	var le *LimitError
	switch rest := in[min(len(got), len(in)):]; {
	case !bytes.HasPrefix(in, got):
		t.Errorf("joined Raw = %q, not a prefix of the input %q", got, in)
	case errors.As(err, &le) || len(rest) == 0:
	case string(rest) == "\n" && bytes.HasSuffix(got, []byte("\r")):
	case string(in) == "\xEF\xBB\xBF":
	default:
		t.Errorf("joined Raw = %q, lost %q of the input %q", got, rest, in)
	}
}

func TestReader(t *testing.T) {
	data := func(s string) Frame { return Frame{Fields: []Field{{"data", s}}, Data: s, HasData: true} }
	tests := []struct {
		name    string
		in      string
		want    []Frame
		wantErr string // "" = io.EOF, "truncated", "limit"
	}{
		{name: "empty stream", in: ""},
		{name: "one event", in: "data: hello\n\n", want: []Frame{data("hello")}},
		{name: "data without space", in: "data:hello\n\n", want: []Frame{data("hello")}},
		{name: "only one space removed", in: "data:  two\n\n", want: []Frame{data(" two")}},
		{name: "tab is not removed", in: "data:\tx\n\n", want: []Frame{data("\tx")}},
		{name: "data empty", in: "data:\n\n", want: []Frame{data("")}},
		{name: "no colon is empty value", in: "data\n\n", want: []Frame{data("")}},
		{name: "colon in value", in: "data: a:b\n\n", want: []Frame{data("a:b")}},
		{name: "multi-line data", in: "data: a\ndata: b\n\n",
			want: []Frame{{Fields: []Field{{"data", "a"}, {"data", "b"}}, Data: "a\nb", HasData: true}}},
		{name: "trailing empty data line keeps one LF", in: "data: a\ndata:\n\n",
			want: []Frame{{Fields: []Field{{"data", "a"}, {"data", ""}}, Data: "a\n", HasData: true}}},
		{name: "CRLF", in: "data: a\r\n\r\n", want: []Frame{data("a")}},
		{name: "CR", in: "data: a\r\r", want: []Frame{data("a")}},
		{name: "mixed line ends", in: "data: a\r\ndata: b\rdata: c\n\r\n",
			want: []Frame{{Fields: []Field{{"data", "a"}, {"data", "b"}, {"data", "c"}}, Data: "a\nb\nc", HasData: true}}},
		{name: "LF CR is two line ends", in: "data: a\n\rdata: b\n\n", want: []Frame{data("a"), data("b")}},
		{name: "CR CR LF is a line end then a CRLF", in: "data: a\r\r\n\n", want: []Frame{data("a"), {}}},
		{name: "BOM stripped", in: "\xEF\xBB\xBFdata: a\n\n", want: []Frame{data("a")}},
		{name: "BOM alone then blank line", in: "\xEF\xBB\xBF\n", want: []Frame{{}}},
		{name: "only one BOM stripped", in: "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\n",
			want: []Frame{{Fields: []Field{{"\xEF\xBB\xBFdata", "a"}}}}},
		{name: "BOM later is not stripped", in: "data: a\n\n\xEF\xBB\xBFdata: b\n\n",
			want: []Frame{data("a"), {Fields: []Field{{"\xEF\xBB\xBFdata", "b"}}}}},
		{name: "comment-only block", in: ": ping\n\n", want: []Frame{{Comments: []string{" ping"}}}},
		{name: "empty comment", in: ":\n\n", want: []Frame{{Comments: []string{""}}}},
		{name: "comments around data", in: ":c1\ndata: x\n:c2\n\n",
			want: []Frame{{Fields: []Field{{"data", "x"}}, Comments: []string{"c1", "c2"}, Data: "x", HasData: true}}},
		{name: "empty blocks", in: "\n\n", want: []Frame{{}, {}}},
		{name: "event", in: "event: update\ndata: x\n\n",
			want: []Frame{{Fields: []Field{{"event", "update"}, {"data", "x"}}, Event: "update", Data: "x", HasData: true}}},
		{name: "last event wins", in: "event: a\nevent: b\n\n",
			want: []Frame{{Fields: []Field{{"event", "a"}, {"event", "b"}}, Event: "b"}}},
		{name: "event does not carry over", in: "event: a\n\ndata: x\n\n",
			want: []Frame{{Fields: []Field{{"event", "a"}}, Event: "a"}, data("x")}},
		{name: "id persists across blocks", in: "id: 1\ndata: x\n\ndata: y\n\n", want: []Frame{
			{Fields: []Field{{"id", "1"}, {"data", "x"}}, ID: "1", HasID: true, LastEventID: "1", Data: "x", HasData: true},
			{Fields: []Field{{"data", "y"}}, LastEventID: "1", Data: "y", HasData: true}}},
		{name: "id-only block moves last id", in: "id: 7\n\n",
			want: []Frame{{Fields: []Field{{"id", "7"}}, ID: "7", HasID: true, LastEventID: "7"}}},
		{name: "empty id resets", in: "id: 7\n\nid\n\n", want: []Frame{
			{Fields: []Field{{"id", "7"}}, ID: "7", HasID: true, LastEventID: "7"},
			{Fields: []Field{{"id", ""}}, HasID: true}}},
		{name: "id with NUL ignored", in: "id: 7\n\nid: a\x00b\ndata: x\n\n", want: []Frame{
			{Fields: []Field{{"id", "7"}}, ID: "7", HasID: true, LastEventID: "7"},
			{Fields: []Field{{"id", "a\x00b"}, {"data", "x"}}, LastEventID: "7", Data: "x", HasData: true}}},
		{name: "last valid id in block", in: "id: 1\nid: 2\nid: \x00\n\n",
			want: []Frame{{Fields: []Field{{"id", "1"}, {"id", "2"}, {"id", "\x00"}}, ID: "2", HasID: true, LastEventID: "2"}}},
		{name: "retry", in: "retry: 1500\n\n",
			want: []Frame{{Fields: []Field{{"retry", "1500"}}, Retry: 1500 * time.Millisecond, HasRetry: true}}},
		{name: "retry zero", in: "retry:0\n\n", want: []Frame{{Fields: []Field{{"retry", "0"}}, HasRetry: true}}},
		{name: "retry non-digit ignored", in: "retry: 15a\n\n", want: []Frame{{Fields: []Field{{"retry", "15a"}}}}},
		{name: "retry negative ignored", in: "retry: -1\n\n", want: []Frame{{Fields: []Field{{"retry", "-1"}}}}},
		{name: "retry decimal ignored", in: "retry: 1.5\n\n", want: []Frame{{Fields: []Field{{"retry", "1.5"}}}}},
		{name: "retry two spaces ignored", in: "retry:  1\n\n", want: []Frame{{Fields: []Field{{"retry", " 1"}}}}},
		{name: "retry empty ignored", in: "retry\n\n", want: []Frame{{Fields: []Field{{"retry", ""}}}}},
		{name: "retry overflowing int64 ignored", in: "retry:99999999999999999999\n\n",
			want: []Frame{{Fields: []Field{{"retry", "99999999999999999999"}}}}},
		{name: "retry overflowing Duration ignored", in: "retry:9223372036855\n\n",
			want: []Frame{{Fields: []Field{{"retry", "9223372036855"}}}}},
		{name: "retry largest Duration", in: "retry:9223372036854\n\n",
			want: []Frame{{Fields: []Field{{"retry", "9223372036854"}}, Retry: 9223372036854 * time.Millisecond, HasRetry: true}}},
		{name: "unknown fields kept in order", in: "foo: bar\ndata: x\nbaz\nData: y\n\n",
			want: []Frame{{Fields: []Field{{"foo", "bar"}, {"data", "x"}, {"baz", ""}, {"Data", "y"}}, Data: "x", HasData: true}}},
		{name: "space before colon names another field", in: "data : x\n\n", want: []Frame{{Fields: []Field{{"data ", "x"}}}}},
		{name: "NUL in data kept", in: "data: a\x00b\n\n", want: []Frame{data("a\x00b")}},
		{name: "invalid UTF-8 repaired per maximal subpart", in: "data: \xff\xe2\x82x\xed\xa0\x80\n\n",
			want: []Frame{{Fields: []Field{{"data", "\xff\xe2\x82x\xed\xa0\x80"}}, Data: "\uFFFD\uFFFDx\uFFFD\uFFFD\uFFFD", HasData: true}}},
		{name: "truncated 4-byte sequence is one U+FFFD", in: "event: \xf0\x9f\x98\n\n",
			want: []Frame{{Fields: []Field{{"event", "\xf0\x9f\x98"}}, Event: "\uFFFD"}}},
		{name: "real U+FFFD kept", in: "data: \uFFFD\n\n", want: []Frame{data("\uFFFD")}},
		{name: "unterminated block", in: "data: x\n", wantErr: "truncated"},
		{name: "unterminated line", in: "data: x", wantErr: "truncated"},
		{name: "frame then unterminated", in: "data: x\n\ndata: y", want: []Frame{data("x")}, wantErr: "truncated"},
		{name: "CR-ended line then EOF", in: "data: a\r", wantErr: "truncated"},
		{name: "partial BOM is content", in: "\xEF\xBB", wantErr: "truncated"},
		{name: "lone BOM", in: "\xEF\xBB\xBF"},
		{name: "line at MaxLineBytes", in: "data: 12345678901234567890\n\n", want: []Frame{data("12345678901234567890")}},
		{name: "line over MaxLineBytes", in: "data: 123456789012345678901\n\n", wantErr: "limit"},
		{name: "block over MaxFrameBytes", in: strings.Repeat("data: 1\n", 8) + "\n", wantErr: "limit"},
		// 58 bytes counted; the final LF is the 59th but completes the blank line's CRLF.
		{name: "LF of the final CRLF does not count", in: strings.Repeat("data:\r\n", 7) + "data:1\r\n\r\n",
			want: []Frame{{Fields: []Field{{"data", ""}, {"data", ""}, {"data", ""}, {"data", ""}, {"data", ""}, {"data", ""}, {"data", ""}, {"data", "1"}},
				Data: "\n\n\n\n\n\n\n1", HasData: true}}},
	}
	opts := Options{MaxLineBytes: 26, MaxFrameBytes: 58}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for how, r := range readings([]byte(tt.in)) {
				frames, err := readAll(r, opts)
				if diff := cmp.Diff(tt.want, frames, ignoreWire, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("%s: frames of %q (-want +got):\n%s", how, tt.in, diff)
				}
				var te *TruncatedError
				var le *LimitError
				switch tt.wantErr {
				case "":
					if err != io.EOF {
						t.Errorf("%s: error = %v, want io.EOF", how, err)
					}
				case "truncated":
					if !errors.As(err, &te) || !errors.Is(err, io.ErrUnexpectedEOF) {
						t.Errorf("%s: error = %v, want *TruncatedError wrapping io.ErrUnexpectedEOF", how, err)
					}
				case "limit":
					if !errors.As(err, &le) {
						t.Errorf("%s: error = %v, want *LimitError", how, err)
					}
				}
				checkRaw(t, []byte(tt.in), frames, err)
			}
		})
	}
}

func TestRaw(t *testing.T) {
	tests := []struct {
		name string
		r    io.Reader
		want []string
	}{
		{"whole", strings.NewReader("\xEF\xBB\xBFdata: a\r\n\r\n: c\n\nid: 2\r\r"),
			[]string{"\xEF\xBB\xBFdata: a\r\n\r\n", ": c\n\n", "id: 2\r\r"}},
		// The LF of the CRLF that ends the first block arrives after the block has
		// been dispatched, so it opens the next block's Raw.
		{"onebyte", iotest.OneByteReader(strings.NewReader("data: a\r\n\r\nid: 2\n\n")),
			[]string{"data: a\r\n\r", "\nid: 2\n\n"}},
	}
	for _, tt := range tests {
		frames, err := readAll(tt.r, Options{})
		if err != io.EOF {
			t.Fatalf("%s: error = %v, want io.EOF", tt.name, err)
		}
		var got []string
		for _, f := range frames {
			got = append(got, string(f.Raw))
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: Raw (-want +got):\n%s", tt.name, diff)
		}
	}
}

func TestTruncatedRaw(t *testing.T) {
	_, err := readAll(strings.NewReader("data: x\n\nid: 1\ndata: y"), Options{})
	var te *TruncatedError
	if !errors.As(err, &te) {
		t.Fatalf("error = %v, want *TruncatedError", err)
	}
	if got, want := string(te.Raw), "id: 1\ndata: y"; got != want {
		t.Errorf("TruncatedError.Raw = %q, want %q", got, want)
	}
}

// A live stream must get its block at the blank line's CR, without the reader
// waiting for a possible LF (or anything else) after it.
func TestDispatchDoesNotWaitForLF(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() { _, _ = pw.Write([]byte("data: a\r\r")) }()
	got := make(chan Frame, 1)
	rd := NewReader(pr, Options{})
	go func() {
		f, _ := rd.Next()
		got <- f
	}()
	select {
	case f := <-got:
		if f.Data != "a" {
			t.Errorf("Data = %q, want %q", f.Data, "a")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Next did not return a block ended by CR CR while the stream stayed open")
	}
	// The CRLF's LF arriving later is skipped, not read as a blank line.
	go func() { _, _ = pw.Write([]byte("\ndata: b\n\n")) }()
	f, err := rd.Next()
	if err != nil || f.Data != "b" || !f.HasData {
		t.Errorf("second Next = %+v, %v; want data b", f, err)
	}
}

func TestArrivedAt(t *testing.T) {
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	calls := 0
	now := func() time.Time { calls++; return base.Add(time.Duration(calls) * time.Second) }
	frames, err := readAll(strings.NewReader("data: a\n\ndata: b\n\n"), Options{Now: now})
	if err != io.EOF || len(frames) != 2 {
		t.Fatalf("got %d frames, %v; want 2 frames, io.EOF", len(frames), err)
	}
	for i, f := range frames {
		if want := base.Add(time.Duration(i+1) * time.Second); !f.ArrivedAt.Equal(want) {
			t.Errorf("frame %d ArrivedAt = %v, want %v", i, f.ArrivedAt, want)
		}
	}
}

func TestLimitError(t *testing.T) {
	tests := []struct {
		in   string
		opts Options
		want LimitError
	}{
		{"data: 12345\n\n", Options{MaxLineBytes: 10}, LimitError{Limit: "MaxLineBytes", Max: 10, Offset: 10}},
		{"data: 1\n\ndata: 12345\n\n", Options{MaxLineBytes: 10}, LimitError{Limit: "MaxLineBytes", Max: 10, Offset: 19}},
		{"data: 1\ndata: 2\n\n", Options{MaxFrameBytes: 10}, LimitError{Limit: "MaxFrameBytes", Max: 10, Offset: 10}},
		{"\n" + "data: 1\ndata: 2\n\n", Options{MaxFrameBytes: 16}, LimitError{Limit: "MaxFrameBytes", Max: 16, Offset: 17}},
	}
	for _, tt := range tests {
		for how, r := range readings([]byte(tt.in)) {
			rd := NewReader(r, tt.opts)
			var err error
			for err == nil {
				_, err = rd.Next()
			}
			var le *LimitError
			if !errors.As(err, &le) {
				t.Fatalf("%s: %q: error = %v, want *LimitError", how, tt.in, err)
			}
			if *le != tt.want {
				t.Errorf("%s: %q: error = %+v, want %+v", how, tt.in, *le, tt.want)
			}
			if _, again := rd.Next(); again != err {
				t.Errorf("%s: Next after a LimitError = %v, want the same error %v", how, again, err)
			}
		}
	}
}

// errReader returns its bytes, then err.
type errReader struct {
	b   []byte
	err error
}

func (e *errReader) Read(p []byte) (int, error) {
	if len(e.b) == 0 {
		return 0, e.err
	}
	n := copy(p, e.b)
	e.b = e.b[n:]
	return n, nil
}

func TestReadError(t *testing.T) {
	boom := errors.New("connection reset")
	_, err := readAll(&errReader{[]byte("data: a\n\ndata: b\n"), boom}, Options{})
	var te *TruncatedError
	if !errors.As(err, &te) || !errors.Is(err, boom) || string(te.Raw) != "data: b\n" {
		t.Errorf("mid-block read error = %v, want *TruncatedError wrapping %v with Raw %q", err, boom, "data: b\n")
	}
	frames, err := readAll(&errReader{[]byte("data: a\n\n"), boom}, Options{})
	if len(frames) != 1 || errors.As(err, &te) || !errors.Is(err, boom) {
		t.Errorf("read error between blocks = %d frames, %v; want 1 frame and an error wrapping %v", len(frames), err, boom)
	}
}

// repeatReader is an endless stream of one byte, counting what it hands out.
type repeatReader struct {
	c byte
	n int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = r.c
	}
	r.n += int64(len(p))
	return len(p), nil
}

// A 100 MB line must stop at MaxLineBytes, having read little more than that.
func TestLongLineBoundedMemory(t *testing.T) {
	src := &repeatReader{c: 'a'}
	rd := NewReader(io.LimitReader(src, 100<<20), Options{})
	_, err := rd.Next()
	var le *LimitError
	if !errors.As(err, &le) || le.Limit != "MaxLineBytes" || le.Max != 1<<20 {
		t.Fatalf("error = %v, want a MaxLineBytes *LimitError of 1 MiB", err)
	}
	if limit := int64(1<<20 + 64<<10); src.n > limit {
		t.Errorf("read %d bytes from the stream before failing, want at most %d", src.n, limit)
	}
}

func FuzzReader(f *testing.F) {
	for _, s := range []string{
		"data: hello\n\n", "\xEF\xBB\xBFid: 1\r\nevent: e\r\ndata: x\r\n\r\n", ": c\r\rretry: 10\n\n",
		"data: a\r\r\n\n", "id: \x00\ndata\n\n", "data: \xe2\x82\n\n", "data: x",
	} {
		f.Add([]byte(s), uint8(16), uint16(64))
	}
	f.Fuzz(func(t *testing.T, in []byte, maxLine uint8, maxFrame uint16) {
		opts := Options{MaxLineBytes: int(maxLine) + 1, MaxFrameBytes: int(maxFrame) + 1}
		whole, werr := readAll(bytes.NewReader(in), opts)
		bytewise, berr := readAll(iotest.OneByteReader(bytes.NewReader(in)), opts)
		for how, got := range map[string][]Frame{"whole": whole, "onebyte": bytewise} {
			for _, fr := range got {
				if len(fr.Raw) > opts.MaxFrameBytes+2 {
					t.Errorf("%s: Raw of %d bytes, over MaxFrameBytes %d (+2 LFs)", how, len(fr.Raw), opts.MaxFrameBytes)
				}
				for _, fd := range fr.Fields {
					if len(fd.Name) > opts.MaxLineBytes {
						t.Errorf("%s: field name of %d bytes, over MaxLineBytes %d", how, len(fd.Name), opts.MaxLineBytes)
					}
				}
			}
		}
		checkRaw(t, in, whole, werr)
		checkRaw(t, in, bytewise, berr)
		if diff := cmp.Diff(whole, bytewise, ignoreWire); diff != "" {
			t.Errorf("frames depend on chunking (-whole +onebyte):\n%s", diff)
		}
		var wl, bl *LimitError
		var wt, bt *TruncatedError
		wlim, blim := errors.As(werr, &wl), errors.As(berr, &bl)
		switch {
		case wlim || blim:
			if wl == nil || bl == nil || *wl != *bl {
				t.Errorf("errors depend on chunking: whole %v, onebyte %v", werr, berr)
			}
		case errors.As(werr, &wt) != errors.As(berr, &bt), (werr == io.EOF) != (berr == io.EOF):
			t.Errorf("errors depend on chunking: whole %v, onebyte %v", werr, berr)
		}
	})
}

func BenchmarkReader(b *testing.B) {
	block := "id: 42\nevent: task.updated\ndata: {\"id\":\"evt_42\",\"type\":\"task.updated\",\"data\":{\"status\":\"RUNNING\"}}\n\n"
	in := []byte(strings.Repeat(block, 1000))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := readAll(bytes.NewReader(in), Options{}); err != io.EOF {
			b.Fatal(err)
		}
	}
}

// stuckReader never returns data nor an error.
type stuckReader struct{}

func (stuckReader) Read([]byte) (int, error) { return 0, nil }

// A reader that makes no progress must end in an error, not a hang.
func TestNoProgress(t *testing.T) {
	_, err := readAll(stuckReader{}, Options{})
	if !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("error = %v, want one wrapping io.ErrNoProgress", err)
	}
	_, err = readAll(io.MultiReader(strings.NewReader("data: x\n"), stuckReader{}), Options{})
	var te *TruncatedError
	if !errors.As(err, &te) || !errors.Is(err, io.ErrNoProgress) {
		t.Errorf("mid-block error = %v, want a *TruncatedError wrapping io.ErrNoProgress", err)
	}
}
