package suite

import (
	"context"
	"os"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/embedded"
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

var localServer *embedded.Harness

// Shutdown stops the in-process reference Harness if Env started one; call it
// after RunSpecs.
func Shutdown() {
	if localServer != nil {
		localServer.Close()
		localServer = nil
	}
}
