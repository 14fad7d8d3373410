package core

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Versioning", func() {
	It("refuses a non-public request without the version header with 426", suite.Req("CORE-VER-001"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", NoVersion: true}, "CORE-VER-001")
		_, err := check.Error(resp, 426, "unsupported_protocol_version")
		suite.Must("CORE-VER-001", err)
	})

	It("refuses an unsupported protocol version with 426 and lists the supported ones", suite.Req("CORE-VER-002", "CORE-VER-003"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Version: "agents-protocol-1999-01-01"}, "CORE-VER-002")
		e, err := check.Error(resp, 426, "unsupported_protocol_version")
		suite.Must("CORE-VER-002", err)
		suite.Should("CORE-VER-003", check.ListsSupportedVersions(resp, e, suite.Env().Config.ProtocolVersion))
	})

	for _, path := range []string{"/v1", "/v1/agent-card"} {
		It(fmt.Sprintf("serves public %s with and without the version header", path), suite.Req("CORE-VER-004"), func(ctx SpecContext) {
			for _, noVersion := range []bool{true, false} {
				resp := suite.Do(ctx, client.Request{Path: path, NoVersion: noVersion, NoAuth: true}, "CORE-VER-004")
				suite.Check("CORE-VER-004", check.Status(resp, 200))
			}
		})
	}
})
