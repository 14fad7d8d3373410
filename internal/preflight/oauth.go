package preflight

import (
	"context"
	"errors"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/target"
)

// OAuth gets the run's first OAuth2 access token when the run checks the
// Extended level with OAuth2 configured (docs/oauth.md). A client the token
// endpoint refuses, or a configured token endpoint that does not answer,
// is the user's to fix, like a refused API key. Anything else the endpoint
// does wrong is the suites' to judge.
func OAuth(ctx context.Context, env *target.Env) *Problem {
	err := env.StartOAuth(ctx)
	if err == nil {
		return nil
	}
	secret := config.EnvName("oauth_client_secret") + " (or --oauth-client-secret-file)"
	if target.ClientRefused(err) {
		return &Problem{Stage: StageCredential, Message: "the OAuth2 client was refused: " + err.Error(),
			Hint: "check that --oauth-client-id names a client of this target's authorization server and that " + secret + " holds its secret"}
	}
	var te *client.TransportError
	if errors.As(err, &te) && env.Config.OAuth.TokenURL != "" {
		return &Problem{Stage: StageReach, Message: "the OAuth2 token endpoint does not answer: " + err.Error(),
			Hint: "check --oauth-token-url: is the authorization server up, at this address?"}
	}
	return nil
}
