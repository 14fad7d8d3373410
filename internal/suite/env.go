package suite

import (
	"context"
	"fmt"
	"os"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/reference"
	"github.com/harn-conform/conform/internal/target"
)

// fromEnvironment builds the run's environment the way `go test` and the
// ginkgo CLI see it: CONFORM_* variables (and CONFORM_CONFIG for a file),
// and with no target, the built-in reference Harness in this process (a
// registered reference: the test binary imports refharness/builtin).
func fromEnvironment() (*target.Env, error) {
	cfg, err := config.Load(config.Sources{File: os.Getenv("CONFORM_CONFIG"), Env: os.Getenv})
	if err != nil {
		return nil, err
	}
	if cfg.Profile != "" {
		return profileFromEnvironment(cfg)
	}
	if cfg.Target == "" {
		ref, err := reference.Start(context.Background(), reference.Harn)
		if err != nil {
			return nil, err
		}
		localReference = ref
		ref.Configure(&cfg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeouts.Request)
	defer cancel()
	env, err := target.Open(ctx, cfg)
	if err == nil && localReference != nil && localReference.Restart != nil {
		// The in-process harness restarts in-process (same address, same
		// data directory), whatever CONFORM_RESTART_CMD says.
		env.Restart = localReference.Restart
	}
	return env, err
}

// localReference is the built-in reference Env started, if any.
var localReference *reference.Reference

// profileFromEnvironment is fromEnvironment for a profile run
// (CONFORM_PROFILE): with no target or agent command configured, the
// profile's built-in reference, and then the profile's preflight.
func profileFromEnvironment(cfg config.Config) (*target.Env, error) {
	p, err := profile.Lookup(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if (p.NeedsTarget && cfg.Target == "") || (p.NeedsCommand && len(cfg.AgentCommand) == 0) {
		if !reference.Has(string(p.Name)) {
			return nil, fmt.Errorf("profile %s: no target given and the profile has no built-in reference", p.Name)
		}
		ref, err := reference.Start(context.Background(), string(p.Name))
		if err != nil {
			return nil, fmt.Errorf("profile %s: starting its reference: %w", p.Name, err)
		}
		localReference = ref
		ref.Configure(&cfg)
	}
	env, err := target.New(cfg)
	if err != nil {
		return nil, err
	}
	if p.Preflight != nil {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeouts.Request)
		defer cancel()
		if pr := p.Preflight(ctx, env); pr != nil {
			return nil, pr
		}
	}
	return env, nil
}

// Shutdown ends the observations still under way (Watch) and stops the
// built-in reference (the reference Harness or a profile's) if Env started
// one; call it after RunSpecs.
func Shutdown() {
	stopWatches()
	if localReference != nil {
		localReference.Stop()
		localReference = nil
	}
}
