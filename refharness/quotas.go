package refharness

import (
	"fmt"
	"net/http"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/internal/jsonv"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: quotas, the persona's among them.
var (
	FaultQuotaNotListed = declare(fault.Fault{Name: "quota-not-listed",
		Doc:   "GET /v1/quotas is always empty (quotas still readable by id)",
		Fails: []string{"EXT-QUOTA-001"}})
	FaultQuotaCheckedLate = declare(fault.Fault{Name: "quota-checked-late",
		Doc:       "an exhausted hard quota stops a task only after it started working",
		Fails:     []string{"EXT-QUOTA-002"},
		Tolerated: []string{"EXT-PERSONA-005"},
		Why:       "accepted, worked, then failed: refused in the end (EXT-AUTHZ-006 holds), but not before work started; a persona's quota is enforced by the same check, so EXT-PERSONA-005 may see it too"})
	FaultQuotaRefusedAs409 = declare(fault.Fault{Name: "quota-refused-as-409",
		Doc:       "an exhausted hard quota refuses a submit with 409 conflict instead of a policy or rate-limit refusal",
		Fails:     []string{"EXT-AUTHZ-006"},
		Tolerated: []string{"EXT-PERSONA-005"},
		Why:       "nothing ran (EXT-QUOTA-002 holds), but 409 conflict is no quota refusal; a persona's quota refusal is the same answer (EXT-PERSONA-005)"})
	FaultQuotaIgnoresPersona = declare(fault.Fault{Name: "quota-ignores-persona",
		Doc:   "persona-scoped quotas are shown but not enforced on the tasks naming the persona",
		Fails: []string{"EXT-PERSONA-005"}})
)

// Quotas (EXT-QUOTA-001, -002, EXT-AUTHZ-006). Quotas are read-only over the
// API; the conform.quotas hook (POST /v1/conform/quotas) creates one bound to
// a workspace or a persona, with the limits and usage the caller names. The
// reference Harness meters one limit, "tasks": every task accepted under a
// quota adds 1 to its usage, and a task submitted while a hard quota's
// usage has reached its limit is refused before anything is stored or run
// (422 policy_violation). Other limits are kept and shown, not metered.

// quotaTasks is the limit the harness meters.
const quotaTasks = "tasks"

var quotaScopes = []string{"persona", "workspace", "tenant", "organization"}

func (s *Server) listQuotas(c *call) (any, *apiError) {
	if s.opts.Faults.Has(FaultQuotaNotListed) {
		return s.emptyList(c)
	}
	return listPage(s, c, s.st.mg.quotas, nil)
}

func (s *Server) getQuota(c *call) (any, *apiError) {
	if q, ok := s.st.mg.quotas.get(c.params[0]); ok {
		return q, nil
	}
	return nil, notFound("quota", c.params[0])
}

// hookCreateQuota creates a quota: {scope, owner_id, limits, usage?,
// hard_limit?, soft_limit?}. A workspace or persona owner gets it as its
// quota_id, and the harness enforces it on that owner's tasks; tenant and
// organization quotas are stored and shown only.
func (s *Server) hookCreateQuota(c *call) (*result, *apiError) {
	b := c.body
	scope, _, e := b.enum("scope", true, quotaScopes...)
	if e != nil {
		return nil, e
	}
	owner, _, e := b.str("owner_id", scope == "workspace" || scope == "persona")
	if e != nil {
		return nil, e
	}
	limits, e := numbers(b, "limits", true)
	if e != nil {
		return nil, e
	}
	if len(limits) == 0 {
		return nil, badRequest("limits", "field limits: want at least one numeric limit")
	}
	usage, e := numbers(b, "usage", false)
	if e != nil {
		return nil, e
	}
	hard, soft := true, false
	for name, dst := range map[string]*bool{"hard_limit": &hard, "soft_limit": &soft} {
		if v, ok := b.m[name]; ok {
			bv, isBool := v.(bool)
			if !isBool {
				return nil, badRequest(name, "field %s: got %s, want a boolean", name, jsonv.AKind(v))
			}
			*dst = bv
		}
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	var puts []put
	switch scope {
	case "workspace":
		w, ok := s.st.workspaces.get(owner)
		if !ok {
			e := notFound("workspace", owner)
			e.Param = "owner_id"
			return nil, e
		}
		cp := *w
		puts = append(puts, put{Workspace: &cp})
	case "persona":
		p, ok := s.st.personas.get(owner)
		if !ok {
			e := notFound("persona", owner)
			e.Param = "owner_id"
			return nil, e
		}
		cp := *p
		puts = append(puts, put{Persona: &cp})
	}
	q := &Quota{Envelope: s.envelope("quota", "quota", meta), Scope: scope, Limits: limits, Usage: usage, HardLimit: hard, SoftLimit: soft}
	for k := range limits {
		if _, ok := q.Usage[k]; !ok {
			q.Usage[k] = 0
		}
	}
	mc := &mgmtCommit{Quotas: []*Quota{q}}
	if len(puts) > 0 {
		now := s.now()
		if p := puts[0]; p.Workspace != nil {
			p.Workspace.QuotaID, p.Workspace.UpdatedAt = ptr(q.ID), now
		} else {
			p.Persona.QuotaID, p.Persona.UpdatedAt = ptr(q.ID), now
		}
		mc.QuotaBindings = []quotaBinding{{Owner: ownerKey(scope, owner), Quota: q.ID}}
	}
	return mgmtCreated(q, mc, puts...), nil
}

// quotaGate is what the quotas applicable to a task (its workspace's and
// its persona's) decide at submit.
type quotaGate struct {
	mc      *mgmtCommit        // the usage the task adds
	quotaID *string            // the quota the task is counted against
	late    *scenario.Scenario // FaultQuotaCheckedLate: the steps the task runs instead
}

// quotaGateLocked checks the hard quotas that apply to a task in workspace
// ws under persona (nil: none) before the task is stored, and counts the
// task against them. An exhausted hard quota refuses the submit.
func (s *Server) quotaGateLocked(ws string, persona *string) (quotaGate, *apiError) {
	var g quotaGate
	owners := []string{ownerKey("workspace", ws)}
	if persona != nil && !s.opts.Faults.Has(FaultQuotaIgnoresPersona) {
		owners = append(owners, ownerKey("persona", *persona))
	}
	for _, o := range owners {
		id, ok := s.st.mg.quotaOf[o]
		if !ok {
			continue
		}
		q, ok := s.st.mg.quotas.get(id)
		if !ok {
			continue
		}
		limit, metered := q.Limits[quotaTasks]
		if !metered {
			continue
		}
		if q.HardLimit && q.Usage[quotaTasks] >= limit {
			switch {
			case s.opts.Faults.Has(FaultQuotaCheckedLate):
				// The fault: the task is accepted and starts work; the
				// quota stops it only afterwards.
				g.late = &scenario.Scenario{Steps: []scenario.Step{
					{Op: scenario.OpEmit, Count: 1, Text: "working before the quota check"},
					{Op: scenario.OpFail, Code: "quota_exceeded", Message: "hard quota " + q.ID + " is exhausted"},
				}}
				g.quotaID = ptr(q.ID)
				continue
			case s.opts.Faults.Has(FaultQuotaRefusedAs409):
				return g, conflict("quota %s is exhausted", q.ID)
			}
			return g, &apiError{Status: http.StatusUnprocessableEntity, Code: "policy_violation",
				Message: fmt.Sprintf("hard quota %s is exhausted: %s usage %g of limit %g", q.ID, quotaTasks, q.Usage[quotaTasks], limit),
				Details: map[string]any{"quota_id": q.ID, "limit": quotaTasks}}
		}
		cp := *q
		cp.Usage = map[string]float64{}
		for k, v := range q.Usage {
			cp.Usage[k] = v
		}
		cp.Usage[quotaTasks]++
		cp.UpdatedAt = s.now()
		if g.mc == nil {
			g.mc = &mgmtCommit{}
		}
		g.mc.Quotas = append(g.mc.Quotas, &cp)
		if g.quotaID == nil {
			g.quotaID = ptr(q.ID)
		}
	}
	return g, nil
}
