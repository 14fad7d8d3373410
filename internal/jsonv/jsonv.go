// Package jsonv answers the small questions the module asks of a decoded
// JSON value — what encoding/json gives an any: nil, bool, json.Number or
// float64, string, []any, map[string]any — in one place: its kind for a
// message (Kind, AKind), its number (Number), a deep copy (Copy), a JSON
// Pointer made of its member names (Token, Pointer, Untoken); how the
// module decodes such a value (Decode: numbers kept as written) and writes
// one (Marshal: no HTML escaping); and how a string that came from outside
// is shown in a message (Quote, Clean).
//
// It imports nothing of the module, so every layer may use it.
package jsonv

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Kind names the JSON type of a decoded value: "null", "boolean",
// "number" (json.Number or float64), "string", "array" or "object". A
// value of no JSON type is named by its Go type ("int", "[]string").
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// AKind is Kind with its article, for a sentence: "a string", "an object",
// "null"; a value of no JSON type is named by its bare Go type.
func AKind(v any) string {
	switch k := Kind(v); k {
	case "boolean", "number", "string":
		return "a " + k
	case "array", "object":
		return "an " + k
	default: // "null", or a Go type
		return k
	}
}

// Number reads a JSON number decoded as json.Number or float64; ok is
// false for any other value and for a json.Number a float64 cannot hold.
func Number(v any) (f float64, ok bool) {
	switch n := v.(type) {
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	case float64:
		return n, true
	}
	return 0, false
}

// Copy is a deep copy of a decoded value: objects and arrays are copied
// all the way down; any other value is returned as it is.
func Copy(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = Copy(e)
		}
		return m
	case []any:
		a := make([]any, len(x))
		for i, e := range x {
			a[i] = Copy(e)
		}
		return a
	}
	return v
}

// Decode reads the first JSON value of b, keeping numbers as written
// (json.Number), so that integers and fractions can be told apart and
// re-encoding cannot change them. Like a json.Decoder, it does not look
// at what follows the value.
func Decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// Marshal is v's JSON as json.Marshal writes it, but with "<", ">" and "&"
// left as they are (no HTML escaping).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// tokenEscaper and tokenUnescaper are RFC 6901's two escapes.
var (
	tokenEscaper   = strings.NewReplacer("~", "~0", "/", "~1")
	tokenUnescaper = strings.NewReplacer("~1", "/", "~0", "~")
)

// Token is a member name as one reference token of a JSON Pointer
// (RFC 6901): "~" becomes "~0" and "/" becomes "~1".
func Token(name string) string { return tokenEscaper.Replace(name) }

// Untoken is the member name a JSON Pointer reference token stands for:
// the inverse of Token.
func Untoken(tok string) string { return tokenUnescaper.Replace(tok) }

// Pointer is the JSON Pointer of a path of member names and array indexes:
// "" (the whole document) for none, else "/" before each, escaped by Token.
func Pointer(names ...string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteByte('/')
		b.WriteString(Token(n))
	}
	return b.String()
}

// quoteMax is how much of a string Quote shows.
const quoteMax = 80

// Quote shows an untrusted string in a message: Go-quoted (no control
// character reaches a terminal) and, past 80 bytes, cut and followed by
// its length.
func Quote(s string) string {
	if len(s) > quoteMax {
		return fmt.Sprintf("%q… (%d bytes)", s[:quoteMax], len(s))
	}
	return fmt.Sprintf("%q", s)
}

// Clean makes a message that may hold untrusted text safe to print:
// control characters, bidirectional controls and invalid UTF-8 are
// escaped (\u001b, \ufffd), so nothing reaches a terminal as a control
// sequence. Once the result passes max bytes, the rest of s is dropped and
// "… (N bytes)" gives the length of s.
func Clean(s string, max int) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c == utf8.RuneError:
			b.WriteString(`\ufffd`)
		case unicode.IsControl(c) || unicode.Is(unicode.Bidi_Control, c):
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteRune(c)
		}
		if b.Len() > max {
			return b.String() + fmt.Sprintf("… (%d bytes)", len(s))
		}
	}
	return b.String()
}
