package core

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// maxProbeBody is the largest body conform sends.
const maxProbeBody = 64 << 20

// oversize builds a syntactically valid JSON submit body of about n bytes
// that lacks its required input, so a target that reads it anyway refuses
// it with 400 and creates nothing.
func oversize(n int) []byte {
	var b bytes.Buffer
	b.Grow(n + 64)
	b.WriteString(`{"metadata":{"conform.padding":"`)
	b.Write(bytes.Repeat([]byte("x"), n))
	b.WriteString(`"}}`)
	return b.Bytes()
}

var _ = Describe("Errors", func() {
	It("answers unknown ids with 404 resource_not_found", suite.Req("CORE-ERR-001", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		missing := suite.Key("conform-missing")
		for _, path := range []string{"/v1/tasks/", "/v1/sessions/", "/v1/messages/", "/v1/artifacts/", "/v1/outcomes/", "/v1/events/"} {
			resp := suite.Do(ctx, client.Request{Path: path + missing}, "CORE-ERR-001")
			expectError(resp, "CORE-ERR-001", http.StatusNotFound, "resource_not_found")
		}
		resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(missing) + "/tasks", Body: echoTask("nowhere")}, "CORE-ERR-001")
		expectError(resp, "CORE-ERR-001", http.StatusNotFound, "resource_not_found")
		// A collection the protocol does not define: absent too. Any error
		// code is accepted here (a router may answer before the resource
		// layer), but it must be a 404 error, not a success.
		resp = suite.Do(ctx, client.Request{Path: "/v1/" + missing, Probe: "a collection the protocol does not define"}, "CORE-ERR-001")
		expectError(resp, "CORE-ERR-001", http.StatusNotFound)
	})

	It("refuses malformed request bodies with 400 invalid_request naming the field", suite.Req("CORE-ERR-004", "CORE-ERR-005", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-ERR-004")
		tasks := "/v1/sessions/" + client.Seg(sess) + "/tasks"
		for _, tc := range []struct {
			name, path string
			raw        string
			field      string // "" when no single field is at fault
		}{
			{"not JSON", tasks, `{"input": {"role": "user",`, ""},
			{"a JSON array", tasks, `[]`, ""},
			{"input of the wrong type", tasks, `{"input": 42}`, "input"},
			{"no input", tasks, `{"metadata": {}}`, "input"},
			{"no session_id", "/v1/tasks", `{"input": {"role": "user", "parts": [{"type": "text", "text": "x", "visibility": "public"}]}}`, "session_id"},
			{"a message role of the wrong type", "/v1/sessions/" + client.Seg(sess) + "/messages", `{"message": {"role": 7, "parts": []}}`, "role"},
		} {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: tc.path, RawBody: []byte(tc.raw), Probe: "malformed body: " + tc.name}, "CORE-ERR-004")
			e, ok := expectError(resp, "CORE-ERR-004", http.StatusBadRequest, "invalid_request")
			if ok && tc.field != "" {
				if err := check.ParamNames(resp, e, tc.field); err != nil {
					suite.Should("CORE-ERR-005", fmt.Errorf("%s: %w", tc.name, err))
				}
			}
		}
	})

	It("refuses an oversize body with 413 payload_too_large", suite.Req("CORE-ERR-006", "CORE-ERR-002", "CORE-ERR-003", "CORE-AUTH-004"), func(ctx SpecContext) {
		// docs/interpretations.md#payload-limit: no limit is stated, so the
		// target's own (advertised) limit is probed, else 2 and 16 MiB.
		sizes := []int{2 << 20, 16 << 20}
		switch lim := suite.Env().Discovery.Capabilities["conform.max_request_bytes"].(type) {
		case json.Number:
			n, err := lim.Int64()
			switch {
			case err != nil || n < 0:
				suite.Check("CORE-ERR-006", fmt.Errorf("GET /v1: capabilities[\"conform.max_request_bytes\"] = %s, want a whole number of bytes (0 for no limit)", lim))
				return
			case n == 0:
				suite.NotApplicable("the target advertises no configured request size limit (capabilities[\"conform.max_request_bytes\"] = 0)")
			case n+1 > maxProbeBody:
				suite.Unverified(fmt.Sprintf("the advertised limit of %d bytes is above the %d bytes conform sends", n, maxProbeBody), "advertise a lower conform.max_request_bytes")
			}
			sizes = []int{int(n) + 1}
		case bool, nil:
			if lim != nil && lim != false {
				break
			}
			if _, ok := suite.Env().Discovery.Capabilities["conform.max_request_bytes"]; ok {
				suite.NotApplicable("the target advertises no configured request size limit (capabilities[\"conform.max_request_bytes\"] is null or false)")
			}
		}
		sess := sessionID(ctx, "CORE-ERR-006")
		var seen []string
		for _, n := range sizes {
			resp := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/tasks", RawBody: oversize(n), Probe: "oversize body without its input"}, "CORE-ERR-006")
			e, envErr := check.Envelope(resp)
			if resp.Status == http.StatusRequestEntityTooLarge || envErr == nil && e.Code == "payload_too_large" {
				expectError(resp, "CORE-ERR-006", http.StatusRequestEntityTooLarge, "payload_too_large")
				return
			}
			if resp.Status >= 400 {
				observeError(resp)
			}
			seen = append(seen, fmt.Sprintf("%d bytes → %d", len(oversize(n)), resp.Status))
		}
		if len(sizes) == 1 {
			suite.Check("CORE-ERR-006", fmt.Errorf("POST /v1/sessions/%s/tasks over the advertised limit: %s, want 413 payload_too_large", sess, strings.Join(seen, ", ")))
			return
		}
		suite.Unverified(fmt.Sprintf("POST /v1/sessions/%s/tasks: %s; no size refusal up to 16 MiB, so any limit lies above what conform sends", sess, strings.Join(seen, ", ")),
			`advertise your request size limit in bytes (0 for none) as capabilities["conform.max_request_bytes"] in GET /v1`)
	})
})
