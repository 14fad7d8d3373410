package receipt

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

// TestCanonicalizeRFC8785 runs the published RFC 8785 examples (sorting,
// string escaping, literals, the values example of section 3.2.3, and the
// widely used companion inputs for arrays, French accents, unnormalized
// Unicode and awkward keys) through the same function receipt hashing uses.
func TestCanonicalizeRFC8785(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"literals", " [ null , true , false ] ", `[null,true,false]`},
		{"arrays", `[56, {"d": true, "10": null, "1": [ ]}]`, `[56,{"1":[],"10":null,"d":true}]`},
		{"french", `{
  "peach": "This sorting order",
  "péché": "is wrong according to French",
  "pêche": "but canonicalization MUST",
  "sin":   "ignore locale"
}`, `{"peach":"This sorting order","péché":"is wrong according to French","pêche":"but canonicalization MUST","sin":"ignore locale"}`},
		{"unnormalized unicode stays unnormalized", `{"Unnormalized Unicode":"A\u030a"}`, "{\"Unnormalized Unicode\":\"A\u030a\"}"},
		{"structures", `{
  "1": {"f": {"f": "hi","F": 5} ,"\n": 56.0},
  "10": { },
  "": "empty",
  "a": { },
  "111": [ {"e": "yes","E": "no" } ],
  "A": { }
}`, `{"":"empty","1":{"\n":56,"f":{"F":5,"f":"hi"}},"10":{},"111":[{"E":"no","e":"yes"}],"A":{},"a":{}}`},
		{"values (RFC 8785 section 3.2.3)", `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`, `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`},
		{"sorting by UTF-16 code units (RFC 8785 section 3.2.3)", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`, "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"weird keys", `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\u000a": "Newline",
  "1": "One",
  "\u0080": "Control\u007f",
  "\ud83d\ude02": "Smiley",
  "\u00f6": "Latin Small Letter O With Diaeresis",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "</script>": "Browser Challenge"
}`, "{\"\\n\":\"Newline\",\"\\r\":\"Carriage Return\",\"1\":\"One\",\"</script>\":\"Browser Challenge\",\"\u0080\":\"Control\u007f\",\"ö\":\"Latin Small Letter O With Diaeresis\",\"€\":\"Euro Sign\",\"😂\":\"Smiley\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}"},
		{"control characters use short escapes or lowercase \\u", `["\u0008\u0009\u000a\u000c\u000d\u0001\u001f"]`, `["\b\t\n\f\r\u0001\u001f"]`},
	}
	for _, c := range cases {
		got, err := canonicalize([]byte(c.in))
		if err != nil {
			t.Errorf("%s: canonicalize: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}

// TestCanonicalizeRFC8785Numbers is the number table of RFC 8785 appendix B:
// an IEEE 754 bit pattern and the ECMAScript serialization it must get.
func TestCanonicalizeRFC8785Numbers(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // minus zero
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		f := math.Float64frombits(c.bits)
		// Write the input as the shortest exact decimal Go knows, in
		// exponent form, so the canonicalizer has to do the formatting.
		in := "[" + strconv.FormatFloat(f, 'e', -1, 64) + "]"
		got, err := canonicalize([]byte(in))
		if err != nil {
			t.Errorf("%016x: canonicalize(%s): %v", c.bits, in, err)
			continue
		}
		if want := "[" + c.want + "]"; string(got) != want {
			t.Errorf("%016x: canonicalize(%s) = %s, want %s", c.bits, in, got, want)
		}
	}
}

// TestCanonicalizeRejects covers inputs RFC 8785 (through I-JSON) excludes:
// NaN and Infinity have no JSON spelling at all, and duplicate names, lone
// surrogates and invalid UTF-8 make the canonical form ambiguous.
func TestCanonicalizeRejects(t *testing.T) {
	for _, in := range []string{
		`[NaN]`, `[Infinity]`, `[-Infinity]`, `[1e400]`,
		`{"a":1,"a":2}`,
		`["\ud800"]`, `["\udc00x"]`,
		"[\"\xff\"]",
		``, `   `, `{`, `{"a":1} x`,
	} {
		if got, err := canonicalize([]byte(in)); err == nil {
			t.Errorf("canonicalize(%q) = %q, want an error", in, got)
		}
	}
}

// TestCanonicalRemovesOnlyHashAndSignatures checks what the hash covers.
func TestCanonicalRemovesOnlyHashAndSignatures(t *testing.T) {
	in := `{"b":2.0,"signatures":[{"x":1}],"chain":{"receipt_hash":"sha256:00","previous_receipt_hash":null,"merkle_root":"m"},"a":"é"}`
	got, err := Canonical([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"a":"é","b":2,"chain":{"merkle_root":"m","previous_receipt_hash":null}}`
	if string(got) != want {
		t.Errorf("Canonical = %s, want %s", got, want)
	}
	h, err := Hash([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if h != digest([]byte(want)) || !strings.HasPrefix(h, HashPrefix) || len(h) != len(HashPrefix)+64 {
		t.Errorf("Hash = %s, want sha256 of %s", h, want)
	}
}
