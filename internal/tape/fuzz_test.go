package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzRead feeds arbitrary bytes to the reader. It must never panic or
// return an unstructured error, and whatever it accepts must survive a
// write-read cycle unchanged and rewrite to identical bytes.
func FuzzRead(f *testing.F) {
	for _, n := range goldenNames {
		if b, err := os.ReadFile(golden(n)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(hdr + "\n" + okRec + "\n"))
	f.Add([]byte(hdr + "\n" + `{"type":"record","seq":1,"virtual_time_ms":0,"monotonic_ms":0,"kind":"x","SEQ":2,"a":[1,{"b":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tp, err := Read(bytes.NewReader(data), "fuzz")
		if err != nil {
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Read: error %v (%T) is not a *tape.Error", err, err)
			}
			return
		}
		var first bytes.Buffer
		if err := WriteTape(&first, tp); err != nil {
			t.Fatalf("WriteTape of an accepted tape: %v", err)
		}
		again, err := Read(bytes.NewReader(first.Bytes()), "rewrite")
		if err != nil {
			t.Fatalf("Read of our own output: %v\n%s", err, first.Bytes())
		}
		if diff := cmp.Diff(tp, again); diff != "" {
			t.Fatalf("read-write-read changed the tape (-first +second):\n%s", diff)
		}
		var second bytes.Buffer
		if err := WriteTape(&second, again); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first.Bytes(), second.Bytes()) {
			t.Fatalf("second write differs:\n%s\n%s", first.Bytes(), second.Bytes())
		}
	})
}

// FuzzScanner checks the line scanner against encoding/json: it accepts a
// line exactly when encoding/json finds one valid JSON object, and reads
// the same strings and integers from it.
func FuzzScanner(f *testing.F) {
	f.Add([]byte(okRec))
	f.Add([]byte(`{"kind":"a\u00e9\ud83d\ude00\ud800x\"","seq":-0,"x":[1.5e3,{"y":null},true]}`))
	f.Add([]byte(`{"kind":"\/","seq":01}`))
	f.Add([]byte(` {"a":1} `))
	f.Fuzz(func(t *testing.T, line []byte) {
		var w wireLine
		err := decodeLine(line, &w)
		var obj map[string]any
		jerr := json.Unmarshal(line, &obj)
		if jerr == nil && obj == nil {
			jerr = errors.New("null is not an object")
		}
		if bytes.Count(line, []byte("["))+bytes.Count(line, []byte("{")) > maxDepth {
			return // deeper nesting than the scanner allows on purpose
		}
		if (err == nil) != (jerr == nil) {
			t.Fatalf("scanner error %v, encoding/json error %v, for %q", err, jerr, line)
		}
		if err != nil {
			return
		}
		for f := field(0); f < numFields; f++ {
			v, ok := obj[fieldNames[f]]
			if !ok || v == nil {
				continue
			}
			switch v := v.(type) {
			case string:
				got, err := w.str("t", f)
				if err != nil || got != v {
					t.Fatalf("field %s: scanner read %q (%v), encoding/json %q", fieldNames[f], got, err, v)
				}
			case float64:
				if got, err := w.int("t", f); err == nil && float64(got) != v && v < 1<<52 && v > -(1<<52) {
					t.Fatalf("field %s: scanner read %d, encoding/json %v", fieldNames[f], got, v)
				}
			}
		}
	})
}

// FuzzWriteRead builds records from arbitrary values: whatever the writer
// accepts, the reader must read back unchanged.
func FuzzWriteRead(f *testing.F) {
	f.Add(int64(0), int64(t0), int64(3), uint8(0), "out.txt", "hello", "wall", true)
	f.Add(int64(-1), int64(-5), int64(-2), uint8(5), "\xff", "", "x", false)
	f.Add(int64(1), int64(0), int64(0), uint8(8), "model_job", "\xfe", "1", false)
	f.Fuzz(func(t *testing.T, seq, vt, n int64, sel uint8, s1, s2, s3 string, spill bool) {
		p := Payload{Hash: Hash([]byte(s2)), Text: s2}
		if spill {
			p = Payload{Hash: Hash([]byte(s2)), Spilled: true, Len: n}
		}
		bodies := []Body{
			&ClockRead{Source: ClockSource(s3), ValueMs: vt},
			&ClockSleep{DurationMs: n},
			&LLMCall{RequestDigest: s1, Response: p},
			&FileRead{Path: s1, ContentHash: s3, LenBytes: n},
			&FileWrite{Path: s1, ContentHash: Hash([]byte(s3)), LenBytes: n},
			&FileDelete{Path: s1},
			&ProcessSpawn{Program: s1, Args: []string{s2, s3}, Cwd: s3, ExitCode: n, DurationMs: n, Stdout: p, Stderr: p},
			&MCPCall{Server: s1, Method: s2, RequestDigest: s3, ResponseDigest: s3, LatencyMs: n, Request: p, Response: p},
			&Unknown{Name: s1, Fields: map[string]json.RawMessage{s2: json.RawMessage(s3)}},
		}
		phase := PhaseUserScript
		if spill {
			phase = PhaseRuntimeFinalize
		}
		in := &Tape{Header: Header{Version: 1, HarnVersion: s3, StartedAtUnixMs: vt, ScriptPath: s1, Argv: []string{s3}},
			Records: []Record{{Seq: seq, Phase: phase, VirtualTimeMs: vt, MonotonicMs: n, Body: bodies[int(sel)%len(bodies)]}}}
		var buf bytes.Buffer
		if err := WriteTape(&buf, in); err != nil {
			return // refused: fine, as long as nothing unreadable was written
		}
		if u, ok := in.Records[0].Body.(*Unknown); ok {
			// Unknown field values are kept compact.
			var c bytes.Buffer
			json.Compact(&c, u.Fields[s2])
			u.Fields[s2] = c.Bytes()
		}
		out, err := Read(&buf, "fuzz")
		if err != nil {
			t.Fatalf("the writer wrote what the reader refuses: %v\n%s", err, buf.Bytes())
		}
		if diff := cmp.Diff(in, out); diff != "" {
			t.Fatalf("read back differs (-wrote +read):\n%s", diff)
		}
	})
}
