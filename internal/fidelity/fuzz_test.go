package fidelity

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzCompare compares arbitrary tape pairs. The oracle must not panic,
// every report must match the schema, and a readable tape compared with
// itself may diverge only on records of unknown kind.
func FuzzCompare(f *testing.F) {
	for _, n := range []string{"all-kinds", "drift", "unknown-kind", "torn-line"} {
		if b, err := os.ReadFile(filepath.Join(tapesDir, n, "run.tape")); err == nil {
			f.Add(b, b[:len(b)/2])
		}
	}
	f.Add([]byte(`{"type":"header","version":1}`+"\n"), []byte{})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		src := func(name string, data []byte) Source {
			return Source{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }}
		}
		for _, mode := range Modes {
			rep, err := Compare(src("a", a), src("b", b), Options{Mode: mode, MaxDivergences: 50})
			if rep == nil {
				t.Fatalf("%s: no report (err %v)", mode, err)
			}
			checkSchema(t, rep)
			self, err := Compare(src("a", a), src("a", a), Options{Mode: mode})
			if err != nil {
				continue
			}
			for _, d := range self.Divergences {
				if d.Category != UnknownKind {
					out, _ := json.Marshal(d)
					t.Fatalf("%s: tape differs from itself: %s", mode, out)
				}
			}
		}
	})
}
