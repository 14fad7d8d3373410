package fidelity

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// Regenerate the golden reports with:
//
//	go test ./internal/fidelity -run TestGoldenReports -update
var update = flag.Bool("update", false, "rewrite the golden reports in fixtures/tapes/reports")

const tapesDir = "../../fixtures/tapes"

// golden opens a golden tape under a stable name, so reports do not depend
// on the directory the test runs in.
func golden(name string) Source {
	return Source{Name: name + "/run.tape", Open: func() (io.ReadCloser, error) {
		return os.Open(filepath.Join(tapesDir, name, "run.tape"))
	}}
}

// TestGoldenReports pins the full report for every golden pair (all-kinds
// against each variant) in every mode. The files double as examples of
// the report format for implementers comparing their own oracle.
func TestGoldenReports(t *testing.T) {
	dir := filepath.Join(tapesDir, "reports")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	pairs := []string{"all-kinds", "drift", "finalize-grew", "stochastic-llm", "outcome-changed", "unknown-kind", "newer-version", "torn-line"}
	for _, b := range pairs {
		for _, mode := range Modes {
			name := b + "." + string(mode) + ".json"
			rep, _ := Compare(golden("all-kinds"), golden(b), Options{Mode: mode})
			checkSchema(t, rep)
			got, err := json.MarshalIndent(rep, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, '\n')
			p := filepath.Join(dir, name)
			if *update {
				if err := os.WriteFile(p, got, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("%s: %v; run go test ./internal/fidelity -run TestGoldenReports -update", name, err)
				continue
			}
			if !bytes.Equal(got, want) {
				t.Errorf("%s: report differs from the golden file; if the change is intended, run go test ./internal/fidelity -run TestGoldenReports -update\ngot:\n%s", name, got)
			}
		}
	}
}
