package extended

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/suite"
)

// Sessions (EXT-SESSION-001, -003, -005, -006): message order, the REST
// surface's close, fork and truncate, transcript walk-back (truncate) and
// a fork that survives its parent's truncation. The suite appends user
// messages only, so each message is one turn whichever way a Harness
// groups turns (docs/interpretations.md#turns). Fork before truncate is
// the client's SHOULD (EXT-SESSION-004), which the suite keeps; what the
// server owes is that the three operations exist (EXT-SESSION-005) and the
// fork stays whole (EXT-SESSION-006; docs/interpretations.md#session-surface).

// remedySurface is what a target that does not offer one of the Session
// operations does to have the specs that need it run.
const remedySurface = "offer POST /v1/sessions/{id}/close, /fork and /truncate (EXT-SESSION-005: the REST section requires the surface to cover them)"

// messagesOf reads every page of a session's messages, two at a time (so
// the order is also checked across pages), under req.
func messagesOf(ctx context.Context, req, sess string) ([]map[string]any, bool) {
	GinkgoHelper()
	return xList(ctx, req, "/v1/sessions/"+client.Seg(sess)+"/messages", url.Values{"limit": {"2"}})
}

// texts are the text parts of messages, one string per message.
func texts(ms []map[string]any) []string {
	var out []string
	for _, m := range ms {
		parts, _ := m["parts"].([]any)
		s := ""
		for _, p := range parts {
			if pm, ok := p.(map[string]any); ok {
				t, _ := pm["text"].(string)
				s += t
			}
		}
		out = append(out, s)
	}
	return out
}

// truncate asks for a walk-back of sess to its first keep turns. offered
// is false when the target does not offer truncation, by evidence
// (docs/interpretations.md#offered-by-evidence): a refusal (404, 405, 501)
// answered as a route that cannot exist is, while the session still
// reads. A refusal the evidence contradicts (a 404 about the session the
// spec has just written to, where a made-up route is answered otherwise;
// or any refusal while the WebSocket truncate_session of the same session
// works) is err, a failure of EXT-SESSION-003.
func truncate(ctx context.Context, req, sess string, keep int, key string) (resp *client.Response, offered bool, err error) {
	GinkgoHelper()
	r := client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/truncate",
		Body: map[string]any{"keep_first": keep, "reason": "conform walk-back probe"}, IdempotencyKey: key}
	resp = suite.Do(ctx, r, req)
	if !check.UnofferedStatus(resp.Status) {
		return resp, true, nil
	}
	// A session that no longer reads is a lost session (Core's to judge),
	// not a missing operation.
	xRead(ctx, "reading the Session (GET /v1/sessions/{id})", "CORE-READ-005", "/v1/sessions/"+client.Seg(sess), nil)
	o := suite.Offering{Request: r, Answer: resp, Known: []string{"session " + sess + " (its messages were just appended)"}}
	if shown := wsTruncateShown(ctx, sess, keep); shown != "" {
		o.Shown = []string{shown}
	}
	why, err := suite.Unoffered(ctx, o, req)
	return resp, why == "", err
}

// judgeTruncate checks a truncate answer: a session.truncate_result of the
// session with the kept and removed turn counts.
func judgeTruncate(resp *client.Response, sess string, kept, removed int) error {
	if err := check.Status(resp, http.StatusOK); err != nil {
		return err
	}
	m, err := resp.Object()
	if err != nil {
		return err
	}
	var errs []string
	if m["object"] != "session.truncate_result" {
		errs = append(errs, fmt.Sprintf("object = %v, want \"session.truncate_result\"", m["object"]))
	}
	if m["session_id"] != sess {
		errs = append(errs, fmt.Sprintf("session_id = %v, want the truncated session %s", m["session_id"], sess))
	}
	for f, want := range map[string]int{"kept_turn_count": kept, "removed_turn_count": removed} {
		n, ok := m[f].(json.Number)
		if got, err := n.Int64(); !ok || err != nil || got != int64(want) {
			errs = append(errs, fmt.Sprintf("%s = %v, want %d", f, m[f], want))
		}
	}
	slices.Sort(errs)
	return xFindings(resp, "truncate result", errs)
}

var _ = Describe("Session transcripts", func() {
	It("keeps a Session's messages in append order, across pages and reads", suite.Req(reqMsgOrder), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		sent := xAppend(ctx, sess, 5, "ordered")
		first, ok := messagesOf(ctx, reqMsgOrder, sess)
		if !ok {
			return
		}
		suite.Check(reqMsgOrder, check.InOrder("GET /v1/sessions/{id}/messages", xIDs(first), sent))
		second, ok := messagesOf(ctx, reqMsgOrder, sess)
		if ok && !slices.Equal(xIDs(first), xIDs(second)) {
			suite.Check(reqMsgOrder, fmt.Errorf("GET /v1/sessions/%s/messages read twice lists %v, then %v: the order changed between reads", sess, xIDs(first), xIDs(second)))
		}
	})

	It("truncates a Session in place to its first N turns when it offers walk-back", suite.Req(reqTruncate), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		sent := xAppend(ctx, sess, 4, "turn")
		resp, offered, err := truncate(ctx, reqTruncate, sess, 2, "")
		suite.Must(reqTruncate, err)
		if !offered {
			// Not offering truncate is EXT-SESSION-005's failure, not this
			// requirement's: what truncate does cannot be seen.
			suite.Unverified(fmt.Sprintf("%s: the target does not offer truncate, so what it does cannot be checked", resp), remedySurface)
		}
		suite.Check(reqTruncate, judgeTruncate(resp, sess, 2, 2))
		after, ok := messagesOf(ctx, reqTruncate, sess)
		// Which messages remain is this requirement's; their order is EXT-SESSION-001's.
		if ok && !slices.Equal(sorted(xIDs(after)), sorted(sent[:2])) {
			suite.Check(reqTruncate, fmt.Errorf("after truncate keep_first 2, GET /v1/sessions/%s/messages lists %v, want the first two messages %v", sess, xIDs(after), sent[:2]))
		}
	})

	It("gives a recoverable side branch: a fork keeps every turn when its parent is truncated", suite.Req(reqForkKeeps), func(ctx SpecContext) {
		sess := xID(xSession(ctx, xWorkspace(ctx), ""))
		xAppend(ctx, sess, 3, "kept")
		before, ok := messagesOf(ctx, reqForkKeeps, sess)
		if !ok {
			return
		}
		fr := client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/fork"}
		resp := suite.Do(ctx, fr, reqForkKeeps)
		if check.UnofferedStatus(resp.Status) {
			// Not offering fork is EXT-SESSION-005's failure; a refusal the
			// evidence contradicts is a broken fork, this requirement's.
			o := suite.Offering{Request: fr, Answer: resp, Known: []string{"session " + sess + " (its messages were just read)"}}
			if why, err := suite.Unoffered(ctx, o, reqForkKeeps); err == nil && why != "" {
				suite.Unverified(fmt.Sprintf("%s: the target does not offer fork (%s), so no fork can be checked", resp, why), remedySurface)
			}
		}
		suite.Check(reqForkKeeps, check.Status(resp, http.StatusCreated))
		fork, err := resp.Object()
		if resp.Status/100 != 2 || err != nil || xID(fork) == "" {
			suite.Must(reqForkKeeps, fmt.Errorf("%s: POST /v1/sessions/{id}/fork made no Session%s", resp, xHint(resp)))
		}
		suite.Check(reqForkKeeps, forkLinked(ctx, sess, fork))
		// Walk the parent back to its first turn.
		tr, offered, err := truncate(ctx, reqForkKeeps, sess, 1, "")
		if err != nil {
			suite.Unverified(fmt.Sprintf("the parent could not be truncated: %v", err), "make POST /v1/sessions/{id}/truncate work (EXT-SESSION-003)")
		}
		if !offered {
			suite.Unverified(fmt.Sprintf("%s: the target does not offer truncate, so there is nothing to recover from", tr), remedySurface)
		}
		if tr.Status != http.StatusOK {
			suite.NothingToCheck(reqForkKeeps, fmt.Sprintf("%s: the parent could not be truncated (EXT-SESSION-003 judges that)", tr), "make POST /v1/sessions/{id}/truncate work (EXT-SESSION-003)")
			return
		}
		kept, ok := messagesOf(ctx, reqForkKeeps, xID(fork))
		if ok && !slices.Equal(sorted(texts(kept)), sorted(texts(before))) {
			suite.Check(reqForkKeeps, fmt.Errorf("after its parent %s was truncated to one turn, fork %s holds messages %q, want every turn it was forked with %q", sess, xID(fork), texts(kept), texts(before)))
		}
	})

	It("offers Session close, fork and truncate on its REST surface", suite.Req(reqSurface), func(ctx SpecContext) {
		ws := xWorkspace(ctx)
		var missing []string
		for _, op := range []struct {
			name string
			body map[string]any
		}{
			{"fork", nil},
			{"truncate", map[string]any{"keep_first": 1, "reason": "conform surface probe"}},
			{"close", nil},
		} {
			// A Session of its own for each operation, with one turn: a
			// closed or truncated Session does not disturb the next probe.
			sess := xID(xSession(ctx, ws, ""))
			xAppend(ctx, sess, 1, op.name)
			req := client.Request{Method: http.MethodPost, Path: "/v1/sessions/" + client.Seg(sess) + "/" + op.name}
			if op.body != nil {
				req.Body = op.body
			}
			resp := suite.Do(ctx, req, reqSurface)
			if !check.UnofferedStatus(resp.Status) {
				continue
			}
			// A 404 for the Session itself would be a lost Session, not a
			// missing operation: CORE-READ-005's finding.
			xRead(ctx, "reading the Session (GET /v1/sessions/{id})", "CORE-READ-005", "/v1/sessions/"+client.Seg(sess), nil)
			// Not offered by evidence (docs/interpretations.md#offered-by-evidence);
			// a refusal the evidence contradicts is an offered operation that
			// fails, which its own requirement judges.
			o := suite.Offering{Request: req, Answer: resp, Known: []string{"session " + sess + " (a message was just appended)"}}
			if why, err := suite.Unoffered(ctx, o, reqSurface); err == nil && why != "" {
				missing = append(missing, fmt.Sprintf("POST /v1/sessions/{id}/%s answered %s%s (%s)", op.name, resp, xHint(resp), why))
			}
		}
		if len(missing) > 0 {
			suite.Check(reqSurface, fmt.Errorf("the REST surface must cover Session close, fork and truncate (Transports / REST), but %s: not offered", strings.Join(missing, "; ")))
		}
	})
})

func sorted(ss []string) []string { out := slices.Clone(ss); slices.Sort(out); return out }

// forkLinked checks that fork names where it came from: parent_session_id
// (or root_session_id) is src, or branch_id names a Branch that leads back
// to src.
func forkLinked(ctx context.Context, src string, fork map[string]any) error {
	GinkgoHelper()
	if fork["parent_session_id"] == src || fork["root_session_id"] == src {
		return nil
	}
	if b, _ := fork["branch_id"].(string); b != "" {
		resp := suite.Do(ctx, client.Request{Path: "/v1/branches/" + client.Seg(b)}, suite.SpecReqs()...)
		if m, err := resp.Object(); resp.Status == http.StatusOK && err == nil && m["session_id"] == src {
			return nil
		}
	}
	return fmt.Errorf("fork %s of session %s names neither parent_session_id %s nor a branch_id whose Branch names session %s (parent_session_id %v, branch_id %v)",
		xID(fork), src, src, src, fork["parent_session_id"], fork["branch_id"])
}
