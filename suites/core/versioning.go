package core

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Versioning", func() {
	// The error answers go through expectError, so a missing envelope or a
	// wrong error type is reported under its own requirement, not these.
	It("refuses a non-public request without the version header with 426", suite.Req("CORE-VER-001", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", NoVersion: true, Probe: "no version header"}, "CORE-VER-001")
		expectError(resp, "CORE-VER-001", 426, "unsupported_protocol_version")
		// A write too: the body names no real Session, so a target that
		// skips the check refuses it for another reason and creates nothing.
		resp = suite.Do(ctx, client.Request{Method: "POST", Path: "/v1/tasks", NoVersion: true, Probe: "no version header",
			Body: map[string]any{"session_id": suite.Key("conform-missing"), "input": map[string]any{"text": "x"}}}, "CORE-VER-001")
		expectError(resp, "CORE-VER-001", 426, "unsupported_protocol_version")
	})

	It("refuses an unsupported protocol version with 426 and lists the supported ones", suite.Req("CORE-VER-002", "CORE-VER-003", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		resp := suite.Do(ctx, client.Request{Path: "/v1/tasks", Version: "agents-protocol-1999-01-01", Probe: "unsupported version"}, "CORE-VER-002")
		e, _ := expectError(resp, "CORE-VER-002", 426, "unsupported_protocol_version")
		if resp.Status == 426 {
			suite.Should("CORE-VER-003", check.ListsSupportedVersions(resp, e, suite.Env().Config.ProtocolVersion))
		}
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
