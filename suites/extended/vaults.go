package extended

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Vaults (EXT-VAULT-001..003, EXT-AUTHZ-005). Secret values are what a
// vault must never show: the suite stores a canary through the
// conform.vault_secrets hook (docs/scenarios.md#resource-hooks) and looks
// for it in every read and event; without the hook it has no secret to
// look for, and the secrecy MUSTs are unverified (never passed).

const (
	reqVault       = "EXT-VAULT-001" // list, create 201, get, fields
	reqVaultReads  = "EXT-VAULT-002" // default reads carry no secret values
	reqVaultEvents = "EXT-VAULT-003" // events redact secret material
	reqVaultPolicy = "EXT-AUTHZ-005" // vault access policy before a secret is used
)

// secretName is the name the suite stores its canary under.
const secretName = "conform_token"

var _ = Describe("Vaults", func() {
	It("creates a Vault (201), reads and lists it, and never shows its secret values", suite.Req(reqVault, reqVaultReads), func(ctx SpecContext) {
		ws, err := suite.Workspace(ctx, reqVault)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		_, withSecrets := hooked(capVaultSecrets)
		canary := ""
		if withSecrets {
			canary = newCanary()
		}
		id, created := createVault(ctx, ws, []string{"use"}, canary, reqVault)
		suite.Check(reqVault, vaultFields(created, ws))
		get := suite.Do(ctx, client.Request{Path: "/v1/vaults/" + client.Seg(id)}, reqVault)
		if suite.CheckBlocks(reqVault, check.Status(get, http.StatusOK), reqVaultReads) {
			m, err := object(get)
			if suite.Check(reqVault, err) {
				suite.Check(reqVault, vaultFields(m, ws))
			}
			suite.Check(reqVaultReads, noSecretRead(get, canary))
		}
		// The list, filtered by the vault's workspace and unfiltered: every
		// page of both is a default read.
		items, pages, err := vaultPages(ctx, url.Values{"workspace_id": {ws}}, reqVault)
		if suite.CheckBlocks(reqVault, err, reqVaultReads) {
			if !slices.Contains(ids(items), id) {
				suite.Check(reqVault, fmt.Errorf("GET /v1/vaults?workspace_id=%s does not list vault %s, created in that workspace (listed: %v)", ws, id, ids(items)))
			}
			for _, p := range pages {
				suite.Check(reqVaultReads, noSecretRead(p, canary))
			}
		}
		if _, pages, err := vaultPages(ctx, nil, reqVaultReads); err != nil {
			suite.Note(fmt.Sprintf("%s: the unfiltered vault list (GET /v1/vaults) was not read: %v", reqVaultReads, err))
		} else {
			for _, p := range pages {
				suite.Check(reqVaultReads, noSecretRead(p, canary))
			}
		}
		if withSecrets {
			// Paired: a vault made with no secret value, through no hook, is
			// created, read and listed the same way: EXT-VAULT-001 judged on
			// the target's ordinary path (docs/interpretations.md#hook-attested).
			plain, created := createVault(ctx, ws, []string{"use"}, "", reqVault)
			suite.Judging("vault "+plain+", made with no secret value", true)
			suite.Check(reqVault, vaultFields(created, ws))
			get := suite.Do(ctx, client.Request{Path: "/v1/vaults/" + client.Seg(plain)}, reqVault)
			if suite.Check(reqVault, check.Status(get, http.StatusOK)) {
				m, err := object(get)
				if suite.Check(reqVault, err) {
					suite.Check(reqVault, vaultFields(m, ws))
				}
			}
			items, _, err := listAll(ctx, "/v1/vaults", url.Values{"workspace_id": {ws}}, reqVault)
			if suite.Check(reqVault, err) && !slices.Contains(ids(items), plain) {
				suite.Check(reqVault, fmt.Errorf("GET /v1/vaults?workspace_id=%s does not list vault %s, created in that workspace (listed: %v)", ws, plain, ids(items)))
			}
			suite.EndJudging()
		}
		if !withSecrets {
			// Credential-named members were looked for above; a vault the
			// suite could give no secret cannot show that secrets stay hidden.
			suite.NothingToCheck(reqVaultReads, fmt.Sprintf("discovery does not advertise capabilities[%q], so the suite stored no secret to look for in the vault's reads", capVaultSecrets),
				hookRemedy(capVaultSecrets))
		}
	})

	It("redacts a vault secret a task uses from every event, and lends a secret only as the vault's policy allows", suite.Req(reqVaultEvents, reqVaultPolicy), func(ctx SpecContext) {
		needHooks(capScenarios, capVaultSecrets)
		ws, err := suite.Workspace(ctx, reqVaultEvents)
		if err != nil {
			suite.Unverified(err.Error(), suite.RemedyWorkspace)
		}
		sess := newSession(ctx, ws, reqVaultEvents)
		allowed, refused := newCanary(), newCanary()
		useVault := setupVault(ctx, ws, []string{"use"}, allowed)
		listVault := setupVault(ctx, ws, []string{"list"}, refused)

		// The session's stream, open before the tasks are submitted, sees
		// every event they emit as it is delivered.
		sctx, cancel := context.WithCancel(ctx)
		defer cancel()
		st, err := suite.Client().Stream(sctx, client.Request{Path: "/v1/sessions/" + client.Seg(sess) + "/events/stream"})
		suite.Transport(err, reqVaultEvents)
		defer st.Close()

		useTask := vaultTask(ctx, sess, useVault)
		refusedTask := vaultTask(ctx, sess, listVault)
		var ended []map[string]any
		for _, id := range []string{useTask, refusedTask} {
			t := waitTerminal(ctx, id, reqVaultEvents)
			if t == nil {
				suite.Unverified(fmt.Sprintf("task %s did not end within --task-timeout %s", id, suite.Env().Config.Timeouts.Task), suite.RemedyScenarios)
			}
			ended = append(ended, t)
		}

		// EXT-VAULT-003: neither secret in any event, read or streamed.
		evs, resp, err := listAll(ctx, "/v1/sessions/"+client.Seg(sess)+"/events", nil, reqVaultEvents)
		if suite.Check(reqVaultEvents, err) {
			for _, canary := range []string{allowed, refused} {
				if where := secretIn(resp.Body, canary); len(where) > 0 {
					suite.Check(reqVaultEvents, fmt.Errorf("%s: the session's events hold secret material: %s", resp, strings.Join(where, ", ")))
				}
			}
			for _, e := range evs {
				for _, canary := range []string{allowed, refused} {
					if where := secretIn([]byte(jsonText(e)), canary); len(where) > 0 {
						suite.Check(reqVaultEvents, fmt.Errorf("event %v (%v) holds secret material: %s", e["id"], e["event"], strings.Join(where, ", ")))
					}
				}
			}
		}
		suite.Check(reqVaultEvents, streamClean(ctx, st, []string{allowed, refused}, len(evs)))
		useKinds := taskEventKinds(ctx, useTask, reqVaultEvents)
		if !slices.Contains(useKinds, "tool.requested") && !slices.Contains(useKinds, "tool.completed") {
			suite.NothingToCheck(reqVaultEvents, fmt.Sprintf("task %s, told to use a vault secret, emitted no tool event (%v): no event had a secret to redact", useTask, useKinds),
				"have the use_vault_secret step make a tool call (docs/scenarios.md#resource-hooks)")
		}

		// EXT-AUTHZ-005: the vault that allows use lends its secret; the one
		// that does not refuses before the secret is used.
		if !slices.Contains(useKinds, "tool.completed") {
			suite.Check(reqVaultPolicy, fmt.Errorf("task %s used the secret of vault %s, whose capabilities allow \"use\": events %v, want the tool call completed (tool.completed); a vault that lends nothing shows no policy", useTask, useVault, useKinds))
		}
		refusedKinds := taskEventKinds(ctx, refusedTask, reqVaultPolicy)
		status, _ := ended[1]["status"].(string)
		switch {
		case slices.Contains(refusedKinds, "tool.completed"):
			suite.Check(reqVaultPolicy, fmt.Errorf("task %s used the secret of vault %s, whose capabilities [\"list\"] do not allow use: events %v; the vault's access policy was not applied", refusedTask, listVault, refusedKinds))
		case status != check.Failed && !slices.Contains(refusedKinds, "tool.denied"):
			suite.Check(reqVaultPolicy, fmt.Errorf("task %s, refused the secret of vault %s, ended %s with events %v: want tool.denied or a FAILED task, so the refusal is visible", refusedTask, listVault, status, refusedKinds))
		}
	})
})

// newCanary is a run-unique secret; the run redacts it from its own output.
func newCanary() string {
	c := "conform-vault-canary-" + strings.ReplaceAll(suite.Key("s"), "-", "")
	suite.Env().Redactor.Add(c)
	return c
}

// createVault creates a vault (with canary stored as secretName when it is
// set); a failure ends the spec as reqVault's.
func createVault(ctx context.Context, ws string, caps []string, canary, req string) (string, map[string]any) {
	GinkgoHelper()
	body := map[string]any{"provider": "conform-test", "capabilities": caps, "workspace_id": ws}
	if canary != "" {
		body["secrets"] = map[string]any{secretName: canary}
	}
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/vaults", IdempotencyKey: suite.Key("vault"), Body: body}, req)
	suite.Must(reqVault, offered(resp, "the Vault resource (POST /v1/vaults)", http.StatusCreated))
	m, err := object(resp)
	suite.Must(reqVault, err)
	id, _ := m["id"].(string)
	if id == "" {
		suite.Must(reqVault, fmt.Errorf("%s: the created vault has no id", resp))
	}
	return id, m
}

// setupVault creates a vault for a spec that does not judge creation
// (EXT-VAULT-001's spec does): a failure leaves the spec unverified.
func setupVault(ctx context.Context, ws string, caps []string, canary string) string {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/vaults", IdempotencyKey: suite.Key("vault"),
		Body: map[string]any{"provider": "conform-test", "capabilities": caps, "workspace_id": ws, "secrets": map[string]any{secretName: canary}}}, suite.SpecReqs()...)
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status != http.StatusCreated || id == "" {
		suite.Unverified(fmt.Sprintf("setting up a vault with a secret: %s, want 201 with an id", resp), "make vault create work (EXT-VAULT-001)")
	}
	return id
}

// vaultFields checks a Vault's members.
func vaultFields(m map[string]any, ws string) error {
	var errs []string
	if m["object"] != "vault" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"vault\"", jsonText(m["object"])))
	}
	if m["workspace_id"] != ws {
		errs = append(errs, fmt.Sprintf("workspace_id = %s, want %q, the workspace it was created in", jsonText(m["workspace_id"]), ws))
	}
	if p, _ := m["provider"].(string); p == "" {
		errs = append(errs, fmt.Sprintf("provider = %s, want the vault backend", jsonText(m["provider"])))
	}
	if _, ok := m["capabilities"].([]any); !ok {
		errs = append(errs, fmt.Sprintf("capabilities = %s, want the allowed secret operations", jsonText(m["capabilities"])))
	}
	if len(errs) > 0 {
		return fmt.Errorf("vault %v: %s", m["id"], strings.Join(errs, "; "))
	}
	return nil
}

// noSecretRead checks a default read of vaults for secret material.
// vaultPages reads every page of GET /v1/vaults with the query q (at most
// 20 pages): the items and each page's answer.
func vaultPages(ctx context.Context, q url.Values, req string) ([]map[string]any, []*client.Response, error) {
	GinkgoHelper()
	query := url.Values{"limit": {"200"}}
	for k, v := range q {
		query[k] = v
	}
	var items []map[string]any
	var pages []*client.Response
	for range 20 {
		resp := suite.Do(ctx, client.Request{Path: "/v1/vaults", Query: query}, req)
		if err := check.Status(resp, http.StatusOK); err != nil {
			return items, pages, err
		}
		pages = append(pages, resp)
		p, err := check.ListPage(resp)
		if err != nil {
			return items, pages, err
		}
		items = append(items, p.Items...)
		if !p.HasMore {
			break
		}
		query.Set("cursor", p.NextCursor)
	}
	return items, pages, nil
}

func noSecretRead(resp *client.Response, canary string) error {
	if where := secretIn(resp.Body, canary); len(where) > 0 {
		return fmt.Errorf("%s: a default read of vaults returns secret material: %s", resp, strings.Join(where, ", "))
	}
	return nil
}

// vaultTask submits a task whose scenario uses the vault's secret.
func vaultTask(ctx context.Context, sess, vault string) string {
	GinkgoHelper()
	resp := submitSteps(ctx, sess, []map[string]any{{"op": "use_vault_secret", "vault_id": vault, "name": secretName}}, reqVaultEvents)
	m, _ := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status != http.StatusAccepted || id == "" {
		suite.Unverified(fmt.Sprintf("submitting a task with a use_vault_secret step: %s, want 202", resp),
			"implement the use_vault_secret scenario step of the "+capVaultSecrets+" hook (docs/scenarios.md#resource-hooks)")
	}
	return id
}

// taskEventKinds lists a task's event kinds.
func taskEventKinds(ctx context.Context, id string, req string) []string {
	GinkgoHelper()
	evs, _, err := listAll(ctx, "/v1/tasks/"+client.Seg(id)+"/events", nil, req)
	suite.Check(req, err)
	return eventKinds(evs)
}

// streamClean reads the session's stream until it has delivered want
// events (as many as the session's event list held) or --stream-timeout
// passes, and looks for secret material in every frame.
func streamClean(ctx context.Context, st *client.Stream, canaries []string, want int) error {
	if st.Response.Status != http.StatusOK {
		return nil // the stream itself is Core's (CORE-SSE-001)
	}
	wctx, done := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Stream)
	defer done()
	for n := 0; n < want; n++ {
		f, err := st.NextEvent(wctx)
		if err != nil {
			return nil // fewer frames than events: delivery is Core's to judge
		}
		for _, c := range canaries {
			if where := secretIn([]byte(f.Data), c); len(where) > 0 {
				return fmt.Errorf("%s: SSE frame %q (%s) holds secret material: %s", st.Response, f.ID, f.Event, strings.Join(where, ", "))
			}
		}
	}
	return nil
}
