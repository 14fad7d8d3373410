package receipts

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// reqHostile is the requirement of the Receipts hostile-input pass: every
// rule the receipt operations can break.
const reqHostile = "RCPT-NEG-001"

var _ = Describe("Hostile input (Receipts)", func() {
	It("answers generated malformed requests to the receipt operations with a 4xx error that carries no credential", suite.Req(reqHostile), func(ctx SpecContext) {
		ids := suite.HostileSession(ctx)
		resp, err := suite.Client().Do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(ids["task_id"]) + "/receipts"})
		suite.Transport(err, reqHostile)
		if resp.Status == http.StatusOK {
			// A receipt document names itself by receipt_id.
			if p, err := check.ListPage(resp); err == nil && len(p.Items) > 0 {
				ids["receipt_id"], _ = p.Items[0]["receipt_id"].(string)
			}
		}
		suite.HostileInput(ctx, requirements.Receipts, map[negative.Rule]string{
			negative.RuleAnswered: reqHostile, negative.RuleRefused: reqHostile, negative.RuleNoEcho: reqHostile, negative.RuleOpen: reqHostile,
		}, negative.Fixtures{IDs: ids, RunID: suite.Env().RunID})
	})
})
