package acpharbor

import (
	"fmt"

	"github.com/harn-conform/conform/refharness/fault"
)

// Fault breaks one requirement on purpose, so the suite can be seen to
// catch it; its declaration (Decl) says which, and the profile's proof
// rows (cmd/conform/faults_acpharbor_test.go) are derived from it.
type Fault string

// faults are the agent's faults, as declared.
var faults fault.Set[fault.Fault]

func declare(f fault.Fault) Fault {
	f.Kind = fault.InServer
	return Fault(faults.Add(f))
}

// Decl is the declaration of f.
func (f Fault) Decl() (fault.Fault, bool) { return faults.Lookup(string(f)) }

// Faults of the base protocol (agent.go).
var (
	FaultStdoutLogLine = declare(fault.Fault{Name: "stdout-log-line",
		Doc: "a log line on stdout", Fails: []string{"ACP-RPC-001"}})
	FaultExtraResponse = declare(fault.Fault{Name: "extra-response",
		Doc: "a response to no request, right after the initialize response", Fails: []string{"ACP-RPC-002"}})
	FaultErrorCodeString = declare(fault.Fault{Name: "error-code-string",
		Doc: "error codes are strings", Fails: []string{"ACP-RPC-003"}})
	FaultInitVersionString = declare(fault.Fault{Name: "init-version-string",
		Doc: "initialize answers protocolVersion \"1\", a string", Fails: []string{"ACP-INIT-001"}})
	FaultInitEchoVersion = declare(fault.Fault{Name: "init-echo-version",
		Doc: "initialize echoes a protocol version it does not support", Fails: []string{"ACP-INIT-002"}})
	FaultInitNoInfo = declare(fault.Fault{Name: "init-no-info",
		Doc: "initialize answers no agentInfo", Warns: []string{"ACP-INIT-003"}})
	FaultCapsCustomRoot = declare(fault.Fault{Name: "caps-custom-root",
		Doc: "a custom member at agentCapabilities' root", Fails: []string{"ACP-EXT-001"}})
	// Never answered: caught because a later request is (the rows set a
	// short --request-timeout for the wait).
	FaultExtUnknownSilent = declare(fault.Fault{Name: "ext-unknown-silent",
		Doc: "unknown custom requests are never answered", Fails: []string{"ACP-EXT-002"}})
	FaultExtUnknownError = declare(fault.Fault{Name: "ext-unknown-internal",
		Doc: "unknown custom requests get Internal error instead of Method not found", Warns: []string{"ACP-EXT-003"}})
	FaultSessionBadModes = declare(fault.Fault{Name: "session-modes-string",
		Doc: "session/new answers its modes as a string", Fails: []string{"ACP-SESS-001"}})
	FaultSessionIDReused = declare(fault.Fault{Name: "session-id-reused",
		Doc: "every session gets the same id", Fails: []string{"ACP-SESS-002"}})
	FaultPromptBadStop = declare(fault.Fault{Name: "prompt-bad-stop",
		Doc: "prompt turns end with stopReason \"done\"", Fails: []string{"ACP-PROMPT-001"}})
	FaultUpdateWrongSess = declare(fault.Fault{Name: "update-wrong-session",
		Doc: "session updates name another session", Fails: []string{"ACP-UPD-001"}})
	FaultUpdateAfterResp = declare(fault.Fault{Name: "update-after-response",
		Doc: "an update after the turn's response", Warns: []string{"ACP-UPD-002"}})
	FaultCancelIgnored = declare(fault.Fault{Name: "cancel-ignored",
		Doc: "a cancelled turn ends with end_turn", Fails: []string{"ACP-CANCEL-001"}})
	FaultCancelLateUpdate = declare(fault.Fault{Name: "cancel-late-update",
		Doc: "an update after the cancelled turn's response", Fails: []string{"ACP-CANCEL-002"}})
)

// Faults of the Harbor extensions (harbor.go, and the pipeline events of
// agent.go).
var (
	FaultBundleInResultMeta = declare(fault.Fault{Name: "bundle-in-result-meta",
		Doc: "the Harbor bundle is in the initialize result's _meta, not agentCapabilities'", Fails: []string{"ACP-CAP-001"}})
	FaultBundleVersionString = declare(fault.Fault{Name: "bundle-version-string",
		Doc: "the bundle's version is \"1\", a string", Fails: []string{"ACP-CAP-002"}})
	FaultDiffMissing = declare(fault.Fault{Name: "workspace-diff-missing",
		Doc: "supportsDiffs is advertised but the diff method is missing", Fails: []string{"ACP-CAP-003"}})
	FaultInfoNoUsage = declare(fault.Fault{Name: "workspace-info-no-usage",
		Doc: "workspace/info answers no usageBytes", Fails: []string{"ACP-WS-001"}})
	FaultInfoStale = declare(fault.Fault{Name: "workspace-info-stale",
		Doc: "workspace/info's snapshotCount never moves", Warns: []string{"ACP-WS-002"}})
	FaultListNoChildren = declare(fault.Fault{Name: "workspace-list-no-children",
		Doc: "workspace/list answers no children", Fails: []string{"ACP-WS-003"}})
	FaultFileNoContent = declare(fault.Fault{Name: "workspace-file-no-content",
		Doc: "workspace/file leaves out the content it was asked to include", Fails: []string{"ACP-WS-004"}})
	FaultDiffDropsFile = declare(fault.Fault{Name: "workspace-diff-drops-file",
		Doc: "workspace/diff lists no changed file", Fails: []string{"ACP-WS-005"}})
	FaultSnapshotBadProvider = declare(fault.Fault{Name: "snapshot-bad-provider",
		Doc: "snapshots name the provider \"tmpfs\", which the extension does not define", Fails: []string{"ACP-SNAP-001"}})
	FaultSnapshotListEmpty = declare(fault.Fault{Name: "snapshot-list-empty",
		Doc: "the snapshot list is always empty", Fails: []string{"ACP-SNAP-002"}})
	FaultSnapshotUnfiltered = declare(fault.Fault{Name: "snapshot-list-unfiltered",
		Doc: "the snapshot list ignores its filters", Warns: []string{"ACP-SNAP-003"}})
	FaultLockedBranchable = declare(fault.Fault{Name: "locked-branchable",
		Doc: "branching from a locked snapshot is allowed", Fails: []string{"ACP-SNAP-004"}})
	FaultSnapshotSilent = declare(fault.Fault{Name: "snapshot-created-silent",
		Doc: "a manual snapshot sends no harbor/snapshot_created", Fails: []string{"ACP-SNAP-005"}})
	FaultBranchNoNewSessions = declare(fault.Fault{Name: "branch-no-new-sessions",
		Doc: "a created branch answers no newSessions", Fails: []string{"ACP-BRANCH-001"}})
	FaultBranchNoTimeline = declare(fault.Fault{Name: "branch-no-timeline",
		Doc: "branching from a timeline point is refused", Warns: []string{"ACP-BRANCH-002"}})
	FaultBranchListEmpty = declare(fault.Fault{Name: "branch-list-empty",
		Doc: "the branch list is always empty", Fails: []string{"ACP-BRANCH-003"}})
	FaultBranchDeleteRunning = declare(fault.Fault{Name: "branch-delete-running",
		Doc: "a running branch is deleted", Fails: []string{"ACP-BRANCH-004"}})
	FaultBranchDeleteNoop = declare(fault.Fault{Name: "branch-delete-noop",
		Doc: "delete answers ok and the branch stays", Fails: []string{"ACP-BRANCH-005"}})
	FaultSessionReuseSilent = declare(fault.Fault{Name: "session-reuse-silent",
		Doc: "a branch created with sessionReuse sends no notifications", Fails: []string{"ACP-BRANCH-006"}})
	FaultBranchCreatedSilent = declare(fault.Fault{Name: "branch-created-silent",
		Doc: "no harbor/branch_created or branch_deleted", Warns: []string{"ACP-BRANCH-007"}})
	FaultSeekNoMount = declare(fault.Fault{Name: "seek-no-mount",
		Doc: "a seek answers no mountPath", Fails: []string{"ACP-SEEK-002"}})
	FaultMultiCountIgnored = declare(fault.Fault{Name: "multi-count-ignored",
		Doc: "a multi-agent request's count is ignored", Fails: []string{"ACP-MULTI-002"}})
	FaultPipelineListEmpty = declare(fault.Fault{Name: "pipeline-list-empty",
		Doc: "the pipeline list is always empty", Fails: []string{"ACP-PIPE-001"}})
	FaultPipelineStreamNoID = declare(fault.Fault{Name: "pipeline-stream-no-id",
		Doc: "a pipeline step's stream answers no streamId", Fails: []string{"ACP-PIPE-002"}})
	FaultPipelineSilent = declare(fault.Fault{Name: "pipeline-detected-silent",
		Doc: "a pipeline runs without harbor/pipeline_detected", Fails: []string{"ACP-PIPE-004"}})
	FaultStepUnknownID = declare(fault.Fault{Name: "step-unknown-id",
		Doc: "pipeline step updates name a step the pipeline does not have", Fails: []string{"ACP-PIPE-005"}})
	FaultCheckpointNoKind = declare(fault.Fault{Name: "checkpoint-no-kind",
		Doc: "timeline checkpoints carry no kind", Fails: []string{"ACP-NOTIF-001"}})
	FaultNoCheckpoints = declare(fault.Fault{Name: "no-checkpoints",
		Doc: "executions send no timeline checkpoint", Warns: []string{"ACP-NOTIF-002"}})
	FaultProblemStatusString = declare(fault.Fault{Name: "problem-status-string",
		Doc: "Problem+JSON refusals carry their status as a string", Fails: []string{"ACP-ERR-001"}})
	FaultHarborUpdatesUnasked = declare(fault.Fault{Name: "harbor-updates-unasked",
		Doc: "sends Harbor notifications as the text's custom session/update to a client that did not ask for them", Warns: []string{"ACP-NOTIF-003"}})
	FaultSessionReuseSibling = declare(fault.Fault{Name: "session-reuse-sibling",
		Doc: "a branch created with sessionReuse spawns a sibling session anyway", Fails: []string{"ACP-BRANCH-009"}})
	FaultTenantInvalid = declare(fault.Fault{Name: "tenant-invalid-params",
		Doc: "tenant hints (tenantId, projectId) are refused as invalid params", Fails: []string{"ACP-TENANT-001"}})
)

// Faults lists every fault, sorted.
func Faults() []Fault {
	var out []Fault
	for _, d := range faults.All() {
		out = append(out, Fault(d.Name))
	}
	return out
}

// FaultDecls lists every fault's declaration, sorted by name.
func FaultDecls() []fault.Fault { return faults.All() }

// Variant is a legal but unusual reading of the Harbor text: the suite
// must accept each (docs/interpretations.md); its declaration says what it
// does and any SHOULD it still earns a warning for.
type Variant string

// variants are the agent's variants, as declared.
var variants fault.Set[fault.Variant]

func declareVariant(v fault.Variant) Variant {
	v.Kind = fault.InServer
	return Variant(variants.Add(v))
}

// Decl is the declaration of v.
func (v Variant) Decl() (fault.Variant, bool) { return variants.Lookup(string(v)) }

var (
	// VariantNoHarbor advertises nothing of Harbor: a plain ACP agent
	// (proven by TestACPHarborBaseOnlyAgent, cmd/conform).
	VariantNoHarbor = declareVariant(fault.Variant{Name: "no-harbor",
		Doc: "advertises nothing of Harbor: a plain ACP agent"})
	// VariantHarborPrefix answers Harbor methods only under their harbor/
	// spelling (the examples' method members): legal, but names ACP
	// reserves.
	VariantHarborPrefix = declareVariant(fault.Variant{Name: "harbor-prefix",
		Doc: "answers Harbor methods only under their harbor/ spelling", Warns: []string{"ACP-NAME-001"}})
	VariantNestedMeta = declareVariant(fault.Variant{Name: "nested-meta",
		Doc: "nests the bundle: _meta.agent.harbor"})
	VariantGateAlias = declareVariant(fault.Variant{Name: "gate-alias",
		Doc: "names the snapshots block agentHarborSnapshots"})
	VariantProblemResults = declareVariant(fault.Variant{Name: "problem-results",
		Doc: "refuses with a Problem+JSON result instead of a JSON-RPC error"})
	VariantCamelCaseFile = declareVariant(fault.Variant{Name: "camel-case-file",
		Doc: "spells workspace/file metadata in camelCase"})
	// The two other forms of Harbor notifications the suite accepts: legal
	// by the text, but they make an ACP v1 client that does not know
	// Harbor log errors (ACP-NOTIF-003, a SHOULD).
	VariantUpdateDiscriminated = declareVariant(fault.Variant{Name: "update-discriminated",
		Doc: "sends Harbor updates as sessionUpdate \"custom\" with the payload in a payload member", Warns: []string{"ACP-NOTIF-003"}})
	VariantMethodNotifications = declareVariant(fault.Variant{Name: "method-notifications",
		Doc: "sends Harbor notifications as JSON-RPC notifications named harbor/… instead of _ah/…", Warns: []string{"ACP-NOTIF-003"}})
	// VariantAuthRequired advertises an authentication method and answers
	// session/new with "Authentication required" until the client calls
	// authenticate with it, which succeeds when the agent's environment
	// holds CONFORM_ACP_AGENT_TOKEN (legal ACP; proven by
	// TestACPHarborAuthRequired, cmd/conform).
	VariantAuthRequired = declareVariant(fault.Variant{Name: "auth-required",
		Doc: "advertises authMethods [conform-token] and answers session/new with Authentication required until authenticate (which needs CONFORM_ACP_AGENT_TOKEN in its environment)"})
)

// Variants lists every variant, sorted.
func Variants() []Variant {
	var out []Variant
	for _, d := range variants.All() {
		out = append(out, Variant(d.Name))
	}
	return out
}

// VariantDecls lists every variant's declaration, sorted by name.
func VariantDecls() []fault.Variant { return variants.All() }

// ParseFault checks a fault name.
func ParseFault(s string) (Fault, error) {
	if _, ok := faults.Lookup(s); ok {
		return Fault(s), nil
	}
	return "", fmt.Errorf("unknown fault %q (conform serve-acp --list-faults lists them)", s)
}

// ParseVariant checks a variant name.
func ParseVariant(s string) (Variant, error) {
	if _, ok := variants.Lookup(s); s == "" || ok {
		return Variant(s), nil
	}
	return "", fmt.Errorf("unknown variant %q (conform serve-acp --list-variants lists them)", s)
}
