package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/cmd/conform/internal/runner"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/reports"

	// The built-in references (selftest's targets) register themselves.
	_ "github.com/harn-conform/conform/refharness/builtin"

	// The suites register their specs by import.
	_ "github.com/harn-conform/conform/suites/core"
	_ "github.com/harn-conform/conform/suites/extended"
	_ "github.com/harn-conform/conform/suites/receipts"
	_ "github.com/harn-conform/conform/suites/replay"

	// Profiles register themselves (docs/profiles.md).
	_ "github.com/harn-conform/conform/suites/acpharbor"
	_ "github.com/harn-conform/conform/suites/openharness"
)

const protocolVersion = config.ProtocolVersion

// configFlags registers one flag per configuration setting that has one
// and returns the kind of each flag's value (for -h) and a function that
// collects the flags the user actually gave.
func configFlags(fs *flag.FlagSet, skip map[string]bool) (kinds map[string]string, given func() map[string]string) {
	vals := map[string]*string{}
	kinds = map[string]string{}
	defaults := config.Defaults().Redacted()
	for _, s := range config.Settings() {
		if skip[s.Key] || s.Flag == "" {
			continue
		}
		help := s.Help + " (env " + s.Env
		if d := defaults[s.Key]; d != "" && d != "0" && d != "0s" {
			help += ", default " + d
		}
		vals[s.Flag] = fs.String(s.Flag, "", help+")")
		kinds[s.Flag] = s.Kind
	}
	return kinds, func() map[string]string {
		set := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if v, ok := vals[f.Name]; ok {
				set[f.Name] = *v
			}
		})
		return set
	}
}

// envOnly lists the settings without a flag, for the end of -h.
func envOnly(w io.Writer, skip map[string]bool) {
	first := true
	for _, s := range config.Settings() {
		if s.Flag != "" || skip[s.Key] {
			continue
		}
		if first {
			fmt.Fprintln(w, "\nenvironment or config file only:")
			first = false
		}
		where := "file key " + s.Key
		if s.NoFile {
			where = "environment only"
		}
		fmt.Fprintf(w, "  %s (%s) %s\n        %s\n", s.Env, where, s.Kind, s.Help)
	}
}

// runFlagGroups orders run -h (and selftest -h): the flags most runs
// need first, in groups; the discouraged --api-key last of its group.
// A flag no group names is listed under "other flags".
var runFlagGroups = []cli.FlagGroup{
	{Title: "target and keys", Flags: []string{"target", "api-key-file", "wait-for-target", "restart-cmd", "restart-timeout", "config",
		"profile", "profiles", "acp-auth-method", "workspace-id", "ca-file", "ws-trusted-dev", "protocol-version", "api-key"}},
	{Title: "levels and gate", Flags: []string{"levels", "fail-on", "baseline", "skip-levels", "areas", "skip-areas", "label-filter", "focus", "seed"}},
	{Title: "timeouts and limits", Flags: []string{"request-timeout", "stream-timeout", "task-timeout", "max-duration", "max-body-bytes", "negative-budget"}},
	{Title: "actors and OAuth", Flags: []string{"second-api-key-file", "read-only-api-key-file", "oauth-token-url", "oauth-client-id",
		"oauth-client-secret-file", "oauth-scope", "oauth-audience", "oauth-expired-token-file", "oauth-wrong-audience-token-file",
		"oauth-wrong-issuer-token-file", "second-api-key", "read-only-api-key"}},
	{Title: "output", Flags: []string{"out", "format", "junit", "redact-file"}},
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, self bool) (int, error) {
	name := "run"
	skip := map[string]bool{}
	if self {
		name = "selftest"
		skip["target"], skip["api_key"], skip["api_key_file"], skip["ca_file"], skip["restart_cmd"] = true, true, true, true, true
		for _, s := range config.Settings() {
			if strings.HasPrefix(s.Key, "oauth_") {
				skip[s.Key] = true // the built-in harness's OAuth2 client is its own
			}
		}
	}
	// Everything after -- is the agent command of a command-driven profile
	// (conform run --profile acp-harbor -- AGENT ARGS…).
	var agentCmd []string
	if i := slices.Index(args, "--"); i >= 0 && !self {
		args, agentCmd = args[:i], append([]string{}, args[i+1:]...)
	}
	if self {
		skip["profile"] = true // selftest takes --profiles
	}
	fs := flag.NewFlagSet("conform "+name, flag.ContinueOnError)
	cfgFile := fs.String("config", "", "configuration file, YAML or JSON (env CONFORM_CONFIG)")
	var profiles *string
	if self {
		profiles = fs.String("profiles", "", "`list` of profiles to test against their built-in references instead of the Harn levels (openharness,acp-harbor); several run one after another, each in its own process, with its reports in OUT/NAME (docs/profiles.md)")
	}
	format := formatFlag(fs, "what standard output carries: text, the live progress and the result table; json, the conform.json report (progress then goes to standard error)")
	kinds, given := configFlags(fs, skip)
	kinds["config"] = "file"
	fs.Usage = func() {
		w := fs.Output()
		if self {
			fmt.Fprintln(w, "usage: conform selftest [--profiles LIST] [flags]\n\nRuns the suites against the built-in reference Harness, started in this process on a\nloopback port with a throw-away data directory; with --profiles, each profile's\nsuite against the profile's built-in reference instead.")
		} else {
			fmt.Fprintln(w, "usage: conform run --target URL [flags]\n       conform run --profile openharness --target URL [flags]\n       conform run --profile acp-harbor [flags] -- AGENT_CMD ARGS…\n\nThe API key comes from CONFORM_API_KEY or --api-key-file (--api-key works but is\nvisible in process listings). Flags beat CONFORM_* variables beat the --config file.\nA profile (docs/profiles.md) checks a related protocol instead of the Harn levels.")
		}
		cli.PrintFlagGroups(w, fs, kinds, runFlagGroups)
		envOnly(w, skip)
		fmt.Fprint(w, `
exit codes: 0 every checked level is conformant; 1 a level is nonconformant, or
partial because MUSTs are unverified, or a baseline entry is stale; 2 usage or
configuration error, unreachable target, or a suite/network error left a level
undecided (the tool could not decide)
`)
	}
	// The flag list is long: a usage or configuration error names the
	// problem and points at -h rather than repeating it.
	short := fmt.Sprintf("usage: %s [flags]  ('%s -h' lists every flag)\n", fs.Name(), fs.Name())
	if !self {
		short = "usage: conform run --target URL [flags]  ('conform run -h' lists every flag)\n"
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		if ue, ok := err.(usageError); ok {
			err = usageError{msg: ue.msg, usage: short}
		}
		return 0, err
	}
	if err := cli.CheckFormat(*format); err != nil {
		return 2, usageError{msg: err.Error(), usage: short}
	}
	file := *cfgFile
	if file == "" {
		file = os.Getenv("CONFORM_CONFIG")
	}
	env := os.Getenv
	if self {
		// selftest's target is its own: ignore a target from the environment.
		env = func(k string) string {
			switch k {
			case config.EnvName("target"), config.EnvName("api_key"), config.EnvName("api_key_file"), config.EnvName("restart_cmd"),
				config.EnvName("profile"), config.EnvName("agent_command"):
				return ""
			}
			if strings.HasPrefix(k, "CONFORM_OAUTH_") {
				return ""
			}
			return os.Getenv(k)
		}
	}
	if agentCmd != nil && len(agentCmd) == 0 {
		return 2, usageError{msg: "nothing after --: give the agent command (conform run --profile acp-harbor -- AGENT_CMD ARGS…)", usage: short}
	}
	cfg, err := config.Load(config.Sources{File: file, Env: env, Flags: given(), AgentCommand: agentCmd})
	if err != nil {
		return 2, usageError{msg: err.Error(), usage: short}
	}
	var notes []string
	var restart target.RestartFunc
	if self && strings.TrimSpace(*profiles) != "" {
		return selftestProfiles(ctx, cfg, args, *profiles, *format, short, stdout, stderr)
	}
	if self {
		ref, err := reference.Start(ctx, reference.Harn)
		if err != nil {
			return 2, err
		}
		defer ref.Stop()
		// selftest's target is its own, and so are the target's further
		// actors and its OAuth2 client.
		cfg.SecondAPIKey, cfg.ReadOnlyAPIKey, cfg.OAuth = "", "", config.OAuth{}
		ref.Configure(&cfg)
		notes = append(notes, ref.Notes...)
		restart = ref.Restart
	} else if cfg.Profile != "" {
		p, err := profile.Lookup(cfg.Profile)
		if err != nil {
			return 2, usageError{msg: err.Error(), usage: short}
		}
		switch {
		case p.NeedsTarget && cfg.Target == "":
			return 2, usageError{msg: fmt.Sprintf("no target: profile %s checks the implementation at --target URL (%s)", p.Name, p.Usage), usage: short}
		case p.NeedsCommand && len(cfg.AgentCommand) == 0:
			return 2, usageError{msg: fmt.Sprintf("no agent command: profile %s starts the agent given after -- (%s)", p.Name, p.Usage), usage: short}
		case p.NeedsCommand && cfg.Target != "":
			return 2, usageError{msg: fmt.Sprintf("profile %s starts an agent command and takes no --target", p.Name), usage: short}
		}
	} else if cfg.Target == "" {
		return 2, usageError{msg: "no target: give --target URL (or CONFORM_TARGET)", usage: short}
	}
	console := stdout
	if *format == cli.FormatJSON {
		console = stderr
	}
	code, err := runner.Run(ctx, runner.Options{Config: cfg, Version: releaseVersion, Console: console, Notes: notes, Restart: restart})
	if err == nil && *format == cli.FormatJSON {
		// The run wrote its reports (a returned error means it did not):
		// standard output carries conform.json as written.
		if err := copyFile(stdout, filepath.Join(cfg.Out, reports.JSONFile)); err != nil {
			return 2, err
		}
	}
	return code, err
}

func copyFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}
