package fidelity

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/internal/tape"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

func h(s string) string { return tape.Hash([]byte(s)) }

func inline(s string) tape.Payload { return tape.Payload{Hash: h(s), Text: s} }

// spilled is a payload whose bytes would live in a CAS sidecar. No sidecar
// exists in these tests: the oracle must never need one.
func spilled(s string, n int64) tape.Payload { return tape.Payload{Hash: h(s), Spilled: true, Len: n} }

const t0 = 1767225600000

// base returns a small run with every kind, user_script then
// runtime_finalize records.
func base() []tape.Record {
	bodies := []tape.Body{
		&tape.ClockRead{Source: tape.SourceWall, ValueMs: t0},                         // 0
		&tape.ClockSleep{DurationMs: 100},                                             // 1
		&tape.FileRead{Path: "in.txt", ContentHash: h("in"), LenBytes: 2},             // 2
		&tape.LLMCall{RequestDigest: h("q1"), Response: inline("a1")},                 // 3
		&tape.LLMCall{RequestDigest: h("q2"), Response: spilled("long answer", 9000)}, // 4
		&tape.ProcessSpawn{Program: "git", Args: []string{"status"}, Cwd: "/w", ExitCode: 0, DurationMs: 5, Stdout: inline("clean"), Stderr: inline("")},                // 5
		&tape.MCPCall{Server: "fs", Method: "tools/call", RequestDigest: h("mq"), ResponseDigest: h("mr"), LatencyMs: 3, Request: inline("{}"), Response: inline("[]")}, // 6
		&tape.FileWrite{Path: "out.txt", ContentHash: h("out"), LenBytes: 3},                                                                                            // 7
		&tape.FileDelete{Path: "tmp.txt"},                                       // 8
		&tape.ClockRead{Source: tape.SourceWall, ValueMs: t0 + 100},             // 9 finalize
		&tape.FileWrite{Path: "receipt.json", ContentHash: h("r"), LenBytes: 1}, // 10 finalize
		&tape.ProcessSpawn{Program: "sh", Args: []string{"-c", "sync"}, ExitCode: 0, DurationMs: 1, Stdout: inline(""), Stderr: inline("")}, // 11 finalize
	}
	recs := make([]tape.Record, len(bodies))
	for i, b := range bodies {
		phase := tape.PhaseUserScript
		if i >= 9 {
			phase = tape.PhaseRuntimeFinalize
		}
		recs[i] = tape.Record{Seq: int64(i), Phase: phase, VirtualTimeMs: t0 + int64(i)*10, MonotonicMs: int64(i), Body: b}
	}
	return recs
}

// memory returns a Source over a tape built from records.
func memory(t testing.TB, name string, recs []tape.Record) Source {
	t.Helper()
	var buf bytes.Buffer
	if err := tape.WriteTape(&buf, &tape.Tape{Header: tape.Header{Version: 1, HarnVersion: "test"}, Records: recs}); err != nil {
		t.Fatal(err)
	}
	return Memory(name, buf.Bytes())
}

func raw(name, text string) Source {
	return Source{Name: name, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil }}
}

var reportSchema *jsonschema.Schema

func schema(t testing.TB) *jsonschema.Schema {
	t.Helper()
	if reportSchema == nil {
		s, err := schemas.Compile("fidelity-report.v1.schema.json")
		if err != nil {
			t.Fatal(err)
		}
		reportSchema = s
	}
	return reportSchema
}

// checkSchema validates the report's JSON form against the published
// schema, as a consumer would see it.
func checkSchema(t testing.TB, r *Report) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if probs := schemas.Problems(schema(t), inst); len(probs) > 0 {
		t.Errorf("report does not match fidelity-report.v1.schema.json: %v\n%s", probs, b)
	}
}

// mutate returns base() changed by f.
func mutate(f func([]tape.Record) []tape.Record) []tape.Record { return f(base()) }

type counts map[Category]int

// TestModes runs every mutation under every mode. want lists, per mode,
// the divergences by category; a mode left out must find none. Several
// rows are equal under a looser mode and differ under a stricter one.
func TestModes(t *testing.T) {
	tests := []struct {
		name string
		b    []tape.Record
		want map[Mode]counts
	}{
		{"identical", base(), nil},
		{"seq renumbered", mutate(func(r []tape.Record) []tape.Record {
			for i := range r {
				r[i].Seq += 50
			}
			return r
		}), map[Mode]counts{ByteIdentical: {SeqMismatch: 12}, PhaseAware: {SeqMismatch: 9}}},
		{"virtual time drift", mutate(func(r []tape.Record) []tape.Record {
			r[1].VirtualTimeMs += 3
			return r
		}), map[Mode]counts{ByteIdentical: {TimingDrift: 1}, PhaseAware: {TimingDrift: 1}}},
		{"monotonic drift in finalize", mutate(func(r []tape.Record) []tape.Record {
			r[10].MonotonicMs += 40
			return r
		}), map[Mode]counts{ByteIdentical: {TimingDrift: 1}}},
		{"process took longer", mutate(func(r []tape.Record) []tape.Record {
			r[5].Body.(*tape.ProcessSpawn).DurationMs = 50
			return r
		}), map[Mode]counts{ByteIdentical: {TimingDrift: 1}, PhaseAware: {TimingDrift: 1}}},
		{"mcp latency", mutate(func(r []tape.Record) []tape.Record {
			r[6].Body.(*tape.MCPCall).LatencyMs = 30
			return r
		}), map[Mode]counts{ByteIdentical: {TimingDrift: 1}, PhaseAware: {TimingDrift: 1}}},
		{"llm answered differently", mutate(func(r []tape.Record) []tape.Record {
			r[4].Body.(*tape.LLMCall).Response = spilled("another long answer", 9100)
			return r
		}), map[Mode]counts{ByteIdentical: {PayloadHashMismatch: 1}, PhaseAware: {PayloadHashMismatch: 1}, Semantic: {PayloadHashMismatch: 1}}},
		{"llm asked differently", mutate(func(r []tape.Record) []tape.Record {
			r[3].Body.(*tape.LLMCall).RequestDigest = h("q1 v2")
			return r
		}), map[Mode]counts{ByteIdentical: {PayloadHashMismatch: 1}, PhaseAware: {PayloadHashMismatch: 1}, Semantic: {PayloadHashMismatch: 1}}},
		{"same payload inline instead of spilled", mutate(func(r []tape.Record) []tape.Record {
			r[4].Body.(*tape.LLMCall).Response = tape.Payload{Hash: h("long answer"), Text: "whatever the text, the hash decides"}
			return r
		}), nil},
		{"stdout and mcp response changed", mutate(func(r []tape.Record) []tape.Record {
			r[5].Body.(*tape.ProcessSpawn).Stdout = inline("dirty")
			r[6].Body.(*tape.MCPCall).Response = inline("[1]")
			r[6].Body.(*tape.MCPCall).ResponseDigest = h("mr2")
			return r
		}), map[Mode]counts{ByteIdentical: {PayloadHashMismatch: 3}, PhaseAware: {PayloadHashMismatch: 3}, Semantic: {PayloadHashMismatch: 3}}},
		{"file written differently", mutate(func(r []tape.Record) []tape.Record {
			r[7].Body = &tape.FileWrite{Path: "out.txt", ContentHash: h("out2"), LenBytes: 4}
			return r
		}), map[Mode]counts{
			ByteIdentical: {PayloadHashMismatch: 1, FieldMismatch: 1}, PhaseAware: {PayloadHashMismatch: 1, FieldMismatch: 1},
			Semantic: {PayloadHashMismatch: 1, FieldMismatch: 1}, Outcome: {WriteSetMismatch: 1},
		}},
		{"file written elsewhere", mutate(func(r []tape.Record) []tape.Record {
			r[7].Body.(*tape.FileWrite).Path = "elsewhere.txt"
			return r
		}), map[Mode]counts{
			ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1},
			Semantic: {FieldMismatch: 1}, Outcome: {WriteSetMismatch: 2},
		}},
		{"written file deleted later", mutate(func(r []tape.Record) []tape.Record {
			return append(r, tape.Record{Seq: 12, Phase: tape.PhaseRuntimeFinalize, VirtualTimeMs: t0 + 120, MonotonicMs: 12, Body: &tape.FileDelete{Path: "out.txt"}})
		}), map[Mode]counts{ByteIdentical: {ExtraRecord: 1}, PhaseAware: {ExtraRecord: 1}, Semantic: {ExtraRecord: 1}, Outcome: {WriteSetMismatch: 1}}},
		{"args changed", mutate(func(r []tape.Record) []tape.Record {
			r[5].Body.(*tape.ProcessSpawn).Args = []string{"status", "--short"}
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1}, Semantic: {FieldMismatch: 1}}},
		{"last process failed", mutate(func(r []tape.Record) []tape.Record {
			r[11].Body.(*tape.ProcessSpawn).ExitCode = 1
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1}, Semantic: {FieldMismatch: 1}, Outcome: {ExitStatusMismatch: 1}}},
		{"earlier process failed", mutate(func(r []tape.Record) []tape.Record {
			r[5].Body.(*tape.ProcessSpawn).ExitCode = 1
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1}, Semantic: {FieldMismatch: 1}}},
		{"no process at all", mutate(func(r []tape.Record) []tape.Record {
			out := r[:0]
			for _, rec := range r {
				if rec.Kind() != tape.KindProcessSpawn {
					out = append(out, rec)
				}
			}
			return out
		}), map[Mode]counts{
			// Removing record 5 shifts the user_script records after it.
			ByteIdentical: {KindMismatch: 5, MissingRecord: 2},
			PhaseAware:    {KindMismatch: 3, MissingRecord: 2},
			Semantic:      {KindMismatch: 5, MissingRecord: 2},
			Outcome:       {ExitStatusMismatch: 1},
		}},
		{"user clock read a different time", mutate(func(r []tape.Record) []tape.Record {
			r[0].Body.(*tape.ClockRead).ValueMs++
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1}, Semantic: {FieldMismatch: 1}}},
		{"finalize clock read a different time", mutate(func(r []tape.Record) []tape.Record {
			r[9].Body.(*tape.ClockRead).ValueMs++
			r[9].Body.(*tape.ClockRead).Source = tape.SourceMonotonic
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 2}, Semantic: {FieldMismatch: 2}}},
		{"finalize read the clock twice more", mutate(func(r []tape.Record) []tape.Record {
			extra := tape.Record{Seq: 12, Phase: tape.PhaseRuntimeFinalize, VirtualTimeMs: t0, Body: &tape.ClockRead{Source: tape.SourceWall, ValueMs: t0}}
			out := append([]tape.Record{}, r[:10]...)
			out = append(out, extra, r[10], extra, r[11])
			return out
		}), map[Mode]counts{
			ByteIdentical: {KindMismatch: 2, ExtraRecord: 2},
			Semantic:      {KindMismatch: 2, ExtraRecord: 2},
		}},
		{"sleep duration", mutate(func(r []tape.Record) []tape.Record {
			r[1].Body.(*tape.ClockSleep).DurationMs = 200
			return r
		}), map[Mode]counts{ByteIdentical: {FieldMismatch: 1}, PhaseAware: {FieldMismatch: 1}, Semantic: {FieldMismatch: 1}}},
		{"record moved to finalize", mutate(func(r []tape.Record) []tape.Record {
			r[8].Phase = tape.PhaseRuntimeFinalize
			return r
		}), map[Mode]counts{
			ByteIdentical: {PhaseMismatch: 1}, Semantic: {PhaseMismatch: 1},
			// user_script loses its last record; runtime_finalize gains a
			// first one, which shifts the two after it.
			PhaseAware: {MissingRecord: 1, KindMismatch: 2, ExtraRecord: 1},
		}},
		{"kind swapped", mutate(func(r []tape.Record) []tape.Record {
			r[1].Body = &tape.FileDelete{Path: "x"}
			return r
		}), map[Mode]counts{ByteIdentical: {KindMismatch: 1}, PhaseAware: {KindMismatch: 1}, Semantic: {KindMismatch: 1}, Outcome: {WriteSetMismatch: 1}}},
		// The last process is now the git one, which also exited 0.
		{"last record missing", mutate(func(r []tape.Record) []tape.Record { return r[:11] }),
			map[Mode]counts{ByteIdentical: {MissingRecord: 1}, PhaseAware: {MissingRecord: 1}, Semantic: {MissingRecord: 1}}},
		{"extra llm call", mutate(func(r []tape.Record) []tape.Record {
			return append(r, tape.Record{Seq: 12, Phase: tape.PhaseRuntimeFinalize, Body: &tape.LLMCall{RequestDigest: h("q3"), Response: inline("a3")}})
		}), map[Mode]counts{ByteIdentical: {ExtraRecord: 1}, PhaseAware: {ExtraRecord: 1}, Semantic: {ExtraRecord: 1}, Outcome: {LLMCallCountMismatch: 1}}},
		{"unknown kind in place of a sleep", mutate(func(r []tape.Record) []tape.Record {
			r[1].Body = &tape.Unknown{Name: "model_job", Fields: map[string]json.RawMessage{"job_id": json.RawMessage(`"j1"`)}}
			return r
		}), map[Mode]counts{ByteIdentical: {UnknownKind: 1}, PhaseAware: {UnknownKind: 1}, Semantic: {UnknownKind: 1}, Outcome: {UnknownKind: 1}}},
		{"unknown kind appended", mutate(func(r []tape.Record) []tape.Record {
			return append(r, tape.Record{Seq: 12, Phase: tape.PhaseRuntimeFinalize, Body: &tape.Unknown{Name: "model_job"}})
		}), map[Mode]counts{
			ByteIdentical: {ExtraRecord: 1, UnknownKind: 1}, PhaseAware: {ExtraRecord: 1, UnknownKind: 1},
			Semantic: {ExtraRecord: 1, UnknownKind: 1}, Outcome: {UnknownKind: 1},
		}},
	}
	a := memory(t, "a.tape", base())
	for _, tt := range tests {
		b := memory(t, "b.tape", tt.b)
		for _, mode := range Modes {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				rep, err := Compare(a, b, Options{Mode: mode})
				if err != nil {
					t.Fatalf("Compare: %v", err)
				}
				checkSchema(t, rep)
				want := tt.want[mode]
				got := counts(rep.ByCategory)
				if len(want) == 0 && len(got) == 0 {
					if rep.Status != StatusEqual {
						t.Errorf("status %s, want equal", rep.Status)
					}
					return
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("divergences by category (-want +got):\n%s\n%s", diff, messages(rep))
				}
				if len(want) > 0 && rep.Status != StatusDiverged {
					t.Errorf("status %s, want diverged", rep.Status)
				}
			})
		}
	}
}

func messages(r *Report) string {
	var b strings.Builder
	for _, d := range r.Divergences {
		b.WriteString(string(d.Category) + ": " + d.Message + "\n")
	}
	return b.String()
}

// TestDivergenceDetail pins what one divergence says, so a reader of a
// report can find both records without the tool.
func TestDivergenceDetail(t *testing.T) {
	b := base()
	b[4].Body.(*tape.LLMCall).Response = spilled("other", 10)
	rep, err := Compare(memory(t, "a.tape", base()), memory(t, "b.tape", b), Options{Mode: Semantic})
	if err != nil {
		t.Fatal(err)
	}
	idx := 4
	want := []Divergence{{
		Category: PayloadHashMismatch, Stream: "all", Index: &idx, Field: "response.content_hash",
		A:       &Side{Seq: 4, Line: 6, Kind: "llm_call", Phase: "user_script", Value: h("long answer")},
		B:       &Side{Seq: 4, Line: 6, Kind: "llm_call", Phase: "user_script", Value: h("other")},
		Message: "record 4 (seq 4 in A, 4 in B): response.content_hash: A has " + h("long answer") + ", B has " + h("other"),
	}}
	if diff := cmp.Diff(want, rep.Divergences); diff != "" {
		t.Errorf("divergences (-want +got):\n%s", diff)
	}
	if rep.Compared != 12 || rep.A.Records != 12 || rep.B.Records != 12 || rep.A.HarnVersion != "test" {
		t.Errorf("compared %d, records %d/%d, harn_version %q; want 12, 12/12, test", rep.Compared, rep.A.Records, rep.B.Records, rep.A.HarnVersion)
	}
}

func TestTruncation(t *testing.T) {
	b := mutate(func(r []tape.Record) []tape.Record {
		for i := range r {
			r[i].Seq += 1
		}
		return r
	})
	rep, err := Compare(memory(t, "a", base()), memory(t, "b", b), Options{Mode: ByteIdentical, MaxDivergences: 5})
	if err != nil {
		t.Fatal(err)
	}
	checkSchema(t, rep)
	if !rep.Truncated || len(rep.Divergences) != 5 || rep.DivergenceCount != 12 || rep.ByCategory[SeqMismatch] != 12 {
		t.Errorf("truncated %v, listed %d, count %d, by category %v; want true, 5, 12, seq_mismatch 12",
			rep.Truncated, len(rep.Divergences), rep.DivergenceCount, rep.ByCategory)
	}
}

func TestInputErrors(t *testing.T) {
	good := memory(t, "good", base())
	newer := raw("newer", `{"type":"header","version":2}`+"\n")
	torn := raw("torn", `{"type":"header","version":1}`+"\n"+`{"type":"record","seq":0,"virtual_ti`)
	lateBad := raw("late", `{"type":"header","version":1}`+"\n"+
		`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":0,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":1}`+"\n"+
		`{"type":"record","seq":1,"kind":"clock_sleep"}`+"\n")
	missing := Source{Name: "missing", Open: func() (io.ReadCloser, error) { return nil, errors.New("no such file") }}
	tests := []struct {
		name  string
		a, b  Source
		want  []Divergence // category and input only
		code  tape.Code
		modes []Mode
	}{
		{"newer B", good, newer, []Divergence{{Category: VersionUnsupported, Input: "b"}}, tape.CodeVersionUnsupported, Modes},
		{"newer A and torn B", newer, torn, []Divergence{{Category: VersionUnsupported, Input: "a"}}, tape.CodeVersionUnsupported, Modes},
		{"both unopenable", missing, missing, []Divergence{{Category: UnreadableInput, Input: "a"}, {Category: UnreadableInput, Input: "b"}}, tape.CodeIO, Modes},
		{"torn B", good, torn, []Divergence{{Category: UnreadableInput, Input: "b"}}, tape.CodeTornLine, Modes},
		{"bad record late in A", lateBad, good, []Divergence{{Category: UnreadableInput, Input: "a"}}, tape.CodeMalformed, Modes},
	}
	for _, tt := range tests {
		for _, mode := range tt.modes {
			t.Run(tt.name+"/"+string(mode), func(t *testing.T) {
				rep, err := Compare(tt.a, tt.b, Options{Mode: mode})
				var te *tape.Error
				if !errors.As(err, &te) || te.Code != tt.code {
					t.Fatalf("Compare: err = %v, want a *tape.Error with code %s", err, tt.code)
				}
				checkSchema(t, rep)
				if rep.Status != StatusError {
					t.Errorf("status %s, want error", rep.Status)
				}
				var got []Divergence
				for _, d := range rep.Divergences {
					if d.Category == VersionUnsupported || d.Category == UnreadableInput {
						if d.Message == "" {
							t.Errorf("divergence %s has no message", d.Category)
						}
						got = append(got, Divergence{Category: d.Category, Input: d.Input})
					}
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("input divergences (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func TestParseMode(t *testing.T) {
	for _, m := range Modes {
		if got, err := ParseMode(string(m)); err != nil || got != m {
			t.Errorf("ParseMode(%q) = %q, %v; want %q", m, got, err, m)
		}
	}
	if _, err := ParseMode("byte"); err == nil || !strings.Contains(err.Error(), "byte-identical") {
		t.Errorf("ParseMode(byte): err = %v, want one listing the modes", err)
	}
	if _, err := Compare(good(t), good(t), Options{Mode: "fast"}); err == nil {
		t.Error("Compare with mode \"fast\" succeeded, want an error")
	}
}

func good(t *testing.T) Source { return memory(t, "good", base()) }

// TestRecordsNotBytes: byte-identical compares decoded records, so key
// order, whitespace and escaping do not matter.
func TestRecordsNotBytes(t *testing.T) {
	hd := `{"type":"header","version":1,"harn_version":"x"}` + "\n"
	a := raw("a", hd+`{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":5,"monotonic_ms":1,"kind":"file_delete","path":"a/b"}`+"\n")
	b := raw("b", hd+"{ \"path\" : \"a\\/b\", \"kind\":\"file_delete\", \"monotonic_ms\":1,\"virtual_time_ms\":5, \"seq\":0, \"type\":\"record\" }\r\n")
	rep, err := Compare(a, b, Options{Mode: ByteIdentical})
	if err != nil || rep.Status != StatusEqual {
		t.Errorf("Compare: status %s, err %v, divergences %s; want equal", rep.Status, err, messages(rep))
	}
}
