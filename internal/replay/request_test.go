package replay

import (
	"strings"
	"testing"
)

func TestLabel(t *testing.T) {
	for key, want := range map[string]string{
		"llm:main:1": "llm", "llm:c1": "llm", "mcp:search:call_1": "mcp", "secret:deploy_token": "secret",
		"time:started_at": "time", "host:git:call_3": "host",
		"mcp:search": "", "host:git": "", "host::c": "", "llm:": "", "llm": "", "model:main:1": "",
		"LLM:main:1": "", "llm:a::b": "", "llm: a": "", "": "",
	} {
		if got := Label(key); got != want {
			t.Errorf("Label(%q) = %q, want %q", key, got, want)
		}
	}
}

func codes(ps []Problem) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Code)
	}
	return strings.Join(out, ",")
}

func TestCheckRequest(t *testing.T) {
	okLLM := `{"kind":"llm_provider_response","value":{"a":1},"sha256":"sha256:015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862"}`
	for _, c := range []struct{ body, want string }{
		{``, ""},
		{`{}`, ""},
		{`{"mode":"with_overrides","override":{"llm:main:1":` + okLLM + `}}`, ""},
		{`{"mode":"with_overrides","override":{"llm:main:1":{"kind":"llm_provider_response","value":{"a":1},"sha256":"sha256:` + strings.Repeat("0", 64) + `"}}}`, CodeOverrideHashMismatch},
		{`{"override":{"llm:main:1":` + okLLM + `}}`, CodeOverridesInExact},
		{`{"mode":"from_checkpoint","checkpoint_id":""}`, CodeCheckpointMissing},
		{`{"mode":"from_checkpoint","checkpoint_event_id":"evt_1"}`, ""},
		{`{"mode":"with_overrides","override":{"host:git:c":{"kind":"tool_result","value":null}}}`, ""},
		{`{"mode":"with_overrides","override":{"host:git:c":{"kind":"time","artifact_id":"a","value":1}}}`, CodeOverrideKindMismatch + "," + CodeOverrideMaterial},
		{`{"mode":"with_overrides","override":{"secret:s":{"kind":"secret_value","value":"x"}}}`, CodeSecretVisibility},
		{`{"mode":"with_overrides","override":{"secret:s":{"kind":"secret_value","artifact_id":"a","visibility":"internal"}}}`, CodeSecretVisibility},
		{`{"mode":5}`, CodeMalformed},
		{`[1,2]`, CodeMalformed},
		{`{"mode":"with_overrides","override":{"x":{"kind":"nonsense"}}}`, CodeOverrideKeyForm + "," + CodeOverrideMaterial},
		{`{` + strings.Repeat(" ", maxBody) + `}`, CodeMalformed},
	} {
		if got := codes(CheckRequest([]byte(c.body))); got != c.want {
			t.Errorf("%.80s: problems %q, want %q", c.body, got, c.want)
		}
	}
}

// TestSecretValueNeverEchoed: a problem about an inline secret does not
// repeat the value.
func TestSecretValueNeverEchoed(t *testing.T) {
	const v = "not-a-real-secret-but-treated-as-one"
	for _, p := range CheckRequest([]byte(`{"mode":"with_overrides","override":{"secret:s":{"kind":"secret_value","value":"` + v + `","sha256":"sha256:` + strings.Repeat("1", 64) + `"}}}`)) {
		if strings.Contains(p.String(), v) {
			t.Errorf("problem echoes the secret: %v", p)
		}
	}
}

func FuzzCheckRequest(f *testing.F) {
	f.Add([]byte(`{"mode":"with_overrides","override":{"llm:a":{"kind":"llm_provider_response","value":[1,2.50]}}}`))
	f.Add([]byte(`{"mode":"from_checkpoint"}`))
	f.Fuzz(func(t *testing.T, b []byte) { _ = CheckRequest(b) })
}
