// Package target is what a run knows about the Harness under test: the
// validated configuration, a client for it, what it claims in discovery, and
// which conformance levels the run therefore checks.
package target

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
	"github.com/harn-conform/conform/internal/redact"
	"github.com/harn-conform/conform/internal/requirements"
)

// ScenariosCapability is the discovery capability key by which a target says
// it implements the conformance scenario contract (docs/scenarios.md).
const ScenariosCapability = "conform.scenarios"

// Discovery is what GET /v1 said, kept raw for the checks and summarised for
// level selection. A discovery that failed is recorded, not fatal: the Core
// checks report it as the target's failure.
type Discovery struct {
	Status            int            `json:"status"`
	Error             string         `json:"error,omitempty"`
	ProtocolFamily    string         `json:"protocol_family,omitempty"`
	CurrentVersion    string         `json:"current_version,omitempty"`
	SupportedVersions []string       `json:"supported_versions,omitempty"`
	Capabilities      map[string]any `json:"capabilities,omitempty"`
	Raw               map[string]any `json:"-"`
}

// Claims reports whether the target advertises a level. Core is always
// claimed: it is the floor every Harness is measured against. The mapping
// from capability flags to levels is docs/interpretations.md#claims.
func (d Discovery) Claims(l requirements.Level) bool {
	switch l {
	case requirements.Core:
		return true
	case requirements.Extended:
		return d.Capabilities["websocket"] == true
	case requirements.Receipts:
		return d.Capabilities["receipts"] == true
	case requirements.Replay:
		return d.Capabilities["replay"] == true
	}
	return false
}

// Scenarios is the scenario-contract version the target implements, or "".
func (d Discovery) Scenarios() string {
	s, _ := d.Capabilities[ScenariosCapability].(string)
	return s
}

// Selection says whether a level runs, and why.
type Selection struct {
	Level    requirements.Level `json:"level"`
	Run      bool               `json:"run"`
	Claimed  bool               `json:"claimed"`
	Explicit bool               `json:"requested"`
	Reason   string             `json:"reason"`
}

// Env is everything a spec needs from the run.
type Env struct {
	Config    config.Config
	Client    *client.Client
	Redactor  *redact.Redactor
	Discovery Discovery
	Levels    []Selection
	RunID     string // distinguishes this run's resources and keys from any other's
	// Restart restarts the target (from --restart-cmd, or in-process for
	// the built-in reference Harness); nil when the run cannot, and the
	// durability checks are then unverified.
	Restart RestartFunc

	oauthMu sync.Mutex
	oauth   *OAuth // resolved by OAuth (oauth.go)
}

// Selected returns the selection of a level.
func (e *Env) Selected(l requirements.Level) Selection {
	for _, s := range e.Levels {
		if s.Level == l {
			return s
		}
	}
	return Selection{Level: l, Reason: "unknown level"}
}

// UnreachableError means the target could not be spoken to at all; the run
// stops with exit status 2 and this message.
type UnreachableError struct {
	Target string
	Err    error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("target %s is unreachable: %v", e.Target, e.Err)
}
func (e *UnreachableError) Unwrap() error { return e.Err }

// New builds the client and the run's identity without speaking to the
// target. Its error is a configuration problem.
//
// A profile run (cfg.Profile) without a target (a profile that starts an
// agent command instead) has no client: Env.Client is nil.
func New(cfg config.Config) (*Env, error) {
	red := redact.New(cfg.Secrets()...)
	var c *client.Client
	if cfg.Target != "" || cfg.Profile == "" {
		var err error
		c, err = client.New(client.Options{
			BaseURL: cfg.Target, APIKey: cfg.APIKey, ProtocolVersion: cfg.ProtocolVersion,
			Timeout: cfg.Timeouts.Request, MaxBodyBytes: cfg.MaxBodyBytes, CAFile: cfg.CAFile, Redactor: red,
		})
		if err != nil {
			return nil, err
		}
	}
	env := &Env{Config: cfg, Client: c, Redactor: red, RunID: newRunID()}
	if cfg.RestartCmd != "" {
		env.Restart = CommandRestart(cfg.RestartCmd, cfg.Timeouts.Restart)
	}
	env.Levels = selectFor(cfg, env.Discovery)
	return env, nil
}

// UseDiscovery records what GET /v1 answered and selects the levels by it.
func (e *Env) UseDiscovery(resp *client.Response) {
	e.Discovery = parseDiscovery(resp)
	e.Levels = selectFor(e.Config, e.Discovery)
}

// Open builds the client, reads discovery and selects levels. Its error is
// either a configuration problem or an *UnreachableError.
func Open(ctx context.Context, cfg config.Config) (*Env, error) {
	env, err := New(cfg)
	if err != nil {
		return nil, err
	}
	resp, err := env.Client.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1"})
	if err != nil {
		var te *client.TransportError
		if errors.As(err, &te) {
			return nil, &UnreachableError{Target: env.Redactor.String(cfg.Target), Err: te.Err}
		}
		return nil, err
	}
	env.UseDiscovery(resp)
	return env, nil
}

func parseDiscovery(resp *client.Response) Discovery {
	d := Discovery{Status: resp.Status}
	if resp.Status != http.StatusOK {
		d.Error = fmt.Sprintf("%s, want 200", resp)
		return d
	}
	m, err := resp.Object()
	if err != nil {
		d.Error = err.Error()
		return d
	}
	d.Raw = m
	d.ProtocolFamily, _ = m["protocol_family"].(string)
	d.CurrentVersion, _ = m["current_version"].(string)
	if vs, ok := m["supported_versions"].([]any); ok {
		for _, v := range vs {
			if s, ok := v.(string); ok {
				d.SupportedVersions = append(d.SupportedVersions, s)
			}
		}
	}
	if caps, ok := m["capabilities"].(map[string]any); ok {
		d.Capabilities = caps
	}
	return d
}

// selectFor selects what a run checks: one profile (cfg.Profile), or the
// Harn levels by cfg.Levels and discovery.
func selectFor(cfg config.Config, d Discovery) []Selection {
	if cfg.Profile != "" {
		return []Selection{{Level: requirements.Level(cfg.Profile), Run: true, Claimed: true, Explicit: true, Reason: "requested with --profile"}}
	}
	want := cfg.Levels
	explicit := map[requirements.Level]bool{}
	mode := config.LevelsClaimed
	for _, w := range want {
		switch w = strings.ToLower(w); w {
		case config.LevelsClaimed, config.LevelsAll:
			mode = w
		default:
			l, err := requirements.ParseLevel(w)
			if err == nil {
				explicit[l] = true
				mode = ""
			}
		}
	}
	var out []Selection
	for _, l := range requirements.Levels() {
		s := Selection{Level: l, Claimed: d.Claims(l)}
		switch {
		case mode == config.LevelsAll:
			s.Run, s.Explicit, s.Reason = true, true, "requested with --levels all"
		case mode == config.LevelsClaimed && s.Claimed && l == requirements.Core:
			s.Run, s.Reason = true, "core is always checked"
		case mode == config.LevelsClaimed && s.Claimed:
			s.Run, s.Reason = true, "claimed in discovery capabilities"
		case mode == config.LevelsClaimed:
			s.Reason = "not claimed in discovery capabilities"
		case explicit[l]:
			s.Run, s.Explicit, s.Reason = true, true, "requested with --levels"
		default:
			s.Reason = "not requested"
		}
		switch {
		case !s.Run:
		case slices.ContainsFunc(cfg.SkipLevels, func(x string) bool { return strings.EqualFold(x, string(l)) }):
			s.Run, s.Explicit, s.Reason = false, false, "skipped with --skip-levels"
		case len(cfg.Areas) > 0 && !slices.ContainsFunc(cfg.Areas, func(a string) bool { return areaOfLevel(a, l) }):
			s.Run, s.Explicit, s.Reason = false, false, "none of its areas requested with --areas"
		}
		out = append(out, s)
	}
	return out
}

// areaOfLevel reports whether area (CORE-DUR) is one of level l's.
func areaOfLevel(area string, l requirements.Level) bool {
	reg, err := requirements.Default()
	return err == nil && slices.Contains(reg.Areas(l), area)
}

// AreaChecked reports whether the run checks requirement id's area (by
// --areas and --skip-areas), and when not, why. Its level's selection is
// Selected's.
func (e *Env) AreaChecked(id string) (bool, string) {
	a := requirements.AreaOf(id)
	switch {
	case slices.Contains(e.Config.SkipAreas, a):
		return false, "area " + a + " skipped with --skip-areas"
	case len(e.Config.Areas) > 0 && !slices.Contains(e.Config.Areas, a):
		return false, "area " + a + " not among --areas " + strings.Join(e.Config.Areas, ",")
	}
	return true, ""
}

// LevelNames renders a selection list for messages.
func LevelNames(sel []Selection) string {
	var names []string
	for _, s := range sel {
		if s.Run {
			names = append(names, string(s.Level))
		}
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
