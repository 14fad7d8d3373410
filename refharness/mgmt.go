package refharness

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"

	"github.com/harn-conform/conform/internal/jsonv"
)

// The management resources of the Extended level that live beside the Core
// ones: Memories (memories.go), Vaults (vaults.go), Quotas (quotas.go) and
// Connectors with delivery dedupe (connectors.go). Their state is one more
// projection of the journal: every change is a mgmtCommit carried by a
// commit and folded in by state.apply, so a restart rebuilds it.
//
// Three things a client cannot do through the OpenAPI go through test hooks
// of the scenario contract's kind (docs/scenarios.md), each advertised in
// discovery and hidden by VariantNoScenarioHook:
//
//   - conform.vault_secrets: POST /v1/vaults takes write-only "secrets",
//     and the scenario step use_vault_secret uses one;
//   - conform.quotas: POST /v1/conform/quotas creates a quota bound to a
//     workspace or persona, with the limits and usage the caller names;
//   - conform.connectors: POST /v1/conform/connectors creates a connector,
//     and POST /v1/conform/connectors/{id}/deliveries hands it a provider
//     delivery.

// Capability keys and the version of the hooks above.
const (
	VaultSecretsCapability = "conform.vault_secrets"
	QuotasCapability       = "conform.quotas"
	ConnectorsCapability   = "conform.connectors"
	mgmtHookVersion        = "v1"
)

// Memory is durable knowledge a Persona or Session may read in later tasks.
type Memory struct {
	Envelope
	Scope        string   `json:"scope"`
	OwnerID      string   `json:"owner_id"`
	Content      any      `json:"content"`
	Provenance   any      `json:"provenance"`
	ExpiresAt    *string  `json:"expires_at"`
	EmbeddingRef *string  `json:"embedding_ref"`
	Visibility   string   `json:"visibility"`
	Confidence   *float64 `json:"confidence"`
}

// Vault stores secrets under policy. Its secret values are never part of
// it: they live in mgmtState.secrets, which no read renders.
type Vault struct {
	Envelope
	WorkspaceID  *string  `json:"workspace_id"`
	Provider     string   `json:"provider"`
	Capabilities []string `json:"capabilities"`
}

// Quota is a policy resource of ceilings and a usage snapshot.
type Quota struct {
	Envelope
	Scope            string             `json:"scope"`
	Limits           map[string]float64 `json:"limits"`
	Usage            map[string]float64 `json:"usage"`
	ResetAt          *string            `json:"reset_at"`
	HardLimit        bool               `json:"hard_limit"`
	SoftLimit        bool               `json:"soft_limit"`
	ExhaustionReason *string            `json:"exhaustion_reason"`
	LastReceiptID    *string            `json:"last_receipt_id"`
}

// Connector normalizes provider activity into tasks and events.
type Connector struct {
	Envelope
	Provider        string         `json:"provider"`
	WorkspaceID     string         `json:"workspace_id"`
	Status          string         `json:"status"`
	EventKinds      []string       `json:"event_kinds"`
	DedupePolicy    map[string]any `json:"dedupe_policy"`
	TargetPersonaID *string        `json:"target_persona_id"`
	TargetSessionID *string        `json:"target_session_id"`
}

// mgmtCommit is the part of a commit that changes the management resources.
type mgmtCommit struct {
	Memories      []*Memory        `json:"memories,omitempty"`
	DeleteMemory  []string         `json:"delete_memory,omitempty"`
	Vaults        []*Vault         `json:"vaults,omitempty"`
	Secrets       []vaultSecret    `json:"secrets,omitempty"`
	Quotas        []*Quota         `json:"quotas,omitempty"`
	QuotaBindings []quotaBinding   `json:"quota_bindings,omitempty"`
	Connectors    []*Connector     `json:"connectors,omitempty"`
	Deliveries    []deliveryRecord `json:"deliveries,omitempty"`
}

// vaultSecret is one write-only secret of a vault.
type vaultSecret struct {
	Vault string `json:"vault"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// quotaBinding makes a quota apply to an owner ("workspace:ID", "persona:ID").
type quotaBinding struct {
	Owner string `json:"owner"`
	Quota string `json:"quota"`
}

// deliveryRecord remembers the task a connector's dedupe key produced.
type deliveryRecord struct {
	Connector string `json:"connector"`
	Key       string `json:"key"`
	Task      string `json:"task"`
}

// mgmtState is the projection of the mgmtCommits.
type mgmtState struct {
	memories   *table[Memory]
	vaults     *table[Vault]
	quotas     *table[Quota]
	connectors *table[Connector]
	secrets    map[string]map[string]string // vault id -> name -> value
	quotaOf    map[string]string            // owner -> quota id
	delivered  map[string]string            // connector id + "\x00" + dedupe key -> task id
}

func newMgmtState() mgmtState {
	return mgmtState{memories: newTable[Memory](), vaults: newTable[Vault](), quotas: newTable[Quota](),
		connectors: newTable[Connector](), secrets: map[string]map[string]string{}, quotaOf: map[string]string{},
		delivered: map[string]string{}}
}

func (m *mgmtState) apply(c *mgmtCommit) {
	if c == nil {
		return
	}
	for _, x := range c.Memories {
		m.memories.put(x.ID, x)
	}
	for _, id := range c.DeleteMemory {
		m.memories.del(id)
	}
	for _, x := range c.Vaults {
		m.vaults.put(x.ID, x)
	}
	for _, x := range c.Secrets {
		if m.secrets[x.Vault] == nil {
			m.secrets[x.Vault] = map[string]string{}
		}
		m.secrets[x.Vault][x.Name] = x.Value
	}
	for _, x := range c.Quotas {
		m.quotas.put(x.ID, x)
	}
	for _, b := range c.QuotaBindings {
		m.quotaOf[b.Owner] = b.Quota
	}
	for _, x := range c.Connectors {
		m.connectors.put(x.ID, x)
	}
	for _, d := range c.Deliveries {
		m.delivered[d.Connector+"\x00"+d.Key] = d.Task
	}
}

func (m *mgmtState) used(id string) bool {
	return m.memories.rows[id] != nil || m.vaults.rows[id] != nil || m.quotas.rows[id] != nil || m.connectors.rows[id] != nil
}

// mgmtRoutes are the routes of the four resources and of their hooks.
func (s *Server) mgmtRoutes() []route {
	rs := []route{
		{method: "GET", pattern: "memories", get: s.listMemories},
		{method: "POST", pattern: "memories", write: s.createMemory},
		{method: "GET", pattern: "memories/{}", get: s.getMemory},
		{method: "DELETE", pattern: "memories/{}", write: s.deleteMemory, noBody: true},
		{method: "GET", pattern: "vaults", get: s.listVaults},
		{method: "POST", pattern: "vaults", write: s.createVault},
		{method: "GET", pattern: "vaults/{}", get: s.getVault},
		{method: "GET", pattern: "quotas", get: s.listQuotas},
		{method: "GET", pattern: "quotas/{}", get: s.getQuota},
		{method: "GET", pattern: "connectors", get: s.listConnectors},
		{method: "GET", pattern: "connectors/{}", get: s.getConnector},
	}
	if s.opts.Variants.Has(VariantNoScenarioHook) {
		return rs // a third-party server: no test hooks
	}
	return append(rs,
		route{method: "POST", pattern: "conform/quotas", write: s.hookCreateQuota},
		route{method: "POST", pattern: "conform/connectors", write: s.hookCreateConnector},
		route{method: "POST", pattern: "conform/connectors/{}/deliveries", write: s.hookDeliver},
	)
}

// advertiseMgmtHooks adds the hooks' capabilities to discovery's.
func (s *Server) advertiseMgmtHooks(caps map[string]any) {
	if s.opts.Variants.Has(VariantNoScenarioHook) {
		return
	}
	for _, k := range []string{VaultSecretsCapability, QuotasCapability, ConnectorsCapability} {
		caps[k] = mgmtHookVersion
	}
}

// mgmtCreated is the result of a create: 201 with v, committing mc.
func mgmtCreated(v any, mc *mgmtCommit, puts ...put) *result {
	return &result{status: http.StatusCreated, body: v, c: &commit{Mgmt: mc, Puts: puts}}
}

// numbers reads an object of numbers (limits, usage).
func numbers(o obj, name string, required bool) (map[string]float64, *apiError) {
	v, ok, e := o.object(name, required)
	if e != nil || !ok {
		return map[string]float64{}, e
	}
	out := map[string]float64{}
	keys := make([]string, 0, len(v.m))
	for k := range v.m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		n, isNum := v.m[k].(json.Number)
		f, err := n.Float64()
		if !isNum || err != nil || f < 0 {
			p := v.path(k)
			return nil, badRequest(p, "field %s: got %s, want a number >= 0", p, jsonv.AKind(v.m[k]))
		}
		out[k] = f
	}
	return out, nil
}

// ownerKey names a quota owner.
func ownerKey(scope, id string) string { return fmt.Sprintf("%s:%s", scope, id) }
