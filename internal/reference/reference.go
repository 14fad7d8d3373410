// Package reference is the registry of built-in references: the
// implementations conform runs against when it is given no target of its
// own — the reference Harness for the Harn levels (`conform selftest`,
// `go test ./suites/core`, the Replay suite's determinism comparison) and
// each profile's reference (`conform selftest --profiles NAME`,
// `go test ./suites/openharness`).
//
// The checker side never imports the reference implementations: it asks
// this registry for a reference by name (Harn, or a profile's name) and
// gets a running Reference to point its configuration at. The one package
// that assembles them, refharness/builtin, registers each from its init:
//
//	func init() { reference.Register(reference.Harn, startHarness) }
//
// so a binary has its built-in references exactly when it imports
// refharness/builtin. cmd/conform does, and so does each suite package's
// suite_test.go (a blank import); a program that imports only the suites
// has none, and a run without a target then says so instead of starting
// anything. docs/architecture.md has the layers this keeps apart.
package reference

import (
	"context"
	"fmt"
	"sync"

	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/target"
)

// Harn is the name of the reference Harness, the built-in reference of
// the Harn levels. A profile's reference is registered under the profile's
// name (requirements.OpenHarness, requirements.ACPHarbor).
const Harn = "harn"

// Reference is a running built-in reference: a server at a URL, or an
// agent command, with the credentials a run needs to check it. One type
// for the Harn levels and the profiles alike; what a reference does not
// have is left empty.
type Reference struct {
	// Target is its URL (the reference Harness, a NeedsTarget profile's);
	// AgentCommand the command that starts it (a NeedsCommand profile's).
	Target       string
	AgentCommand []string
	// APIKey, when set, is the key the run sends (and redacts).
	APIKey string
	// SecondAPIKey and ReadOnlyAPIKey are the keys of the further actors
	// the authorization checks need (docs/interpretations.md
	// #authz-tenancy): a tenant of its own, and an actor of the first
	// one's tenant that may only read. Empty: the reference has none.
	SecondAPIKey, ReadOnlyAPIKey string
	// OAuthClientID and OAuthClientSecret are its OAuth2 client (the
	// reference Harness's actor, with the API key for secret:
	// refharness/oauth.go). Empty: it has no OAuth2 client.
	OAuthClientID, OAuthClientSecret string
	// Restart, when set, restarts it in-process over the same data, for
	// the durability checks (in place of --restart-cmd).
	Restart target.RestartFunc
	// Notes go into the report (what was started, and how).
	Notes []string
	// Close stops it; nil when there is nothing to stop.
	Close func() error
}

// Stop stops the reference, if it has anything to stop.
func (r *Reference) Stop() error {
	if r == nil || r.Close == nil {
		return nil
	}
	return r.Close()
}

// Configure points cfg at the reference: its URL or agent command and its
// API key replace the configuration's; its further actors' keys are used
// when the configuration names neither, and its OAuth2 client when the
// configuration names none. (`conform selftest` clears those first: its
// target is its own, and so are the target's actors.)
func (r *Reference) Configure(cfg *config.Config) {
	cfg.Target, cfg.AgentCommand = r.Target, r.AgentCommand
	if r.APIKey != "" {
		cfg.APIKey = r.APIKey
	}
	if (r.SecondAPIKey != "" || r.ReadOnlyAPIKey != "") && cfg.SecondAPIKey == "" && cfg.ReadOnlyAPIKey == "" {
		cfg.SecondAPIKey, cfg.ReadOnlyAPIKey = r.SecondAPIKey, r.ReadOnlyAPIKey
	}
	if r.OAuthClientID != "" && cfg.OAuth.ClientID == "" {
		cfg.OAuth.ClientID, cfg.OAuth.Secret = r.OAuthClientID, r.OAuthClientSecret
	}
}

// StartFunc starts a built-in reference. Its error says why it could not.
type StartFunc func(ctx context.Context) (*Reference, error)

var (
	mu     sync.Mutex
	starts = map[string]StartFunc{}
)

// Register adds the built-in reference called name (Harn, or a profile's
// name). It panics on an empty name, a nil start and a second
// registration: each is a defect of the build, found by the first test
// that imports the registering package.
func Register(name string, start StartFunc) {
	if name == "" || start == nil {
		panic(fmt.Sprintf("reference.Register(%q): want a name and a start function", name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := starts[name]; dup {
		panic(fmt.Sprintf("reference.Register: %s registered twice", name))
	}
	starts[name] = start
}

// Has reports whether a reference called name is registered.
func Has(name string) bool {
	mu.Lock()
	defer mu.Unlock()
	_, ok := starts[name]
	return ok
}

// Start starts the reference called name. When none is registered, its
// error says that this binary has no built-in reference (it does not
// import refharness/builtin); otherwise it is the start function's own.
func Start(ctx context.Context, name string) (*Reference, error) {
	mu.Lock()
	start, ok := starts[name]
	mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("no built-in reference %q in this binary (the package that registers the built-in references, refharness/builtin, is not imported)", name)
	}
	return start(ctx)
}
