package openharness

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	. "github.com/onsi/ginkgo/v2"

	oh "github.com/harn-conform/conform/internal/openharness"
	"github.com/harn-conform/conform/internal/suite"
)

// Remedies of the unverified outcomes.
const (
	remedyPlain = "let the Engine answer a plain request envelope (protocol_version 1.0.0, a context with a user_intent, transport authentication only) with status success"
)

// needSuccess ends the spec as unverified when the Engine did not answer
// a plain request with success: the comparisons of this spec need one.
func needSuccess(a answer, what string) {
	GinkgoHelper()
	if a.doc == nil || oh.Status(a.doc) != "success" {
		got := "no response envelope"
		if a.doc != nil {
			got = fmt.Sprintf("status %q, error.code %q", oh.Status(a.doc), oh.ErrorCode(a.doc))
		}
		suite.Unverified(fmt.Sprintf("%s: the Engine did not answer %s with success (%s), so there is nothing to compare with", a.resp, what, got), remedyPlain)
	}
}

// sameAnswer is the OH-ATT-004 judgement: the request with attachments by
// reference is answered as the plain one was (with success); what the
// answer then holds may well depend on the attachments.
func sameAnswer(plain, probe answer, what string) error {
	if probe.doc == nil {
		return probe.at(fmt.Errorf("the request with %s got no response envelope (%v), where the same request without them got status success", what, probe.err))
	}
	if s := oh.Status(probe.doc); s != "success" {
		return probe.at(fmt.Errorf("the request with %s was answered with status %q (error.code %q), where the same request without them got status success: they must be ignored", what, s, oh.ErrorCode(probe.doc)))
	}
	return nil
}

var _ = Describe("OpenHarness Engine: envelopes", func() {
	It("answers every request with one JSON response envelope of the v1 shape", suite.Req(
		"OH-HTTP-001", "OH-RESP-001", "OH-VER-001", "OH-DIR-001", "OH-DIR-002", "OH-ATT-002",
		"OH-EXT-002", "OH-EXT-003", "OH-ERR-002", "OH-ERR-003", "OH-STR-002"), func(ctx SpecContext) {
		answers := []answer{
			post(ctx, base()),
			post(ctx, with(base(), func(m map[string]any) {
				m["capabilities"] = map[string]any{"openharness.ui.approval": true, "openharness.actions.parallel": true}
			})),
			post(ctx, with(base(), func(m map[string]any) {
				path(m, "request", "context")["attachments"] = []any{map[string]any{"ref_id": suite.Key("att"), "mime_type": "image/png"}}
			})),
			post(ctx, with(base(), func(m map[string]any) { m["protocol_version"] = "99.0.0" })),
			postRaw(ctx, []byte(`{"protocol_version": "1.0.0", "request": `), "a truncated JSON body, to see the error envelope"),
		}
		directives, extensions, errs := 0, 0, 0
		for _, a := range answers {
			if !judge(a) {
				continue
			}
			directives += len(oh.Directives(a.doc))
			if hasExtensions(a.doc) {
				extensions++
			}
			if oh.Status(a.doc) == "error" {
				errs++
			}
		}
		if directives == 0 {
			suite.NotApplicableTo("OH-DIR-001", "no answer carried an action directive (the document lets a success carry none)")
			suite.NotApplicableTo("OH-DIR-002", "no answer carried an action directive")
		}
		if extensions == 0 {
			suite.NotApplicableTo("OH-EXT-003", "no answer carried an extensions object")
		}
		if errs == 0 {
			suite.NothingToCheck("OH-ERR-003", "no answer had status error, not even to a truncated body or an unsupported version", "answer a request the Engine cannot satisfy with status error (OH-ERR-001, OH-VER-004)")
			suite.NothingToCheck("OH-ERR-002", "no answer had status error", "")
		}
	})
})

// hasExtensions reports whether the message has an extensions object
// anywhere outside payloads.
func hasExtensions(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if _, ok := e.(map[string]any); ok && k == "extensions" {
				return true
			}
			if k != "payload" && k != "details" && hasExtensions(e) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if hasExtensions(e) {
				return true
			}
		}
	}
	return false
}

var _ = Describe("OpenHarness Engine: versions", func() {
	It("refuses a major version it does not support with an error envelope", suite.Req("OH-VER-004", "OH-VER-002", "OH-VER-005"), func(ctx SpecContext) {
		plain := post(ctx, base())
		unsupported := post(ctx, with(base(), func(m map[string]any) { m["protocol_version"] = "99.0.0" }))
		switch {
		case unsupported.doc == nil:
			suite.Check("OH-VER-004", unsupported.at(fmt.Errorf("protocol_version 99.0.0 got no response envelope (%v), want status error with an error.code", unsupported.err)))
		case oh.Status(unsupported.doc) != "error":
			suite.Check("OH-VER-004", unsupported.at(fmt.Errorf("protocol_version 99.0.0 was answered with status %q, want error (protocol_version_unsupported): no Engine of v1 can satisfy a major version 99 request", oh.Status(unsupported.doc))))
		case oh.ErrorCode(unsupported.doc) == "":
			suite.Check("OH-VER-004", unsupported.at(fmt.Errorf("protocol_version 99.0.0 was answered with status error but no error.code, want an appropriate code (protocol_version_unsupported)")))
		}
		needSuccess(plain, "a plain 1.0.0 request")
		suite.Should("OH-VER-005", plain.at(sameMajor(plain.doc, "1")))
		// A second major line: an Engine that also answers 2.0.0 supports
		// more than one, and then lists its versions.
		two := post(ctx, with(base(), func(m map[string]any) { m["protocol_version"] = "2.0.0" }))
		if two.doc == nil || oh.Status(two.doc) != "success" {
			suite.NotApplicableTo("OH-VER-002", "the Engine supports one major line (it refused protocol_version 2.0.0)")
			return
		}
		suite.Should("OH-VER-005", two.at(sameMajor(two.doc, "2")))
		for _, a := range []answer{plain, two} {
			if _, ok := a.doc["supported_protocol_versions"]; !ok {
				suite.Should("OH-VER-002", a.at(fmt.Errorf("the Engine answers major versions 1 and 2 but this response has no supported_protocol_versions")))
			}
		}
	})
})

// sameMajor is OH-VER-005: a success response is of the request's major.
func sameMajor(doc map[string]any, major string) error {
	v, _ := doc["protocol_version"].(string)
	if got := oh.Major(v); got != major {
		return fmt.Errorf("a request of major version %s was answered with protocol_version %q", major, v)
	}
	return nil
}

var _ = Describe("OpenHarness Engine: identifiers", func() {
	It("echoes request_id and correlation_id on success and on error", suite.Req("OH-ID-001", "OH-ID-002", "OH-ID-003", "OH-ID-004"), func(ctx SpecContext) {
		answers := []answer{
			post(ctx, base()),
			post(ctx, with(base(), func(m map[string]any) { m["protocol_version"] = "99.0.0" })),
		}
		seen := 0
		for _, a := range answers {
			if a.doc == nil {
				continue
			}
			seen++
			for _, f := range []struct{ field, must, should string }{{"request_id", "OH-ID-001", "OH-ID-002"}, {"correlation_id", "OH-ID-003", "OH-ID-004"}} {
				missing, err := oh.CheckEcho(f.field, a.sent, a.doc)
				suite.Check(f.must, a.at(err))
				if missing {
					suite.Should(f.should, a.at(fmt.Errorf("the request carried %s but the response does not echo it", f.field)))
				}
			}
		}
		if seen == 0 {
			suite.Unverified("no answer was a response envelope", "answer request envelopes with JSON response envelopes (OH-HTTP-001)")
		}
	})
})

var _ = Describe("OpenHarness Engine: forward compatibility", func() {
	It("ignores unknown fields at every object level: the whole answer is the one without them", suite.Req("OH-EXT-001"), func(ctx SpecContext) {
		// The known members the probe nests its unknown ones in, which the
		// request without them carries as well.
		known := func(m map[string]any) {
			c := path(m, "request", "context")
			c["continuation"] = map[string]any{"run_id": "conform-run"}
			c["environment_state"] = map[string]any{"privacy_tier": "public"}
			c["task_hint"] = map[string]any{}
		}
		plain := post(ctx, with(base(), known))
		needSuccess(plain, "a plain request")
		probe := post(ctx, with(base(), func(m map[string]any) {
			known(m)
			m["conform_unknown_member"] = map[string]any{"nested": []any{1, "two"}}
			path(m, "request")["conform_unknown_member"] = true
			ctx := path(m, "request", "context")
			ctx["conform_unknown_member"] = "ignored"
			path(m, "request", "context", "shell")["conform_unknown_member"] = 7
			path(m, "request", "context", "continuation")["conform_unknown_member"] = "x"
			path(m, "request", "context", "environment_state")["conform_unknown_member"] = map[string]any{}
			path(m, "request", "context", "task_hint")["conform_unknown_member"] = "x"
		}))
		again := post(ctx, with(base(), known))
		suite.Check("OH-EXT-001", sameWholeAnswer(plain, probe, again, nil, "unknown members at the top level, in request, request.context and the objects nested in it"))
	})

	It("ignores capability keys it does not understand: the whole answer is the one without them", suite.Req("OH-CAP-001"), func(ctx SpecContext) {
		empty := func(m map[string]any) { m["capabilities"] = map[string]any{} }
		plain := post(ctx, with(base(), empty))
		needSuccess(plain, "a request with an empty capabilities object")
		unknown := []string{"com.conform.probe.unknown", "conform-unknown-capability"}
		probe := post(ctx, with(base(), func(m map[string]any) {
			m["capabilities"] = map[string]any{unknown[0]: true, unknown[1]: map[string]any{"level": 3}}
		}))
		again := post(ctx, with(base(), empty))
		suite.Check("OH-CAP-001", sameWholeAnswer(plain, probe, again, unknown, "capability keys no Engine knows"))
	})
})

// sameWholeAnswer is the OH-EXT-001 / OH-CAP-001 judgement: the request
// with something to ignore gets the whole answer the same request without
// it got (plain, and again after the probe: where those two differ, the
// answer varies anyway), a denial of an ignored capability key apart
// (oh.CheckSameAnswer; docs/interpretations.md#oh-unknown-fields).
func sameWholeAnswer(plain, probe, again answer, ignored []string, what string) error {
	if probe.doc == nil {
		return probe.at(fmt.Errorf("the request with %s got no response envelope (%v), where the same request without them got status success", what, probe.err))
	}
	other := again.doc
	if other == nil {
		other = plain.doc // no second answer: nothing is taken to vary
	}
	return probe.at(oh.CheckSameAnswer(oh.Answers{Plain: plain.doc, Again: other, Probe: probe.doc, Ignored: ignored}, what))
}

var _ = Describe("OpenHarness Engine: capabilities", func() {
	It("answers asked-for capabilities with well-formed denials", suite.Req("OH-CAP-002", "OH-CAP-003", "OH-CAP-004"), func(ctx SpecContext) {
		a := post(ctx, with(base(), func(m map[string]any) {
			m["capabilities"] = map[string]any{"openharness.streaming": true, "openharness.ui.approval": true,
				"openharness.actions.parallel": true, "openharness.ui.rich_cards": true, "com.conform.probe.unknown": true}
		}))
		needSuccess(a, "a request asking for capabilities")
		if len(oh.Denials(a.doc)) == 0 {
			for _, id := range []string{"OH-CAP-002", "OH-CAP-003", "OH-CAP-004"} {
				suite.NotApplicableTo(id, "the Engine denied none of the capabilities asked for (capability_denials is optional)")
			}
			return
		}
		suite.Check("OH-CAP-002", a.at(oh.CheckDenialsAsked(a.sent, a.doc)))
		suite.Should("OH-CAP-003", a.at(oh.CheckDenialCodes(a.doc)))
		suite.Should("OH-CAP-004", a.at(oh.CheckDenialConflicts(a.doc)))
	})
})

var _ = Describe("OpenHarness Engine: errors", func() {
	It("answers a request it cannot read with status error", suite.Req("OH-ERR-001", "OH-ERR-002", "OH-ERR-003"), func(ctx SpecContext) {
		probes := []struct {
			body []byte
			why  string
		}{
			{[]byte(`{"protocol_version": "1.0.0", "request": {`), "a truncated JSON body"},
			{[]byte(`[{"protocol_version": "1.0.0"}]`), "a JSON array, not an envelope"},
			{[]byte(`"hello"`), "a JSON string, not an envelope"},
		}
		for _, p := range probes {
			a := postRaw(ctx, p.body, p.why+", to see the error envelope")
			if a.doc == nil {
				suite.Check("OH-ERR-001", a.at(fmt.Errorf("a request that fails (%s) got no response envelope (the body is %v), want one with status error", p.why, a.err)))
				continue
			}
			suite.Check("OH-ERR-001", a.at(oh.CheckFailureStatus(a.doc, p.why)))
			suite.Should("OH-ERR-002", a.at(oh.CheckErrorPresent(a.doc)))
			suite.Check("OH-ERR-003", a.at(oh.CheckErrorCode(a.doc)))
		}
	})
})

// canaries are values planted in a request to see whether an answer
// repeats them: a token where §7 lets a deployment put one, and personal
// data in a secret-tier environment_state.
type canaries struct{ token, email string }

func newCanaries() canaries {
	var b [8]byte
	rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return canaries{token: "ohtok-canary-" + h, email: "conform.canary." + h + "@example.com"}
}

func (c canaries) plant(m map[string]any) {
	auth := path(m, "request", "auth")
	auth["tenant_id"], auth["credential_ref"], auth["token"] = "conform-tenant", "conform-cred-ref", c.token
	path(m, "request", "context")["environment_state"] = map[string]any{"privacy_tier": "secret", "contact_email": c.email}
}

var _ = Describe("OpenHarness Engine: secrets", func() {
	It("never returns a token or personal data of the request in an error", suite.Req("OH-SEC-002", "OH-ERR-004"), func(ctx SpecContext) {
		c := newCanaries()
		answers := []answer{
			post(ctx, with(base(), func(m map[string]any) { c.plant(m); m["protocol_version"] = "99.0.0" })),
			post(ctx, with(base(), func(m map[string]any) { c.plant(m); m["protocol_version"] = "one" })),
		}
		errs := 0
		for _, a := range answers {
			if a.doc == nil || oh.Status(a.doc) != "error" {
				continue
			}
			errs++
			suite.Check("OH-SEC-002", a.at(oh.CheckNotEchoed(string(a.resp.Body), "the error response", map[string]string{"request.auth.token": c.token})))
			msg, _ := oh.ErrorObject(a.doc)["message"].(string)
			suite.Check("OH-ERR-004", a.at(oh.CheckNotEchoed(msg, "error.message", map[string]string{
				"request.auth.token": c.token, "request.context.environment_state.contact_email": c.email})))
		}
		if errs == 0 {
			remedy := "answer a request the Engine cannot satisfy (an unsupported major version) with status error (OH-VER-004)"
			suite.NothingToCheck("OH-SEC-002", "no probe was answered with an error envelope", remedy)
			suite.NothingToCheck("OH-ERR-004", "no probe was answered with an error envelope", remedy)
		}
	})

	It("does not require a plaintext secret in the body when references suffice", suite.Req("OH-SEC-001"), func(ctx SpecContext) {
		refs := with(base(), func(m map[string]any) {
			auth := path(m, "request", "auth")
			auth["tenant_id"], auth["credential_ref"] = "conform-tenant", "conform-cred-ref"
		})
		withToken := post(ctx, with(refs, func(m map[string]any) { path(m, "request", "auth")["token"] = newCanaries().token }))
		needSuccess(withToken, "a request whose auth carries references and a token")
		refOnly := post(ctx, refs)
		if refOnly.doc == nil || oh.Status(refOnly.doc) != "success" {
			got := "no response envelope"
			if refOnly.doc != nil {
				got = fmt.Sprintf("status %q, error.code %q", oh.Status(refOnly.doc), oh.ErrorCode(refOnly.doc))
			}
			suite.Check("OH-SEC-001", refOnly.at(fmt.Errorf("the same request without the token in request.auth (references and transport authentication only) was refused (%s): the Engine requires a plaintext secret in the body", got)))
		}
	})
})

var _ = Describe("OpenHarness Engine: attachments", func() {
	It("accepts attachments by reference and answers without embedded blobs", suite.Req("OH-ATT-004", "OH-ATT-002"), func(ctx SpecContext) {
		plain := post(ctx, base())
		probe := post(ctx, with(base(), func(m map[string]any) {
			path(m, "request", "context")["attachments"] = []any{
				map[string]any{"ref_id": suite.Key("att"), "mime_type": "image/png"},
				map[string]any{"uri": "https://example.com/conform/report.pdf", "mime_type": "application/pdf", "filename": "report.pdf", "size_bytes": 48213},
				map[string]any{"asset_id": suite.Key("asset")},
			}
		}))
		if probe.doc != nil {
			suite.Check("OH-ATT-002", probe.at(oh.CheckNoBlobs(probe.doc)))
		}
		needSuccess(plain, "a plain request")
		if probe.doc == nil || oh.Status(probe.doc) != "success" {
			suite.Should("OH-ATT-004", sameAnswer(plain, probe, "attachments given by reference (ref_id, uri, asset_id)"))
		}
	})
})
