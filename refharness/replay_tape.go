package refharness

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/tape"
	"github.com/harn-conform/conform/refharness/fault"
)

// Tapes (docs/replay.md, "Tapes"; spec 003): a task whose run recorded a
// dependency has, once finished, its seed-003 event tape as an Artifact of
// the task, and one more artifact per payload the tape spills to its
// content-addressed sidecar. The tape is written from the task's
// dependency records, in the order the run recorded them, in the same
// commit as the terminal transition, so a finished task never lacks it.
// A replay task's tape is its own run's: recorded material where it
// replayed the source's, the substitute where an override applied.

// Faults of this area: the tape the Harness writes breaks spec 003's
// producer requirements, each in one way.
var (
	FaultTapeHeaderMissing = declare(fault.Fault{Name: "tape-header-missing",
		Doc:   "the tapes start with their first record: the header line is left out",
		Fails: []string{"RPLY-TAPE-001"}})
	FaultTapeSeqRepeats = declare(fault.Fault{Name: "tape-seq-repeats",
		Doc:   "every record of a tape has seq 0",
		Fails: []string{"RPLY-TAPE-002"}})
	FaultTapeLargeInline = declare(fault.Fault{Name: "tape-large-payload-inline",
		Doc:   "payloads over 4 KiB of text stay inline instead of spilling to the sidecar",
		Fails: []string{"RPLY-TAPE-005"}})
	FaultTapeInlineHashWrong = declare(fault.Fault{Name: "tape-inline-hash-wrong",
		Doc:   "an inline payload's content_hash is the hash of other bytes",
		Fails: []string{"RPLY-TAPE-006"}})
)

// Tape artifact metadata keys.
const (
	tapeMetaKey    = "conform.tape"
	tapeCASMetaKey = "conform.tape_cas"
	tapeMIME       = "application/x-harn-tape"
)

// tapeArtifactID is the id of task id's tape artifact: a fixed name, so the
// event_log material of a replay receipt can point at it.
func tapeArtifactID(task string) string { return "art_evlog_" + task }

// addTapeLocked adds finished task t's tape and its sidecar payloads to cm
// as artifacts of t. Tasks that recorded no dependency have none. Holds s.mu.
func (s *Server) addTapeLocked(cm *commit, t *Task) {
	deps := s.st.rp.deps[t.ID]
	if len(deps) == 0 {
		return // the common case: no dependency, no tape
	}
	id := tapeArtifactID(t.ID)
	if s.st.used(id) {
		return // written already (a task ending twice under a fault)
	}
	start := t.CreatedAt
	if t.StartedAt != nil {
		start = *t.StartedAt
	}
	startMs := int64(0)
	if ts, err := time.Parse(time.RFC3339Nano, start); err == nil {
		startMs = ts.UnixMilli()
	}
	data, spilled, err := writeTape(deps, startMs, s.opts.Faults)
	if err != nil {
		return // our own records always encode; a task without its tape is better than no ending
	}
	if cm.Blobs == nil {
		cm.Blobs = map[string][]byte{}
	}
	artifact := func(id, kind, mime string, meta map[string]any, content []byte) *Artifact {
		env := s.envelope("artifact", "artifact", meta)
		if id != "" {
			env.ID = id
		}
		a := &Artifact{Envelope: env, Kind: kind, MimeType: mime, Visibility: "internal", SHA256: ptr(sha256hex(content)),
			SizeBytes: ptr(int64(len(content))), WorkspaceID: ptr(t.WorkspaceID), SessionID: ptr(t.SessionID), TaskID: ptr(t.ID), BranchID: t.BranchID}
		cm.Puts = append(cm.Puts, put{Artifact: a})
		cm.Blobs[a.ID] = content
		return a
	}
	artifact(id, "log", tapeMIME, map[string]any{tapeMetaKey: true, "name": t.ID + ".tape"}, data)
	hashes := make([]string, 0, len(spilled))
	for h := range spilled {
		hashes = append(hashes, h)
	}
	slices.Sort(hashes)
	for _, h := range hashes {
		artifact("", "other", "application/octet-stream", map[string]any{tapeCASMetaKey: id, "hash": h, "name": h}, spilled[h])
	}
}

// writeTape writes the tape of a run's dependency records: one record per
// dependency the format has a kind for (clock_read, llm_call,
// mcp_json_rpc, process_spawn; a secret read has none), seq from 0,
// virtual time the Harness clock when the step ran. It returns the tape
// and the payloads spilled to the sidecar, by BLAKE3 hash.
func writeTape(deps []*depRecord, startMs int64, faults Faults) ([]byte, map[string][]byte, error) {
	var buf bytes.Buffer
	w, err := tape.NewWriter(&buf, nil, tape.Header{Version: tape.FormatVersion, HarnVersion: Version, StartedAtUnixMs: startMs,
		ScriptPath: "conform.scenario", Argv: []string{}})
	if err != nil {
		return nil, nil, err
	}
	spilled := map[string][]byte{}
	payload := func(b []byte) tape.Payload {
		h := tape.Hash(b)
		if (len(b) <= tape.MaxInlineBytes || faults.Has(FaultTapeLargeInline)) && utf8.Valid(b) {
			if faults.Has(FaultTapeInlineHashWrong) {
				h = tape.Hash(append(slices.Clip(b), '!'))
			}
			return tape.Payload{Hash: h, Text: string(b)}
		}
		spilled[h] = b
		return tape.Payload{Hash: h, Spilled: true, Len: int64(len(b))}
	}
	seq := int64(0)
	for _, d := range deps {
		var body tape.Body
		switch scenario.Op(d.Op) {
		case scenario.OpClockRead:
			v, err := strconv.ParseInt(string(d.Value), 10, 64)
			if err != nil {
				return nil, nil, err
			}
			body = &tape.ClockRead{Source: tape.ClockSource(d.Source), ValueMs: v}
		case scenario.OpModelCall:
			body = &tape.LLMCall{RequestDigest: tape.Hash(d.Request), Response: payload(d.Value)}
		case scenario.OpMCPCall:
			body = &tape.MCPCall{Server: d.Server, Method: "tools/call", RequestDigest: tape.Hash(d.Request), ResponseDigest: tape.Hash(d.Value),
				Request: payload(d.Request), Response: payload(d.Value)}
		case scenario.OpHostFact:
			var stdout string
			if err := json.Unmarshal(d.Value, &stdout); err != nil {
				return nil, nil, err
			}
			body = &tape.ProcessSpawn{Program: d.Program, Args: d.Args, Cwd: d.Cwd, Stdout: payload([]byte(stdout)), Stderr: payload(nil)}
		default:
			continue // no record kind (secret_read)
		}
		mono := d.AtMs - startMs
		if mono < 0 {
			mono = 0
		}
		if err := w.Write(tape.Record{Seq: seq, Phase: tape.PhaseUserScript, VirtualTimeMs: d.AtMs, MonotonicMs: mono, Body: body}); err != nil {
			return nil, nil, err
		}
		if !faults.Has(FaultTapeSeqRepeats) {
			seq++
		}
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	out := buf.Bytes()
	if faults.Has(FaultTapeHeaderMissing) {
		_, out, _ = bytes.Cut(out, []byte("\n"))
	}
	return out, spilled, nil
}
