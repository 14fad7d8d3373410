package harbor

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/acp"
)

func obj(t *testing.T, s string) map[string]any {
	t.Helper()
	m, err := Object([]byte(s))
	if err != nil {
		t.Fatalf("Object(%s): %v", s, err)
	}
	return m
}

func TestFindBundle(t *testing.T) {
	blocks := `{"snapshots":{"version":1,"supportsBranching":true},"workspace":{"version":1}}`
	tests := []struct {
		name, result string
		claimed      bool
		misplaced    bool
		snapshots    string // the snapshots block's name, "" when absent
		workspace    bool
	}{
		{"dotted key", `{"agentCapabilities":{"_meta":{"agent.harbor":` + blocks + `}}}`, true, false, "snapshots", true},
		{"nested objects", `{"agentCapabilities":{"_meta":{"agent":{"harbor":` + blocks + `}}}}`, true, false, "snapshots", true},
		{"gate alias", `{"agentCapabilities":{"_meta":{"agent.harbor":{"workspace":{"version":1}},"agentHarborSnapshots":{"version":1}}}}`, true, false, "agentHarborSnapshots", true},
		{"alias alone", `{"agentCapabilities":{"_meta":{"agentHarborSnapshots":{"version":1}}}}`, true, false, "agentHarborSnapshots", false},
		{"result meta", `{"_meta":{"agent.harbor":` + blocks + `},"agentCapabilities":{}}`, true, true, "snapshots", true},
		{"capabilities root", `{"agentCapabilities":{"agent.harbor":` + blocks + `}}`, true, true, "snapshots", true},
		{"none", `{"agentCapabilities":{"loadSession":true,"_meta":{"zed.dev":{}}}}`, false, false, "", false},
		{"empty bundle", `{"agentCapabilities":{"_meta":{"agent.harbor":{}}}}`, false, false, "", false},
	}
	for _, tc := range tests {
		b := FindBundle(obj(t, tc.result))
		if b.Claimed() != tc.claimed {
			t.Errorf("%s: Claimed = %v, want %v", tc.name, b.Claimed(), tc.claimed)
		}
		if !tc.claimed {
			continue
		}
		if b.Misplaced != tc.misplaced || (b.CheckPlacement() != nil) != tc.misplaced {
			t.Errorf("%s: Misplaced = %v (%v), want %v", tc.name, b.Misplaced, b.CheckPlacement(), tc.misplaced)
		}
		name := ""
		if b.Snapshots != nil {
			name = b.Snapshots.Name
		}
		if name != tc.snapshots || (b.Workspace != nil) != tc.workspace {
			t.Errorf("%s: snapshots block %q, workspace %v; want %q, %v", tc.name, name, b.Workspace != nil, tc.snapshots, tc.workspace)
		}
	}
}

func TestCheckBlocks(t *testing.T) {
	good := FindBundle(obj(t, `{"agentCapabilities":{"_meta":{"agent.harbor":{"snapshots":{"version":2,"supportsBranching":false},"future":{"x":1}}}}}`))
	if err := good.CheckBlocks(); err != nil || len(good.Other) != 1 {
		t.Errorf("CheckBlocks = %v (other %v), want nil and the future block kept aside", err, good.Other)
	}
	for _, bad := range []string{
		`{"snapshots":{"version":"1"}}`, `{"snapshots":{"version":0}}`, `{"workspace":{"version":1,"supportsDiffs":"yes"}}`,
		`{"pipelineIntrospection":true}`, `{"snapshots":{"supportsBranching":true}}`, `{"workspace":{"version":1.5}}`,
	} {
		b := FindBundle(obj(t, `{"agentCapabilities":{"_meta":{"agent.harbor":`+bad+`}}}`))
		if err := b.CheckBlocks(); err == nil {
			t.Errorf("CheckBlocks(%s) = nil, want an error", bad)
		}
	}
}

func note(t *testing.T, line string) (Note, bool) {
	t.Helper()
	m, probs, err := acp.Decode([]byte(line))
	if err != nil || len(probs) > 0 {
		t.Fatalf("Decode(%s): %v %v", line, probs, err)
	}
	return ParseNote(m)
}

func TestParseNote(t *testing.T) {
	tests := []struct {
		line, kind, session string
		ok                  bool
	}{
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"type":"custom","customType":"harbor/branch_deleted","branchId":"b1"}}}`, "branch_deleted", "s1", true},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"custom","customType":"harbor/branch_deleted","payload":{"branchId":"b1"}}}}`, "branch_deleted", "s1", true},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"type":"custom","customType":"harbor/branch_deleted","data":{"branchId":"b1"}}}}`, "branch_deleted", "s1", true},
		{`{"jsonrpc":"2.0","method":"harbor/branch_deleted","params":{"branchId":"b1"}}`, "branch_deleted", "", true},
		{`{"jsonrpc":"2.0","method":"_ah/branch_deleted","params":{"branchId":"b1"}}`, "branch_deleted", "", true},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"type":"custom","customType":"zed/other"}}}`, "", "", false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`, "", "", false},
		{`{"jsonrpc":"2.0","id":3,"method":"harbor/branch_deleted","params":{}}`, "", "", false},
	}
	for _, tc := range tests {
		n, ok := note(t, tc.line)
		if ok != tc.ok || n.Kind != tc.kind || n.Session != tc.session {
			t.Errorf("ParseNote(%s) = %+v, %v; want kind %q session %q ok %v", tc.line, n, ok, tc.kind, tc.session, tc.ok)
		}
		if ok && n.Payload["branchId"] != "b1" {
			t.Errorf("ParseNote(%s) payload %v, want branchId b1", tc.line, n.Payload)
		}
	}
}

func TestCheckNote(t *testing.T) {
	good := Note{Kind: "timeline_checkpoint", Payload: map[string]any{"sessionId": "s", "executionId": "e", "byteOffset": json.Number("10"), "label": "l", "kind": "REC_MARK"}}
	if err := CheckNote(good); err != nil {
		t.Errorf("CheckNote(good) = %v", err)
	}
	for _, bad := range []Note{
		{Kind: "timeline_checkpoint", Payload: map[string]any{"sessionId": "s", "executionId": "e", "byteOffset": json.Number("10"), "label": "l"}},
		{Kind: "timeline_checkpoint", Payload: map[string]any{"sessionId": "s", "executionId": "e", "byteOffset": json.Number("-1"), "label": "l", "kind": "k"}},
		{Kind: "snapshot_created", Payload: map[string]any{"sessionId": "s", "snapshot": map[string]any{}, "reason": "whim"}},
		{Kind: "branch_exploded", Payload: map[string]any{}},
	} {
		if err := CheckNote(bad); err == nil {
			t.Errorf("CheckNote(%+v) = nil, want an error", bad)
		}
	}
}

func TestCheckNoteForm(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","method":"_ah/branch_deleted","params":{"branchId":"b1"}}`, true},
		{`{"jsonrpc":"2.0","method":"harbor/branch_deleted","params":{"branchId":"b1"}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"type":"custom","customType":"harbor/branch_deleted","branchId":"b1"}}}`, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"custom","customType":"harbor/branch_deleted","payload":{"branchId":"b1"}}}}`, false},
	} {
		n, ok := note(t, tc.line)
		if !ok {
			t.Fatalf("not a note: %s", tc.line)
		}
		if err := CheckNoteForm(n); (err == nil) != tc.ok {
			t.Errorf("CheckNoteForm(%s) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}

func response(t *testing.T, line string) *acp.Response {
	t.Helper()
	m, _, err := acp.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return &acp.Response{Message: m}
}

func TestRefused(t *testing.T) {
	tests := []struct {
		line       string
		refused    bool
		how        string
		hasProblem bool
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32009,"message":"locked","data":{"type":"https://x/errors/locked","title":"locked","status":409}}}`, true, "error", true},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"no"}}`, true, "error", false},
		{`{"jsonrpc":"2.0","id":1,"result":{"type":"https://x/errors/locked","title":"locked","status":409}}`, true, "problem", true},
		// A file node has a type and a status too: not a problem.
		{`{"jsonrpc":"2.0","id":1,"result":{"path":"a","type":"file","status":"modified"}}`, false, "", false},
		{`{"jsonrpc":"2.0","id":1,"result":{"branch":{}}}`, false, "", false},
	}
	for _, tc := range tests {
		r := Refused(response(t, tc.line))
		if r.Refused != tc.refused || r.How != tc.how || (r.Problem != nil) != tc.hasProblem {
			t.Errorf("Refused(%s) = %+v", tc.line, r)
		}
	}
}

func TestCheckProblem(t *testing.T) {
	if err := CheckProblem(obj(t, `{"type":"https://x/errors/forbidden","title":"Forbidden","status":403,"detail":"d"}`)); err != nil {
		t.Errorf("CheckProblem(good) = %v", err)
	}
	for _, bad := range []string{`{"type":"t","status":"403"}`, `{"type":"t","status":200}`, `{"type":1,"title":"t"}`, `{"type":"t","title":"t","detail":5}`} {
		if err := CheckProblem(obj(t, bad)); err == nil {
			t.Errorf("CheckProblem(%s) = nil", bad)
		}
	}
}

func TestCheckSnapshot(t *testing.T) {
	good := `{"id":"snap-1","label":"l","provider":"zfs","workingCopy":"cow-overlay","execPath":"/w","createdAt":"2025-02-01T12:34:56.123Z","branchable":true,"cleanupToken":"o","anchor":{"executionId":"e","byteOffset":198000,"timelineTs":123.45}}`
	if err := CheckSnapshot(obj(t, good), "l"); err != nil {
		t.Errorf("CheckSnapshot(the text's example) = %v", err)
	}
	for _, edit := range []struct{ from, to string }{
		{`"zfs"`, `"tmpfs"`}, {`"cow-overlay"`, `"copy"`}, {`"2025-02-01T12:34:56.123Z"`, `"yesterday"`}, {`"branchable":true`, `"branchable":"yes"`},
		{`"label":"l"`, `"label":"other"`}, {`"byteOffset":198000`, `"byteOffset":-1`}, {`"id":"snap-1",`, ``},
	} {
		if err := CheckSnapshot(obj(t, strings.Replace(good, edit.from, edit.to, 1)), "l"); err == nil {
			t.Errorf("CheckSnapshot with %s → %s = nil, want an error", edit.from, edit.to)
		}
	}
}

func TestCheckBranchAndSessions(t *testing.T) {
	b := obj(t, `{"branchId":"b","name":"n","status":"running","snapshotId":"s","mountPath":"/m","parentSessionId":"p","createdBy":"c"}`)
	if err := CheckBranch(b, "n", "s", "p"); err != nil {
		t.Errorf("CheckBranch = %v", err)
	}
	if err := CheckBranch(b, "n", "other", "p"); err == nil {
		t.Error("CheckBranch with another snapshot = nil")
	}
	delete(b, "createdBy")
	if err := CheckBranch(b, "", "", ""); err == nil {
		t.Error("CheckBranch without createdBy = nil")
	}
	ids, err := SessionIDs("newSessions", obj(t, `{"a":["s1",{"sessionId":"s2"}]}`)["a"])
	if err != nil || strings.Join(ids, ",") != "s1,s2" {
		t.Errorf("SessionIDs = %v, %v", ids, err)
	}
	for _, bad := range []string{`{"a":["s1","s1"]}`, `{"a":[1]}`, `{"a":"s1"}`, `{}`} {
		if _, err := SessionIDs("newSessions", obj(t, bad)["a"]); err == nil {
			t.Errorf("SessionIDs(%s) = nil error", bad)
		}
	}
}

func TestCheckStep(t *testing.T) {
	good := `{"pipelineId":"p","stepId":"p:2","index":2,"command":"grep ERROR","argv":["grep","ERROR"],"pid":12345,"stdoutBytes":4096,"stderrBytes":0,"inputBytes":8192,
		"startedAt":"2025-02-01T12:35:01.000Z","endedAt":"2025-02-01T12:35:04.500Z","executionId":"e","byteRanges":{"stdout":{"start":210000,"len":4096},"stderr":null}}`
	if err := CheckStep(obj(t, good)); err != nil {
		t.Errorf("CheckStep(the text's example) = %v", err)
	}
	for _, edit := range []struct{ from, to string }{{`"stepId":"p:2",`, ``}, {`"index":2`, `"index":"2"`}, {`"stderr":null`, `"stderr":5`}, {`"len":4096`, `"len":-1`}} {
		if err := CheckStep(obj(t, strings.Replace(good, edit.from, edit.to, 1))); err == nil {
			t.Errorf("CheckStep with %s → %s = nil", edit.from, edit.to)
		}
	}
}

func TestListInAndDiffCovers(t *testing.T) {
	for _, s := range []string{`{"snapshots":[{"id":"a"}]}`, `{"items":[{"id":"a"}],"nextCursor":null}`} {
		l, err := ListIn(obj(t, s), "snapshots")
		if err != nil || len(IDs(l, "id")) != 1 {
			t.Errorf("ListIn(%s) = %v, %v", s, l, err)
		}
	}
	if l, err := ListIn([]any{map[string]any{"id": "a"}}, "snapshots"); err != nil || len(l) != 1 {
		t.Errorf("ListIn(array) = %v, %v", l, err)
	}
	if _, err := ListIn(obj(t, `{"a":[],"b":[]}`), "snapshots"); err == nil {
		t.Error("ListIn with two arrays and no snapshots member = nil error")
	}
	if !DiffCovers(obj(t, `{"files":[{"path":"src/a.rs","diff":"…"}]}`), "src/a.rs") || !DiffCovers(obj(t, `{"src/a.rs":{"diff":"…"}}`), "src/a.rs") ||
		DiffCovers(obj(t, `{"files":[]}`), "src/a.rs") {
		t.Error("DiffCovers misreads a diff")
	}
}

func TestCheckFile(t *testing.T) {
	snake := obj(t, `{"status":"modified","lines_added":1,"lines_removed":0,"last_modified":"t","content":"x"}`)
	camel := obj(t, `{"status":"modified","linesAdded":1,"linesRemoved":0,"lastModified":"t"}`)
	if err := CheckFile(snake, true); err != nil {
		t.Errorf("CheckFile(snake) = %v", err)
	}
	if err := CheckFile(camel, false); err != nil {
		t.Errorf("CheckFile(camel) = %v", err)
	}
	if err := CheckFile(camel, true); err == nil {
		t.Error("CheckFile without content, asked for = nil")
	}
}

func TestCheckReuse(t *testing.T) {
	msgs := func(lines ...string) []acp.Message {
		var out []acp.Message
		for _, l := range lines {
			m, _, err := acp.Decode([]byte(l))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, m)
		}
		return out
	}
	good := msgs(`{"jsonrpc":"2.0","method":"_ah/branch_created","params":{"sessionId":"s1","branch":{"branchId":"b1"},"newSessions":[]}}`,
		`{"jsonrpc":"2.0","method":"_ah/branch_updated","params":{"sessionId":"s1","branch":{"branchId":"b1"}}}`)
	if err := CheckReuse("b1", "s1", map[string]any{"branch": map[string]any{"branchId": "b1"}, "newSessions": []any{}}, good, []string{"s1", "s2"}); err != nil {
		t.Errorf("CheckReuse(no sibling) = %v", err)
	}
	for name, tc := range map[string]struct {
		res  map[string]any
		msgs []acp.Message
	}{
		"listed in the answer":            {map[string]any{"newSessions": []any{"s9"}}, good},
		"listed in branch_created":        {map[string]any{}, msgs(`{"jsonrpc":"2.0","method":"_ah/branch_created","params":{"sessionId":"s1","branch":{"branchId":"b1"},"newSessions":["s9"]}}`)},
		"an update of an unknown session": {map[string]any{}, msgs(`{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s9","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}}`)},
	} {
		if err := CheckReuse("b1", "s1", tc.res, tc.msgs, []string{"s1"}); err == nil {
			t.Errorf("%s: CheckReuse = nil, want an error", name)
		}
	}
}
