package hook

import (
	"errors"
	"testing"
)

// The privacy steps (reason, redact) and emit's visibility parse as
// docs/scenarios.md says, and their mistakes name the field.
func TestPrivacySteps(t *testing.T) {
	ok := []map[string]any{
		{"op": "emit", "count": 1, "visibility": "internal"},
		{"op": "emit", "count": 1, "visibility": "receipt_only", "text": "x"},
		{"op": "reason", "text": "hidden thought", "summary": "a summary"},
		{"op": "redact", "name": "a.log", "reason": "why"},
		{"op": "redact"},
	}
	for _, st := range ok {
		if _, err := Parse(map[string]any{"steps": []any{st}}); err != nil {
			t.Errorf("%v: %v", st, err)
		}
	}
	bad := []struct {
		step  map[string]any
		param string
	}{
		{map[string]any{"op": "emit", "count": 1, "visibility": "secret"}, "metadata.conform.scenario.steps[0].visibility"},
		{map[string]any{"op": "reason", "text": "short"}, "metadata.conform.scenario.steps[0].text"},
		{map[string]any{"op": "reason", "summary": "no thought"}, "metadata.conform.scenario.steps[0].text"},
		{map[string]any{"op": "redact", "content": "x"}, "metadata.conform.scenario.steps[0].content"},
		{map[string]any{"op": "work", "visibility": "internal"}, "metadata.conform.scenario.steps[0].visibility"},
	}
	for _, c := range bad {
		_, err := Parse(map[string]any{"steps": []any{c.step}})
		var se *Error
		if !errors.As(err, &se) || se.Param != c.param {
			t.Errorf("%v: error %v, want one naming %s", c.step, err, c.param)
		}
	}
}
