package suite

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/requirements"
)

// RemedyNegativeBudget is the remedy of a hostile-input pass that had no
// budget.
const RemedyNegativeBudget = "run with --negative-budget above 0 (the default sends a few hundred malformed requests)"

// maxFindingsPerRule bounds the findings one requirement lists.
const maxFindingsPerRule = 6

// HostileInput runs the hostile-input pass (internal/negative) over the
// operations of level the fixtures address, and records what it found
// under reqs (the requirement of each rule at this level; a rule without
// one is not recorded). Its share of --negative-budget is the level's
// (negative.Shares over the levels the run checks), its plan the run's
// seed's.
func HostileInput(ctx context.Context, level requirements.Level, reqs map[negative.Rule]string, fx negative.Fixtures) {
	GinkgoHelper()
	doc, err := openapi.Default()
	if err != nil {
		Fail("the vendored OpenAPI document does not load: " + err.Error())
	}
	env := Env()
	var levels []requirements.Level
	for _, s := range env.Levels {
		if s.Run && !s.Level.IsProfile() {
			levels = append(levels, s.Level)
		}
	}
	budget := negative.Shares(doc, env.Config.NegativeBudget, levels)[level]
	if budget <= 0 {
		Unverified(fmt.Sprintf("the hostile-input pass of %s has no budget (--negative-budget %d)", level, env.Config.NegativeBudget), RemedyNegativeBudget)
	}
	sum := sha256.Sum256([]byte("conform-canary:" + env.RunID))
	pass := negative.Pass{Doc: doc, T: transport{}, Seed: GinkgoRandomSeed(), Budget: budget,
		Canary: "sk_conform_canary_" + hex.EncodeToString(sum[:12]), Secret: env.Redactor.Contains}
	res := pass.Run(ctx, negative.Targets(doc, level, fx))
	if ctx.Err() != nil {
		Transport(&client.TransportError{Method: "GET", URL: "(hostile-input pass)", Err: ctx.Err()}, SpecReqs()...)
	}
	byRule := map[negative.Rule][]negative.Finding{}
	for _, f := range res.Findings {
		byRule[f.Rule] = append(byRule[f.Rule], f)
	}
	listed := map[string]int{}
	judged := map[string]bool{} // some rule of the id looked at something
	var ids []string
	for _, rule := range negative.Rules {
		id := reqs[rule]
		if id == "" {
			continue
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
		if res.Judged[rule] > 0 || len(byRule[rule]) > 0 {
			judged[id] = true
		}
		for _, f := range byRule[rule] {
			if listed[id] == maxFindingsPerRule {
				Note(fmt.Sprintf("%s: more findings of the hostile-input pass not listed", id))
			}
			listed[id]++
			if listed[id] > maxFindingsPerRule {
				continue
			}
			err := errors.New(f.Message())
			if rule == negative.RuleParam {
				Should(id, err)
			} else {
				Check(id, err)
			}
		}
	}
	for _, id := range ids {
		if judged[id] || id == reqs[negative.RuleParam] {
			continue // error.param is judged by the malformed-body spec too
		}
		var whys []string
		for _, rule := range negative.Rules {
			if reqs[rule] == id && res.Unjudged[rule] != "" {
				whys = append(whys, res.Unjudged[rule])
			}
		}
		if res.Stopped != "" {
			whys = []string{res.Stopped}
		}
		if len(whys) == 0 {
			whys = []string{"nothing to look at"}
		}
		NothingToCheck(id, fmt.Sprintf("hostile-input pass (%s): %s", level, strings.Join(whys, "; ")), "")
	}
	var classes []string
	for c, n := range res.ByClass {
		classes = append(classes, fmt.Sprintf("%s %d", c, n))
	}
	sort.Strings(classes)
	Note(fmt.Sprintf("hostile-input pass (%s, seed %d): %d malformed requests (budget %d) to %d operations, %d more to read state and compare; by class: %s",
		level, GinkgoRandomSeed(), res.Sent, budget, len(res.Ops), res.Bookkeeping, strings.Join(classes, ", ")))
	for _, n := range res.Notes {
		Note("hostile-input pass (" + string(level) + "): " + n)
	}
	if res.Stopped != "" {
		Note("hostile-input pass (" + string(level) + "): " + res.Stopped)
	}
}

// transport is the pass's way to the target: the spec's client, so every
// exchange is in the spec's transcript and seen by the OpenAPI oracle
// (which judges the answers; the requests are probes).
type transport struct{}

func (transport) Do(ctx context.Context, r client.Request) (*client.Response, error) {
	return Client().Do(ctx, r)
}

func (transport) Stream(ctx context.Context, r client.Request) (*client.Response, error) {
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := Client().Stream(sctx, r)
	if err != nil {
		return nil, err
	}
	s.Close()
	return s.Response, nil
}

func (transport) Alive(ctx context.Context) bool {
	resp, err := Client().Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1", NoAuth: true})
	return err == nil && resp.Status < 500
}

func (transport) Curl(r client.Request) string { return Client().Curl(r) }

// HostileSession makes what a level's hostile-input pass addresses when it
// has no fixtures of its own: a workspace (Workspace), a session in it and a
// plain task of that session, waited for until it ends (within the task
// timeout; one that does not end is left running). It returns their ids by
// path parameter name; a step the target refuses ends the spec unverified.
func HostileSession(ctx context.Context) map[string]string {
	GinkgoHelper()
	ws, err := Workspace(ctx, SpecReqs()...)
	if err != nil {
		Unverified(err.Error(), RemedyWorkspace)
	}
	ids := map[string]string{"workspace_id": ws}
	create := func(what, path string, body map[string]any) string {
		resp, err := Client().Do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: body})
		Transport(err, SpecReqs()...)
		m, err := resp.Object()
		id, _ := m["id"].(string)
		if resp.Status/100 != 2 || err != nil || id == "" {
			Unverified(fmt.Sprintf("%s: could not create %s for the hostile-input pass", resp, what), "let the Core set-up steps (a session, a plain task) succeed: see the Core level's failures")
		}
		return id
	}
	ids["session_id"] = create("a session", "/v1/sessions", map[string]any{"workspace_id": ws, "metadata": map[string]any{"conform.run": Env().RunID}})
	ids["task_id"] = create("a task", "/v1/sessions/"+client.Seg(ids["session_id"])+"/tasks", map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "conform hostile-input fixture", "visibility": "public"}}}})
	deadline := time.Now().Add(Env().Config.Timeouts.Task)
	var pace Pace
	for time.Now().Before(deadline) {
		resp, err := Client().Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(ids["task_id"])})
		Transport(err, SpecReqs()...)
		m, _ := resp.Object()
		if st, _ := m["status"].(string); st == "COMPLETED" || st == "FAILED" || st == "CANCELED" || resp.Status != http.StatusOK {
			break
		}
		if !pace.Wait(ctx) {
			break
		}
	}
	return ids
}
