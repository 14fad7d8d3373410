package refharness

import (
	"context"
	"slices"
	"sort"
	"strconv"
	"unicode/utf8"

	scenario "github.com/harn-conform/conform/hook"
	"github.com/harn-conform/conform/refharness/fault"
)

// Faults of this area: vaults and their secrets.
var (
	FaultVaultNotReadable = declare(fault.Fault{Name: "vault-not-readable",
		Doc:   "GET /v1/vaults/{id} answers 404 for the vaults it created (they are still listed)",
		Fails: []string{"EXT-VAULT-001"}})
	FaultVaultReadLeaks = declare(fault.Fault{Name: "vault-read-leaks",
		Doc:   "GET /v1/vaults/{id} shows the vault's stored secret values",
		Fails: []string{"EXT-VAULT-002"}})
	FaultVaultListLeaksUnfiltered = declare(fault.Fault{Name: "vault-list-leaks-unfiltered",
		Doc:   "GET /v1/vaults without ?workspace_id= shows each vault's stored secret values (the filtered list and the read by id do not)",
		Fails: []string{"EXT-VAULT-002"}})
	FaultVaultSecretInEvent = declare(fault.Fault{Name: "vault-secret-in-event",
		Doc:   "a use_vault_secret step's tool.requested event carries the secret value",
		Fails: []string{"EXT-VAULT-003"}})
	FaultVaultPolicyIgnored = declare(fault.Fault{Name: "vault-policy-ignored",
		Doc:   "use_vault_secret uses a vault's secret although the vault's capabilities do not allow \"use\"",
		Fails: []string{"EXT-AUTHZ-005"}})
)

// Vaults (EXT-VAULT-001..003, EXT-AUTHZ-005). A vault's secret values are
// write-only: the conform.vault_secrets hook takes them in POST /v1/vaults
// ("secrets": {name: value}) and stores them beside the vault (journal
// record mgmtCommit.Secrets), never in it, so no read, list, event, error
// or receipt renders them. Tasks use them through the scenario step
// use_vault_secret, which the vault's capabilities must allow ("use").

// Bounds of stored secrets.
const (
	maxSecrets      = 16
	maxSecretName   = 128
	maxSecretValue  = 4096
	vaultCapUse     = "use" // the capability a vault needs for use_vault_secret
	redactedSecret  = "[REDACTED]"
	vaultPolicyCode = "policy_violation"
)

func (s *Server) listVaults(c *call) (any, *apiError) {
	ws := c.q.Get("workspace_id")
	l, e := listPage(s, c, s.st.mg.vaults, func(v *Vault) bool { return eqOpt(v.WorkspaceID, ws) })
	if e == nil && ws == "" && s.opts.Faults.Has(FaultVaultListLeaksUnfiltered) {
		// The fault: the unfiltered list renders what the read by id keeps back.
		for i, it := range l.Data {
			v := it.(*Vault)
			l.Data[i] = struct {
				*Vault
				Secrets map[string]string `json:"secrets"`
			}{v, s.st.mg.secrets[v.ID]}
		}
	}
	return l, e
}

func (s *Server) getVault(c *call) (any, *apiError) {
	v, ok := s.st.mg.vaults.get(c.params[0])
	if !ok || s.opts.Faults.Has(FaultVaultNotReadable) {
		return nil, notFound("vault", c.params[0])
	}
	if s.opts.Faults.Has(FaultVaultReadLeaks) {
		// The fault: the default read carries the secret values.
		return struct {
			*Vault
			Secrets map[string]string `json:"secrets"`
		}{v, s.st.mg.secrets[v.ID]}, nil
	}
	return v, nil
}

func (s *Server) createVault(c *call) (*result, *apiError) {
	b := c.body
	provider, _, e := b.str("provider", true)
	if e != nil {
		return nil, e
	}
	if !b.has("capabilities") {
		return nil, badRequest("capabilities", "missing required field capabilities")
	}
	caps, _, e := b.strings("capabilities")
	if e != nil {
		return nil, e
	}
	v := &Vault{Provider: provider, Capabilities: caps}
	if ws, ok, e := b.str("workspace_id", false); e != nil {
		return nil, e
	} else if ok {
		if _, found := s.st.workspaces.get(ws); !found {
			e := notFound("workspace", ws)
			e.Param = "workspace_id"
			return nil, e
		}
		v.WorkspaceID = ptr(ws)
	}
	var secrets []vaultSecret
	if !s.opts.Variants.Has(VariantNoScenarioHook) { // without the hook "secrets" is an unknown field
		var e *apiError
		if secrets, e = readSecrets(b); e != nil {
			return nil, e
		}
	}
	meta, e := b.metadata()
	if e != nil {
		return nil, e
	}
	v.Envelope = s.envelope("vault", "vault", meta)
	for i := range secrets {
		secrets[i].Vault = v.ID
	}
	return mgmtCreated(v, &mgmtCommit{Vaults: []*Vault{v}, Secrets: secrets}), nil
}

// readSecrets reads the hook's "secrets" object. Its error messages name
// the offending field, never a value.
func readSecrets(b obj) ([]vaultSecret, *apiError) {
	o, ok, e := b.object("secrets", false)
	if e != nil || !ok {
		return nil, e
	}
	if len(o.m) > maxSecrets {
		return nil, badRequest("secrets", "field secrets: %d secrets, want at most %d", len(o.m), maxSecrets)
	}
	names := make([]string, 0, len(o.m))
	for n := range o.m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]vaultSecret, 0, len(names))
	for _, n := range names {
		if n == "" || utf8.RuneCountInString(n) > maxSecretName {
			return nil, badRequest("secrets", "field secrets: a secret name has %d characters, want 1..%d", utf8.RuneCountInString(n), maxSecretName)
		}
		val, isStr := o.m[n].(string)
		if !isStr || val == "" || len(val) > maxSecretValue {
			return nil, badRequest(o.path(n), "field %s: want a string of 1..%d bytes (the value is not repeated here)", o.path(n), maxSecretValue)
		}
		out = append(out, vaultSecret{Name: n, Value: val})
	}
	return out, nil
}

// checkVaultStep validates a use_vault_secret step at submit: the vault and
// the secret exist. (Whether policy allows the use is decided when the
// step runs, and shows in the task's events.)
func (s *Server) checkVaultStep(sc *scenario.Scenario) *apiError {
	if sc == nil {
		return nil
	}
	for i, st := range sc.Steps {
		if st.Op != scenario.OpVaultSecret {
			continue
		}
		p := "metadata." + scenario.Key + ".steps[" + strconv.Itoa(i) + "]"
		if _, ok := s.st.mg.vaults.get(st.VaultID); !ok {
			e := notFound("vault", st.VaultID)
			e.Param = p + ".vault_id"
			return e
		}
		if _, ok := s.st.mg.secrets[st.VaultID][st.Name]; !ok {
			e := notFound("vault secret", st.Name)
			e.Param = p + ".name"
			return e
		}
	}
	return nil
}

// useVaultSecret is the use_vault_secret step: the agent calls a tool
// authenticated with the vault's secret. Events show "[REDACTED]" where the
// credential went. A vault whose capabilities do not allow "use" refuses:
// tool.denied, and the task fails with policy_violation, before the secret
// is read (EXT-AUTHZ-005).
func (s *Server) useVaultSecret(ctx context.Context, id string, st scenario.Step) bool {
	tool := st.Tool
	if tool == "" {
		tool = "conform.vault_call"
	}
	s.mu.Lock()
	t, ok := s.st.tasks.get(id)
	if !ok || Terminal(t.Status) || ctx.Err() != nil {
		s.mu.Unlock()
		return false
	}
	v, _ := s.st.mg.vaults.get(st.VaultID)
	callID := s.freshID("toolcall")
	ev := func(kind string, p map[string]any) *Event {
		p["tool_call_id"], p["name"] = callID, tool
		return s.newEvent(kind, Pointer{"task", id}, p, t.WorkspaceID, t.SessionID, id, agentActor)
	}
	requested := ev("tool.requested", map[string]any{"input": map[string]any{"vault_id": st.VaultID, "secret_name": st.Name}, "credential": redactedSecret})
	allowed := v != nil && slices.Contains(v.Capabilities, vaultCapUse)
	if !allowed && !s.opts.Faults.Has(FaultVaultPolicyIgnored) {
		s.mu.Unlock()
		denied := ev("tool.denied", map[string]any{"reason": "the vault's capabilities do not allow use", "vault_id": st.VaultID})
		return s.move(ctx, id, StatusFailed, nil, &ending{summary: "vault policy refused the secret",
			failure: &Failure{Code: vaultPolicyCode, Message: "vault " + st.VaultID + " does not allow use of its secrets"}}, requested, denied)
	}
	if s.opts.Faults.Has(FaultVaultSecretInEvent) {
		requested.Payload["credential"] = s.st.mg.secrets[st.VaultID][st.Name]
	}
	cm := &commit{Events: []*Event{requested,
		ev("tool.completed", map[string]any{"output": map[string]any{"ok": true}, "status": "ok"})}}
	seq, err := s.commitLocked(cm)
	s.mu.Unlock()
	return err == nil && s.wait(seq) == nil
}
