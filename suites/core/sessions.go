package core

import (
	"fmt"
	"net/http"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

var _ = Describe("Session close", func() {
	It("closes a session, keeps it CLOSED and refuses new tasks in it", suite.Req("CORE-SESSION-001"), func(ctx SpecContext) {
		sess := sessionID(ctx, "CORE-SESSION-001")
		path := "/v1/sessions/" + client.Seg(sess)
		closeReq := client.Request{Method: http.MethodPost, Path: path + "/close"}
		resp := suite.Do(ctx, closeReq, "CORE-SESSION-001")
		if check.UnofferedStatus(resp.Status) {
			// docs/interpretations.md#session-close: not offered, by
			// evidence (#offered-by-evidence): a 404 about the session just
			// created fails.
			observeError(resp)
			why, err := suite.Unoffered(ctx, suite.Offering{Request: closeReq, Answer: resp, Known: []string{"session " + sess + " (just created)"}}, "CORE-SESSION-001")
			suite.Must("CORE-SESSION-001", err)
			suite.NotApplicable(why)
		}
		// A close that did not take leaves nothing to check.
		suite.Must("CORE-SESSION-001", check.Status(resp, http.StatusOK))
		if m, err := resp.Object(); suite.Check("CORE-SESSION-001", err) && (m["id"] != sess || m["state"] != "CLOSED") {
			suite.Check("CORE-SESSION-001", fmt.Errorf("%s: the answer is session %v in state %v, want the Session %s in state CLOSED", resp, m["id"], m["state"], sess))
		}
		if _, read, ok := tryObject(ctx, "CORE-SESSION-001", path, nil); ok && read["state"] != "CLOSED" {
			suite.Check("CORE-SESSION-001", fmt.Errorf("GET %s after the close: state is %v, want CLOSED", path, read["state"]))
		}
		sub := suite.Do(ctx, client.Request{Method: http.MethodPost, Path: path + "/tasks", Body: echoTask("into a closed session")}, "CORE-SESSION-001")
		if sub.Status/100 == 2 {
			suite.Check("CORE-SESSION-001", fmt.Errorf("%s: a CLOSED session accepted a new Task; want 409 conflict or 400 invalid_state_transition", sub))
		} else {
			suite.Check("CORE-SESSION-001", check.Refused(sub, []int{http.StatusConflict, http.StatusBadRequest}, "conflict", "invalid_state_transition"))
			observeError(sub)
		}
		items, _, readable := listAll(ctx, "CORE-SESSION-001", path+"/tasks", nil)
		if !readable {
			listFailed("CORE-SESSION-001", "CORE-SESSION-001")
		}
		if len(items) > 0 {
			suite.Check("CORE-SESSION-001", fmt.Errorf("GET %s/tasks: the closed session lists %d task(s), want none (it refused the only one sent)", path, len(items)))
		}
	})
})
