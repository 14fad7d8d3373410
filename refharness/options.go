package refharness

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync"
	"time"
)

// ProtocolVersion is the only protocol version this harness speaks.
const ProtocolVersion = "agents-protocol-2026-04-25"

// VersionHeader carries the protocol version on every non-public request.
const VersionHeader = "Harn-Agents-Protocol-Version"

// Options configures a Server. The zero value is a working in-memory harness
// that accepts no API keys (every authenticated route answers 401).
type Options struct {
	// DataDir holds the event log; "" keeps everything in memory.
	DataDir string
	// APIKeys maps an API key to the actor id it authenticates.
	APIKeys map[string]string
	// Clock returns the current time; nil means time.Now. Output is always UTC.
	Clock func() time.Time
	// IDs mints resource ids; nil means kind-prefixed random ids that are never reused.
	IDs IDSource
	// MaxBodyBytes bounds request bodies; 0 means 1 MiB. Larger bodies get 413.
	MaxBodyBytes int64
	// Faults breaks named requirements on purpose, for self-tests only.
	Faults Faults
	// Variants turns on legal-but-unusual behaviours a conformance suite must accept.
	Variants Variants
	// EventRetention is how many of the most recent events stay readable and
	// usable as resume cursors; older cursors get cursor_expired. 0 means all.
	EventRetention int
	// KeepAlive is the interval of SSE keep-alive comments; 0 means 15 s.
	KeepAlive time.Duration
	// IdempotencyTTL is how long idempotency records are honoured; 0 means 24 h.
	// Values below 24 h are raised to 24 h, the protocol's minimum.
	IdempotencyTTL time.Duration
	// Tenants puts actors in a tenant (actor -> tenant id); an actor not
	// listed is a tenant of its own. A caller sees only its tenant's
	// resources (authz.go).
	Tenants map[string]string
	// ReadOnly lists actors that may read what their tenant sees but not
	// change anything: their writes get 403 permission_denied (authz.go).
	ReadOnly map[string]bool
}

// IDSource mints unique ids. kind is the resource kind ("task", "session", …).
type IDSource interface{ NewID(kind string) string }

// randomIDs is the default IDSource: kind + "_" + 48-bit millisecond time +
// 80 random bits in Crockford base32, like a ULID. Ids sort by creation time
// and, with 80 random bits, are not reused across restarts.
type randomIDs struct{ clock func() time.Time }

const crockford = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"

func (r randomIDs) NewID(kind string) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[0:8], uint64(r.clock().UnixMilli())<<16)
	if _, err := rand.Read(b[6:16]); err != nil {
		panic("refharness: crypto/rand failed: " + err.Error()) // the OS random source is gone; nothing is safe
	}
	// 128 bits -> 26 base32 characters.
	hi := binary.BigEndian.Uint64(b[0:8])
	lo := binary.BigEndian.Uint64(b[8:16])
	out := make([]byte, 26)
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return kind + "_" + string(out)
}

// SeqIDs is a deterministic IDSource for tests and golden files: kind_000001,
// kind_000002, … with one counter per kind. Its counters start over when a
// server restarts over an existing DataDir; the server then skips ids that are
// already taken, so none is recycled.
type SeqIDs struct {
	mu sync.Mutex
	n  map[string]int
}

// NewID implements IDSource.
func (s *SeqIDs) NewID(kind string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[string]int{}
	}
	s.n[kind]++
	return fmt.Sprintf("%s_%06d", kind, s.n[kind])
}

// Fault names one requirement the server breaks on purpose.
type Fault string

// Faults is a set of faults; the zero value breaks nothing.
type Faults map[Fault]bool

// Has reports whether f is on.
func (fs Faults) Has(f Fault) bool { return fs[f] }

// The faults. Each breaks exactly one behaviour and nothing else.
const (
	FaultSkipVersionCheck           Fault = "skip-version-check"            // missing/unsupported version header accepted instead of 426
	FaultNoSupportedVersions        Fault = "no-supported-versions"         // 426 body does not list the supported versions (no details, message names none)
	FaultAcceptMissingKey           Fault = "accept-missing-key"            // a request without Authorization is served
	FaultAcceptAnyKey               Fault = "accept-any-key"                // an unknown API key is accepted (missing still 401)
	FaultEchoKeyInError             Fault = "echo-key-in-error"             // the 401 message repeats the presented key
	FaultForgetIdempotency          Fault = "forget-idempotency"            // Idempotency-Key ignored: retries create duplicates
	FaultIdempotencyNoConflict      Fault = "idempotency-no-conflict"       // same key + different body replays the first response instead of 409
	FaultDuplicateOnConcurrentRetry Fault = "duplicate-on-concurrent-retry" // concurrent retries race and create duplicates; sequential retries work
	FaultDropSSEID                  Fault = "drop-sse-id"                   // SSE frames lack the id: line
	FaultIgnoreLastEventID          Fault = "ignore-last-event-id"          // resume replays the stream from its start
	FaultResumeRepeatsEvent         Fault = "resume-repeats-event"          // resume re-sends the Last-Event-ID event itself
	FaultNoCursorExpiredFrame       Fault = "no-cursor-expired-frame"       // an expired/unknown cursor streams from the start, no error frame
	FaultTerminalTaskMutable        Fault = "terminal-task-mutable"         // cancel moves a COMPLETED/FAILED task to CANCELED
	FaultCompletedAfterCancel       Fault = "completed-after-cancel"        // a canceled task is later overwritten with COMPLETED
	FaultCanceledHasCompletedAt     Fault = "canceled-has-completed-at"     // a CANCELED task carries completed_at
	FaultSkipTransitionEvent        Fault = "skip-transition-event"         // SUBMITTED->WORKING emits no task event
	FaultIllegalTransition          Fault = "illegal-transition"            // tasks jump SUBMITTED->COMPLETED without WORKING
	FaultWrongCreateStatus          Fault = "wrong-create-status"           // creates answer 200 instead of 201/202
	FaultErrorWithoutEnvelope       Fault = "error-without-envelope"        // errors are plain text, not the error envelope
	FaultWrongErrorType             Fault = "wrong-error-type"              // error.type does not match error.code
	FaultNotFoundAs400              Fault = "not-found-as-400"              // missing resources answer 400 invalid_request instead of 404
	FaultNoParamOnBadRequest        Fault = "no-param-on-bad-request"       // 400 errors omit error.param
	FaultNo413                      Fault = "no-413"                        // bodies over the limit are accepted
	FaultLimitIgnored               Fault = "limit-ignored"                 // list ?limit= is ignored (default page size used)
	FaultPaginationRepeats          Fault = "pagination-repeats"            // each next page repeats the last item of the previous page
	FaultNonUTCTimestamps           Fault = "non-utc-timestamps"            // timestamps rendered with a +02:00 offset
	FaultWrongObjectField           Fault = "wrong-object-field"            // resources carry a wrong "object" discriminator
	FaultSequenceNotIncreasing      Fault = "sequence-not-increasing"       // per-resource event sequence repeats
	FaultSSEWrongContentType        Fault = "sse-wrong-content-type"        // streams are served as text/plain
	FaultSSEDataNotJSON             Fault = "sse-data-not-json"             // SSE data: is not a JSON Event
	FaultSSEPayloadDrift            Fault = "sse-payload-drift"             // SSE frames carry agent.message events with payload.text changed (ids, kinds and order kept; REST and WebSocket unchanged): only transport parity (EXT-TRANSPORT-004) can see it
	FaultOutcomeUsesTaskStatus      Fault = "outcome-uses-task-status"      // Outcome.status uses the task enum (COMPLETED) instead of SUCCEEDED
	FaultMissingRequiredField       Fault = "missing-required-field"        // Task objects lack created_by
	FaultIDsNotStable               Fault = "ids-not-stable"                // GET /v1/tasks/{id} answers with a different id each time
	FaultUnknownRouteNot404         Fault = "unknown-route-not-404"         // unknown routes answer 200 with an empty object
	FaultEventsRepeatOnRange        Fault = "events-ignore-after-event-id"  // REST event lists ignore after_event_id
	FaultPublicNeedsVersion         Fault = "public-needs-version"          // GET /v1 and /v1/agent-card answer 426 without the version header
	FaultAcceptMalformedAuth        Fault = "accept-malformed-auth"         // an Authorization header that is not a Bearer credential is accepted
	FaultSessionNoMetadata          Fault = "session-no-metadata"           // Session objects lack the envelope's metadata
	FaultSessionNoTranscript        Fault = "session-no-transcript"         // Session objects lack transcript
	FaultPartNoVisibility           Fault = "part-no-visibility"            // message parts are rendered without visibility
	FaultArtifactSHAPrefixed        Fault = "artifact-sha-prefixed"         // Artifact.sha256 carries a "sha256:" prefix instead of bare hex
	FaultOutcomeNotListed           Fault = "outcome-not-listed"            // GET /v1/outcomes is always empty (outcomes still readable by id)
	FaultMessageNotReadable         Fault = "message-not-readable"          // GET /v1/messages/{id} answers 404 for appended messages
	FaultTaskListIgnoresSession     Fault = "task-list-ignores-session"     // GET /v1/tasks ignores ?session_id=
	FaultIdempotencyIgnoresTarget   Fault = "idempotency-ignores-target"    // idempotency scope ignores the target: a key reused on another path conflicts
	FaultMalformedJSONAs500         Fault = "malformed-json-500"            // a body that is not JSON answers 500 internal_error instead of 400
	FaultEventByIDDiffers           Fault = "event-by-id-differs"           // GET /v1/events/{id} answers the event with an empty payload
	FaultIdempotencyKeyLength       Fault = "idempotency-key-length"        // Idempotency-Key length is not checked (empty or >255 accepted)

	// Receipt faults (receipts.go).
	FaultReceiptHashCorrupt    Fault = "receipt-hash-corrupt"        // a receipt is changed after sealing: its stored hash no longer matches
	FaultReceiptChainBroken    Fault = "receipt-chain-broken"        // previous_receipt_hash names no receipt (the hash of the previous hash)
	FaultReceiptWrongKey       Fault = "receipt-wrong-key"           // receipts are signed with a key the directory does not publish
	FaultReceiptLeaksSecret    Fault = "receipt-leaks-secret"        // a use_secret step's secret is written into the receipt
	FaultReceiptRefDropped     Fault = "receipt-ref-dropped"         // a terminal Task's receipt_id stays null
	FaultVerifyAlwaysValid     Fault = "receipt-verify-always-valid" // POST /v1/receipts/{id}/verify always answers valid
	FaultReceiptUnknownField   Fault = "receipt-unknown-field"       // receipts carry a top-level member the closed schema forbids
	FaultRedactionWithoutProof Fault = "redaction-without-proof"     // redactions entries lack proof_hash
	FaultReceiptEventNoID      Fault = "receipt-event-no-id"         // receipt.issued events do not say which receipt
	FaultReceiptWrongState     Fault = "receipt-wrong-final-state"   // every receipt says final_state SUCCEEDED
	FaultReceiptWrongIDs       Fault = "receipt-wrong-identifiers"   // identifiers.workspace_ref names another workspace
	FaultReceiptWrongSubject   Fault = "receipt-wrong-subject"       // subject names the task's session as if it were the task
	FaultReceiptUpperHash      Fault = "receipt-hash-uppercase"      // receipt hashes are written in upper-case hex (and signed so)
	FaultEventLeaksSecret      Fault = "event-leaks-secret"          // a use_secret step's secret appears in its tool.requested event
	FaultReceiptLeaksAPIKey    Fault = "receipt-leaks-api-key"       // receipts name the API key of the task's creator in metadata
	FaultReceiptIDMismatch     Fault = "receipt-id-mismatch"         // a receipt document's receipt_id is not the id it is served and referenced by
	FaultReceiptLeaksBearer    Fault = "receipt-leaks-bearer"        // receipts keep the agent's upstream bearer token in a debug note
)

// Trust faults (issue 9): behaviours the suite once passed without the
// scenario hook, or let run to every timeout.
const (
	FaultCancelNoop      Fault = "cancel-noop"         // cancel of a running task answers 200 with the task and does nothing
	FaultLowercaseStatus Fault = "lowercase-status"    // task statuses are spelled in lower case (task objects and state event payloads)
	FaultPlainSkipsWork  Fault = "plain-skips-working" // plain tasks jump SUBMITTED -> COMPLETED; task.completed names no previous status
	// Enforcement on /v1/tasks only: a suite that probed only there passed these.
	FaultAuthOnlyOnTasks    Fault = "auth-only-on-tasks"         // requests without Authorization are served everywhere but under /v1/tasks
	FaultVersionOnlyOnTasks Fault = "version-only-on-tasks"      // the version header is checked only under /v1/tasks
	FaultClosedTakesTasks   Fault = "closed-session-takes-tasks" // a CLOSED session still accepts new tasks
)

// Receipt content and signing faults (receipts.go), issue 9.
const (
	FaultReceiptCostInconsistent Fault = "receipt-cost-inconsistent"     // cost.provider_breakdown adds up to more than cost.total
	FaultReceiptDropsArtifacts   Fault = "receipt-drops-final-artifacts" // final_artifacts is empty although the task produced artifacts
	FaultReceiptSignsDigest      Fault = "receipt-signs-raw-digest"      // signatures cover the raw 32-byte digest, neither documented signing input
)

// Breadth faults (issue 9).
const (
	FaultEventsNotScoped        Fault = "events-not-scoped"        // a task's event list and stream also carry the other tasks' events of its session
	FaultEventIDsNotMonotonic   Fault = "event-ids-not-monotonic"  // event ids of adjacent positions are swapped (…2, …1, …4, …3), consistently in rendering and parsing
	FaultTerminalAcceptsMessage Fault = "terminal-accepts-message" // input and interrupt messages to a terminal task answer 201; input moves it back to WORKING
	FaultIdempotencyByteCompare Fault = "idempotency-byte-compare" // retries are compared by raw body bytes: an equivalent body with reordered keys gets 409
)

// Agent card signing faults (card.go), issue 10: each breaks the card's
// signature under harn-card-sig.v1 (docs/card-signing.md) one way.
const (
	FaultCardUnsigned       Fault = "card-unsigned"            // the agent card carries no signature
	FaultCardSignatureStale Fault = "card-signature-stale"     // the card is edited after signing: its signature no longer verifies
	FaultCardSignsRawJSON   Fault = "card-signs-raw-json"      // the card is signed over its indented JSON text, not its RFC 8785 canonical bytes
	FaultCardNoKeyID        Fault = "card-signature-no-key-id" // the card's signature object names no key_id (the signature itself is right)
)

// OAuth2 faults (oauth.go), issue 10: each breaks one EXT-OAUTH requirement.
const (
	FaultOAuthAcceptsExpired   Fault = "oauth-accepts-expired"     // access tokens are accepted after their exp
	FaultOAuthIgnoresAudience  Fault = "oauth-ignores-audience"    // access tokens minted for another audience are accepted
	FaultOAuthIgnoresIssuer    Fault = "oauth-ignores-issuer"      // a token the harness's key signed is accepted whatever its iss (the shared-key multi-issuer mistake)
	FaultOAuthSkipsSignature   Fault = "oauth-skips-signature"     // access token signatures are not verified: a token with edited claims is accepted
	FaultOAuthReadsIgnoreScope Fault = "oauth-reads-ignore-scopes" // reads (GET) take any valid access token whatever its scope; writes still need theirs
	FaultOAuthNotOnStreams     Fault = "oauth-not-on-streams"      // SSE streams refuse access tokens (401) and take only API keys
	FaultOAuthReadScopeWrites  Fault = "oauth-read-scope-writes"   // a resource's read scope also grants its writes (a SHOULD: scopes name resource actions)
)

// Extended faults of personas, workspaces, sessions, branches, artifacts
// and skills (personas.go, branches.go), issue 10: each breaks one
// EXT-PERSONA/WORKSPACE/SESSION/BRANCH/ARTIFACT/IDEM/SKILL requirement.
const (
	FaultPersonaPatchLost           Fault = "persona-patch-lost"           // PATCH /v1/personas/{id} answers the change but does not store it
	FaultPersonaToolsIgnored        Fault = "persona-tools-ignored"        // tasks run tools and capabilities their Persona does not grant
	FaultPersonaApprovalSkipped     Fault = "persona-approval-skipped"     // under act_with_approval a tool runs without waiting for an approval
	FaultPersonaShadowActs          Fault = "persona-shadow-acts"          // under shadow and suggest a tool's side effect is carried out
	FaultPersonaReceiptSkipped      Fault = "persona-receipt-skipped"      // tasks naming a Persona whose receipt_policy is required end without a receipt
	FaultWorkspacePatchLost         Fault = "workspace-patch-lost"         // PATCH /v1/workspaces/{id} answers the change but does not store it
	FaultBranchWrongWorkspace       Fault = "branch-wrong-workspace"       // branches name a workspace_id other than their session's
	FaultMessagesNewestFirst        Fault = "messages-newest-first"        // a session's message list is served newest first
	FaultTruncateKeepsTurns         Fault = "truncate-keeps-turns"         // truncate answers its counts but removes no message
	FaultForkSharesTranscript       Fault = "fork-shares-transcript"       // a fork reads its parent's live transcript, so truncating the parent empties the fork (a SHOULD)
	FaultBranchNotListed            Fault = "branch-not-listed"            // GET /v1/sessions/{id}/branches is always empty (branches still readable by id)
	FaultTaskBranchDropped          Fault = "task-branch-dropped"          // a task submitted with branch_id stores branch_id null
	FaultArtifactDigestUnchecked    Fault = "artifact-digest-unchecked"    // an upload whose sha256 does not match its bytes is stored with the stated hash
	FaultArtifactIdempotencyIgnored Fault = "artifact-idempotency-ignored" // POST /v1/artifacts ignores Idempotency-Key: a retry registers a second artifact
	FaultExtIdempotencyIgnored      Fault = "ext-idempotency-ignored"      // persona create/patch, branch create, fork and truncate ignore Idempotency-Key
	FaultApprovalIdempotencyIgnored Fault = "approval-idempotency-ignored" // a retried tool_confirmation with the same Idempotency-Key is recorded twice
	FaultSkillSchemaNotObject       Fault = "skill-schema-not-object"      // skills render output_schema as a string, not a JSON Schema object or null
)

// Faults of memories.go, vaults.go, quotas.go and connectors.go (issue 10):
// each breaks one EXT-MEMORY, EXT-VAULT, EXT-QUOTA, EXT-CONNECTOR or
// EXT-AUTHZ requirement. AllFaults lists them.
const (
	FaultMemoryDeleteKeeps     Fault = "memory-delete-keeps"               // DELETE /v1/memories/{id} answers 204 but the memory stays readable and listed
	FaultMemoryInTranscript    Fault = "memory-in-transcript"              // a session-scoped memory is also appended to the session as a system message
	FaultVaultNotReadable      Fault = "vault-not-readable"                // GET /v1/vaults/{id} answers 404 for the vaults it created (they are still listed)
	FaultVaultReadLeaks        Fault = "vault-read-leaks"                  // GET /v1/vaults/{id} shows the vault's stored secret values
	FaultVaultSecretInEvent    Fault = "vault-secret-in-event"             // a use_vault_secret step's tool.requested event carries the secret value
	FaultVaultPolicyIgnored    Fault = "vault-policy-ignored"              // use_vault_secret uses a vault's secret although the vault's capabilities do not allow "use"
	FaultQuotaNotListed        Fault = "quota-not-listed"                  // GET /v1/quotas is always empty (quotas still readable by id)
	FaultQuotaCheckedLate      Fault = "quota-checked-late"                // an exhausted hard quota stops a task only after it started working
	FaultQuotaRefusedAs409     Fault = "quota-refused-as-409"              // an exhausted hard quota refuses a submit with 409 conflict instead of a policy or rate-limit refusal
	FaultConnectorNotReadable  Fault = "connector-not-readable"            // GET /v1/connectors/{id} answers 404 (connectors are still listed)
	FaultConnectorNoDedupe     Fault = "connector-no-dedupe"               // a redelivered provider delivery submits a second task (its dedupe key is still reported)
	FaultConnectorKeyIgnoresID Fault = "connector-key-ignores-delivery-id" // the dedupe key is the connector and event kind, so distinct deliveries are deduplicated too
	FaultConnectorTaskNoKey    Fault = "connector-task-no-key"             // connector tasks carry no idempotency key (a SHOULD: EXT-CONNECTOR-004)
)

// Authorization faults (authz.go), issue 10: each breaks one of
// EXT-AUTHZ-001, -002, -008, -009 (the tenancy of a second actor).
const (
	FaultAuthzCrossTenantReads        Fault = "authz-cross-tenant-reads"        // another tenant's resources are served to reads by id (GET, streams, content)
	FaultAuthzCrossTenantWrites       Fault = "authz-cross-tenant-writes"       // writes naming another tenant's resources (path or body) are carried out
	FaultAuthzListsLeak               Fault = "authz-lists-leak"                // lists, event ranges and the global stream include other tenants' resources
	FaultAuthzHiddenAs403             Fault = "authz-hidden-as-403"             // another tenant's resource answers 403 permission_denied, an unknown id 404: existence leaks
	FaultAuthzActorNotBound           Fault = "authz-actor-not-bound"           // every write is attributed to actor_default (created_by, event actor), whoever's key made it
	FaultAuthzRefusalEchoesCredential Fault = "authz-refusal-echoes-credential" // authorization refusals repeat the caller's Authorization header in error.details
	FaultAuthzReadOnlyWrites          Fault = "authz-read-only-writes"          // a read-only actor's writes are carried out
)

// Faults of host-mediated authorization, events, transports and the local
// server's routes (permissions.go, local.go, hostev.go), issue 10: each
// breaks one EXT-HOST, EXT-AUTHZ-007, EXT-IDEM-002, EXT-EVENT,
// EXT-TRANSPORT or EXT-LOCAL requirement.
const (
	FaultPermissionAnswerLost         Fault = "permission-answer-lost"                 // respondPermissionRequest answers 200 and records the decision, but the waiting task never receives it
	FaultPermissionNotListed          Fault = "permission-request-not-listed"          // a task waiting for an approval opens no permission request: the lists stay empty
	FaultApprovalDenialIgnored        Fault = "approval-denial-ignored"                // a denied tool approval runs the tool anyway (tool.approved, the side effect)
	FaultPermissionIdempotencyIgnored Fault = "permission-respond-idempotency-ignored" // respondPermissionRequest ignores Idempotency-Key: the retry of an answer is refused 409
	FaultVendorEventUnprefixed        Fault = "vendor-event-unprefixed"                // the workspace-file vendor event is named without a vendor prefix (a SHOULD)
	FaultToolResultUnpaired           Fault = "tool-result-unpaired"                   // agent.tool_result names a tool call id other than its agent.tool_use's (a SHOULD)
	FaultSpanUncorrelated             Fault = "span-uncorrelated"                      // a tool call's span events share no correlation id with its tool events (a MAY's condition)
	FaultInputRefusedWhileStreaming   Fault = "input-refused-while-streaming"          // while a task's SSE stream is open, REST input and cancel for it are refused 423 resource_locked
	FaultCardAdvertisesWebSocket      Fault = "card-advertises-websocket"              // the agent card lists a websocket interface on the global feed /v1/events/stream, which serves no WebSocket
	FaultLocalRuntimeMisshapen        Fault = "local-runtime-misshapen"                // GET /v1/runtime omits adapter and reports a negative session_count
)

// Privacy and redaction faults (privacy.go), issue 10: each breaks one of
// EXT-PRIV-001..004; and the persona quota (quotas.go), EXT-PERSONA-005.
const (
	FaultPrivMarkedPublic      Fault = "priv-marked-public"       // internal and receipt_only parts and artifacts are stored, and read back, as public
	FaultPrivReceiptOnlyServed Fault = "priv-receipt-only-served" // receipt_only parts keep their content in message reads, lists and task inputs
	FaultPrivInternalInEvent   Fault = "priv-internal-in-event"   // the agent.message event of an internal message carries its text
	FaultPrivSecretInPart      Fault = "priv-secret-in-part"      // after a use_secret step the agent names the credential in a public message part
	FaultPrivReasoningExposed  Fault = "priv-reasoning-exposed"   // a reason step publishes the hidden reasoning itself as agent.reasoning_summary
	FaultPrivRedactionDeletes  Fault = "priv-redaction-deletes"   // a redact step deletes the artifact (404 by id, gone from lists) instead of redacting it
	FaultPrivRedactionSilent   Fault = "priv-redaction-silent"    // a redact step redacts the artifact but emits no artifact.redacted event
	FaultQuotaIgnoresPersona   Fault = "quota-ignores-persona"    // persona-scoped quotas are shown but not enforced on the tasks naming the persona
)

// WebSocket faults (package wsadapter, core.go, hostev.go), issue 11:
// each breaks one EXT-WS requirement of the harn-ws.v1 profile
// (docs/websocket.md). They act only where the adapter is mounted.
const (
	FaultWSUpgradeUnauthenticated Fault = "ws-upgrade-unauthenticated" // an upgrade with a wrong Authorization header, or a wrong credential in the auth frame, still gets ready and events
	FaultWSAdvertisesPlainRemote  Fault = "ws-advertises-plain-remote" // the agent card lists a websocket interface with a ws:// URL on a non-loopback host
	FaultWSBinaryEventFrames      Fault = "ws-binary-event-frames"     // event frames are sent as binary messages (same bytes)
	FaultWSMessageNotAppended     Fault = "ws-message-not-appended"    // user_message answers 201 with a Message-shaped body, but nothing is appended
	FaultWSCancelIgnored          Fault = "ws-cancel-ignored"          // cancel_task answers 200 with the task but does not cancel it
	FaultWSTruncateKeepsAll       Fault = "ws-truncate-keeps-all"      // truncate_session answers 200 but keeps every turn and emits nothing
	FaultWSEventFrameDiffers      Fault = "ws-event-frame-differs"     // event frames carry the Event with its payload emptied (event_id still right)
	FaultWSNoInputRequest         Fault = "ws-no-input-request"        // no input_request frame when a task waits for input (authorization requests unchanged)
	FaultWSApprovalAnswerIgnored  Fault = "ws-approval-answer-ignored" // an approval_response approved:true is answered result, and the tool call is denied
	FaultWSResumeSkipsEvent       Fault = "ws-resume-skips-event"      // a delivery run from a cursor (connect or resume) skips the first event after it
	FaultWSNoHeartbeat            Fault = "ws-no-heartbeat"            // no ping frames
	FaultWSReplayedUnmarked       Fault = "ws-replayed-unmarked"       // frames delivered from history carry replayed:false
	FaultWSIdempotencyIgnored     Fault = "ws-idempotency-ignored"     // a command's idempotency_key is ignored: a repeat acts twice
)

// Replay faults (replay*.go, events.go), issue 12: each breaks one RPLY
// requirement of the Replay level (docs/replay.md; the suite's rows are
// cmd/conform/faults_replay_test.go).
const (
	FaultReplayRangeSkips          Fault = "replay-range-skips"           // an event list (task, session or global) read with after_event_id omits the first event that follows the cursor
	FaultReplayRangeUnstable       Fault = "replay-range-unstable"        // a repeated read of the same range returns the events with a payload member (payload.read_count) that changes per read
	FaultReplayCursorUnknownEmpty  Fault = "replay-cursor-unknown-empty"  // an unknown after_event_id answers 200 with an empty list instead of 410 cursor_expired
	FaultReplayAnswers201          Fault = "replay-answers-201"           // POST /replay answers 201 instead of 202
	FaultReplayNoParent            Fault = "replay-no-parent"             // later reads of the replay task show parent_task_id null (the 202 answer still has it)
	FaultReplayNewSession          Fault = "replay-new-session"           // the replay task is put in a new session (no branch lineage)
	FaultReplaySkipsStarted        Fault = "replay-skips-started"         // the replay task goes SUBMITTED -> COMPLETED without task.started
	FaultReplayBodyRequired        Fault = "replay-body-required"         // a replay request with no body (or {}) is refused 400
	FaultReplayTaskModeExact       Fault = "replay-task-mode-exact"       // the replay Task's metadata.replay.mode is always "exact" (events still carry the right mode)
	FaultReplayExactRefreshes      Fault = "replay-exact-refreshes"       // exact replay of material not retained makes up a fresh value and completes instead of failing
	FaultReplayOverridesIgnored    Fault = "replay-overrides-ignored"     // with_overrides replays the recorded material (deltas still written)
	FaultReplayCheckpointUnchecked Fault = "replay-checkpoint-unchecked"  // from_checkpoint without checkpoint_id/checkpoint_event_id is accepted (202, replays from the start)
	FaultReplayCheckpointIgnored   Fault = "replay-checkpoint-ignored"    // a valid from_checkpoint replays from the start of the source log
	FaultReplayOverrideUnstable    Fault = "replay-override-unstable"     // an overridden model response's text gets the replay task id appended (differs per replay)
	FaultReplayKeysUnstable        Fault = "replay-keys-unstable"         // model call override keys embed the task id (llm:<task id>:<call_id>): they differ per run (a SHOULD)
	FaultReplayKeysNonstandard     Fault = "replay-keys-nonstandard"      // model call override keys are model:<call_id> instead of llm:<call_id> (a SHOULD)
	FaultReplaySecretOverrideLeaks Fault = "replay-secret-override-leaks" // a secret override's value appears in the replayed secret_read event payload (a SHOULD)
	FaultReplayLogReordered        Fault = "replay-log-reordered"         // replayed events are emitted in reverse source order
	FaultReplayMetaNoSource        Fault = "replay-meta-no-source"        // replay.source_task_id is empty
	FaultReplayMetaNoReplayTask    Fault = "replay-meta-no-replay-task"   // replay.replay_task_id names the source task
	FaultReplayMetaNoOriginal      Fault = "replay-meta-no-original"      // replay.original_event_id is null
	FaultReplayMetaNoCursor        Fault = "replay-meta-no-cursor"        // replay.replay_cursor is null
	FaultReplayMetaWrongMode       Fault = "replay-meta-wrong-mode"       // replay.mode on replayed events is always "exact"
	FaultReplayMetaNoOverrideKey   Fault = "replay-meta-no-override-key"  // substituted events carry no replay.override_key
	FaultReplayUnmarkedSSE         Fault = "replay-unmarked-sse"          // replayed events are served with replayed:false on SSE only
	FaultReplayDeltaMissing        Fault = "replay-delta-missing"         // the replay receipt drops the delta of the last applied override
	FaultReplayDeltaNoKey          Fault = "replay-delta-no-key"          // replay receipt deltas carry no override_key
	FaultReplayDeltaWrongHash      Fault = "replay-delta-wrong-hash"      // a delta's after_sha256 is its before hash
	FaultReplayDeltaNoReason       Fault = "replay-delta-no-reason"       // replay receipt deltas carry no reason
	FaultReplayReceiptLeaksSecret  Fault = "replay-receipt-leaks-secret"  // a secret override's value is written into the replay receipt (its material's metadata)
	FaultReplayManyOverridesFail   Fault = "replay-many-overrides-fail"   // a replay whose override map has 5 or more keys ends FAILED (the fixture request has 5)
	FaultReplayMaterialsUnsorted   Fault = "replay-materials-unsorted"    // the receipt lists override materials (and deltas, paths kept consistent) in reverse key order
	FaultReplayFailureUnnamed      Fault = "replay-failure-unnamed"       // a failed replay names no missing dependency, and unknown checkpoint/artifact refusals name nothing
	FaultReplayRefreshesMemory     Fault = "replay-refreshes-memory"      // a replayed memory_read reads the memories' current contents
	FaultReplayBringsNewMemory     Fault = "replay-brings-new-memory"     // a replayed memory_read adds memories created after the source ran
	FaultReplayDeltasUnhashed      Fault = "replay-deltas-unhashed"       // a replay receipt is sealed with its deltas emptied, then served with them: its hash leaves them out
	FaultReplayInvalidOverride500  Fault = "replay-invalid-override-500"  // a replay request whose override map is invalid is answered 500 internal_error instead of 400
)

// ReplayFaults lists the replay faults (AllFaults includes them).
func ReplayFaults() []Fault {
	return []Fault{FaultReplayRangeSkips, FaultReplayRangeUnstable, FaultReplayCursorUnknownEmpty, FaultReplayAnswers201,
		FaultReplayNoParent, FaultReplayNewSession, FaultReplaySkipsStarted, FaultReplayBodyRequired, FaultReplayTaskModeExact,
		FaultReplayExactRefreshes, FaultReplayOverridesIgnored, FaultReplayCheckpointUnchecked, FaultReplayCheckpointIgnored,
		FaultReplayOverrideUnstable, FaultReplayKeysUnstable, FaultReplayKeysNonstandard, FaultReplaySecretOverrideLeaks,
		FaultReplayLogReordered, FaultReplayMetaNoSource, FaultReplayMetaNoReplayTask, FaultReplayMetaNoOriginal,
		FaultReplayMetaNoCursor, FaultReplayMetaWrongMode, FaultReplayMetaNoOverrideKey, FaultReplayUnmarkedSSE,
		FaultReplayDeltaMissing, FaultReplayDeltaNoKey, FaultReplayDeltaWrongHash, FaultReplayDeltaNoReason,
		FaultReplayReceiptLeaksSecret, FaultReplayManyOverridesFail, FaultReplayMaterialsUnsorted, FaultReplayFailureUnnamed,
		FaultReplayRefreshesMemory, FaultReplayBringsNewMemory, FaultReplayDeltasUnhashed, FaultReplayInvalidOverride500}
}

// WSFaults lists the WebSocket faults (AllFaults includes them).
func WSFaults() []Fault {
	return []Fault{FaultWSUpgradeUnauthenticated, FaultWSAdvertisesPlainRemote, FaultWSBinaryEventFrames, FaultWSMessageNotAppended,
		FaultWSCancelIgnored, FaultWSTruncateKeepsAll, FaultWSEventFrameDiffers, FaultWSNoInputRequest, FaultWSApprovalAnswerIgnored,
		FaultWSResumeSkipsEvent, FaultWSNoHeartbeat, FaultWSReplayedUnmarked, FaultWSIdempotencyIgnored}
}

// AllFaults lists every fault, for tests that iterate them.
func AllFaults() []Fault {
	return append([]Fault{
		FaultSkipVersionCheck, FaultNoSupportedVersions, FaultAcceptMissingKey, FaultAcceptAnyKey,
		FaultEchoKeyInError, FaultForgetIdempotency, FaultIdempotencyNoConflict,
		FaultDuplicateOnConcurrentRetry, FaultDropSSEID, FaultIgnoreLastEventID, FaultResumeRepeatsEvent,
		FaultNoCursorExpiredFrame, FaultTerminalTaskMutable, FaultCompletedAfterCancel,
		FaultCanceledHasCompletedAt, FaultSkipTransitionEvent, FaultIllegalTransition,
		FaultWrongCreateStatus, FaultErrorWithoutEnvelope, FaultWrongErrorType, FaultNotFoundAs400,
		FaultNoParamOnBadRequest, FaultNo413, FaultLimitIgnored, FaultPaginationRepeats,
		FaultNonUTCTimestamps, FaultWrongObjectField, FaultSequenceNotIncreasing,
		FaultSSEWrongContentType, FaultSSEDataNotJSON, FaultSSEPayloadDrift, FaultOutcomeUsesTaskStatus,
		FaultMissingRequiredField, FaultIDsNotStable, FaultUnknownRouteNot404, FaultEventsRepeatOnRange,
		FaultPublicNeedsVersion, FaultAcceptMalformedAuth, FaultSessionNoMetadata, FaultSessionNoTranscript,
		FaultPartNoVisibility, FaultArtifactSHAPrefixed, FaultOutcomeNotListed, FaultMessageNotReadable,
		FaultTaskListIgnoresSession, FaultIdempotencyIgnoresTarget, FaultMalformedJSONAs500,
		FaultEventByIDDiffers, FaultIdempotencyKeyLength,
		FaultReceiptHashCorrupt, FaultReceiptChainBroken, FaultReceiptWrongKey, FaultReceiptLeaksSecret,
		FaultReceiptRefDropped, FaultVerifyAlwaysValid, FaultReceiptUnknownField, FaultRedactionWithoutProof,
		FaultReceiptEventNoID, FaultReceiptWrongState, FaultReceiptWrongIDs, FaultReceiptWrongSubject,
		FaultReceiptUpperHash, FaultEventLeaksSecret, FaultReceiptLeaksAPIKey, FaultReceiptIDMismatch,
		FaultReceiptLeaksBearer,
		FaultCancelNoop, FaultLowercaseStatus, FaultPlainSkipsWork, FaultAuthOnlyOnTasks, FaultVersionOnlyOnTasks, FaultClosedTakesTasks,
		FaultReceiptCostInconsistent, FaultReceiptDropsArtifacts, FaultReceiptSignsDigest,
		FaultEventsNotScoped, FaultEventIDsNotMonotonic, FaultTerminalAcceptsMessage, FaultIdempotencyByteCompare,
		FaultCardUnsigned, FaultCardSignatureStale, FaultCardSignsRawJSON, FaultCardNoKeyID,
		FaultOAuthAcceptsExpired, FaultOAuthIgnoresAudience, FaultOAuthIgnoresIssuer, FaultOAuthSkipsSignature,
		FaultOAuthReadsIgnoreScope, FaultOAuthNotOnStreams, FaultOAuthReadScopeWrites,
		FaultPersonaPatchLost, FaultPersonaToolsIgnored, FaultPersonaApprovalSkipped, FaultPersonaShadowActs,
		FaultPersonaReceiptSkipped, FaultWorkspacePatchLost, FaultBranchWrongWorkspace, FaultMessagesNewestFirst,
		FaultTruncateKeepsTurns, FaultForkSharesTranscript, FaultBranchNotListed, FaultTaskBranchDropped,
		FaultArtifactDigestUnchecked, FaultArtifactIdempotencyIgnored, FaultExtIdempotencyIgnored,
		FaultApprovalIdempotencyIgnored, FaultSkillSchemaNotObject,
		FaultMemoryDeleteKeeps, FaultMemoryInTranscript, FaultVaultNotReadable, FaultVaultReadLeaks,
		FaultVaultSecretInEvent, FaultVaultPolicyIgnored, FaultQuotaNotListed, FaultQuotaCheckedLate, FaultQuotaRefusedAs409,
		FaultConnectorNotReadable, FaultConnectorNoDedupe, FaultConnectorKeyIgnoresID, FaultConnectorTaskNoKey,
		FaultPermissionAnswerLost, FaultPermissionNotListed, FaultApprovalDenialIgnored, FaultPermissionIdempotencyIgnored,
		FaultVendorEventUnprefixed, FaultToolResultUnpaired, FaultSpanUncorrelated, FaultInputRefusedWhileStreaming,
		FaultCardAdvertisesWebSocket, FaultLocalRuntimeMisshapen,
		FaultAuthzCrossTenantReads, FaultAuthzCrossTenantWrites, FaultAuthzListsLeak, FaultAuthzHiddenAs403,
		FaultAuthzActorNotBound, FaultAuthzRefusalEchoesCredential, FaultAuthzReadOnlyWrites,
		FaultPrivMarkedPublic, FaultPrivReceiptOnlyServed, FaultPrivInternalInEvent, FaultPrivSecretInPart,
		FaultPrivReasoningExposed, FaultPrivRedactionDeletes, FaultPrivRedactionSilent, FaultQuotaIgnoresPersona,
		FaultWSUpgradeUnauthenticated, FaultWSAdvertisesPlainRemote, FaultWSBinaryEventFrames, FaultWSMessageNotAppended,
		FaultWSCancelIgnored, FaultWSTruncateKeepsAll, FaultWSEventFrameDiffers, FaultWSNoInputRequest, FaultWSApprovalAnswerIgnored,
		FaultWSResumeSkipsEvent, FaultWSNoHeartbeat, FaultWSReplayedUnmarked, FaultWSIdempotencyIgnored,
	}, ReplayFaults()...)
}

// Variant names a legal but unusual behaviour a conformance suite must accept.
type Variant string

// Variants is a set of variants; the zero value is the plain behaviour.
type Variants map[Variant]bool

// Has reports whether v is on.
func (vs Variants) Has(v Variant) bool { return vs[v] }

// The variants.
const (
	VariantCRLF                   Variant = "sse-crlf"                  // SSE lines end in CRLF
	VariantKeepAliveEveryFrame    Variant = "sse-keepalive-every-frame" // a comment line before every SSE frame
	VariantMultilineData          Variant = "sse-multiline-data"        // the JSON of data: split over several data: lines
	VariantExtraFields            Variant = "extra-fields"              // an unknown extension field in every object
	VariantReorderedKeys          Variant = "reordered-keys"            // JSON object keys in alphabetical order
	VariantCancelTerminalConflict Variant = "cancel-terminal-409"       // cancel of a terminal task answers 409 conflict, not 400
	// VariantNoScenarioHook hides the conform.scenarios test hook, as on a
	// third-party server: discovery and the card do not advertise it and
	// task metadata["conform.scenario"] is ignored (every task is the
	// default echo agent's). Like most real agents, that agent then keeps
	// what it wrote as an artifact of the task: a text/plain log named
	// AgentReplyArtifactName, with its bytes and sha256, which the task's
	// Outcome lists.
	VariantNoScenarioHook Variant = "no-scenario-hook"
	// VariantSlowAgent makes the default agent take SlowAgentWork over
	// every task, in WORKING, before it answers (scenario tasks are as
	// their steps say); and, like an agent built for text, it fails a task
	// whose input holds no text that is not blank (FAILED, failure.code
	// SlowAgentNoTextCode).
	VariantSlowAgent Variant = "slow-agent"
	// VariantChattyAgent makes the default agent emit 60 agent.message
	// events per task: more than one default page (50) of events.
	VariantChattyAgent Variant = "chatty-agent"
	// VariantCoreOnly offers no Workspace API (Core does not include it):
	// /v1/workspaces routes are unknown, and the operator provisioned one
	// workspace, ProvisionedWorkspaceID, that every key may use.
	VariantCoreOnly Variant = "core-only"
)

// AgentReplyArtifactName is metadata.name of the artifact the default
// agent keeps of its reply under VariantNoScenarioHook.
const AgentReplyArtifactName = "reply.txt"

// SlowAgentWork is how long the default agent works on a task under
// VariantSlowAgent, and SlowAgentNoTextCode the failure code of a task it
// had no text to work on.
const (
	SlowAgentWork       = time.Second
	SlowAgentNoTextCode = "no_text_input"
)

// ProvisionedWorkspaceID is the workspace VariantCoreOnly provisions.
const ProvisionedWorkspaceID = "workspace_provisioned"

// Receipt signing variants (receipts.go), issue 9.
const (
	VariantReceiptSignCanonical Variant = "receipt-sign-canonical" // receipts are signed over their RFC 8785 canonical bytes, not the hash string
	VariantReceiptUnsigned      Variant = "receipt-unsigned"       // receipts carry no signatures; no key directory is advertised and the directory is empty
)

// VariantNoOAuthTestTokens hides the conform.oauth_test_tokens hook
// (oauth.go), as on a third-party server: discovery does not advertise it
// and the token endpoint ignores conform_test_token, so the suite has no
// expired, wrong-audience or wrong-issuer token unless the operator gives
// it one.
const VariantNoOAuthTestTokens Variant = "no-oauth-test-tokens"

// VariantNoReplay offers no Replay level, as a target that does not claim
// it: discovery says replay: false, the agent card does not list it, and
// POST /v1/tasks/{id}/replay answers 501 not_implemented (an unoffered
// protocol operation). Tasks still record their dependencies and tapes.
const VariantNoReplay Variant = "no-replay"

// AllVariants lists every variant.
func AllVariants() []Variant {
	return []Variant{VariantCRLF, VariantKeepAliveEveryFrame, VariantMultilineData, VariantExtraFields,
		VariantReorderedKeys, VariantCancelTerminalConflict, VariantNoScenarioHook, VariantChattyAgent, VariantSlowAgent,
		VariantReceiptSignCanonical, VariantReceiptUnsigned, VariantCoreOnly, VariantNoOAuthTestTokens, VariantNoReplay}
}
