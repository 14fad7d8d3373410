package check

import (
	"strings"
	"testing"
)

func TestNoEffect(t *testing.T) {
	const marker = "conform-refused-1"
	snap := func(name string, tasks []string, text string) Effects {
		return Effects{
			Objects: map[string]map[string]any{"/v1/personas/p1": {"id": "p1", "name": name, "usage": 3}, "/v1/memories/m1": {"id": "m1"}},
			Lists:   map[string][]string{"/v1/sessions/s1/tasks": tasks},
			Texts:   map[string]string{"GET /v1/personas": text},
		}
	}
	before := snap("a", []string{"t1"}, `[{"id":"p1"}]`)
	for _, tc := range []struct {
		name  string
		after Effects
		want  string // "" for no effect
	}{
		{"unchanged", snap("a", []string{"t1"}, `[{"id":"p1"}]`), ""},
		{"a volatile member moved", func() Effects {
			s := snap("a", []string{"t1"}, `[{"id":"p1"}]`)
			s.Objects["/v1/personas/p1"]["usage"] = 4
			return s
		}(), ""},
		{"patched", snap("b", []string{"t1"}, `[{"id":"p1"}]`), `/v1/personas/p1 changed: name "a" → "b"`},
		{"created", snap("a", []string{"t1", "t2"}, `[{"id":"p1"}]`), "lists t2 it did not list before"},
		{"deleted", func() Effects {
			s := snap("a", []string{"t1"}, `[{"id":"p1"}]`)
			s.Objects["/v1/memories/m1"] = nil
			return s
		}(), "/v1/memories/m1 no longer reads"},
		{"removed from a list", snap("a", nil, `[{"id":"p1"}]`), "no longer lists t1"},
		{"marked", snap("a", []string{"t1"}, `[{"id":"p1"},{"id":"p2","name":"`+marker+`"}]`), "shows in GET /v1/personas"},
		{"list unreadable after", func() Effects { s := snap("a", nil, ""); s.Lists = map[string][]string{}; return s }(), ""},
	} {
		err := NoEffect("writes refused to the read-only actor", before, tc.after, marker)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}
