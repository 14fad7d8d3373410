package main

// The fault rows of the self-check, derived from the faults' declarations
// (package fault): the reference Harness's in-server faults
// (refharness.FaultDecls, each in the file of the area it breaks) and its
// wire faults (wrapfault.Faults). A declaration says what the suite must
// fail, tolerate and warn about, and which proof run its row belongs to;
// nothing here restates it. A row of the shared pool of its level runs
// with partners (faultgroups_test.go); the card and OAuth rows run
// narrowed (card_test.go, oauth_test.go), the restart rows with
// --restart-cmd (durability_test.go), and the profiles' rows against their
// own references (faults_openharness_test.go, faults_acpharbor_test.go).

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/refharness/fault"
	refoh "github.com/harn-conform/conform/refharness/openharness"
	"github.com/harn-conform/conform/refharness/wrapfault"
)

// harnFaults are the reference Harness's faults, in-server and wire,
// sorted by name.
func harnFaults() []fault.Fault {
	out := slices.Concat(refharness.FaultDecls(), wrapfault.Faults())
	slices.SortFunc(out, func(a, b fault.Fault) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// levelOf is the level of a fault's own requirements (faults break the
// requirements of one level; TestFaultDeclarationsNameRequirements keeps
// it so).
func levelOf(f fault.Fault) string {
	r, _ := requirements.MustDefault().Lookup(f.Own()[0])
	return string(r.Level)
}

// hookTarget is which reference a pool's rows run against: the Harness with
// its scenario hook, without it (withoutHook), or without it and with an
// agent that works a second over a task and fails one with no text
// (slowHookless).
type hookTarget int

const (
	withHook hookTarget = iota
	withoutHook
	slowHookless
)

// on reports whether f has a row on target t.
func (t hookTarget) on(f fault.Fault) bool {
	switch t {
	case withoutHook:
		return f.Hookless
	case slowHookless:
		return f.SlowHookless
	}
	return true
}

// poolRows are the rows of the shared pool of level: the faults whose
// proof run is the pool's (or the actors' run, which runs alone), MUST
// rows or SHOULD rows, that have a row on target t.
func poolRows(level string, should bool, t hookTarget) func() []groupRow {
	return func() []groupRow {
		var out []groupRow
		for _, f := range harnFaults() {
			if (f.Run != fault.Pool && f.Run != fault.Actors) || levelOf(f) != level || should != (len(f.Fails) == 0) {
				continue
			}
			if !t.on(f) {
				continue
			}
			out = append(out, groupRow{Fault: f, args: rowArgs(f)})
		}
		return out
	}
}

// rowArgs are the `conform run` flags a row needs of its own.
func rowArgs(f fault.Fault) []string {
	var args []string
	if f.Run == fault.Actors {
		args = append(args, actorArgs...) // faults_ext_authz_test.go
	}
	if f.TaskTimeout > 0 {
		args = append(args, "--task-timeout", f.TaskTimeout.String())
	}
	return args
}

// faultPools are every pool, by name: one per level and kind of row, and
// Core's and Receipts' faults again on targets without the scenario hook.
var faultPools = map[string]*faultPool{
	"core":                   {levels: "core", rows: poolRows("core", false, withHook)},
	"core-hookless":          {levels: "core", variants: noHook, rows: poolRows("core", false, withoutHook)},
	"core-hookless-slow":     {levels: "core", variants: noHookSlow, rows: poolRows("core", false, slowHookless)},
	"core-should":            {levels: "core", rows: poolRows("core", true, withHook)},
	"receipts":               {levels: "receipts", rows: poolRows("receipts", false, withHook)},
	"receipts-hookless-slow": {levels: "receipts", variants: noHookSlow, rows: poolRows("receipts", false, slowHookless)},
	"receipts-should":        {levels: "receipts", rows: poolRows("receipts", true, withHook)},
	"extended":               {levels: "extended", rows: poolRows("extended", false, withHook)},
	"extended-should":        {levels: "extended", rows: poolRows("extended", true, withHook)},
	"replay":                 {levels: "replay", rows: poolRows("replay", false, withHook)},
	"replay-should":          {levels: "replay", rows: poolRows("replay", true, withHook)},
}

// hooklessPools are the pools whose rows repeat, on another target, rows
// of their level's own pool.
var hooklessPools = map[string]hookTarget{"core-hookless": withoutHook, "core-hookless-slow": slowHookless, "receipts-hookless-slow": slowHookless}

// poolTests name each pool's proof test.
var poolTests = map[string]string{
	"TestCoreFaultsCaught":            "core",
	"TestHooklessFaultsCaught":        "core-hookless",
	"TestSlowHooklessFaultsCaught":    "core-hookless-slow",
	"TestReceiptHooklessFaultsCaught": "receipts-hookless-slow",
	"TestCoreShouldFaultsWarn":        "core-should",
	"TestReceiptFaultsCaught":         "receipts",
	"TestReceiptShouldFaultsWarn":     "receipts-should",
	"TestExtendedFaultsCaught":        "extended",
	"TestExtendedShouldFaultsWarn":    "extended-should",
	"TestReplayFaultsCaught":          "replay",
	"TestReplayShouldFaultsWarn":      "replay-should",
}

// runPool runs the rows of the calling test's pool, each a subtest, in
// order: a MUST row's requirements must fail (and nothing but its
// tolerated ones), a SHOULD row's must warn (and nothing fail).
func runPool(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per fault")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	name := poolTests[t.Name()]
	for _, r := range pool(name).rs {
		t.Run(r.Name, func(t *testing.T) { assertRow(t, name, r) })
	}
}

// runFaults are the faults whose row is a run of its own kind.
func runFaults(run fault.Run) []fault.Fault {
	var out []fault.Fault
	for _, f := range harnFaults() {
		if f.Run == run {
			out = append(out, f)
		}
	}
	return out
}

// restartRows are the faults TestRestartFaultsCaught runs (with the
// message it checks for each): a restart fault needs a test that knows
// what the recovered target should say.
var restartRows = map[string]string{
	"keeps-waiting":                  "was INPUT_REQUIRED before the restart and is still INPUT_REQUIRED after it",
	"replay-history-lost-on-restart": "of a task that ran before it",
}

// Every declared fault is some proof test's row: its level's pool (and
// the hook-less pool too when it says so), a narrowed card or OAuth run,
// a restart run, or its profile's rows, and it fails or warns about
// requirements of one level. A fault no row runs proves nothing.
func TestEveryFaultHasARow(t *testing.T) {
	rowed := map[string]int{}
	for name := range faultPools {
		for _, r := range pool(name).rs {
			if on, again := hooklessPools[name]; !again {
				rowed[r.Name]++
			} else if !on.on(r.Fault) {
				t.Errorf("%s has %s, whose declaration does not ask for a row there", name, r.Name)
			}
		}
	}
	for _, run := range []fault.Run{fault.Card, fault.OAuth, fault.Restart} {
		for _, f := range runFaults(run) {
			rowed[f.Name]++
			if f.Kind == fault.Wire && run != fault.Restart {
				t.Errorf("%s: a %s run serves the Harness with in-server faults only, not the wire fault", f.Name, run)
			}
		}
	}
	for _, f := range runFaults(fault.Restart) {
		if _, ok := restartRows[f.Name]; !ok {
			t.Errorf("%s needs a restart, but TestRestartFaultsCaught does not run it (restartRows)", f.Name)
		}
	}
	for _, f := range harnFaults() {
		if rowed[f.Name] != 1 {
			t.Errorf("%s (%s, run %q) is the row of %d proof tests, want 1", f.Name, f.Kind, f.Run, rowed[f.Name])
		}
		if f.Hookless && (levelOf(f) != "core" || f.Run != fault.Pool) {
			t.Errorf("%s: only Core faults of the pool have a hook-less row", f.Name)
		}
		if f.SlowHookless && (levelOf(f) != "core" && levelOf(f) != "receipts" || f.Run != fault.Pool) {
			t.Errorf("%s: only Core and Receipts faults of the pool have a slow-agent hook-less row", f.Name)
		}
	}
	if len(pool("core-hookless").rs) == 0 {
		t.Error("no Core fault is proven without the scenario hook")
	}
	for _, fs := range [][]fault.Fault{refoh.FaultDecls(), acpharbor.FaultDecls()} {
		for _, f := range fs {
			if f.Run != fault.Pool || f.Hookless || f.SlowHookless || f.Alone || f.TaskTimeout > 0 {
				t.Errorf("%s: a profile's row is a run of the profile against its reference; its declaration asks for more", f.Name)
			}
		}
	}
}

// Each declaration names registered requirements of one level: what it
// fails is mandatory, what it warns about is not; the Harness's faults and
// variants, in-server and wire, share one name space (--fault and
// --variant of conform serve take either kind).
func TestFaultDeclarationsNameRequirements(t *testing.T) {
	reg := requirements.MustDefault()
	all := slices.Concat(harnFaults(), refoh.FaultDecls(), acpharbor.FaultDecls())
	for _, f := range all {
		var level requirements.Level
		for _, id := range slices.Concat(f.Fails, f.Tolerated, f.Warns, f.NotApplicable) {
			r, ok := reg.Lookup(id)
			switch {
			case !ok:
				t.Errorf("%s names %s, which is not in the registry", f.Name, id)
				continue
			case level == "":
				level = r.Level
			case r.Level != level:
				t.Errorf("%s names %s of level %s besides requirements of %s", f.Name, id, r.Level, level)
			}
			if slices.Contains(f.Fails, id) && !r.Keyword.Mandatory() {
				t.Errorf("%s fails %s, a %s: a fault that breaks it must only warn (Warns)", f.Name, id, r.Keyword)
			}
			if slices.Contains(f.Warns, id) && r.Keyword.Mandatory() {
				t.Errorf("%s warns about %s, a %s: breaking it fails", f.Name, id, r.Keyword)
			}
		}
	}
	seen := map[string]string{}
	names := func(kind string, ns ...string) {
		for _, n := range ns {
			if prev, dup := seen[n]; dup {
				t.Errorf("%s is both a %s and a %s", n, prev, kind)
			}
			seen[n] = kind
		}
	}
	for _, f := range harnFaults() {
		names("fault", f.Name)
	}
	for _, v := range slices.Concat(refharness.VariantDecls(), wrapfault.Variants()) {
		names("variant", v.Name)
	}
}

// Every observable MUST of a level with a suite is proven catchable: some
// fault (of the reference Harness, in-server or wire, or of a profile's
// reference) fails it, or the registry explains why no target-side fault
// can break it.
func TestEveryMustHasAFault(t *testing.T) {
	proven := map[string]bool{}
	for _, f := range slices.Concat(harnFaults(), refoh.FaultDecls(), acpharbor.FaultDecls()) {
		for _, id := range f.Fails {
			proven[id] = true
		}
	}
	reg, err := requirements.Default()
	if err != nil {
		t.Fatal(err)
	}
	// Extended is judged by what it checks: a MUST with a spec needs a
	// fault (TestCoverageGate requires the specs, area by area).
	specced := map[string]bool{}
	out, err := exec.Command(conformBin, "list", "--format", "json", "--levels", "extended").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID    string
		Specs []string
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		specced[r.ID] = len(r.Specs) > 0
	}
	if len(rows) == 0 {
		t.Fatal("conform list --levels extended listed nothing")
	}
	for _, level := range []requirements.Level{requirements.Core, requirements.Receipts, requirements.Extended, requirements.OpenHarness, requirements.ACPHarbor, requirements.Replay} {
		for _, r := range reg.ByLevel(level) {
			if level == requirements.Extended && !specced[r.ID] {
				continue
			}
			if r.Keyword.Mandatory() && r.Observable && r.Exclusion == "" && !proven[r.ID] && noTargetFault[r.ID] == "" {
				t.Errorf("%s (%s) has no fault proving the suite can fail it", r.ID, r.Keyword)
			}
			if proven[r.ID] && noTargetFault[r.ID] != "" {
				t.Errorf("%s has a fault now: drop it from noTargetFault", r.ID)
			}
		}
	}
}

// noTargetFault lists MUSTs no fault of the reference can break, with the
// reason; each is proven by a Go test of the checker instead.
var noTargetFault = map[string]string{
	// Durability needs a restart, and a lost idempotency record is state
	// a middleware cannot fake: TestDurabilityForgetfulTarget
	// (durability_test.go) restarts an in-memory `conform serve` by
	// --restart-cmd and sees exactly the durability MUSTs fail.
	"CORE-DUR-002": "TestDurabilityForgetfulTarget",
}

// The wire variants' rows, derived from their declarations
// (wrapfault.Variants): a variant with a Level must leave that level's run
// clean (TestWrappedVariantsPass), or, when it declares what it leaves
// unverified, leave exactly that unverified and fail nothing (an
// unverifiedRow of its level's test); a variant without a Level is proven
// by a test of its own (wrapVariantTests).

// wrapVariantTests are the wire variants a test of their own proves.
var wrapVariantTests = map[string]string{"receipt-policy-optional": "TestReceiptPolicyOptional", noArtifactsWrap: "TestCoreWithoutArtifacts"}

// cleanWrapVariants are the wire variants whose level's run must be clean.
func cleanWrapVariants() []fault.Variant {
	var out []fault.Variant
	for _, v := range wrapfault.Variants() {
		if v.Level != "" && len(v.Unverified) == 0 {
			out = append(out, v)
		}
	}
	return out
}

// unverifiedRow is a legal target with nothing to look at for some
// requirements: they must be unverified, with a remedy.
type unverifiedRow struct {
	Name       string
	Target     targetSpec
	Unverified []string
}

// unverifiedRows are the rows of level: its wire variants that declare
// what they leave unverified, then more.
func unverifiedRows(level string, more ...unverifiedRow) []unverifiedRow {
	var out []unverifiedRow
	for _, v := range wrapfault.Variants() {
		if v.Level == level && len(v.Unverified) > 0 {
			out = append(out, unverifiedRow{Name: v.Name, Target: wrapped(v.Name), Unverified: v.Unverified})
		}
	}
	return append(out, more...)
}

// Legal behaviour the reference Harness has no variant for, put in front
// of it by a middleware: the suite must pass its level with no failure,
// error or warning; and a reading declared Met must have been met (a
// reading the suite never met proves nothing).
func TestWrappedVariantsPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the suite once per variant")
	}
	startProofs(t)
	t.Parallel() // collects its rows, in order, from the proof pool
	for _, v := range cleanWrapVariants() {
		t.Run(v.Name, func(t *testing.T) {
			// The count of changed answers is taken after the target
			// served its last request.
			if used := assertClean(t, v.Name, wrapped(v.Name), v.Level); v.Met && used == 0 {
				t.Errorf("%s: the suite never met the changed behaviour (%s), so this proves nothing", v.Name, v.Doc)
			}
		})
	}
}

// Every wire fault and variant is the target of exactly one row: a
// fault's (TestEveryFaultHasARow counts them), or a variant's, by its
// declaration or a test of its own.
func TestEveryWrapHasARow(t *testing.T) {
	used := map[string]int{}
	for _, f := range wrapfault.Faults() {
		used[f.Name]++
	}
	for name, test := range wrapVariantTests {
		if v, ok := wrapfault.Variant(name); !ok || v.Level != "" {
			t.Errorf("%s: %s proves it, but it is no wire variant without a Level", name, test)
		}
		used[name]++
	}
	for _, v := range cleanWrapVariants() {
		used[v.Name]++
	}
	for _, r := range receiptUnverifiedRows {
		if r.Target.Wrap != "" {
			used[r.Target.Wrap]++
		}
	}
	for _, n := range wrapfault.Names() {
		if used[n] != 1 {
			t.Errorf("wrapfault %s is the target of %d rows, want 1", n, used[n])
		}
	}
	for _, v := range wrapfault.Variants() {
		if v.Level != "" && v.Level != "core" && v.Level != "receipts" && v.Level != "extended" && v.Level != "replay" {
			t.Errorf("%s: no test runs wire variants at level %q", v.Name, v.Level)
		}
		if len(v.Unverified) > 0 && v.Level != "receipts" {
			t.Errorf("%s: only the Receipts level has rows of what a variant leaves unverified", v.Name)
		}
	}
}
