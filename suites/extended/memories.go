package extended

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Memories (EXT-MEMORY-001, -002): the resource over the OpenAPI's four
// operations, and Memory kept apart from transcripts. No hook is needed.

const (
	reqMemory           = "EXT-MEMORY-001" // list, create 201, get, delete 204, fields
	reqMemoryTranscript = "EXT-MEMORY-002" // memory is not transcript
)

var _ = Describe("Memories", func() {
	It("creates a Memory (201), reads and lists it, and deletes it (204)", suite.Req(reqMemory), func(ctx SpecContext) {
		ws, err := suite.Workspace(ctx, reqMemory)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		content := "conform memory " + suite.Key("mem")
		id, created := createMemory(ctx, "workspace", ws, content, reqMemory)
		suite.Check(reqMemory, memoryFields(created, "workspace", ws, content))
		got := suite.Do(ctx, client.Request{Path: "/v1/memories/" + client.Seg(id)}, reqMemory)
		if suite.Check(reqMemory, check.Status(got, http.StatusOK)) {
			m, err := object(got)
			if suite.Check(reqMemory, err) {
				suite.Check(reqMemory, memoryFields(m, "workspace", ws, content))
			}
		}
		items, _, err := listAll(ctx, "/v1/memories", url.Values{"workspace_id": {ws}}, reqMemory)
		if suite.Check(reqMemory, err) && !slices.Contains(ids(items), id) {
			suite.Check(reqMemory, fmt.Errorf("GET /v1/memories?workspace_id=%s does not list memory %s, created in that workspace (listed: %v)", ws, id, ids(items)))
		}
		// A second memory of the workspace: its list, read one a page,
		// holds two of the spec's in every run.
		second, _ := createMemory(ctx, "workspace", ws, "conform memory "+suite.Key("mem"), reqMemory)
		xPaged(ctx, reqMemory, "/v1/memories", url.Values{"workspace_id": {ws}}, []string{id, second}, 50)
		del := suite.Do(ctx, client.Request{Method: http.MethodDelete, Path: "/v1/memories/" + client.Seg(id), IdempotencyKey: suite.Key("mem-del")}, reqMemory)
		if !suite.Check(reqMemory, check.Status(del, http.StatusNoContent)) {
			return
		}
		after := suite.Do(ctx, client.Request{Path: "/v1/memories/" + client.Seg(id)}, reqMemory)
		suite.Check(reqMemory, deletedMemory(after))
		items, _, err = listAll(ctx, "/v1/memories", url.Values{"workspace_id": {ws}}, reqMemory)
		if suite.Check(reqMemory, err) {
			for _, it := range items {
				if it["id"] == id && !tombstone(it) {
					suite.Check(reqMemory, fmt.Errorf("GET /v1/memories still lists memory %s after its DELETE answered 204, with no tombstone marker", id))
				}
			}
		}
	})

	It("keeps a session's Memory out of its transcript", suite.Req(reqMemory, reqMemoryTranscript), func(ctx SpecContext) {
		ws, err := suite.Workspace(ctx, reqMemoryTranscript)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		sess := newSession(ctx, ws, reqMemoryTranscript)
		msg := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/messages", IdempotencyKey: suite.Key("mem-msg"),
			Body: map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "a turn of the transcript", "visibility": "public"}}}}}, reqMemoryTranscript)
		if msg.Status/100 != 2 {
			suite.Unverified(fmt.Sprintf("setting up a transcript: %s, want 201", msg), "make message append work (Core)")
		}
		before := transcript(ctx, sess)
		content := "conform session memory " + suite.Key("mem")
		id, _ := createMemory(ctx, "session", sess, content, reqMemory)
		suite.Check(reqMemoryTranscript, sameTranscript("creating session memory "+id, before, transcript(ctx, sess), content))
		items, _, err := listAll(ctx, "/v1/memories", url.Values{"session_id": {sess}}, reqMemory)
		if suite.Check(reqMemory, err) && !slices.Contains(ids(items), id) {
			suite.Check(reqMemory, fmt.Errorf("GET /v1/memories?session_id=%s does not list memory %s, scoped to that session (listed: %v)", sess, id, ids(items)))
		}
		del := suite.Do(ctx, client.Request{Method: http.MethodDelete, Path: "/v1/memories/" + client.Seg(id), IdempotencyKey: suite.Key("mem-del")}, reqMemory)
		if suite.CheckBlocks(reqMemory, check.Status(del, http.StatusNoContent)) {
			suite.Check(reqMemoryTranscript, sameTranscript("deleting session memory "+id, before, transcript(ctx, sess), content))
		}
	})
})

// createMemory creates a memory; a failure ends the spec as reqMemory's
// (everything else of the spec is then blocked by it).
func createMemory(ctx context.Context, scope, owner, content, req string) (string, map[string]any) {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/memories", IdempotencyKey: suite.Key("mem"),
		Body: map[string]any{"scope": scope, "owner_id": owner, "content": content,
			"provenance": map[string]any{"actor": "conform", "run": suite.Env().RunID}}}, req)
	suite.Must(reqMemory, offered(resp, "the Memory resource (POST /v1/memories)", http.StatusCreated))
	m, err := object(resp)
	suite.Must(reqMemory, err)
	id, _ := m["id"].(string)
	if id == "" {
		suite.Must(reqMemory, fmt.Errorf("%s: the created memory has no id", resp))
	}
	return id, m
}

// memoryFields checks a Memory against what was created.
func memoryFields(m map[string]any, scope, owner, content string) error {
	var errs []string
	want := map[string]any{"object": "memory", "scope": scope, "owner_id": owner, "content": content}
	for _, k := range []string{"object", "scope", "owner_id", "content"} {
		if !reflect.DeepEqual(m[k], want[k]) {
			errs = append(errs, fmt.Sprintf("%s = %s, want %q", k, jsonText(m[k]), want[k]))
		}
	}
	if _, ok := m["provenance"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("provenance = %s, want the source object it was created with", jsonText(m["provenance"])))
	}
	if len(errs) > 0 {
		return fmt.Errorf("memory %v: %s", m["id"], strings.Join(errs, "; "))
	}
	return nil
}

// deletedMemory judges a read of a deleted memory: gone (404 or 410), or a
// tombstone ("Delete or tombstone a Memory record", OpenAPI deleteMemory;
// docs/interpretations.md#memory-tombstones).
func deletedMemory(resp *client.Response) error {
	switch resp.Status {
	case http.StatusNotFound, http.StatusGone:
		return nil
	case http.StatusOK:
		if m, err := resp.Object(); err == nil && tombstone(m) {
			return nil
		}
	}
	return fmt.Errorf("%s after its DELETE answered 204: status %d, want 404 (or a tombstone)", resp, resp.Status)
}

// tombstone reports whether a memory says it was deleted.
func tombstone(m map[string]any) bool {
	if m["deleted"] == true || m["tombstoned"] == true {
		return true
	}
	for _, k := range []string{"deleted_at", "tombstoned_at"} {
		if s, _ := m[k].(string); s != "" {
			return true
		}
	}
	meta, _ := m["metadata"].(map[string]any)
	return meta["deleted"] == true
}

// transcriptState is a session's messages and transcript summary.
type transcriptState struct {
	ids     []string
	texts   []string
	summary any
	err     error
}

func transcript(ctx context.Context, sess string) transcriptState {
	GinkgoHelper()
	var t transcriptState
	items, _, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/messages", nil, suite.SpecReqs()...)
	if err != nil {
		t.err = err
		return t
	}
	t.ids = ids(items)
	for _, it := range items {
		t.texts = append(t.texts, jsonText(it["parts"]))
	}
	se, err := object(suite.Do(ctx, client.Request{Path: "/v1/sessions/" + client.Seg(sess)}, suite.SpecReqs()...))
	if err != nil {
		t.err = err
		return t
	}
	t.summary = se["transcript"]
	return t
}

// sameTranscript compares a session's transcript before and after a
// memory operation: the same messages in the same order, the same
// summary, and no message carrying the memory's content.
func sameTranscript(what string, before, after transcriptState, content string) error {
	if before.err != nil || after.err != nil {
		return fmt.Errorf("reading the session's transcript around %s: %v", what, errors2(before.err, after.err))
	}
	var errs []string
	if !slices.Equal(before.ids, after.ids) {
		errs = append(errs, fmt.Sprintf("its messages were %v and are %v", before.ids, after.ids))
	}
	if !reflect.DeepEqual(before.summary, after.summary) {
		errs = append(errs, fmt.Sprintf("its transcript summary was %s and is %s", jsonText(before.summary), jsonText(after.summary)))
	}
	for i, txt := range after.texts {
		if strings.Contains(txt, content) {
			errs = append(errs, fmt.Sprintf("message %s carries the memory's content", after.ids[i]))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s changed the session's transcript: %s; Memory must stay apart from transcript history", what, strings.Join(errs, "; "))
	}
	return nil
}

func errors2(a, b error) error {
	if a != nil {
		return a
	}
	return b
}
