package openharness

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/harn-conform/conform/internal/client"
	oh "github.com/harn-conform/conform/internal/openharness"
	"github.com/harn-conform/conform/internal/preflight"
	"github.com/harn-conform/conform/internal/profile"
	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/target"
)

// Protocol is what a report of this profile shows as protocol_version.
const Protocol = "openharness/1.0.0-draft"

func init() {
	profile.Register(profile.Profile{
		Name:        requirements.OpenHarness,
		Title:       "OpenHarness v1 Engine (docs/openharness.md)",
		Protocol:    Protocol,
		Usage:       "conform run --profile openharness --target URL",
		NeedsTarget: true,
		Preflight:   Preflight,
	})
}

// Preflight is the profile's preflight: the Engine's endpoint answers a
// plain request at all, at this URL, with this credential. Each miss is
// the user's to fix (exit 2 with a hint), never a verdict; what the answer
// says is the specs' to judge.
func Preflight(ctx context.Context, env *target.Env) *preflight.Problem {
	target := env.Redactor.String(env.Config.Target)
	// --wait-for-target: an Engine still starting refuses connections;
	// poll until it answers or the wait is over.
	deadline := time.Now().Add(env.Config.WaitForTarget)
	var resp *client.Response
	var err error
	for {
		resp, err = env.Client.Detached().Do(ctx, client.Request{
			Method: http.MethodPost, NoVersion: true,
			Body: map[string]any{"protocol_version": oh.Version, "request_id": "conform-preflight-" + env.RunID,
				"request": map[string]any{"context": map[string]any{"user_intent": "conform preflight"}}},
		})
		var te *client.TransportError
		if err == nil || !errors.As(err, &te) || !time.Now().Before(deadline) {
			break
		}
		t := time.NewTimer(250 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return &preflight.Problem{Stage: preflight.StageReach, Message: fmt.Sprintf("the Engine at %s did not answer before the run was stopped", target)}
		case <-t.C:
		}
	}
	if err != nil {
		var te *client.TransportError
		if errors.As(err, &te) {
			return &preflight.Problem{Stage: preflight.StageReach,
				Message: fmt.Sprintf("the Engine at %s does not answer: %v", target, te.Err),
				Hint:    "start the Engine (--wait-for-target 60s waits for one starting in the background), or give --target the URL of its OpenHarness endpoint (the URL the Shell POSTs request envelopes to)"}
		}
		return &preflight.Problem{Stage: preflight.StageReach, Message: err.Error()}
	}
	switch resp.Status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if _, err := oh.Decode(resp.Body); err != nil {
			return &preflight.Problem{Stage: preflight.StageCredential,
				Message: fmt.Sprintf("the Engine at %s refused the request: %s", target, resp),
				Hint:    "give the Engine's transport credential with CONFORM_API_KEY or --api-key-file (sent as Authorization: Bearer)"}
		}
	case http.StatusNotFound, http.StatusMethodNotAllowed:
		if _, err := oh.Decode(resp.Body); err != nil {
			return &preflight.Problem{Stage: preflight.StageReach,
				Message: fmt.Sprintf("nothing at %s takes a POSTed request envelope: %s", target, resp),
				Hint:    "--target is the full URL of the Engine's OpenHarness endpoint, path included (docs/openharness.md)"}
		}
	}
	return nil
}
