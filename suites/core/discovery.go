package core

import (
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Discovery", func() {
	It("serves the discovery document at GET /v1", suite.Req("CORE-DISC-001"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1", NoAuth: true}, "CORE-DISC-001")
		suite.Must("CORE-DISC-001", check.Status(resp, http.StatusOK))
		m, err := resp.Object()
		suite.Must("CORE-DISC-001", err)
		suite.Check("CORE-DISC-001", check.Discovery(resp, m, suite.Env().Config.ProtocolVersion))
	})

	It("serves a HarnAgentCard at GET /v1/agent-card", suite.Req("CORE-CARD-001", "CORE-CARD-002", "CORE-CARD-003", "CORE-READ-002"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/agent-card", NoAuth: true}, "CORE-CARD-001")
		suite.Must("CORE-CARD-001", check.Status(resp, http.StatusOK))
		card, err := resp.Object()
		suite.Must("CORE-CARD-001", err)
		suite.Check("CORE-CARD-001", check.AgentCard(resp, card, suite.Env().Discovery.SupportedVersions))
		if n := check.UpstreamCardNote(card); n != "" {
			suite.Note(n)
		}
		suite.Check("CORE-READ-002", check.Timestamps(resp, card))
		suite.Should("CORE-CARD-002", check.A2ACard(resp, card))
		switch raw := suite.Env().Discovery.Raw; {
		case raw == nil:
			suite.NothingToCheck("CORE-CARD-003", "the discovery document could not be read, so the card had nothing to agree with", "serve GET /v1 (CORE-DISC-001)")
		case card["capabilities"] == nil:
			suite.NotApplicableTo("CORE-CARD-003", "the agent card lists no capabilities (optional), so it makes no claim to compare with discovery")
		default:
			suite.Should("CORE-CARD-003", check.CardAgrees(resp, card, raw))
		}
	})
})
