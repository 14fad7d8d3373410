package openharness

import (
	"fmt"

	"github.com/harn-conform/conform/refharness/fault"
)

// Fault breaks the Engine on purpose, each in one requirement's way; its
// declaration (Decl) says which. The Engine is one area, engine.go, so its
// faults are declared here, together.
type Fault string

// faults are the Engine's faults, as declared.
var faults fault.Set[fault.Fault]

func declare(f fault.Fault) Fault {
	f.Kind = fault.InServer
	return Fault(faults.Add(f))
}

// Decl is the declaration of f.
func (f Fault) Decl() (fault.Fault, bool) { return faults.Lookup(string(f)) }

// Faults that break a MUST: the profile must fail exactly that requirement
// (and may fail the tolerated ones).
var (
	FaultWrongContentType = declare(fault.Fault{Name: "oh-wrong-content-type",
		Doc:   "responses are served as text/plain",
		Fails: []string{"OH-HTTP-001"}})
	FaultLatencyString = declare(fault.Fault{Name: "oh-latency-as-string",
		Doc:   "engine_latency_ms is a string (\"12ms\")",
		Fails: []string{"OH-RESP-001"}})
	FaultVersionNotSemver = declare(fault.Fault{Name: "oh-version-not-semver",
		Doc:   "the envelope's protocol_version is \"v1\", no semantic version",
		Fails: []string{"OH-VER-001"}})
	// The secrets spec's other probe (a version that is no semver) still
	// gets an error, so OH-SEC-002 and OH-ERR-004 stay checked.
	FaultAcceptsAnyVersion = declare(fault.Fault{Name: "oh-accepts-any-version",
		Doc:   "requests of any protocol major version are answered as if they were 1.x",
		Fails: []string{"OH-VER-004"}})
	FaultRejectsUnknownFields = declare(fault.Fault{Name: "oh-rejects-unknown-fields",
		Doc:   "requests carrying members the Engine does not know are refused",
		Fails: []string{"OH-EXT-001"}})
	FaultRequestIDChanged = declare(fault.Fault{Name: "oh-request-id-changed",
		Doc:   "the response's request_id is not the request's",
		Fails: []string{"OH-ID-001"}})
	FaultCorrelationIDChanged = declare(fault.Fault{Name: "oh-correlation-id-changed",
		Doc:   "the response's correlation_id is not the request's",
		Fails: []string{"OH-ID-003"}})
	FaultActsOnUnknownFields = declare(fault.Fault{Name: "oh-acts-on-unknown-fields",
		Doc:   "a request carrying members the Engine does not know is answered with success and an extra dangerous directive (simulate_action)",
		Fails: []string{"OH-EXT-001"}})
	FaultActsOnUnknownCapabilities = declare(fault.Fault{Name: "oh-acts-on-unknown-capabilities",
		Doc:   "a request asking for a capability the Engine does not know is answered with success and an extra dangerous directive that turns it on",
		Fails: []string{"OH-CAP-001"}})
	FaultRejectsUnknownCapabilities = declare(fault.Fault{Name: "oh-rejects-unknown-capabilities",
		Doc:   "a request asking for a capability the Engine does not know is refused (capability_unknown)",
		Fails: []string{"OH-CAP-001"}})
	FaultDeniesUnasked = declare(fault.Fault{Name: "oh-denies-unasked",
		Doc:   "capability_denials names a capability the request did not ask for",
		Fails: []string{"OH-CAP-002"}})
	FaultRequiresBodyToken = declare(fault.Fault{Name: "oh-requires-body-token",
		Doc:   "a request whose auth object carries no token is refused 401",
		Fails: []string{"OH-SEC-001"}})
	FaultErrorEchoesToken = declare(fault.Fault{Name: "oh-error-echoes-token",
		Doc:   "error answers repeat the request's auth object (its token) in error.details",
		Fails: []string{"OH-SEC-002"}})
	FaultErrorEchoesPII = declare(fault.Fault{Name: "oh-error-message-echoes-pii",
		Doc:   "error messages repeat the request's environment_state",
		Fails: []string{"OH-ERR-004"}})
	FaultMalformedSuccess = declare(fault.Fault{Name: "oh-malformed-answered-success",
		Doc:   "a body that is no request envelope is answered 200 success",
		Fails: []string{"OH-ERR-001"}})
	FaultErrorWithoutCode = declare(fault.Fault{Name: "oh-error-without-code",
		Doc:       "error objects carry no code",
		Fails:     []string{"OH-ERR-003"},
		Tolerated: []string{"OH-RESP-001", "OH-VER-004"},
		Why:       "the response schema requires error.code too (OH-RESP-001), and so does the version refusal (OH-VER-004)"})
	FaultEmbedsBlob = declare(fault.Fault{Name: "oh-embeds-blob",
		Doc:   "the attachment directive embeds the attachment's bytes (a data: URL) instead of referring to it",
		Fails: []string{"OH-ATT-002"}})
	FaultRiskTierUnknown = declare(fault.Fault{Name: "oh-risk-tier-unknown",
		Doc:   "the first directive's risk_tier is \"extreme\", no tier the document (and its normative schema) defines",
		Fails: []string{"OH-DIR-002"}})
	FaultDirectiveNoType = declare(fault.Fault{Name: "oh-directive-without-action-type",
		Doc:       "the first action directive has no action_type",
		Fails:     []string{"OH-DIR-001"},
		Tolerated: []string{"OH-RESP-001"},
		Why:       "the response schema includes the directive schema (OH-RESP-001)"})
)

// Faults that break a SHOULD: the profile must warn about exactly that
// requirement and fail nothing.
var (
	FaultTwoMajorsUnlisted = declare(fault.Fault{Name: "oh-two-majors-unlisted",
		Doc:   "the Engine takes majors 1 and 2 but lists no supported_protocol_versions",
		Warns: []string{"OH-VER-002"}})
	FaultAnswersOtherMajor = declare(fault.Fault{Name: "oh-answers-other-major",
		Doc:   "a 1.x request is answered with protocol_version 2.0.0",
		Warns: []string{"OH-VER-005"}})
	FaultNoRequestID = declare(fault.Fault{Name: "oh-no-request-id",
		Doc:   "responses do not echo the request's request_id",
		Warns: []string{"OH-ID-002"}})
	FaultNoCorrelationID = declare(fault.Fault{Name: "oh-no-correlation-id",
		Doc:   "responses do not echo the request's correlation_id",
		Warns: []string{"OH-ID-004"}})
	FaultVendorMember = declare(fault.Fault{Name: "oh-vendor-member",
		Doc:   "the envelope carries a vendor member outside extensions (x_engine_build)",
		Warns: []string{"OH-EXT-002"}})
	FaultBadExtensionKey = declare(fault.Fault{Name: "oh-bad-extension-key",
		Doc:   "a directive's extensions use a key that is not namespaced (\"trace\")",
		Warns: []string{"OH-EXT-003"}})
	FaultDenialWithoutCode = declare(fault.Fault{Name: "oh-denial-without-code",
		Doc:   "capability denials carry no code",
		Warns: []string{"OH-CAP-003"}})
	FaultOffersAndDenies = declare(fault.Fault{Name: "oh-offers-and-denies",
		Doc:   "a capability the request asked for is both offered and denied",
		Warns: []string{"OH-CAP-004"}})
	FaultRefusesAttachments = declare(fault.Fault{Name: "oh-refuses-attachments",
		Doc:   "requests carrying attachments are refused",
		Warns: []string{"OH-ATT-004"}})
	FaultErrorWithoutObject = declare(fault.Fault{Name: "oh-error-without-error-object",
		Doc:   "errors answered before a request envelope is read (method, credential, media type, body) carry no error object",
		Warns: []string{"OH-ERR-002"}})
)

// AllFaults lists every fault, sorted.
func AllFaults() []Fault {
	var fs []Fault
	for _, d := range faults.All() {
		fs = append(fs, Fault(d.Name))
	}
	return fs
}

// FaultDecls lists every fault's declaration, sorted by name.
func FaultDecls() []fault.Fault { return faults.All() }

// ParseFault accepts a fault's name.
func ParseFault(s string) (Fault, error) {
	if _, ok := faults.Lookup(s); ok {
		return Fault(s), nil
	}
	return "", fmt.Errorf("unknown OpenHarness fault %q (conform serve --profile openharness --list-faults lists them)", s)
}
