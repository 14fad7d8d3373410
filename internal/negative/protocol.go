package negative

import (
	"encoding/json"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
)

// What the pass knows of the protocol beyond the document: which level an
// operation belongs to, a request each operation accepts, and the reads a
// refused write must leave unchanged.

// coreOps are the operations of the Core level (narrative spec,
// "Conformance levels / Core": session, task, message, event, artifact and
// outcome reads; task submit, get, cancel; message creation; SSE streams).
var coreOps = []string{
	"listSessions", "createSession", "getSession", "listSessionMessages", "appendSessionMessage",
	"listSessionTasks", "submitSessionTask", "listSessionEvents", "streamSessionEvents",
	"listTasks", "submitTask", "getTask", "cancelTask", "appendTaskMessage", "listTaskEvents", "streamTaskEvents",
	"getMessage", "listArtifacts", "getArtifact", "downloadArtifactContent",
	"listEvents", "streamEvents", "getEvent", "listOutcomes", "getOutcome",
}

var receiptOps = []string{"getReceipt", "listTaskReceipts", "verifyReceipt", "getReceiptKeyDirectory"}

var replayOps = []string{"replayTask"}

// LevelOf is the level whose claim offers an operation: Core's, the
// Receipts and Replay levels' own, and every other non-public operation
// Extended's (the later revision's local-server routes among them, which
// a target may leave out: Operation.LocalServer).
func LevelOf(op openapi.Operation) requirements.Level {
	switch {
	case contains(coreOps, op.ID):
		return requirements.Core
	case contains(receiptOps, op.ID):
		return requirements.Receipts
	case contains(replayOps, op.ID):
		return requirements.Replay
	}
	return requirements.Extended
}

// Probed reports whether the pass probes op at all: every operation that
// takes a path parameter, a query parameter or a body. The public ones
// (discovery, agent card) take none.
func Probed(d *openapi.Doc, op openapi.Operation) bool {
	if op.Public {
		return false
	}
	return len(op.PathParams) > 0 || len(op.QueryParams) > 0 || op.HasBody
}

// Operations lists the operations of level the pass probes, sorted by
// template and method.
func Operations(d *openapi.Doc, level requirements.Level) []openapi.Operation {
	var out []openapi.Operation
	for _, op := range d.Operations() {
		if LevelOf(op) == level && Probed(d, op) {
			out = append(out, op)
		}
	}
	return out
}

// Shares splits a run's budget over the levels it checks, in proportion to
// the operations each offers to the pass: the same split whatever order
// the levels' specs run in.
func Shares(d *openapi.Doc, budget int, levels []requirements.Level) map[requirements.Level]int {
	out := map[requirements.Level]int{}
	total := 0
	counts := map[requirements.Level]int{}
	for _, l := range levels {
		counts[l] = len(Operations(d, l))
		total += counts[l]
	}
	if total == 0 {
		return out
	}
	ls := append([]requirements.Level(nil), levels...)
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	left := budget
	for i, l := range ls {
		n := budget * counts[l] / total
		if i == len(ls)-1 {
			n = left
		}
		out[l] = n
		left -= n
	}
	return out
}

// Fixtures are the real resources a pass addresses: ids by path parameter
// name (workspace_id, session_id, task_id, message_id, event_id,
// artifact_id, outcome_id, persona_id, branch_id, memory_id, vault_id,
// connector_id, skill_id, quota_id, receipt_id, request_id, tool_id) and
// the run's id for the bodies' metadata.
type Fixtures struct {
	IDs   map[string]string
	RunID string
	// Skip names operations not to probe, with why (a local-server route
	// the target does not serve).
	Skip map[string]string
}

func message(text string) map[string]any {
	return map[string]any{"role": "user", "parts": []any{
		map[string]any{"type": "text", "text": text, "visibility": "public"}}}
}

// baselines are bodies (and queries) each operation accepts, made of the
// fixtures; an operation missing here is probed without a body (its path
// and query only).
var baselines = map[string]func(fx Fixtures) (map[string]any, url.Values, bool){
	"createSession": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("workspace_id", fx.IDs["workspace_id"], "metadata", map[string]any{"conform.run": fx.RunID}), nil, fx.IDs["workspace_id"] != ""
	},
	"appendSessionMessage": constBody(obj("message", message("conform hostile-input baseline"))),
	"submitSessionTask":    constBody(obj("input", message("conform hostile-input baseline"))),
	"submitTask": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("session_id", fx.IDs["session_id"], "input", message("conform hostile-input baseline")), nil, fx.IDs["session_id"] != ""
	},
	"cancelTask":          constBody(obj("reason", "conform hostile-input baseline")),
	"appendTaskMessage":   constBody(obj("kind", "input", "message", message("conform hostile-input baseline"))),
	"updateSession":       constBody(obj("summary", "conform hostile-input baseline")),
	"forkSession":         constBody(map[string]any{}),
	"truncateSession":     constBody(obj("keep_first", 1000, "reason", "conform hostile-input baseline")),
	"createSessionBranch": constBody(obj("kind", "session", "base_ref", "conform-hostile")),
	"createPersona": constBody(obj("name", "conform-hostile", "version", "1.0.0", "entry_workflow", "conform/echo",
		"description", "conform hostile-input baseline", "autonomy_tier", "suggest", "receipt_policy", "optional")),
	"updatePersona": constBody(obj("description", "conform hostile-input baseline")),
	"createWorkspace": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("name", "conform-hostile-"+fx.RunID, "root", "conform://hostile"), nil, true
	},
	"updateWorkspace": constBody(obj("name", "conform-hostile")),
	"registerArtifact": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("kind", "log", "mime_type", "text/plain", "visibility", "public", "session_id", fx.IDs["session_id"]), nil, fx.IDs["session_id"] != ""
	},
	"createMemory": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("scope", "session", "owner_id", fx.IDs["session_id"], "content", "conform hostile-input baseline",
			"provenance", map[string]any{"actor": "conform"}), nil, fx.IDs["session_id"] != ""
	},
	"createVault": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("provider", "conform-test", "capabilities", []any{}, "workspace_id", fx.IDs["workspace_id"]), nil, fx.IDs["workspace_id"] != ""
	},
	"writeWorkspaceFile": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return obj("content", "conform hostile-input baseline"), url.Values{"path": {"conform-hostile.txt"}}, true
	},
	"readWorkspaceFile": func(fx Fixtures) (map[string]any, url.Values, bool) {
		return nil, url.Values{"path": {"conform-hostile.txt"}}, true
	},
	"verifyReceipt": constBody(map[string]any{}),
	"replayTask":    constBody(obj("mode", "exact")),
}

func constBody(b map[string]any) func(Fixtures) (map[string]any, url.Values, bool) {
	return func(Fixtures) (map[string]any, url.Values, bool) { return b, nil, true }
}

func obj(kv ...any) map[string]any {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := kv[i+1]
		if n, ok := v.(int); ok {
			v = json.Number(strconv.Itoa(n))
		}
		m[kv[i].(string)] = v
	}
	return m
}

// watches are the reads a refused request to each operation must leave
// unchanged ({name} is the fixture id).
var watches = map[string][]watchTmpl{
	"createSession":        {{"/v1/sessions", "workspace_id={workspace_id}", true}},
	"forkSession":          {{"/v1/sessions", "workspace_id={workspace_id}", true}},
	"appendSessionMessage": {{"/v1/sessions/{session_id}/messages", "", true}, {"/v1/sessions/{session_id}/events", "", true}},
	"submitSessionTask":    {{"/v1/sessions/{session_id}/tasks", "", true}, {"/v1/sessions/{session_id}/messages", "", true}},
	"submitTask":           {{"/v1/tasks", "session_id={session_id}", true}},
	"replayTask":           {{"/v1/tasks", "session_id={session_id}", true}},
	"cancelTask":           {{"/v1/tasks/{task_id}", "", false}},
	"appendTaskMessage":    {{"/v1/tasks/{task_id}/events", "", true}, {"/v1/sessions/{session_id}/messages", "", true}},
	"updateSession":        {{"/v1/sessions/{session_id}", "", false}},
	"closeSession":         {{"/v1/sessions/{session_id}", "", false}},
	"truncateSession":      {{"/v1/sessions/{session_id}/messages", "", true}},
	"createSessionBranch":  {{"/v1/sessions/{session_id}/branches", "", true}},
	"createPersona":        {{"/v1/personas", "", true}},
	"updatePersona":        {{"/v1/personas/{persona_id}", "", false}},
	"createWorkspace":      {{"/v1/workspaces", "", true}},
	"updateWorkspace":      {{"/v1/workspaces/{workspace_id}", "", false}},
	"registerArtifact":     {{"/v1/artifacts", "session_id={session_id}", true}},
	"createMemory":         {{"/v1/memories", "", true}},
	"deleteMemory":         {{"/v1/memories", "", true}},
	"createVault":          {{"/v1/vaults", "", true}},
	"writeWorkspaceFile":   {{"/v1/workspaces/{workspace_id}/files", "path=conform-hostile.txt", false}},
}

type watchTmpl struct {
	path, query string
	list        bool
}

// Targets builds the pass's targets of level from the fixtures: every
// operation the pass probes, with the body and query it accepts and the
// reads to watch, less those fx.Skip names.
func Targets(d *openapi.Doc, level requirements.Level, fx Fixtures) []Target {
	var out []Target
	for _, op := range Operations(d, level) {
		if _, skip := fx.Skip[op.ID]; skip {
			continue
		}
		t := Target{Base: Base{Op: op, PathIDs: map[string]string{}}}
		for _, p := range op.PathParams {
			if v := fx.IDs[p]; v != "" {
				t.Base.PathIDs[p] = v
			}
		}
		if f, ok := baselines[op.ID]; ok {
			body, q, ok := f(fx)
			if ok {
				if op.HasBody {
					t.Base.Body = body
				}
				t.Base.Query = q
			}
		}
		for _, w := range watches[op.ID] {
			if ws, ok := fill(w, fx); ok {
				t.Watches = append(t.Watches, ws)
			}
		}
		out = append(out, t)
	}
	return out
}

// fill puts the fixture ids into a watch; false when one is missing.
func fill(w watchTmpl, fx Fixtures) (Watch, bool) {
	missing := false
	sub := func(s string, escape bool) string {
		for {
			i := strings.IndexByte(s, '{')
			j := strings.IndexByte(s, '}')
			if i < 0 || j < i {
				return s
			}
			v := fx.IDs[s[i+1:j]]
			if v == "" {
				missing = true
			}
			if escape {
				v = url.PathEscape(v)
			}
			s = s[:i] + v + s[j+1:]
		}
	}
	out := Watch{Path: sub(w.path, true), List: w.list}
	if w.query != "" {
		out.Query = url.Values{}
		for _, kv := range strings.Split(sub(w.query, false), "&") {
			k, v, _ := strings.Cut(kv, "=")
			out.Query.Add(k, v)
		}
	}
	return out, !missing
}
