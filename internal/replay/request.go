// Package replay holds the rules of a replay request (spec 002,
// "Replay-as-API contract") that the OpenAPI's ReplayTaskRequest schema
// cannot state: a from_checkpoint request names its checkpoint, override
// keys take the recommended dependency-label forms, each override carries
// material that matches its kind and hash, and secret overrides stay
// receipt_only. Schema checks (mode enum, kind enum, sha256 pattern) are
// the OpenAPI oracle's (internal/openapi, component ReplayTaskRequest); this
// package assumes nothing about them and never panics on hostile input.
package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/gowebpki/jcs"
)

// Problem codes: stable tags that fixtures and reports match on.
const (
	// CodeMalformed: the body is not a JSON object of the request's shape
	// (member types wrong); the schema oracle says more.
	CodeMalformed = "malformed"
	// CodeCheckpointMissing: mode from_checkpoint without checkpoint_id or
	// checkpoint_event_id (spec 002, Modes: "MUST include").
	CodeCheckpointMissing = "checkpoint_missing"
	// CodeOverridesInExact: a non-empty override map with mode exact (or no
	// mode, which defaults to exact), which replays "only recorded EventLog
	// material".
	CodeOverridesInExact = "overrides_in_exact"
	// CodeOverrideKeyForm: a key that is none of the recommended forms
	// llm:<call_id>, mcp:<server>:<tool_call_id>, secret:<name>,
	// time:<label>, host:<capability>:<call_id> (a SHOULD).
	CodeOverrideKeyForm = "override_key_form"
	// CodeOverrideKindMismatch: the key's label names one dependency, kind
	// another (llm: with mcp_tool_return).
	CodeOverrideKindMismatch = "override_kind_mismatch"
	// CodeOverrideMaterial: neither value nor artifact_id, or both.
	CodeOverrideMaterial = "override_material"
	// CodeOverrideHashMismatch: sha256 is not the SHA-256 of the RFC 8785
	// bytes of the inline value.
	CodeOverrideHashMismatch = "override_hash_mismatch"
	// CodeSecretVisibility: a secret override not sent receipt_only, or sent
	// with its value inline (a SHOULD, and RPLY-DELTA-005's premise).
	CodeSecretVisibility = "secret_visibility"
)

// Problem is one way a replay request breaks the contract.
type Problem struct {
	Code string `json:"code"`
	// Key is the override key concerned, "" for request-level problems.
	Key     string `json:"key,omitempty"`
	Message string `json:"message"`
}

func (p Problem) String() string {
	if p.Key != "" {
		return fmt.Sprintf("%s: override %q: %s", p.Code, p.Key, p.Message)
	}
	return p.Code + ": " + p.Message
}

// Request is the decoded replay request body.
type Request struct {
	Mode              *string             `json:"mode"`
	Override          map[string]Override `json:"override"`
	CheckpointID      *string             `json:"checkpoint_id"`
	CheckpointEventID *string             `json:"checkpoint_event_id"`
	Reason            *string             `json:"reason"`
}

// Override is one entry of the override map.
type Override struct {
	Kind       string          `json:"kind"`
	EventID    *string         `json:"event_id"`
	Target     *string         `json:"target"`
	Value      json.RawMessage `json:"value"`
	ArtifactID *string         `json:"artifact_id"`
	SHA256     *string         `json:"sha256"`
	Visibility *string         `json:"visibility"`
	Reason     *string         `json:"reason"`
}

// HasValue reports whether the override carries an inline value (JSON null
// counts as a value: it is one, and it has a hash).
func (o Override) HasValue() bool { return len(bytes.TrimSpace(o.Value)) > 0 }

// maxBody bounds what CheckRequest decodes: a request larger than this is
// refused before parsing.
const maxBody = 1 << 20

// kindsByLabel maps a key's label to the override kinds it may carry.
// host: facts and host tool results are both host material.
var kindsByLabel = map[string][]string{
	"llm":    {"llm_provider_response"},
	"mcp":    {"mcp_tool_return"},
	"secret": {"secret_value"},
	"time":   {"time"},
	"host":   {"host_fact", "tool_result"},
}

// knownKinds is the OpenAPI ReplayOverride kind enum. A kind outside it is
// the schema's finding, not a mismatch.
var knownKinds = map[string]bool{
	"llm_provider_response": true, "mcp_tool_return": true, "secret_value": true, "time": true,
	"host_fact": true, "tool_result": true, "event_payload": true, "checkpoint_value": true,
}

// segments is how many non-empty ":"-separated parts follow each label.
var segments = map[string]int{"llm": 1, "mcp": 2, "secret": 1, "time": 1, "host": 2}

// Label returns the dependency label of a key of a recommended form
// ("llm", "mcp", "secret", "time", "host"), or "" when the key has none of
// them. llm:<call_id> and the other one-part forms take the rest of the key
// as the id, colons included ("llm:main:1" is call id "main:1", the form the
// spec's own example uses).
func Label(key string) string {
	label, rest, ok := strings.Cut(key, ":")
	n, known := segments[label]
	if !ok || !known || rest == "" {
		return ""
	}
	if n == 2 {
		a, b, ok := strings.Cut(rest, ":")
		if !ok || a == "" || b == "" {
			return ""
		}
	}
	for _, part := range strings.Split(rest, ":") {
		if part == "" || strings.TrimSpace(part) != part {
			return ""
		}
	}
	return label
}

// ValueHash is the sha256 an inline override value carries: SHA-256 over
// the value's RFC 8785 bytes, "sha256:"-prefixed.
func ValueHash(value []byte) (string, error) {
	canon, err := jcs.Transform(value)
	if err != nil {
		return "", err
	}
	return BytesHash(canon), nil
}

// BytesHash is the sha256 of raw material (an artifact's bytes, a secret).
func BytesHash(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// CheckRequest returns every contract problem of a replay request body,
// sorted by key then code; none for an acceptable request. An empty body is
// acceptable (the body is optional, mode defaults to exact).
func CheckRequest(body []byte) []Problem {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if len(body) > maxBody {
		return []Problem{{Code: CodeMalformed, Message: fmt.Sprintf("body of %d bytes is over the %d this check reads", len(body), maxBody)}}
	}
	var r Request
	if err := json.Unmarshal(body, &r); err != nil {
		return []Problem{{Code: CodeMalformed, Message: "not a replay request object: " + clip(err.Error())}}
	}
	var out []Problem
	mode := "exact"
	if r.Mode != nil {
		mode = *r.Mode
	}
	if mode == "from_checkpoint" && empty(r.CheckpointID) && empty(r.CheckpointEventID) {
		out = append(out, Problem{Code: CodeCheckpointMissing, Message: "mode from_checkpoint needs checkpoint_id or checkpoint_event_id"})
	}
	if mode == "exact" && len(r.Override) > 0 {
		out = append(out, Problem{Code: CodeOverridesInExact, Message: fmt.Sprintf("%d override(s) with mode exact, which replays recorded material only", len(r.Override))})
	}
	for key, o := range r.Override {
		label := Label(key)
		if label == "" {
			out = append(out, Problem{Code: CodeOverrideKeyForm, Key: key, Message: "key is none of llm:<call_id>, mcp:<server>:<tool_call_id>, secret:<name>, time:<label>, host:<capability>:<call_id>"})
		} else if knownKinds[o.Kind] && !slices.Contains(kindsByLabel[label], o.Kind) {
			out = append(out, Problem{Code: CodeOverrideKindMismatch, Key: key, Message: fmt.Sprintf("a %s: key with kind %q, want %s", label, clip(o.Kind), strings.Join(kindsByLabel[label], " or "))})
		}
		hasArtifact := !empty(o.ArtifactID)
		switch {
		case !o.HasValue() && !hasArtifact:
			out = append(out, Problem{Code: CodeOverrideMaterial, Key: key, Message: "neither value nor artifact_id: no replacement material"})
		case o.HasValue() && hasArtifact:
			out = append(out, Problem{Code: CodeOverrideMaterial, Key: key, Message: "both value and artifact_id: which one replaces the recording is undefined"})
		}
		if o.HasValue() && o.SHA256 != nil {
			if h, err := ValueHash(o.Value); err == nil && h != *o.SHA256 {
				out = append(out, Problem{Code: CodeOverrideHashMismatch, Key: key, Message: fmt.Sprintf("sha256 %s, but the value's RFC 8785 bytes hash to %s", clip(*o.SHA256), h)})
			}
		}
		if label == "secret" || o.Kind == "secret_value" {
			vis := "receipt_only" // the schema's default
			if o.Visibility != nil {
				vis = *o.Visibility
			}
			switch {
			case vis != "receipt_only":
				out = append(out, Problem{Code: CodeSecretVisibility, Key: key, Message: fmt.Sprintf("secret override with visibility %q, want receipt_only", clip(vis))})
			case o.HasValue():
				// The value itself is never echoed: it is the secret.
				out = append(out, Problem{Code: CodeSecretVisibility, Key: key, Message: "secret override with its value inline; reference it by artifact_id and sha256"})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Key != out[j].Key {
			return out[i].Key < out[j].Key
		}
		return out[i].Code < out[j].Code
	})
	return out
}

func empty(s *string) bool { return s == nil || *s == "" }

// clip bounds text taken from the request in a message.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
