package harbor

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/harn-conform/conform/internal/acp"
)

// Payloads are the members of each Harbor notification, from the table of
// "Notifications (Harbor → Client)".
var Payloads = map[string]map[string]string{
	"snapshot_created":      {"sessionId": "string", "snapshot": "object", "reason": "string"},
	"branch_created":        {"branch": "object", "newSessions": "array"},
	"branch_updated":        {"branch": "object"},
	"branch_deleted":        {"branchId": "string"},
	"timeline_checkpoint":   {"sessionId": "string", "executionId": "string", "byteOffset": "uint", "label": "string", "kind": "string"},
	"pipeline_detected":     {"sessionId": "string", "executionId": "string", "pipelineId": "string", "steps": "array"},
	"pipeline_step_updated": {"sessionId": "string", "executionId": "string", "pipelineId": "string", "step": "object"},
}

// Reasons of harbor/snapshot_created ("auto | manual | branch_point").
var Reasons = []string{"auto", "manual", "branch_point"}

// Note is one Harbor notification, however it travelled.
type Note struct {
	// Kind is the name after harbor/ ("snapshot_created").
	Kind string
	// Session is the session the message names (session/update's
	// sessionId, else the payload's).
	Session string
	// Payload holds the notification's members.
	Payload map[string]any
	// Reading says how it travelled, for messages.
	Reading string
	// Extension: it travelled as an ACP extension notification (a method
	// name with a leading underscore, _ah/…), the form an ACP v1 client
	// that does not know Harbor ignores (CheckNoteForm).
	Extension bool
}

// ParseNote recognizes a Harbor notification. The text says they "ride on
// the regular session/update … stream with update.type = "custom" and
// customType = "harbor/*"", and its table names them harbor/…; accepted:
//
//   - session/update whose update has type "custom" (the text's words) or
//     sessionUpdate "custom" (ACP's discriminator) and customType
//     "harbor/…", the payload's members beside them or in a payload (or
//     data) object;
//   - a JSON-RPC notification named harbor/… or _ah/… whose params are the
//     payload.
func ParseNote(m acp.Message) (Note, bool) {
	if m.Kind != acp.KindNotification {
		return Note{}, false
	}
	for _, p := range []string{PrefixHarbor, PrefixAH} {
		if kind, ok := strings.CutPrefix(m.Method, p); ok {
			pl, _ := Object(m.Params)
			n := Note{Kind: kind, Payload: pl, Reading: "a " + m.Method + " notification", Extension: strings.HasPrefix(m.Method, "_")}
			n.Session, _ = pl["sessionId"].(string)
			return n, true
		}
	}
	if m.Method != "session/update" {
		return Note{}, false
	}
	params, err := Object(m.Params)
	if err != nil {
		return Note{}, false
	}
	u, _ := params["update"].(map[string]any)
	if u == nil || (u["type"] != "custom" && u["sessionUpdate"] != "custom") {
		return Note{}, false
	}
	ct, _ := u["customType"].(string)
	kind, ok := strings.CutPrefix(ct, PrefixHarbor)
	if !ok {
		return Note{}, false
	}
	n := Note{Kind: kind, Reading: "a custom session/update"}
	n.Session, _ = params["sessionId"].(string)
	switch {
	case isObject(u["payload"]):
		n.Payload = u["payload"].(map[string]any)
	case isObject(u["data"]):
		n.Payload = u["data"].(map[string]any)
	default:
		n.Payload = map[string]any{}
		for k, v := range u {
			if k != "type" && k != "sessionUpdate" && k != "customType" {
				n.Payload[k] = v
			}
		}
	}
	if n.Session == "" {
		n.Session, _ = n.Payload["sessionId"].(string)
	}
	return n, true
}

func isObject(v any) bool {
	_, ok := v.(map[string]any)
	return ok
}

// IsHarborUpdate reports whether a session/update is one of Harbor's
// custom updates (judged by ACP-NOTIF-001, not by ACP's schema).
func IsHarborUpdate(m acp.Message) bool {
	if m.Method != "session/update" {
		return false
	}
	_, ok := ParseNote(m)
	return ok
}

// CheckNote is ACP-NOTIF-001: a notification of the table with its row's
// members.
func CheckNote(n Note) error {
	spec, ok := Payloads[n.Kind]
	if !ok {
		kinds := make([]string, 0, len(Payloads))
		for k := range Payloads {
			kinds = append(kinds, "harbor/"+k)
		}
		sort.Strings(kinds)
		return fmt.Errorf("harbor/%s (%s) is no notification of the table (%s)", n.Kind, n.Reading, strings.Join(kinds, ", "))
	}
	if err := Fields("harbor/"+n.Kind+" payload", n.Payload, spec); err != nil {
		return fmt.Errorf("%v (%s)", err, n.Reading)
	}
	if n.Kind == "snapshot_created" {
		if r, _ := n.Payload["reason"].(string); r != "" && !slices.Contains(Reasons, r) {
			return fmt.Errorf("harbor/snapshot_created reason is %q, want one of auto, manual, branch_point", r)
		}
	}
	return nil
}

// CheckNoteForm is ACP-NOTIF-003, for a client that did not ask for custom
// session updates (conform never does): a Harbor notification is an ACP
// extension notification (_ah/…). A custom session/update is outside ACP
// v1's closed SessionUpdate, and a harbor/… method is a name ACP keeps for
// itself: an ACP v1 client that does not know Harbor rejects either and
// logs an error (the official TypeScript SDK and acp-go-sdk both do).
func CheckNoteForm(n Note) error {
	if n.Extension {
		return nil
	}
	return fmt.Errorf("harbor/%s came as %s to a client that did not ask for custom session updates; an ACP v1 client that does not know Harbor rejects it and logs an error: send it as the extension notification %s%s (docs/acp-harbor.md, \"Harbor notifications\")", n.Kind, n.Reading, PrefixAH, n.Kind)
}

// Notes lists the Harbor notifications among msgs.
func Notes(msgs []acp.Message) []Note {
	var out []Note
	for _, m := range msgs {
		if n, ok := ParseNote(m); ok {
			out = append(out, n)
		}
	}
	return out
}

// Params marshals params for a request, for tests and messages.
func Params(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// CheckReuse is ACP-BRANCH-009: a branch created with sessionReuse
// opens no new session — none in the answer's newSessions, none in the
// branch's harbor/branch_created, and no message since the request names a
// session other than those the client opened (known).
func CheckReuse(bid, sid string, res map[string]any, msgs []acp.Message, known []string) error {
	var probs []string
	if ids, _ := SessionIDs("newSessions", res["newSessions"]); len(ids) > 0 {
		probs = append(probs, fmt.Sprintf("the answer lists newSessions %v", ids))
	}
	for _, n := range Notes(msgs) {
		if n.Kind != "branch_created" {
			continue
		}
		b, _ := n.Payload["branch"].(map[string]any)
		if ids, _ := SessionIDs("newSessions", n.Payload["newSessions"]); len(ids) > 0 && (bid == "" || b["branchId"] == bid) {
			probs = append(probs, fmt.Sprintf("harbor/branch_created lists newSessions %v", ids))
		}
	}
	seen := map[string]bool{}
	for _, m := range msgs {
		var named string
		if n, ok := ParseNote(m); ok {
			named = n.Session
		} else if m.Method == "session/update" {
			var u struct {
				SessionID string `json:"sessionId"`
			}
			_ = json.Unmarshal(m.Params, &u)
			named = u.SessionID
		}
		if named != "" && named != sid && !slices.Contains(known, named) && !seen[named] {
			seen[named] = true
			probs = append(probs, fmt.Sprintf("%s names session %q, which the client never opened", m.Method, named))
		}
	}
	if len(probs) == 0 {
		return nil
	}
	return fmt.Errorf("branch_create with branch.sessionReuse true (branch %q) is to re-use session %s instead of creating a sibling, but %s", bid, sid, strings.Join(probs, "; "))
}
