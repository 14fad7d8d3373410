// Package evidence is the contract between the specs and the report: the
// labels that name requirements and levels, and the report entries that
// carry verdicts, transcripts and latencies out of a spec.
package evidence

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/onsi/ginkgo/v2/types"

	"github.com/harn-conform/conform/internal/client"
)

// Label prefixes and report entry names.
const (
	ReqLabelPrefix   = "req:"
	LevelLabelPrefix = "level:"
	// OfflineLabel marks a self-check of the suite's own verifiers on its
	// fixtures: it talks to no target, so it is no verdict on one.
	OfflineLabel    = "offline"
	EntryVerdict    = "conform.verdict"
	EntryTranscript = "conform.transcript"
	EntryLatency    = "conform.latency"
	EntryNote       = "conform.note" // informational, never a verdict
	EntrySkip       = "conform.skip" // why a spec ended without judging the target
	// EntryEvidence is a document a spec attaches as evidence for its
	// verdicts (a FidelityReport): kept in the report whatever the verdict.
	EntryEvidence = "conform.evidence"
	// EntryDefect is a defect of the suite itself (a request that matches
	// no OpenAPI operation and is no registered negative probe): never a
	// verdict on the target, and a self-test failure.
	EntryDefect = "conform.defect"
)

// Verdict values a spec records beyond pass (which is implied).
const (
	VerdictFail  = "fail"
	VerdictWarn  = "warn"
	VerdictError = "error"
	// VerdictUnverified: the check had nothing to look at, or could not run
	// for want of the test hook, of data or of a prerequisite. Never a pass.
	VerdictUnverified = "unverified"
	// VerdictNotApplicable: the requirement does not apply in this spec (a
	// MAY the target did not take up); the spec is left out of its roll-up.
	VerdictNotApplicable = "skip"
)

// Skip kinds: why a spec ended without a verdict of its own.
const (
	// SkipUnverified leaves the spec's requirements unverified (a level
	// with an unverified MUST is partial).
	SkipUnverified = "unverified"
	// SkipNotApplicable leaves the spec out of its requirements' roll-up:
	// by the target's own claims the behaviour does not apply.
	SkipNotApplicable = "not_applicable"
)

// Skip records why a spec stopped without judging the target, and what the
// implementer can do so that a later run verifies it.
type Skip struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Remedy string `json:"remedy,omitempty"`
}

// Verdict is one requirement's recorded outcome inside a spec.
type Verdict struct {
	Req     string `json:"req"`
	Verdict string `json:"verdict"`
	Message string `json:"message"`
	Remedy  string `json:"remedy,omitempty"` // with VerdictUnverified
	// Repro reproduces the failure when the last recorded request alone
	// does not: a race's script that fires a round's requests at once.
	Repro string `json:"repro,omitempty"`
	// At is how many exchanges the spec had made when the verdict was
	// recorded: the exchange it is about is the At-th or an earlier one
	// (0: not known).
	At int `json:"at,omitempty"`
}

// Transcript is a failed spec's redacted wire record.
type Transcript struct {
	Exchanges []client.Exchange `json:"exchanges"`
	Dropped   int               `json:"dropped,omitempty"`
}

// Attachment is one evidence document a spec attached (EntryEvidence).
type Attachment struct {
	Name string `json:"name"` // what it shows, e.g. "fidelity: source tape vs exact replay tape"
	// Schema is the document's format marker, e.g. "conform-fidelity-report/v1".
	Schema  string          `json:"schema,omitempty"`
	Content json.RawMessage `json:"content"`
}

// LatencySample is one exchange's duration, grouped by operation.
type LatencySample struct {
	Op string  `json:"op"`
	MS float64 `json:"ms"`
}

// Decode turns a report entry's JSON back into its value (it crosses
// process boundaries as JSON under ginkgo -p, so always read it that way).
func Decode[T any](e types.ReportEntry) (T, error) {
	var v T
	b := []byte(e.Value.AsJSON)
	if len(b) == 0 {
		// In the same process the entry may hold only its raw value.
		var err error
		if b, err = json.Marshal(e.GetRawValue()); err != nil {
			return v, err
		}
	}
	err := json.Unmarshal(b, &v)
	return v, err
}

// SourceSchema marks an Attachment that is a Source: where a spec found
// the object in a state its checks needed (an artifact with bytes, a
// running, canceled or failed task).
const SourceSchema = "conform-evidence-source/v1"

// SourceKind is where the object came from.
type SourceKind string

const (
	// SourceRun: made by the run through Core means (a plain task it
	// submitted), whatever the target does with such a task.
	SourceRun SourceKind = "run"
	// SourceTarget: the target already showed it (listed it).
	SourceTarget SourceKind = "target"
	// SourceHook: made through a conform.* test hook; Hook names it.
	SourceHook SourceKind = "hook"
	// SourceHigherLevel: made by a write another level owns (artifact
	// registration is Extended), used by a check of a level that does not
	// include it only when nothing else showed the object.
	SourceHigherLevel SourceKind = "higher_level_write"
)

// Source says where the object some of a spec's checks judged came from.
type Source struct {
	Kind SourceKind `json:"kind"`
	// Hook is the test hook's capability name, for SourceHook.
	Hook string `json:"hook,omitempty"`
	// Object is what was found, e.g. "artifact art_1" or "task task_1 (CANCELED)".
	Object string `json:"object"`
	// How says how it was found or made.
	How string `json:"how"`
	// Requirements are the ones the object's checks are under.
	Requirements []string `json:"requirements"`
}

// Test hooks: what a target implements only so that the suite can drive
// it (docs/interpretations.md#hook-attested). A verdict whose evidence came
// through one of them is hook-attested: the report says so, because a
// target's hook may behave where its ordinary path does not. The conform.*
// capabilities that only say where ordinary behaviour is to be found
// (conform.receipt_keys, conform.max_request_bytes, the conform.tape
// metadata of replay tapes) are no test hooks.
const (
	// HookScenarios: scenario steps in a task's metadata["conform.scenario"]
	// (docs/scenarios.md), the use_secret canary included.
	HookScenarios = "conform.scenarios"
	// HookVaultSecrets: secret values given to POST /v1/vaults.
	HookVaultSecrets = "conform.vault_secrets"
	// HookQuotas: quotas created and metered by POST /v1/conform/quotas.
	HookQuotas = "conform.quotas"
	// HookConnectors: connectors and provider deliveries made by POST
	// /v1/conform/connectors.
	HookConnectors = "conform.connectors"
	// HookOAuthTestTokens: expired, wrong-audience and wrong-issuer tokens
	// minted on request (conform_test_token, docs/oauth.md).
	HookOAuthTestTokens = "conform.oauth_test_tokens"
	// HookVerifySubmitted: the verify API checking a receipt copy sent in
	// its body (docs/receipts.md).
	HookVerifySubmitted = "conform.receipt_verify_submitted"
)

// Hooks lists every test hook.
var Hooks = []string{HookScenarios, HookVaultSecrets, HookQuotas, HookConnectors, HookOAuthTestTokens, HookVerifySubmitted}

// EntryHook is the report entry of a spec that used a test hook (HookUse).
const EntryHook = "conform.hook"

// HookUse records that some of a spec's evidence came through a test hook.
type HookUse struct {
	Hook string `json:"hook"`
	// How says what went through it, e.g. "POST /v1/sessions/s_1/tasks
	// with a conform.scenario".
	How string `json:"how"`
	// Requirements are the ones whose verdicts in this spec rest on it;
	// empty: every requirement the spec names.
	Requirements []string `json:"requirements,omitempty"`
}

// EntryHookFree is the report entry of a spec that judged some of its
// requirements on an object no test hook made, besides objects a hook made
// (HookFree).
const EntryHookFree = "conform.hook_free"

// HookFree records that a spec checked Requirements on an object no test
// hook made or drove (a plain task and its receipts): its pass on them
// then verifies them on the target's ordinary path even when the spec's
// other evidence came through a hook (docs/interpretations.md#hook-attested).
type HookFree struct {
	// How names the object, e.g. "the receipts of task t_1 (a plain task)".
	How          string   `json:"how"`
	Requirements []string `json:"requirements"`
}

// HooksIn names the test hooks one exchange the suite sent used: a request
// the target accepted (2xx) that carried a scenario, created vault secrets
// or went to a hook's route under /v1/conform/. A refused request used
// nothing: the target did not act on it. (The OAuth test tokens and the
// verify extension are recorded where the suite uses them, not here.)
func HooksIn(t client.Traffic) []string {
	if t.Kind != "http" || t.Status/100 != 2 {
		return nil
	}
	var out []string
	switch {
	case strings.HasPrefix(t.Path, "/v1/conform/quotas"):
		out = append(out, HookQuotas)
	case strings.HasPrefix(t.Path, "/v1/conform/connectors"):
		out = append(out, HookConnectors)
	}
	if len(t.RequestBody) == 0 || !bytes.Contains(t.RequestBody, []byte(`"conform.scenario"`)) && !bytes.Contains(t.RequestBody, []byte(`"secrets"`)) {
		return out
	}
	var body struct {
		Metadata map[string]json.RawMessage `json:"metadata"`
		Secrets  json.RawMessage            `json:"secrets"`
	}
	if json.Unmarshal(t.RequestBody, &body) != nil {
		return out
	}
	if _, ok := body.Metadata["conform.scenario"]; ok {
		out = append(out, HookScenarios)
	}
	if t.Method == http.MethodPost && t.Path == "/v1/vaults" && len(body.Secrets) > 0 && string(body.Secrets) != "null" {
		out = append(out, HookVaultSecrets)
	}
	return out
}
