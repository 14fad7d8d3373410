package main

// The suite tests itself: the reference Harness with one named fault must
// fail exactly the requirements that fault breaks, and with a legal but
// unusual variant it must still pass. Each case runs the real conform
// binary (Ginkgo allows one RunSpecs per process) against a reference
// Harness served by its own process (wrapserve), mounted under a path
// prefix. Nothing here waits on a clock: a run ends when conform exits, a
// target is up when it prints its address, and it is down when it has
// said how often its middleware changed an answer.

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/testmain"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// conformBin is the conform binary under test; wrapserveBin serves the
// reference Harness for proof runs (refharness/wrapfault/wrapserve). Both
// are built without -race: the suite and its target run at full speed, and
// only this test process pays for the race detector.
var conformBin, wrapserveBin string

func TestMain(m *testing.M) {
	testmain.Setup()
	dir, err := os.MkdirTemp("", "conform-bin-")
	if err != nil {
		panic(err)
	}
	if err := buildBinaries(dir, ".", "github.com/harn-conform/conform/refharness/wrapfault/wrapserve"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	conformBin = filepath.Join(dir, "conform")
	wrapserveBin = filepath.Join(dir, "wrapserve")
	flag.Parse()
	raiseParallel()
	if wholePackage() {
		queueAll()
	}
	code := m.Run()
	if unused := unusedProofs(); len(unused) > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "proofPlan queued runs no test collected (the plan and the tests disagree):\n  %s\n", strings.Join(unused, "\n  "))
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// raiseParallel lifts the -parallel limit (GOMAXPROCS by default) unless
// the command line set it. Most parallel tests here wait: for proof runs
// (bounded by the pool's workers) or for their own runs (bounded by
// directRuns). With the default limit, tests waiting for the pool hold the
// slots that tests with runs of their own need, and the machine idles.
// The value is changed without marking the flag as set: Ginkgo, linked in
// here, refuses to run specs when -parallel was set, and this is not the
// parallelism it means (its specs never run in this process).
func raiseParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if f := flag.Lookup("test.parallel"); f != nil && !set {
		f.Value.Set(strconv.Itoa(8 * runtime.GOMAXPROCS(0)))
	}
}

// buildBinaries builds the main packages pkgs into dir. The go command
// builds them into a directory that outlives the run (in the user's cache
// directory, one per checkout), where it relinks only what changed; a warm
// run then starts its tests seconds earlier. dir gets hard links to them,
// so that a concurrent build, which writes new files, never changes the
// binaries this run executes (a copy where a link cannot be made).
func buildBinaries(dir string, pkgs ...string) error {
	wd, err := os.Getwd()
	if err != nil {
		return err
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(wd))
	buildCache = filepath.Join(cache, "conform-selfcheck", hex.EncodeToString(sum[:8]))
	return cachedBuild(dir, nil, pkgs...)
}

// buildCache is the directory buildBinaries builds into.
var buildCache string

// cachedBuild builds the main packages pkgs with extra build flags into a
// directory of buildCache kept for these flags, and links the binaries into
// dir.
func cachedBuild(dir string, flags []string, pkgs ...string) error {
	sum := sha256.Sum256([]byte(strings.Join(flags, "\x00")))
	shared := filepath.Join(buildCache, hex.EncodeToString(sum[:4]))
	if err := os.MkdirAll(shared, 0o700); err != nil {
		return err
	}
	args := append(append([]string{"build"}, flags...), "-o", shared+string(os.PathSeparator))
	if out, err := exec.Command("go", append(args, pkgs...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("go build %v: %v\n%s", pkgs, err, out)
	}
	ents, err := os.ReadDir(shared)
	if err != nil {
		return err
	}
	for _, e := range ents {
		if err := linkOrCopy(filepath.Join(shared, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			return err
		}
	}
	return nil
}

func linkOrCopy(from, to string) error {
	if os.Link(from, to) == nil {
		return nil
	}
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}

// testKey is the canary API key of self-check runs.
const testKey = "sk-canary-selfcheck-5f3a9c"

// targetSpec says how the reference Harness of a proof run is set up: with
// these faults and variants, behind the wrapfault middleware Wrap (empty:
// none), mounted under /prefix (a target URL with a path prefix).
type targetSpec struct {
	Faults   []refharness.Fault
	Variants []refharness.Variant
	Wrap     string
	// Data is a data directory (empty: in memory); Addr a fixed listen
	// address (empty: any free port).
	Data, Addr string
	// Race serves the harness as a deployment runs, for the rows of the
	// race faults (fault.Fault.Race): its journal in a fresh temporary
	// directory (when Data is empty), as selftest has it, so that a write
	// waits for its fsync, and on every core rather than the one P of the
	// other proof runs. In memory on one P a write is over before the
	// next request is read, and the races these faults plant never show.
	Race bool
}

func (s targetSpec) args() []string {
	args := []string{"--addr", cmp.Or(s.Addr, "127.0.0.1:0")}
	for _, f := range s.Faults {
		args = append(args, "--fault", string(f))
	}
	for _, v := range s.Variants {
		if v != "" {
			args = append(args, "--variant", string(v))
		}
	}
	if s.Wrap != "" {
		args = append(args, "--wrap", s.Wrap)
	}
	if s.Data != "" {
		args = append(args, "--data", s.Data)
	}
	return args
}

// specOf is the targetSpec of harness options (faults and variants only).
func specOf(t *testing.T, opts refharness.Options) targetSpec {
	t.Helper()
	if opts.DataDir != "" || opts.APIKeys != nil || opts.Clock != nil || opts.IDs != nil {
		t.Fatal("harness: only Faults and Variants can be set for a served harness")
	}
	var s targetSpec
	for f, on := range opts.Faults {
		if on {
			s.Faults = append(s.Faults, f)
		}
	}
	for v, on := range opts.Variants {
		if on && v != "" {
			s.Variants = append(s.Variants, v)
		}
	}
	slices.Sort(s.Faults)
	slices.Sort(s.Variants)
	return s
}

// served is a reference Harness in a wrapserve process.
type served struct {
	URL    string
	cmd    *exec.Cmd
	out    *bufio.Reader
	stderr *bytes.Buffer
	stopO  sync.Once
	used   int
	err    error
	tmp    string // a data directory of its own, removed when it stops
}

// serve starts a wrapserve process and returns once it listens.
func serve(spec targetSpec) (*served, error) {
	var tmp string
	if spec.Race && spec.Data == "" {
		dir, err := os.MkdirTemp("", "conform-proof-data-")
		if err != nil {
			return nil, err
		}
		tmp, spec.Data = dir, dir
	}
	p, err := serveArgs(spec)
	if tmp != "" {
		if err != nil {
			os.RemoveAll(tmp)
		} else {
			p.tmp = tmp
		}
	}
	return p, err
}

func serveArgs(spec targetSpec) (*served, error) {
	cmd := exec.Command(wrapserveBin, append(spec.args(), "--lifeline")...)
	procs := oneProc
	if spec.Race {
		procs = "GOMAXPROCS=" + strconv.Itoa(runtime.NumCPU())
	}
	cmd.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey, procs,
		"CONFORM_SERVE_SECOND_API_KEY="+testSecondKey, "CONFORM_SERVE_READ_ONLY_API_KEY="+testReadOnlyKey) // faults_ext_authz_test.go
	p := &served{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stderr = p.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	// Its standard input is a pipe this process holds open until it exits,
	// however it exits: then wrapserve stops too.
	if _, err := cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p.out = bufio.NewReader(stdout)
	line, _ := p.out.ReadString('\n') // EOF if it exits instead
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "wrapserve: listening on ")
	if !ok {
		p.stop()
		return nil, fmt.Errorf("wrapserve %v printed %q, want its listening line; stderr:\n%s", spec.args(), line, p.stderr)
	}
	p.URL = url
	return p, nil
}

// stop ends the process and returns how often its middleware changed an
// answer (wrapserve prints it after every request it served has ended).
func (p *served) stop() (int, error) {
	p.stopO.Do(func() {
		p.cmd.Process.Signal(syscall.SIGTERM)
		rest, _ := io.ReadAll(p.out)
		werr := p.cmd.Wait()
		logCPU("serve", 0, p.cmd.ProcessState, p.cmd.Args[1:])
		if p.tmp != "" {
			os.RemoveAll(p.tmp)
		}
		for _, l := range strings.Split(string(rest), "\n") {
			if n, ok := strings.CutPrefix(l, "wrapserve: used "); ok {
				p.used, p.err = strconv.Atoi(n)
				return
			}
		}
		p.err = fmt.Errorf("wrapserve did not report its use (%v); stderr:\n%s", werr, p.stderr)
	})
	return p.used, p.err
}

// harness starts a reference Harness (in its own process) with the faults
// and variants of opts, under the /prefix path, and returns its base URL.
func harness(t *testing.T, opts refharness.Options) string {
	t.Helper()
	return serveFor(t, specOf(t, opts)).URL
}

// serveFor starts a served harness that lives as long as the test.
func serveFor(t *testing.T, spec targetSpec) *served {
	t.Helper()
	p, err := serve(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.stop() })
	return p
}

// cpuLog is where logCPU appends (CONFORM_TEST_CPU_LOG; unset: nowhere).
var cpuLog struct {
	sync.Mutex
	path string
	once sync.Once
}

// logCPU appends one line per process this package ran (what, wall
// seconds, CPU seconds, arguments) to the file CONFORM_TEST_CPU_LOG names:
// how docs/performance.md finds where the test command's CPU goes.
func logCPU(what string, wall time.Duration, st *os.ProcessState, args []string) {
	cpuLog.once.Do(func() { cpuLog.path = os.Getenv("CONFORM_TEST_CPU_LOG") })
	if cpuLog.path == "" || st == nil {
		return
	}
	cpuLog.Lock()
	defer cpuLog.Unlock()
	f, err := os.OpenFile(cpuLog.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s\t%.3f\t%.3f\t%s\n", what, wall.Seconds(), (st.UserTime() + st.SystemTime()).Seconds(), strings.Join(args, " "))
}

// oneProc runs a subprocess on one P: proof runs are many small processes
// side by side, and a Go runtime with one P spends far less CPU spinning
// for work (a fifth less per proof run, measured) while the processes
// still overlap each other's waits.
const oneProc = "GOMAXPROCS=1"

// execConform runs the binary with its report in out and returns its exit
// code, console output and conform.json (nil if it wrote none). env is
// added to the environment.
func execConform(out string, env []string, args ...string) (int, string, []byte, error) {
	defer direct()()
	return execConformIn(out, env, args...)
}

// execConformIn is execConform without a directRuns slot: the proof pool
// bounds its own runs.
func execConformIn(out string, env []string, args ...string) (int, string, []byte, error) {
	// A hang guard, not a speed target: a run that does not end within this
	// bound is a bug (every wait in the suite has its own timeout).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, conformBin, append(args, "--out", out)...)
	cmd.Env = append(append(os.Environ(), "CONFORM_API_KEY="+testKey), env...)
	t0 := time.Now()
	b, err := cmd.CombinedOutput()
	logCPU("conform", time.Since(t0), cmd.ProcessState, args)
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return 0, string(b), nil, err
	}
	if ctx.Err() != nil {
		return code, string(b), nil, fmt.Errorf("conform %v hung; output so far:\n%s", args, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, reports.JSONFile))
	if err != nil {
		raw = nil
	}
	return code, string(b), raw, nil
}

// reportProblems lists what is wrong with a run's console and report
// whatever the target: a panic, a report that does not parse or match its
// schema, a suite defect.
func reportProblems(args []string, console string, raw []byte) (*reports.Report, []string) {
	var problems []string
	if strings.Contains(console, "panic:") || strings.Contains(console, "goroutine ") {
		problems = append(problems, fmt.Sprintf("conform %v panicked:\n%s", args, console))
	}
	if raw == nil {
		return nil, problems
	}
	// Whether the report matches its schema, conform checked as it wrote
	// it (reports.SchemaProblems): a mismatch is among its suite defects.
	var r reports.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, append(problems, fmt.Sprintf("conform.json does not parse: %v", err))
	}
	// The OpenAPI gate: every request the suite sends matches an operation
	// of the vendored document or is a registered negative probe
	// (client.Request.Probe), whatever the target.
	for _, d := range r.SuiteDefects {
		problems = append(problems, fmt.Sprintf("conform %v: suite defect: %s", args, d))
	}
	return &r, problems
}

// directRuns bounds the processes tests run themselves (a conform run, a
// CI script), beside the proof pool's runs: TestMain lifts the -parallel
// limit (raiseParallel), so that tests waiting for pool runs never keep
// these from starting, and this bound keeps the machine from being
// swamped. A slot is held only while one process runs, never across
// another wait, so slots cannot deadlock.
var directRuns = make(chan struct{}, runtime.GOMAXPROCS(0))

// direct takes a directRuns slot and returns its release.
func direct() func() {
	directRuns <- struct{}{}
	return func() { <-directRuns }
}

// runConform runs the binary and returns its exit code, console output and
// parsed report (nil if it wrote none).
func runConform(t *testing.T, args ...string) (int, string, *reports.Report, string) {
	t.Helper()
	out := t.TempDir()
	code, console, raw, err := execConform(out, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	r, problems := reportProblems(args, console, raw)
	for _, p := range problems {
		t.Error(p)
	}
	if raw != nil && r == nil {
		t.FailNow()
	}
	return code, console, r, out
}

// verdicts returns the ids with the given verdict.
func verdicts(r *reports.Report, v reports.Verdict) []string {
	var ids []string
	for _, q := range r.Requirements {
		if q.Verdict == v {
			ids = append(ids, q.ID)
		}
	}
	sort.Strings(ids)
	return ids
}

// faultStreamTimeout bounds stream waits in proof runs: a stream that stays
// silent (a fault that drops or withholds frames) costs this, not the
// default 10 s, while a working one delivers its frames within milliseconds.
const faultStreamTimeout = "3s"

// runProof runs the suite against url at the given levels and returns the
// report (failing the test if there is none).
func runProof(t *testing.T, name, url, levels string) (int, *reports.Report) {
	t.Helper()
	code, console, r, _ := runConform(t, "run", "--target", url, "--levels", levels, "--stream-timeout", faultStreamTimeout)
	if r == nil {
		t.Fatalf("%s: no report; exit %d:\n%s", name, code, console)
	}
	return code, r
}

// assertCaught checks that a broken target fails exactly the wanted
// requirements (plus tolerated ones) and exits 1.
func assertCaught(t *testing.T, name string, spec targetSpec, levels string, fails, tolerated []string, extra ...string) {
	t.Helper()
	code, r, _ := proof(t, name, spec, levels, extra...)
	failed := verdicts(r, reports.Fail)
	for _, id := range fails {
		if !slices.Contains(failed, id) {
			t.Errorf("%s: %s not reported as failed (failed: %v)\n%s", name, id, failed, messages(r, fails))
		}
	}
	for _, id := range failed {
		if !slices.Contains(fails, id) && !slices.Contains(tolerated, id) {
			t.Errorf("%s: unrelated requirement %s failed: %s", name, id, messages(r, []string{id}))
		}
	}
	if code != 1 {
		t.Errorf("%s: exit code %d, want 1", name, code)
	}
}

// assertWarnsOnly checks that a target breaking SHOULDs gets a warning
// for exactly those requirements and no failure or error.
func assertWarnsOnly(t *testing.T, name string, spec targetSpec, levels string, warns []string, extra ...string) {
	t.Helper()
	_, r, _ := proof(t, name, spec, levels, extra...)
	warned := verdicts(r, reports.Warn)
	for _, id := range warns {
		if !slices.Contains(warned, id) {
			t.Errorf("%s: %s not reported as a warning (warnings: %v)", name, id, warned)
		}
	}
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("%s breaks a SHOULD, but the suite reports %v: %s", name, bad, messages(r, bad))
	}
}

// assertClean checks that a legal-but-unusual target gets no failure, no
// error and no warning; it returns how often the target's middleware
// changed an answer.
func assertClean(t *testing.T, name string, spec targetSpec, levels string) int {
	t.Helper()
	_, r, used := proof(t, name, spec, levels)
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
		t.Errorf("%s is legal but the suite reports %v: %s", name, bad, messages(r, bad))
	}
	return used
}

// assertVariantPasses runs the suite against a legal-but-unusual harness.
func assertVariantPasses(t *testing.T, v refharness.Variant, levels string) {
	t.Helper()
	assertClean(t, "variant "+string(v), targetSpec{Variants: []refharness.Variant{v}}, levels)
}

// wrapped is the spec of an unmodified harness behind a wrapfault middleware.
func wrapped(name string) targetSpec { return targetSpec{Wrap: name} }

func messages(r *reports.Report, ids []string) string {
	var b strings.Builder
	for _, q := range r.Requirements {
		if slices.Contains(ids, q.ID) {
			b.WriteString("\n  " + q.ID + " [" + string(q.Verdict) + "]: " + q.Message)
		}
	}
	return b.String()
}
