package main

// Profiles in selftest: `conform selftest --profiles a,b` runs each
// profile's suite against the profile's built-in reference. Ginkgo allows
// one RunSpecs per process, so one profile runs in this process and
// several run one after another, each in a child process of this binary
// with its reports in OUT/NAME (docs/profiles.md).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/harn-conform/conform/cmd/conform/internal/cli"
	"github.com/harn-conform/conform/cmd/conform/internal/runner"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/reports"
)

// selftestProfiles is `conform selftest --profiles LIST`; cfg is the
// loaded configuration (its target and profile are the references').
func selftestProfiles(ctx context.Context, cfg config.Config, args []string, list, format, short string, stdout, stderr io.Writer) (int, error) {
	var names []string
	for _, n := range strings.Split(list, ",") {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		p, err := profile.Lookup(n)
		if err != nil {
			return 2, usageError{msg: "--profiles: " + err.Error(), usage: short}
		}
		if slices.Contains(names, string(p.Name)) {
			return 2, usageError{msg: fmt.Sprintf("--profiles: %s is listed twice", p.Name), usage: short}
		}
		names = append(names, string(p.Name))
	}
	if len(names) == 0 {
		return 2, usageError{msg: "--profiles: empty list", usage: short}
	}
	if len(names) == 1 {
		return selftestProfile(ctx, cfg, names[0], format, short, stdout, stderr)
	}
	if format == cli.FormatJSON {
		return 2, usageError{msg: "--format json prints one report: give one profile, or read each OUT/NAME/conform.json", usage: short}
	}
	self, err := os.Executable()
	if err != nil {
		return 2, fmt.Errorf("selftest: cannot find this binary to run each profile in its own process: %w", err)
	}
	rest := withoutFlags(args, "profiles", "out")
	code := 0
	for _, n := range names {
		fmt.Fprintf(stdout, "== selftest --profiles %s\n", n)
		cmd := exec.CommandContext(ctx, self, append(append([]string{"selftest"}, rest...), "--profiles", n, "--out", filepath.Join(cfg.Out, n))...)
		cmd.Stdout, cmd.Stderr = stdout, stderr
		c := 0
		if err := cmd.Run(); err != nil {
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				return 2, fmt.Errorf("selftest --profiles %s: %w", n, err)
			}
			c = ee.ExitCode()
		}
		code = worseExit(code, c)
	}
	return code, nil
}

// worseExit combines two exit codes of the common table: 2 wins over 1
// wins over 0 (anything unknown counts as 2).
func worseExit(a, b int) int {
	rank := func(c int) int {
		if c < 0 || c > 2 {
			return 2
		}
		return c
	}
	return max(rank(a), rank(b))
}

// withoutFlags drops the named flags (with their values) from args, in
// every spelling the flag package takes: -name v, --name v, -name=v,
// --name=v.
func withoutFlags(args []string, names ...string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, hasValue := strings.TrimLeft(a, "-"), false
		if strings.HasPrefix(a, "-") {
			if k, _, ok := strings.Cut(name, "="); ok {
				name, hasValue = k, true
			}
		}
		if strings.HasPrefix(a, "-") && slices.Contains(names, name) {
			if !hasValue {
				i++ // its value
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

// selftestProfile runs one profile's suite in this process against the
// profile's built-in reference.
func selftestProfile(ctx context.Context, cfg config.Config, name, format, short string, stdout, stderr io.Writer) (int, error) {
	p, err := profile.Lookup(name)
	if err != nil {
		return 2, err
	}
	if !reference.Has(string(p.Name)) {
		return 2, fmt.Errorf("selftest: profile %s has no built-in reference in this build", p.Name)
	}
	cfg.Profile = string(p.Name)
	if err := cfg.Validate(); err != nil {
		return 2, usageError{msg: err.Error(), usage: short}
	}
	ref, err := reference.Start(ctx, string(p.Name))
	if err != nil {
		return 2, fmt.Errorf("selftest: starting the %s reference: %w", p.Name, err)
	}
	defer ref.Stop()
	ref.Configure(&cfg)
	notes := append([]string{"selftest: the target is the built-in reference of profile " + string(p.Name)}, ref.Notes...)
	console := stdout
	if format == cli.FormatJSON {
		console = stderr
	}
	code, err := runner.Run(ctx, runner.Options{Config: cfg, Version: releaseVersion, Console: console, Notes: notes})
	if err == nil && format == cli.FormatJSON {
		if err := copyFile(stdout, filepath.Join(cfg.Out, reports.JSONFile)); err != nil {
			return 2, err
		}
	}
	return code, err
}
