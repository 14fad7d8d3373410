package refharness

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The keys of the further actors of these tests: actor_second, a tenant of
// its own, and actor_read_only, read-only in actor_default's tenant.
const (
	secondKey   = "second-key-0123456789"
	readOnlyKey = "read-only-key-0123456789"
)

// withActors adds the further actors to a probe's harness before any of
// their requests (the probe environment makes the harness with the first
// key only).
func withActors(h *harness) *harness {
	h.s.opts.APIKeys[secondKey] = "actor_second"
	h.s.opts.APIKeys[readOnlyKey] = "actor_read_only"
	h.s.opts.Tenants = map[string]string{"actor_read_only": "actor_default"}
	h.s.opts.ReadOnly = map[string]bool{"actor_read_only": true}
	return h
}

func as(key string) []string { return []string{"Authorization", "Bearer " + key} }

// Probes of the authorization faults (authz.go): each checks one
// behaviour and is broken by exactly its fault.
func init() {
	for f, p := range map[Fault]probe{
		FaultAuthzCrossTenantReads: func(p *probeEnv) error {
			withActors(p.harness)
			if r := p.do("GET", "/v1/sessions/"+p.sessionID(), nil, as(secondKey)...); r.Code/100 == 2 {
				return fmt.Errorf("another tenant's GET of a session: status %d, want a refusal", r.Code)
			}
			return nil
		},
		FaultAuthzCrossTenantWrites: func(p *probeEnv) error {
			withActors(p.harness)
			sess := p.sessionID()
			msg := map[string]any{"message": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "x", "visibility": "public"}}}}
			if r := p.do("POST", "/v1/sessions/"+sess+"/messages", msg, as(secondKey)...); r.Code/100 == 2 {
				return fmt.Errorf("another tenant appended a message to a session: status %d, want a refusal", r.Code)
			}
			return nil
		},
		FaultAuthzListsLeak: func(p *probeEnv) error {
			withActors(p.harness)
			sess := p.sessionID()
			for _, path := range []string{"/v1/sessions?limit=200", "/v1/events?limit=200"} {
				for _, it := range p.do("GET", path, nil, as(secondKey)...).list() {
					if it["id"] == sess || it["session_id"] == sess {
						return fmt.Errorf("another tenant's GET %s lists %v of session %s", path, it["id"], sess)
					}
				}
			}
			return nil
		},
		FaultAuthzHiddenAs403: func(p *probeEnv) error {
			withActors(p.harness)
			r := p.do("GET", "/v1/tasks/"+p.taskID(), nil, as(secondKey)...)
			if r.Code/100 == 2 {
				return nil // served: the cross-tenant read probe's to judge
			}
			fake := p.do("GET", "/v1/tasks/task_does_not_exist", nil, as(secondKey)...)
			rc, _, _, _ := errCode(r)
			fc, _, _, _ := errCode(fake)
			if r.Code != fake.Code || rc != fc {
				return fmt.Errorf("another tenant's task answers %d %s, a missing one %d %s", r.Code, rc, fake.Code, fc)
			}
			return nil
		},
		FaultAuthzActorNotBound: func(p *probeEnv) error {
			withActors(p.harness)
			createdBy := func(id string) string { // read from the store: the rendering is other faults' business
				p.s.mu.RLock()
				defer p.s.mu.RUnlock()
				t, _ := p.s.st.tasks.get(id)
				return t.CreatedBy
			}
			mine := createdBy(p.taskID())
			w := p.mustOK(p.do("POST", "/v1/workspaces", map[string]any{"name": "b", "root": "/b"}, as(secondKey)...), "second actor's workspace")
			se := p.mustOK(p.do("POST", "/v1/sessions", map[string]any{"workspace_id": w.str("id")}, as(secondKey)...), "second actor's session")
			body := map[string]any{"input": map[string]any{"role": "user", "parts": []any{map[string]any{"type": "text", "text": "b", "visibility": "public"}}}}
			t := p.mustOK(p.do("POST", "/v1/sessions/"+se.str("id")+"/tasks", body, as(secondKey)...), "second actor's task")
			if by := createdBy(t.str("id")); by != "actor_second" || mine != "actor_default" {
				return fmt.Errorf("tasks created_by %q (first key) and %q (second key), want actor_default and actor_second", mine, by)
			}
			return nil
		},
		FaultAuthzRefusalEchoesCredential: func(p *probeEnv) error {
			withActors(p.harness)
			for _, key := range []string{secondKey, readOnlyKey} {
				r := p.do("PATCH", "/v1/sessions/"+p.sessionID(), map[string]any{"summary": "x"}, as(key)...)
				if r.Code/100 != 2 && strings.Contains(string(r.Raw), key) {
					return fmt.Errorf("a %d refusal repeats the caller's key: %s", r.Code, r.Raw)
				}
			}
			return nil
		},
		FaultAuthzReadOnlyWritesMemories: func(p *probeEnv) error {
			withActors(p.harness)
			sess := p.sessionID()
			if r := p.do("PATCH", "/v1/sessions/"+sess, map[string]any{"summary": "read-only"}, as(readOnlyKey)...); r.Code/100 == 2 {
				return nil // every write is carried out: authz-read-only-writes's probe
			}
			ws := p.do("GET", "/v1/sessions/"+sess, nil).str("workspace_id")
			r := p.do("POST", "/v1/memories", map[string]any{"scope": "workspace", "owner_id": ws, "content": "x", "provenance": map[string]any{"actor": "conform"}}, as(readOnlyKey)...)
			if r.Code != 403 {
				return fmt.Errorf("a read-only actor's POST /v1/memories: %d, want 403", r.Code)
			}
			return nil
		},
		FaultAuthzReadOnlyWrites: func(p *probeEnv) error {
			withActors(p.harness)
			sess := p.sessionID()
			if r := p.do("GET", "/v1/sessions/"+sess, nil, as(readOnlyKey)...); r.Code != 200 {
				return cannotJudge("the read-only actor cannot read its tenant's session: %d", r.Code)
			}
			r := p.do("PATCH", "/v1/sessions/"+sess, map[string]any{"summary": "read-only"}, as(readOnlyKey)...)
			if c, _, _, ok := errCode(r); r.Code != 403 || ok && c != "permission_denied" {
				return fmt.Errorf("a read-only actor's PATCH: %d %s, want 403 permission_denied", r.Code, c)
			}
			return nil
		},
	} {
		if probes[f] != nil {
			panic("two probes for " + string(f))
		}
		probes[f] = p
	}
}

// Another tenant's resources answer every operation like missing ids,
// with the same error; lists and event ranges leave them out; a body that
// names one is refused the same way; the read-only actor reads but does
// not write; ownership survives a restart.
func TestTenancy(t *testing.T) {
	dir := t.TempDir()
	h := withActors(newHarness(t, Options{DataDir: filepath.Join(dir, "data")}))
	sess := h.session()
	task := h.submit(sess, nil).str("id")
	h.waitTerminal(task)
	ws := h.do("GET", "/v1/sessions/"+sess, nil).str("workspace_id")
	check := func(h *harness) {
		t.Helper()
		for _, path := range []string{"/v1/sessions/", "/v1/tasks/", "/v1/workspaces/"} {
			id := map[string]string{"/v1/sessions/": sess, "/v1/tasks/": task, "/v1/workspaces/": ws}[path]
			real := h.do("GET", path+id, nil, as(secondKey)...)
			fake := h.do("GET", path+"nope_1", nil, as(secondKey)...)
			rc, _, _, _ := errCode(real)
			fc, _, _, _ := errCode(fake)
			if real.Code != 404 || fake.Code != 404 || rc != fc {
				t.Errorf("GET %s as another tenant: %d %s; missing id: %d %s", path+id, real.Code, rc, fake.Code, fc)
			}
			if strings.Contains(string(real.Raw), "actor_default") {
				t.Errorf("the refusal names the owner: %s", real.Raw)
			}
		}
		if r := h.do("POST", "/v1/sessions", map[string]any{"workspace_id": ws}, as(secondKey)...); r.Code != 404 {
			t.Errorf("a session in another tenant's workspace: %d, want 404: %s", r.Code, r.Raw)
		} else {
			wantError(t, r, 404, "resource_not_found", "workspace_id")
		}
		for _, path := range []string{"/v1/sessions", "/v1/tasks", "/v1/events?limit=200", "/v1/workspaces"} {
			if l := h.do("GET", path, nil, as(secondKey)...).list(); len(l) != 0 {
				t.Errorf("GET %s as another tenant lists %d items", path, len(l))
			}
			if l := h.do("GET", path, nil).list(); len(l) == 0 {
				t.Errorf("GET %s as the owner lists nothing", path)
			}
		}
		if r := h.do("GET", "/v1/tasks/"+task, nil, as(readOnlyKey)...); r.Code != 200 {
			t.Errorf("read-only actor reading its tenant's task: %d", r.Code)
		}
		wantError(t, h.do("POST", "/v1/tasks/"+task+"/cancel", nil, as(readOnlyKey)...), 403, "permission_denied", "")
	}
	check(h)
	h.s.Close()
	h2 := withActors(newHarness(t, Options{DataDir: filepath.Join(dir, "data")}))
	check(h2)
}

// The seeded persona and skill are everyone's.
func TestHarnessResourcesAreShared(t *testing.T) {
	h := withActors(newHarness(t, Options{}))
	mine := h.do("GET", "/v1/personas", nil).list()
	theirs := h.do("GET", "/v1/personas", nil, as(secondKey)...).list()
	if len(mine) == 0 || len(theirs) != len(mine) {
		t.Errorf("personas: %d for the first key, %d for another tenant; want the seeded one for both", len(mine), len(theirs))
	}
	own := h.mustOK(h.do("POST", "/v1/personas", map[string]any{"name": "p", "version": "1", "entry_workflow": "x", "description": "d",
		"autonomy_tier": "act_auto", "receipt_policy": "optional"}), "persona").str("id")
	var ids []string
	for _, p := range h.do("GET", "/v1/personas", nil, as(secondKey)...).list() {
		ids = append(ids, p["id"].(string))
	}
	if slices.Contains(ids, own) {
		t.Errorf("another tenant lists persona %s", own)
	}
}

// WithActors binds each key to its actor, puts the read-only actor in the
// first actor's tenant, leaves out an actor without a key, and refuses a
// key given to two actors.
func TestWithActors(t *testing.T) {
	o, err := Options{}.WithActors(Actors{Default: "k1", Second: "k2", ReadOnly: "k3"})
	if err != nil {
		t.Fatal(err)
	}
	if o.APIKeys["k1"] != ActorDefault || o.APIKeys["k2"] != ActorSecond || o.APIKeys["k3"] != ActorReadOnly || len(o.APIKeys) != 3 {
		t.Errorf("APIKeys = %v", o.APIKeys)
	}
	if o.Tenants[ActorReadOnly] != ActorDefault || !o.ReadOnly[ActorReadOnly] || o.Tenants[ActorSecond] != "" {
		t.Errorf("Tenants = %v, ReadOnly = %v", o.Tenants, o.ReadOnly)
	}
	if o, err = (Options{}).WithActors(Actors{Default: "k1"}); err != nil || len(o.APIKeys) != 1 || o.ReadOnly != nil {
		t.Errorf("one actor: %v, %v", o, err)
	}
	if _, err := (Options{}).WithActors(Actors{Default: "k1", ReadOnly: "k1"}); err == nil {
		t.Error("one key for two actors was accepted")
	}
	if _, err := (Options{}).WithActors(Actors{Second: "k2"}); err == nil {
		t.Error("no first actor's key was accepted")
	}
}
