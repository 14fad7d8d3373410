package harbor

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/jsonv"
)

// Providers and working-copy modes the data structure names
// ("zfs|btrfs|agentfs|git", "cow-overlay|worktree|in-place").
var (
	Providers    = []string{"zfs", "btrfs", "agentfs", "git"}
	WorkingCopes = []string{"cow-overlay", "worktree", "in-place"}
)

// CheckSnapshot is the shared snapshot metadata (ACP-SNAP-001). wantLabel,
// when set, must be echoed.
func CheckSnapshot(m map[string]any, wantLabel string) error {
	var probs []string
	if err := Fields("snapshot", m, map[string]string{"id": "nonempty", "provider": "string", "workingCopy": "string",
		"execPath": "string", "createdAt": "time", "branchable": "bool"}); err != nil {
		probs = append(probs, err.Error())
	}
	if p, ok := m["provider"].(string); ok && !slices.Contains(Providers, p) {
		probs = append(probs, fmt.Sprintf("snapshot.provider is %q, want one of %s", p, strings.Join(Providers, ", ")))
	}
	if w, ok := m["workingCopy"].(string); ok && !slices.Contains(WorkingCopes, w) {
		probs = append(probs, fmt.Sprintf("snapshot.workingCopy is %q, want one of %s", w, strings.Join(WorkingCopes, ", ")))
	}
	if wantLabel != "" && m["label"] != wantLabel {
		probs = append(probs, fmt.Sprintf("snapshot.label is %s, want the requested %q", show(m["label"]), wantLabel))
	}
	if err := Optional("snapshot", m, map[string]string{"label": "string", "cleanupToken": "string", "anchor": "object"}); err != nil {
		probs = append(probs, err.Error())
	}
	if a, ok := m["anchor"].(map[string]any); ok {
		if err := Optional("snapshot.anchor", a, map[string]string{"executionId": "string", "byteOffset": "uint", "timelineTs": "number"}); err != nil {
			probs = append(probs, err.Error())
		}
	}
	return joined(probs)
}

// CheckBranch is the branch metadata (ACP-BRANCH-001): "Branches extend the
// above with branchId, name, status, snapshotId, mountPath,
// parentSessionId, and createdBy". Empty wants are not compared.
func CheckBranch(m map[string]any, wantName, wantSnapshot, wantParent string) error {
	var probs []string
	if err := Fields("branch", m, map[string]string{"branchId": "nonempty", "name": "string", "status": "nonempty",
		"snapshotId": "string", "mountPath": "string", "parentSessionId": "string", "createdBy": "string"}); err != nil {
		probs = append(probs, err.Error())
	}
	for k, want := range map[string]string{"name": wantName, "snapshotId": wantSnapshot, "parentSessionId": wantParent} {
		if want != "" {
			if got, ok := m[k].(string); ok && got != want {
				probs = append(probs, fmt.Sprintf("branch.%s is %q, want %q", k, got, want))
			}
		}
	}
	slices.Sort(probs)
	return joined(probs)
}

// SessionIDs reads newSessions (or sessions): an array whose entries are
// session ids, or objects with a sessionId (the notification table shows
// strings, _ah/session/new objects). The ids must be distinct non-empty
// strings.
func SessionIDs(what string, v any) ([]string, error) {
	arr, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, want an array of session ids", what, show(v))
	}
	var ids, probs []string
	for i, e := range arr {
		id, _ := e.(string)
		if obj, ok := e.(map[string]any); ok {
			id, _ = obj["sessionId"].(string)
		}
		switch {
		case id == "":
			probs = append(probs, fmt.Sprintf("%s[%d] is %s, want a session id or an object with one", what, i, show(e)))
		case slices.Contains(ids, id):
			probs = append(probs, fmt.Sprintf("%s[%d] repeats session id %q", what, i, id))
		default:
			ids = append(ids, id)
		}
	}
	return ids, joined(probs)
}

// CheckStep is the pipelineStep structure (ACP-PIPE-005): stepId and
// pipelineId required, the other members of the example typed when
// present.
func CheckStep(m map[string]any) error {
	var probs []string
	if err := Fields("step", m, map[string]string{"stepId": "nonempty"}); err != nil {
		probs = append(probs, err.Error())
	}
	if err := Optional("step", m, map[string]string{"pipelineId": "string", "index": "uint", "command": "string", "argv": "array", "pid": "int",
		"stdoutBytes": "uint", "stderrBytes": "uint", "inputBytes": "uint", "startedAt": "time", "endedAt": "time",
		"executionId": "string", "byteRanges": "object"}); err != nil {
		probs = append(probs, err.Error())
	}
	if r, ok := m["byteRanges"].(map[string]any); ok {
		for _, s := range []string{"stdout", "stderr"} {
			if rng, ok := r[s].(map[string]any); ok {
				if err := Fields("step.byteRanges."+s, rng, map[string]string{"start": "uint", "len": "uint"}); err != nil {
					probs = append(probs, err.Error())
				}
			} else if r[s] != nil {
				probs = append(probs, fmt.Sprintf("step.byteRanges.%s is %s, want an object or null", s, show(r[s])))
			}
		}
	}
	return joined(probs)
}

// Refusal says how a Harbor method refused a request, if it did.
type Refusal struct {
	Refused bool
	// How: "error" (a JSON-RPC error) or "problem" (a Problem+JSON result).
	How string
	// Problem is the Problem+JSON document, where one came (a result, or
	// an error's data); nil otherwise.
	Problem map[string]any
	// Error is the JSON-RPC error, for messages.
	Error *acp.RPCError
}

// Refused reads a response as a refusal: a JSON-RPC error, or a result
// that is a Problem+JSON document ("Violations return Problem+JSON" read
// as the result itself).
func Refused(r *acp.Response) Refusal {
	if r == nil {
		return Refusal{}
	}
	if r.Error != nil {
		out := Refusal{Refused: true, How: "error", Error: r.Error}
		if len(r.Error.Data) > 0 {
			if m, err := Object(r.Error.Data); err == nil && isProblemData(m) {
				out.Problem = m
			}
		}
		return out
	}
	if m, err := Object(r.Result); err == nil && IsProblem(m) {
		return Refusal{Refused: true, How: "problem", Problem: m}
	}
	return Refusal{}
}

// IsProblem recognizes a Problem+JSON document among results: a string
// type and a numeric status or a string title (RFC 9457's members; a file
// node has a type and a status too, but its status is a word).
func IsProblem(m map[string]any) bool {
	_, typ := m["type"].(string)
	_, status := jsonv.Number(m["status"])
	_, title := m["title"].(string)
	return typ && (status || title)
}

// isProblemData recognizes a Problem+JSON document in a JSON-RPC error's
// data, where nothing else competes: a type and a status or a title, of
// any types (ACP-ERR-001 judges them).
func isProblemData(m map[string]any) bool {
	_, typ := m["type"]
	_, status := m["status"]
	_, title := m["title"]
	return typ && (status || title)
}

// CheckProblem is ACP-ERR-001: RFC 9457's member types.
func CheckProblem(m map[string]any) error {
	var probs []string
	if err := Optional("problem", m, map[string]string{"type": "string", "title": "string", "detail": "string", "instance": "string"}); err != nil {
		probs = append(probs, err.Error())
	}
	if v, ok := m["status"]; ok {
		if n, isInt := Int(v); !isInt || n < 400 || n > 599 {
			probs = append(probs, fmt.Sprintf("problem.status is %s, want an integer from 400 to 599", show(v)))
		}
	}
	return joined(probs)
}

// ListIn finds the array a listing returns: the member named key, else
// the result itself when it is an array, else its only array member.
func ListIn(result any, key string) ([]map[string]any, error) {
	var arr []any
	switch r := result.(type) {
	case []any:
		arr = r
	case map[string]any:
		if a, ok := r[key].([]any); ok {
			arr = a
			break
		}
		var found []string
		for k, v := range r {
			if a, ok := v.([]any); ok {
				arr = a
				found = append(found, k)
			}
		}
		if len(found) != 1 {
			return nil, fmt.Errorf("the result %s has no %s array", show(result), key)
		}
	default:
		return nil, fmt.Errorf("the result %s is neither an array nor an object with a %s array", show(result), key)
	}
	out := make([]map[string]any, 0, len(arr))
	for i, e := range arr {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is %s, want an object", key, i, show(e))
		}
		out = append(out, m)
	}
	return out, nil
}

// IDs lists the string values of member key of each entry.
func IDs(list []map[string]any, key string) []string {
	var out []string
	for _, m := range list {
		if s, ok := m[key].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// CheckFile is ACP-WS-004's metadata: status, lines added and removed,
// last modified — in the text's snake_case or camelCase.
func CheckFile(m map[string]any, wantContent bool) error {
	var probs []string
	if err := Fields("file", m, map[string]string{"status": "string", "lines_added|linesAdded": "uint",
		"lines_removed|linesRemoved": "uint", "last_modified|lastModified": "string"}); err != nil {
		probs = append(probs, err.Error())
	}
	if wantContent {
		if err := Fields("file", m, map[string]string{"content": "string"}); err != nil {
			probs = append(probs, err.Error()+" (includeContent was true)")
		}
	}
	return joined(probs)
}

// DiffCovers reports whether a diff result has an entry for path: an
// object naming it (path, file, filePath, name) anywhere in an array, or a
// member keyed by it.
func DiffCovers(result any, path string) bool {
	switch r := result.(type) {
	case map[string]any:
		if _, ok := r[path]; ok {
			return true
		}
		for _, k := range []string{"path", "file", "filePath", "name"} {
			if r[k] == path {
				return true
			}
		}
		for _, v := range r {
			if DiffCovers(v, path) {
				return true
			}
		}
	case []any:
		for _, v := range r {
			if DiffCovers(v, path) {
				return true
			}
		}
	}
	return false
}

// Raw marshals v for messages.
func Raw(v any) string {
	b, _ := json.Marshal(v)
	return clip(string(b))
}
