package receipts

import (
	"bytes"
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
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/receipt"
	"github.com/harn-conform/conform/internal/suite"
)

// VerifySubmittedCapability is the discovery capability by which a target
// says its verify API also checks a receipt copy sent in the body
// ({"receipt": {…}}), a conform extension (docs/receipts.md). It is an
// extra: the suite gets its "invalid" answers from the standard request
// first (trust_anchor, at_time).
const VerifySubmittedCapability = evidence.HookVerifySubmitted

// untrustedAnchor and beforeAnyReceipt are the standard verify request's
// members the suite uses to ask for an honest "invalid": a trust anchor
// no target publishes, and a moment before any receipt was issued.
const beforeAnyReceipt = "2000-01-01T00:00:00Z"

func untrustedAnchor() string { return suite.Key("conform-untrusted-anchor") }

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
		servedIDs, stable := 0, 0
		for _, lr := range r.all(ctx) {
			judging(lr.task)
			id := lr.doc.Str("receipt_id")
			if id == "" {
				// No id to read it by: it cannot be served, nor read twice.
				suite.CheckBlocks("RCPT-SHAPE-006", fmt.Errorf("a receipt of task %s has no receipt_id", lr.task.id), "RCPT-RES-001")
				continue
			}
			if prev, dup := byID[id]; dup && !sameCanonical(prev, lr.raw) {
				suite.Check("RCPT-SHAPE-006", fmt.Errorf("two different receipts share the id %q", id))
			}
			byID[id] = lr.raw
			first := do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)}, "RCPT-RES-001")
			suite.Check("RCPT-RES-001", check.SameReceipt(first, lr.raw))
			checked, err := check.ServedID(first, id)
			suite.Check("RCPT-SHAPE-006", err)
			if checked {
				servedIDs++
			}
			again := do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(id)}, "RCPT-RES-001")
			a, b := hashOf(first.Body), hashOf(again.Body)
			switch {
			case a == "" || b == "":
				// Not receipts: RCPT-RES-001's finding; nothing to compare.
			case a != b:
				suite.Should("RCPT-HASH-004", fmt.Errorf("GET /v1/receipts/%s twice: receipt_hash %q, then %q: an issued receipt should not change", id, a, b))
			default:
				stable++
			}
		}
		// The id a Task names its receipt by serves a receipt with that id.
		for _, f := range r.tasks {
			judging(f)
			task, _ := readJSON(ctx, "RCPT-SHAPE-006", "/v1/tasks/"+client.Seg(f.id), nil)
			if rid, _ := task["receipt_id"].(string); rid != "" {
				checked, err := check.ServedID(do(ctx, client.Request{Path: "/v1/receipts/" + client.Seg(rid)}, "RCPT-SHAPE-006"), rid)
				suite.Check("RCPT-SHAPE-006", err)
				if checked {
					servedIDs++
				}
			}
		}
		if servedIDs == 0 {
			suite.NothingToCheck("RCPT-SHAPE-006", "no read of GET /v1/receipts/{id} answered with a receipt document, so no served receipt_id could be compared with the id it was read by",
				"serve the receipt document itself at GET /v1/receipts/{id} (RCPT-RES-001)")
		}
		if stable == 0 {
			suite.NothingToCheck("RCPT-HASH-004", "no receipt could be read twice by id as a receipt document, so no two reads were compared",
				"serve the receipt document itself at GET /v1/receipts/{id} (RCPT-RES-001)")
		}
	})

	It("issues receipts that are I-JSON and valid against the receipt schema", suite.Req("RCPT-SHAPE-001", "RCPT-SHAPE-002", "RCPT-HASH-003"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			judging(lr.task)
			res := r.verify(ctx, lr.raw)
			where := fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id)
			suite.Check("RCPT-HASH-003", check.Findings(where, res, receipt.ClassJSONInvalid))
			suite.Check("RCPT-SHAPE-001", check.Findings(where, res, receipt.ClassSchemaInvalid))
			suite.Check("RCPT-SHAPE-002", check.FormatMarker(lr.doc))
		}
	})

	It("describes each task in its receipt: subject, identifiers, cost and lifecycle", suite.Req("RCPT-SHAPE-003", "RCPT-SHAPE-004", "RCPT-SHAPE-005", "RCPT-SHAPE-007", "RCPT-SHAPE-008"), func(ctx SpecContext) {
		failedTasks := 0
		seen, seenFree := map[string]bool{}, map[string]bool{}
		for _, lr := range r.all(ctx) {
			judging(lr.task)
			seen[lr.task.status] = true
			seenFree[lr.task.status] = seenFree[lr.task.status] || !lr.task.hooked
			suite.Check("RCPT-SHAPE-003", check.Subject(lr.doc, lr.task.task))
			suite.Check("RCPT-SHAPE-004", check.Identifiers(lr.doc, check.RunIDs{Workspace: r.workspace, Session: r.session, Task: lr.task.id}))
			suite.Check("RCPT-SHAPE-004", check.Cost(lr.doc, r.outcome(ctx, lr.task)))
			suite.Check("RCPT-SHAPE-005", check.Lifecycle(lr.doc, lr.task.status))
			suite.Should("RCPT-SHAPE-007", check.Determinism(lr.doc))
			if lr.task.status == check.Failed {
				failedTasks++
				suite.Should("RCPT-SHAPE-008", check.FailureVisible(lr.doc, lr.task.status))
			}
		}
		if failedTasks == 0 {
			suite.NothingToCheck("RCPT-SHAPE-008", "no task of the run failed, so no failure could be looked for in a receipt", suite.RemedyFailed)
		}
		var missing []string
		for _, st := range []string{check.Completed, check.Failed, check.Canceled} {
			if !seen[st] {
				missing = append(missing, st)
			}
			if !seenFree[st] {
				// The final_state of every end was checked only with the
				// tasks a scenario drove.
				suite.NeedsHooked("RCPT-SHAPE-005")
			}
		}
		if len(missing) > 0 {
			remedy := suite.RemedyScenarios
			switch {
			case !slices.Contains(missing, check.Canceled):
				remedy = suite.RemedyFailed
			case !slices.Contains(missing, check.Failed):
				remedy = suite.RemedyRunning
			}
			suite.NothingToCheck("RCPT-SHAPE-005", fmt.Sprintf("the run has no receipt of a %s task, so the final_state of those was not checked", strings.Join(missing, " or ")), remedy)
		}
		r.sources("RCPT-SHAPE-005", "RCPT-SHAPE-008")
	})

	It("stores a receipt hash that recomputes byte for byte", suite.Req("RCPT-HASH-001", "RCPT-HASH-002"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			judging(lr.task)
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
		var (
			searched map[string]bool
			problems []string
			links    int // non-null links the suite could follow
		)
		for i := 1; i < len(all); i++ {
			// A link is judged on both receipts it joins.
			judging(all[i-1].task, all[i].task)
			own := all[i].doc.Str("chain", "receipt_hash")
			delete(known, own)
			link, err := check.ChainLink(all[i-1].doc, all[i].doc, known)
			known[own] = true
			suite.Check("RCPT-CHAIN-001", err)
			if err != nil || all[i].doc.Get("chain", "previous_receipt_hash") == nil {
				continue
			}
			if link == "" {
				links++
				continue
			}
			// Another client's task may have ended between two of ours: look
			// for the link among the target's other receipts before blaming it.
			if searched == nil {
				searched, problems = otherReceiptHashes(ctx, r)
			}
			switch {
			case searched[link]:
				links++
			case len(problems) > 0:
				suite.NothingToCheck("RCPT-CHAIN-001", fmt.Sprintf("%s links to previous_receipt_hash %s, which is no receipt of the run, and the target's other receipts could not all be read to look for it: %s",
					all[i].doc.Label(), link, strings.Join(problems, "; ")), "let GET /v1/tasks and GET /v1/tasks/{id}/receipts answer for every finished task")
			default:
				suite.Check("RCPT-CHAIN-001", fmt.Errorf("%s links to previous_receipt_hash %s, which is neither the hash of %s (issued just before it) nor of any of the %d other receipts the suite could read",
					all[i].doc.Label(), link, all[i-1].doc.Label(), len(searched)))
			}
		}
		if links == 0 {
			suite.NothingToCheck("RCPT-CHAIN-001", fmt.Sprintf("none of the run's %d receipts links to an earlier one (every previous_receipt_hash after the first is null), so no chain link could be followed", len(all)),
				"chain consecutive receipts of one issuer: set previous_receipt_hash to the receipt hash of the receipt issued before (a per-task chain needs tasks with several receipts)")
		}
	})

	It("signs receipts with keys it publishes in the key directory", suite.Req("RCPT-SIGN-001", "RCPT-SIGN-002"), func(ctx SpecContext) {
		all := r.all(ctx)
		signed := 0
		for _, lr := range all {
			judging(lr.task)
			if sigs, _ := lr.doc.Get("signatures").([]any); len(sigs) > 0 {
				signed++
			}
		}
		if signed == 0 {
			suite.Note("the target's receipts are unsigned (signatures are optional): their integrity is checked through the receipt hash (RCPT-HASH-001), their origin cannot be, and no requirement asks for it")
			suite.NotApplicable(fmt.Sprintf("none of the run's %d receipts carries a signature: signatures are optional in receipt-2026-04-25, so the signature requirements do not apply to a target that issues unsigned receipts", len(all)))
		}
		ks := r.keySet(ctx)
		if ks == nil {
			suite.Should("RCPT-SIGN-002", fmt.Errorf("%d receipts carry signatures but no key directory can be read (%s), so no client can check them", signed, r.noKeys))
			suite.Unverified(fmt.Sprintf("%d receipts carry signatures but there are no published keys to verify them with: %s", signed, r.noKeys),
				fmt.Sprintf("serve the key directory (docs/receipts.md §4) at %s, or advertise its location as capabilities[%q] in the discovery document", check.DefaultKeyDirectory, check.KeyDirectoryCapability))
		}
		profiles := map[string]int{}
		unchecked := 0
		for _, lr := range all {
			judging(lr.task)
			if sigs, _ := lr.doc.Get("signatures").([]any); len(sigs) == 0 {
				continue
			}
			res := r.verify(ctx, lr.raw)
			suite.Check("RCPT-SIGN-001", check.Findings(fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id), res, receipt.ClassSignatureInvalid, receipt.ClassKeyUnknown))
			for _, p := range res.SignatureProfiles {
				profiles[p]++
			}
			if res.Valid() && len(res.SignatureProfiles) == 0 {
				unchecked++ // every signature in an algorithm the suite does not implement
			}
		}
		if unchecked > 0 {
			suite.NothingToCheck("RCPT-SIGN-001", fmt.Sprintf("%d signed receipt(s) carry only signatures in algorithms the suite does not check (it checks %s)", unchecked, receipt.Ed25519),
				"sign receipts with ed25519 as well (docs/receipts.md §3)")
		}
		if len(profiles) > 0 {
			var parts []string
			for _, p := range []string{receipt.ProfileHash, receipt.ProfileCanonical, receipt.ProfileCanonicalWithHash} {
				if n := profiles[p]; n > 0 {
					parts = append(parts, fmt.Sprintf("%q (%s) on %d receipt(s)", p, profileMeaning[p], n))
				}
			}
			suite.Note(fmt.Sprintf("receipt signing profile (docs/receipts.md §3): the target's signatures verify over %s; keys read from %s", strings.Join(parts, " and "), r.keysAt))
		}
	})

	It("references its receipts from the Task, its Outcome, its artifacts and its events", suite.Req("RCPT-REF-001", "RCPT-REF-002", "RCPT-REF-003", "RCPT-REF-004"), func(ctx SpecContext) {
		res := newResolver()
		all := r.all(ctx)
		var (
			outcomeRefs, eventRefs, artifactRefs, digests, outcomeLists int
			noOutcome                                                   []string
		)
		for _, f := range r.tasks {
			judging(f)
			task, read := readJSON(ctx, "RCPT-REF-001", "/v1/tasks/"+client.Seg(f.id), nil)
			rid, _ := task["receipt_id"].(string)
			if !read {
				// readJSON said why there was nothing to check.
			} else if rid == "" {
				if r.policy != "required" {
					suite.NotApplicableTo("RCPT-REF-001", fmt.Sprintf("the %s task %s has no receipt_id, and the agent card's receipt_policy is %q", f.status, f.id, r.policy))
				} else {
					suite.Check("RCPT-REF-001", fmt.Errorf("GET /v1/tasks/%s: the %s task's receipt_id is %v, want the id of its receipt", f.id, f.status, task["receipt_id"]))
				}
			} else if d, err := res.resolve(ctx, "RCPT-REF-001", rid); err != nil {
				suite.Check("RCPT-REF-001", fmt.Errorf("task %s receipt_id: %w", f.id, err))
			} else {
				suite.Check("RCPT-REF-001", check.ReceiptOf("task "+f.id+" receipt_id", d, f.id, ""))
			}

			o, why := r.readOutcome(ctx, f)
			if o == nil {
				noOutcome = append(noOutcome, why)
			} else {
				oid, _ := o["id"].(string)
				if orid, _ := o["receipt_id"].(string); orid != "" {
					outcomeRefs++
					if d, err := res.resolve(ctx, "RCPT-REF-002", orid); err != nil {
						suite.Check("RCPT-REF-002", fmt.Errorf("outcome %s receipt_id: %w", oid, err))
					} else if d.Str("subject", "id") != oid {
						suite.Check("RCPT-REF-002", check.ReceiptOf("outcome "+oid+" receipt_id", d, f.id, ""))
					}
				}
				var artIDs []string
				arts, _ := o["artifacts"].([]any)
				for _, a := range arts {
					am, _ := a.(map[string]any)
					if aid, _ := am["id"].(string); aid != "" {
						artIDs = append(artIDs, aid)
						if checkArtifactRef(ctx, res, f, aid) {
							artifactRefs++
						}
					}
				}
				if len(artIDs) > 0 {
					outcomeLists++
					for _, lr := range all {
						if lr.task == f {
							suite.Check("RCPT-REF-004", check.FinalArtifacts(lr.doc, artIDs))
						}
					}
				}
			}
			for _, lr := range all {
				if lr.task != f {
					continue
				}
				finals, _ := lr.doc.Get("final_artifacts").([]any)
				for _, x := range finals {
					entry, _ := x.(map[string]any)
					aid, _ := entry["artifact_id"].(string)
					if aid == "" {
						continue // the schema requires it: RCPT-SHAPE-001's finding
					}
					art, err := readArtifact(ctx, aid)
					if err != nil {
						suite.Check("RCPT-REF-004", fmt.Errorf("%s lists final artifact %s: %w", lr.doc.Label(), aid, err))
						continue
					}
					if _, ok := entry["sha256"].(string); ok {
						digests++
						suite.Check("RCPT-REF-004", check.ArtifactDigest(lr.doc, entry, art))
					}
				}
			}
			evs, err := readEvents(ctx, "/v1/tasks/"+client.Seg(f.id)+"/events", "RCPT-REF-003")
			if err != nil {
				suite.NothingToCheck("RCPT-REF-003", fmt.Sprintf("the events of task %s could not be read, so their receipt_ids were not followed: %v", f.id, err), remedySetup)
			}
			for _, e := range evs {
				if checkEventRef(ctx, res, e, f.id) {
					eventRefs++
				}
			}
		}
		// The session's events are the events of every task of the run.
		suite.EndJudging()
		evs, err := readEvents(ctx, "/v1/sessions/"+client.Seg(r.session)+"/events", "RCPT-REF-003")
		if err != nil {
			suite.NothingToCheck("RCPT-REF-003", fmt.Sprintf("the session's events could not be read, so their receipt_ids were not followed: %v", err), remedySetup)
		}
		for _, e := range evs {
			taskID, _ := e["task_id"].(string)
			if checkEventRef(ctx, res, e, taskID) {
				eventRefs++
			}
		}
		if outcomeRefs == 0 {
			why := fmt.Sprintf("no Outcome of the run's %d tasks carries a receipt_id, so no Outcome reference could be followed", len(r.tasks))
			if len(noOutcome) > 0 {
				why += " (" + strings.Join(noOutcome, "; ") + ")"
			}
			suite.NothingToCheck("RCPT-REF-002", why, "set the Outcome's receipt_id to the receipt of its task (the Receipts level's receipt references from Outcomes)")
		}
		if eventRefs == 0 {
			suite.NothingToCheck("RCPT-REF-003", "no event of the run's tasks or session carries a receipt_id, so no Event reference could be followed",
				"set receipt_id on the events that a receipt vouches for, e.g. the terminal task event and receipt.issued (the Receipts level's receipt references from Events)")
		}
		r.sources("RCPT-REF-004")
		switch {
		case outcomeLists == 0 && digests == 0:
			suite.NothingToCheck("RCPT-REF-004", "no task of the run produced an artifact (no Outcome lists one and no receipt names a final artifact), so no artifact reference could be checked",
				"implement the conform.scenarios test hook (docs/scenarios.md) so the suite can have a task produce an artifact, or let the target's agent produce one")
		case artifactRefs == 0:
			suite.NothingToCheck("RCPT-REF-004", "no artifact of the run carries a receipt_id, so no Artifact reference could be followed",
				"set the Artifact's receipt_id to the receipt that vouches for it (the Receipts level's receipt references from Artifacts)")
		}
	})

	It("names the receipt in every receipt event it emits", suite.Req("RCPT-EVENT-002"), func(ctx SpecContext) {
		res := newResolver()
		evs, err := readEvents(ctx, "/v1/sessions/"+client.Seg(r.session)+"/events", "RCPT-EVENT-002")
		if err != nil {
			suite.Unverified(fmt.Sprintf("the session's events could not be read, so no receipt event was looked at: %v", err), remedySetup)
		}
		seen := 0
		for _, e := range evs {
			kind, _ := e["event"].(string)
			if !strings.HasPrefix(kind, "receipt.") {
				continue
			}
			seen++
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
		if seen == 0 {
			// Emitting receipt events is a MAY (RCPT-EVENT-001): a target
			// that does not take it up has no event for this rule to judge.
			suite.NotApplicable(fmt.Sprintf("the run's session has %d events and none is a receipt.* event: emitting them is optional (RCPT-EVENT-001, a MAY)", len(evs)))
		}
	})

	It("answers the verify API as the suite's own verification does", suite.Req("RCPT-VERIFY-001", "RCPT-VERIFY-002"), func(ctx SpecContext) {
		for _, lr := range r.all(ctx) {
			judging(lr.task)
			id := lr.doc.Str("receipt_id")
			if id == "" {
				continue // RCPT-SHAPE-006's finding: there is no id to verify by
			}
			resp := do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/receipts/" + client.Seg(id) + "/verify", Body: map[string]any{}}, "RCPT-VERIFY-001")
			a, err := check.Verification(resp)
			if suite.CheckBlocks("RCPT-VERIFY-001", err, "RCPT-VERIFY-002") {
				suite.Check("RCPT-VERIFY-002", check.Agrees(resp, a, r.verify(ctx, lr.raw)))
			}
		}
	})

	It("answers valid: false, with a reason, for a receipt that does not verify as asked", suite.Req("RCPT-VERIFY-001", "RCPT-VERIFY-002"), func(ctx SpecContext) {
		lr := r.verifiable(ctx, false)
		id := lr.doc.Str("receipt_id")
		path := "/v1/receipts/" + client.Seg(id) + "/verify"
		// The standard request (OpenAPI VerifyReceiptRequest) first.
		standard := func(path string) (invalid int, ignored []string) {
			for _, probe := range []struct {
				what string
				body map[string]any
			}{
				{"a trust_anchor naming a key that did not sign it", map[string]any{"trust_anchor": untrustedAnchor()}},
				{"an at_time before the receipt was issued", map[string]any{"at_time": beforeAnyReceipt}},
			} {
				resp := do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: probe.body}, "RCPT-VERIFY-001")
				if resp.Status == http.StatusBadRequest || resp.Status == http.StatusUnprocessableEntity {
					ignored = append(ignored, fmt.Sprintf("%s was refused (%s)", probe.what, resp))
					continue
				}
				a, err := check.Verification(resp)
				suite.Check("RCPT-VERIFY-001", err)
				switch {
				case err != nil:
				case a.Valid:
					ignored = append(ignored, fmt.Sprintf("%s was answered valid: true", probe.what))
				default:
					invalid++
				}
			}
			return invalid, ignored
		}
		judging(lr.task)
		invalid, ignored := standard(path)
		if invalid > 0 {
			suite.Check("RCPT-VERIFY-002", nil) // answered valid: false for this receipt
		}
		suite.EndJudging()
		if lr.task.hooked {
			// Paired: the same standard requests for a plain task's receipt,
			// whose answers judge the verify API on the target's ordinary
			// path (docs/interpretations.md#hook-attested).
			if plain := r.verifiable(ctx, true); plain.task != nil {
				judging(plain.task)
				if n, _ := standard("/v1/receipts/" + client.Seg(plain.doc.Str("receipt_id")) + "/verify"); n > 0 {
					suite.Check("RCPT-VERIFY-002", nil) // answered valid: false
				}
				suite.EndJudging()
			}
		}
		// The conform extension, where offered: a tampered copy.
		if suite.Env().Discovery.Capabilities[VerifySubmittedCapability] == true {
			var m map[string]any
			dec := json.NewDecoder(bytes.NewReader(lr.raw))
			dec.UseNumber()
			suite.Must("RCPT-VERIFY-002", dec.Decode(&m))
			m["issued_at"] = "2000-01-01T00:00:00Z" // still schema-valid; the hash no longer matches
			resp := do(ctx, client.Request{Method: http.MethodPost, Path: path, Body: map[string]any{"receipt": m}}, "RCPT-VERIFY-002")
			a, err := check.Verification(resp)
			suite.Check("RCPT-VERIFY-001", err)
			// The verdict rests on the extension when it found a problem,
			// or when only it gave an invalid answer.
			onHook := true
			switch {
			case err != nil:
			case a.Valid:
				suite.Check("RCPT-VERIFY-002", fmt.Errorf("%s: a copy of %s with issued_at changed after sealing is reported valid, want valid: false (its hash no longer matches); the target advertises %q", resp, lr.doc.Label(), VerifySubmittedCapability))
			default:
				onHook = invalid == 0
				invalid++
			}
			if onHook {
				suite.UsedHook(evidence.HookVerifySubmitted, fmt.Sprintf("POST %s with a copy of %s changed after sealing", path, lr.doc.Label()))
			}
		} else {
			ignored = append(ignored, fmt.Sprintf("the target does not advertise the conform extension %q, so no tampered copy was sent", VerifySubmittedCapability))
		}
		if invalid == 0 {
			suite.Unverified(fmt.Sprintf("no standard request got an invalid answer from the verify API for %s: %s; the protocol does not define what trust_anchor and at_time do, so ignoring them is no failure, but the \"invalid\" direction stays unverified",
				lr.doc.Label(), strings.Join(ignored, "; ")),
				fmt.Sprintf("let POST /v1/receipts/{id}/verify answer valid: false, with a reason, when trust_anchor names a key that did not sign the receipt or at_time is before it was issued (docs/receipts.md), or offer the %q extension", VerifySubmittedCapability))
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
			judging(lr.task)
			where := fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id)
			named, shaped := check.SecretFindings(where, receipt.Verify(lr.raw, receipt.Options{}))
			suite.Check("RCPT-REDACT-001", named)
			suite.Check("RCPT-REDACT-003", shaped)
			suite.Check("RCPT-REDACT-001", check.NoCanary(where, lr.raw, r.canary))
			var key error
			if sp, ok := red.Find(string(lr.raw)); ok {
				// The redactor holds the run's keys and tokens; any spelling
				// counts (check.SecretSpelled): base64 is no redaction.
				key = fmt.Errorf("%s carries the API key, or another credential the suite authenticated with (%s)", where, check.SpellingWords(sp))
			}
			suite.Check("RCPT-REDACT-002", key)
		}
		// Only the secret task was handed the canary: the plain tasks'
		// receipts show the credential-named members, not the secret kept out.
		suite.NeedsHooked("RCPT-REDACT-001")
		if r.canary == "" {
			suite.NothingToCheck("RCPT-REDACT-001", "credential-named members were checked, but no secret the run used could be looked for: "+r.noCanary, remedyCanary)
		}
	})

	It("keeps the agent's hidden reasoning out of receipts", suite.Req("RCPT-REDACT-004"), func(ctx SpecContext) {
		if r.thought == "" {
			suite.Unverified(r.noThought, remedyThought)
		}
		// Only the reasoning task thought the canary.
		suite.NeedsHooked("RCPT-REDACT-004")
		seen := false
		for _, lr := range r.all(ctx) {
			judging(lr.task)
			seen = seen || lr.task.thought
			suite.Check("RCPT-REDACT-004", check.NoReasoning(fmt.Sprintf("%s of task %s", lr.doc.Label(), lr.task.id), lr.raw, r.thought))
		}
		if !seen {
			suite.NothingToCheck("RCPT-REDACT-004", "the task that thought the canary has no receipt to search (RCPT-RES-002 reports it); the other receipts of the run were searched", remedySetup)
		}
	})

	It("keeps the canary secret out of the run's public events", suite.Req("RCPT-REDACT-007"), func(ctx SpecContext) {
		if r.canary == "" {
			suite.Unverified(r.noCanary, remedyCanary)
		}
		suite.UsedHook(evidence.HookScenarios, "the canary secret handed to a task of the receipts run by the use_secret step")
		for _, path := range []string{"/v1/sessions/" + client.Seg(r.session) + "/events", "/v1/events"} {
			q := url.Values{"limit": {"200"}}
			if path == "/v1/events" {
				q.Set("session_id", r.session)
			}
			for page := 0; page < 20; page++ {
				resp := do(ctx, client.Request{Path: path, Query: q}, "RCPT-REDACT-007")
				if err := check.Status(resp, http.StatusOK); err != nil {
					suite.NothingToCheck("RCPT-REDACT-007", fmt.Sprintf("%s could not be read, so it was not searched for the canary: %v", path, err), remedySetup)
					break
				}
				suite.Check("RCPT-REDACT-007", check.NoCanary(resp.String(), resp.Body, r.canary))
				p, err := check.Events(resp)
				if err != nil {
					suite.NothingToCheck("RCPT-REDACT-007", fmt.Sprintf("%s: the event list could not be paged, so later pages were not searched: %v", path, err), remedySetup)
					break
				}
				if !p.HasMore || p.NextCursor == "" {
					break
				}
				q.Set("after_event_id", p.NextCursor)
			}
		}
	})

	It("describes redactions with proof hashes and keeps redacted receipts verifiable", suite.Req("RCPT-REDACT-005", "RCPT-REDACT-006"), func(ctx SpecContext) {
		// The redaction checked is the canary's, which only the secret task
		// was handed.
		suite.NeedsHooked("RCPT-REDACT-005", "RCPT-REDACT-006")
		n := 0
		for _, lr := range r.all(ctx) {
			judging(lr.task)
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
			why := "no receipt of the run carries redactions"
			if r.noCanary != "" {
				why += " and no task used a secret: " + r.noCanary
			}
			suite.Unverified(why, remedyCanary)
		}
	})

	It("issues receipts that pass the offline verification the receipt fixtures define", suite.Req("RCPT-FIX-001"), func(ctx SpecContext) {
		all := r.all(ctx)
		byHash := map[string][]byte{}
		taskOf := map[string]*finished{}
		signedUnchecked := 0
		for _, lr := range all {
			judging(lr.task)
			res := r.verify(ctx, lr.raw)
			if err := res.Err(); err != nil {
				suite.Check("RCPT-FIX-001", fmt.Errorf("%s of task %s, verified as `conform receipt verify` does: %w", lr.doc.Label(), lr.task.id, err))
			}
			if sigs, _ := lr.doc.Get("signatures").([]any); len(sigs) > 0 && r.keys == nil {
				signedUnchecked++
			}
			byHash[lr.doc.Str("chain", "receipt_hash")] = lr.raw
			taskOf[lr.doc.Str("chain", "receipt_hash")] = lr.task
		}
		// Where a receipt links to another of the run, the link must be that
		// receipt's recomputed hash, as VerifyChain checks a chain.
		for _, lr := range all {
			link, _ := lr.doc.Get("chain", "previous_receipt_hash").(string)
			prev, ok := byHash[link]
			if !ok || link == "" {
				continue
			}
			judging(taskOf[link], lr.task)
			res := receipt.VerifyChain([][]byte{prev, lr.raw}, receipt.Options{})
			suite.Check("RCPT-FIX-001", check.Findings(fmt.Sprintf("%s of task %s, as the second link of a chain", lr.doc.Label(), lr.task.id), res[1], receipt.ClassChainBroken))
		}
		if signedUnchecked > 0 {
			suite.NothingToCheck("RCPT-FIX-001", fmt.Sprintf("%d receipts carry signatures the suite could not check: %s", signedUnchecked, r.noKeys),
				fmt.Sprintf("serve the key directory (docs/receipts.md §4) at %s, or advertise its location as capabilities[%q] in the discovery document", check.DefaultKeyDirectory, check.KeyDirectoryCapability))
		}
	})
})

// profileMeaning names each signing profile in the report note.
var profileMeaning = map[string]string{
	receipt.ProfileHash:              "the ASCII text of chain.receipt_hash",
	receipt.ProfileCanonical:         "the RFC 8785 canonical receipt without chain.receipt_hash and signatures, the hash input",
	receipt.ProfileCanonicalWithHash: "the RFC 8785 canonical receipt without signatures, chain.receipt_hash kept",
}

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

// readJSON reads one object (a Task the run made). One that cannot be read
// is a Core finding, not req's: req records that it had nothing to check
// there, and ok is false (m is nil).
func readJSON(ctx context.Context, req, path string, q url.Values) (map[string]any, bool) {
	GinkgoHelper()
	resp := do(ctx, client.Request{Path: path, Query: q}, req)
	err := check.Status(resp, http.StatusOK)
	var m map[string]any
	if err == nil {
		m, err = resp.Object()
	}
	if err != nil {
		suite.NothingToCheck(req, fmt.Sprintf("GET %s could not be read, so what it names was not followed: %v", path, err), remedySetup)
		return nil, false
	}
	return m, true
}

// readEvents reads an event list, following at most 20 pages. An error
// says why the list (or a later page) could not be read: a Core finding,
// so callers record that they had nothing to check rather than blame reqs
// (which a transport failure gives an error verdict).
func readEvents(ctx context.Context, path string, reqs ...string) ([]map[string]any, error) {
	GinkgoHelper()
	var out []map[string]any
	q := url.Values{"limit": {"200"}}
	for page := 0; page < 20; page++ {
		resp := do(ctx, client.Request{Path: path, Query: q}, reqs...)
		if err := check.Status(resp, http.StatusOK); err != nil {
			return out, err
		}
		p, err := check.ListPage(resp)
		if err != nil {
			return out, err
		}
		out = append(out, p.Items...)
		if !p.HasMore || p.NextCursor == "" {
			break
		}
		q.Set("after_event_id", p.NextCursor)
	}
	return out, nil
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

// checkArtifactRef follows an outcome artifact's receipt_id. It reports
// whether the artifact had one to follow.
func checkArtifactRef(ctx context.Context, res *resolver, f *finished, aid string) bool {
	GinkgoHelper()
	art, err := readArtifact(ctx, aid)
	if err != nil {
		suite.Check("RCPT-REF-004", fmt.Errorf("the outcome of task %s lists artifact %s: %w", f.id, aid, err))
		return false
	}
	rid, _ := art["receipt_id"].(string)
	if rid == "" {
		return false
	}
	if _, err := res.resolve(ctx, "RCPT-REF-004", rid); err != nil {
		suite.Check("RCPT-REF-004", fmt.Errorf("artifact %s receipt_id: %w", aid, err))
	}
	return true
}

// checkEventRef follows an event's receipt_id. It reports whether the
// event had one to follow.
func checkEventRef(ctx context.Context, res *resolver, e map[string]any, taskID string) bool {
	GinkgoHelper()
	rid, _ := e["receipt_id"].(string)
	if rid == "" {
		return false
	}
	d, err := res.resolve(ctx, "RCPT-REF-003", rid)
	if err != nil {
		suite.Check("RCPT-REF-003", fmt.Errorf("event %v (%v) receipt_id: %w", e["id"], e["event"], err))
		return true
	}
	sess, _ := e["session_id"].(string)
	suite.Check("RCPT-REF-003", check.ReceiptOf(fmt.Sprintf("event %v (%v) receipt_id", e["id"], e["event"]), d, taskID, sess))
	return true
}

// otherReceiptHashes collects the stored hashes of receipts of the target's
// other finished tasks (at most maxOtherTasks of them), where a chain link
// that skips our own previous receipt may point. problems says what could
// not be read: a link not found is then no proof of a broken chain.
func otherReceiptHashes(ctx context.Context, r *run) (map[string]bool, []string) {
	GinkgoHelper()
	const maxOtherTasks = 200
	mine := map[string]bool{}
	for _, f := range r.tasks {
		mine[f.id] = true
	}
	out := map[string]bool{}
	var problems []string
	q := url.Values{"limit": {"100"}}
	seen := 0
	for page := 0; page < 10 && seen < maxOtherTasks; page++ {
		resp := do(ctx, client.Request{Path: "/v1/tasks", Query: q}, "RCPT-CHAIN-001")
		if err := check.Status(resp, http.StatusOK); err != nil {
			problems = append(problems, err.Error())
			break
		}
		p, err := check.ListPage(resp)
		if err != nil {
			problems = append(problems, err.Error())
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
				problems = append(problems, err.Error())
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
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("and %d more", len(problems)-3))
	}
	return out, problems
}

// verifiable picks the receipt the verify probes ask about: the first the
// suite's own verification accepts (so an "invalid" answer is about the
// request, not a defect), else the first.
//
// With plain, it returns one of a task no hook drove, if there is one (its
// task is nil otherwise), and never ends the spec.
func (r *run) verifiable(ctx context.Context, plain bool) listedReceipt {
	GinkgoHelper()
	all := r.all(ctx)
	if plain {
		all = slices.DeleteFunc(all, func(lr listedReceipt) bool { return lr.task.hooked })
		i := slices.IndexFunc(all, func(lr listedReceipt) bool { return lr.doc.Str("receipt_id") != "" && r.verify(ctx, lr.raw).Valid() })
		if i < 0 {
			return listedReceipt{}
		}
		return all[i]
	}
	i := slices.IndexFunc(all, func(lr listedReceipt) bool { return lr.doc.Str("receipt_id") != "" && r.verify(ctx, lr.raw).Valid() })
	if i < 0 {
		i = slices.IndexFunc(all, func(lr listedReceipt) bool { return lr.doc.Str("receipt_id") != "" })
	}
	if i < 0 {
		suite.Unverified("no receipt of the run has a receipt_id to verify by (RCPT-SHAPE-006)", "give every receipt its receipt_id")
	}
	return all[i]
}
