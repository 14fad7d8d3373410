package suggest

import "testing"

func TestClosest(t *testing.T) {
	cmds := []string{"run", "selftest", "serve", "list", "receipt", "baseline", "report", "version"}
	for _, c := range []struct{ word, want string }{
		{"sevre", "serve"}, {"selftets", "selftest"}, {"basline", "baseline"}, {"verison", "version"},
		{"rnu", "run"}, {"RUN", "run"}, {"lst", "list"}, {"base", "baseline"},
		{"xyzzy", ""}, {"", ""}, {"re", ""},
	} {
		if got := Closest(c.word, cmds); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	levels := []string{"core", "extended", "receipts", "replay"}
	for _, c := range []struct{ word, want string }{{"cor", "core"}, {"extnded", "extended"}, {"reciepts", "receipts"}, {"rplay", "replay"}, {"gold", ""}} {
		if got := Closest(c.word, levels); got != c.want {
			t.Errorf("Closest(%q) = %q, want %q", c.word, got, c.want)
		}
	}
	if h := Hint("targte", []string{"target", "levels"}, "--%s"); h != " (did you mean --target?)" {
		t.Errorf("Hint: %q", h)
	}
	if h := Hint("zzz", []string{"target"}, "%q"); h != "" {
		t.Errorf("Hint for nothing near: %q", h)
	}
}
