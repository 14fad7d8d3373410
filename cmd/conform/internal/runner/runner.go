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
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/formatter"
	"github.com/onsi/ginkgo/v2/types"
	"github.com/onsi/gomega"

	"github.com/harn-conform/conform/internal/baseline"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/evidence"
	"github.com/harn-conform/conform/internal/preflight"
	"github.com/harn-conform/conform/internal/profile"
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
	var known *baseline.File
	if cfg.Baseline != "" {
		// A broken baseline is the user's to fix before the run, not
		// after minutes of checks.
		if known, err = baseline.Load(cfg.Baseline); err == nil {
			err = known.Check(reg)
		}
		if err != nil {
			return ExitEngine, err
		}
	}
	var prof *profile.Profile
	if cfg.Profile != "" {
		p, err := profile.Lookup(cfg.Profile)
		if err != nil {
			return ExitEngine, err
		}
		switch {
		case p.NeedsTarget && cfg.Target == "":
			return ExitEngine, fmt.Errorf("no target: profile %s checks an implementation at --target URL (%s), or use `conform selftest --profiles %s` for its built-in reference", p.Name, p.Usage, p.Name)
		case p.NeedsCommand && len(cfg.AgentCommand) == 0:
			return ExitEngine, fmt.Errorf("no agent command: profile %s starts the agent given after -- (%s), or use `conform selftest --profiles %s` for its built-in reference", p.Name, p.Usage, p.Name)
		}
		prof = &p
	} else if cfg.Target == "" {
		return ExitEngine, errors.New("no target: give --target URL, or use `conform selftest` for the built-in reference Harness")
	}
	console := opts.Console
	if console == nil {
		console = io.Discard
	}
	// Before any spec: a report directory we can write, a target that
	// answers, is a Harness at this URL and takes the key. Each failure is
	// the user's to fix (or a target not up yet), never a verdict.
	if p := preflight.Out(cfg.Out); p != nil {
		return ExitEngine, p
	}
	env, err := target.New(cfg)
	if err != nil {
		return ExitEngine, err
	}
	if opts.Restart != nil {
		env.Restart = opts.Restart
	}
	started := time.Now()
	if prof != nil {
		return runProfile(ctx, opts, *prof, env, reg, known, started)
	}
	if cfg.WaitForTarget > 0 {
		fmt.Fprintf(console, "conform: waiting up to %s for %s to answer discovery\n", cfg.WaitForTarget, env.Redactor.String(cfg.Target))
	}
	resp, p := preflight.Reach(ctx, env.Client, cfg.WaitForTarget)
	if p == nil {
		env.UseDiscovery(resp)
		p = preflight.Discovery(ctx, env.Client, resp, cfg.Target)
	}
	if p == nil {
		p = preflight.Credential(ctx, env.Client, cfg)
	}
	if p == nil {
		p = preflight.OAuth(ctx, env) // the first OAuth2 token, when configured
	}
	if p != nil {
		p.Message, p.Hint = env.Redactor.String(p.Message), env.Redactor.String(p.Hint)
		return stopped(opts, env, reg, started, p)
	}
	return runSpecs(opts, env, reg, known, "")
}

// runProfile is Run for a profile run (docs/profiles.md): the profile's
// preflight in place of the Harn discovery and credential preflight, then
// the profile's specs alone.
func runProfile(ctx context.Context, opts Options, p profile.Profile, env *target.Env, reg *requirements.Registry, known *baseline.File, started time.Time) (int, error) {
	if p.Preflight != nil {
		if pr := p.Preflight(ctx, env); pr != nil {
			pr.Message, pr.Hint = env.Redactor.String(pr.Message), env.Redactor.String(pr.Hint)
			return stoppedAs(opts, env, reg, started, pr, p.Protocol)
		}
	}
	return runSpecs(opts, env, reg, known, p.Protocol)
}

// familyFilter is the label filter that keeps a run to its family: a
// profile run runs its profile's specs only, a Harn run every spec but the
// profiles'. Ginkgo reports what it filters out as not run, and
// reports.Build leaves another family's specs out of the report.
func familyFilter(env *target.Env) string {
	for _, s := range env.Levels {
		if s.Level.IsProfile() {
			return evidence.LevelLabelPrefix + string(s.Level)
		}
	}
	var not []string
	for _, p := range requirements.Profiles() {
		not = append(not, "!"+evidence.LevelLabelPrefix+string(p))
	}
	return strings.Join(not, " && ")
}

// runSpecs runs the selected specs against env and writes the reports.
// protocol, when set, is the report's protocol_version (a profile's).
func runSpecs(opts Options, env *target.Env, reg *requirements.Registry, known *baseline.File, protocol string) (int, error) {
	cfg := opts.Config
	console := opts.Console
	if console == nil {
		console = io.Discard
	}
	suite.Install(env)

	seed := cfg.Seed
	if seed == 0 {
		seed = rand.Int64N(1<<31-1) + 1
	}
	sc, rc := GinkgoConfiguration()
	sc.RandomSeed = seed
	sc.RandomizeAllSpecs = true
	sc.LabelFilter = familyFilter(env)
	if cfg.LabelFilter != "" {
		sc.LabelFilter = "(" + cfg.LabelFilter + ") && (" + sc.LabelFilter + ")"
	}
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

	switch {
	case cfg.Profile != "" && cfg.Target == "":
		fmt.Fprintf(console, "conform %s: profile %s, agent %s, seed %d\n", opts.Version, cfg.Profile, env.Redactor.String(agentName(cfg.AgentCommand)), seed)
	case cfg.Profile != "":
		fmt.Fprintf(console, "conform %s: profile %s, target %s, seed %d\n", opts.Version, cfg.Profile, env.Redactor.String(cfg.Target), seed)
	default:
		fmt.Fprintf(console, "conform %s: target %s, levels %s, seed %d\n", opts.Version, env.Redactor.String(cfg.Target), target.LevelNames(env.Levels), seed)
	}
	for _, s := range env.Levels {
		if !s.Run {
			fmt.Fprintf(console, "  %s: skipped (%s)\n", s.Level, s.Reason)
		}
	}
	if len(cfg.Areas) > 0 {
		fmt.Fprintf(console, "  areas: only %s (--areas)\n", strings.Join(cfg.Areas, ", "))
	}
	if len(cfg.SkipAreas) > 0 {
		fmt.Fprintf(console, "  areas: not %s (--skip-areas)\n", strings.Join(cfg.SkipAreas, ", "))
	}
	if cfg.FailOn == config.FailOnFailures {
		fmt.Fprintln(console, "  gate: --fail-on failures (unverified MUSTs are listed, and do not fail the run)")
	}
	if env.Discovery.Error != "" {
		fmt.Fprintf(console, "  discovery failed: %s\n", env.Redactor.String(env.Discovery.Error))
	}
	filters := narrowing(cfg)
	narrowed := ""
	if filters != "" {
		narrowed = "narrowed run (" + filters + "): the requirements it does not select stay unverified, so its levels are partial at best; gate CI on full runs"
		fmt.Fprintf(console, "  warning: %s\n", narrowed)
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
		Tool: reports.Tool{Name: "conform", Version: opts.Version}, Env: env, Registry: reg, Seed: seed, Notes: notes(env, opts.Notes),
		ProtocolVersion: protocol,
	}, captured)
	if narrowed != "" {
		rep.Notes = append(rep.Notes, narrowed)
	}
	if narrowed != "" && total == 0 {
		reports.Stop(rep, reports.Stopped{Stage: "filter", Message: "the run checked nothing: " + env.Redactor.String(filters) + " matched no spec",
			Hint: "`conform list` shows every spec with its labels (req:ID, level:NAME); a label filter such as 'req:CORE-VER-001' selects one requirement"})
	}
	if why := stoppedAnswering(env); why != "" {
		// The target stopped answering mid-run: what was left became
		// errors at once instead of each waiting out its timeout.
		reports.Stop(rep, reports.Stopped{Stage: reports.StageTargetStopped,
			Message: env.Redactor.String(fmt.Sprintf("the target stopped answering: %d exchanges in a row got no answer (last: %s); the specs after that were not run against it", client.StoppedAfter, why)),
			Hint:    "check the target's logs: did it crash, hang or run out of resources? Rerun when it answers again"})
	}
	if known != nil {
		// After Stop: a stopped run keeps exit 2 whatever the baseline says.
		if err := reports.ApplyBaseline(rep, reg, known); err != nil {
			return ExitEngine, err
		}
	}
	if err := finish(opts, rep); err != nil {
		return ExitEngine, err
	}
	if rep.Stopped != nil {
		return rep.ExitCode, &preflight.Problem{Stage: rep.Stopped.Stage, Message: rep.Stopped.Message, Hint: rep.Stopped.Hint}
	}
	return rep.ExitCode, nil
}

// narrowing names the --label-filter and --focus of a narrowed run, or "".
// A narrowed run leaves what it did not select unverified, so its levels
// are partial whatever the target does: the reader must be told why.
func narrowing(cfg config.Config) string {
	var parts []string
	if cfg.LabelFilter != "" {
		parts = append(parts, fmt.Sprintf("--label-filter %q", cfg.LabelFilter))
	}
	if len(cfg.Focus) > 0 {
		parts = append(parts, fmt.Sprintf("--focus %q", strings.Join(cfg.Focus, ",")))
	}
	return strings.Join(parts, " and ")
}

// finish writes the reports and prints the final table.
func finish(opts Options, rep *reports.Report) error {
	cfg := opts.Config
	console := opts.Console
	if console == nil {
		console = io.Discard
	}
	if err := reports.WriteAllWith(cfg.Out, rep, reports.WriteOptions{JUnit: cfg.JUnit}); err != nil {
		return err
	}
	fmt.Fprintln(console)
	reports.WriteTable(console, rep)
	var files []string
	for _, f := range reports.Files(rep) {
		files = append(files, filepath.Join(cfg.Out, f))
	}
	fmt.Fprintf(console, "reports: %s\n", strings.Join(files, ", "))
	if un := reports.Unjudged(rep); len(un) > 0 {
		fmt.Fprintf(console, "badges: none for %s (not judged in this run: a badge another run wrote is left as it is)\n", strings.Join(un, ", "))
	}
	return nil
}

// stopped ends a run that the preflight stopped: it still writes a report
// that says why (CI's step summary reads it), and returns the problem for
// the command to print.
func stopped(opts Options, env *target.Env, reg *requirements.Registry, started time.Time, p *preflight.Problem) (int, error) {
	return stoppedAs(opts, env, reg, started, p, "")
}

// stoppedAs is stopped with the report's protocol_version (a profile's).
func stoppedAs(opts Options, env *target.Env, reg *requirements.Registry, started time.Time, p *preflight.Problem, protocol string) (int, error) {
	rep := reports.Build(reports.Input{
		Tool: reports.Tool{Name: "conform", Version: opts.Version}, Env: env, Registry: reg, Seed: opts.Config.Seed, Notes: notes(env, opts.Notes),
		ProtocolVersion: protocol,
	}, types.Report{StartTime: started, EndTime: time.Now(), RunTime: time.Since(started)})
	reports.Stop(rep, reports.Stopped{Stage: p.Stage, Message: p.Message, Hint: p.Hint})
	if err := finish(opts, rep); err != nil {
		return ExitEngine, fmt.Errorf("%v (and the report could not be written: %v)", p, err)
	}
	return ExitEngine, p
}

// stoppedAnswering is why the target stopped answering mid-run, or "" (a
// run without an HTTP client has nothing to say).
func stoppedAnswering(env *target.Env) string {
	if env.Client == nil {
		return ""
	}
	return env.Client.Health().Stopped()
}

// agentName is the agent command's program, for the console (its
// arguments may hold credentials).
func agentName(cmd []string) string {
	if len(cmd) == 0 {
		return "(none)"
	}
	return filepath.Base(cmd[0])
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
	// Entries are decoded (evidence.Decode), not matched in AsJSON: in the
	// run's own process Ginkgo has not marshalled them yet, and a match on
	// the empty string printed PASS for a warning and UNVER for a skip.
	case sr.State == types.SpecStatePassed:
		for _, e := range sr.ReportEntries {
			if e.Name != evidence.EntryVerdict {
				continue
			}
			if v, err := evidence.Decode[evidence.Verdict](e); err == nil && v.Verdict == evidence.VerdictWarn {
				return "WARN"
			}
		}
		return "PASS"
	case sr.State == types.SpecStateSkipped:
		for _, e := range sr.ReportEntries {
			if e.Name != evidence.EntrySkip {
				continue
			}
			if k, err := evidence.Decode[evidence.Skip](e); err == nil && k.Kind == evidence.SkipNotApplicable {
				return "SKIP"
			}
		}
		return "UNVER"
	case sr.State == types.SpecStateFailed:
		// As reports.Build judges it: a spec whose every recorded verdict
		// is an error (a timeout, a broken connection) is an error, never
		// a failure of the target, in the console as in the report.
		errs, others := 0, 0
		for _, e := range sr.ReportEntries {
			if e.Name != evidence.EntryVerdict {
				continue
			}
			if v, err := evidence.Decode[evidence.Verdict](e); err == nil {
				switch v.Verdict {
				case evidence.VerdictError:
					errs++
				case evidence.VerdictFail:
					others++
				}
			}
		}
		if errs > 0 && others == 0 {
			return "ERROR"
		}
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
