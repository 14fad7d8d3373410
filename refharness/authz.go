package refharness

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: authorization between actors (EXT-AUTHZ-001, -002,
// -008, -009): a second tenant and a read-only actor.
var (
	FaultAuthzCrossTenantReads = declare(fault.Fault{Name: "authz-cross-tenant-reads",
		Doc:   "another tenant's resources are served to reads by id (GET, streams, content)",
		Fails: []string{"EXT-AUTHZ-002", "EXT-AUTHZ-009"},
		Run:   fault.Actors})
	FaultAuthzCrossTenantWrites = declare(fault.Fault{Name: "authz-cross-tenant-writes",
		Doc:   "writes naming another tenant's resources (path or body) are carried out",
		Fails: []string{"EXT-AUTHZ-002", "EXT-AUTHZ-009"},
		Run:   fault.Actors})
	FaultAuthzListsLeak = declare(fault.Fault{Name: "authz-lists-leak",
		Doc:   "lists, event ranges and the global stream include other tenants' resources",
		Fails: []string{"EXT-AUTHZ-002"},
		Run:   fault.Actors})
	FaultAuthzHiddenAs403 = declare(fault.Fault{Name: "authz-hidden-as-403",
		Doc:   "another tenant's resource answers 403 permission_denied, an unknown id 404: existence leaks",
		Fails: []string{"EXT-AUTHZ-009"},
		Run:   fault.Actors})
	FaultAuthzActorNotBound = declare(fault.Fault{Name: "authz-actor-not-bound",
		Doc:   "every write is attributed to actor_default (created_by, event actor), whoever's key made it",
		Fails: []string{"EXT-AUTHZ-002"},
		Run:   fault.Actors})
	FaultAuthzRefusalEchoesCredential = declare(fault.Fault{Name: "authz-refusal-echoes-credential",
		Doc:   "authorization refusals repeat the caller's Authorization header in error.details",
		Fails: []string{"EXT-AUTHZ-008"},
		Run:   fault.Actors})
	FaultAuthzReadOnlyWrites = declare(fault.Fault{Name: "authz-read-only-writes",
		Doc:   "a read-only actor's writes are carried out",
		Fails: []string{"EXT-AUTHZ-001"},
		Run:   fault.Actors})
	FaultAuthzReadOnlyWritesMemories = declare(fault.Fault{Name: "authz-read-only-writes-memories",
		Doc:   "a read-only actor's memory writes (create, delete) are carried out; its session, task and workspace writes are refused",
		Fails: []string{"EXT-AUTHZ-001"},
		Run:   fault.Actors})
)

// Authorization (EXT-AUTHZ-001, -002, -008, -009; docs/interpretations.md
// #authz-tenancy): tenancy and actor permissions.
//
// Every actor is a tenant of its own unless Options.Tenants puts it in
// another's. A resource belongs to the tenant of the actor whose request
// created it (workspaces, personas, memories, vaults, quotas, connectors,
// artifacts registered without a workspace), or to its workspace's tenant
// (sessions, tasks, messages, branches, artifacts, outcomes, events,
// receipts). What the harness made itself (the seeded persona and skill,
// the provisioned workspace) has no owner and is everyone's.
//
// A caller sees only its tenant's resources: another tenant's answers
// exactly like an id that does not exist, whether named in the path or in
// the body, and lists, event ranges and the global stream leave it out.
// An actor of Options.ReadOnly may read what its tenant sees but may not
// change anything: 403 permission_denied, checked after visibility so that
// a refusal never reveals a hidden resource.
//
// Ownership is recorded per resource id in the commit that creates it
// (commit.Owners), so a restart rebuilds it with everything else.

// anonymousActor is the actor the authentication faults admit callers as;
// it sees everything, as the broken server it stands for would.
const anonymousActor = "actor_anonymous"

// defaultActor is the actor FaultAuthzActorNotBound attributes every write to.
const defaultActor = "actor_default"

// tenant is the tenant actor belongs to.
func (s *Server) tenant(actor string) string {
	if t := s.opts.Tenants[actor]; t != "" {
		return t
	}
	return actor
}

// seesOwner reports whether actor may know of a resource its owner's
// request created ("" = the harness's own: everyone's).
func (s *Server) seesOwner(actor, owner string) bool {
	return owner == "" || actor == anonymousActor || s.tenant(owner) == s.tenant(actor)
}

// seesLocked reports whether actor may know of resource v. Holds s.mu.
func (s *Server) seesLocked(actor string, v any) bool {
	if actor == anonymousActor {
		return true
	}
	ws := func(id string) bool { return s.seesOwner(actor, s.st.owners[id]) }
	owned := func(id string) bool { return s.seesOwner(actor, s.st.owners[id]) }
	switch x := v.(type) {
	case *Workspace:
		return owned(x.ID)
	case *Session:
		return ws(x.WorkspaceID)
	case *Task:
		return ws(x.WorkspaceID)
	case *Message:
		if x.SessionID != nil {
			if se, ok := s.st.sessions.get(*x.SessionID); ok {
				return ws(se.WorkspaceID)
			}
		}
		return owned(x.ID)
	case *Artifact:
		if x.WorkspaceID != nil {
			return ws(*x.WorkspaceID)
		}
		return owned(x.ID)
	case *Outcome:
		if t, ok := s.st.tasks.get(x.TaskID); ok {
			return ws(t.WorkspaceID)
		}
		return owned(x.ID)
	case *Persona:
		return owned(x.ID)
	case *Branch:
		return ws(x.WorkspaceID)
	case *Event:
		if x.WorkspaceID != nil {
			return ws(*x.WorkspaceID)
		}
		return owned(x.Resource.ID)
	case *storedReceipt:
		if t, ok := s.st.tasks.get(x.TaskID); ok {
			return ws(t.WorkspaceID)
		}
		return owned(x.ID)
	case *Memory:
		if w := s.memoryWorkspace(x); w != "" {
			return ws(w)
		}
		return owned(x.ID)
	case *Vault:
		if x.WorkspaceID != nil {
			return ws(*x.WorkspaceID)
		}
		return owned(x.ID)
	case *Quota:
		return owned(x.ID)
	case *Connector:
		return ws(x.WorkspaceID)
	case *PermissionRequest:
		if x.TaskID != nil {
			if t, ok := s.st.tasks.get(*x.TaskID); ok {
				return ws(t.WorkspaceID)
			}
		}
		return owned(x.ID)
	}
	return true // skills and anything else the harness serves to every caller
}

// listKeep narrows a list's filter to what the caller may see (every list
// goes through listPage). FaultAuthzListsLeak turns it off.
func listKeep[T any](s *Server, c *call, keep func(*T) bool) func(*T) bool {
	if s.opts.Faults.Has(FaultAuthzListsLeak) {
		return keep
	}
	return func(x *T) bool { return s.seesLocked(c.actor, x) && (keep == nil || keep(x)) }
}

// eventHider hides the events of other tenants from the global event list
// and stream (the per-session and per-task ones are gated by their path).
func (s *Server) eventHider(c *call) func(*Event) bool {
	if s.opts.Faults.Has(FaultAuthzListsLeak) {
		return nil
	}
	return func(e *Event) bool { return !s.seesLocked(c.actor, e) }
}

// collections maps a path's collection segment to the resource kind its
// handlers name in a 404 and the lookup of an id.
func (s *Server) findLocked(collection, id string) (kind string, v any, ok bool) {
	switch collection {
	case "workspaces":
		v, ok = get(s.st.workspaces, id)
		return "workspace", v, ok
	case "sessions":
		v, ok = get(s.st.sessions, id)
		return "session", v, ok
	case "tasks":
		v, ok = get(s.st.tasks, id)
		return "task", v, ok
	case "messages":
		v, ok = get(s.st.messages, id)
		return "message", v, ok
	case "artifacts":
		v, ok = get(s.st.artifacts, id)
		return "artifact", v, ok
	case "outcomes":
		v, ok = get(s.st.outcomes, id)
		return "outcome", v, ok
	case "personas":
		v, ok = get(s.st.personas, id)
		return "persona", v, ok
	case "branches":
		v, ok = get(s.st.branches, id)
		return "branch", v, ok
	case "memories":
		v, ok = get(s.st.mg.memories, id)
		return "memory", v, ok
	case "vaults":
		v, ok = get(s.st.mg.vaults, id)
		return "vault", v, ok
	case "quotas":
		v, ok = get(s.st.mg.quotas, id)
		return "quota", v, ok
	case "connectors":
		v, ok = get(s.st.mg.connectors, id)
		return "connector", v, ok
	case "permission-requests":
		v, ok = get(s.st.pr.reqs, id)
		return "permission request", v, ok
	case "receipts":
		if r, found := s.st.rc.byID[id]; found {
			return "receipt", r, true
		}
		return "receipt", nil, false
	case "events":
		if pos, found := s.st.parseEventID(id); found {
			if e, found := s.st.event(pos); found {
				return "event", e, true
			}
		}
		return "event", nil, false
	}
	return "", nil, false
}

func get[T any](t *table[T], id string) (any, bool) {
	v, ok := t.get(id)
	return v, ok
}

// bodyRefs are the body members that name another resource, with the
// collections the id may come from (owner_id: whichever its scope names).
var bodyRefs = []struct {
	field       string
	collections []string
}{
	{"workspace_id", []string{"workspaces"}},
	{"session_id", []string{"sessions"}},
	{"task_id", []string{"tasks"}},
	{"persona_id", []string{"personas"}},
	{"branch_id", []string{"branches"}},
	{"owner_id", []string{"workspaces", "sessions", "personas"}},
	{"target_session_id", []string{"sessions"}},
	{"target_persona_id", []string{"personas"}},
}

// gateLocked authorizes a routed call before its handler runs: a resource
// of another tenant named by the path or the body answers as if it did not
// exist, and a read-only actor may not write. Holds s.mu (read or write).
func (s *Server) gateLocked(c *call, rt route) *apiError {
	write := rt.write != nil && rt.pattern != "receipts/{}/verify" // verifying reads a receipt
	if write && s.opts.Faults.Has(FaultAuthzCrossTenantWrites) || !write && s.opts.Faults.Has(FaultAuthzCrossTenantReads) {
		return s.readOnlyLocked(c, write)
	}
	segs := strings.Split(rt.pattern, "/")
	for i, p := range segs {
		if p != "{}" || i == 0 {
			continue
		}
		kind, v, ok := s.findLocked(segs[i-1], c.params[0])
		if ok && !s.seesLocked(c.actor, v) {
			return s.hidden(c, kind, c.params[0], "")
		}
		break // the first id names the resource; later ones are within it
	}
	if write {
		for _, ref := range bodyRefs {
			id, ok := c.body.m[ref.field].(string)
			if !ok || id == "" {
				continue
			}
			for _, col := range ref.collections {
				if kind, v, ok := s.findLocked(col, id); ok && !s.seesLocked(c.actor, v) {
					return s.hidden(c, kind, id, ref.field)
				}
			}
		}
	}
	return s.readOnlyLocked(c, write)
}

// readOnlyLocked refuses a write by a read-only actor.
func (s *Server) readOnlyLocked(c *call, write bool) *apiError {
	if !write || !s.opts.ReadOnly[c.actor] || s.opts.Faults.Has(FaultAuthzReadOnlyWrites) {
		return nil
	}
	if s.opts.Faults.Has(FaultAuthzReadOnlyWritesMemories) && strings.HasPrefix(c.target, "/v1/memories") {
		return nil // the fault: the permission check was never added to the memory routes
	}
	return s.refusal(c, &apiError{Status: http.StatusForbidden, Code: "permission_denied",
		Message: fmt.Sprintf("actor %s may read but not change resources (%s %s)", c.actor, c.r.Method, c.target)})
}

// hidden is the answer for a resource the caller may not know of: the
// handlers' own 404 for an id that does not exist.
func (s *Server) hidden(c *call, kind, id, param string) *apiError {
	if s.opts.Faults.Has(FaultAuthzHiddenAs403) {
		return s.refusal(c, &apiError{Status: http.StatusForbidden, Code: "permission_denied", Param: param,
			Message: fmt.Sprintf("%s %q belongs to another tenant", kind, id)})
	}
	e := notFound(kind, id)
	e.Param = param
	return s.refusal(c, e)
}

// refusal applies FaultAuthzRefusalEchoesCredential: the refusal repeats
// the caller's Authorization header, as a debugging aid gone wrong.
func (s *Server) refusal(c *call, e *apiError) *apiError {
	if s.opts.Faults.Has(FaultAuthzRefusalEchoesCredential) {
		e.Details = map[string]any{"request_headers": map[string]any{"authorization": c.r.Header.Get("Authorization")}}
	}
	return e
}

// ownLocked records the caller as the owner of every resource the write
// creates (an id no stored resource has yet), and applies
// FaultAuthzActorNotBound. Holds s.mu.
func (s *Server) ownLocked(c *call, cm *commit) {
	if cm == nil {
		return
	}
	add := func(id string) {
		if id == "" || s.st.used(id) {
			return
		}
		if cm.Owners == nil {
			cm.Owners = map[string]string{}
		}
		cm.Owners[id] = c.actor
	}
	bound := !s.opts.Faults.Has(FaultAuthzActorNotBound)
	for _, p := range cm.Puts {
		switch {
		case p.Workspace != nil:
			add(p.Workspace.ID)
		case p.Session != nil:
			add(p.Session.ID)
		case p.Task != nil:
			if !bound && !s.st.used(p.Task.ID) {
				p.Task.CreatedBy = defaultActor
			}
			add(p.Task.ID)
		case p.Message != nil:
			add(p.Message.ID)
		case p.Artifact != nil:
			add(p.Artifact.ID)
		case p.Persona != nil:
			add(p.Persona.ID)
		case p.Branch != nil:
			if !bound && p.Branch.CreatedBy != nil {
				p.Branch.CreatedBy = ptr(defaultActor)
			}
			add(p.Branch.ID)
		}
	}
	if m := cm.Mgmt; m != nil {
		for _, x := range m.Memories {
			add(x.ID)
		}
		for _, x := range m.Vaults {
			add(x.ID)
		}
		for _, x := range m.Quotas {
			add(x.ID)
		}
		for _, x := range m.Connectors {
			add(x.ID)
		}
	}
	if !bound {
		for _, e := range cm.Events {
			if e.Actor != nil {
				e.Actor = ptr(defaultActor)
			}
		}
	}
}
