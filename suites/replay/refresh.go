package replay

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// No silent refresh (RPLY-REFRESH-001, RPLY-REFRESH-002; the narrative's
// "Replay contract" and "Memory"): a source task reads the workspace's
// Memory (the memory_read step); then one memory it read is deleted and
// another created. An exact replay's agent.memory_read must carry what the
// source read: the recorded memories with their recorded hashes and text
// (the deleted one included), and no memory created after the source ran.

const remedyMemory = "offer the Memory resource (POST and DELETE /v1/memories) and the memory_read replay step (docs/scenarios.md, \"Replay steps\")"

// memory creates a workspace Memory, ending the spec unverified when the
// target offers none.
func memory(ctx context.Context, ws, content string) string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/memories", IdempotencyKey: suite.Key("rmem"),
		Body: map[string]any{"scope": "workspace", "owner_id": ws, "content": content, "provenance": map[string]any{"actor": "conform", "run": suite.Env().RunID}}})
	m, _ := resp.Object()
	id := str(m, "id")
	if resp.Status/100 != 2 || id == "" {
		suite.Unverified(fmt.Sprintf("%s: a Memory could not be created for the replay's memory_read", resp), remedyMemory)
	}
	return id
}

var _ = Describe("Replay without refresh", func() {
	It("replays a memory_read with the recorded memories, not the current ones, and none created since", suite.Req("RPLY-REFRESH-001", "RPLY-REFRESH-002"), func(ctx SpecContext) {
		needReplay()
		needHook("a source task that reads Memory")
		ws, session := newSession(ctx)
		gone := "conform replay memory (deleted later) " + suite.Key("m1")
		kept := "conform replay memory (kept) " + suite.Key("m2")
		goneID := memory(ctx, ws, gone)
		memory(ctx, ws, kept)
		src := submitSource(ctx, session, []any{map[string]any{"op": "memory_read", "call_id": "mem:1"}, map[string]any{"op": "complete"}}, "conform replay: a source that reads memory")
		reads := ofKind(src.events, "agent.memory_read")
		if len(reads) == 0 {
			suite.Unverified(fmt.Sprintf("the source task %s emitted no agent.memory_read (events %v)", src.id, kinds(src.events)), remedyMemory)
		}
		recorded, _ := reads[0]["payload"].(map[string]any)
		if !strings.Contains(jsonOf(recorded), goneID) {
			suite.Unverified(fmt.Sprintf("the source's agent.memory_read %s does not list memory %s, created before it ran", jsonOf(recorded), goneID), remedyMemory)
		}
		del := suite.Do(ctx, client.Request{Method: http.MethodDelete, Path: "/v1/memories/" + client.Seg(goneID), IdempotencyKey: suite.Key("rmem-del")})
		if del.Status/100 != 2 {
			suite.Unverified(fmt.Sprintf("%s: the memory the source read could not be deleted", del), remedyMemory)
		}
		fresh := "conform replay memory (created after the source) " + suite.Key("m3")
		freshID := memory(ctx, ws, fresh)
		r := mustReplay(ctx, src.id, map[string]any{"mode": "exact"}, "the exact replay of a memory_read")
		r.completed("the exact replay of a memory_read")
		got := ofKind(r.output(), "agent.memory_read")
		if len(got) == 0 {
			suite.Check("RPLY-REFRESH-001", fmt.Errorf("the exact replay %s of %s replayed no agent.memory_read (events %v)", r.id, src.id, kinds(r.events)))
			suite.Blocked("RPLY-REFRESH-001", "RPLY-REFRESH-002")
			return
		}
		rp, _ := got[0]["payload"].(map[string]any)
		ok := suite.CheckBlocks("RPLY-REFRESH-001", keptRecorded(recorded, rp, r.id), "RPLY-REFRESH-002")
		if !ok {
			return
		}
		if text := str(rp, "text"); strings.Contains(jsonOf(rp), freshID) || strings.Contains(text, fresh) {
			suite.Check("RPLY-REFRESH-002", fmt.Errorf("replay task %s: the replayed agent.memory_read %s brings in memory %s, created after the source ran; the source read %s", r.id, jsonOf(rp), freshID, jsonOf(recorded)))
		}
	})
})

// keptRecorded checks that the replayed memory_read carries each memory
// the source read, with its recorded hash, and the recorded text.
func keptRecorded(src, rep map[string]any, task string) error {
	hashes := func(p map[string]any) map[string]string {
		out := map[string]string{}
		ms, _ := p["memories"].([]any)
		for _, m := range ms {
			mm, _ := m.(map[string]any)
			out[str(mm, "memory_id")] = str(mm, "sha256")
		}
		return out
	}
	want, got := hashes(src), hashes(rep)
	var bad []string
	for id, h := range want {
		if got[id] != h {
			bad = append(bad, fmt.Sprintf("memory %s: %q, recorded %q", id, got[id], h))
		}
	}
	for _, line := range strings.Split(str(src, "text"), "\n") {
		if line != "" && !slices.Contains(strings.Split(str(rep, "text"), "\n"), line) {
			bad = append(bad, fmt.Sprintf("the recorded text line %q is missing", line))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("replay task %s: the replayed agent.memory_read %s is not what the source read (%s): %s; without an opt-in to refresh, a replay uses the recorded memory", task, jsonOf(rep), jsonOf(src), strings.Join(bad, "; "))
	}
	return nil
}
