package hook

// The scenario language: a list of steps carried in a task's metadata under
// "conform.scenario" that tells a harness how to drive the task through its
// lifecycle, so a conformance suite can reach every task state
// deterministically. docs/scenarios.md is the contract.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Key is the metadata key that carries a scenario.
const Key = "conform.scenario"

// Version is the scenario contract version a target advertises in discovery
// under capabilities["conform.scenarios"].
const Version = "v1"

// Op names a step.
type Op string

// The step operations of version v1.
const (
	OpWork          Op = "work"           // stay WORKING for MS milliseconds (cancelable)
	OpEmit          Op = "emit"           // emit Count agent.message events, IntervalMS apart
	OpArtifact      Op = "artifact"       // register an artifact with Content
	OpInputRequired Op = "input_required" // go INPUT_REQUIRED until a task message of kind "input"
	OpAuthRequired  Op = "auth_required"  // go AUTH_REQUIRED until a task message of kind "tool_confirmation"
	OpToolApproval  Op = "tool_approval"  // request approval of a tool call; AUTH_REQUIRED until decided
	OpComplete      Op = "complete"       // finish COMPLETED with an Outcome whose summary is Summary
	OpFail          Op = "fail"           // finish FAILED with failure {Code, Message}
	OpUseSecret     Op = "use_secret"     // make a tool call authenticated with Secret, a canary that must never be shown
	OpToolCall      Op = "tool_call"      // call Tool (needing Capability) under the task's Persona policy; its side effect is an artifact
)

// Privacy steps (EXT-PRIV, docs/scenarios.md#steps): hidden reasoning the
// agent must keep to itself, and the redaction of an artifact it made.
const (
	OpReason Op = "reason" // think Text (hidden reasoning, never shown); publish Summary as agent.reasoning_summary when set
	OpRedact Op = "redact" // redact this task's artifact named Name (its latest artifact without Name), leaving a trace
)

// Visibilities are the content classes of parts and artifacts; emit's
// Visibility is one of them.
var Visibilities = []string{"public", "internal", "receipt_only"}

// OpVaultSecret makes a tool call authenticated with the secret Name of
// vault VaultID (the conform.vault_secrets hook), if the vault allows "use".
const OpVaultSecret Op = "use_vault_secret"

// Bounds on hostile or mistaken scenarios.
const (
	MaxSteps      = 100
	MaxMS         = 600_000
	MaxCount      = 10_000
	MaxContent    = 64 << 10
	MinSecret     = 8 // a canary short enough to occur by chance would prove nothing
	maxStringSize = 4 << 10
)

// Step is one instruction. Only the fields of its Op may be set.
type Step struct {
	Op         Op             `json:"op"`
	MS         int            `json:"ms,omitempty"`
	Count      int            `json:"count,omitempty"`
	IntervalMS int            `json:"interval_ms,omitempty"`
	Text       string         `json:"text,omitempty"`
	Prompt     string         `json:"prompt,omitempty"`
	Reason     string         `json:"reason,omitempty"`
	Tool       string         `json:"tool,omitempty"`
	Input      map[string]any `json:"input,omitempty"`
	Kind       string         `json:"kind,omitempty"`
	MimeType   string         `json:"mime_type,omitempty"`
	Name       string         `json:"name,omitempty"`
	Content    string         `json:"content,omitempty"`
	Summary    string         `json:"summary,omitempty"`
	Code       string         `json:"code,omitempty"`
	Message    string         `json:"message,omitempty"`
	Secret     string         `json:"secret,omitempty"`
	VaultID    string         `json:"vault_id,omitempty"`
	Capability string         `json:"capability,omitempty"`
	Visibility string         `json:"visibility,omitempty"` // emit: the class of the messages' text part (default public)

	// The replay steps' fields (replay.go): recorded dependencies.
	Label        string          `json:"label,omitempty"`
	ValueMS      *int64          `json:"value_ms,omitempty"`
	Source       string          `json:"source,omitempty"`
	CallID       string          `json:"call_id,omitempty"`
	Request      json.RawMessage `json:"request,omitempty"`
	Response     json.RawMessage `json:"response,omitempty"`
	Retain       *bool           `json:"retain,omitempty"`
	Server       string          `json:"server,omitempty"`
	Arguments    json.RawMessage `json:"arguments,omitempty"`
	Result       json.RawMessage `json:"result,omitempty"`
	Program      string          `json:"program,omitempty"`
	Args         []string        `json:"args,omitempty"`
	Value        *string         `json:"value,omitempty"`
	CheckpointID string          `json:"checkpoint_id,omitempty"`
}

// Terminal reports whether the step ends the task.
func (s Step) Terminal() bool { return s.Op == OpComplete || s.Op == OpFail }

// Scenario is a parsed, validated scenario.
type Scenario struct {
	Steps []Step `json:"steps"`
}

// Error names the offending field by its path inside the task submit body.
type Error struct {
	Param string
	Msg   string
}

func (e *Error) Error() string { return e.Param + ": " + e.Msg }

// ArtifactKinds are the artifact kinds the protocol defines.
var ArtifactKinds = []string{"file", "patch", "image", "log", "diff", "receipt", "snapshot", "dataset", "other"}

// Parse validates v, the decoded JSON value of metadata["conform.scenario"]:
// an object {"steps": [...]}. Unknown fields and unknown ops are errors, since
// a typo in a test script must not silently turn into the default agent.
func Parse(v any) (*Scenario, error) {
	base := "metadata." + Key
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, &Error{base, "not JSON: " + err.Error()}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, &Error{base, fmt.Sprintf("got %s, want an object {\"steps\": [...]}", jsonv.AKind(v))}
	}
	var top struct {
		Steps []json.RawMessage `json:"steps"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&top); err != nil {
		return nil, &Error{base, "want {\"steps\": [...]}: " + err.Error()}
	}
	if len(top.Steps) == 0 {
		return nil, &Error{base + ".steps", "got no steps, want at least one"}
	}
	if len(top.Steps) > MaxSteps {
		return nil, &Error{base + ".steps", fmt.Sprintf("got %d steps, want at most %d", len(top.Steps), MaxSteps)}
	}
	sc := &Scenario{}
	for i, r := range top.Steps {
		p := fmt.Sprintf("%s.steps[%d]", base, i)
		var st Step
		d := json.NewDecoder(bytes.NewReader(r))
		d.DisallowUnknownFields()
		if err := d.Decode(&st); err != nil {
			return nil, &Error{p, err.Error()}
		}
		if err := check(st, p); err != nil {
			return nil, err
		}
		if i > 0 && sc.Steps[i-1].Terminal() {
			return nil, &Error{p, fmt.Sprintf("step after terminal step %q", sc.Steps[i-1].Op)}
		}
		sc.Steps = append(sc.Steps, st)
	}
	if err := uniqueKeys(sc.Steps, base); err != nil {
		return nil, err
	}
	return sc, nil
}

// allowedFields are the fields each op may carry (the replay steps' are
// added by replay.go).
var allowedFields = map[Op][]string{
	OpWork:          {"ms"},
	OpEmit:          {"count", "interval_ms", "text", "visibility"},
	OpReason:        {"text", "summary"},
	OpRedact:        {"name", "reason"},
	OpArtifact:      {"kind", "mime_type", "name", "content"},
	OpInputRequired: {"prompt"},
	OpAuthRequired:  {"reason"},
	OpToolApproval:  {"tool", "input"},
	OpComplete:      {"summary"},
	OpFail:          {"code", "message"},
	OpUseSecret:     {"secret", "tool"},
	OpVaultSecret:   {"vault_id", "name", "tool"},
	OpToolCall:      {"tool", "capability", "input", "content"},
}

func init() {
	for op, fs := range replayFields {
		allowedFields[op] = fs
	}
}

// field is one field of a step: its name and whether the step sets it.
type field struct {
	name string
	set  bool
}

// fieldsSet lists every field and whether st sets it, in a fixed order (so
// that a step with several fields its op does not take is refused for the
// same one every time), without a map: Parse runs on every receipt of a
// task with a secret.
func fieldsSet(st Step) [33]field {
	return [33]field{
		{"ms", st.MS != 0}, {"count", st.Count != 0}, {"interval_ms", st.IntervalMS != 0}, {"text", st.Text != ""},
		{"prompt", st.Prompt != ""}, {"reason", st.Reason != ""}, {"tool", st.Tool != ""}, {"input", st.Input != nil},
		{"kind", st.Kind != ""}, {"mime_type", st.MimeType != ""}, {"name", st.Name != ""}, {"content", st.Content != ""},
		{"summary", st.Summary != ""}, {"code", st.Code != ""}, {"message", st.Message != ""}, {"secret", st.Secret != ""},
		{"capability", st.Capability != ""}, {"vault_id", st.VaultID != ""}, {"visibility", st.Visibility != ""},
		// The replay steps' fields (replay.go).
		{"label", st.Label != ""}, {"value_ms", st.ValueMS != nil}, {"source", st.Source != ""}, {"call_id", st.CallID != ""},
		{"request", st.Request != nil}, {"response", st.Response != nil}, {"retain", st.Retain != nil}, {"server", st.Server != ""},
		{"arguments", st.Arguments != nil}, {"result", st.Result != nil}, {"program", st.Program != ""}, {"args", st.Args != nil},
		{"value", st.Value != nil}, {"checkpoint_id", st.CheckpointID != ""},
	}
}

func check(st Step, p string) error {
	fields, ok := allowedFields[st.Op]
	if !ok {
		return &Error{p + ".op", fmt.Sprintf("got %q, want one of work, emit, artifact, input_required, auth_required, tool_approval, use_secret, use_vault_secret, tool_call, reason, redact, %s, complete, fail", st.Op, replayOpNames)}
	}
	for _, f := range fieldsSet(st) {
		if f.set && !slices.Contains(fields, f.name) {
			return &Error{p + "." + f.name, fmt.Sprintf("field not allowed on op %q (allowed: %s)", st.Op, strings.Join(fields, ", "))}
		}
	}
	for _, f := range [...]struct{ name, v string }{{"text", st.Text}, {"prompt", st.Prompt}, {"reason", st.Reason}, {"tool", st.Tool},
		{"kind", st.Kind}, {"mime_type", st.MimeType}, {"name", st.Name}, {"summary", st.Summary}, {"code", st.Code}, {"message", st.Message},
		{"secret", st.Secret}, {"capability", st.Capability}, {"vault_id", st.VaultID}, {"visibility", st.Visibility}, {"program", st.Program}} {
		if len(f.v) > maxStringSize {
			return &Error{p + "." + f.name, fmt.Sprintf("got %d bytes, want at most %d", len(f.v), maxStringSize)}
		}
	}
	if _, ok := replayFields[st.Op]; ok {
		return checkReplay(st, p)
	}
	switch st.Op {
	case OpWork:
		if st.MS < 0 || st.MS > MaxMS {
			return &Error{p + ".ms", fmt.Sprintf("got %d, want 0..%d", st.MS, MaxMS)}
		}
	case OpEmit:
		if st.Count < 1 || st.Count > MaxCount {
			return &Error{p + ".count", fmt.Sprintf("got %d, want 1..%d", st.Count, MaxCount)}
		}
		if st.IntervalMS < 0 || st.IntervalMS > MaxMS {
			return &Error{p + ".interval_ms", fmt.Sprintf("got %d, want 0..%d", st.IntervalMS, MaxMS)}
		}
		if st.Visibility != "" && !slices.Contains(Visibilities, st.Visibility) {
			return &Error{p + ".visibility", fmt.Sprintf("got %q, want one of %s", st.Visibility, strings.Join(Visibilities, ", "))}
		}
	case OpReason:
		if len(st.Text) < MinSecret {
			return &Error{p + ".text", fmt.Sprintf("got %d bytes, want the hidden reasoning, at least %d", len(st.Text), MinSecret)}
		}
	case OpArtifact:
		if st.Kind != "" && !slices.Contains(ArtifactKinds, st.Kind) {
			return &Error{p + ".kind", fmt.Sprintf("got %q, want one of %s", st.Kind, strings.Join(ArtifactKinds, ", "))}
		}
		if len(st.Content) > MaxContent {
			return &Error{p + ".content", fmt.Sprintf("got %d bytes, want at most %d", len(st.Content), MaxContent)}
		}
	case OpFail:
		if st.Code == "" {
			return &Error{p + ".code", "missing, want a failure code"}
		}
	case OpToolCall:
		if st.Tool == "" {
			return &Error{p + ".tool", "missing, want the name of the tool to call"}
		}
		if len(st.Content) > MaxContent {
			return &Error{p + ".content", fmt.Sprintf("got %d bytes, want at most %d", len(st.Content), MaxContent)}
		}
	case OpVaultSecret:
		if st.VaultID == "" || st.Name == "" {
			return &Error{p + ".vault_id", "want vault_id and name, the vault and the name of its secret to use"}
		}
	case OpUseSecret:
		if len(st.Secret) < MinSecret {
			return &Error{p + ".secret", fmt.Sprintf("got %d bytes, want a secret of at least %d", len(st.Secret), MinSecret)}
		}
	}
	return nil
}
