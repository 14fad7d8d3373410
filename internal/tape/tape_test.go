package tape

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func golden(name string) string { return filepath.Join(goldenDir, name, "run.tape") }

// TestRoundTrip writes the sample run, reads it back and writes it again:
// the records must come back equal and the second write must reproduce the
// file byte for byte.
func TestRoundTrip(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.tape")
	writeRun(t, p, variant{extraFinal: true})
	first, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	tp, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[Kind]bool)
	for _, r := range tp.Records {
		seen[r.Kind()] = true
	}
	for _, k := range Kinds {
		if !seen[k] {
			t.Errorf("sample run has no %s record", k)
		}
	}
	var buf bytes.Buffer
	if err := WriteTape(&buf, tp); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(first), buf.String()); diff != "" {
		t.Errorf("rewrite differs (-first +second):\n%s", diff)
	}
	again, err := Read(&buf, "rewrite")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tp, again); diff != "" {
		t.Errorf("records differ after a read-write cycle (-want +got):\n%s", diff)
	}
}

func TestPayloadSpill(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.tape")
	w, err := Create(p, Header{})
	if err != nil {
		t.Fatal(err)
	}
	exact := bytes.Repeat([]byte("a"), MaxInlineBytes)
	over := bytes.Repeat([]byte("b"), MaxInlineBytes+1)
	tests := []struct {
		name    string
		in      []byte
		spilled bool
	}{
		{"empty", nil, false},
		{"small text", []byte("hello"), false},
		{"exactly the threshold", exact, false},
		{"one byte over", over, true},
		{"same bytes again", over, true},
		{"small but binary", []byte{0xff, 0x00}, true},
	}
	for _, tt := range tests {
		got, err := w.Payload(tt.in)
		if err != nil {
			t.Fatalf("%s: Payload: %v", tt.name, err)
		}
		if got.Spilled != tt.spilled {
			t.Errorf("%s: Spilled = %v, want %v", tt.name, got.Spilled, tt.spilled)
		}
		if got.Hash != Hash(tt.in) {
			t.Errorf("%s: Hash = %s, want %s", tt.name, got.Hash, Hash(tt.in))
		}
		if got.Size() != int64(len(tt.in)) {
			t.Errorf("%s: Size = %d, want %d", tt.name, got.Size(), len(tt.in))
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(CASDir(p))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("sidecar holds %d files, want 2 (the shared payload stored once, the binary one)", len(entries))
	}
	for _, e := range entries {
		if err := (CAS{Dir: CASDir(p)}).Check(e.Name(), -1); err != nil {
			t.Errorf("stored payload: %v", err)
		}
	}
}

// TestHashVector pins Hash to the published BLAKE3 value for empty input.
func TestHashVector(t *testing.T) {
	const want = "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"
	if got := Hash(nil); got != want {
		t.Errorf("Hash(empty) = %s, want %s", got, want)
	}
}

const hdr = `{"type":"header","version":1,"harn_version":"x","started_at_unix_ms":0,"script_path":"s","argv":[]}`
const okRec = `{"type":"record","seq":0,"phase":"user_script","virtual_time_ms":0,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":1}`

func TestReadErrors(t *testing.T) {
	h := Hash([]byte("x"))
	tests := []struct {
		name     string
		in       string
		code     Code
		line     int
		contains string
	}{
		{"empty file", "", CodeMissingHeader, 0, "empty tape"},
		{"blank lines only", "\n\n  \n", CodeMissingHeader, 0, "empty tape"},
		{"record first", okRec + "\n", CodeMissingHeader, 1, "want a header"},
		{"garbage header", "not json\n", CodeMalformed, 1, "not valid JSON"},
		{"header without version", `{"type":"header"}` + "\n", CodeMalformed, 1, `missing field "version"`},
		{"version zero", `{"type":"header","version":0}` + "\n", CodeMalformed, 1, "version = 0"},
		{"fractional version", `{"type":"header","version":1.5}` + "\n", CodeMalformed, 1, "version"},
		{"newer version", `{"type":"header","version":7,"future":{}}` + "\n", CodeVersionUnsupported, 1, "version 7 is newer"},
		{"second header", hdr + "\n" + hdr + "\n", CodeMalformed, 2, "second header"},
		{"bad type", hdr + "\n" + `{"type":"note"}` + "\n", CodeMalformed, 2, `type = "note"`},
		{"missing seq", hdr + "\n" + `{"type":"record","virtual_time_ms":0,"monotonic_ms":0,"kind":"clock_sleep","duration_ms":1}` + "\n", CodeMalformed, 2, `missing field "seq"`},
		{"negative seq", hdr + "\n" + strings.Replace(okRec, `"seq":0`, `"seq":-1`, 1) + "\n", CodeMalformed, 2, "seq = -1"},
		{"bad phase", hdr + "\n" + strings.Replace(okRec, `user_script`, `teardown`, 1) + "\n", CodeMalformed, 2, `phase = "teardown"`},
		{"negative duration", hdr + "\n" + strings.Replace(okRec, `"duration_ms":1`, `"duration_ms":-4`, 1) + "\n", CodeMalformed, 2, "duration_ms = -4"},
		{"string where number", hdr + "\n" + strings.Replace(okRec, `"duration_ms":1`, `"duration_ms":"1"`, 1) + "\n", CodeMalformed, 2, "duration_ms"},
		{"clock source", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"clock_read","source":"sundial","value_ms":1}` + "\n", CodeMalformed, 2, `source = "sundial"`},
		{"payload missing", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"llm_call","request_digest":"d"}` + "\n", CodeMalformed, 2, `missing field "response"`},
		{"payload neither form", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"llm_call","request_digest":"d","response":{"content_hash":"` + h + `"}}` + "\n", CodeMalformed, 2, "neither"},
		{"payload hash traversal", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"llm_call","request_digest":"d","response":{"content_hash":"../../etc/passwd","len_bytes":3}}` + "\n", CodeMalformed, 2, "lowercase hex"},
		{"uppercase hash", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"file_read","path":"p","content_hash":"` + strings.ToUpper(h) + `","len_bytes":1}` + "\n", CodeMalformed, 2, "lowercase hex"},
		{"inline len disagrees", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"llm_call","request_digest":"d","response":{"content_hash":"` + h + `","text":"x","len_bytes":9}}` + "\n", CodeMalformed, 2, "len_bytes = 9"},
		{"process without program", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"process_spawn","exit_code":0,"duration_ms":1}` + "\n", CodeMalformed, 2, `process_spawn: missing field "program"`},
		{"process args not strings", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"process_spawn","program":"ls","args":[1],"exit_code":0,"duration_ms":1}` + "\n", CodeMalformed, 2, "args: want an array of strings"},
		{"process exit code fractional", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"process_spawn","program":"ls","exit_code":1.5,"duration_ms":1}` + "\n", CodeMalformed, 2, "exit_code = 1.5, want an integer"},
		{"mcp without server", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"mcp_json_rpc","method":"m"}` + "\n", CodeMalformed, 2, `mcp_json_rpc: missing field "server"`},
		{"mcp negative latency", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":"mcp_json_rpc","server":"s","method":"m","request_digest":"a","response_digest":"b","latency_ms":-1}` + "\n", CodeMalformed, 2, "latency_ms = -1"},
		{"kind not a string", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":7}` + "\n", CodeMalformed, 2, "kind: want a string"},
		{"empty kind", hdr + "\n" + `{"type":"record","seq":0,"virtual_time_ms":0,"monotonic_ms":0,"kind":""}` + "\n", CodeMalformed, 2, "kind is empty"},
		{"seq too large", hdr + "\n" + strings.Replace(okRec, `"seq":0`, `"seq":99999999999999999999`, 1) + "\n", CodeMalformed, 2, "out of range"},
		{"bad escape", hdr + "\n" + strings.Replace(okRec, `"clock_sleep"`, `"clock\qsleep"`, 1) + "\n", CodeMalformed, 2, "bad escape"},
		{"data after the object", hdr + "\n" + okRec + " {}\n", CodeMalformed, 2, "after the object"},
		{"array line", hdr + "\n" + "[1,2]\n", CodeMalformed, 2, "want an object"},
		{"torn last line", hdr + "\n" + okRec + "\n" + okRec[:40], CodeTornLine, 3, "no newline"},
		{"garbage middle line", hdr + "\n" + "{oops\n" + okRec + "\n", CodeMalformed, 2, "not valid JSON"},
		{"line too long", hdr + "\n" + `{"type":"record","x":"` + strings.Repeat("a", MaxLineBytes) + "\"}\n", CodeLineTooLong, 2, "longer than"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read(strings.NewReader(tt.in), "in.tape")
			var te *Error
			if !errors.As(err, &te) {
				t.Fatalf("Read: err = %v, want *tape.Error %s", err, tt.code)
			}
			if te.Code != tt.code || te.Line != tt.line {
				t.Errorf("Read: code %s line %d, want code %s line %d (%v)", te.Code, te.Line, tt.code, tt.line, err)
			}
			if !strings.Contains(te.Error(), tt.contains) || !strings.Contains(te.Error(), "in.tape") {
				t.Errorf("Read: error %q, want it to name the file and contain %q", te.Error(), tt.contains)
			}
		})
	}
}

func TestVersionError(t *testing.T) {
	_, err := Load(golden("newer-version"))
	var te *Error
	if !errors.As(err, &te) || te.Code != CodeVersionUnsupported {
		t.Fatalf("Load(newer-version): err = %v, want %s", err, CodeVersionUnsupported)
	}
	if te.Version != 2 || te.Supported != FormatVersion {
		t.Errorf("version error: Version %d Supported %d, want 2 and %d", te.Version, te.Supported, FormatVersion)
	}
}

// TestLenientShapes covers shapes other producers may write that a reader
// should accept: nulls and missing optional fields, CRLF, blank lines, a
// last line without newline, extra fields.
func TestLenientShapes(t *testing.T) {
	in := `{"type":"header","version":1,"harn_version":"0.8.4","started_at_unix_ms":null,"script_path":null}` + "\r\n" +
		"\n" +
		`{"type":"record","seq":3,"virtual_time_ms":5,"monotonic_ms":6,"kind":"process_spawn","program":"ls","cwd":null,"exit_code":2,"duration_ms":1,"stdout_payload":{"content_hash":"` + Hash(nil) + `","text":""},"stderr_payload":{"content_hash":"` + Hash(nil) + `","text":"","len_bytes":0},"added_later":true}`
	tp, err := Read(strings.NewReader(in), "lenient")
	if err != nil {
		t.Fatal(err)
	}
	want := &Tape{
		Header: Header{Version: 1, HarnVersion: "0.8.4"},
		Records: []Record{{Seq: 3, Phase: PhaseUserScript, VirtualTimeMs: 5, MonotonicMs: 6, Body: &ProcessSpawn{
			Program: "ls", ExitCode: 2, DurationMs: 1,
			Stdout: Payload{Hash: Hash(nil)}, Stderr: Payload{Hash: Hash(nil)},
		}}},
	}
	if diff := cmp.Diff(want, tp); diff != "" {
		t.Errorf("Read (-want +got):\n%s", diff)
	}
}

func TestUnknownKindKept(t *testing.T) {
	tp, err := Load(golden("unknown-kind"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tp.Records) != 3 {
		t.Fatalf("got %d records, want 3 (none dropped)", len(tp.Records))
	}
	r := tp.Records[1]
	u, ok := r.Body.(*Unknown)
	if !ok || r.Kind() != KindUnknown || r.KindName() != "model_job" {
		t.Fatalf("record 1: kind %s (%s) body %T, want unknown model_job", r.Kind(), r.KindName(), r.Body)
	}
	if got := string(u.Fields["job_id"]); got != `"job_1"` {
		t.Errorf("job_id = %s, want \"job_1\"", got)
	}
	var buf bytes.Buffer
	if err := WriteTape(&buf, tp); err != nil {
		t.Fatal(err)
	}
	again, err := Read(&buf, "rewrite")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(tp, again); diff != "" {
		t.Errorf("unknown record changed in a read-write cycle (-want +got):\n%s", diff)
	}
}

func TestWriterRefuses(t *testing.T) {
	good := Payload{Hash: Hash(nil)}
	tests := []struct {
		name string
		rec  Record
		want string
	}{
		{"no body", Record{Phase: PhaseUserScript}, "no body"},
		{"bad phase", Record{Phase: "later", Body: &ClockSleep{}}, "phase"},
		{"bad payload hash", Record{Phase: PhaseUserScript, Body: &LLMCall{Response: Payload{Hash: "zz"}}}, "content hash"},
		{"invalid utf-8 path", Record{Phase: PhaseUserScript, Body: &FileDelete{Path: "\xff"}}, "UTF-8"},
		{"unknown posing as known", Record{Phase: PhaseUserScript, Body: &Unknown{Name: "clock_read"}}, "producer's kind"},
		{"unknown field clashing", Record{Phase: PhaseUserScript, Body: &Unknown{Name: "x", Fields: map[string]json.RawMessage{"seq": json.RawMessage("1")}}}, "clashes"},
		{"unknown field not json", Record{Phase: PhaseUserScript, Body: &Unknown{Name: "x", Fields: map[string]json.RawMessage{"a": json.RawMessage("{")}}}, "not valid JSON"},
		{"negative seq", Record{Seq: -1, Phase: PhaseUserScript, Body: &ClockSleep{}}, "want >= 0"},
		{"negative sleep", Record{Phase: PhaseUserScript, Body: &ClockSleep{DurationMs: -5}}, "duration_ms"},
		{"bad clock source", Record{Phase: PhaseUserScript, Body: &ClockRead{Source: "sundial"}}, "source"},
		{"bad file hash", Record{Phase: PhaseUserScript, Body: &FileWrite{Path: "p", ContentHash: "x"}}, "content_hash"},
		{"negative spilled length", Record{Phase: PhaseUserScript, Body: &LLMCall{Response: Payload{Hash: Hash(nil), Spilled: true, Len: -1}}}, "len_bytes"},
		{"inline payload needs no CAS", Record{Phase: PhaseUserScript, Body: &LLMCall{Response: good}}, ""},
	}
	var buf bytes.Buffer
	w, err := NewWriter(&buf, nil, Header{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		err := w.Write(tt.rec)
		if tt.want == "" {
			if err != nil {
				t.Errorf("%s: Write: %v, want success", tt.name, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Write: err = %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	if _, err := w.Payload(make([]byte, MaxInlineBytes+1)); err == nil {
		t.Error("Payload: spilling without a CAS succeeded, want an error")
	}
}

func TestValidateGolden(t *testing.T) {
	tests := []struct {
		name      string
		valid     bool
		codes     []Code // every finding's code, in order
		readError Code   // set when the tape cannot be read at all
	}{
		{name: "all-kinds", valid: true},
		{name: "drift", valid: true},
		{name: "unknown-kind", valid: true, codes: []Code{CodeUnknownKind}},
		{name: "cas-missing", codes: []Code{CodeCASMissing}},
		{name: "cas-corrupt", codes: []Code{CodeCASCorrupt}},
		{name: "inline-hash-mismatch", codes: []Code{CodeInlineHash}},
		{name: "newer-version", readError: CodeVersionUnsupported},
		{name: "torn-line", readError: CodeTornLine},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep, err := Validate(golden(tt.name))
			if tt.readError != "" {
				var te *Error
				if !errors.As(err, &te) || te.Code != tt.readError {
					t.Fatalf("Validate: err = %v, want %s", err, tt.readError)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if rep.Valid() != tt.valid {
				t.Errorf("Valid() = %v, want %v; findings %v", rep.Valid(), tt.valid, rep.Findings)
			}
			var codes []Code
			for _, f := range rep.Findings {
				codes = append(codes, f.Code)
			}
			if diff := cmp.Diff(tt.codes, codes); diff != "" {
				t.Errorf("finding codes (-want +got):\n%s\nfindings: %v", diff, rep.Findings)
			}
		})
	}
	rep, err := Validate(golden("all-kinds"))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Records != 15 || rep.Payloads != 3 {
		t.Errorf("all-kinds: %d records, %d spilled payloads, want 15 and 3", rep.Records, rep.Payloads)
	}

	// Four spilled references, three distinct payloads, three files: the
	// LLM response served twice is stored once.
	tp, err := Load(golden("all-kinds"))
	if err != nil {
		t.Fatal(err)
	}
	refs := 0
	for _, r := range tp.Records {
		for _, np := range r.Payloads() {
			if np.Payload.Spilled {
				refs++
			}
		}
	}
	files, err := os.ReadDir(CASDir(golden("all-kinds")))
	if err != nil {
		t.Fatal(err)
	}
	if refs != 4 || len(files) != 3 {
		t.Errorf("all-kinds: %d spilled references and %d sidecar files, want 4 and 3", refs, len(files))
	}
}

func TestValidateSidecarExtras(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "run.tape")
	writeRun(t, p, variant{})
	cas := CAS{Dir: CASDir(p)}
	stray, err := cas.Put([]byte("nobody refers to me"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cas.Dir, "notes.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file's content kept in the sidecar is fine, if it hashes right.
	config := []byte(`{"window":"daily","sources":["a","b"]}`)
	if _, err := cas.Put(config); err != nil {
		t.Fatal(err)
	}
	rep, err := Validate(p)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid() {
		t.Errorf("Valid() = false, want true (only warnings); findings %v", rep.Findings)
	}
	var msgs []string
	for _, f := range rep.Findings {
		msgs = append(msgs, f.String())
	}
	got := strings.Join(msgs, "\n")
	if len(rep.Findings) != 2 || !strings.Contains(got, stray) || !strings.Contains(got, "notes.txt") {
		t.Errorf("findings:\n%s\nwant two warnings naming %s and notes.txt", got, stray)
	}
}

func TestCASBytes(t *testing.T) {
	tp, err := Load(golden("all-kinds"))
	if err != nil {
		t.Fatal(err)
	}
	cas := CAS{Dir: CASDir(golden("all-kinds"))}
	want := big("llm-response", 6000)
	resp := tp.Records[5].Body.(*LLMCall).Response
	got, err := cas.Bytes(resp, 1<<20)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("Bytes(spilled) = %d bytes, %v; want the %d recorded bytes", len(got), err, len(want))
	}
	if _, err := cas.Bytes(resp, 100); err == nil || !strings.Contains(err.Error(), "over the 100 allowed") {
		t.Errorf("Bytes with a small bound: err = %v, want a refusal", err)
	}
	small := tp.Records[4].Body.(*LLMCall).Response
	if got, err := cas.Bytes(small, 0); err != nil || string(got) != small.Text {
		t.Errorf("Bytes(inline) = %q, %v; want %q", got, err, small.Text)
	}
	for _, tt := range []struct {
		name string
		code Code
	}{{"cas-missing", CodeCASMissing}, {"cas-corrupt", CodeCASCorrupt}} {
		tp, err := Load(golden(tt.name))
		if err != nil {
			t.Fatal(err)
		}
		_, err = CAS{Dir: CASDir(golden(tt.name))}.Bytes(tp.Records[0].Body.(*LLMCall).Response, 1<<20)
		var te *Error
		if !errors.As(err, &te) || te.Code != tt.code {
			t.Errorf("%s: Bytes: err = %v, want %s", tt.name, err, tt.code)
		}
	}
}

func TestValidateForgets(t *testing.T) {
	defer func(n int) { maxRemembered = n }(maxRemembered)
	maxRemembered = 1
	rep, err := Validate(golden("all-kinds"))
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Valid() || len(rep.Findings) != 1 || !strings.Contains(rep.Findings[0].Msg, "more than 1 distinct hashes") {
		t.Errorf("valid %v, findings %v; want valid with one warning about the bound", rep.Valid(), rep.Findings)
	}
}
