package hook

import (
	"encoding/json"
	"errors"
	"testing"
)

func decode(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestParseValid(t *testing.T) {
	sc, err := Parse(decode(t, `{"steps":[{"op":"work","ms":5},{"op":"emit","count":3,"interval_ms":1},
		{"op":"artifact","kind":"log","content":"x"},{"op":"input_required","prompt":"?"},{"op":"auth_required"},
		{"op":"tool_approval","tool":"sh","input":{"a":1}},{"op":"complete","summary":"ok"}]}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if len(sc.Steps) != 7 || sc.Steps[1].Count != 3 || !sc.Steps[6].Terminal() {
		t.Errorf("Parse = %+v", sc.Steps)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ in, param string }{
		{`"complete"`, "metadata.conform.scenario"},
		{`{"steps":[]}`, "metadata.conform.scenario.steps"},
		{`{"steps":[{"op":"complete"}],"extra":1}`, "metadata.conform.scenario"},
		{`{"steps":[{"op":"jump"}]}`, "metadata.conform.scenario.steps[0].op"},
		{`{"steps":[{"op":"work","ms":-1}]}`, "metadata.conform.scenario.steps[0].ms"},
		{`{"steps":[{"op":"work","ms":700000}]}`, "metadata.conform.scenario.steps[0].ms"},
		{`{"steps":[{"op":"emit"}]}`, "metadata.conform.scenario.steps[0].count"},
		{`{"steps":[{"op":"emit","count":100001}]}`, "metadata.conform.scenario.steps[0].count"},
		{`{"steps":[{"op":"work","count":2}]}`, "metadata.conform.scenario.steps[0].count"},
		{`{"steps":[{"op":"work","typo":2}]}`, "metadata.conform.scenario.steps[0]"},
		{`{"steps":[{"op":"fail"}]}`, "metadata.conform.scenario.steps[0].code"},
		{`{"steps":[{"op":"artifact","kind":"movie"}]}`, "metadata.conform.scenario.steps[0].kind"},
		{`{"steps":[{"op":"complete"},{"op":"work"}]}`, "metadata.conform.scenario.steps[1]"},
		{`{"steps":[{"op":"work","ms":"5"}]}`, "metadata.conform.scenario.steps[0]"},
	} {
		_, err := Parse(decode(t, tc.in))
		var se *Error
		if !errors.As(err, &se) {
			t.Errorf("Parse(%s) = %v, want *Error", tc.in, err)
			continue
		}
		if se.Param != tc.param {
			t.Errorf("Parse(%s) param = %q, want %q (%v)", tc.in, se.Param, tc.param, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"steps":[{"op":"complete"}]}`)
	f.Add(`{"steps":[{"op":"emit","count":2},{"op":"fail","code":"x"}]}`)
	f.Fuzz(func(t *testing.T, s string) {
		var v any
		if json.Unmarshal([]byte(s), &v) != nil {
			return
		}
		sc, err := Parse(v)
		if err == nil && (len(sc.Steps) == 0 || len(sc.Steps) > MaxSteps) {
			t.Fatalf("Parse accepted %d steps", len(sc.Steps))
		}
	})
}
