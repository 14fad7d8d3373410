package hook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// The replay steps (docs/scenarios.md, "Replay steps: recorded
// dependencies"): each reads one nondeterministic input whose value the
// scenario fixes, so that a replay of the task can be compared with its
// source and an override can name what it replaces. Each dependency has a
// stable override key (spec 002, "Override keys", in its recommended forms);
// memory_read and checkpoint record no overridable dependency.
const (
	OpClockRead  Op = "clock_read"  // read the clock: ValueMS (time:<label>)
	OpModelCall  Op = "model_call"  // ask the model: Response (llm:<call_id>)
	OpMCPCall    Op = "mcp_call"    // call MCP tool Tool on Server: Result (mcp:<server>:<call_id>)
	OpHostFact   Op = "host_fact"   // run host capability Capability: Value (host:<capability>:<call_id>)
	OpSecretRead Op = "secret_read" // read secret Name: Secret, a canary (secret:<name>)
	OpMemoryRead Op = "memory_read" // read the workspace's memories as they are now
	OpCheckpoint Op = "checkpoint"  // mark checkpoint CheckpointID
)

// replayFields are the fields each replay step may carry.
var replayFields = map[Op][]string{
	OpClockRead:  {"label", "value_ms", "source"},
	OpModelCall:  {"call_id", "request", "response", "retain"},
	OpMCPCall:    {"server", "call_id", "tool", "arguments", "result", "retain"},
	OpHostFact:   {"capability", "call_id", "program", "args", "value", "retain"},
	OpSecretRead: {"name", "secret"},
	OpMemoryRead: {"call_id"},
	OpCheckpoint: {"checkpoint_id"},
}

const replayOpNames = "clock_read, model_call, mcp_call, host_fact, secret_read, memory_read, checkpoint"

// Bounds of the replay steps' fields.
const (
	MaxLabel = 64  // clock_read label
	MaxID    = 128 // call ids, servers, capabilities, secret and checkpoint names
	MaxArgs  = 32  // host_fact args
	// MaxValueMS bounds a clock reading to the integers RFC 8785 (and so
	// an override's hash) represents exactly: 2^53 - 1.
	MaxValueMS = 1<<53 - 1
)

var (
	labelRE = regexp.MustCompile(`^[a-z0-9_.-]{1,64}$`)
	// An id is one or more ':'-separated parts of visible ASCII without
	// whitespace: the rest of a key after its label ("llm:main:1" is call
	// id "main:1"), so no part may be empty (internal/replay.Label).
	idRE = regexp.MustCompile(`^[A-Za-z0-9_.\-/@+=]+(:[A-Za-z0-9_.\-/@+=]+)*$`)
	// A segment is the first of two parts of a key (mcp:<server>:…,
	// host:<capability>:…): no ':'.
	segmentRE    = regexp.MustCompile(`^[A-Za-z0-9_.\-/@+=]+$`)
	checkpointRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,128}$`)
)

// Key is the override key of the dependency a replay step records, and the
// override kind that replaces it; "" for memory_read and checkpoint.
func (s Step) Key() (key, kind string) {
	switch s.Op {
	case OpClockRead:
		return "time:" + s.Label, "time"
	case OpModelCall:
		return "llm:" + s.CallID, "llm_provider_response"
	case OpMCPCall:
		return "mcp:" + s.Server + ":" + s.CallID, "mcp_tool_return"
	case OpHostFact:
		return "host:" + s.Capability + ":" + s.CallID, "host_fact"
	case OpSecretRead:
		return "secret:" + s.Name, "secret_value"
	}
	return "", ""
}

// Retained reports whether the Harness keeps the step's material for replay
// (retain, default true).
func (s Step) Retained() bool { return s.Retain == nil || *s.Retain }

// IsReplayStep reports whether op is one of the replay steps.
func IsReplayStep(op Op) bool { _, ok := replayFields[op]; return ok }

// checkReplay validates a replay step (its fields are the allowed ones).
func checkReplay(st Step, p string) error {
	id := func(field, v string, re *regexp.Regexp) error {
		switch {
		case v == "":
			return &Error{p + "." + field, "missing, want 1.." + fmt.Sprint(MaxID) + " characters"}
		case len(v) > MaxID:
			return &Error{p + "." + field, fmt.Sprintf("got %d characters, want at most %d", len(v), MaxID)}
		case !re.MatchString(v):
			return &Error{p + "." + field, fmt.Sprintf("got %q, want visible ASCII without whitespace%s", clipped(v), map[bool]string{true: ", no ':'", false: " (no empty ':'-separated part)"}[re == segmentRE])}
		}
		return nil
	}
	object := func(field string, raw json.RawMessage, required bool) error {
		if raw == nil {
			if required {
				return &Error{p + "." + field, "missing, want a JSON object"}
			}
			return nil
		}
		if t := bytes.TrimSpace(raw); len(t) == 0 || t[0] != '{' {
			return &Error{p + "." + field, "want a JSON object"}
		}
		return nil
	}
	switch st.Op {
	case OpClockRead:
		if !labelRE.MatchString(st.Label) {
			return &Error{p + ".label", fmt.Sprintf("got %q, want 1..%d characters of [a-z0-9_.-]", clipped(st.Label), MaxLabel)}
		}
		if st.ValueMS == nil || *st.ValueMS < 0 || *st.ValueMS > MaxValueMS {
			return &Error{p + ".value_ms", fmt.Sprintf("want an integer in 0..%d, the clock reading in milliseconds", int64(MaxValueMS))}
		}
		if st.Source != "" && st.Source != "wall" && st.Source != "monotonic" {
			return &Error{p + ".source", fmt.Sprintf("got %q, want wall or monotonic", clipped(st.Source))}
		}
	case OpModelCall:
		if err := id("call_id", st.CallID, idRE); err != nil {
			return err
		}
		if err := object("request", st.Request, false); err != nil {
			return err
		}
		if err := object("response", st.Response, true); err != nil {
			return err
		}
	case OpMCPCall:
		if err := id("server", st.Server, segmentRE); err != nil {
			return err
		}
		if err := id("call_id", st.CallID, idRE); err != nil {
			return err
		}
		if err := object("arguments", st.Arguments, false); err != nil {
			return err
		}
		if st.Result == nil {
			return &Error{p + ".result", "missing, want the tool's result (any JSON)"}
		}
	case OpHostFact:
		if err := id("capability", st.Capability, segmentRE); err != nil {
			return err
		}
		if err := id("call_id", st.CallID, idRE); err != nil {
			return err
		}
		if st.Value == nil {
			return &Error{p + ".value", "missing, want the program's stdout (a JSON string)"}
		}
		if len(*st.Value) > MaxContent {
			return &Error{p + ".value", fmt.Sprintf("got %d bytes, want at most %d", len(*st.Value), MaxContent)}
		}
		if len(st.Args) > MaxArgs {
			return &Error{p + ".args", fmt.Sprintf("got %d args, want at most %d", len(st.Args), MaxArgs)}
		}
		for i, a := range st.Args {
			if len(a) > maxStringSize {
				return &Error{fmt.Sprintf("%s.args[%d]", p, i), fmt.Sprintf("got %d bytes, want at most %d", len(a), maxStringSize)}
			}
		}
	case OpSecretRead:
		if err := id("name", st.Name, idRE); err != nil {
			return err
		}
		if len(st.Secret) < MinSecret {
			return &Error{p + ".secret", fmt.Sprintf("got %d bytes, want a secret of at least %d", len(st.Secret), MinSecret)}
		}
	case OpMemoryRead:
		if err := id("call_id", st.CallID, idRE); err != nil {
			return err
		}
	case OpCheckpoint:
		if !checkpointRE.MatchString(st.CheckpointID) {
			return &Error{p + ".checkpoint_id", fmt.Sprintf("got %q, want 1..128 characters of [A-Za-z0-9_.:-]", clipped(st.CheckpointID))}
		}
	}
	return nil
}

// uniqueKeys refuses a scenario in which two steps record the same
// dependency (an override key must name one) or mark the same checkpoint.
func uniqueKeys(steps []Step, base string) error {
	seen := map[string]int{}
	for i, st := range steps {
		key, _ := st.Key()
		field := "call_id"
		switch st.Op {
		case OpClockRead:
			field = "label"
		case OpSecretRead:
			field = "name"
		case OpCheckpoint:
			key, field = "checkpoint:"+st.CheckpointID, "checkpoint_id"
		case OpMemoryRead:
			key = "memory:" + st.CallID
		}
		if key == "" {
			continue
		}
		if j, dup := seen[key]; dup {
			return &Error{fmt.Sprintf("%s.steps[%d].%s", base, i, field), fmt.Sprintf("%s is recorded by step %d already: keys must be unique", strings.TrimPrefix(key, "checkpoint:"), j)}
		}
		seen[key] = i
	}
	return nil
}

func clipped(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
