// Package reports is conform's report: the model of conform.json (format
// conform-report/v1, with a JSON Schema in fixtures/schemas; report.go),
// which a Go program may import to read a report, how one Ginkgo run
// becomes it (build.go, with baseline.go and stopped.go), and its writers,
// one file per output format: json.go (conform.json), junit.go
// (junit.xml), markdown.go (summary.md), html.go (report.html), badge.go
// (badge-LEVEL.json) and table.go (the console's final table). write.go
// holds the one list of the report directory's files, which WriteAll
// writes and Files names.
package reports

import (
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/target"
)

// Format is the version marker of conform.json.
const Format = "conform-report/v1"

// Verdict is a check's outcome.
type Verdict string

const (
	Pass Verdict = "pass"
	Warn Verdict = "warn" // a SHOULD missed
	// Skip: not applicable — the level is not checked, or the target's own
	// claims leave the behaviour out; always with a reason. It never counts
	// for or against a requirement.
	Skip Verdict = "skip"
	// Unverified: a check that should have run could not (no test hook, no
	// data, a failed prerequisite, a narrowed run) or had nothing to look
	// at. Never a pass: an unverified observable MUST keeps its level
	// partial. Always with a reason and, where there is one, a remedy.
	Unverified Verdict = "unverified"
	Error      Verdict = "error" // the suite or the network broke; never blamed on the target
	Fail       Verdict = "fail"  // a MUST broken
)

// severity orders verdicts for roll-ups: the most severe child wins. Skip
// (not applicable) is below pass because it is left out of roll-ups.
var severity = map[Verdict]int{Skip: 0, Pass: 1, Warn: 2, Unverified: 3, Error: 4, Fail: 5}

// Worse returns the more severe of two verdicts.
func Worse(a, b Verdict) Verdict {
	if severity[b] > severity[a] {
		return b
	}
	return a
}

// LevelStatus is a level's overall standing.
type LevelStatus string

const (
	Conformant    LevelStatus = "conformant"
	Partial       LevelStatus = "partial"
	Nonconformant LevelStatus = "nonconformant"
	NotClaimed    LevelStatus = "not_claimed"
	NotRequested  LevelStatus = "not_requested"
	// Undecided: the run stopped (exit 2) before its checks could decide
	// the level, or before discovery said whether the target claims it.
	Undecided LevelStatus = "undecided"
)

// Counts tallies verdicts.
type Counts struct {
	Pass       int `json:"pass"`
	Fail       int `json:"fail"`
	Warn       int `json:"warn"`
	Unverified int `json:"unverified"`
	Skip       int `json:"skip"`
	Error      int `json:"error"`
	// Expected counts the requirements a baseline expects (they are also
	// counted under their real verdict); Stale the listed ones that passed.
	Expected int `json:"expected,omitempty"`
	Stale    int `json:"stale,omitempty"`
}

func (c *Counts) add(v Verdict) {
	switch v {
	case Pass:
		c.Pass++
	case Fail:
		c.Fail++
	case Warn:
		c.Warn++
	case Unverified:
		c.Unverified++
	case Skip:
		c.Skip++
	case Error:
		c.Error++
	}
}

// Report is the whole of conform.json.
type Report struct {
	Format          string            `json:"format"`
	Tool            Tool              `json:"tool"`
	ProtocolVersion string            `json:"protocol_version"`
	StartedAt       string            `json:"started_at"`
	FinishedAt      string            `json:"finished_at"`
	DurationMS      float64           `json:"duration_ms"`
	Target          string            `json:"target"`
	Config          map[string]string `json:"config"`
	Seed            int64             `json:"seed"`
	Discovery       target.Discovery  `json:"discovery"`
	Levels          []LevelResult     `json:"levels"`
	Totals          Counts            `json:"totals"`
	Requirements    []ReqResult       `json:"requirements"`
	Specs           []SpecResult      `json:"specs"`
	// SelfChecks are the suite's checks of its own verifiers on the fixture
	// corpus: they talk to no target and are no verdict on it.
	SelfChecks []SpecResult `json:"self_checks"`
	Latency    []OpLatency  `json:"latency"`
	Notes      []string     `json:"notes"`
	// SuiteDefects are the suite's own mistakes seen during the run (a
	// request no OpenAPI operation matches, not a registered negative
	// probe): never a verdict on the target.
	SuiteDefects []string `json:"suite_defects"`
	// Baseline is what a known-failures file did to this run (nil when the
	// run had none): see ApplyBaseline.
	Baseline *BaselineResult `json:"baseline,omitempty"`
	// Stopped says why the run ended before its specs could decide
	// (a preflight problem: a user's mistake or a target not up; or the
	// target stopped answering mid-run). Such a run exits 2.
	Stopped *Stopped `json:"stopped,omitempty"`
	// Gate is the CI gate the run applied and what it decided (the exit
	// code); absent only in reports written before it existed.
	Gate     *Gate `json:"gate,omitempty"`
	ExitCode int   `json:"exit_code"`
}

// Gate is the run's CI gate (docs/ci.md#choosing-the-gate): what fails it,
// and what did.
type Gate struct {
	// FailOn is what fails the gate: "unverified" (the default: a failed
	// MUST, an error, a stale baseline entry, or an observable MUST left
	// unverified) or "failures" (the same but unverified MUSTs).
	FailOn string `json:"fail_on"`
	// Passed: the run exits 0.
	Passed bool `json:"passed"`
	// Summary is the one line each report puts first: what the gate
	// decided, and why.
	Summary string `json:"summary"`
	// The requirements of the checked levels by what they do to the gate:
	// Failed (MUSTs), Errored and Stale fail it; Unverified (observable
	// MUSTs, not expected by a baseline) fail it when FailOn is
	// "unverified", and are listed either way.
	Failed     []string `json:"failed"`
	Errored    []string `json:"errored"`
	Unverified []string `json:"unverified"`
	Stale      []string `json:"stale"`
}

// Reasons a requirement fails the gate (ReqResult.Gate).
const (
	GateFail       = "fail"
	GateError      = "error"
	GateUnverified = "unverified"
	GateStale      = "stale"
)

// Stopped is why a run could not decide.
type Stopped struct {
	Stage   string `json:"stage"` // out, reach, discovery, credential, or target_stopped
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

// BaselineResult records a baseline's effect on a run.
type BaselineResult struct {
	File    string `json:"file"`
	Entries int    `json:"entries"`
	// Expected: listed, and failed, stayed unverified or warned; they do
	// not block their level.
	Expected []string `json:"expected"`
	// Stale: listed, and passed; each fails the run until it is removed.
	Stale []string `json:"stale"`
	// NotChecked: listed, but not judged in this run (not applicable, a
	// level not run, or a suite error); neither expected nor stale.
	NotChecked []string `json:"not_checked"`
}

// Tool names this program.
type Tool struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// LevelResult is one level's standing.
type LevelResult struct {
	target.Selection
	Status LevelStatus `json:"status"`
	Why    string      `json:"why"`
	Counts Counts      `json:"counts"`
	// ToVerify groups the level's unverified observable MUSTs by what the
	// implementer can do to verify them.
	ToVerify []Remedy `json:"to_verify,omitempty"`
	// MUSTs is how the level's observable MUSTs ended and on what evidence
	// (nil for a level the run did not check).
	MUSTs *MustTally `json:"musts,omitempty"`
}

// MustTally counts a level's observable MUSTs (MUST and MUST NOT) by how
// they ended: verified without any test hook, verified with one (some
// spec's evidence for it came through a conform.* hook,
// docs/interpretations.md#hook-attested), failed, not verified
// (unverified or errored), not applicable or not requested (an area the
// user left out). The six add up to Observable.
type MustTally struct {
	Observable          int `json:"observable"`
	VerifiedWithoutHook int `json:"verified_without_hook"`
	VerifiedWithHook    int `json:"verified_with_hook"`
	Failed              int `json:"failed"`
	NotVerified         int `json:"not_verified"`
	NotApplicable       int `json:"not_applicable"`
	// NotRequested are those the run left out by the user's choice of
	// areas (--areas, --skip-areas).
	NotRequested int `json:"not_requested"`
	// Hooks are the test hooks the level's verified MUSTs rest on.
	Hooks []string `json:"hooks,omitempty"`
}

// Remedy is one thing an implementer can do, and the requirements it would
// let the suite verify.
type Remedy struct {
	Remedy       string   `json:"remedy"`
	Requirements []string `json:"requirements"`
}

// ReqResult is one requirement's verdict, rolled up over its specs.
type ReqResult struct {
	ID         string     `json:"id"`
	Level      string     `json:"level"`
	Keyword    string     `json:"keyword"`
	Section    string     `json:"section"`
	Link       string     `json:"link"`
	Summary    string     `json:"summary"`
	Verdict    Verdict    `json:"verdict"`
	Message    string     `json:"message"`
	Remedy     string     `json:"remedy,omitempty"` // for unverified: how to get it verified
	DurationMS float64    `json:"duration_ms"`
	Specs      []string   `json:"specs"`
	Evidence   []Evidence `json:"evidence,omitempty"`
	// Hooks names the test hooks (conform.scenarios, …) some spec's
	// evidence for this verdict came through: the verdict is
	// hook-attested. Empty: no spec that judged it used one.
	Hooks []string `json:"hooks,omitempty"`
	// Expected: a baseline lists this requirement and it failed, stayed
	// unverified or warned; its verdict is kept, but it does not block its
	// level. Stale: a baseline lists it and it passed.
	Expected       bool   `json:"expected,omitempty"`
	Stale          bool   `json:"stale,omitempty"`
	BaselineReason string `json:"baseline_reason,omitempty"`
	// OptedOut: not checked because the user left its area out (--areas,
	// --skip-areas); its verdict is skip, and it never fails the gate.
	OptedOut bool `json:"opted_out,omitempty"`
	// Gate says why this requirement fails the run's gate (GateFail,
	// GateError, GateUnverified, GateStale); empty when it does not.
	Gate string `json:"gate,omitempty"`
}

// Evidence ties a non-passing requirement to the spec that saw it.
type Evidence struct {
	Spec    string  `json:"spec"`
	Verdict Verdict `json:"verdict"`
	Message string  `json:"message"`
	Remedy  string  `json:"remedy,omitempty"`
	Curl    string  `json:"curl,omitempty"`
	// Hooks are the test hooks this spec's evidence for it came through.
	Hooks []string `json:"hooks,omitempty"`
}

// SpecResult is one Ginkgo spec.
type SpecResult struct {
	Name         string            `json:"name"`
	Location     string            `json:"location"`
	Requirements []string          `json:"requirements"`
	Verdict      Verdict           `json:"verdict"`
	Message      string            `json:"message,omitempty"`
	Remedy       string            `json:"remedy,omitempty"`
	DurationMS   float64           `json:"duration_ms"`
	Transcript   []client.Exchange `json:"transcript,omitempty"`
	Dropped      int               `json:"transcript_dropped,omitempty"`
	// Evidence holds the documents the spec attached (a FidelityReport of
	// the Replay level's tape checks), whatever its verdict.
	Evidence []evidence.Attachment `json:"evidence,omitempty"`
	// Hooks are the test hooks the spec used, each with the requirements
	// whose verdicts rest on it (all the spec's when none are named).
	Hooks []evidence.HookUse `json:"hooks,omitempty"`
}

// OpLatency summarises one operation's round trips.
type OpLatency struct {
	Op    string  `json:"op"`
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
}
