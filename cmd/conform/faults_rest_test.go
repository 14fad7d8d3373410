package main

import (
	"testing"

	"github.com/harn-conform/conform/refharness"
)

// REST-surface faults of the Core level: each must fail exactly the
// requirements it names. Where a fault breaks one behaviour that several
// requirements observe from different sides (an ignored Idempotency-Key
// breaks every retry check), every one of them is listed.
var restFaults = []faultCase{
	{Fault: refharness.FaultAcceptMissingKey, Fails: []string{"CORE-AUTH-001"}},
	{Fault: refharness.FaultAcceptAnyKey, Fails: []string{"CORE-AUTH-003"}},
	{Fault: refharness.FaultEchoKeyInError, Fails: []string{"CORE-AUTH-004"}},
	{Fault: refharness.FaultForgetIdempotency, Fails: []string{"CORE-IDEM-001", "CORE-IDEM-002", "CORE-IDEM-003", "CORE-IDEM-004", "CORE-IDEM-005"}},
	{Fault: refharness.FaultIdempotencyNoConflict, Fails: []string{"CORE-IDEM-002", "CORE-IDEM-005"}},
	{Fault: refharness.FaultDuplicateOnConcurrentRetry, Fails: []string{"CORE-IDEM-003"}},
	{Fault: refharness.FaultWrongCreateStatus, Fails: []string{"CORE-TASK-001", "CORE-TASK-002", "CORE-READ-010", "CORE-READ-011"}},
	{Fault: refharness.FaultErrorWithoutEnvelope, Fails: []string{"CORE-ERR-002"}},
	{Fault: refharness.FaultWrongErrorType, Fails: []string{"CORE-ERR-003"}},
	{Fault: refharness.FaultNotFoundAs400, Fails: []string{"CORE-ERR-001"}},
	{Fault: refharness.FaultUnknownRouteNot404, Fails: []string{"CORE-ERR-001"}},
	{Fault: refharness.FaultNo413, Fails: []string{"CORE-ERR-006"}},
	// The harness breaks event ranges the same way; the event checks see it.
	{Fault: refharness.FaultLimitIgnored, Fails: []string{"CORE-PAGE-002"}, Tolerated: []string{"CORE-EVT-004"}},
	{Fault: refharness.FaultPaginationRepeats, Fails: []string{"CORE-PAGE-003"}, Tolerated: []string{"CORE-EVT-004"}},
	{Fault: refharness.FaultNonUTCTimestamps, Fails: []string{"CORE-READ-002"}},
	{Fault: refharness.FaultWrongObjectField, Fails: []string{"CORE-READ-003", "CORE-DISC-001", "CORE-CARD-001"}},
	{Fault: refharness.FaultMissingRequiredField, Fails: []string{"CORE-READ-004"}},
	{Fault: refharness.FaultIDsNotStable, Fails: []string{"CORE-ID-001", "CORE-ID-002"}},
	{Fault: refharness.FaultPublicNeedsVersion, Fails: []string{"CORE-VER-004"}},
	{Fault: refharness.FaultAcceptMalformedAuth, Fails: []string{"CORE-AUTH-002"}},
	{Fault: refharness.FaultSessionNoMetadata, Fails: []string{"CORE-READ-001"}},
	{Fault: refharness.FaultSessionNoTranscript, Fails: []string{"CORE-READ-005"}},
	{Fault: refharness.FaultPartNoVisibility, Fails: []string{"CORE-READ-006"}},
	{Fault: refharness.FaultArtifactSHAPrefixed, Fails: []string{"CORE-READ-007"}},
	{Fault: refharness.FaultOutcomeNotListed, Fails: []string{"CORE-READ-008"}},
	{Fault: refharness.FaultMessageNotReadable, Fails: []string{"CORE-READ-011"}},
	{Fault: refharness.FaultEventByIDDiffers, Fails: []string{"CORE-READ-014"}},
	{Fault: refharness.FaultTaskListIgnoresSession, Fails: []string{"CORE-TASK-003"}},
	{Fault: refharness.FaultIdempotencyIgnoresTarget, Fails: []string{"CORE-IDEM-007"}},
	{Fault: refharness.FaultMalformedJSONAs500, Fails: []string{"CORE-ERR-004"}},
	// Breadth (issue 9).
	{Fault: refharness.FaultEventsNotScoped, Fails: []string{"CORE-EVT-005"}},
	{Fault: refharness.FaultEventIDsNotMonotonic, Fails: []string{"CORE-EVT-006"}},
	{Fault: refharness.FaultTerminalAcceptsMessage, Fails: []string{"CORE-LIFE-004"}},
	{Fault: refharness.FaultIdempotencyByteCompare, Fails: []string{"CORE-IDEM-001"}},
}

func TestRESTFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range restFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertFaultRow(t, "core", tc)
		})
	}
}

// Faults that break a SHOULD: the suite must warn about exactly that
// requirement and fail nothing.
var restShouldFaults = []struct {
	Fault refharness.Fault
	Warns string
}{
	{refharness.FaultNoSupportedVersions, "CORE-VER-003"},
	{refharness.FaultNoParamOnBadRequest, "CORE-ERR-005"},
	{refharness.FaultIdempotencyKeyLength, "CORE-IDEM-006"},
}

func TestRESTShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range restShouldFaults {
		t.Run(string(tc.Fault), func(t *testing.T) {
			assertShouldRow(t, "core-should", tc)
		})
	}
}

var restVariants = []refharness.Variant{refharness.VariantExtraFields, refharness.VariantReorderedKeys}

func TestRESTVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range restVariants {
		t.Run(string(v), func(t *testing.T) {
			assertVariantPasses(t, v, "core")
		})
	}
}

// Some Core MUSTs have no fault in the reference Harness. These rows break
// the behaviour from outside instead: a middleware in front of an
// unmodified harness (package wrapfault, by the row's name) rewrites one
// thing in requests or answers. Each row still has to fail exactly its
// requirements.
type wrapFault struct {
	Name      string
	Fails     []string
	Tolerated []string
}

var restWrapFaults = []wrapFault{
	{Name: "lists-without-page", Fails: []string{"CORE-PAGE-001"}, Tolerated: []string{"CORE-EVT-004"}}, // the event-range walk reads lists too
	{Name: "messages-reversed", Fails: []string{"CORE-READ-012"}},
	{Name: "content-not-matching-sha256", Fails: []string{"CORE-READ-013"}},
}

func TestRESTWrappedFaultsCaught(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range restWrapFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapRow(t, "core", tc)
		})
	}
}

// SHOULD-level behaviour broken from outside (package wrapfault, by name):
// each must earn a warning for exactly its requirement and fail nothing.
var restWrapShouldFaults = []struct {
	Name  string
	Warns string
}{
	{"unknown-session-state", "CORE-READ-009"},
	{"bare-a2a-card", "CORE-CARD-002"},
	// docs/interpretations.md#a2a-card: the A2A card declares how to authenticate.
	{"a2a-card-without-security", "CORE-CARD-002"},
	{"card-claims-replay", "CORE-CARD-003"},
}

func TestRESTWrappedShouldFaultsWarn(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, tc := range restWrapShouldFaults {
		t.Run(tc.Name, func(t *testing.T) {
			assertWrapShouldRow(t, "core-should", tc)
		})
	}
}

// Legal but unusual REST behaviour the reference Harness has no variant
// for, put in front of it by a middleware (package wrapfault, by name): the
// suite must pass all of it.
var restWrapVariants = []string{
	"clamped-limit",       // out-of-range limits clamped instead of refused
	"replay-answers-200",  // an idempotent replay answered 200 rather than the first 201/202
	"param-json-pointer",  // error.param as a JSON Pointer
	"utc-spellings",       // UTC spelled +00:00 and with lower-case t and z
	"no-workspace-create", // clients may not create workspaces; one exists already
	noRegistrationWrap,    // no artifact registration (Extended): Core reads the artifacts the run makes by other means
}

// noRegistrationWrap answers 404 to POST /v1/artifacts: a Core server
// without artifact registration, which is Extended. noArtifactsWrap also
// hides every artifact the harness has (lists, Outcomes).
const (
	noRegistrationWrap = "no-artifact-registration"
	noArtifactsWrap    = "no-artifacts-shown"
)

func TestRESTWrappedVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, name := range restWrapVariants {
		t.Run(name, func(t *testing.T) {
			assertClean(t, name, wrapped(name), "core")
		})
	}
}
