package check

import (
	"strings"
	"testing"
)

func TestUpstreamCardNote(t *testing.T) {
	for _, tc := range []struct {
		card map[string]any
		want string
	}{
		{map[string]any{"object": "agent_card", "interfaces": []any{}}, "uses the upstream runner's shape"},
		{map[string]any{"object": "harn_agent_card"}, "would expect object"},
		{map[string]any{"object": "harn_agent_card", "interfaces": []any{}}, ""},
	} {
		got := UpstreamCardNote(tc.card)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("UpstreamCardNote(%v) = %q, want %q", tc.card, got, tc.want)
		}
	}
}
