package receipts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/load"
	"github.com/harn-conform/conform/internal/suite"
)

// The Receipts concurrency check (issue 23, docs/concurrency.md): tasks
// that complete at once, whose receipts the target issues at once, must
// keep one chain (RCPT-CHAIN-003).

const reqChainFork = "RCPT-CHAIN-003"

// roundsChain is the check's default rounds: sized so that the race the
// reference Harness's fault plants shows in at least 99 % of runs
// (docs/performance.md, "Concurrency checks").
const roundsChain = 4

var _ = Describe("Receipts under concurrency", suite.Concurrency, func() {
	It("keeps one chain for the receipts of tasks that complete at once", suite.Req(reqChainFork), func(ctx SpecContext) {
		d := suite.Driver()
		n := d.Limits().N
		d.Warm(ctx, n)
		ws, err := suite.Workspace(ctx)
		if err != nil {
			suite.Unverified(fmt.Sprintf("setup: %v", err), suite.RemedyWorkspace)
		}
		rounds := suite.Rounds(roundsChain)
		t := load.NewTally(rounds)
		issued := 0
		for i := 1; i <= rounds; i++ {
			o, count := chainRound(ctx, d, ws, i)
			issued += count
			t.Add(i, o)
		}
		if issued == 0 && t.Judged > 0 {
			suite.NothingToCheck(reqChainFork, fmt.Sprintf("none of the tasks of %d rounds of %d tasks completed at once had a receipt", t.Run, n),
				"issue a receipt for every finished task (receipt_policy required), so the chain of receipts issued at once can be judged")
			return
		}
		suite.Race(reqChainFork, t)
	})
})

// chainRound submits --concurrency tasks at once on a fresh session, waits
// for all to end, and judges the chain links of their receipts. It returns
// how many receipts it read.
func chainRound(ctx context.Context, d *load.Driver, ws string, i int) (load.Outcome, int) {
	GinkgoHelper()
	sess := created(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{"workspace_id": ws}})
	path := "/v1/sessions/" + client.Seg(sess) + "/tasks"
	shots := make([]load.Shot, d.Limits().N)
	for j := range shots {
		shots[j] = load.Shot{Label: fmt.Sprintf("#%d", j+1), Req: client.Request{Method: http.MethodPost, Path: path, IdempotencyKey: suite.Key("chain"),
			Body: map[string]any{"input": map[string]any{"role": "user",
				"parts": []any{map[string]any{"type": "text", "text": fmt.Sprintf("conform receipt chain, round %d task %d", i, j+1), "visibility": "public"}}}}}}
	}
	r, err := d.Fire(ctx, shots)
	if err != nil {
		suite.Must(reqChainFork, fmt.Errorf("firing a round: %w", err))
	}
	suite.Transport(r.TransportError(), reqChainFork)
	if r.GaveUp {
		return load.Outcome{Round: r, Unjudged: "the target still refused (429 or 503) at the round's deadline"}, 0
	}
	var ids []string
	for _, a := range r.Answers {
		resp := a.Response()
		id := check.AnswerID(resp)
		if resp.Status/100 != 2 || id == "" {
			return load.Outcome{Round: r, Unjudged: fmt.Sprintf("%s %s answered %s: a task of the round was not accepted (the Core submit checks judge that)", a.Method, a.Path, a.Summary())}, 0
		}
		ids = append(ids, id)
	}
	var links []check.Link
	var saw []string
	for _, id := range ids {
		if why := awaitEnd(ctx, id); why != "" {
			return load.Outcome{Round: r, Unjudged: why}, 0
		}
		resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/receipts"}, reqChainFork)
		raws, err := check.ReceiptList(resp)
		if err != nil {
			return load.Outcome{Round: r, Unjudged: "reading a task's receipts: " + err.Error()}, 0
		}
		for _, raw := range raws {
			doc, err := check.DecodeReceipt(raw)
			if err != nil {
				return load.Outcome{Round: r, Unjudged: "reading a receipt: " + err.Error()}, 0
			}
			l := check.Link{Receipt: doc.Str("receipt_id"), Task: id, Hash: doc.Str("chain", "receipt_hash"), Previous: doc.Str("chain", "previous_receipt_hash")}
			links = append(links, l)
			saw = append(saw, fmt.Sprintf("%s → %s", l.Receipt, orNull(l.Previous)))
		}
	}
	after := []load.Read{{What: "GET /v1/tasks/{id}/receipts of the round's tasks (receipt → previous_receipt_hash)", Saw: strings.Join(saw, "; ")}}
	return load.Outcome{Round: r, Err: check.NoFork(links), After: after}, len(links)
}

func orNull(s string) string {
	if s == "" {
		return "null"
	}
	return s
}

// awaitEnd polls a task until it is terminal; it says why when it does not
// end within --task-timeout ("" when it ended).
func awaitEnd(ctx context.Context, id string) string {
	GinkgoHelper()
	deadline := time.Now().Add(suite.Env().Config.Timeouts.Task)
	var pace suite.Pace
	for {
		resp := do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id)}, reqChainFork)
		m, err := resp.Object()
		if s, _ := m["status"].(string); err == nil && check.Terminal(s) {
			return ""
		}
		if time.Now().After(deadline) || !pace.Wait(ctx) {
			return fmt.Sprintf("task %s did not end within --task-timeout %s", id, suite.Env().Config.Timeouts.Task)
		}
		if errors.Is(ctx.Err(), context.Canceled) {
			return "the run ended"
		}
	}
}
