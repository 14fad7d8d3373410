package acpharbor

import (
	"fmt"
	"slices"
	"sort"
)

// Fault breaks one requirement on purpose, so the suite can be seen to
// catch it (cmd/conform/faults_acpharbor_test.go).
type Fault string

// Faults of the base protocol.
const (
	FaultStdoutLogLine     Fault = "stdout-log-line"       // a log line on stdout (ACP-RPC-001)
	FaultExtraResponse     Fault = "extra-response"        // a response to no request (ACP-RPC-002)
	FaultErrorCodeString   Fault = "error-code-string"     // error codes as strings (ACP-RPC-003)
	FaultInitVersionString Fault = "init-version-string"   // protocolVersion "1" (ACP-INIT-001)
	FaultInitEchoVersion   Fault = "init-echo-version"     // echoes an unsupported version (ACP-INIT-002)
	FaultInitNoInfo        Fault = "init-no-info"          // no agentInfo (ACP-INIT-003, SHOULD)
	FaultCapsCustomRoot    Fault = "caps-custom-root"      // a custom member at agentCapabilities' root (ACP-EXT-001)
	FaultExtUnknownSilent  Fault = "ext-unknown-silent"    // unknown custom requests never answered (ACP-EXT-002)
	FaultExtUnknownError   Fault = "ext-unknown-internal"  // unknown custom requests get Internal error (ACP-EXT-003, SHOULD)
	FaultSessionBadModes   Fault = "session-modes-string"  // session/new's modes as a string (ACP-SESS-001)
	FaultSessionIDReused   Fault = "session-id-reused"     // every session gets the same id (ACP-SESS-002)
	FaultPromptBadStop     Fault = "prompt-bad-stop"       // stopReason "done" (ACP-PROMPT-001)
	FaultUpdateWrongSess   Fault = "update-wrong-session"  // updates name another session (ACP-UPD-001)
	FaultUpdateAfterResp   Fault = "update-after-response" // an update after the turn's response (ACP-UPD-002, SHOULD)
	FaultCancelIgnored     Fault = "cancel-ignored"        // a cancelled turn ends with end_turn (ACP-CANCEL-001)
	FaultCancelLateUpdate  Fault = "cancel-late-update"    // an update after the cancelled turn's response (ACP-CANCEL-002)
)

// Faults of the Harbor extensions.
const (
	FaultBundleInResultMeta  Fault = "bundle-in-result-meta"   // bundle in the result's _meta (ACP-CAP-001)
	FaultBundleVersionString Fault = "bundle-version-string"   // "version": "1" (ACP-CAP-002)
	FaultDiffMissing         Fault = "workspace-diff-missing"  // supportsDiffs but no diff method (ACP-CAP-003)
	FaultInfoNoUsage         Fault = "workspace-info-no-usage" // workspace/info without usageBytes (ACP-WS-001)
	FaultInfoStale           Fault = "workspace-info-stale"    // snapshotCount never moves (ACP-WS-002, SHOULD)
	FaultListNoChildren      Fault = "workspace-list-no-children"
	FaultFileNoContent       Fault = "workspace-file-no-content"
	FaultDiffDropsFile       Fault = "workspace-diff-drops-file"
	FaultSnapshotBadProvider Fault = "snapshot-bad-provider"    // provider "tmpfs" (ACP-SNAP-001)
	FaultSnapshotListEmpty   Fault = "snapshot-list-empty"      // (ACP-SNAP-002)
	FaultSnapshotUnfiltered  Fault = "snapshot-list-unfiltered" // filters ignored (ACP-SNAP-003, SHOULD)
	FaultLockedBranchable    Fault = "locked-branchable"        // branching from a locked snapshot allowed (ACP-SNAP-004)
	FaultSnapshotSilent      Fault = "snapshot-created-silent"  // no harbor/snapshot_created (ACP-SNAP-005)
	FaultBranchNoNewSessions Fault = "branch-no-new-sessions"   // (ACP-BRANCH-001)
	FaultBranchNoTimeline    Fault = "branch-no-timeline"       // timeline branching refused (ACP-BRANCH-002, SHOULD)
	FaultBranchListEmpty     Fault = "branch-list-empty"        // (ACP-BRANCH-003)
	FaultBranchDeleteRunning Fault = "branch-delete-running"    // a running branch is deleted (ACP-BRANCH-004)
	FaultBranchDeleteNoop    Fault = "branch-delete-noop"       // delete answers ok, the branch stays (ACP-BRANCH-005)
	FaultSessionReuseSilent  Fault = "session-reuse-silent"     // sessionReuse without notifications (ACP-BRANCH-006)
	FaultBranchCreatedSilent Fault = "branch-created-silent"    // no branch_created / branch_deleted (ACP-BRANCH-007, SHOULD)
	FaultSeekNoMount         Fault = "seek-no-mount"            // (ACP-SEEK-002)
	FaultMultiCountIgnored   Fault = "multi-count-ignored"      // count ignored (ACP-MULTI-002)
	FaultPipelineListEmpty   Fault = "pipeline-list-empty"      // (ACP-PIPE-001)
	FaultPipelineStreamNoID  Fault = "pipeline-stream-no-id"    // (ACP-PIPE-002)
	FaultPipelineSilent      Fault = "pipeline-detected-silent" // (ACP-PIPE-004)
	FaultStepUnknownID       Fault = "step-unknown-id"          // (ACP-PIPE-005)
	FaultCheckpointNoKind    Fault = "checkpoint-no-kind"       // (ACP-NOTIF-001)
	FaultNoCheckpoints       Fault = "no-checkpoints"           // (ACP-NOTIF-002, SHOULD)
	FaultProblemStatusString Fault = "problem-status-string"    // (ACP-ERR-001)
	FaultTenantInvalid       Fault = "tenant-invalid-params"    // tenant hints refused (ACP-TENANT-001, SHOULD)
)

var allFaults = []Fault{
	FaultStdoutLogLine, FaultExtraResponse, FaultErrorCodeString, FaultInitVersionString, FaultInitEchoVersion,
	FaultInitNoInfo, FaultCapsCustomRoot, FaultExtUnknownSilent, FaultExtUnknownError, FaultSessionBadModes,
	FaultSessionIDReused, FaultPromptBadStop, FaultUpdateWrongSess, FaultUpdateAfterResp, FaultCancelIgnored,
	FaultCancelLateUpdate,
	FaultBundleInResultMeta, FaultBundleVersionString, FaultDiffMissing, FaultInfoNoUsage, FaultInfoStale,
	FaultListNoChildren, FaultFileNoContent, FaultDiffDropsFile, FaultSnapshotBadProvider, FaultSnapshotListEmpty,
	FaultSnapshotUnfiltered, FaultLockedBranchable, FaultSnapshotSilent, FaultBranchNoNewSessions,
	FaultBranchNoTimeline, FaultBranchListEmpty, FaultBranchDeleteRunning, FaultBranchDeleteNoop,
	FaultSessionReuseSilent, FaultBranchCreatedSilent, FaultSeekNoMount, FaultMultiCountIgnored,
	FaultPipelineListEmpty, FaultPipelineStreamNoID, FaultPipelineSilent, FaultStepUnknownID,
	FaultCheckpointNoKind, FaultNoCheckpoints, FaultProblemStatusString, FaultTenantInvalid,
}

// Faults lists every fault, sorted.
func Faults() []Fault {
	out := slices.Clone(allFaults)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Variant is a legal but unusual reading of the Harbor text: the suite
// must accept each (docs/interpretations.md).
type Variant string

const (
	// VariantNoHarbor advertises nothing of Harbor: a plain ACP agent.
	VariantNoHarbor Variant = "no-harbor"
	// VariantHarborPrefix answers Harbor methods only under their harbor/
	// spelling (the examples' method members).
	VariantHarborPrefix Variant = "harbor-prefix"
	// VariantNestedMeta nests the bundle: _meta.agent.harbor.
	VariantNestedMeta Variant = "nested-meta"
	// VariantGateAlias names the snapshots block agentHarborSnapshots.
	VariantGateAlias Variant = "gate-alias"
	// VariantProblemResults refuses with a Problem+JSON result instead of
	// a JSON-RPC error.
	VariantProblemResults Variant = "problem-results"
	// VariantCamelCaseFile spells workspace/file metadata in camelCase.
	VariantCamelCaseFile Variant = "camel-case-file"
	// VariantUpdateDiscriminated sends Harbor updates as sessionUpdate
	// "custom" with the payload in a payload member.
	VariantUpdateDiscriminated Variant = "update-discriminated"
	// VariantMethodNotifications sends Harbor notifications as JSON-RPC
	// notifications named harbor/… instead of session/update.
	VariantMethodNotifications Variant = "method-notifications"
)

var allVariants = []Variant{VariantNoHarbor, VariantHarborPrefix, VariantNestedMeta, VariantGateAlias,
	VariantProblemResults, VariantCamelCaseFile, VariantUpdateDiscriminated, VariantMethodNotifications}

// Variants lists every variant, sorted.
func Variants() []Variant {
	out := slices.Clone(allVariants)
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// ParseFault checks a fault name.
func ParseFault(s string) (Fault, error) {
	if slices.Contains(allFaults, Fault(s)) {
		return Fault(s), nil
	}
	return "", fmt.Errorf("unknown fault %q (conform serve-acp --list-faults lists them)", s)
}

// ParseVariant checks a variant name.
func ParseVariant(s string) (Variant, error) {
	if s == "" || slices.Contains(allVariants, Variant(s)) {
		return Variant(s), nil
	}
	return "", fmt.Errorf("unknown variant %q (conform serve-acp --list-faults lists them)", s)
}
