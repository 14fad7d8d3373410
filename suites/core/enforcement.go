package core

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/openapi"
	"github.com/harn-conform/conform/internal/suite"
)

// coreOperations are the operations the Core level requires (narrative
// spec, "Conformance levels / Core": session, task, message, event,
// artifact and outcome reads; task submit, get, cancel; message creation;
// SSE task or session streams). A target must enforce authentication and
// the version header on each of them. Any other non-public operation may be
// absent (404, 405, 501); if the target serves it, it is enforced there
// too.
var coreOperations = map[string]bool{
	"listSessions": true, "createSession": true, "getSession": true,
	"listSessionMessages": true, "appendSessionMessage": true,
	"listSessionTasks": true, "submitSessionTask": true,
	"listSessionEvents": true, "streamSessionEvents": true,
	"listTasks": true, "submitTask": true, "getTask": true, "cancelTask": true,
	"appendTaskMessage": true, "listTaskEvents": true, "streamTaskEvents": true,
	"getMessage": true, "listArtifacts": true, "getArtifact": true, "downloadArtifactContent": true,
	"getEvent": true, "listOutcomes": true, "getOutcome": true,
}

var _ = Describe("Enforcement on every operation", func() {
	It("refuses every non-public operation without Authorization with 401 unauthenticated", suite.Req("CORE-AUTH-001"), func(ctx SpecContext) {
		probeOperations(ctx, "CORE-AUTH-001", "no Authorization", http.StatusUnauthorized, "unauthenticated",
			func(r *client.Request) { r.NoAuth = true })
	})

	It("refuses every non-public operation without the version header with 426", suite.Req("CORE-VER-001"), func(ctx SpecContext) {
		probeOperations(ctx, "CORE-VER-001", "no version header", http.StatusUpgradeRequired, "unsupported_protocol_version",
			func(r *client.Request) { r.NoVersion = true })
	})
})

// probeOperations sends one cheap request to every non-public operation of
// the OpenAPI document, broken by mangle, with made-up ids (so nothing is
// read or changed even on a target that lets it through). A Core operation
// must be refused with status and code; any other must not succeed.
func probeOperations(ctx context.Context, req, what string, status int, code string, mangle func(*client.Request)) {
	GinkgoHelper()
	doc, err := openapi.Default()
	if err != nil {
		Fail("the vendored OpenAPI document does not load: " + err.Error())
	}
	id := suite.Key("conform-probe")
	probed := 0
	for _, op := range doc.Operations() {
		if op.Public || op.LocalServer || op.Extension {
			continue
		}
		path := op.Template
		for _, p := range op.PathParams {
			path = strings.ReplaceAll(path, "{"+p+"}", client.Seg(id))
		}
		r := client.Request{Method: op.Method, Path: path, Probe: what + " (" + op.ID + ")"}
		if op.HasBody {
			r.Body = map[string]any{}
		}
		mangle(&r)
		resp := probeOnce(ctx, op, r)
		probed++
		where := fmt.Sprintf("%s (%s, %s)", resp, op.ID, what)
		switch {
		case coreOperations[op.ID]:
			if err := check.Status(resp, status); err != nil {
				suite.Check(req, fmt.Errorf("%s: status = %d, want %d %s: Core operations enforce this on every route%s", where, resp.Status, status, code, hint(resp)))
			} else if e, err := check.Envelope(resp); err == nil && e.Code != code {
				suite.Check(req, fmt.Errorf("%s: error.code = %q, want %q", where, e.Code, code))
			}
		case resp.Status/100 == 2:
			suite.Check(req, fmt.Errorf("%s: served with status %d; an operation the target offers must be refused %d %s too", where, resp.Status, status, code))
		}
		if resp.Status >= 400 {
			observeError(resp)
		}
	}
	if probed == 0 {
		Fail("the OpenAPI document lists no non-public operation to probe")
	}
}

// probeOnce sends r: a stream operation as a stream (a target that serves
// it anyway must not hold the spec until a timeout), any other as one
// exchange. Only the answer's head and, for a refusal, its body matter.
func probeOnce(ctx context.Context, op openapi.Operation, r client.Request) *client.Response {
	GinkgoHelper()
	if !op.Stream {
		return suite.Do(ctx, r, suite.SpecReqs()...)
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := suite.Client().Stream(sctx, r)
	suite.Transport(err, suite.SpecReqs()...)
	s.Close()
	return s.Response
}
