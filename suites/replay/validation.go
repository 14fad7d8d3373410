package replay

import (
	"context"
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	fixture "github.com/harn-conform/conform/fixtures/replay"
	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	rq "github.com/harn-conform/conform/internal/replay"
	"github.com/harn-conform/conform/internal/suite"
)

// The fixture's invalid replay requests (fixtures/replay/requests/invalid),
// sent against the fixture's own source task so that every key and event
// they name exists there: each must be refused with 400 invalid_request
// (docs/interpretations.md#replay-request-validation). A request with a
// mode outside the enum is RPLY-MODE-001's; one without a checkpoint is
// RPLY-MODE-004's spec (modes.go); an override key of another form and a
// secret override that is not receipt_only are SHOULDs a target may accept
// (RPLY-OVERRIDE-003, -005), so they are not sent here.
var _ = Describe("Replay request validation", func() {
	It("refuses replay requests whose override map is no valid substitute, or whose mode is unknown, with 400 invalid_request", suite.Req("RPLY-OVERRIDE-001", "RPLY-MODE-001"), func(ctx SpecContext) {
		r := theFixture(ctx)
		r.usable()
		sent := 0
		for _, c := range r.manifest.Requests {
			req := "RPLY-OVERRIDE-001"
			switch {
			case c.Valid(), c.Problem == rq.CodeCheckpointMissing, c.Problem == rq.CodeOverrideKeyForm, c.Problem == rq.CodeSecretVisibility:
				continue
			case c.Problem == fixture.SchemaInvalid && c.Pointer == "/mode":
				req = "RPLY-MODE-001"
			}
			body, err := fixture.Read(c.Path)
			if err == nil {
				body, err = r.rewrite(body)
			}
			if err != nil {
				Fail("fixtures/replay: " + c.Path + ": " + err.Error()) // the suite's own fixture
			}
			sent++
			suite.Check(req, refusedReplay(ctx, r.source, body, c))
		}
		if sent == 0 {
			Fail("fixtures/replay: no invalid request to send") // the suite's own fixture
		}
	})
})

// refusedReplay sends one invalid replay request and says what is wrong
// with the answer: anything but 400 invalid_request (an accepted request
// started a replay the contract forbids; a 500 is a server that cannot
// tell a bad request from its own failure).
func refusedReplay(ctx context.Context, source string, body []byte, c fixture.Request) error {
	GinkgoHelper()
	resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/tasks/" + client.Seg(source) + "/replay", RawBody: body,
		Probe: "a replay request the contract refuses (" + c.Problem + "), sent to see it refused"})
	if err := check.Refused(resp, []int{http.StatusBadRequest}, "invalid_request"); err != nil {
		return fmt.Errorf("%s (%s: %s): %v", c.Path, c.Description, c.Problem, err)
	}
	return nil
}
