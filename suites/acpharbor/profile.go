// Package acpharbor is the acp-harbor profile (docs/acp-harbor.md): Ginkgo
// specs that drive an Agent Client Protocol agent over stdio as its
// client and judge the base protocol (initialize, sessions, prompt turns,
// session/update streaming, cancellation, JSON-RPC framing and errors) and
// every Harbor extension the agent advertises (spec text 004: the
// agent.harbor bundle, workspace, snapshot, branch, session and pipeline
// methods, harbor/* notifications, refusals). An agent that advertises no
// Harbor bundle gets the base verdicts and "not applicable" for the
// extensions. Every spec starts its own agent process and ends it.
package acpharbor

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/preflight"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// Protocol is what a report of this profile names as its protocol.
const Protocol = "acp/1 + agent-harbor extensions (spec text 004)"

func init() {
	profile.Register(profile.Profile{
		Name:         requirements.ACPHarbor,
		Title:        "ACP Agent Harbor (docs/acp-harbor.md)",
		Protocol:     Protocol,
		Usage:        "conform run --profile acp-harbor -- AGENT_CMD ARGS…",
		NeedsCommand: true,
		Preflight:    Preflight,
	})
}

// Preflight starts the agent once and asks it to initialize: a command
// that does not exist, does not start, exits at once or says nothing on
// its stdout is the user's to fix (exit 2 with a hint), never a verdict.
// Whatever it answers is the specs' to judge.
func Preflight(ctx context.Context, env *target.Env) *preflight.Problem {
	cfg := env.Config
	if len(cfg.AgentCommand) == 0 {
		return &preflight.Problem{Stage: preflight.StageCommand, Message: "no agent command",
			Hint: "give the agent after --: conform run --profile acp-harbor -- AGENT_CMD ARGS…"}
	}
	prog := filepath.Base(cfg.AgentCommand[0])
	if _, err := exec.LookPath(cfg.AgentCommand[0]); err != nil {
		return &preflight.Problem{Stage: preflight.StageCommand, Message: env.Redactor.String(fmt.Sprintf("the agent command %q cannot be run: %v", prog, err)),
			Hint: "give the agent's path or a program on PATH after --"}
	}
	conn, err := acp.Start(ctx, acp.Options{Command: cfg.AgentCommand, Redactor: env.Redactor, MaxMessage: int(min(cfg.MaxBodyBytes, 1<<30)), Write: cfg.Timeouts.Request})
	if err != nil {
		return &preflight.Problem{Stage: preflight.StageCommand, Message: env.Redactor.String(err.Error()),
			Hint: "check that the agent command starts from this directory"}
	}
	defer conn.Close()
	cctx, cancel := context.WithTimeout(ctx, cfg.Timeouts.Request)
	defer cancel()
	initResp, err := conn.Call(cctx, sdk.AgentMethodInitialize, initializeParams(sdk.ProtocolVersionNumber))
	if err == nil {
		if cfg.ACPAuthMethod == "" || initResp.Error != nil {
			return nil
		}
		if msg, hint := preflightAuth(cctx, conn, initResp, cfg.ACPAuthMethod); msg != "" {
			return &preflight.Problem{Stage: preflight.StageCommand, Message: env.Redactor.String(msg), Hint: env.Redactor.String(hint)}
		}
		return nil
	}
	why := "did not answer initialize within --request-timeout (" + cfg.Timeouts.Request.String() + ")"
	if te := (*client.TransportError)(nil); errors.As(err, &te) && !te.Timeout() {
		// Its stdout ended: it exited (or closed it) without an answer.
		why = "ended its output before answering initialize (" + te.Err.Error() + ")"
	}
	hint := "is this an ACP agent speaking JSON-RPC on its stdio? Some agents need a flag for it (an --acp or --stdio mode)"
	conn.Close()
	if tail := conn.Stderr(); tail != "" {
		hint += "; its stderr said: " + someLines(tail, 5)
	}
	return &preflight.Problem{Stage: preflight.StageCommand, Message: env.Redactor.String(fmt.Sprintf("the agent %q %s", prog, why)), Hint: env.Redactor.String(hint)}
}
