package main

// Proof runs: the suite at some levels against a served reference Harness.
// They are most of this package's time, so they run on a pool of workers
// of their own (proofWorkers), apart from the -parallel limit of the tests
// that judge them (which TestMain lifts: raiseParallel). In a run of the
// whole package TestMain queues every planned run before the tests start;
// under -run, -skip or -short each proof test queues its own when it
// starts, and under a -run naming rows (TestX/row) each row queues its run
// when it asks for it. A proof test (a top-level parallel test that
// collects its rows' runs in order) marks its runs urgent when it starts:
// the workers take urgent runs first, whichever order the tests start in.
// Tests that ask for the same run (the same target, levels and flags)
// share one.

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/harn-conform/conform/internal/testmain"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// proofTier skips the calling test unless -proofs is set. The proof tier
// is every test that judges the suite's verdicts against the reference
// Harness with a fault, a variant or a middleware (the fault-proof matrix,
// the legal variants, the clean and hookless runs of each area): some 280
// whole-level runs, three to four minutes of both cores. Without it this
// package runs its unit tier: the CLI, the reports, the preflight, the
// distribution, and the static checks that every MUST has a fault row
// (internal/testmain; docs/performance.md, "The test command").
func proofTier(t *testing.T) {
	t.Helper()
	if !testmain.Proofs() {
		t.Skip("proof tier: go test ./cmd/conform -proofs runs it (.ci/run does)")
	}
}

// proofJob is one proof run: the suite at levels, with extra flags,
// against a harness served as spec says.
type proofJob struct {
	spec   targetSpec
	levels string
	extra  []string
}

func (j proofJob) args() []string {
	return append([]string{"run", "--levels", j.levels, "--stream-timeout", faultStreamTimeout}, j.extra...)
}

func (j proofJob) key() string {
	return strings.Join(j.spec.args(), " ") + " | " + strings.Join(j.args(), " ")
}

// proofWorkers is how many proof runs are in flight at once. One run keeps
// about one CPU busy (its two processes hand the work back and forth); a
// few more than the CPUs fill the gaps while runs wait on their targets.
// More runs at once make each slower, never wrong: every wait inside a run
// has a timeout far above what a loaded machine needs.
var proofWorkers = 2 * runtime.GOMAXPROCS(0)

// A proofRun is a proof job's result, once done is closed.
type proofRun struct {
	job      proofJob
	done     chan struct{}
	queued   bool // in proofs.queue, or taken from it
	urgent   bool // a test waits for it
	used     bool // some test collected it
	code     int
	console  string
	r        *reports.Report
	changed  int // how often the target's middleware changed an answer
	problems []string
	err      error
}

var proofs = struct {
	sync.Mutex
	work  *sync.Cond           // signalled when queue grows or a run becomes urgent
	queue []*proofRun          // runs not started yet, in plan order
	runs  map[string]*proofRun // every run, by iteration and job key
	iter  map[string]int       // by top-level test: how often it started (-count)
	all   map[int]bool         // iterations whose whole plan is queued
	start sync.Once            // starts the workers
}{runs: map[string]*proofRun{}, iter: map[string]int{}, all: map[int]bool{}}

// startProofs queues the proof runs of the calling top-level test (and, in
// a run of the whole package, of every proof test) and makes them urgent:
// the test is about to wait for them, holding one of its -parallel slots.
// It must be called before the test asks for its runs.
func startProofs(t *testing.T) {
	t.Helper()
	if strings.Contains(t.Name(), "/") {
		t.Fatal("startProofs is for top-level tests")
	}
	proofTier(t)
	if _, ok := proofPlan[t.Name()]; !ok {
		t.Fatalf("%s has no entry in proofPlan", t.Name())
	}
	proofs.Lock()
	defer proofs.Unlock()
	proofs.iter[t.Name()]++
	iter := proofs.iter[t.Name()]
	if wholePackage() {
		queueAllLocked(iter)
	}
	if strings.Contains(flagValue("test.run"), "/") {
		// -run picks some rows of the test: each queues its own run when
		// it asks for it (proof), and the rest of the plan is not run.
		return
	}
	for _, j := range proofPlan[t.Name()]() {
		queueLocked(lookupLocked(iter, j)).urgent = true
	}
	proofs.work.Broadcast()
}

// queueAll queues the whole plan of the first iteration (TestMain, in a
// run of the whole package).
func queueAll() {
	proofs.Lock()
	defer proofs.Unlock()
	queueAllLocked(1)
}

func queueAllLocked(iter int) {
	if proofs.all[iter] {
		return
	}
	proofs.all[iter] = true
	for _, name := range planOrder {
		for _, j := range proofPlan[name]() {
			queueLocked(lookupLocked(iter, j))
		}
	}
	proofs.work.Broadcast()
}

// queueLocked queues run unless it is queued or started already, and
// starts the workers.
func queueLocked(run *proofRun) *proofRun {
	proofs.start.Do(func() {
		proofs.work = sync.NewCond(&proofs.Mutex)
		for range proofWorkers {
			go proofWorker()
		}
	})
	if !run.queued {
		run.queued = true
		proofs.queue = append(proofs.queue, run)
	}
	return run
}

// proofWorker runs queued runs, the urgent ones (a test waits for them)
// first, each group in plan order.
func proofWorker() {
	proofs.Lock()
	for {
		i := slices.IndexFunc(proofs.queue, func(r *proofRun) bool { return r.urgent })
		if i < 0 && len(proofs.queue) > 0 {
			i = 0
		}
		if i < 0 {
			proofs.work.Wait()
			continue
		}
		run := proofs.queue[i]
		proofs.queue = slices.Delete(proofs.queue, i, i+1)
		proofs.Unlock()
		run.exec()
		proofs.Lock()
	}
}

// wholePackage reports whether every proof test runs (-proofs, and no
// -run, -skip, -short or -list).
func wholePackage() bool {
	return testmain.Proofs() && flagValue("test.run") == "" && flagValue("test.skip") == "" && flagValue("test.list") == "" && !testing.Short()
}

// lookupLocked returns the run of job j in iteration iter, creating it.
func lookupLocked(iter int, j proofJob) *proofRun {
	k := fmt.Sprintf("#%d %s", iter, j.key())
	run, ok := proofs.runs[k]
	if !ok {
		run = &proofRun{job: j, done: make(chan struct{})}
		proofs.runs[k] = run
	}
	return run
}

// proof runs (or collects the queued run of) the suite at levels against a
// harness served as spec says, with extra flags. It fails the test if the
// run wrote no report, and reports the run's problems (a panic, a report
// off its schema, a suite defect) in every test that shares it. It returns
// the exit code, the report and how often the target's middleware changed
// an answer.
func proof(t *testing.T, name string, spec targetSpec, levels string, extra ...string) (int, *reports.Report, int) {
	t.Helper()
	job := proofJob{spec: spec, levels: levels, extra: extra}
	top, _, _ := strings.Cut(t.Name(), "/")
	proofs.Lock()
	var run *proofRun
	if iter := proofs.iter[top]; iter == 0 {
		run = &proofRun{job: job, done: make(chan struct{})} // not planned: this test's own
	} else {
		run = lookupLocked(iter, job)
	}
	run.used = true
	queueLocked(run).urgent = true
	proofs.work.Broadcast()
	proofs.Unlock()
	<-run.done
	if run.err != nil {
		t.Fatalf("%s: %v", name, run.err)
	}
	for _, p := range run.problems {
		t.Errorf("%s: %s", name, p)
	}
	if run.r == nil {
		t.Fatalf("%s: no report; exit %d:\n%s", name, run.code, run.console)
	}
	return run.code, run.r, run.changed
}

// exec runs the job and closes done.
func (run *proofRun) exec() {
	defer close(run.done)
	p, err := serve(run.job.spec)
	if err != nil {
		run.err = err
		return
	}
	out, err := os.MkdirTemp("", "conform-proof-")
	if err != nil {
		p.stop()
		run.err = err
		return
	}
	defer os.RemoveAll(out)
	args := run.job.args()
	args = append(args[:1:1], append([]string{"--target", p.URL}, args[1:]...)...)
	var raw []byte
	run.code, run.console, raw, run.err = execConformIn(out, []string{oneProc}, args...)
	changed, err := p.stop()
	if run.err == nil {
		run.err = err
	}
	run.changed = changed
	if run.err == nil {
		run.r, run.problems = reportProblems(args, run.console, raw)
	}
}

// unusedProofs lists queued runs no test collected: the plan and the tests
// disagree, and the runs were wasted.
func unusedProofs() []string {
	proofs.Lock()
	defer proofs.Unlock()
	var out []string
	for k, run := range proofs.runs {
		if !run.used {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// The plan: every proof run each proof test asks for, built from the same
// declarations and lists the tests read. TestMain reports a planned run no
// test collected.
var proofPlan = map[string]func() []proofJob{
	"TestCoreFaultsCaught":            func() []proofJob { return poolJobs("core") },
	"TestHooklessFaultsCaught":        func() []proofJob { return poolJobs("core-hookless") },
	"TestSlowHooklessFaultsCaught":    func() []proofJob { return poolJobs("core-hookless-slow") },
	"TestReceiptHooklessFaultsCaught": func() []proofJob { return poolJobs("receipts-hookless-slow") },
	"TestCoreShouldFaultsWarn":        func() []proofJob { return poolJobs("core-should") },
	"TestReceiptFaultsCaught":         func() []proofJob { return poolJobs("receipts") },
	"TestReceiptShouldFaultsWarn":     func() []proofJob { return poolJobs("receipts-should") },
	"TestWrappedVariantsPass": func() []proofJob {
		var jobs []proofJob
		for _, v := range cleanWrapVariants() {
			jobs = append(jobs, proofJob{spec: wrapped(v.Name), levels: v.Level})
		}
		return jobs
	},
	"TestRESTVariantsPass":    func() []proofJob { return variantJobs(restVariants, "core") },
	"TestStreamVariantsPass":  func() []proofJob { return variantJobs(streamVariants, "core") },
	"TestReceiptVariantsPass": func() []proofJob { return variantJobs(refharness.AllVariants(), "receipts") },
	"TestReceiptNothingToCheckIsUnverified": func() []proofJob {
		var jobs []proofJob
		for _, r := range receiptUnverifiedRows {
			jobs = append(jobs, proofJob{spec: r.Target, levels: "receipts"})
		}
		return jobs
	},
	"TestReceiptSigningVariantsConformant": func() []proofJob {
		var jobs []proofJob
		for _, v := range receiptSigningVariants {
			jobs = append(jobs, proofJob{spec: variantSpec(v), levels: "receipts"})
		}
		return jobs
	},
	"TestReceiptPolicyOptional": func() []proofJob {
		return wrapJobs([]string{"receipt-policy-optional"}, "receipts")
	},
	"TestThirdPartyStyleRun": func() []proofJob {
		return []proofJob{{spec: targetSpec{Variants: noHook}, levels: "core,receipts"}, {spec: targetSpec{Variants: noHookSlow}, levels: "core,receipts"}, {spec: targetSpec{}, levels: "core,receipts"}}
	},
	"TestCoreReadsWithoutArtifactRegistration": func() []proofJob {
		return []proofJob{{spec: targetSpec{Variants: noHook, Wrap: noRegistrationWrap}, levels: "core"}}
	},
	"TestCoreWithoutArtifacts": func() []proofJob {
		return []proofJob{{spec: targetSpec{Variants: noHook, Wrap: noArtifactsWrap}, levels: "core"}}
	},
	"TestSlowAgentConformant": func() []proofJob {
		return []proofJob{{spec: variantSpec(refharness.VariantSlowAgent), levels: "core"}}
	},
	"TestChattyAgentConformant": func() []proofJob {
		return []proofJob{{spec: variantSpec(refharness.VariantChattyAgent), levels: "core"}}
	},
	"TestCoreOnlyServer": func() []proofJob {
		s := variantSpec(refharness.VariantCoreOnly)
		return []proofJob{{spec: s, levels: "core", extra: []string{"--workspace-id", refharness.ProvisionedWorkspaceID}}, {spec: s, levels: "core"}}
	},
}

// planOrder is the order the proof tests start in as parallel tests (the
// order they are declared in, file by file), and so collect their runs
// in: the pool works on the runs the waiting tests need first.
var planOrder = []string{
	"TestSlowHooklessFaultsCaught", "TestCoreFaultsCaught", "TestHooklessFaultsCaught", "TestCoreShouldFaultsWarn", // faults_core_test.go
	"TestReceiptHooklessFaultsCaught", "TestReceiptFaultsCaught", "TestReceiptShouldFaultsWarn", "TestReceiptVariantsPass", "TestReceiptNothingToCheckIsUnverified",
	"TestReceiptSigningVariantsConformant", "TestReceiptPolicyOptional", // faults_receipts_test.go
	"TestRESTVariantsPass",                                                                                                                                                         // faults_rest_test.go
	"TestStreamVariantsPass",                                                                                                                                                       // faults_stream_test.go
	"TestWrappedVariantsPass",                                                                                                                                                      // faultrows_test.go
	"TestThirdPartyStyleRun", "TestCoreReadsWithoutArtifactRegistration", "TestCoreWithoutArtifacts", "TestSlowAgentConformant", "TestChattyAgentConformant", "TestCoreOnlyServer", // trust_test.go
}

// planProofs adds a proof test's runs to the plan, after those above: a
// file of proof tests calls it from init (files initialise in name order,
// so the plan order stays fixed).
func planProofs(name string, jobs func() []proofJob) {
	if _, dup := proofPlan[name]; dup {
		panic("planProofs: " + name + " is planned twice")
	}
	proofPlan[name] = jobs
	planOrder = append(planOrder, name)
}

// The plan lists every proof test, once, and planOrder lists the plan.
func TestProofPlan(t *testing.T) {
	seen := map[string]bool{}
	for _, name := range planOrder {
		if seen[name] || proofPlan[name] == nil {
			t.Errorf("planOrder: %s is listed twice or has no plan", name)
		}
		seen[name] = true
	}
	if len(seen) != len(proofPlan) {
		t.Errorf("planOrder lists %d tests, proofPlan %d", len(seen), len(proofPlan))
	}
	// Every planned test exists: a plan without its test queues runs
	// nobody collects, which only the proof tier would notice.
	tests := testFuncs(t)
	for name := range proofPlan {
		if !tests[name] {
			t.Errorf("proofPlan plans runs for %s, which is no test of this package", name)
		}
	}
}

// testFuncs are the names of the package's test functions, read from its
// _test.go files.
func testFuncs(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's test files: %v (%d)", err, len(files))
	}
	out := map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil && strings.HasPrefix(fd.Name.Name, "Test") {
				out[fd.Name.Name] = true
			}
		}
	}
	return out
}

var noHook = []refharness.Variant{refharness.VariantNoScenarioHook}

// noHookSlow is a target without the hook whose agent takes a second over
// a plain task and fails one with no text: the run catches its own tasks
// running, canceled and failed.
var noHookSlow = []refharness.Variant{refharness.VariantNoScenarioHook, refharness.VariantSlowAgent}

// noRegistrationWrap answers 404 to POST /v1/artifacts: a Core server
// without artifact registration, which is Extended. noArtifactsWrap also
// hides every artifact the harness has (lists, Outcomes).
const (
	noRegistrationWrap = "no-artifact-registration"
	noArtifactsWrap    = "no-artifacts-shown"
)

func variantSpec(v refharness.Variant) targetSpec {
	if v == "" {
		return targetSpec{}
	}
	return targetSpec{Variants: []refharness.Variant{v}}
}

func variantJobs(vs []refharness.Variant, levels string) []proofJob {
	var jobs []proofJob
	for _, v := range vs {
		jobs = append(jobs, proofJob{spec: variantSpec(v), levels: levels})
	}
	return jobs
}

func wrapJobs(ws []string, levels string) []proofJob {
	var jobs []proofJob
	for _, w := range ws {
		jobs = append(jobs, proofJob{spec: wrapped(w), levels: levels})
	}
	return jobs
}

func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}
	return ""
}
