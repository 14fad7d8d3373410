package openharness

import (
	"fmt"
	"slices"
)

// Fault breaks the Engine on purpose, each in one requirement's way.
type Fault string

// Faults that break a MUST (the profile must fail exactly that
// requirement) and faults that break a SHOULD (it must warn).
const (
	FaultWrongContentType           Fault = "oh-wrong-content-type"            // OH-HTTP-001
	FaultLatencyString              Fault = "oh-latency-as-string"             // OH-RESP-001
	FaultVersionNotSemver           Fault = "oh-version-not-semver"            // OH-VER-001
	FaultAcceptsAnyVersion          Fault = "oh-accepts-any-version"           // OH-VER-004
	FaultRejectsUnknownFields       Fault = "oh-rejects-unknown-fields"        // OH-EXT-001
	FaultRequestIDChanged           Fault = "oh-request-id-changed"            // OH-ID-001
	FaultCorrelationIDChanged       Fault = "oh-correlation-id-changed"        // OH-ID-003
	FaultRejectsUnknownCapabilities Fault = "oh-rejects-unknown-capabilities"  // OH-CAP-001
	FaultDeniesUnasked              Fault = "oh-denies-unasked"                // OH-CAP-002
	FaultRequiresBodyToken          Fault = "oh-requires-body-token"           // OH-SEC-001
	FaultErrorEchoesToken           Fault = "oh-error-echoes-token"            // OH-SEC-002
	FaultErrorEchoesPII             Fault = "oh-error-message-echoes-pii"      // OH-ERR-004
	FaultMalformedSuccess           Fault = "oh-malformed-answered-success"    // OH-ERR-001
	FaultErrorWithoutCode           Fault = "oh-error-without-code"            // OH-ERR-003
	FaultEmbedsBlob                 Fault = "oh-embeds-blob"                   // OH-ATT-002
	FaultDirectiveNoType            Fault = "oh-directive-without-action-type" // OH-DIR-001

	FaultTwoMajorsUnlisted  Fault = "oh-two-majors-unlisted"        // OH-VER-002 (SHOULD)
	FaultAnswersOtherMajor  Fault = "oh-answers-other-major"        // OH-VER-005 (SHOULD)
	FaultNoRequestID        Fault = "oh-no-request-id"              // OH-ID-002 (SHOULD)
	FaultNoCorrelationID    Fault = "oh-no-correlation-id"          // OH-ID-004 (SHOULD)
	FaultVendorMember       Fault = "oh-vendor-member"              // OH-EXT-002 (SHOULD)
	FaultBadExtensionKey    Fault = "oh-bad-extension-key"          // OH-EXT-003 (SHOULD)
	FaultDenialWithoutCode  Fault = "oh-denial-without-code"        // OH-CAP-003 (SHOULD)
	FaultOffersAndDenies    Fault = "oh-offers-and-denies"          // OH-CAP-004 (SHOULD)
	FaultRefusesAttachments Fault = "oh-refuses-attachments"        // OH-ATT-004 (SHOULD)
	FaultRiskTierUnknown    Fault = "oh-risk-tier-unknown"          // OH-DIR-002 (SHOULD)
	FaultErrorWithoutObject Fault = "oh-error-without-error-object" // OH-ERR-002 (SHOULD)
)

// AllFaults lists every fault, sorted.
func AllFaults() []Fault {
	fs := []Fault{
		FaultWrongContentType, FaultLatencyString, FaultVersionNotSemver, FaultAcceptsAnyVersion,
		FaultRejectsUnknownFields, FaultRequestIDChanged, FaultCorrelationIDChanged, FaultRejectsUnknownCapabilities,
		FaultDeniesUnasked, FaultRequiresBodyToken, FaultErrorEchoesToken, FaultErrorEchoesPII, FaultMalformedSuccess,
		FaultErrorWithoutCode, FaultEmbedsBlob, FaultDirectiveNoType,
		FaultTwoMajorsUnlisted, FaultAnswersOtherMajor, FaultNoRequestID, FaultNoCorrelationID, FaultVendorMember,
		FaultBadExtensionKey, FaultDenialWithoutCode, FaultOffersAndDenies, FaultRefusesAttachments, FaultRiskTierUnknown,
		FaultErrorWithoutObject,
	}
	slices.Sort(fs)
	return fs
}

// ParseFault accepts a fault's name.
func ParseFault(s string) (Fault, error) {
	f := Fault(s)
	if slices.Contains(AllFaults(), f) {
		return f, nil
	}
	return "", fmt.Errorf("unknown OpenHarness fault %q (conform serve --profile openharness -h lists them)", s)
}
