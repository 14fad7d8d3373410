// Package runner is one conformance run inside the conform binary: validate
// the registry, open the target, run every registered Ginkgo spec once with
// a programmatic configuration, and turn the result into reports and an
// exit code. Ginkgo allows one RunSpecs per process, so a process runs one
// conformance run.
package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suite"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/reports"
)

// Exit codes of a run.
const (
	ExitConformant    = 0
	ExitNonconformant = 1
	ExitEngine        = 2
)

// Options of one run.
type Options struct {
	Config  config.Config
	Version string
	Console io.Writer // live progress and the final table
	// Notes are informational lines for the report (for example, what
	// selftest started).
	Notes []string
	// Restart, when set, restarts the target for the durability checks in
	// place of Config.RestartCmd (selftest restarts its harness in-process).
	Restart target.RestartFunc
}

// tester is the Ginkgo testing object of a run outside `go test`.
type tester struct{ failed bool }

func (t *tester) Fail() { t.failed = true }

// Run performs one conformance run and returns its exit code. A returned
// error (with ExitEngine) means the run could not be made; its message is
// safe to print.
func Run(ctx context.Context, opts Options) (int, error) {
	cfg := opts.Config
	if err := suite.Validate(); err != nil {
		return ExitEngine, err
	}
	reg, err := requirements.Default()
	if err != nil {
		return ExitEngine, err
	}
	if cfg.Target == "" {
		return ExitEngine, errors.New("no target: give --target URL, or use `conform selftest` for the built-in reference Harness")
	}
	octx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Request)
	env, err := target.Open(octx, cfg)
	cancel()
	if err != nil {
		return ExitEngine, err
	}
	if opts.Restart != nil {
		env.Restart = opts.Restart
	}
	suite.Install(env)

	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Int64N(1<<31-1) + 1
	}
	sc, rc := GinkgoConfiguration()
	sc.RandomSeed = seed
	sc.RandomizeAllSpecs = true
	sc.LabelFilter = cfg.LabelFilter
	sc.FocusStrings = cfg.Focus
	sc.Timeout = 24 * time.Hour // each wait inside a spec has its own named timeout
	if cfg.MaxDuration > 0 {
		// What the bound cuts off is reported as error, never fail
		// (reports.Build).
		sc.Timeout = cfg.MaxDuration
	}
	rc.Succinct = true
	rc.NoColor = true
	rc.SilenceSkips = true
	// Ginkgo's own reporter would repeat what our console and reports say,
	// in a format CI users did not ask for; conform's console is the one
	// voice of a run.
	formatter.ColorableStdOut = io.Discard

	console := opts.Console
	if console == nil {
		console = io.Discard
	}
	fmt.Fprintf(console, "conform %s: target %s, levels %s, seed %d\n", opts.Version, env.Redactor.String(cfg.Target), target.LevelNames(env.Levels), seed)
	for _, s := range env.Levels {
		if !s.Run {
			fmt.Fprintf(console, "  %s: skipped (%s)\n", s.Level, s.Reason)
		}
	}
	if env.Discovery.Error != "" {
		fmt.Fprintf(console, "  discovery failed: %s\n", env.Redactor.String(env.Discovery.Error))
	}
	preflight := authPreflight(ctx, env)
	if preflight != "" {
		fmt.Fprintf(console, "  warning: %s\n", preflight)
	}

	var (
		mu       sync.Mutex
		total    int
		done     int
		counts   = map[string]int{}
		captured types.Report
		got      bool
	)
	ReportBeforeSuite(func(r Report) {
		total = r.PreRunStats.SpecsThatWillRun
	})
	ReportAfterEach(func(sr SpecReport) {
		if sr.LeafNodeType != types.NodeTypeIt || sr.NumAttempts == 0 {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		done++
		word := progressWord(sr)
		counts[word]++
		fmt.Fprintf(console, "[%d/%d pass %d fail %d warn %d unverified %d skip %d error %d] %-5s %s: %s (%s)\n",
			done, total, counts["PASS"], counts["FAIL"], counts["WARN"], counts["UNVER"], counts["SKIP"], counts["ERROR"],
			word, specLevel(sr), env.Redactor.String(sr.FullText()), sr.RunTime.Round(time.Millisecond))
	})
	ReportAfterSuite("conform", func(r Report) {
		captured, got = r, true
	})
	gomega.RegisterFailHandler(Fail)
	RunSpecs(&tester{}, "conform", sc, rc)
	if !got {
		return ExitEngine, errors.New("the spec run produced no report (interrupted?)")
	}
	rep := reports.Build(reports.Input{
		Tool: reports.Tool{Name: "conform", Version: opts.Version}, Env: env, Registry: reg, Seed: seed, Notes: notes(env, append(opts.Notes, preflight)),
	}, captured)
	if err := reports.WriteAll(cfg.Out, rep); err != nil {
		return ExitEngine, err
	}
	fmt.Fprintln(console)
	reports.WriteTable(console, rep)
	fmt.Fprintf(console, "reports: %s, %s, %s\n", filepath.Join(cfg.Out, reports.JSONFile), filepath.Join(cfg.Out, reports.JUnitFile), filepath.Join(cfg.Out, reports.MarkdownFile))
	return rep.ExitCode, nil
}

func specLevel(sr SpecReport) string {
	for _, l := range sr.Labels() {
		if lv, ok := strings.CutPrefix(l, evidence.LevelLabelPrefix); ok {
			return lv
		}
	}
	return "-"
}

func progressWord(sr SpecReport) string {
	switch {
	case sr.State == types.SpecStatePassed:
		for _, e := range sr.ReportEntries {
			if strings.Contains(e.Value.AsJSON, `"verdict":"warn"`) {
				return "WARN"
			}
		}
		return "PASS"
	case sr.State == types.SpecStateSkipped:
		for _, e := range sr.ReportEntries {
			if e.Name == evidence.EntrySkip && strings.Contains(e.Value.AsJSON, `"kind":"`+evidence.SkipNotApplicable+`"`) {
				return "SKIP"
			}
		}
		return "UNVER"
	case sr.State == types.SpecStateFailed:
		return "FAIL"
	default:
		return "ERROR"
	}
}

// notes adds the informational findings a run makes outside the specs.
func notes(env *target.Env, extra []string) []string {
	var out []string
	for _, n := range extra {
		if n != "" {
			out = append(out, n)
		}
	}
	if env.Discovery.Error != "" {
		out = append(out, "discovery (GET /v1) failed: "+env.Discovery.Error)
	}
	return out
}

// authPreflight makes one authorized read so that a wrong or missing key is
// named once up front, instead of being guessed from dozens of 401s. It is
// a hint for the person reading, not a verdict.
func authPreflight(ctx context.Context, env *target.Env) string {
	if env.Config.APIKey == "" {
		return "no API key configured (CONFORM_API_KEY or --api-key-file): authenticated checks will fail"
	}
	resp, err := env.Client.Do(ctx, client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}})
	if err == nil && (resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden) {
		return fmt.Sprintf("the configured API key was refused (GET /v1/tasks → %d): authenticated checks will fail", resp.Status)
	}
	return ""
}
