package acpharbor

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/preflight"
	"github.com/harn-conform/conform/internal/target"
	"github.com/harn-conform/conform/refharness/builtin"
)

func preflightOf(t *testing.T, cmd ...string) *preflight.Problem {
	t.Helper()
	cfg := config.Defaults()
	cfg.Profile, cfg.AgentCommand = "acp-harbor", cmd
	cfg.Timeouts.Request = 5 * time.Second
	env, err := target.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return Preflight(context.Background(), env)
}

func TestPreflight(t *testing.T) {
	if p := preflightOf(t, os.Args[0], builtin.ServeCommand); p != nil {
		t.Errorf("the reference agent: %+v", p)
	}
	tests := []struct {
		cmd  []string
		want string
	}{
		{[]string{"/nonexistent/agent"}, "cannot be run"},
		{[]string{os.Args[0], builtin.ServeCommand, "--fault", "no-such-fault"}, "ended its output"},
	}
	for _, tc := range tests {
		p := preflightOf(t, tc.cmd...)
		if p == nil || p.Stage != preflight.StageCommand || !strings.Contains(p.Message, tc.want) {
			t.Errorf("Preflight(%v) = %+v, want a command problem saying %q", tc.cmd, p, tc.want)
		}
	}
	// The agent's complaint on stderr reaches the hint.
	if p := preflightOf(t, os.Args[0], builtin.ServeCommand, "--fault", "no-such-fault"); p == nil || !strings.Contains(p.Hint, "no-such-fault") {
		t.Errorf("hint %+v, want the agent's stderr", p)
	}
}
