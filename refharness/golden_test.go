package refharness

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// TestGoldenEchoTask pins the exact wire output of a workspace, session and
// echo task with an injected clock and id source: the injectable sources make
// fixtures reproducible byte for byte.
func TestGoldenEchoTask(t *testing.T) {
	run := func() []byte {
		base := time.Date(2026, 4, 25, 19, 0, 0, 0, time.UTC)
		var n atomic.Int64
		clock := func() time.Time { return base.Add(time.Duration(n.Add(1)) * time.Second) }
		h := newHarness(t, Options{Clock: clock, IDs: &SeqIDs{}})
		sess := h.session()
		id := h.submit(sess, nil).str("id")
		h.waitTerminal(id)
		var out bytes.Buffer
		for _, p := range []string{"/v1/tasks/" + id, "/v1/tasks/" + id + "/events", "/v1/sessions/" + sess + "/messages", "/v1/outcomes"} {
			var v any
			json.Unmarshal(h.must(200, h.do("GET", p, nil), p).Raw, &v)
			b, _ := json.MarshalIndent(map[string]any{"GET": p, "body": v}, "", "  ")
			out.Write(b)
			out.WriteString("\n")
		}
		return out.Bytes()
	}
	got := run()
	if again := run(); !bytes.Equal(got, again) {
		t.Fatalf("two identical runs differ:\n%s\n---\n%s", got, again)
	}
	path := filepath.Join("testdata", "golden", "echo-task.json")
	if *update {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s (run with -update after an intended change):\n%s", path, got)
	}
}
