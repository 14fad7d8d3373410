package replay

import (
	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/negative"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
)

// reqHostile is the requirement of the Replay hostile-input pass: every
// rule the replay operation can break.
const reqHostile = "RPLY-NEG-001"

var _ = Describe("Hostile input (Replay)", func() {
	It("answers generated malformed replay requests with a 4xx error that starts no replay and carries no credential", suite.Req(reqHostile), func(ctx SpecContext) {
		ids := suite.HostileSession(ctx)
		suite.HostileInput(ctx, requirements.Replay, map[negative.Rule]string{
			negative.RuleAnswered: reqHostile, negative.RuleRefused: reqHostile, negative.RuleUnchanged: reqHostile,
			negative.RuleNoEcho: reqHostile, negative.RuleOpen: reqHostile,
		}, negative.Fixtures{IDs: ids, RunID: suite.Env().RunID})
	})
})
