package refharness

import (
	"net/http"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: branches and their workspace.
var (
	FaultBranchWrongWorkspace = declare(fault.Fault{Name: "branch-wrong-workspace",
		Doc:   "branches name a workspace_id other than their session's",
		Fails: []string{"EXT-WORKSPACE-002"}})
	FaultBranchNotListed = declare(fault.Fault{Name: "branch-not-listed",
		Doc:   "GET /v1/sessions/{id}/branches is always empty (branches still readable by id)",
		Fails: []string{"EXT-BRANCH-001"}})
	FaultTaskBranchDropped = declare(fault.Fault{Name: "task-branch-dropped",
		Doc:   "a task submitted with branch_id stores branch_id null",
		Fails: []string{"EXT-BRANCH-002"}})
)

// Branches (EXT-BRANCH-001/002): lineage markers for alternate paths. A
// client creates one on a session (POST /v1/sessions/{id}/branches); a fork
// makes one of kind "session" for the new session. Tasks submitted on a
// branch, or in a session that is on one, carry its id, and so do the
// artifacts they make or that are registered for them: a client tells
// main-path work (branch_id null) from alternate-path work by it, and follows
// a Branch to where it came from by parent_branch_id, session_id or task_id.

// Branch is a lineage marker for an alternate execution path.
type Branch struct {
	Envelope
	WorkspaceID    string  `json:"workspace_id"`
	Kind           string  `json:"kind"`
	BaseRef        string  `json:"base_ref"`
	ParentBranchID *string `json:"parent_branch_id"`
	SessionID      *string `json:"session_id"` // the session it branches from
	TaskID         *string `json:"task_id"`
	WorktreeURI    *string `json:"worktree_uri"`
	CreatedBy      *string `json:"created_by"`
	MergedInto     *string `json:"merged_into"`
}

var branchKinds = []string{"workspace", "session", "task", "sandbox"}

func (s *Server) listBranches(c *call) (any, *apiError) {
	id := c.params[0]
	if _, ok := s.st.sessions.get(id); !ok {
		return nil, notFound("session", id)
	}
	if s.opts.Faults.Has(FaultBranchNotListed) {
		return s.emptyList(c)
	}
	return listPage(s, c, s.st.branches, func(b *Branch) bool { return b.SessionID != nil && *b.SessionID == id })
}

func (s *Server) getBranch(c *call) (any, *apiError) {
	if b, ok := s.st.branches.get(c.params[0]); ok {
		return b, nil
	}
	return nil, notFound("branch", c.params[0])
}

func (s *Server) createBranch(c *call) (*result, *apiError) {
	se, ok := s.st.sessions.get(c.params[0])
	if !ok {
		return nil, notFound("session", c.params[0])
	}
	b := c.body
	kind, _, e := b.enum("kind", true, branchKinds...)
	if e != nil {
		return nil, e
	}
	base, _, e := b.str("base_ref", true)
	if e != nil {
		return nil, e
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	br := s.newBranchLocked(se, kind, base, meta, c.actor)
	if id, ok, e := b.str("parent_branch_id", false); e != nil {
		return nil, e
	} else if ok {
		p, found := s.st.branches.get(id)
		if !found {
			e := notFound("branch", id)
			e.Param = "parent_branch_id"
			return nil, e
		}
		if p.WorkspaceID != se.WorkspaceID {
			return nil, badRequest("parent_branch_id", "branch %s belongs to workspace %s, not to the session's %s", id, p.WorkspaceID, se.WorkspaceID)
		}
		br.ParentBranchID = ptr(id)
	}
	if id, ok, e := b.str("task_id", false); e != nil {
		return nil, e
	} else if ok {
		t, found := s.st.tasks.get(id)
		if !found {
			e := notFound("task", id)
			e.Param = "task_id"
			return nil, e
		}
		if t.SessionID != se.ID {
			return nil, badRequest("task_id", "task %s belongs to session %s, not %s", id, t.SessionID, se.ID)
		}
		br.TaskID = ptr(id)
	}
	cm := &commit{}
	s.putBranch(cm, br, c.actor)
	return &result{status: http.StatusCreated, body: br, c: cm}, nil
}

// newBranchLocked is a Branch of session se, not yet committed. Under
// FaultBranchWrongWorkspace it names a workspace that is not the session's.
func (s *Server) newBranchLocked(se *Session, kind, base string, meta map[string]any, actor string) *Branch {
	br := &Branch{Envelope: s.envelope("branch", "branch", meta), WorkspaceID: se.WorkspaceID, Kind: kind, BaseRef: base,
		SessionID: ptr(se.ID), ParentBranchID: se.BranchID, CreatedBy: optStr(actor)}
	if s.opts.Faults.Has(FaultBranchWrongWorkspace) {
		br.WorkspaceID = "workspace_global"
	}
	return br
}

// putBranch adds br and its branch.created event to cm.
func (s *Server) putBranch(cm *commit, br *Branch, actor string) {
	cm.Puts = append(cm.Puts, put{Branch: br})
	sess := ""
	if br.SessionID != nil {
		sess = *br.SessionID
	}
	cm.Events = append(cm.Events, s.newEvent("branch.created", Pointer{"branch", br.ID},
		map[string]any{"kind": br.Kind, "base_ref": br.BaseRef, "parent_branch_id": br.ParentBranchID, "session_id": br.SessionID},
		br.WorkspaceID, sess, "", actor))
}

// forkBranchLocked puts fork ns of src on a Branch: the one the request
// names (it must exist in src's workspace), else a new Branch of kind
// "session" from src at atID (or src's newest event).
func (s *Server) forkBranchLocked(cm *commit, c *call, src, ns *Session, named, atID string) *apiError {
	if named != "" {
		br, ok := s.st.branches.get(named)
		if !ok {
			e := notFound("branch", named)
			e.Param = "branch_id"
			return e
		}
		if br.WorkspaceID != src.WorkspaceID && !s.opts.Faults.Has(FaultBranchWrongWorkspace) {
			return badRequest("branch_id", "branch %s belongs to workspace %s, not to the session's %s", named, br.WorkspaceID, src.WorkspaceID)
		}
		ns.BranchID = ptr(named)
		return nil
	}
	at := atID
	if at == "" {
		at = "head"
		if v := s.sessionView(src).LastEventID; v != nil {
			at = *v
		}
	}
	br := s.newBranchLocked(src, "session", "session/"+src.ID+"@"+at, nil, c.actor)
	s.putBranch(cm, br, c.actor)
	ns.BranchID = ptr(br.ID)
	return nil
}

// taskBranchLocked is the branch of a task submitted to session se: the
// body's branch_id (it must exist in the session's workspace), else the
// session's own. FaultTaskBranchDropped drops it.
func (s *Server) taskBranchLocked(b obj, se *Session) (*string, *apiError) {
	id, ok, e := b.str("branch_id", false)
	if e != nil {
		return nil, e
	}
	out := se.BranchID
	if ok {
		br, found := s.st.branches.get(id)
		if !found {
			e := notFound("branch", id)
			e.Param = "branch_id"
			return nil, e
		}
		if br.WorkspaceID != se.WorkspaceID && !s.opts.Faults.Has(FaultBranchWrongWorkspace) {
			return nil, badRequest("branch_id", "branch %s belongs to workspace %s, not to the session's %s", id, br.WorkspaceID, se.WorkspaceID)
		}
		out = ptr(id)
	}
	if s.opts.Faults.Has(FaultTaskBranchDropped) {
		return nil, nil
	}
	return out, nil
}

// artifactBranchLocked is the branch of an artifact registered for task
// (or, without one, session sess): the task's branch, else the session's.
func (s *Server) artifactBranchLocked(sess, task string) *string {
	if t, ok := s.st.tasks.get(task); ok && task != "" {
		return t.BranchID
	}
	if se, ok := s.st.sessions.get(sess); ok && sess != "" {
		return se.BranchID
	}
	return nil
}
