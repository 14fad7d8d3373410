package openharness

import (
	"strings"

	"github.com/harn-conform/conform/fixtures/schemas"
)

// Severities of a finding: an error makes the message invalid, a warning
// (a SHOULD missed) does not.
const (
	SeverityError   = "error"
	SeverityWarning = "warning"
)

// Finding is one thing the validator found, with the requirement it
// breaks.
type Finding struct {
	Req      string `json:"requirement"`
	Severity string `json:"severity"`
	Message  string `json:"message"`
}

// Result is the validation of one message.
type Result struct {
	Kind     Kind      `json:"kind"`
	Valid    bool      `json:"valid"`
	Findings []Finding `json:"findings"`
}

// Validate checks one decoded message offline as kind (Request or
// Response): the normative schema's definition of that kind and conform's
// envelope schema, then every rule of the document a message alone shows.
// It never needs the other side of the exchange.
func Validate(doc map[string]any, kind Kind) Result {
	r := Result{Kind: kind, Findings: []Finding{}}
	add := func(req, sev string, err error) {
		if err != nil {
			r.Findings = append(r.Findings, Finding{Req: req, Severity: sev, Message: err.Error()})
		}
	}
	switch kind {
	case Request:
		ps, err := bothSchemas(RequestSchema, defRequest, doc)
		if err != nil {
			add("OH-REQ-001", SeverityError, err)
			break
		}
		att, rest := splitProblems(ps, "/request/context/attachments")
		add("OH-REQ-001", SeverityError, problemsError("the request envelope", rest))
		add("OH-ATT-001", SeverityError, problemsError("request.context.attachments", att))
		add("OH-VER-001", SeverityError, CheckVersion(doc))
		add("OH-ATT-002", SeverityError, CheckNoBlobs(doc))
		add("OH-ATT-003", SeverityWarning, checkAttachmentRefs(doc))
		add("OH-PRIV-001", SeverityWarning, checkPrivacyTier(doc))
		add("OH-EXT-003", SeverityWarning, CheckExtensionKeys(doc))
	case Response:
		ps, err := bothSchemas(ResponseSchema, defResponse, doc)
		if err != nil {
			add("OH-RESP-001", SeverityError, err)
			break
		}
		dirs, rest := splitProblems(withoutDirectiveValues(ps), "/response/action_directives/")
		add("OH-RESP-001", SeverityError, problemsError("the response envelope", rest))
		add("OH-DIR-001", SeverityError, problemsError("response.action_directives", dirs))
		add("OH-VER-001", SeverityError, CheckVersion(doc))
		add("OH-ERR-003", SeverityError, CheckErrorCode(doc))
		add("OH-ATT-002", SeverityError, CheckNoBlobs(doc))
		add("OH-ERR-002", SeverityWarning, CheckErrorPresent(doc))
		add("OH-DIR-002", SeverityError, CheckDirectiveValues(doc))
		add("OH-CAP-003", SeverityWarning, CheckDenialCodes(doc))
		add("OH-CAP-004", SeverityWarning, CheckDenialConflicts(doc))
		add("OH-EXT-002", SeverityWarning, CheckVendorMembers(doc))
		add("OH-EXT-003", SeverityWarning, CheckExtensionKeys(doc))
	}
	r.Valid = true
	for _, f := range r.Findings {
		if f.Severity == SeverityError {
			r.Valid = false
		}
	}
	return r
}

// checkAttachmentRefs is OH-ATT-003: each attachment names what it refers
// to by ref_id, uri or asset_id.
func checkAttachmentRefs(doc map[string]any) error {
	atts, _ := obj(obj(doc, "request"), "context")["attachments"].([]any)
	var bad []string
	for i, a := range atts {
		m, ok := a.(map[string]any)
		if !ok {
			continue // OH-ATT-001's finding
		}
		if !nonEmpty(m, "ref_id") && !nonEmpty(m, "uri") && !nonEmpty(m, "asset_id") {
			bad = append(bad, "attachments["+itoa(i)+"]")
		}
	}
	if len(bad) > 0 {
		return errorf("%s has none of ref_id, uri, asset_id", strings.Join(limit(bad, 5), ", "))
	}
	return nil
}

// checkPrivacyTier is OH-PRIV-001: environment_state is classified.
func checkPrivacyTier(doc map[string]any) error {
	es := obj(obj(obj(doc, "request"), "context"), "environment_state")
	if es == nil {
		return nil
	}
	if _, ok := es["privacy_tier"]; !ok {
		return errorf("request.context.environment_state has no privacy_tier (public, restricted or secret)")
	}
	return nil
}

func nonEmpty(m map[string]any, k string) bool {
	s, ok := m[k].(string)
	return ok && s != ""
}

// splitProblems parts schema problems into those at or under prefix (a
// part of the envelope with a requirement of its own) and the rest.
func splitProblems(ps []schemas.Problem, prefix string) (under, rest []schemas.Problem) {
	for _, p := range ps {
		if strings.HasPrefix(p.Location, prefix) {
			under = append(under, p)
		} else {
			rest = append(rest, p)
		}
	}
	return under, rest
}
