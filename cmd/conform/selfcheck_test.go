package main

// The suite tests itself: the reference Harness with one named fault must
// fail exactly the requirements that fault breaks, and with a legal but
// unusual variant it must still pass. Each case runs the real conform
// binary (Ginkgo allows one RunSpecs per process) against an in-test
// reference Harness mounted under a path prefix.

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/harn-conform/conform/fixtures/schemas"
	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

var conformBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "conform-bin-")
	if err != nil {
		panic(err)
	}
	conformBin = filepath.Join(dir, "conform")
	out, err := exec.Command("go", "build", "-o", conformBin, ".").CombinedOutput()
	if err != nil {
		os.Stderr.Write(out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// testKey is the canary API key of self-check runs.
const testKey = "sk-canary-selfcheck-5f3a9c"

// harness starts a reference Harness under the /prefix path and returns its
// base URL.
func harness(t *testing.T, opts refharness.Options) string {
	t.Helper()
	opts.APIKeys = map[string]string{testKey: "actor_default"}
	h, err := refharness.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/prefix/", http.StripPrefix("/prefix", h))
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); h.Close() })
	return srv.URL + "/prefix"
}

// runConform runs the binary and returns its exit code, console output and
// parsed report (nil if it wrote none).
func runConform(t *testing.T, args ...string) (int, string, *reports.Report, string) {
	t.Helper()
	out := t.TempDir()
	// A hang guard, not a speed target: a run that does not end within this
	// bound is a bug (every wait in the suite has its own timeout).
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, conformBin, append(args, "--out", out)...)
	cmd.Env = append(os.Environ(), "CONFORM_API_KEY="+testKey)
	b, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("conform %v hung; output so far:\n%s", args, b)
	}
	if strings.Contains(string(b), "panic:") || strings.Contains(string(b), "goroutine ") {
		t.Errorf("conform %v panicked:\n%s", args, b)
	}
	raw, err := os.ReadFile(filepath.Join(out, reports.JSONFile))
	if err != nil {
		return code, string(b), nil, out
	}
	validateReport(t, raw)
	var r reports.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("conform.json does not parse: %v", err)
	}
	// The OpenAPI gate: every request the suite sends matches an operation
	// of the vendored document or is a registered negative probe
	// (client.Request.Probe), whatever the target.
	for _, d := range r.SuiteDefects {
		t.Errorf("conform %v: suite defect: %s", args, d)
	}
	return code, string(b), &r, out
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

// faultCase says which requirements a fault must fail. Tolerated lists
// requirements that the fault may also fail because they observe the same
// broken behaviour from another side; anything else failing is a bug in the
// suite (it blames the wrong requirement) or in the fault (it breaks more
// than one thing).
type faultCase struct {
	Fault     refharness.Fault
	Fails     []string
	Tolerated []string
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
func assertCaught(t *testing.T, name, url, levels string, fails, tolerated []string) {
	t.Helper()
	code, r := runProof(t, name, url, levels)
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

// assertWarnsOnly checks that a target breaking a SHOULD gets a warning
// for exactly that requirement and no failure or error.
func assertWarnsOnly(t *testing.T, name, url, levels, warns string) {
	t.Helper()
	_, r := runProof(t, name, url, levels)
	if warned := verdicts(r, reports.Warn); !slices.Contains(warned, warns) {
		t.Errorf("%s: %s not reported as a warning (warnings: %v)", name, warns, warned)
	}
	if bad := append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...); len(bad) > 0 {
		t.Errorf("%s breaks a SHOULD, but the suite reports %v: %s", name, bad, messages(r, bad))
	}
}

// assertClean checks that a legal-but-unusual target gets no failure, no
// error and no warning.
func assertClean(t *testing.T, name, url, levels string) {
	t.Helper()
	_, r := runProof(t, name, url, levels)
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Warn)...); len(bad) > 0 {
		t.Errorf("%s is legal but the suite reports %v: %s", name, bad, messages(r, bad))
	}
}

// assertFaultCaught runs the suite against a harness with the fault.
func assertFaultCaught(t *testing.T, tc faultCase, levels string) {
	t.Helper()
	url := harness(t, refharness.Options{Faults: refharness.Faults{tc.Fault: true}})
	assertCaught(t, "fault "+string(tc.Fault), url, levels, tc.Fails, tc.Tolerated)
}

// assertVariantPasses runs the suite against a legal-but-unusual harness.
func assertVariantPasses(t *testing.T, v refharness.Variant, levels string) {
	t.Helper()
	assertClean(t, "variant "+string(v), harness(t, refharness.Options{Variants: refharness.Variants{v: true}}), levels)
}

func messages(r *reports.Report, ids []string) string {
	var b strings.Builder
	for _, q := range r.Requirements {
		if slices.Contains(ids, q.ID) {
			b.WriteString("\n  " + q.ID + " [" + string(q.Verdict) + "]: " + q.Message)
		}
	}
	return b.String()
}

var (
	reportSchemaOnce sync.Once
	reportSchema     *jsonschema.Schema
	reportSchemaErr  error
)

// validateReport checks a produced conform.json against the project's
// schema: every report any self-check run writes must conform.
func validateReport(t *testing.T, raw []byte) {
	t.Helper()
	reportSchemaOnce.Do(func() { reportSchema, reportSchemaErr = schemas.Compile("conform-report.v1.schema.json") })
	if reportSchemaErr != nil {
		t.Fatal(reportSchemaErr)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("conform.json: %v", err)
	}
	if p := schemas.Problems(reportSchema, inst); len(p) > 0 {
		t.Errorf("conform.json does not match conform-report.v1.schema.json: %v", p)
	}
}
