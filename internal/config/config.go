// Package config is the one configuration of a conformance run. It is loaded
// once, in a fixed order (defaults, then a YAML or JSON file, then CONFORM_*
// environment variables, then command-line flags), validated once, and then
// passed down as a value. The conform binary exports it to the environment so
// that `go test ./suites/...` and the ginkgo CLI see exactly the same run.
package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/onsi/ginkgo/v2/types"
	"gopkg.in/yaml.v3"

	"github.com/harn-conform/conform/internal/requirements"
	"github.com/harn-conform/conform/internal/suggest"
)

// ProtocolVersion is the Harn Agents Protocol version this tool checks.
const ProtocolVersion = "agents-protocol-2026-04-25"

// LevelsClaimed and LevelsAll are the two special values of Levels.
const (
	LevelsClaimed = "claimed"
	LevelsAll     = "all"
)

// FailOnUnverified and FailOnFailures are the values of FailOn.
const (
	FailOnUnverified = "unverified"
	FailOnFailures   = "failures"
)

// Timeouts are the named waits of a run.
type Timeouts struct {
	Request time.Duration `json:"request"` // one HTTP exchange
	Task    time.Duration `json:"task"`    // a task reaching the state a spec waits for
	Stream  time.Duration `json:"stream"`  // a stream delivering the frame a spec waits for
	// Restart bounds the restart command, and then, separately, the wait
	// for the target to answer GET /v1 again after the command returned.
	Restart time.Duration `json:"restart"`
}

// Config is a whole run's configuration.
type Config struct {
	Target          string   // base URL of the Harness under test; "" = the built-in reference Harness
	APIKey          string   // bearer key; never printed (see Redacted)
	APIKeyFile      string   // where APIKey came from, if a file
	APIKeySource    string   // the variable or flag APIKey came from, for hints (never the key)
	Levels          []string // "claimed", "all", or level names
	Out             string   // report directory
	Timeouts        Timeouts //
	LabelFilter     string   // Ginkgo label filter, ANDed with the level selection
	Focus           []string // Ginkgo focus strings
	Seed            int64    // spec order seed; 0 = choose one and record it
	ProtocolVersion string   // the version header value sent
	MaxBodyBytes    int64    // cap on any response body read from the target
	CAFile          string   // extra PEM roots for HTTPS targets
	Redact          []string // further secrets to scrub from every output
	RedactFile      string   // where (some of) Redact came from, if a file
	// MaxDuration bounds the whole run; 0 = no bound. What it cuts off is
	// an error, never a failure.
	MaxDuration time.Duration
	// WorkspaceID names a workspace the key may use, for targets that
	// provision workspaces themselves (Core has no Workspace API).
	WorkspaceID string
	// RestartCmd is a shell command (run with sh -c) that restarts the
	// target, for the durability checks; "" = those checks are unverified.
	// It may hold credentials, so reports show only whether it was set.
	RestartCmd string
	// WaitForTarget polls discovery (GET /v1) for up to this long before
	// the run, for CI jobs that start the target in the background; 0 =
	// one try.
	WaitForTarget time.Duration
	// Baseline is a known-failures file (conform baseline write): listed
	// requirements that fail or stay unverified are expected, and a listed
	// one that now passes is stale.
	Baseline string
	// SkipLevels are levels not checked even when Levels selects them;
	// Areas, when set, are the only areas checked (requirement-id
	// prefixes such as CORE-DUR); SkipAreas are areas not checked. What
	// is not checked by choice is reported "not requested" and never
	// fails the gate.
	SkipLevels, Areas, SkipAreas []string
	// FailOn is what fails the gate (exit 1): FailOnUnverified (the
	// default: a failed MUST, and an observable MUST left unverified) or
	// FailOnFailures (a failed MUST only).
	FailOn string
	// JUnit is the granularity of junit.xml: "requirement" (one testcase
	// per requirement, the default) or "spec" (one per Ginkgo spec).
	JUnit string
	// OAuth is the OAuth2 client-credentials side of the run (Extended
	// level, docs/oauth.md).
	OAuth OAuth
	// SecondAPIKey is the key of a second actor, of another tenant than
	// APIKey's, for the authorization checks (EXT-AUTHZ-002, -008, -009);
	// ReadOnlyAPIKey is a key whose actor may read APIKey's resources but
	// change none (EXT-AUTHZ-001). Never printed; "" = those checks are
	// unverified.
	SecondAPIKey, SecondAPIKeyFile     string
	ReadOnlyAPIKey, ReadOnlyAPIKeyFile string
	// WSTrustedDev is the operator's statement that the target is a
	// trusted development deployment, where WebSocket over plain ws:// to a
	// host other than loopback is acceptable (EXT-WS-002,
	// docs/websocket.md section 1.1). It is never inferred.
	WSTrustedDev bool
	// Profile, when set, makes the run check that profile (openharness,
	// acp-harbor; docs/profiles.md) instead of Harn levels.
	Profile string
	// NegativeBudget bounds the malformed requests of the hostile-input
	// pass (internal/negative), shrinking included, over all the levels the
	// run checks; 0 = no pass (its requirements are unverified).
	NegativeBudget int
	// AgentCommand is the agent a command-driven profile (acp-harbor)
	// starts: the program and its arguments, everything after `--` on
	// conform's command line. It may hold credentials, so reports show
	// only whether it was set.
	AgentCommand []string
	// Concurrency bounds the concurrency checks (docs/concurrency.md).
	Concurrency Concurrency
	// ACPAuthMethod is the id of one of the agent's authMethods: every
	// spec calls authenticate with it after initialize (acp-harbor;
	// docs/acp-harbor.md, "Agents that need authentication"). "" = never.
	ACPAuthMethod string
}

// Concurrency bounds the checks that race clients against each other: how
// many requests fire at once, how many rounds each check runs, the rate
// the bursts may reach over time, and the deadline of one round.
type Concurrency struct {
	// N is how many requests (or clients) a round fires at once; 1 runs no
	// race at all (the concurrency checks are then unverified).
	N int
	// Rounds is how many rounds each check runs; 0 = each check's own
	// default, sized so a race the reference Harness's faults plant shows
	// in at least 99 % of runs (docs/performance.md).
	Rounds int
	// Rate caps the requests per second the bursts reach over time (a
	// burst of N may go at once); 0 = no cap.
	Rate float64
	// RoundTimeout is the deadline of one round, its reads included.
	RoundTimeout time.Duration
}

// DefaultConcurrency is the number of requests a round fires at once:
// sized for a 2-core CI runner that runs both conform and the target.
const DefaultConcurrency = 8

// OAuth configures how the run gets OAuth2 access tokens from the target's
// token endpoint, and the refused-token fixtures of a third-party target.
type OAuth struct {
	TokenURL   string   // token endpoint; "" = the one the agent card advertises
	ClientID   string   //
	Secret     string   // client secret; never printed
	SecretFile string   // where Secret came from, if a file
	Scope      []string // scope of the run's token; nil = the server's default
	Audience   string   // sent as "audience" when set
	// The tokens the target must refuse, when the operator supplies them
	// (never printed). Without them the reference Harness's test-token hook
	// is used, if the target offers it.
	ExpiredToken, WrongAudienceToken, WrongIssuerToken             string
	ExpiredTokenFile, WrongAudienceTokenFile, WrongIssuerTokenFile string
}

// JUnit granularities.
const (
	JUnitPerRequirement = "requirement"
	JUnitPerSpec        = "spec"
)

// DefaultNegativeBudget is the hostile-input pass's default budget: sized to
// add a few seconds to a run against a local target (docs/performance.md).
const DefaultNegativeBudget = 600

// Defaults returns the configuration before any source is applied.
func Defaults() Config {
	return Config{
		Levels:          []string{LevelsClaimed},
		FailOn:          FailOnUnverified,
		Out:             "conform-report",
		Timeouts:        Timeouts{Request: 10 * time.Second, Task: 30 * time.Second, Stream: 10 * time.Second, Restart: time.Minute},
		ProtocolVersion: ProtocolVersion,
		MaxBodyBytes:    8 << 20,
		JUnit:           JUnitPerRequirement,
		Concurrency:     Concurrency{N: DefaultConcurrency, Rate: 1000, RoundTimeout: 10 * time.Second},
		NegativeBudget:  DefaultNegativeBudget,
	}
}

// A setting is one knob: its names in each source and how to apply a string.
type setting struct {
	key    string // file key and flag name (flag names use '-' for '_')
	secret bool   // never shown: reports say only whether it is set
	// noFlag settings come only from the environment or the file: a flag's
	// value would be visible in process listings.
	noFlag bool
	// noFile settings are refused in a config file (secrets: use the
	// setting's _file sibling or the environment).
	noFile bool
	kind   string // the value's type as -h shows it: duration, int, list, file, url, string…
	help   string
	set    func(*Config, string) error
	get    func(*Config) string
}

func durationSetting(key, help string, field func(*Config) *time.Duration, min, max time.Duration) setting {
	return setting{key: key, kind: "duration", help: help,
		set: func(c *Config, v string) error {
			d, err := time.ParseDuration(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not a duration like 5s or 2m", v)
			}
			if d < min || d > max {
				return fmt.Errorf("%s is out of range [%s, %s]", d, min, max)
			}
			*field(c) = d
			return nil
		},
		get: func(c *Config) string { return field(c).String() },
	}
}

func intSetting(key, help string, field func(*Config) *int, min, max int) setting {
	return setting{key: key, kind: "int", help: help,
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < min || n > max {
				return fmt.Errorf("%q is not a whole number in [%d, %d]", v, min, max)
			}
			*field(c) = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(*field(c)) },
	}
}

func listSetting(key, help string, field func(*Config) *[]string) setting {
	return setting{key: key, kind: "list", help: help,
		set: func(c *Config, v string) error { *field(c) = splitList(v); return nil },
		get: func(c *Config) string { return strings.Join(*field(c), ",") },
	}
}

// areaListSetting is a list of areas, kept in upper case (CORE-DUR).
func areaListSetting(key, help string, field func(*Config) *[]string) setting {
	st := listSetting(key, help, field)
	st.set = func(c *Config, v string) error {
		*field(c) = splitList(strings.ToUpper(v))
		return nil
	}
	return st
}

func stringSetting(key, kind, help string, field func(*Config) *string) setting {
	return setting{key: key, kind: kind, help: help,
		set: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return *field(c) },
	}
}

var settings = []setting{
	stringSetting("target", "url", "base URL of the Harness under test (a path prefix is fine); under go test, unset means the built-in reference Harness", func(c *Config) *string { return &c.Target }),
	{key: "api_key", secret: true, noFile: true, kind: "key", help: "bearer API key (visible in process listings as a flag: prefer CONFORM_API_KEY or --api-key-file)",
		set: func(c *Config, v string) error { c.APIKey = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return c.APIKey }},
	{key: "api_key_file", kind: "file", help: "file whose first line is the bearer API key",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			key, err := readKeyFile(v)
			if err != nil {
				return err
			}
			c.APIKeyFile, c.APIKey = v, key
			return nil
		},
		get: func(c *Config) string { return c.APIKeyFile }},
	{key: "second_api_key", secret: true, noFile: true, kind: "key", help: "bearer API key of a second actor, of another tenant than the first key's (it must be able to create a workspace of its own), for the authorization checks EXT-AUTHZ-002, -008, -009 (visible in process listings as a flag: prefer CONFORM_SECOND_API_KEY or --second-api-key-file); unset: they are unverified",
		set: func(c *Config, v string) error { c.SecondAPIKey = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return c.SecondAPIKey }},
	secretFileSetting("second_api_key_file", "second actor's API key", func(c *Config) (*string, *string) { return &c.SecondAPIKeyFile, &c.SecondAPIKey }),
	{key: "read_only_api_key", secret: true, noFile: true, kind: "key", help: "bearer API key of an actor that may read the first key's resources but change none, for EXT-AUTHZ-001 (prefer CONFORM_READ_ONLY_API_KEY or --read-only-api-key-file); unset: EXT-AUTHZ-001 is unverified",
		set: func(c *Config, v string) error { c.ReadOnlyAPIKey = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return c.ReadOnlyAPIKey }},
	secretFileSetting("read_only_api_key_file", "read-only actor's API key", func(c *Config) (*string, *string) { return &c.ReadOnlyAPIKeyFile, &c.ReadOnlyAPIKey }),
	listSetting("levels", "levels to run: claimed (those the target advertises, plus core), all, or a list of core,extended,receipts,replay", func(c *Config) *[]string { return &c.Levels }),
	listSetting("skip_levels", "levels not to check even when --levels selects them (claimed ones included), e.g. replay; reported not requested", func(c *Config) *[]string { return &c.SkipLevels }),
	areaListSetting("areas", "check only these areas of the selected levels: requirement-id prefixes such as CORE-DUR or EXT-WS (`conform list --areas`); the rest is reported not requested", func(c *Config) *[]string { return &c.Areas }),
	areaListSetting("skip_areas", "areas not to check, e.g. CORE-DUR,EXT-OAUTH: reported not requested, and they never fail the gate", func(c *Config) *[]string { return &c.SkipAreas }),
	{key: "fail_on", kind: "name", help: "what fails the gate (exit 1): unverified (default: a failed MUST, or an observable MUST left unverified) or failures (failed MUSTs only; the unverified ones are still listed)",
		set: func(c *Config, v string) error {
			switch v = strings.ToLower(strings.TrimSpace(v)); v {
			case FailOnUnverified, FailOnFailures:
				c.FailOn = v
				return nil
			}
			return fmt.Errorf("%q is not unverified or failures", v)
		},
		get: func(c *Config) string { return c.FailOn }},
	stringSetting("out", "dir", "directory for conform.json, junit.xml and summary.md", func(c *Config) *string { return &c.Out }),
	durationSetting("request_timeout", "limit on one HTTP exchange", func(c *Config) *time.Duration { return &c.Timeouts.Request }, 100*time.Millisecond, 10*time.Minute),
	durationSetting("task_timeout", "limit on a task reaching an awaited state", func(c *Config) *time.Duration { return &c.Timeouts.Task }, time.Second, time.Hour),
	durationSetting("stream_timeout", "limit on a stream delivering an awaited frame", func(c *Config) *time.Duration { return &c.Timeouts.Stream }, 100*time.Millisecond, 10*time.Minute),
	{key: "max_duration", kind: "duration", help: "limit on the whole run (0: none); specs it cuts off are errors, never failures",
		set: func(c *Config, v string) error {
			if v = strings.TrimSpace(v); v == "0" {
				v = "0s"
			}
			d, err := time.ParseDuration(v)
			if err != nil || d != 0 && (d < time.Second || d > 24*time.Hour) {
				return fmt.Errorf("%q is not 0 or a duration in [1s, 24h]", v)
			}
			c.MaxDuration = d
			return nil
		},
		get: func(c *Config) string { return c.MaxDuration.String() }},
	stringSetting("workspace_id", "id", "id of a workspace the API key may use, for a target that provisions workspaces itself (Core does not include the Workspace API); unset: the suite creates or lists one", func(c *Config) *string { return &c.WorkspaceID }),
	stringSetting("label_filter", "expr", "Ginkgo label filter expression, ANDed with the level selection", func(c *Config) *string { return &c.LabelFilter }),
	listSetting("focus", "run only specs whose text matches these regular expressions", func(c *Config) *[]string { return &c.Focus }),
	{key: "seed", kind: "int", help: "random seed of the spec order (0 picks one; the report records it)",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 0 {
				return fmt.Errorf("%q is not a whole number >= 0", v)
			}
			c.Seed = n
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(c.Seed, 10) }},
	{key: "negative_budget", kind: "int", help: "malformed requests the hostile-input pass may send, shrinking included, over all levels checked (0: no pass; its requirements are then unverified) [0, 100000]",
		set: func(c *Config, v string) error {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < 0 || n > 100000 {
				return fmt.Errorf("%q is not a whole number in [0, 100000]", v)
			}
			c.NegativeBudget = n
			return nil
		},
		get: func(c *Config) string { return strconv.Itoa(c.NegativeBudget) }},
	stringSetting("protocol_version", "string", "value sent in Harn-Agents-Protocol-Version", func(c *Config) *string { return &c.ProtocolVersion }),
	{key: "max_body_bytes", kind: "int", help: "largest response body read from the target, in bytes [1024, 1073741824]",
		set: func(c *Config, v string) error {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n < 1024 || n > 1<<30 {
				return fmt.Errorf("%q is not a whole number in [1024, 1073741824]", v)
			}
			c.MaxBodyBytes = n
			return nil
		},
		get: func(c *Config) string { return strconv.FormatInt(c.MaxBodyBytes, 10) }},
	stringSetting("ca_file", "file", "PEM file of extra root certificates for an HTTPS target", func(c *Config) *string { return &c.CAFile }),
	{key: "redact", secret: true, noFlag: true, kind: "values", help: "further secret values to scrub from every output, newline-separated; environment or config file only (a flag's value would be visible in process listings): see redact_file",
		set: func(c *Config, v string) error { c.Redact = append(c.Redact, splitLines(v)...); return nil },
		get: func(c *Config) string { return strings.Join(c.Redact, "\n") }},
	{key: "redact_file", kind: "file", help: "file of further secret values to scrub from every output, one per line (added to CONFORM_REDACT)",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if v == "" {
				return errors.New("empty path")
			}
			b, err := readBounded(v)
			if err != nil {
				return fmt.Errorf("reading redact file: %w", err)
			}
			c.RedactFile = v
			c.Redact = append(c.Redact, splitLines(string(b))...)
			return nil
		},
		get: func(c *Config) string { return c.RedactFile }},
	{key: "restart_cmd", secret: true, kind: "command", help: "shell command (run with sh -c) that restarts the target, so the suite can check that tasks and idempotency keys survive a restart (docker restart NAME, systemctl restart UNIT, a script…); without it those MUSTs are unverified",
		set: func(c *Config, v string) error { c.RestartCmd = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return c.RestartCmd }},
	durationSetting("wait_for_target", "before the run, poll discovery (GET /v1) for up to this long until the target answers, for CI jobs that start it in the background (0: one try)", func(c *Config) *time.Duration { return &c.WaitForTarget }, 0, time.Hour),
	stringSetting("baseline", "file", "known-failures file (conform baseline write): listed requirements that fail or stay unverified are expected; one that now passes is stale and fails the run", func(c *Config) *string { return &c.Baseline }),
	{key: "junit", kind: "granularity", help: "junit.xml testcases: requirement (one per requirement) or spec (one per Ginkgo spec)",
		set: func(c *Config, v string) error {
			switch v = strings.ToLower(strings.TrimSpace(v)); v {
			case JUnitPerRequirement, JUnitPerSpec:
				c.JUnit = v
				return nil
			}
			return fmt.Errorf("%q is not requirement or spec", v)
		},
		get: func(c *Config) string { return c.JUnit }},
	durationSetting("restart_timeout", "limit on the restart command, and then on the target answering GET /v1 again", func(c *Config) *time.Duration { return &c.Timeouts.Restart }, time.Second, time.Hour),

	// The concurrency checks (docs/concurrency.md).
	intSetting("concurrency", "requests (or clients) the concurrency checks fire at once, 1..64; 1 runs no race (those checks are then unverified)", func(c *Config) *int { return &c.Concurrency.N }, 1, 64),
	intSetting("concurrency_rounds", "rounds each concurrency check runs, 0..1000 (0: each check's default, sized to catch the races it looks for in 99 % of runs)", func(c *Config) *int { return &c.Concurrency.Rounds }, 0, 1000),
	{key: "concurrency_rate", kind: "number", help: "cap on the requests per second the concurrency checks' bursts reach over time (a burst of --concurrency still goes at once); 0: no cap",
		set: func(c *Config, v string) error {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil || f < 0 || f > 1e6 || f != f {
				return fmt.Errorf("%q is not a number in [0, 1000000]", v)
			}
			c.Concurrency.Rate = f
			return nil
		},
		get: func(c *Config) string { return strconv.FormatFloat(c.Concurrency.Rate, 'f', -1, 64) }},
	durationSetting("concurrency_round_timeout", "deadline of one round of a concurrency check, its reads included", func(c *Config) *time.Duration { return &c.Concurrency.RoundTimeout }, 100*time.Millisecond, 10*time.Minute),

	{key: "ws_trusted_dev", kind: "bool", help: "true: the target is a trusted development deployment, so WebSocket over plain ws:// to a host other than loopback is acceptable (EXT-WS-002); otherwise the suite sends no credential over ws:// to such a host and its WebSocket checks are unverified",
		set: func(c *Config, v string) error {
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				return fmt.Errorf("%q is not true or false", v)
			}
			c.WSTrustedDev = b
			return nil
		},
		get: func(c *Config) string {
			if c.WSTrustedDev {
				return "true"
			}
			return ""
		}},

	// Profiles (docs/profiles.md).
	{key: "profile", kind: "name", help: "check a profile instead of Harn levels: openharness (with --target URL, the Engine's endpoint) or acp-harbor (with the agent command after --); see docs/profiles.md",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if v == "" {
				c.Profile = ""
				return nil
			}
			l, err := requirements.ParseProfile(v)
			if err != nil {
				return err
			}
			c.Profile = string(l)
			return nil
		},
		get: func(c *Config) string { return c.Profile }},
	stringSetting("acp_auth_method", "id", "acp-harbor: the id of one of the agent's authMethods; every spec calls authenticate with it after initialize (the agent inherits conform's environment: export what the method needs, such as its API key); unset: an agent that answers session/new with Authentication required leaves what needs a session unverified", func(c *Config) *string { return &c.ACPAuthMethod }),
	{key: "agent_command", secret: true, noFlag: true, kind: "command", help: "the agent a command-driven profile (acp-harbor) starts: a JSON array of strings, or words separated by spaces; on the command line, everything after -- (which wins)",
		set: func(c *Config, v string) error {
			cmd, err := ParseCommand(v)
			if err != nil {
				return err
			}
			c.AgentCommand = cmd
			return nil
		},
		get: func(c *Config) string { return FormatCommand(c.AgentCommand) }},

	// OAuth2 client credentials (Extended level, docs/oauth.md).
	stringSetting("oauth_token_url", "url", "OAuth2 token endpoint of the target (client credentials, RFC 6749 §4.4); unset: the one the agent card advertises in a2a_card.securitySchemes, if it is on the target's own origin", func(c *Config) *string { return &c.OAuth.TokenURL }),
	stringSetting("oauth_client_id", "id", "OAuth2 client id for the client-credentials checks (the secret comes from CONFORM_OAUTH_CLIENT_SECRET or --oauth-client-secret-file)", func(c *Config) *string { return &c.OAuth.ClientID }),
	secretSetting("oauth_client_secret", "OAuth2 client secret; environment only (a flag's value would be visible in process listings): see oauth_client_secret_file", func(c *Config) *string { return &c.OAuth.Secret }),
	secretFileSetting("oauth_client_secret_file", "OAuth2 client secret", func(c *Config) (*string, *string) { return &c.OAuth.SecretFile, &c.OAuth.Secret }),
	{key: "oauth_scope", kind: "list", help: "scopes of the run's access token, comma- or space-separated (unset: the server's default scope); it must allow the operations the checks call",
		set: func(c *Config, v string) error {
			c.OAuth.Scope = strings.Fields(strings.ReplaceAll(v, ",", " "))
			return nil
		},
		get: func(c *Config) string { return strings.Join(c.OAuth.Scope, ",") }},
	stringSetting("oauth_audience", "string", "sent as the audience parameter of token requests, for authorization servers that need one to pick the API (unset: not sent)", func(c *Config) *string { return &c.OAuth.Audience }),
	secretSetting("oauth_expired_token", "an expired access token from the target's issuer, for EXT-OAUTH-004 on a target without the conform.oauth_test_tokens hook; environment only: see oauth_expired_token_file", func(c *Config) *string { return &c.OAuth.ExpiredToken }),
	secretFileSetting("oauth_expired_token_file", "expired access token", func(c *Config) (*string, *string) { return &c.OAuth.ExpiredTokenFile, &c.OAuth.ExpiredToken }),
	secretSetting("oauth_wrong_audience_token", "an unexpired access token from the target's issuer minted for another audience, for EXT-OAUTH-003; environment only: see oauth_wrong_audience_token_file", func(c *Config) *string { return &c.OAuth.WrongAudienceToken }),
	secretFileSetting("oauth_wrong_audience_token_file", "wrong-audience access token", func(c *Config) (*string, *string) {
		return &c.OAuth.WrongAudienceTokenFile, &c.OAuth.WrongAudienceToken
	}),
	secretSetting("oauth_wrong_issuer_token", "an unexpired access token for the target's audience from an issuer it must not trust (ideally signed by a key it does trust), for EXT-OAUTH-002; environment only: see oauth_wrong_issuer_token_file", func(c *Config) *string { return &c.OAuth.WrongIssuerToken }),
	secretFileSetting("oauth_wrong_issuer_token_file", "wrong-issuer access token", func(c *Config) (*string, *string) { return &c.OAuth.WrongIssuerTokenFile, &c.OAuth.WrongIssuerToken }),
}

// secretSetting is a secret value that comes only from the environment: a
// flag's value would be visible in process listings, and a config file is
// often committed (its _file sibling names a file instead).
func secretSetting(key, help string, field func(*Config) *string) setting {
	return setting{key: key, secret: true, noFlag: true, noFile: true, kind: "key", help: help,
		set: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		get: func(c *Config) string { return *field(c) },
	}
}

// secretFileSetting names a file whose first line is a secret (what): it
// sets both the path and the secret.
func secretFileSetting(key, what string, field func(*Config) (path, secret *string)) setting {
	return setting{key: key, kind: "file", help: "file whose first line is the " + what,
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			secret, err := readSecretFile(v, what)
			if err != nil {
				return err
			}
			p, sec := field(c)
			*p, *sec = v, secret
			return nil
		},
		get: func(c *Config) string { p, _ := field(c); return *p },
	}
}

// EnvName is the environment variable of a setting key.
func EnvName(key string) string { return "CONFORM_" + strings.ToUpper(key) }

// FlagName is the command-line flag of a setting key.
func FlagName(key string) string { return strings.ReplaceAll(key, "_", "-") }

// Setting describes one knob for flag registration and documentation.
// Flag is empty for a setting that has no flag (environment or file only).
type Setting struct {
	Key, Flag, Env, Kind, Help string
	// NoFile: the config file may not set it (a secret: environment only).
	NoFile bool
}

// Kinds are the value types a Setting's Kind names, as -h shows them.
var Kinds = []string{"duration", "int", "number", "bool", "list", "file", "url", "dir", "key", "expr", "id", "values", "command", "granularity", "name", "string"}

// Settings lists every knob.
func Settings() []Setting {
	out := make([]Setting, len(settings))
	for i, s := range settings {
		out[i] = Setting{Key: s.key, Flag: FlagName(s.key), Env: EnvName(s.key), Kind: s.kind, Help: s.help, NoFile: s.noFile}
		if s.noFlag {
			out[i].Flag = ""
		}
	}
	return out
}

// Sources are the inputs of Load besides the defaults.
type Sources struct {
	File  string              // config file path ("" = none)
	Env   func(string) string // os.Getenv, or a fake in tests
	Flags map[string]string   // flag name -> value, only flags given explicitly
	// AgentCommand is the command line's tail after `--` (nil: none
	// given); it beats every other source of agent_command.
	AgentCommand []string
}

// Load applies the sources in order and validates the result. Every error
// names the source and the field.
func Load(src Sources) (Config, error) {
	c := Defaults()
	if src.File != "" {
		if err := applyFile(&c, src.File); err != nil {
			return Config{}, err
		}
	}
	if src.Env != nil {
		for _, s := range settings {
			if v := src.Env(EnvName(s.key)); v != "" {
				if err := s.set(&c, v); err != nil {
					return Config{}, fmt.Errorf("%s: %w", EnvName(s.key), err)
				}
				c.noteKeySource(s.key, EnvName(s.key))
			}
		}
	}
	flagKeys := make([]string, 0, len(src.Flags))
	for k := range src.Flags {
		flagKeys = append(flagKeys, k)
	}
	sort.Strings(flagKeys)
	for _, name := range flagKeys {
		s, ok := byFlag(name)
		if !ok {
			return Config{}, fmt.Errorf("--%s: unknown flag", name)
		}
		if err := s.set(&c, src.Flags[name]); err != nil {
			return Config{}, fmt.Errorf("--%s: %w", name, err)
		}
		c.noteKeySource(s.key, "--"+name)
	}
	if src.AgentCommand != nil {
		c.AgentCommand = append([]string(nil), src.AgentCommand...)
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// noteKeySource remembers which source last set the API key, so a refused
// key can be traced to the variable or flag to fix.
func (c *Config) noteKeySource(key, source string) {
	switch key {
	case "api_key":
		c.APIKeySource, c.APIKeyFile = source, ""
	case "api_key_file":
		c.APIKeySource = source + " " + c.APIKeyFile
	}
}

func byFlag(name string) (setting, bool) {
	for _, s := range settings {
		if !s.noFlag && FlagName(s.key) == name {
			return s, true
		}
	}
	return setting{}, false
}

// maxFileBytes bounds config and key files: both are small by nature.
const maxFileBytes = 1 << 20

func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(b) > maxFileBytes {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, maxFileBytes)
	}
	return b, nil
}

func readKeyFile(path string) (string, error) { return readSecretFile(path, "API key") }

// readSecretFile reads the first line of a file that holds one secret.
func readSecretFile(path, what string) (string, error) {
	if path == "" {
		return "", errors.New("empty path")
	}
	b, err := readBounded(path)
	if err != nil {
		return "", fmt.Errorf("reading %s file: %w", what, err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	key := strings.TrimSpace(line)
	if key == "" {
		return "", fmt.Errorf("%s file %s: first line is empty", what, path)
	}
	return key, nil
}

func applyFile(c *Config, path string) error {
	b, err := readBounded(path)
	if err != nil {
		return fmt.Errorf("config file: %w", err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return fmt.Errorf("config file %s: not YAML or JSON: %w", path, err)
	}
	keys := make([]string, 0, len(doc))
	for k := range doc {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s, ok := byKey(k)
		if !ok {
			return fmt.Errorf("config file %s: unknown field %q (known: %s)", path, k, knownKeys())
		}
		if s.noFile {
			return fmt.Errorf("config file %s: field %s is not accepted in a file (use %s_file or %s)", path, s.key, s.key, EnvName(s.key))
		}
		raw := doc[k]
		if list, ok := raw.([]any); ok && s.key == "agent_command" {
			// A command's words may hold commas: keep the list a list.
			js, err := json.Marshal(list)
			if err != nil {
				return fmt.Errorf("config file %s: field %s: %w", path, k, err)
			}
			raw = string(js)
		}
		v, err := scalar(raw)
		if err != nil {
			return fmt.Errorf("config file %s: field %s: %w", path, k, err)
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("config file %s: field %s: %w", path, k, err)
		}
	}
	return nil
}

func byKey(k string) (setting, bool) {
	for _, s := range settings {
		if s.key == k {
			return s, true
		}
	}
	return setting{}, false
}

func knownKeys() string {
	var ks []string
	for _, s := range settings {
		if !s.noFile {
			ks = append(ks, s.key)
		}
	}
	return strings.Join(ks, ", ")
}

func scalar(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case int, int64, float64, bool:
		return fmt.Sprint(x), nil
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			s, err := scalar(e)
			if err != nil {
				return "", err
			}
			parts[i] = s
		}
		return strings.Join(parts, ","), nil
	case nil:
		return "", nil
	default:
		return "", fmt.Errorf("want a string, number or list, got %T", v)
	}
}

func splitLines(v string) []string {
	var out []string
	for _, s := range strings.Split(v, "\n") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

var levelNames = map[string]bool{"core": true, "extended": true, "receipts": true, "replay": true}

// Validate checks the whole configuration.
func (c Config) Validate() error {
	if c.Target != "" {
		if err := checkTarget(c.Target); err != nil {
			return err
		}
	}
	if len(c.Levels) == 0 {
		return errors.New("levels: empty (want claimed, all, or a list of core,extended,receipts,replay)")
	}
	for _, l := range c.Levels {
		l = strings.ToLower(l)
		if (l == LevelsClaimed || l == LevelsAll) && len(c.Levels) > 1 {
			return fmt.Errorf("levels: %q cannot be combined with other levels", l)
		}
		if l != LevelsClaimed && l != LevelsAll && !levelNames[l] {
			return fmt.Errorf("levels: unknown level %q%s (want claimed, all, or a list of core,extended,receipts,replay)", l,
				suggest.Hint(l, []string{"core", "extended", "receipts", "replay", LevelsClaimed, LevelsAll}, "%q"))
		}
	}
	for _, l := range c.SkipLevels {
		if !levelNames[strings.ToLower(l)] {
			return fmt.Errorf("skip_levels: unknown level %q (want a list of core,extended,receipts,replay)", l)
		}
	}
	if err := c.validateAreas(); err != nil {
		return err
	}
	if c.Profile != "" {
		if len(c.SkipLevels) > 0 {
			return fmt.Errorf("skip_levels: a profile run (profile %s) checks the profile's requirements only; drop skip_levels", c.Profile)
		}
		if !(len(c.Levels) == 1 && strings.EqualFold(c.Levels[0], LevelsClaimed)) {
			return fmt.Errorf("levels: a profile run (profile %s) checks the profile's requirements only; drop levels", c.Profile)
		}
	}
	switch {
	case len(c.AgentCommand) > 0 && c.Profile == "":
		return errors.New("agent_command: an agent command (after --) needs a profile that starts one: --profile acp-harbor")
	case len(c.AgentCommand) > 0 && c.Profile != string(requirements.ACPHarbor):
		return fmt.Errorf("agent_command: profile %s takes no agent command (it checks --target)", c.Profile)
	}
	if c.ACPAuthMethod != "" && c.Profile != string(requirements.ACPHarbor) {
		return errors.New("acp_auth_method: an ACP authentication method needs --profile acp-harbor")
	}
	for _, a := range c.AgentCommand {
		if strings.ContainsRune(a, 0) {
			return errors.New("agent_command: contains a NUL byte")
		}
	}
	for _, f := range c.Focus {
		if _, err := regexp.Compile(f); err != nil {
			return fmt.Errorf("focus: %q is not a regular expression: %v", f, err)
		}
	}
	if c.LabelFilter != "" {
		if _, err := types.ParseLabelFilter(c.LabelFilter); err != nil {
			return fmt.Errorf("label_filter: %q is not a Ginkgo label filter: %v", c.LabelFilter, firstLine(err.Error()))
		}
	}
	if strings.TrimSpace(c.Out) == "" {
		return errors.New("out: empty report directory")
	}
	if c.ProtocolVersion == "" || strings.ContainsAny(c.ProtocolVersion, "\r\n") {
		return errors.New("protocol_version: empty or not a header value")
	}
	if strings.ContainsAny(c.APIKey, "\r\n") {
		return errors.New("api_key: contains a line break")
	}
	for _, k := range []struct{ key, v string }{{"second_api_key", c.SecondAPIKey}, {"read_only_api_key", c.ReadOnlyAPIKey}} {
		if strings.ContainsAny(k.v, "\r\n") {
			return fmt.Errorf("%s: contains a line break", k.key)
		}
		if k.v != "" && k.v == c.APIKey {
			return fmt.Errorf("%s: is the same key as api_key; give the key of another actor", k.key)
		}
	}
	if strings.ContainsRune(c.RestartCmd, 0) {
		return errors.New("restart_cmd: contains a NUL byte")
	}
	return c.OAuth.validate()
}

// validateAreas checks the areas and skip_areas lists against the
// registry (the Harn levels' areas and the profiles').
func (c Config) validateAreas() error {
	if len(c.Areas) == 0 && len(c.SkipAreas) == 0 {
		return nil
	}
	reg, err := requirements.Default()
	if err != nil {
		return err
	}
	known := reg.Areas("")
	for _, f := range []struct {
		key  string
		list []string
	}{{"areas", c.Areas}, {"skip_areas", c.SkipAreas}} {
		for _, a := range f.list {
			if !slices.Contains(known, a) {
				return fmt.Errorf("%s: unknown area %q: an area is a requirement-id prefix such as CORE-DUR or EXT-WS%s (`conform list --areas` lists them)", f.key, a, closeAreas(a, known))
			}
		}
	}
	for _, a := range c.Areas {
		if slices.Contains(c.SkipAreas, a) {
			return fmt.Errorf("areas: %s is also in skip_areas", a)
		}
	}
	return nil
}

// closeAreas is ", did you mean …?" for the known areas that share a
// level prefix or a name with a, or "".
func closeAreas(a string, known []string) string {
	level, name, _ := strings.Cut(a, "-")
	var close []string
	for _, k := range known {
		kl, kn, _ := strings.Cut(k, "-")
		if (name != "" && (strings.HasPrefix(kn, name) || strings.HasPrefix(name, kn))) || (name == "" && kl == level) {
			close = append(close, k)
		}
	}
	if len(close) == 0 || len(close) > 12 {
		return ""
	}
	return "; did you mean " + strings.Join(close, ", ") + "?"
}

func (o OAuth) validate() error {
	if o.TokenURL != "" {
		u, err := url.Parse(o.TokenURL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			return fmt.Errorf("oauth_token_url: %q is not an http:// or https:// URL", maskUserinfo(o.TokenURL))
		case u.User != nil:
			return errors.New("oauth_token_url: credentials in the URL are not allowed (they would end up in reports); use CONFORM_OAUTH_CLIENT_SECRET")
		}
	}
	for _, f := range []struct{ key, v string }{{"oauth_client_id", o.ClientID}, {"oauth_client_secret", o.Secret}, {"oauth_audience", o.Audience},
		{"oauth_expired_token", o.ExpiredToken}, {"oauth_wrong_audience_token", o.WrongAudienceToken}, {"oauth_wrong_issuer_token", o.WrongIssuerToken}} {
		if strings.ContainsAny(f.v, "\r\n") {
			return fmt.Errorf("%s: contains a line break", f.key)
		}
	}
	if o.Secret != "" && o.ClientID == "" {
		return errors.New("oauth_client_secret is set but oauth_client_id is not: give --oauth-client-id")
	}
	return nil
}

// checkTarget validates the target URL. Its errors say what is wrong in
// plain words (never Go's parser text) and, for the common slip of a bare
// HOST:PORT, suggest the URL that was probably meant.
func checkTarget(raw string) error {
	shown := maskUserinfo(raw)
	u, err := url.Parse(raw)
	if noScheme(raw, u, err) {
		if s, ok := suggestURL(raw); ok {
			return fmt.Errorf("target: %q has no scheme; did you mean %s?", shown, s)
		}
		return fmt.Errorf("target: %q has no scheme; want http://HOST[:PORT][/PATH] or https://…", shown)
	}
	if err != nil {
		return fmt.Errorf("target: %q is not a valid URL: %s", shown, urlProblem(err))
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("target: %q must be an http:// or https:// URL", shown)
	case u.User != nil:
		return errors.New("target: credentials in the URL are not allowed (they would end up in reports); use CONFORM_API_KEY")
	case u.Host == "":
		return fmt.Errorf("target: %q has no host; want %s://HOST[:PORT][/PATH]", shown, u.Scheme)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return fmt.Errorf("target: %q must not carry a query or fragment", shown)
	}
	return nil
}

// noScheme recognises a URL typed without its scheme: "host/path" parses
// with no scheme, "127.0.0.1:8080" fails on the colon, and
// "localhost:8080" parses with scheme "localhost" and a port for a body.
func noScheme(raw string, u *url.URL, err error) bool {
	if strings.Contains(raw, "://") {
		return false
	}
	if err != nil {
		return strings.Contains(err.Error(), "first path segment in URL cannot contain colon")
	}
	if u.Scheme == "" {
		return u.Path != ""
	}
	return u.Opaque != "" && u.Opaque[0] >= '0' && u.Opaque[0] <= '9'
}

// suggestURL is raw with a scheme: http:// for loopback, IP addresses and
// ports other than 443, https:// otherwise.
func suggestURL(raw string) (string, bool) {
	u, err := url.Parse("http://" + raw)
	if err != nil || u.Host == "" || u.User != nil {
		return "", false
	}
	host, port := u.Hostname(), u.Port()
	scheme := "https"
	if port != "" && port != "443" || host == "localhost" || net.ParseIP(host) != nil {
		scheme = "http"
	}
	return scheme + "://" + raw, true
}

// urlProblem says in plain words what the URL parser refused.
func urlProblem(err error) string {
	var esc url.EscapeError
	var host url.InvalidHostError
	msg := err.Error()
	switch {
	case errors.As(err, &esc):
		return "a % is not followed by two hexadecimal digits"
	case errors.As(err, &host):
		return fmt.Sprintf("the host contains %q, which a host name cannot", string(host))
	case strings.Contains(msg, "invalid port"):
		return "the port is not a number"
	case strings.Contains(msg, "missing ']'"):
		return "an IPv6 address in the host must be closed with ]"
	case strings.Contains(msg, "IP-literal"):
		return "the host in [ ] is not an IPv6 address"
	case strings.Contains(msg, "control character"):
		return "it contains a control character (a tab or a line break?)"
	case strings.Contains(msg, "missing protocol scheme"):
		return "it has no scheme; want http://HOST[:PORT][/PATH] or https://…"
	}
	return "want http://HOST[:PORT][/PATH] or https://…"
}

// maskUserinfo hides a user:password@ part, so that an error message never
// repeats a credential.
func maskUserinfo(raw string) string {
	rest, prefix := raw, ""
	if i := strings.Index(raw, "://"); i >= 0 {
		prefix, rest = raw[:i+3], raw[i+3:]
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if at := strings.LastIndex(rest[:end], "@"); at >= 0 {
		return prefix + "…@" + rest[at+1:]
	}
	return raw
}

// Secrets lists every value that must never reach an output.
func (c Config) Secrets() []string {
	var out []string
	if c.APIKey != "" {
		out = append(out, c.APIKey)
	}
	for _, s := range []string{c.SecondAPIKey, c.ReadOnlyAPIKey, c.OAuth.Secret, c.OAuth.ExpiredToken, c.OAuth.WrongAudienceToken, c.OAuth.WrongIssuerToken} {
		if s != "" {
			out = append(out, s)
		}
	}
	return append(out, c.Redact...)
}

// Redacted is the configuration as reports show it: secrets replaced by a
// marker that says only whether they were set.
func (c Config) Redacted() map[string]string {
	m := map[string]string{}
	for _, s := range settings {
		v := s.get(&c)
		if s.secret {
			if v != "" {
				v = "[REDACTED]"
			}
		}
		m[s.key] = v
	}
	return m
}

// Environ renders the configuration as CONFORM_* variables (secrets
// included: it is for a child process's environment, never for output), so
// that Load with these variables reproduces c.
func (c Config) Environ() []string {
	var out []string
	for _, s := range settings {
		if s.key == "api_key_file" || s.key == "redact_file" || strings.HasSuffix(s.key, "_api_key_file") || strings.HasPrefix(s.key, "oauth_") && strings.HasSuffix(s.key, "_file") {
			continue // the values themselves travel as CONFORM_API_KEY, CONFORM_REDACT, CONFORM_OAUTH_CLIENT_SECRET…
		}
		if v := s.get(&c); v != "" {
			out = append(out, EnvName(s.key)+"="+v)
		}
	}
	return out
}

// ParseCommand reads an agent command from a variable or a config file: a
// JSON array of strings (for words with spaces), or words separated by
// white space. Empty is no command.
func ParseCommand(v string) ([]string, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return nil, nil
	}
	if strings.HasPrefix(v, "[") {
		var out []string
		if err := json.Unmarshal([]byte(v), &out); err != nil {
			return nil, fmt.Errorf("not a JSON array of strings: %v", err)
		}
		if len(out) == 0 || out[0] == "" {
			return nil, errors.New("the command is empty")
		}
		return out, nil
	}
	return strings.Fields(v), nil
}

// FormatCommand is ParseCommand's inverse: words joined by spaces, or a
// JSON array when a word is empty or holds white space or starts with [.
func FormatCommand(cmd []string) string {
	plain := true
	for _, a := range cmd {
		if a == "" || strings.ContainsAny(a, " \t\r\n\v\f") || strings.HasPrefix(a, "[") {
			plain = false
		}
	}
	if plain {
		return strings.Join(cmd, " ")
	}
	b, _ := json.Marshal(cmd)
	return string(b)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
