package check

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/harn-conform/conform/internal/client"
)

// Resource checks for the objects a Harness returns (narrative spec,
// "Resource model" and the per-resource sections). Each function looks at
// one aspect, so a target that breaks one rule fails exactly the
// requirement that states it.

// ResourceEnvelope checks the common envelope: a non-empty string id, a
// string object, string created_at and updated_at, and a metadata object.
// The timestamps' format is Timestamps' concern, the object's value
// Discriminator's.
func ResourceEnvelope(resp *client.Response, m map[string]any) error {
	var errs []string
	if id, ok := m["id"].(string); !ok || id == "" {
		errs = append(errs, fmt.Sprintf("id is %s, want a non-empty string", describe(m["id"])))
	}
	for _, f := range []string{"object", "created_at", "updated_at"} {
		if _, ok := m[f].(string); !ok {
			errs = append(errs, fmt.Sprintf("%s is %s, want a string", f, describe(m[f])))
		}
	}
	if _, ok := m["metadata"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("metadata is %s, want an object ({} when empty)", describe(m["metadata"])))
	}
	return findings(resp, resLabel(m), errs)
}

// timestampFields are the protocol's timestamp fields. Only these are
// checked: an extension field that merely ends in "_at" is not ours to judge.
var timestampFields = []string{"created_at", "updated_at", "started_at", "completed_at", "canceled_at",
	"expires_at", "issued_at", "checked_at", "reset_at"}

// opaqueFields holds caller- or agent-supplied values whose contents the protocol
// does not constrain.
var opaqueFields = []string{"metadata", "payload", "input", "parts", "details", "value", "output"}

// Timestamp checks one RFC 3339 timestamp in UTC ("Z", or a zero offset).
func Timestamp(s string) error {
	// RFC 3339 allows lower-case t and z; Go's parser does not.
	norm := strings.ToUpper(s)
	t, err := time.Parse(time.RFC3339Nano, norm)
	if err != nil {
		return fmt.Errorf("%q is not an RFC 3339 timestamp", s)
	}
	if _, off := t.Zone(); off != 0 || strings.HasSuffix(norm, "-00:00") {
		return fmt.Errorf("%q is not in UTC (offset %s), want Z or +00:00", s, t.Format("-07:00"))
	}
	return nil
}

// Timestamps checks every protocol timestamp field of m and of the objects
// nested in it (an Outcome's artifacts, a list's items), skipping opaqueFields
// caller data. null is allowed: optional timestamps are null when unset.
func Timestamps(resp *client.Response, m map[string]any) error {
	var errs []string
	walkTimestamps(m, "", &errs)
	return findings(resp, resLabel(m), errs)
}

func walkTimestamps(v any, path string, errs *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, val := range x {
			p := dotted(path, k)
			if slices.Contains(opaqueFields, k) {
				continue
			}
			if slices.Contains(timestampFields, k) {
				switch ts := val.(type) {
				case nil:
				case string:
					if err := Timestamp(ts); err != nil {
						*errs = append(*errs, p+": "+err.Error())
					}
				default:
					*errs = append(*errs, fmt.Sprintf("%s is %s, want an RFC 3339 string or null", p, describe(val)))
				}
				continue
			}
			walkTimestamps(val, p, errs)
		}
	case []any:
		for i, val := range x {
			walkTimestamps(val, fmt.Sprintf("%s[%d]", path, i), errs)
		}
	}
}

func dotted(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

// Discriminator checks that m's object field is want.
func Discriminator(resp *client.Response, m map[string]any, want string) error {
	if got, ok := m["object"].(string); !ok || got != want {
		return fmt.Errorf("%s: %s: object = %s, want %q", resp, resLabel(m), showValue(m["object"]), want)
	}
	return nil
}

// Enum sets of the narrative spec. TaskStatuses is closed (the lifecycle
// table names every state); the others are checked as recommendations,
// because the versioning rules let a version add enum values.
var (
	TaskStatuses  = []string{"SUBMITTED", "WORKING", "INPUT_REQUIRED", "AUTH_REQUIRED", "COMPLETED", "FAILED", "CANCELED"}
	SessionStates = []string{"ACTIVE", "IDLE", "PAUSED", "CLOSED", "FAILED"}
	MessageRoles  = []string{"user", "assistant", "system", "tool", "agent"}
	PartTypes     = []string{"text", "json", "tool_call", "tool_result", "artifact_ref", "file_ref", "image_ref"}
	Visibilities  = []string{"public", "internal", "receipt_only"}
	ArtifactKinds = []string{"file", "patch", "image", "log", "diff", "receipt", "snapshot", "dataset", "other"}
)

var bareSHA256 = regexp.MustCompile(`^[a-fA-F0-9]{64}$`)

// Fields checks the fields the narrative spec requires of a resource kind
// beyond the envelope: presence and JSON type, not enum membership (see
// Enums). Unknown kinds have no extra fields.
func Fields(resp *client.Response, kind string, m map[string]any) error {
	var errs []string
	str := func(f string) {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %s, want a non-empty string", f, describe(m[f])))
		}
	}
	nullableStr := func(f string) {
		v, ok := m[f]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s is missing, want a string or null", f))
			return
		}
		if _, isStr := v.(string); v != nil && !isStr {
			errs = append(errs, fmt.Sprintf("%s is %s, want a string or null", f, describe(v)))
		}
	}
	switch kind {
	case "task":
		for _, f := range []string{"session_id", "workspace_id", "status", "created_by"} {
			str(f)
		}
		if v, ok := m["input"]; !ok || v == nil {
			errs = append(errs, "input is missing or null, want the task's initial Message or payload")
		}
	case "session":
		str("workspace_id")
		str("state")
		switch m["transcript"].(type) {
		case map[string]any, string:
		default:
			errs = append(errs, fmt.Sprintf("transcript is %s, want a summary object or a link", describe(m["transcript"])))
		}
	case "message":
		str("role")
		parts, ok := m["parts"].([]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("parts is %s, want an array", describe(m["parts"])))
		}
		for i, p := range parts {
			pm, ok := p.(map[string]any)
			if !ok {
				errs = append(errs, fmt.Sprintf("parts[%d] is %s, want an object", i, describe(p)))
				continue
			}
			for _, f := range []string{"type", "visibility"} {
				if s, ok := pm[f].(string); !ok || s == "" {
					errs = append(errs, fmt.Sprintf("parts[%d].%s is %s, want a non-empty string", i, f, describe(pm[f])))
				}
			}
		}
	case "artifact":
		str("kind")
		str("mime_type")
		str("visibility")
		nullableStr("uri")
		nullableStr("sha256")
		if s, ok := m["sha256"].(string); ok && !bareSHA256.MatchString(s) {
			errs = append(errs, fmt.Sprintf("sha256 = %q, want 64 hex digits (bare, no prefix)", s))
		}
	case "outcome":
		str("task_id")
		str("status")
		if _, ok := m["summary"].(string); !ok {
			errs = append(errs, fmt.Sprintf("summary is %s, want a string", describe(m["summary"])))
		}
	case "event":
		str("event")
		r, ok := m["resource"].(map[string]any)
		if !ok {
			errs = append(errs, fmt.Sprintf("resource is %s, want an {object, id} pointer", describe(m["resource"])))
		} else {
			for _, f := range []string{"object", "id"} {
				if s, ok := r[f].(string); !ok || s == "" {
					errs = append(errs, fmt.Sprintf("resource.%s is %s, want a non-empty string", f, describe(r[f])))
				}
			}
		}
		if n, ok := m["sequence"].(json.Number); !ok {
			errs = append(errs, fmt.Sprintf("sequence is %s, want an integer", describe(m["sequence"])))
		} else if i, err := n.Int64(); err != nil || i < 0 {
			errs = append(errs, fmt.Sprintf("sequence = %s, want an integer >= 0", n))
		}
		if _, ok := m["payload"].(map[string]any); !ok {
			errs = append(errs, fmt.Sprintf("payload is %s, want an object", describe(m["payload"])))
		}
	}
	return findings(resp, resLabel(m), errs)
}

// TaskStatusKnown checks that a task's status is one of the protocol's states,
// spelled in upper case.
func TaskStatusKnown(resp *client.Response, m map[string]any) error {
	s, _ := m["status"].(string)
	if !slices.Contains(TaskStatuses, s) {
		return fmt.Errorf("%s: %s: status = %s, want one of %s", resp, resLabel(m), showValue(m["status"]), strings.Join(TaskStatuses, ", "))
	}
	return nil
}

// Enums checks the enum-valued fields of a resource kind against the v1
// sets (the Task status has its own check, the Outcome status belongs to the
// lifecycle checks). Unknown values are findings for a recommendation only.
func Enums(resp *client.Response, kind string, m map[string]any) error {
	var errs []string
	in := func(path string, v any, set []string) {
		if s, ok := v.(string); ok && !slices.Contains(set, s) {
			errs = append(errs, fmt.Sprintf("%s = %q, want one of %s", path, s, strings.Join(set, ", ")))
		}
	}
	switch kind {
	case "session":
		in("state", m["state"], SessionStates)
	case "message":
		in("role", m["role"], MessageRoles)
		parts, _ := m["parts"].([]any)
		for i, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				in(fmt.Sprintf("parts[%d].type", i), pm["type"], PartTypes)
				in(fmt.Sprintf("parts[%d].visibility", i), pm["visibility"], Visibilities)
			}
		}
	case "artifact":
		in("kind", m["kind"], ArtifactKinds)
		in("visibility", m["visibility"], Visibilities)
	}
	return findings(resp, resLabel(m), errs)
}

// SameID checks that a read of a resource names the id it was asked for.
func SameID(resp *client.Response, m map[string]any, want string) error {
	if got, _ := m["id"].(string); got != want {
		return fmt.Errorf("%s: id = %s, want %q (the id that was read)", resp, showValue(m["id"]), want)
	}
	return nil
}

// Agree checks that two representations of one resource (a list item and
// the by-id read, or two reads) agree on the fields that cannot change:
// id, object and created_at, plus any of extra that both carry.
func Agree(resp *client.Response, a, b map[string]any, extra ...string) error {
	var errs []string
	for _, f := range append([]string{"id", "object", "created_at"}, extra...) {
		av, aok := a[f]
		bv, bok := b[f]
		if f != "id" && f != "object" && f != "created_at" && (!aok || !bok) {
			continue
		}
		if fmt.Sprint(av) != fmt.Sprint(bv) || aok != bok {
			errs = append(errs, fmt.Sprintf("%s = %s here but %s in the other read", f, showValue(bv), showValue(av)))
		}
	}
	return findings(resp, resLabel(a), errs)
}

// label names the resource in messages: `task "task_1"`.
func resLabel(m map[string]any) string {
	obj, _ := m["object"].(string)
	id, _ := m["id"].(string)
	switch {
	case obj != "" && id != "":
		return fmt.Sprintf("%s %q", obj, id)
	case id != "":
		return fmt.Sprintf("%q", id)
	case obj != "":
		return obj
	}
	return "object"
}

func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "missing"
	case string:
		return fmt.Sprintf("%q", x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func findings(resp *client.Response, what string, errs []string) error {
	if len(errs) == 0 {
		return nil
	}
	slices.Sort(errs)
	return fmt.Errorf("%s: %s: %s", resp, what, strings.Join(errs, "; "))
}

// InOrder checks that the ids of want appear in listed in the same
// relative order (other ids may come between them), each exactly once.
func InOrder(what string, listed, want []string) error {
	pos := map[string]int{}
	for i, id := range listed {
		if _, dup := pos[id]; dup {
			return fmt.Errorf("%s: %q is listed twice", what, id)
		}
		pos[id] = i
	}
	last := -1
	for i, id := range want {
		p, ok := pos[id]
		if !ok {
			return fmt.Errorf("%s: %q (appended #%d) is not listed", what, id, i+1)
		}
		if p < last {
			return fmt.Errorf("%s: %q (appended #%d) is listed before %q (appended #%d); listed order %v, appended order %v",
				what, id, i+1, want[i-1], i, listed, want)
		}
		last = p
	}
	return nil
}

// ContentHash checks that served bytes hash to an Artifact's sha256. A
// "sha256:" prefix is ignored: the spelling is Fields' concern, the bytes
// this function's.
func ContentHash(resp *client.Response, sha string) error {
	sha = strings.TrimPrefix(sha, "sha256:")
	if resp.Truncated {
		return fmt.Errorf("%s: content larger than the read cap; cannot hash it", resp)
	}
	sum := sha256.Sum256(resp.Body)
	got := hex.EncodeToString(sum[:])
	if !strings.EqualFold(got, sha) {
		return fmt.Errorf("%s: the %d bytes served hash to %s, but the artifact's sha256 is %s", resp, len(resp.Body), got, sha)
	}
	return nil
}

// eventFacts are the fields of an Event that can never change.
var eventFacts = []string{"id", "event", "resource", "sequence", "payload", "created_at"}

// SameEvent checks that two reads of one Event (a list item and the by-id
// read) carry the same facts: events are append-only, so nothing may differ.
func SameEvent(resp *client.Response, listed, read map[string]any) error {
	var errs []string
	for _, f := range eventFacts {
		if d := cmp.Diff(listed[f], read[f]); d != "" {
			errs = append(errs, fmt.Sprintf("%s differs from the event list (-listed +read):\n%s", f, d))
		}
	}
	return findings(resp, resLabel(read), errs)
}

// OutcomeArtifactIDs lists the ids of the artifacts an Outcome lists in its
// artifacts member (Artifact objects; a bare id string is taken too), in
// order, without repeats.
func OutcomeArtifactIDs(outcome map[string]any) []string {
	var ids []string
	arts, _ := outcome["artifacts"].([]any)
	for _, a := range arts {
		id, _ := a.(string)
		if m, ok := a.(map[string]any); ok {
			id, _ = m["id"].(string)
		}
		if id != "" && !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// ArtifactWithBytes reports whether an Artifact says it has stable bytes:
// a sha256 that is a string (CORE-READ-013 has something to check).
func ArtifactWithBytes(a map[string]any) bool {
	sha, ok := a["sha256"].(string)
	return ok && sha != ""
}
