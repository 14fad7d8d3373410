package suite

import (
	"context"
	"fmt"
	"os"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/embedded"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/refharness"
)

// fromEnvironment builds the run's environment the way `go test` and the
// ginkgo CLI see it: CONFORM_* variables (and CONFORM_CONFIG for a file),
// and with no target, the reference Harness in this process.
func fromEnvironment() (*target.Env, error) {
	cfg, err := config.Load(config.Sources{File: os.Getenv("CONFORM_CONFIG"), Env: os.Getenv})
	if err != nil {
		return nil, err
	}
	if cfg.Profile != "" {
		return profileFromEnvironment(cfg)
	}
	if cfg.Target == "" {
		local, err := embedded.Start(refharness.Options{})
		if err != nil {
			return nil, err
		}
		localServer = local
		cfg.Target, cfg.APIKey = local.URL, local.APIKey
		if cfg.SecondAPIKey == "" && cfg.ReadOnlyAPIKey == "" {
			cfg.SecondAPIKey, cfg.ReadOnlyAPIKey = local.SecondAPIKey, local.ReadOnlyAPIKey
		}
		if cfg.OAuth.ClientID == "" {
			// The harness's OAuth2 client: its actor, with the key for secret.
			cfg.OAuth.ClientID, cfg.OAuth.Secret = local.Actor, local.APIKey
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeouts.Request)
	defer cancel()
	env, err := target.Open(ctx, cfg)
	if err == nil && localServer != nil {
		// The in-process harness restarts in-process (same address, same
		// data directory), whatever CONFORM_RESTART_CMD says.
		env.Restart = localServer.Restart
	}
	return env, err
}

var (
	localServer    *embedded.Harness
	localReference *profile.Reference
)

// profileFromEnvironment is fromEnvironment for a profile run
// (CONFORM_PROFILE): with no target or agent command configured, the
// profile's built-in reference, and then the profile's preflight.
func profileFromEnvironment(cfg config.Config) (*target.Env, error) {
	p, err := profile.Lookup(cfg.Profile)
	if err != nil {
		return nil, err
	}
	if (p.NeedsTarget && cfg.Target == "") || (p.NeedsCommand && len(cfg.AgentCommand) == 0) {
		if p.Reference == nil {
			return nil, fmt.Errorf("profile %s: no target given and the profile has no built-in reference", p.Name)
		}
		ref, err := p.Reference(context.Background())
		if err != nil {
			return nil, fmt.Errorf("profile %s: starting its reference: %w", p.Name, err)
		}
		localReference = ref
		cfg.Target, cfg.AgentCommand = ref.Target, ref.AgentCommand
		if ref.APIKey != "" {
			cfg.APIKey = ref.APIKey
		}
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

// Shutdown stops the in-process reference Harness (or a profile's
// reference) if Env started one; call it after RunSpecs.
func Shutdown() {
	if localServer != nil {
		localServer.Close()
		localServer = nil
	}
	if localReference != nil {
		localReference.Stop()
		localReference = nil
	}
}
