package core

import "testing"

func TestContainsAll(t *testing.T) {
	for _, c := range []struct {
		have, want []string
		ok         bool
	}{
		{[]string{"a", "b", "c"}, []string{"c", "a"}, true},
		{[]string{"a", "b"}, []string{"a", "b", "c"}, false},
		{nil, nil, true},
		// One id on several events: each copy must have arrived.
		{[]string{"x", "x"}, []string{"x", "x", "x"}, false},
		{[]string{"x", "x", "x", "y"}, []string{"x", "x", "x"}, true},
		{[]string{"x", "x", "x"}, []string{"x"}, true},
	} {
		if got := containsAll(c.have, c.want); got != c.ok {
			t.Errorf("containsAll(%v, %v) = %v, want %v", c.have, c.want, got, c.ok)
		}
	}
}
