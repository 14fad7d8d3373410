package refharness

import (
	"fmt"
	"net/http"

	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: memories.
var (
	FaultMemoryDeleteKeeps = declare(fault.Fault{Name: "memory-delete-keeps",
		Doc:   "DELETE /v1/memories/{id} answers 204 but the memory stays readable and listed",
		Fails: []string{"EXT-MEMORY-001"}})
	FaultMemoryInTranscript = declare(fault.Fault{Name: "memory-in-transcript",
		Doc:   "a session-scoped memory is also appended to the session as a system message",
		Fails: []string{"EXT-MEMORY-002"}})
)

// Memories (EXT-MEMORY-001, -002): durable knowledge kept apart from
// transcripts. A Memory names its scope and owner; creating or deleting one
// touches no session's messages.

var memoryScopes = []string{"persona", "session", "workspace", "tenant"}

func (s *Server) listMemories(c *call) (any, *apiError) {
	ws, sess := c.q.Get("workspace_id"), c.q.Get("session_id")
	return listPage(s, c, s.st.mg.memories, func(m *Memory) bool {
		if sess != "" && !(m.Scope == "session" && m.OwnerID == sess) {
			return false
		}
		return ws == "" || s.memoryWorkspace(m) == ws
	})
}

// memoryWorkspace is the workspace a memory belongs to ("" for persona and
// tenant memories, which are not a workspace's).
func (s *Server) memoryWorkspace(m *Memory) string {
	switch m.Scope {
	case "workspace":
		return m.OwnerID
	case "session":
		if se, ok := s.st.sessions.get(m.OwnerID); ok {
			return se.WorkspaceID
		}
	}
	return ""
}

func (s *Server) getMemory(c *call) (any, *apiError) {
	if m, ok := s.st.mg.memories.get(c.params[0]); ok {
		return m, nil
	}
	return nil, notFound("memory", c.params[0])
}

func (s *Server) createMemory(c *call) (*result, *apiError) {
	b := c.body
	scope, _, e := b.enum("scope", true, memoryScopes...)
	if e != nil {
		return nil, e
	}
	owner, _, e := b.str("owner_id", true)
	if e != nil {
		return nil, e
	}
	if e := s.memoryOwner(scope, owner); e != nil {
		return nil, e
	}
	content, ok := b.m["content"]
	switch content.(type) {
	case string, map[string]any:
	default:
		if !ok || content == nil {
			return nil, badRequest("content", "missing required field content")
		}
		return nil, badRequest("content", "field content: got %s, want text (a string) or a JSON object", jsonv.AKind(content))
	}
	prov, _, e := b.object("provenance", true)
	if e != nil {
		return nil, e
	}
	vis := "internal"
	if v, ok, e := b.enum("visibility", false, visibilities...); e != nil {
		return nil, e
	} else if ok {
		vis = v
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	m := &Memory{Envelope: s.envelope("memory", "memory", meta), Scope: scope, OwnerID: owner, Content: content,
		Provenance: prov.m, Visibility: vis}
	if exp, ok, e := b.str("expires_at", false); e != nil {
		return nil, e
	} else if ok {
		m.ExpiresAt = ptr(exp)
	}
	res := mgmtCreated(m, &mgmtCommit{Memories: []*Memory{m}})
	if s.opts.Faults.Has(FaultMemoryInTranscript) && scope == "session" {
		// The fault: the memory is written into the session's transcript.
		se, _ := s.st.sessions.get(owner)
		cp := *se
		text := fmt.Sprint(content)
		if str, ok := content.(string); ok {
			text = str
		}
		s.appendMessage(res.c, &cp, "", "system", []map[string]any{{"type": "text", "text": "memory: " + text, "visibility": "public"}}, nil, c.actor)
		res.c.Puts = append(res.c.Puts, put{Session: &cp})
	}
	return res, nil
}

// memoryOwner checks that the owner of a memory exists in its scope
// (tenants are not modelled: any tenant id is taken).
func (s *Server) memoryOwner(scope, owner string) *apiError {
	found := true
	switch scope {
	case "session":
		_, found = s.st.sessions.get(owner)
	case "workspace":
		_, found = s.st.workspaces.get(owner)
	case "persona":
		_, found = s.st.personas.get(owner)
	}
	if !found {
		e := notFound(scope, owner)
		e.Param = "owner_id"
		return e
	}
	return nil
}

func (s *Server) deleteMemory(c *call) (*result, *apiError) {
	id := c.params[0]
	if _, ok := s.st.mg.memories.get(id); !ok {
		return nil, notFound("memory", id)
	}
	res := &result{status: http.StatusNoContent, c: &commit{}}
	if !s.opts.Faults.Has(FaultMemoryDeleteKeeps) {
		res.c.Mgmt = &mgmtCommit{DeleteMemory: []string{id}}
	}
	return res, nil
}
