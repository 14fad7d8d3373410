package tape

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a small single-pass JSON reader for tape lines. It exists
// because tapes are read a line at a time at six-figure record counts, and
// encoding/json's validate-then-reflect decoding was most of the cost of a
// diff. It accepts exactly RFC 8259 JSON; what it cannot use it skips, but
// still checks.
type scanner struct {
	b []byte
	i int
}

// maxDepth bounds nesting in skipped values, so a line of ten thousand '['
// cannot exhaust the stack.
const maxDepth = 512

func (s *scanner) errf(format string, args ...any) error {
	return badf("offset %d: "+format, append([]any{s.i}, args...)...)
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		if s.i >= len(s.b) {
			return s.errf("unexpected end of line, want %q", c)
		}
		return s.errf("found %q, want %q", s.b[s.i], c)
	}
	s.i++
	return nil
}

// null consumes a null literal if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' && strings.HasPrefix(string(s.b[s.i:min(s.i+4, len(s.b))]), "null") {
		s.i += 4
		return true
	}
	return false
}

// object calls field for each key of the object that comes next; field
// must consume the value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, err := s.rawString()
		if err != nil {
			return err
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return s.errf("want ',' or '}' after a value")
		}
	}
}

// rawString returns the next string's contents. Without escapes it is a
// slice of the line (no allocation); with escapes, a decoded copy.
func (s *scanner) rawString() ([]byte, error) {
	if s.peek() != '"' {
		return nil, s.errf("want a string")
	}
	s.i++
	start := s.i
	ascii := true
	for s.i < len(s.b) {
		c := s.b[s.i]
		if plain[c] {
			s.i++
			continue
		}
		switch {
		case c == '"':
			out := s.b[start:s.i]
			s.i++
			if !ascii && !utf8.Valid(out) {
				out = replaceInvalid(out)
			}
			return out, nil
		case c == '\\':
			return s.unescape(start)
		case c < 0x20:
			return nil, s.errf("control character %#x in string", c)
		}
		ascii = false // c >= 0x80
		s.i++
	}
	return nil, s.errf("unterminated string")
}

// plain marks the bytes a string can hold with no further thought: ASCII
// other than the quote, the backslash and control characters.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

func (s *scanner) unescape(start int) ([]byte, error) {
	out := append([]byte(nil), s.b[start:s.i]...)
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			if !utf8.Valid(out) {
				out = replaceInvalid(out)
			}
			return out, nil
		case c < 0x20:
			return nil, s.errf("control character %#x in string", c)
		case c != '\\':
			out = append(out, c)
			s.i++
			continue
		}
		if s.i+1 >= len(s.b) {
			break
		}
		e := s.b[s.i+1]
		s.i += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := s.hex4()
			if !ok {
				return nil, s.errf("bad \\u escape")
			}
			if utf16.IsSurrogate(r) {
				// A high surrogate followed by a low one is one rune;
				// anything else is U+FFFD, as encoding/json does.
				if s.i+1 < len(s.b) && s.b[s.i] == '\\' && s.b[s.i+1] == 'u' {
					save := s.i
					s.i += 2
					if r2, ok := s.hex4(); ok {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							out = utf8.AppendRune(out, dec)
							continue
						}
					}
					s.i = save
				}
				r = utf8.RuneError
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, s.errf("bad escape \\%c", e)
		}
	}
	return nil, s.errf("unterminated string")
}

func (s *scanner) hex4() (rune, bool) {
	if s.i+4 > len(s.b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(s.b[s.i:s.i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	s.i += 4
	return rune(v), true
}

func (s *scanner) str() (string, error) {
	b, err := s.rawString()
	return string(b), err
}

// number returns the text of the next JSON number, checked against the
// RFC 8259 grammar.
func (s *scanner) number() ([]byte, bool, error) {
	s.ws()
	start := s.i
	integer := true
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, false, s.errf("want a number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		integer = false
		s.i++
		if s.digits() == 0 {
			return nil, false, s.errf("want digits after '.'")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		integer = false
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return nil, false, s.errf("want digits in exponent")
		}
	}
	return s.b[start:s.i], integer, nil
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// int reads an integer that fits in int64; name is the field, for errors.
func (s *scanner) int(name string) (int64, error) {
	if s.peek() != '-' && (s.peek() < '0' || s.peek() > '9') {
		return 0, badf("%s: want an integer", name)
	}
	text, integer, err := s.number()
	if err != nil {
		return 0, err
	}
	if !integer {
		return 0, badf("%s = %s, want an integer", name, clip(string(text)))
	}
	v, err := strconv.ParseInt(string(text), 10, 64)
	if err != nil {
		return 0, badf("%s = %s is out of range", name, clip(string(text)))
	}
	return v, nil
}

// strings reads an array of strings.
func (s *scanner) strings(name string) ([]string, error) {
	if s.peek() != '[' {
		return nil, badf("%s: want an array of strings", name)
	}
	s.i++
	var out []string
	if s.peek() == ']' {
		s.i++
		return out, nil
	}
	for {
		if s.peek() != '"' {
			return nil, badf("%s: want an array of strings", name)
		}
		v, err := s.str()
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return out, nil
		default:
			return nil, s.errf("want ',' or ']' in %s", name)
		}
	}
}

// skip checks and passes over one value of any type.
func (s *scanner) skip(depth int) error {
	if depth > maxDepth {
		return s.errf("nested deeper than %d", maxDepth)
	}
	switch c := s.peek(); {
	case c == '"':
		_, err := s.rawString()
		return err
	case c == '{':
		return s.object(func([]byte) error { return s.skip(depth + 1) })
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return s.errf("want ',' or ']' in an array")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		_, _, err := s.number()
		return err
	default:
		for _, lit := range []string{"true", "false", "null"} {
			if strings.HasPrefix(string(s.b[s.i:min(s.i+len(lit), len(s.b))]), lit) {
				s.i += len(lit)
				return nil
			}
		}
		if s.i >= len(s.b) {
			return s.errf("unexpected end of line, want a value")
		}
		return s.errf("unexpected %q, want a value", s.b[s.i])
	}
}

// end checks nothing but whitespace follows the value.
func (s *scanner) end() error {
	if s.peek() != 0 || s.i < len(s.b) {
		return s.errf("unexpected data after the object")
	}
	return nil
}

// replaceInvalid replaces each byte of an invalid UTF-8 sequence with
// U+FFFD, as encoding/json does, so both read the same text.
func replaceInvalid(b []byte) []byte {
	out := make([]byte, 0, len(b)+8)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}
