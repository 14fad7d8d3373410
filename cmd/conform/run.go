package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/embedded"
	"github.com/harn-conform/conform/internal/runner"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/refharness"

	// The suites register their specs by import.
	_ "github.com/harn-conform/conform/suites/core"
	_ "github.com/harn-conform/conform/suites/receipts"
)

const protocolVersion = config.ProtocolVersion

// configFlags registers one string flag per configuration setting and
// returns a function that collects the flags the user actually gave.
func configFlags(fs *flag.FlagSet, skip map[string]bool) func() map[string]string {
	vals := map[string]*string{}
	defaults := config.Defaults().Redacted()
	for _, s := range config.Settings() {
		if skip[s.Key] {
			continue
		}
		help := s.Help + " (env " + s.Env
		if d := defaults[s.Key]; d != "" && d != "0" {
			help += ", default " + d
		}
		vals[s.Flag] = fs.String(s.Flag, "", help+")")
	}
	return func() map[string]string {
		set := map[string]string{}
		fs.Visit(func(f *flag.Flag) {
			if v, ok := vals[f.Name]; ok {
				set[f.Name] = *v
			}
		})
		return set
	}
}

func cmdRun(ctx context.Context, args []string, stdout, stderr io.Writer, self bool) (int, error) {
	name := "run"
	skip := map[string]bool{"redact": true}
	if self {
		name = "selftest"
		skip["target"], skip["api_key"], skip["api_key_file"], skip["ca_file"], skip["restart_cmd"] = true, true, true, true, true
	}
	fs := flag.NewFlagSet("conform "+name, flag.ContinueOnError)
	cfgFile := fs.String("config", "", "configuration file, YAML or JSON (env CONFORM_CONFIG)")
	given := configFlags(fs, skip)
	fs.Usage = func() {
		if self {
			fmt.Fprintln(fs.Output(), "usage: conform selftest [flags]\n\nRuns the suites against the built-in reference Harness, started in this process on a\nloopback port with a throw-away data directory.\n\nflags:")
		} else {
			fmt.Fprintln(fs.Output(), "usage: conform run --target URL [flags]\n\nThe API key comes from CONFORM_API_KEY or --api-key-file (--api-key works but is\nvisible in process listings).\n\nflags:")
		}
		fs.PrintDefaults()
	}
	if help, err := parseFlags(fs, args, stdout); help || err != nil {
		return 2, err
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
			case config.EnvName("target"), config.EnvName("api_key"), config.EnvName("api_key_file"), config.EnvName("restart_cmd"):
				return ""
			}
			return os.Getenv(k)
		}
	}
	cfg, err := config.Load(config.Sources{File: file, Env: env, Flags: given()})
	if err != nil {
		return 2, usageError{msg: err.Error(), usage: flagUsage(fs)}
	}
	var notes []string
	var restart target.RestartFunc
	if self {
		h, err := embedded.Start(refharness.Options{})
		if err != nil {
			return 2, err
		}
		defer h.Close()
		cfg.Target, cfg.APIKey = h.URL, h.APIKey
		notes = append(notes, "selftest: the target is the built-in reference Harness, started in-process at "+h.URL+
			"; the durability checks restart it in-process over the same data directory")
		restart = h.Restart
	} else if cfg.Target == "" {
		return 2, usageError{msg: "no target: give --target URL (or CONFORM_TARGET)", usage: flagUsage(fs)}
	}
	return runner.Run(ctx, runner.Options{Config: cfg, Version: toolVersion(), Console: stdout, Notes: notes, Restart: restart})
}
