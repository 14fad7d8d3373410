package tape

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/fixtures/tapes"
)

// Regenerate the golden tapes with:
//
//	go test ./internal/tape -run TestGolden -update
var update = flag.Bool("update", false, "rewrite the golden tapes in fixtures/tapes")

const goldenDir = "../../fixtures/tapes"

const t0 = 1767225600000 // 2026-01-01T00:00:00Z, the virtual clock's start

// variant describes how one generated tape departs from the base run. The
// fidelity tests rely on what each variant changes (see docs/tapes.md).
type variant struct {
	seqShift     int64 // added to every seq
	vtShift      int64 // added to every virtual_time_ms
	monoScale    int64 // monotonic_ms multiplier (0 means 1)
	slowTools    bool  // process durations and MCP latencies change
	llmSalt      string
	extraFinal   bool // extra runtime_finalize clock reads
	finalTiming  bool // runtime_finalize records get different timing
	lastExit     int64
	writeSalt    string
	extraLLMCall bool
}

// big returns n bytes of readable, deterministic text.
func big(seed string, n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%s line %05d: the quick brown fox jumps over the lazy dog\n", seed, i)
	}
	return b.Bytes()[:n]
}

// writeRun writes the sample run described by v: every record kind, inline
// and spilled payloads, one large LLM response served twice (stored once),
// a binary stderr (spilled although small), and runtime_finalize records.
func writeRun(t testing.TB, path string, v variant) {
	t.Helper()
	w, err := Create(path, Header{Version: FormatVersion, HarnVersion: "0.8.4", StartedAtUnixMs: t0, ScriptPath: "examples/cron-rollup.harn", Argv: []string{"--mode=daily"}})
	if err != nil {
		t.Fatal(err)
	}
	pay := func(b []byte) Payload {
		p, err := w.Payload(b)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	scale := v.monoScale
	if scale == 0 {
		scale = 1
	}
	seq := int64(0)
	vt := int64(t0)
	mono := int64(0)
	add := func(phase Phase, body Body) {
		r := Record{Seq: seq + v.seqShift, Phase: phase, VirtualTimeMs: vt + v.vtShift, MonotonicMs: mono * scale, Body: body}
		if phase == PhaseRuntimeFinalize && v.finalTiming {
			r.VirtualTimeMs += 1000
			r.MonotonicMs += 333
		}
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
		seq++
		mono += 3
	}
	slow := func(d int64) int64 {
		if v.slowTools {
			return d*2 + 1
		}
		return d
	}
	config := []byte(`{"window":"daily","sources":["a","b"]}`)
	add(PhaseUserScript, &ClockRead{Source: SourceWall, ValueMs: t0})
	vt += 250
	add(PhaseUserScript, &ClockSleep{DurationMs: 250})
	add(PhaseUserScript, &ClockRead{Source: SourceMonotonic, ValueMs: 250})
	add(PhaseUserScript, &FileRead{Path: "inputs/config.json", ContentHash: Hash(config), LenBytes: int64(len(config))})
	add(PhaseUserScript, &LLMCall{RequestDigest: Hash([]byte("request-1")), Response: pay([]byte(`{"text":"Summarise the rollup` + v.llmSalt + `."}`))})
	shared := big("llm-response"+v.llmSalt, 6000)
	add(PhaseUserScript, &LLMCall{RequestDigest: Hash([]byte("request-2")), Response: pay(shared)})
	add(PhaseUserScript, &LLMCall{RequestDigest: Hash([]byte("request-2")), Response: pay(shared)})
	add(PhaseUserScript, &ProcessSpawn{
		Program: "git", Args: []string{"log", "--oneline", "-n", "3"}, Cwd: "/work/repo",
		ExitCode: 0, DurationMs: slow(12),
		Stdout: pay([]byte("abc123 first\ndef456 second\n")),
		Stderr: pay([]byte{0xff, 0xfe, 0x00, 'w', 'a', 'r', 'n'}),
	})
	add(PhaseUserScript, &MCPCall{
		Server: "files", Method: "tools/call",
		RequestDigest: Hash([]byte("mcp-request")), ResponseDigest: Hash([]byte("mcp-response")),
		LatencyMs: slow(9),
		Request:   pay([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"list","arguments":{"token":"[REDACTED]"}}}`)),
		Response:  pay(big("mcp-listing", 5000)),
	})
	report := []byte("# Daily rollup" + v.writeSalt + "\n")
	add(PhaseUserScript, &FileWrite{Path: "out/report.md", ContentHash: Hash(report), LenBytes: int64(len(report))})
	add(PhaseUserScript, &FileDelete{Path: "out/scratch.txt"})
	if v.extraLLMCall {
		add(PhaseUserScript, &LLMCall{RequestDigest: Hash([]byte("request-3")), Response: pay([]byte("again"))})
	}
	summary := []byte("ok\n")
	add(PhaseUserScript, &FileWrite{Path: "out/summary.txt", ContentHash: Hash(summary), LenBytes: int64(len(summary))})
	add(PhaseRuntimeFinalize, &ClockRead{Source: SourceWall, ValueMs: t0 + 250})
	if v.extraFinal {
		add(PhaseRuntimeFinalize, &ClockRead{Source: SourceMonotonic, ValueMs: 260})
	}
	receipt := []byte(`{"final_state":"SUCCEEDED"}`)
	add(PhaseRuntimeFinalize, &FileWrite{Path: "out/receipt.json", ContentHash: Hash(receipt), LenBytes: int64(len(receipt))})
	if v.extraFinal {
		add(PhaseRuntimeFinalize, &ClockRead{Source: SourceWall, ValueMs: t0 + 270})
	}
	add(PhaseRuntimeFinalize, &ProcessSpawn{
		Program: "sh", Args: []string{"-c", "sync"}, ExitCode: v.lastExit, DurationMs: slow(4),
		Stdout: pay(nil), Stderr: pay(nil),
	})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// jsonString is b as a JSON string.
func jsonString(b []byte) string {
	out, err := json.Marshal(string(b))
	if err != nil {
		panic(err)
	}
	return string(out)
}

// writeLines writes a tape from literal lines, for shapes the Writer
// refuses to produce.
func writeLines(t testing.TB, path string, lines ...string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// generate writes every golden tape under dir, one directory per tape.
func generate(t testing.TB, dir string) {
	t.Helper()
	tape := func(name string) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(d, "run.tape")
	}
	writeRun(t, tape("all-kinds"), variant{})
	writeRun(t, tape("drift"), variant{seqShift: 100, vtShift: 7, monoScale: 2, slowTools: true})
	writeRun(t, tape("finalize-grew"), variant{extraFinal: true, finalTiming: true})
	writeRun(t, tape("stochastic-llm"), variant{llmSalt: " (sampled again)"})
	writeRun(t, tape("outcome-changed"), variant{lastExit: 1, writeSalt: " v2", extraLLMCall: true})

	// A tape whose one spilled payload lost its CAS file, and one whose CAS
	// file was altered after recording.
	for _, name := range []string{"cas-missing", "cas-corrupt"} {
		p := tape(name)
		w, err := Create(p, Header{Version: 1, HarnVersion: "0.8.4", StartedAtUnixMs: t0})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := w.Payload(big(name, 5000))
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(Record{Seq: 0, Phase: PhaseUserScript, VirtualTimeMs: t0, Body: &LLMCall{RequestDigest: Hash([]byte("q")), Response: resp}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		cas := CAS{Dir: CASDir(p)}
		if name == "cas-missing" {
			if err := os.Remove(cas.Path(resp.Hash)); err != nil {
				t.Fatal(err)
			}
			// The whole sidecar is gone: git does not keep empty directories.
			if err := os.Remove(cas.Dir); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b := big(name, 5000)
		b[100] ^= 0x20
		if err := os.WriteFile(cas.Path(resp.Hash), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	hello := Hash([]byte("hello"))
	writeLines(t, tape("newer-version"),
		`{"type":"header","version":2,"harn_version":"9.0.0","started_at_unix_ms":1767225600000,"script_path":"future.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":5}`,
		``)
	writeLines(t, tape("unknown-kind"),
		`{"type":"header","version":1,"harn_version":"0.9.0","started_at_unix_ms":1767225600000,"script_path":"media.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":5}`,
		`{"type":"record","seq":1,"phase":"user_script","virtual_time_ms":1767225600005,"monotonic_ms":5,"kind":"model_job","job_id":"job_1","state":"completed","asset_digests":["`+hello+`"]}`,
		`{"type":"record","seq":2,"phase":"user_script","virtual_time_ms":1767225600005,"monotonic_ms":6,"kind":"file_write","path":"out/image.png","content_hash":"`+hello+`","len_bytes":5}`,
		``)
	writeLines(t, tape("torn-line"),
		`{"type":"header","version":1,"harn_version":"0.8.4","started_at_unix_ms":1767225600000,"script_path":"crash.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":5}`,
		`{"type":"record","seq":1,"phase":"user_script","virtual_time_ms":1767225600005,"monotonic_ms":5,"kind":"file_wri`)
	// A payload over MAX_INLINE_BYTES kept inline, and a seq that goes
	// back: shapes the Writer refuses, written as lines.
	large := big("inline-too-large", MaxInlineBytes+100)
	writeLines(t, tape("inline-too-large"),
		`{"type":"header","version":1,"harn_version":"0.8.4","started_at_unix_ms":1767225600000,"script_path":"big.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"llm_call","request_digest":"`+Hash([]byte("q"))+`","response":{"content_hash":"`+Hash(large)+`","text":`+jsonString(large)+`}}`,
		``)
	writeLines(t, tape("seq-not-increasing"),
		`{"type":"header","version":1,"harn_version":"0.8.4","started_at_unix_ms":1767225600000,"script_path":"seq.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":5}`,
		`{"type":"record","seq":2,"phase":"user_script","virtual_time_ms":1767225600005,"monotonic_ms":5,"kind":"clock_sleep","duration_ms":5}`,
		`{"type":"record","seq":1,"phase":"user_script","virtual_time_ms":1767225600010,"monotonic_ms":10,"kind":"clock_sleep","duration_ms":5}`,
		``)
	writeLines(t, tape("inline-hash-mismatch"),
		`{"type":"header","version":1,"harn_version":"0.8.4","started_at_unix_ms":1767225600000,"script_path":"edit.harn","argv":[]}`,
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":1767225600000,"monotonic_ms":0,"kind":"llm_call","request_digest":"`+Hash([]byte("q"))+`","response":{"content_hash":"`+hello+`","text":"hello, edited by hand"}}`,
		``)
}

// goldenNames are the directories generate writes.
var goldenNames = tapes.Names

// TestGolden proves the committed golden tapes are exactly what the
// generator produces, so they can be rebuilt and reviewed.
func TestGolden(t *testing.T) {
	if *update {
		for _, n := range goldenNames {
			if err := os.RemoveAll(filepath.Join(goldenDir, n)); err != nil {
				t.Fatal(err)
			}
		}
		generate(t, goldenDir)
		return
	}
	tmp := t.TempDir()
	generate(t, tmp)
	want := tree(t, tmp)
	got := tree(t, goldenDir)
	for name, b := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("%s: missing from %s; run go test ./internal/tape -run TestGolden -update", name, goldenDir)
			continue
		}
		if !bytes.Equal(g, b) {
			t.Errorf("%s: differs from the generator's output; run go test ./internal/tape -run TestGolden -update", name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: in %s but not generated", name, goldenDir)
		}
	}
	if len(want) < len(goldenNames) {
		t.Fatalf("generated %d files, want at least %d", len(want), len(goldenNames))
	}
}

// tree maps the relative path of every file in the golden directories
// under root to its bytes.
func tree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := make(map[string][]byte)
	for _, n := range goldenNames {
		err := filepath.WalkDir(filepath.Join(root, n), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			files[filepath.ToSlash(rel)] = b
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return files
}
