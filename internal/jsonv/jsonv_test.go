package jsonv

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/testmain"
)

func TestMain(m *testing.M) { testmain.Main(m) }

func TestKind(t *testing.T) {
	for _, tc := range []struct {
		v     any
		kind  string
		akind string
	}{
		{nil, "null", "null"},
		{true, "boolean", "a boolean"},
		{json.Number("1.5"), "number", "a number"},
		{float64(2), "number", "a number"},
		{"", "string", "a string"},
		{[]any{}, "array", "an array"},
		{map[string]any{}, "object", "an object"},
		{3, "int", "int"},
		{[]string{"a"}, "[]string", "[]string"},
		{map[string]string{}, "map[string]string", "map[string]string"},
	} {
		if got := Kind(tc.v); got != tc.kind {
			t.Errorf("Kind(%#v) = %q, want %q", tc.v, got, tc.kind)
		}
		if got := AKind(tc.v); got != tc.akind {
			t.Errorf("AKind(%#v) = %q, want %q", tc.v, got, tc.akind)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want float64
		ok   bool
	}{
		{json.Number("12"), 12, true},
		{json.Number("-0.25"), -0.25, true},
		{json.Number("1e3"), 1000, true},
		{float64(7.5), 7.5, true},
		{json.Number("1e999"), math.Inf(1), false}, // out of float64's range
		{json.Number("x"), 0, false},
		{"12", 0, false},
		{nil, 0, false},
		{true, 0, false},
		{12, 0, false}, // not what encoding/json decodes
	} {
		got, ok := Number(tc.v)
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("Number(%#v) = %v, %v; want %v, %v", tc.v, got, ok, tc.want, tc.ok)
		}
	}
}

func TestCopy(t *testing.T) {
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"null", nil},
		{"scalar", json.Number("3")},
		{"object", map[string]any{"a": map[string]any{"b": []any{"x", map[string]any{"c": true}}}}},
		{"array", []any{[]any{1.0}, map[string]any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Copy(tc.v)
			if !reflect.DeepEqual(c, tc.v) {
				t.Fatalf("Copy = %#v, want %#v", c, tc.v)
			}
			// Changing the copy anywhere leaves the original as it was.
			before := Copy(tc.v)
			mutate(c)
			if !reflect.DeepEqual(tc.v, before) {
				t.Errorf("changing the copy changed the original: %#v", tc.v)
			}
		})
	}
}

// mutate changes every object and array of v in place, all the way down.
func mutate(v any) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			mutate(e)
			x[k+"'"] = "new"
		}
		x["added"] = true
	case []any:
		for i, e := range x {
			mutate(e)
			if _, nested := e.(map[string]any); !nested {
				if _, arr := e.([]any); !arr {
					x[i] = "changed"
				}
			}
		}
	}
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    any
		wantErr bool
	}{
		{`{"n": 1.50, "big": 12345678901234567890}`, map[string]any{"n": json.Number("1.50"), "big": json.Number("12345678901234567890")}, false},
		{`[1, "a", null]`, []any{json.Number("1"), "a", nil}, false},
		{`null`, nil, false},
		{`{} trailing`, map[string]any{}, false}, // only the first value is read
		{``, nil, true},
		{`{"a":`, nil, true},
	} {
		got, err := Decode([]byte(tc.in))
		if (err != nil) != tc.wantErr {
			t.Errorf("Decode(%q) error %v, want error %v", tc.in, err, tc.wantErr)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Decode(%q) = %#v, want %#v", tc.in, got, tc.want)
		}
	}
}

func TestMarshal(t *testing.T) {
	for _, tc := range []struct {
		v       any
		want    string
		wantErr bool
	}{
		{map[string]any{"b": "<a & b>", "a": json.Number("1.50")}, `{"a":1.50,"b":"<a & b>"}`, false},
		{"line\nbreak\u2028", `"line\nbreak\u2028"`, false},
		{nil, `null`, false},
		{math.NaN(), "", true},
	} {
		got, err := Marshal(tc.v)
		if (err != nil) != tc.wantErr {
			t.Errorf("Marshal(%#v) error %v, want error %v", tc.v, err, tc.wantErr)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("Marshal(%#v) = %s, want %s", tc.v, got, tc.want)
		}
	}
}

func TestPointer(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{""}, "/"},
		{[]string{"a", "0", "b"}, "/a/0/b"},
		{[]string{"a/b", "m~n"}, "/a~1b/m~0n"},
		{[]string{"~1"}, "/~01"},
		{[]string{"~/~"}, "/~0~1~0"},
	} {
		if got := Pointer(tc.names...); got != tc.want {
			t.Errorf("Pointer(%q) = %q, want %q", tc.names, got, tc.want)
		}
	}
}

func TestToken(t *testing.T) {
	for _, tc := range []struct{ name, tok string }{
		{"", ""},
		{"plain", "plain"},
		{"a/b", "a~1b"},
		{"m~n", "m~0n"},
		{"~1", "~01"},  // escaped "~" then a literal "1", not "/"
		{"~/", "~0~1"}, // RFC 6901's order: "~" first
		{"/~0", "~1~00"},
	} {
		if got := Token(tc.name); got != tc.tok {
			t.Errorf("Token(%q) = %q, want %q", tc.name, got, tc.tok)
		}
		if got := Untoken(tc.tok); got != tc.name {
			t.Errorf("Untoken(%q) = %q, want %q", tc.tok, got, tc.name)
		}
	}
	// Tokens with a "~" escaping nothing are left as they are.
	for _, tc := range []struct{ tok, name string }{
		{"~", "~"},
		{"~2", "~2"},
		{"~~1", "~/"},
	} {
		if got := Untoken(tc.tok); got != tc.name {
			t.Errorf("Untoken(%q) = %q, want %q", tc.tok, got, tc.name)
		}
	}
}

func TestQuote(t *testing.T) {
	long := strings.Repeat("x", 81)
	for _, tc := range []struct{ in, want string }{
		{"", `""`},
		{"plain", `"plain"`},
		{"esc\x1b[31m", `"esc\x1b[31m"`},
		{strings.Repeat("x", 80), `"` + strings.Repeat("x", 80) + `"`},
		{long, `"` + strings.Repeat("x", 80) + `"… (81 bytes)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestClean(t *testing.T) {
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"fine text", 100, "fine text"},
		{"bell\a and escape\x1b[2J", 100, `bell\u0007 and escape\u001b[2J`},
		{"new\nline", 100, `new\u000aline`},
		{"bidi \u202e override", 100, `bidi \u202e override`},
		{"bad \xff byte", 100, `bad \ufffd byte`},
		{"café ✓", 100, "café ✓"},
		{"abcdef", 3, "abcd… (6 bytes)"},
		{"abc", 3, "abc"},
		{"\x1b\x1b", 3, `\u001b… (2 bytes)`},
	} {
		if got := Clean(tc.in, tc.max); got != tc.want {
			t.Errorf("Clean(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}
