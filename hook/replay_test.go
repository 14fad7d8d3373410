package hook

import (
	"errors"
	"strings"
	"testing"
)

// The replay steps parse as docs/scenarios.md says ("Replay steps"), each
// with its stable override key, and their mistakes name the field.
func TestReplaySteps(t *testing.T) {
	ok := []struct {
		step      map[string]any
		key, kind string
	}{
		{map[string]any{"op": "clock_read", "label": "started_at", "value_ms": 0}, "time:started_at", "time"},
		{map[string]any{"op": "clock_read", "label": "t.1-x", "value_ms": 1777118400000, "source": "monotonic"}, "time:t.1-x", "time"},
		{map[string]any{"op": "model_call", "call_id": "main:1", "response": map[string]any{}, "request": map[string]any{"m": 1}, "retain": false}, "llm:main:1", "llm_provider_response"},
		{map[string]any{"op": "mcp_call", "server": "search", "call_id": "call_0002", "result": nil}, "mcp:search:call_0002", "mcp_tool_return"},
		{map[string]any{"op": "mcp_call", "server": "s", "call_id": "c", "tool": "find", "arguments": map[string]any{}, "result": []any{1}}, "mcp:s:c", "mcp_tool_return"},
		{map[string]any{"op": "host_fact", "capability": "git", "call_id": "call_0003", "value": ""}, "host:git:call_0003", "host_fact"},
		{map[string]any{"op": "host_fact", "capability": "git", "call_id": "c", "value": "x", "program": "git", "args": []any{}}, "host:git:c", "host_fact"},
		{map[string]any{"op": "secret_read", "name": "deploy_token", "secret": "12345678"}, "secret:deploy_token", "secret_value"},
		{map[string]any{"op": "memory_read", "call_id": "m"}, "", ""},
		{map[string]any{"op": "checkpoint", "checkpoint_id": "ckpt:after-llm"}, "", ""},
	}
	for _, c := range ok {
		sc, err := Parse(map[string]any{"steps": []any{c.step}})
		if err != nil {
			t.Errorf("%v: %v", c.step, err)
			continue
		}
		if k, kind := sc.Steps[0].Key(); k != c.key || kind != c.kind {
			t.Errorf("%v: key %q kind %q, want %q %q", c.step, k, kind, c.key, c.kind)
		}
	}
	p := "metadata.conform.scenario.steps[0]."
	bad := []struct {
		step  map[string]any
		param string
	}{
		{map[string]any{"op": "clock_read", "value_ms": 1}, p + "label"},
		{map[string]any{"op": "clock_read", "label": "Upper", "value_ms": 1}, p + "label"},
		{map[string]any{"op": "clock_read", "label": strings.Repeat("a", 65), "value_ms": 1}, p + "label"},
		{map[string]any{"op": "clock_read", "label": "t"}, p + "value_ms"},
		{map[string]any{"op": "clock_read", "label": "t", "value_ms": -1}, p + "value_ms"},
		{map[string]any{"op": "clock_read", "label": "t", "value_ms": int64(1) << 53}, p + "value_ms"},
		{map[string]any{"op": "clock_read", "label": "t", "value_ms": 1, "source": "sundial"}, p + "source"},
		{map[string]any{"op": "clock_read", "label": "t", "value_ms": 1, "call_id": "x"}, p + "call_id"},
		{map[string]any{"op": "model_call", "response": map[string]any{}}, p + "call_id"},
		{map[string]any{"op": "model_call", "call_id": "a::b", "response": map[string]any{}}, p + "call_id"},
		{map[string]any{"op": "model_call", "call_id": "has space", "response": map[string]any{}}, p + "call_id"},
		{map[string]any{"op": "model_call", "call_id": strings.Repeat("c", 129), "response": map[string]any{}}, p + "call_id"},
		{map[string]any{"op": "model_call", "call_id": "c"}, p + "response"},
		{map[string]any{"op": "model_call", "call_id": "c", "response": "text"}, p + "response"},
		{map[string]any{"op": "model_call", "call_id": "c", "response": map[string]any{}, "request": []any{}}, p + "request"},
		{map[string]any{"op": "mcp_call", "server": "a:b", "call_id": "c", "result": 1}, p + "server"},
		{map[string]any{"op": "mcp_call", "server": "s", "call_id": "c"}, p + "result"},
		{map[string]any{"op": "mcp_call", "server": "s", "call_id": "c", "result": 1, "arguments": "x"}, p + "arguments"},
		{map[string]any{"op": "host_fact", "capability": "git", "call_id": "c"}, p + "value"},
		{map[string]any{"op": "host_fact", "call_id": "c", "value": "v"}, p + "capability"},
		{map[string]any{"op": "host_fact", "capability": "git", "call_id": "c", "value": "v", "args": make([]any, 33)}, p + "args"},
		{map[string]any{"op": "secret_read", "name": "n", "secret": "short"}, p + "secret"},
		{map[string]any{"op": "secret_read", "secret": "12345678"}, p + "name"},
		{map[string]any{"op": "secret_read", "name": "n", "secret": "12345678", "retain": false}, p + "retain"},
		{map[string]any{"op": "memory_read"}, p + "call_id"},
		{map[string]any{"op": "checkpoint", "checkpoint_id": "bad id"}, p + "checkpoint_id"},
		{map[string]any{"op": "checkpoint"}, p + "checkpoint_id"},
		{map[string]any{"op": "work", "ms": 1, "label": "x"}, p + "label"},
		{map[string]any{"op": "emit", "count": 1, "response": map[string]any{}}, p + "response"},
	}
	for _, c := range bad {
		_, err := Parse(map[string]any{"steps": []any{c.step}})
		var se *Error
		if !errors.As(err, &se) || se.Param != c.param {
			t.Errorf("%v: %v, want an error naming %s", c.step, err, c.param)
		}
	}
	// Two steps may not record one dependency (nor mark one checkpoint).
	for _, steps := range [][]any{
		{map[string]any{"op": "model_call", "call_id": "c", "response": map[string]any{}}, map[string]any{"op": "model_call", "call_id": "c", "response": map[string]any{}}},
		{map[string]any{"op": "checkpoint", "checkpoint_id": "k"}, map[string]any{"op": "checkpoint", "checkpoint_id": "k"}},
	} {
		_, err := Parse(map[string]any{"steps": steps})
		var se *Error
		if !errors.As(err, &se) || !strings.HasPrefix(se.Param, "metadata.conform.scenario.steps[1].") {
			t.Errorf("%v: %v, want the second step refused", steps, err)
		}
	}
}
