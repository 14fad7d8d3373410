package extended

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/openapi"
)

// Every body the generated probes send is valid for its operation (a
// target may validate a body before it looks at the credential or the
// actor, and a refusal for the body says nothing about either), names the
// fixtures' resources, and carries the marker wherever the schema has
// room, so a refused write that took effect shows. A body operation the
// table does not know fails here, so a new operation of the document is
// not probed with an empty object unnoticed.
func TestOpBodiesAreValid(t *testing.T) {
	doc, err := openapi.Default()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for _, p := range []string{"workspace_id", "session_id", "task_id", "persona_id", "memory_id", "vault_id", "artifact_id", "branch_id",
		"message_id", "receipt_id", "outcome_id", "event_id", "request_id", "skill_id", "tool_id", "connector_id", "quota_id"} {
		ids[p] = "fx_" + p
	}
	const marker = "conform-refused-test"
	bodies := 0
	for _, op := range doc.Operations() {
		if op.Public {
			continue
		}
		p := address(op, ids, marker)
		if len(p.missing) > 0 {
			t.Errorf("%s: no fixture for %v", op.ID, p.missing)
		}
		if !op.HasBody {
			if p.req.Body != nil {
				t.Errorf("%s takes no body, but the probe sends one", op.ID)
			}
			continue
		}
		bodies++
		raw, err := json.Marshal(p.req.Body)
		if err != nil {
			t.Fatal(err)
		}
		if op.ID != "verifyReceipt" && !strings.Contains(string(raw), marker) {
			t.Errorf("%s: the body %s carries no marker (opBody does not know the operation?)", op.ID, raw)
		}
		h := http.Header{"Authorization": {"Bearer k"}, "Harn-Agents-Protocol-Version": {"agents-protocol-2026-04-25"}, "Content-Type": {"application/json"}}
		if op.Idempotent {
			h.Set("Idempotency-Key", "k1")
		}
		for _, v := range doc.ValidateRequest(op.Method, p.req.Path, p.req.Query, h, raw) {
			t.Errorf("%s: %s", op.ID, v)
		}
	}
	if bodies < 20 {
		t.Errorf("only %d operations with a body", bodies)
	}
}

// writeOp picks the document's writes: every operation that may change
// state, and no read.
func TestWriteOps(t *testing.T) {
	doc, err := openapi.Default()
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	for _, op := range doc.Operations() {
		if !op.Public && writeOp(op) {
			writes = append(writes, op.ID)
		}
	}
	for _, want := range []string{"createMemory", "deleteMemory", "createPersona", "updatePersona", "createVault", "registerArtifact",
		"createSessionBranch", "truncateSession", "cancelTask", "replayTask", "appendSessionMessage", "appendTaskMessage", "writeWorkspaceFile"} {
		if !strings.Contains(","+strings.Join(writes, ",")+",", ","+want+",") {
			t.Errorf("writeOp misses %s", want)
		}
	}
	for _, read := range []string{"verifyReceipt", "getSession", "streamTaskEvents", "listVaults"} {
		if strings.Contains(","+strings.Join(writes, ",")+",", ","+read+",") {
			t.Errorf("writeOp takes the read %s for a write", read)
		}
	}
}
