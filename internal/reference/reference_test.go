package reference

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/harn-conform/conform/internal/config"
)

func panics(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg, _ = r.(string)
		}
	}()
	f()
	return ""
}

// The registry refuses what would be a defect of the build, says when a
// binary has no such reference, and starts what was registered. (Nothing
// that registers is imported here, so the registry starts empty.)
func TestRegistry(t *testing.T) {
	if Has(Harn) {
		t.Fatal("a reference is registered in a binary that imports no refharness/builtin")
	}
	if _, err := Start(context.Background(), Harn); err == nil || !strings.Contains(err.Error(), "refharness/builtin") {
		t.Errorf("Start of an unregistered reference: %v, want an error naming refharness/builtin", err)
	}
	if m := panics(func() { Register("", func(context.Context) (*Reference, error) { return nil, nil }) }); !strings.Contains(m, "want a name") {
		t.Errorf("an empty name: %q", m)
	}
	if m := panics(func() { Register("x", nil) }); !strings.Contains(m, "want a name and a start function") {
		t.Errorf("a nil start: %q", m)
	}
	started := 0
	Register("test-ref", func(context.Context) (*Reference, error) {
		started++
		return &Reference{Target: "http://127.0.0.1:1"}, nil
	})
	if m := panics(func() { Register("test-ref", func(context.Context) (*Reference, error) { return nil, nil }) }); !strings.Contains(m, "twice") {
		t.Errorf("registering twice: %q", m)
	}
	if !Has("test-ref") {
		t.Error("Has after Register = false")
	}
	r, err := Start(context.Background(), "test-ref")
	if err != nil || started != 1 || r.Target != "http://127.0.0.1:1" {
		t.Errorf("Start = %+v, %v (started %d times)", r, err, started)
	}
	boom := errors.New("boom")
	Register("failing-ref", func(context.Context) (*Reference, error) { return nil, boom })
	if _, err := Start(context.Background(), "failing-ref"); !errors.Is(err, boom) {
		t.Errorf("Start of a failing reference = %v, want its own error", err)
	}
}

func TestStop(t *testing.T) {
	var r *Reference
	if err := r.Stop(); err != nil { // a nil reference has nothing to stop
		t.Errorf("nil Stop = %v", err)
	}
	if err := (&Reference{}).Stop(); err != nil {
		t.Errorf("Stop without Close = %v", err)
	}
	boom := errors.New("boom")
	if err := (&Reference{Close: func() error { return boom }}).Stop(); !errors.Is(err, boom) {
		t.Errorf("Stop = %v, want Close's error", err)
	}
}

// Configure: the target or command and the key are the reference's; the
// further actors and the OAuth2 client only when the configuration names
// none of its own.
func TestConfigure(t *testing.T) {
	harn := &Reference{Target: "http://ref", APIKey: "k1", SecondAPIKey: "k2", ReadOnlyAPIKey: "k3", OAuthClientID: "actor_default", OAuthClientSecret: "k1"}

	var cfg config.Config
	cfg.Target, cfg.APIKey = "http://elsewhere", "old"
	harn.Configure(&cfg)
	if cfg.Target != "http://ref" || cfg.APIKey != "k1" || cfg.SecondAPIKey != "k2" || cfg.ReadOnlyAPIKey != "k3" ||
		cfg.OAuth.ClientID != "actor_default" || cfg.OAuth.Secret != "k1" || cfg.AgentCommand != nil {
		t.Errorf("an empty configuration: %+v", cfg)
	}

	cfg = config.Config{ReadOnlyAPIKey: "mine", OAuth: config.OAuth{ClientID: "my-client", Secret: "my-secret", Scope: []string{"tasks:read"}}}
	harn.Configure(&cfg)
	if cfg.SecondAPIKey != "" || cfg.ReadOnlyAPIKey != "mine" {
		t.Errorf("a configuration naming an actor of its own: second %q, read-only %q", cfg.SecondAPIKey, cfg.ReadOnlyAPIKey)
	}
	if cfg.OAuth.ClientID != "my-client" || cfg.OAuth.Secret != "my-secret" || len(cfg.OAuth.Scope) != 1 {
		t.Errorf("a configuration naming its own OAuth2 client: %+v", cfg.OAuth)
	}

	agent := &Reference{AgentCommand: []string{"/bin/agent", "serve"}}
	cfg = config.Config{APIKey: "kept"}
	agent.Configure(&cfg)
	if cfg.Target != "" || !slices.Equal(cfg.AgentCommand, []string{"/bin/agent", "serve"}) || cfg.APIKey != "kept" || cfg.OAuth.ClientID != "" {
		t.Errorf("an agent command reference: %+v", cfg)
	}
}
