package receipts

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// A run is the tasks the live specs judge: made once, in sequence (each
// finished before the next is submitted, so consecutive receipts of one
// issuer are adjacent unless another client's task ends in between), on a
// session of the run's own.
type run struct {
	session string
	tasks   []*finished
	// canary is the secret handed to the secret task ("" when there is none);
	// noCanary says why the canary checks cannot run.
	canary   string
	noCanary string

	receipts map[string][][]byte // task id -> raw receipts, as listed
	keys     *receipt.KeySet
	noKeys   string // why there is no key set
}

// finished is one task of the run, read once it was terminal.
type finished struct {
	name   string
	id     string
	status string
	task   map[string]any
	secret bool // ran the use_secret step
}

// pollEvery paces task polls; reference tasks end within milliseconds.
const pollEvery = 5 * time.Millisecond

// newCanary is a secret no target can know: random, and shaped like no
// credential format, so only an exact match finds it.
func newCanary() string {
	b := make([]byte, 12)
	rand.Read(b)
	return "conformcanary" + hex.EncodeToString(b)
}

// fail ends the spec when the run cannot be set up: the requirements it
// names could not be observed.
func fail(format string, args ...any) {
	GinkgoHelper()
	Fail("setup: " + fmt.Sprintf(format, args...))
}

// do is one exchange; a transport failure ends the spec as an error.
func do(ctx context.Context, req client.Request, reqs ...string) *client.Response {
	GinkgoHelper()
	return suite.Do(ctx, req, reqs...)
}

// shared is the run every live spec judges, made by the first of them.
// (Specs stay independent Its rather than an Ordered container: each
// records its own verdicts and transcript.)
var shared struct {
	r      *run
	failed string // why making the run failed: every spec fails with it
}

// theRun returns the shared run, making it on first use.
func theRun(ctx context.Context) *run {
	GinkgoHelper()
	if shared.failed != "" {
		fail("%s", shared.failed)
	}
	if shared.r == nil {
		defer func() {
			if shared.r == nil && shared.failed == "" {
				shared.failed = "the tasks of the run could not be made (see the first receipts spec)"
			}
		}()
		shared.r = newRun(ctx)
	}
	return shared.r
}

// newRun creates the session and drives the tasks. With the scenario
// contract the run has a task that completes with an artifact, one that
// fails, one canceled while working and one that uses a canary secret;
// without it, two tasks of the target's own agent.
func newRun(ctx context.Context) *run {
	GinkgoHelper()
	r := &run{receipts: map[string][][]byte{}}
	key := suite.Key("conform-rcpt")
	ws := ""
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/workspaces", Body: map[string]any{"name": key, "root": "conform://" + key}})
	if m, err := resp.Object(); err == nil && resp.Status/100 == 2 {
		ws, _ = m["id"].(string)
	}
	if ws == "" {
		list := do(ctx, client.Request{Path: "/v1/workspaces", Query: url.Values{"limit": {"1"}}})
		if p, err := check.ListPage(list); err == nil && len(p.IDs) > 0 {
			ws = p.IDs[0]
		}
	}
	if ws == "" {
		fail("no workspace to own the run's session (%s)", resp)
	}
	r.session = created(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})

	if suite.Env().Discovery.Scenarios() == "" {
		r.noCanary = `the target does not advertise the conform.scenarios contract, so no task can be handed a canary secret`
		r.add(ctx, "echo-1", nil, false)
		r.add(ctx, "echo-2", nil, false)
		return r
	}
	r.add(ctx, "completed", []any{
		map[string]any{"op": "emit", "count": 2, "text": "conform receipt probe"},
		map[string]any{"op": "artifact", "kind": "log", "content": "conform receipt artifact", "name": "receipt-probe.log"},
		map[string]any{"op": "complete", "summary": "receipt probe done"},
	}, false)
	r.add(ctx, "failed", []any{map[string]any{"op": "fail", "code": "conform_receipt_failure", "message": "the scenario asked to fail"}}, false)
	r.add(ctx, "canceled", []any{map[string]any{"op": "work", "ms": 60000}}, false)
	r.canary = newCanary()
	if !r.add(ctx, "secret", []any{map[string]any{"op": "use_secret", "secret": r.canary}, map[string]any{"op": "complete"}}, true) {
		r.canary = ""
	}
	return r
}

// created performs a setup write and returns the new resource's id.
func created(ctx context.Context, req client.Request) string {
	GinkgoHelper()
	resp := do(ctx, req)
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		fail("%s did not create a resource with an id", resp)
	}
	return id
}

// add submits one task and waits for its end (canceling it once WORKING
// when its name says so). It returns false when the target refused a
// secret task's scenario, which only the canary checks need.
func (r *run) add(ctx context.Context, name string, steps []any, secret bool) bool {
	GinkgoHelper()
	body := map[string]any{"input": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "conform receipts probe", "visibility": "public"}}}}
	if steps != nil {
		body["metadata"] = map[string]any{"conform.scenario": map[string]any{"steps": steps}}
	}
	resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(r.session) + "/tasks", Body: body})
	if secret && resp.Status == http.StatusBadRequest {
		r.noCanary = fmt.Sprintf("the target refused the use_secret scenario step (%s), so no canary secret was used", resp)
		return false
	}
	m, err := resp.Object()
	id, _ := m["id"].(string)
	if resp.Status/100 != 2 || err != nil || id == "" {
		fail("%s did not accept the %s task", resp, name)
	}
	if name == "canceled" {
		r.await(ctx, id, func(s string) bool { return s == check.Working || check.Terminal(s) })
		do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(id) + "/cancel", Body: map[string]any{"reason": "conform receipts probe"}})
	}
	t := r.await(ctx, id, check.Terminal)
	status, _ := t["status"].(string)
	r.tasks = append(r.tasks, &finished{name: name, id: id, status: status, task: t, secret: secret})
	return true
}

// await polls the task until want holds or the task timeout passes.
func (r *run) await(ctx context.Context, id string, want func(string) bool) map[string]any {
	GinkgoHelper()
	limit := suite.Env().Config.Timeouts.Task
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	for {
		resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)})
		m, err := resp.Object()
		if resp.Status != http.StatusOK || err != nil {
			fail("%s: cannot read the task", resp)
		}
		if s, _ := m["status"].(string); want(s) {
			return m
		}
		if time.Now().After(deadline) {
			fail("task %s is still %v after %s", id, m["status"], limit)
		}
		select {
		case <-ctx.Done():
			fail("waiting for task %s: %v", id, ctx.Err())
		case <-tick.C:
		}
	}
}

// listed returns the receipts listed for a task, fetched once. A list that
// cannot be read, or an empty one, fails RCPT-RES-002.
func (r *run) listed(ctx context.Context, f *finished) [][]byte {
	GinkgoHelper()
	if rs, ok := r.receipts[f.id]; ok {
		return rs
	}
	resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(f.id) + "/receipts"}, "RCPT-RES-002")
	rs, err := check.ReceiptList(resp)
	suite.Must("RCPT-RES-002", err)
	if len(rs) == 0 {
		suite.Must("RCPT-RES-002", fmt.Errorf("%s: the %s task %s lists no receipt, want at least one", resp, f.status, f.id))
	}
	r.receipts[f.id] = rs
	return rs
}

// all returns every receipt of the run with its task, in task order.
func (r *run) all(ctx context.Context) []listedReceipt {
	GinkgoHelper()
	var out []listedReceipt
	for _, f := range r.tasks {
		for _, raw := range r.listed(ctx, f) {
			d, err := check.DecodeReceipt(raw)
			suite.Must("RCPT-SHAPE-001", err)
			out = append(out, listedReceipt{task: f, raw: raw, doc: d})
		}
	}
	return out
}

type listedReceipt struct {
	task *finished
	raw  []byte
	doc  check.ReceiptDoc
}

// keySet fetches the key directory once; noKeys says why there is none.
func (r *run) keySet(ctx context.Context) *receipt.KeySet {
	GinkgoHelper()
	if r.keys != nil || r.noKeys != "" {
		return r.keys
	}
	resp := do(ctx, client.Request{Path: "/v1/receipts/keys"}, "RCPT-SIGN-002")
	if resp.Status != http.StatusOK {
		r.noKeys = fmt.Sprintf("%s: no key directory", resp)
		return nil
	}
	ks, err := receipt.ParseKeySet(resp.Body)
	if err != nil {
		r.noKeys = fmt.Sprintf("%s: %v", resp, err)
		return nil
	}
	r.keys = ks
	return ks
}

// verify runs the suite's own verification of a receipt against the
// published keys (when there are any).
func (r *run) verify(ctx context.Context, raw []byte) receipt.Result {
	GinkgoHelper()
	return receipt.Verify(raw, receipt.Options{Keys: r.keySet(ctx)})
}
