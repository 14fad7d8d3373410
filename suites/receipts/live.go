package receipts

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// VerifySubmittedCapability is the discovery capability by which a target
// says its verify API also checks a receipt copy sent in the body
// ({"receipt": {…}}), a conform extension (docs/receipts.md).
const VerifySubmittedCapability = "conform.receipt_verify_submitted"

var _ = Describe("Receipts of finished tasks", func() {
	var r *run
	BeforeEach(func(ctx SpecContext) { r = theRun(ctx) })

	It("lists the receipts of every finished task", suite.Req("RCPT-RES-002"), func(ctx SpecContext) {
		for _, f := range r.tasks {
			r.listed(ctx, f)
		}
	})

	It("serves each receipt by id as the receipt document itself, under its own id, unchanged", suite.Req("RCPT-RES-001", "RCPT-SHAPE-006", "RCPT-HASH-004"), func(ctx SpecContext) {
		byID := map[string][]byte{}
		for _, lr := range r.all(ctx) {
			id := lr.doc.Str("receipt_id")
			if id == "" {
				suite.Check("RCPT-SHAPE-006", fmt.Errorf("a receipt of task %s has no receipt_id", lr.task.id))
				continue
			}
			if prev, dup := byID[id]; dup && !sameCanonical(prev, lr.raw) {
				suite.Check("RCPT-SHAPE-006", fmt.Errorf("two different receipts share the id %q", id))
			}
			byID[id] = lr.raw
			first := do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)}, "RCPT-RES-001")
			suite.Check("RCPT-RES-001", check.SameReceipt(first, lr.raw))
			suite.Check("RCPT-SHAPE-006", check.ServedID(first, id))
			again := do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)}, "RCPT-RES-001")
			if a, b := hashOf(first.Body), hashOf(again.Body); a != b {
				suite.Should("RCPT-HASH-004", fmt.Errorf("GET /v1/receipts/%s twice: receipt_hash %q, then %q: an issued receipt should not change", id, a, b))
			}
		}
		// The id a Task names its receipt by serves a receipt with that id.
		for _, f := range r.tasks {
			task := readJSON(ctx, "RCPT-SHAPE-006", "/v1/tasks/"+client.Seg(f.id), nil)
			if rid, _ := task["receipt_id"].(string); rid != "" {
				suite.Check("RCPT-SHAPE-006", check.ServedID(do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(rid)}, "RCPT-SHAPE-006"), rid))
			}
		}
	})

	It("issues receipts that are I-JSON and valid against the receipt schema", suite.Req("RCPT-SHAPE-001", "RCPT-SHAPE-002", "RCPT-HASH-003"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			res := r.verify(ctx, lr.raw)
			where := fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id)
			suite.Check("RCPT-HASH-003", check.Findings(where, res, receipt.ClassJSONInvalid))
			suite.Check("RCPT-SHAPE-001", check.Findings(where, res, receipt.ClassSchemaInvalid))
			suite.Check("RCPT-SHAPE-002", check.FormatMarker(lr.doc))
		}
	})

	It("describes each task in its receipt: subject, identifiers and lifecycle", suite.Req("RCPT-SHAPE-003", "RCPT-SHAPE-004", "RCPT-SHAPE-005", "RCPT-SHAPE-007", "RCPT-SHAPE-008"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			suite.Check("RCPT-SHAPE-003", check.Subject(lr.doc, lr.task.task))
			suite.Check("RCPT-SHAPE-004", check.Identifiers(lr.doc, lr.task.task))
			suite.Check("RCPT-SHAPE-005", check.Lifecycle(lr.doc, lr.task.status))
			suite.Should("RCPT-SHAPE-007", check.Determinism(lr.doc))
			suite.Should("RCPT-SHAPE-008", check.FailureVisible(lr.doc, lr.task.status))
		}
	})

	It("stores a receipt hash that recomputes byte for byte", suite.Req("RCPT-HASH-001", "RCPT-HASH-002"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			res := r.verify(ctx, lr.raw)
			where := fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id)
			suite.Check("RCPT-HASH-002", check.Findings(where, res, receipt.ClassHashMissing, receipt.ClassHashPattern))
			suite.Check("RCPT-HASH-001", check.Findings(where, res, receipt.ClassHashMismatch))
		}
	})

	It("links each receipt to an earlier receipt of the same issuer", suite.Req("RCPT-CHAIN-001"), func(ctx SpecContext) {
		all := r.all(ctx)
		// A link may name any other receipt of the run: a target may list a
		// task's receipts in any order.
		known := map[string]bool{}
		for _, lr := range all {
			known[lr.doc.Str("chain", "receipt_hash")] = true
		}
		var searched map[string]bool
		for i := 1; i < len(all); i++ {
			own := all[i].doc.Str("chain", "receipt_hash")
			delete(known, own)
			link, err := check.ChainLink(all[i-1].doc, all[i].doc, known)
			known[own] = true
			suite.Check("RCPT-CHAIN-001", err)
			if link == "" {
				continue
			}
			// Another client's task may have ended between two of ours: look
			// for the link among the target's other receipts before blaming it.
			if searched == nil {
				searched = otherReceiptHashes(ctx, r)
			}
			if !searched[link] {
				suite.Check("RCPT-CHAIN-001", fmt.Errorf("%s links to previous_receipt_hash %s, which is neither the hash of %s (issued just before it) nor of any of the %d other receipts the suite could read",
					all[i].doc.Label(), link, all[i-1].doc.Label(), len(searched)))
			}
		}
	})

	It("signs receipts with keys it publishes in the key directory", suite.Req("RCPT-SIGN-001", "RCPT-SIGN-002"), func(ctx SpecContext) {
		ks := r.keySet(ctx)
		signed := 0
		for _, lr := range r.all(ctx) {
			if sigs, _ := lr.doc.Get("signatures").([]any); len(sigs) > 0 {
				signed++
			}
		}
		if signed == 0 {
			Skip("no receipt of the run carries a signature")
		}
		if ks == nil {
			suite.Should("RCPT-SIGN-002", fmt.Errorf("%d receipts carry signatures but the key directory cannot be read (%s), so no client can check them", signed, r.noKeys))
			Skip("no published keys to verify signatures with: " + r.noKeys)
		}
		for _, lr := range r.all(ctx) {
			res := r.verify(ctx, lr.raw)
			suite.Check("RCPT-SIGN-001", check.Findings(fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id), res, receipt.ClassSignatureInvalid, receipt.ClassKeyUnknown))
		}
	})

	It("references its receipts from the Task, its Outcome, its artifacts and its events", suite.Req("RCPT-REF-001", "RCPT-REF-002", "RCPT-REF-003", "RCPT-REF-004"), func(ctx SpecContext) {
		res := newResolver()
		for _, f := range r.tasks {
			task := readJSON(ctx, "RCPT-REF-001", "/v1/tasks/"+client.Seg(f.id), nil)
			rid, _ := task["receipt_id"].(string)
			if rid == "" {
				suite.Check("RCPT-REF-001", fmt.Errorf("GET /v1/tasks/%s: the %s task's receipt_id is %v, want the id of its receipt", f.id, f.status, task["receipt_id"]))
			} else if d, err := res.resolve(ctx, "RCPT-REF-001", rid); err != nil {
				suite.Check("RCPT-REF-001", fmt.Errorf("task %s receipt_id: %w", f.id, err))
			} else {
				suite.Check("RCPT-REF-001", check.ReceiptOf("task "+f.id+" receipt_id", d, f.id, ""))
			}

			if oid, _ := task["outcome_id"].(string); oid != "" {
				o := readJSON(ctx, "RCPT-REF-002", "/v1/outcomes/"+client.Seg(oid), nil)
				if orid, _ := o["receipt_id"].(string); orid != "" {
					if d, err := res.resolve(ctx, "RCPT-REF-002", orid); err != nil {
						suite.Check("RCPT-REF-002", fmt.Errorf("outcome %s receipt_id: %w", oid, err))
					} else if d.Str("subject", "id") != oid {
						suite.Check("RCPT-REF-002", check.ReceiptOf("outcome "+oid+" receipt_id", d, f.id, ""))
					}
				}
				arts, _ := o["artifacts"].([]any)
				for _, a := range arts {
					am, _ := a.(map[string]any)
					if aid, _ := am["id"].(string); aid != "" {
						checkArtifactRef(ctx, res, f, aid)
					}
				}
			}
			for _, raw := range r.listed(ctx, f) {
				d, err := check.DecodeReceipt(raw)
				if err != nil {
					continue
				}
				finals, _ := d.Get("final_artifacts").([]any)
				for _, x := range finals {
					entry, _ := x.(map[string]any)
					aid, _ := entry["artifact_id"].(string)
					if aid == "" {
						continue
					}
					if art, err := readArtifact(ctx, aid); err != nil {
						suite.Check("RCPT-REF-004", fmt.Errorf("%s lists final artifact %s: %w", d.Label(), aid, err))
					} else {
						suite.Check("RCPT-REF-004", check.ArtifactDigest(d, entry, art))
					}
				}
			}
			for _, e := range readEvents(ctx, "RCPT-REF-003", "/v1/tasks/"+client.Seg(f.id)+"/events") {
				checkEventRef(ctx, res, e, f.id)
			}
		}
		for _, e := range readEvents(ctx, "RCPT-REF-003", "/v1/sessions/"+client.Seg(r.session)+"/events") {
			taskID, _ := e["task_id"].(string)
			checkEventRef(ctx, res, e, taskID)
		}
	})

	It("names the receipt in every receipt event it emits", suite.Req("RCPT-EVENT-002"), func(ctx SpecContext) {
		res := newResolver()
		for _, e := range readEvents(ctx, "RCPT-EVENT-002", "/v1/sessions/"+client.Seg(r.session)+"/events") {
			kind, _ := e["event"].(string)
			if !strings.HasPrefix(kind, "receipt.") {
				continue
			}
			id, _ := e["receipt_id"].(string)
			if id == "" {
				p, _ := e["payload"].(map[string]any)
				id, _ = p["receipt_id"].(string)
			}
			if id == "" {
				suite.Check("RCPT-EVENT-002", fmt.Errorf("event %v (%s) names no receipt: receipt_id is %v and payload has no receipt_id", e["id"], kind, e["receipt_id"]))
				continue
			}
			if _, err := res.resolve(ctx, "RCPT-EVENT-002", id); err != nil {
				suite.Check("RCPT-EVENT-002", fmt.Errorf("event %v (%s): %w", e["id"], kind, err))
			}
		}
	})

	It("answers the verify API as the suite's own verification does", suite.Req("RCPT-VERIFY-001", "RCPT-VERIFY-002"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			id := lr.doc.Str("receipt_id")
			resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/receipts/" + client.Seg(id) + "/verify", Body: map[string]any{}}, "RCPT-VERIFY-001")
			a, err := check.Verification(resp)
			suite.Check("RCPT-VERIFY-001", err)
			if err == nil {
				suite.Check("RCPT-VERIFY-002", check.Agrees(resp, a, r.verify(ctx, lr.raw)))
			}
		}
	})

	It("reports a tampered copy of a receipt invalid, with a reason", suite.Req("RCPT-VERIFY-001", "RCPT-VERIFY-002"), func(ctx SpecContext) {
		if suite.Env().Discovery.Capabilities[VerifySubmittedCapability] != true {
			Skip(fmt.Sprintf("the target does not advertise %q in discovery, so it cannot be sent a copy to verify", VerifySubmittedCapability))
		}
		all := r.all(ctx)
		lr := all[0]
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(lr.raw))
		dec.UseNumber()
		suite.Must("RCPT-VERIFY-002", dec.Decode(&m))
		m["issued_at"] = "2000-01-01T00:00:00Z" // still schema-valid; the hash no longer matches
		resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/receipts/" + client.Seg(lr.doc.Str("receipt_id")) + "/verify",
			Body: map[string]any{"receipt": m}}, "RCPT-VERIFY-002")
		a, err := check.Verification(resp)
		suite.Must("RCPT-VERIFY-001", err)
		if a.Valid {
			suite.Check("RCPT-VERIFY-002", fmt.Errorf("%s: a copy of %s with issued_at changed after sealing is reported valid, want valid: false (its hash no longer matches)", resp, lr.doc.Label()))
		}
	})

	It("answers 404 resource_not_found for a receipt it never issued", suite.Req("RCPT-RES-003"), func(ctx SpecContext) {
		id := suite.Key("conform-no-such-receipt")
		for _, req := range []client.Request{
			{Path: "/v1/receipts/" + client.Seg(id)},
			{Method: http.MethodPost, Path: "/v1/receipts/" + client.Seg(id) + "/verify", Body: map[string]any{}},
		} {
			resp := do(ctx, req, "RCPT-RES-003")
			_, err := check.Error(resp, http.StatusNotFound, "resource_not_found")
			suite.Check("RCPT-RES-003", err)
		}
	})

	It("keeps credentials, the API key and the canary secret out of receipts", suite.Req("RCPT-REDACT-001", "RCPT-REDACT-002", "RCPT-REDACT-003"), func(ctx SpecContext) {
		red := suite.Env().Redactor
		for _, lr := range r.all(ctx) {
			where := fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id)
			named, shaped := check.SecretFindings(where, receipt.Verify(lr.raw, receipt.Options{}))
			suite.Check("RCPT-REDACT-001", named)
			suite.Check("RCPT-REDACT-003", shaped)
			suite.Check("RCPT-REDACT-001", check.NoCanary(where, lr.raw, r.canary))
			if red.Contains(string(lr.raw)) {
				suite.Check("RCPT-REDACT-002", fmt.Errorf("%s carries the API key the suite authenticated with", where))
			}
		}
	})

	It("keeps the canary secret out of the run's public events", suite.Req("RCPT-REDACT-007"), func(ctx SpecContext) {
		if r.canary == "" {
			Skip(r.noCanary)
		}
		for _, path := range []string{"/v1/sessions/" + client.Seg(r.session) + "/events", "/v1/events"} {
			q := url.Values{"limit": {"200"}}
			if path == "/v1/events" {
				q.Set("session_id", r.session)
			}
			for page := 0; page < 20; page++ {
				resp := do(ctx, client.Request{Path: path, Query: q}, "RCPT-REDACT-007")
				suite.Check("RCPT-REDACT-007", check.NoCanary(resp.String(), resp.Body, r.canary))
				p, err := check.Events(resp)
				if err != nil || !p.HasMore || p.NextCursor == "" {
					break
				}
				q.Set("after_event_id", p.NextCursor)
			}
		}
	})

	It("describes redactions with proof hashes and keeps redacted receipts verifiable", suite.Req("RCPT-REDACT-005", "RCPT-REDACT-006"), func(ctx SpecContext) {
		n := 0
		for _, lr := range r.all(ctx) {
			reds, _ := lr.doc.Get("redactions").([]any)
			if len(reds) == 0 && !lr.task.secret {
				continue
			}
			n++
			canary := ""
			if lr.task.secret {
				canary = r.canary
			}
			suite.Should("RCPT-REDACT-005", check.Redactions(lr.doc, canary))
			res := r.verify(ctx, lr.raw)
			suite.Check("RCPT-REDACT-006", check.Findings(fmt.Sprintf("redacted %s of task %s", lr.doc.Label(), lr.task.id), res,
				receipt.ClassSchemaInvalid, receipt.ClassHashMissing, receipt.ClassHashPattern, receipt.ClassHashMismatch))
		}
		if n == 0 {
			Skip("no receipt of the run carries redactions and no task used a secret: " + r.noCanary)
		}
	})
})

func sameCanonical(a, b []byte) bool {
	x, err1 := receipt.Canonical(a)
	y, err2 := receipt.Canonical(b)
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

func hashOf(body []byte) string {
	d, err := check.DecodeReceipt(body)
	if err != nil {
		return ""
	}
	return d.Str("chain", "receipt_hash")
}

// readJSON reads one object; anything else is req's failure.
func readJSON(ctx context.Context, req, path string, q url.Values) map[string]any {
	GinkgoHelper()
	resp := do(ctx, client.Request{Path: path, Query: q}, req)
	suite.Must(req, check.Status(resp, http.StatusOK))
	m, err := resp.Object()
	suite.Must(req, err)
	return m
}

// readEvents reads an event list, following at most 20 pages.
func readEvents(ctx context.Context, req, path string) []map[string]any {
	GinkgoHelper()
	var out []map[string]any
	q := url.Values{"limit": {"200"}}
	for page := 0; page < 20; page++ {
		resp := do(ctx, client.Request{Path: path, Query: q}, req)
		suite.Must(req, check.Status(resp, http.StatusOK))
		p, err := check.ListPage(resp)
		suite.Must(req, err)
		out = append(out, p.Items...)
		if !p.HasMore || p.NextCursor == "" {
			break
		}
		q.Set("after_event_id", p.NextCursor)
	}
	return out
}

// resolver reads receipts by id once each.
type resolver struct{ docs map[string]check.ReceiptDoc }

func newResolver() *resolver { return &resolver{docs: map[string]check.ReceiptDoc{}} }

func (rs *resolver) resolve(ctx context.Context, req, id string) (check.ReceiptDoc, error) {
	GinkgoHelper()
	if d, ok := rs.docs[id]; ok {
		return d, nil
	}
	resp := do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)}, req)
	if err := check.Status(resp, http.StatusOK); err != nil {
		return nil, fmt.Errorf("receipt %q does not resolve: %w", id, err)
	}
	d, err := check.DecodeReceipt(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %v", resp, err)
	}
	rs.docs[id] = d
	return d, nil
}

// readArtifact reads an Artifact; one that cannot be read is RCPT-REF-004's
// finding, not the end of the spec.
func readArtifact(ctx context.Context, aid string) (map[string]any, error) {
	GinkgoHelper()
	resp := do(ctx, client.Request{Path: "/v1/artifacts/" + client.Seg(aid)}, "RCPT-REF-004")
	if err := check.Status(resp, http.StatusOK); err != nil {
		return nil, err
	}
	return resp.Object()
}

func checkArtifactRef(ctx context.Context, res *resolver, f *finished, aid string) {
	GinkgoHelper()
	art, err := readArtifact(ctx, aid)
	if err != nil {
		suite.Check("RCPT-REF-004", fmt.Errorf("the outcome of task %s lists artifact %s: %w", f.id, aid, err))
		return
	}
	rid, _ := art["receipt_id"].(string)
	if rid == "" {
		return
	}
	if _, err := res.resolve(ctx, "RCPT-REF-004", rid); err != nil {
		suite.Check("RCPT-REF-004", fmt.Errorf("artifact %s receipt_id: %w", aid, err))
	}
}

func checkEventRef(ctx context.Context, res *resolver, e map[string]any, taskID string) {
	GinkgoHelper()
	rid, _ := e["receipt_id"].(string)
	if rid == "" {
		return
	}
	d, err := res.resolve(ctx, "RCPT-REF-003", rid)
	if err != nil {
		suite.Check("RCPT-REF-003", fmt.Errorf("event %v (%v) receipt_id: %w", e["id"], e["event"], err))
		return
	}
	sess, _ := e["session_id"].(string)
	suite.Check("RCPT-REF-003", check.ReceiptOf(fmt.Sprintf("event %v (%v) receipt_id", e["id"], e["event"]), d, taskID, sess))
}

// otherReceiptHashes collects the stored hashes of receipts of the target's
// other finished tasks (at most maxOtherTasks of them), where a chain link
// that skips our own previous receipt may point.
func otherReceiptHashes(ctx context.Context, r *run) map[string]bool {
	GinkgoHelper()
	const maxOtherTasks = 200
	mine := map[string]bool{}
	for _, f := range r.tasks {
		mine[f.id] = true
	}
	out := map[string]bool{}
	q := url.Values{"limit": {"100"}}
	seen := 0
	for page := 0; page < 10 && seen < maxOtherTasks; page++ {
		resp := do(ctx, client.Request{Path: "/v1/tasks", Query: q}, "RCPT-CHAIN-001")
		p, err := check.ListPage(resp)
		if err != nil || resp.Status != http.StatusOK {
			break
		}
		for _, t := range p.Items {
			id, _ := t["id"].(string)
			status, _ := t["status"].(string)
			if id == "" || mine[id] || !check.Terminal(status) || seen >= maxOtherTasks {
				continue
			}
			seen++
			rs, err := check.ReceiptList(do(ctx, client.Request{Path: "/v1/tasks/" + client.Seg(id) + "/receipts"}, "RCPT-CHAIN-001"))
			if err != nil {
				continue
			}
			for _, raw := range rs {
				out[hashOf(raw)] = true
			}
		}
		if !p.HasMore || p.NextCursor == "" {
			break
		}
		q.Set("cursor", p.NextCursor)
	}
	return out
}
