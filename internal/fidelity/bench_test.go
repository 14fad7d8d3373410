package fidelity

import (
	"fmt"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/tape"
)

// writeLarge writes an n-record tape cycling through every kind, with
// inline payloads of a few hundred bytes and references to spilled ones
// (whose bytes the oracle never reads, so the sidecar is not written).
func writeLarge(b *testing.B, path string, n int, drift int64) {
	b.Helper()
	w, err := tape.Create(path, tape.Header{Version: 1, HarnVersion: "bench", StartedAtUnixMs: t0})
	if err != nil {
		b.Fatal(err)
	}
	text := fmt.Sprintf("%0300d", 7)
	for i := 0; i < n; i++ {
		var body tape.Body
		switch i % 8 {
		case 0:
			body = &tape.ClockRead{Source: tape.SourceWall, ValueMs: t0 + int64(i)}
		case 1:
			body = &tape.ClockSleep{DurationMs: 10}
		case 2:
			body = &tape.LLMCall{RequestDigest: h(fmt.Sprint("q", i)), Response: inline(text)}
		case 3:
			body = &tape.FileRead{Path: fmt.Sprintf("in/%d.txt", i), ContentHash: h("in"), LenBytes: 2}
		case 4:
			body = &tape.FileWrite{Path: fmt.Sprintf("out/%d.txt", i%1000), ContentHash: h(fmt.Sprint(i)), LenBytes: 9}
		case 5:
			body = &tape.FileDelete{Path: fmt.Sprintf("tmp/%d", i)}
		case 6:
			body = &tape.ProcessSpawn{Program: "git", Args: []string{"log", "-n", "1"}, Cwd: "/w", DurationMs: 3 + drift, Stdout: inline(text), Stderr: spilled("err", 5000)}
		case 7:
			body = &tape.MCPCall{Server: "fs", Method: "tools/call", RequestDigest: h("mq"), ResponseDigest: h("mr"), LatencyMs: 2, Request: inline(text), Response: spilled("big", 90000)}
		}
		phase := tape.PhaseUserScript
		if i > n-n/10 {
			phase = tape.PhaseRuntimeFinalize
		}
		if err := w.Write(tape.Record{Seq: int64(i), Phase: phase, VirtualTimeMs: t0 + int64(i) + drift, MonotonicMs: int64(i), Body: body}); err != nil {
			b.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkDiff100k diffs two 100,000-record tapes that agree except for
// timing, in every mode. The target is well under a second per diff.
func BenchmarkDiff100k(b *testing.B) {
	const n = 100000
	dir := b.TempDir()
	pa, pb := filepath.Join(dir, "a.tape"), filepath.Join(dir, "b.tape")
	writeLarge(b, pa, n, 0)
	writeLarge(b, pb, n, 0)
	for _, mode := range Modes {
		b.Run(string(mode), func(b *testing.B) {
			b.ReportAllocs()
			defer peakHeap(b)()
			for b.Loop() {
				rep, err := Compare(File(pa), File(pb), Options{Mode: mode})
				if err != nil {
					b.Fatal(err)
				}
				if rep.Status != StatusEqual || rep.A.Records != n {
					b.Fatalf("status %s after %d records, want equal after %d", rep.Status, rep.A.Records, n)
				}
			}
		})
	}
}

// BenchmarkDiff100kDrift diffs tapes whose every record drifted, so the
// byte-identical report is capped at DefaultMaxDivergences.
func BenchmarkDiff100kDrift(b *testing.B) {
	const n = 100000
	dir := b.TempDir()
	pa, pb := filepath.Join(dir, "a.tape"), filepath.Join(dir, "b.tape")
	writeLarge(b, pa, n, 0)
	writeLarge(b, pb, n, 5)
	b.ReportAllocs()
	for b.Loop() {
		rep, err := Compare(File(pa), File(pb), Options{Mode: ByteIdentical})
		if err != nil {
			b.Fatal(err)
		}
		if !rep.Truncated {
			b.Fatalf("report not truncated after %d divergences", rep.DivergenceCount)
		}
	}
}

// peakHeap samples the live heap while a benchmark runs and reports its
// peak as "peak-heap-MiB". Streaming keeps it flat as tapes grow: compare
// BenchmarkDiff100k with BenchmarkDiff10k.
func peakHeap(b *testing.B) (stop func()) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(2 * time.Millisecond)
		defer tick.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	}
}

// BenchmarkDiff10k is BenchmarkDiff100k at a tenth of the size, to show
// that peak heap does not grow with tape length.
func BenchmarkDiff10k(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	pa, pb := filepath.Join(dir, "a.tape"), filepath.Join(dir, "b.tape")
	writeLarge(b, pa, n, 0)
	writeLarge(b, pb, n, 0)
	b.ReportAllocs()
	defer peakHeap(b)()
	for b.Loop() {
		if _, err := Compare(File(pa), File(pb), Options{Mode: ByteIdentical}); err != nil {
			b.Fatal(err)
		}
	}
}
