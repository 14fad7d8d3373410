package suite

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/check"
	"github.com/harn-conform/conform/internal/client"
)

// RemedyWorkspace is what to do when no workspace could be found.
const RemedyWorkspace = "give --workspace-id ID of a workspace the API key may use, or offer POST or GET /v1/workspaces"

// Workspace finds a workspace for a spec's sessions. Core does not include
// the Workspace API, so a target may provision workspaces itself; the
// order is docs/interpretations.md#test-sessions: --workspace-id, the
// discovery capability conform.workspace_id, POST /v1/workspaces, the first
// of GET /v1/workspaces, and a Session created without workspace_id. None
// of these probes is judged. The error says what was tried; reqs get an
// error verdict if the target cannot be spoken to.
func Workspace(ctx context.Context, reqs ...string) (string, error) {
	GinkgoHelper()
	id, err := FindWorkspace(ctx, Client())
	var te *client.TransportError
	if errors.As(err, &te) {
		Transport(err, reqs...)
	}
	return id, err
}

// FindWorkspace is Workspace for an observation made outside a spec
// (Watch): c makes the probes, and a transport error is returned (a
// *client.TransportError), not recorded.
func FindWorkspace(ctx context.Context, c *client.Client) (string, error) {
	env := Env()
	if id := env.Config.WorkspaceID; id != "" {
		return id, nil
	}
	if id, ok := env.Discovery.Capabilities["conform.workspace_id"].(string); ok && id != "" {
		return id, nil
	}
	key := Key("conform-ws")
	created, err := c.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/workspaces",
		Body: map[string]any{"name": key, "root": "conform://" + key}})
	if err != nil {
		return "", err
	}
	if m, err := created.Object(); err == nil && created.Status/100 == 2 {
		if id, _ := m["id"].(string); id != "" {
			return id, nil
		}
	}
	list, err := c.Do(ctx, client.Request{Path: "/v1/workspaces", Query: url.Values{"limit": {"1"}}})
	if err != nil {
		return "", err
	}
	if p, err := check.ListPage(list); err == nil && list.Status == http.StatusOK && len(p.IDs) > 0 && p.IDs[0] != "" {
		return p.IDs[0], nil
	}
	// A Harness that infers the workspace (from the key's actor, or because
	// it has one) may create a Session without workspace_id; the OpenAPI
	// requires the field, so a 400 here is right and not judged.
	se, err := c.Do(ctx, client.Request{Method: http.MethodPost, Path: "/v1/sessions", Body: map[string]any{},
		Probe: "a Session without workspace_id, to learn the target's own workspace"})
	if err != nil {
		return "", err
	}
	if m, err := se.Object(); err == nil && se.Status/100 == 2 {
		if id, _ := m["workspace_id"].(string); id != "" {
			return id, nil
		}
	}
	return "", fmt.Errorf("no workspace to own a test session: %s, %s and %s (a Session needs a workspace_id, and Core does not include the Workspace API)", created, list, se)
}
