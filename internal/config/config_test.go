package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("target: http://file.example\nrequest_timeout: 3s\nlevels: [core, receipts]\nout: fromfile\n"), 0o600)
	c, err := Load(Sources{
		File:  file,
		Env:   env(map[string]string{"CONFORM_TARGET": "http://env.example/prefix", "CONFORM_OUT": "fromenv"}),
		Flags: map[string]string{"out": "fromflag"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.Target != "http://env.example/prefix" || c.Out != "fromflag" || c.Timeouts.Request != 3*time.Second ||
		!reflect.DeepEqual(c.Levels, []string{"core", "receipts"}) || c.Timeouts.Task != Defaults().Timeouts.Task {
		t.Errorf("Load = %+v: want target from env, out from flag, request timeout and levels from file, task timeout default", c)
	}
}

func TestLoadJSONFileAndKeyFile(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "key")
	os.WriteFile(key, []byte("  sk-canary-123  \nignored second line\n"), 0o600)
	file := filepath.Join(dir, "c.json")
	os.WriteFile(file, []byte(`{"target":"https://h.example","api_key_file":"`+key+`","seed":42}`), 0o600)
	c, err := Load(Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if c.APIKey != "sk-canary-123" || c.Seed != 42 {
		t.Errorf("APIKey=%q Seed=%d, want key from file and seed 42", c.APIKey, c.Seed)
	}
	if r := c.Redacted(); r["api_key"] != "[REDACTED]" || strings.Contains(strings.Join(values(r), " "), "canary") {
		t.Errorf("Redacted() = %v leaks or hides the key state", r)
	}
}

func values(m map[string]string) []string {
	var out []string
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

func TestLoadErrorsNameTheField(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("colour: red\n"), 0o600)
	withKey := filepath.Join(dir, "key.yaml")
	os.WriteFile(withKey, []byte("api_key: sk-nope\n"), 0o600)
	garbage := filepath.Join(dir, "g.yaml")
	os.WriteFile(garbage, []byte("{{{{"), 0o600)
	for _, tc := range []struct {
		src  Sources
		want string
	}{
		{Sources{Flags: map[string]string{"request-timeout": "fast"}}, "--request-timeout: \"fast\" is not a duration"},
		{Sources{Flags: map[string]string{"request-timeout": "1ms"}}, "out of range [100ms, 10m0s]"},
		{Sources{Env: env(map[string]string{"CONFORM_SEED": "-4"})}, "CONFORM_SEED"},
		{Sources{Flags: map[string]string{"target": "ftp://x"}}, "target: \"ftp://x\" must be an http"},
		{Sources{Flags: map[string]string{"target": "http://user:pw@x"}}, "credentials in the URL"},
		{Sources{Flags: map[string]string{"levels": "core,gold"}}, "unknown level \"gold\""},
		{Sources{Flags: map[string]string{"levels": "all,core"}}, "cannot be combined"},
		{Sources{Flags: map[string]string{"max-body-bytes": "12"}}, "[1024, 1073741824]"},
		{Sources{File: bad}, "unknown field \"colour\""},
		{Sources{Flags: map[string]string{"focus": "("}}, "focus: \"(\" is not a regular expression"},
		{Sources{Flags: map[string]string{"label-filter": "a &&"}}, "label_filter"},
		{Sources{File: withKey}, "api_key is not accepted in a file"},
		{Sources{File: garbage}, "not YAML or JSON"},
		{Sources{File: filepath.Join(dir, "missing.yaml")}, "config file"},
		{Sources{Flags: map[string]string{"api-key-file": filepath.Join(dir, "none")}}, "reading API key file"},
	} {
		_, err := Load(tc.src)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%+v) error = %v, want it to contain %q", tc.src, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "sk-nope") {
			t.Errorf("error %q leaks the key", err)
		}
	}
}

func TestEnvironRoundTrip(t *testing.T) {
	c := Defaults()
	c.Target = "http://127.0.0.1:9/base"
	c.APIKey = "k1"
	c.Levels = []string{"core", "replay"}
	c.Timeouts.Stream = 1500 * time.Millisecond
	c.Focus = []string{"SSE"}
	c.Seed = 7
	c.Redact = []string{"a", "b"}
	c.RestartCmd = "docker restart 'my harness'"
	c.Timeouts.Restart = 45 * time.Second
	m := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	got, err := Load(Sources{Env: env(m)})
	if err != nil {
		t.Fatal(err)
	}
	// The key now comes from the environment, and the hints say so.
	c.APIKeySource = "CONFORM_API_KEY"
	if !reflect.DeepEqual(got, c) {
		t.Errorf("Load(Environ(c)) = %+v, want %+v", got, c)
	}
}

// A refused key's hint names where the key came from: the last source
// that set it wins, as for the key itself.
func TestAPIKeySource(t *testing.T) {
	keyFile := filepath.Join(t.TempDir(), "key")
	os.WriteFile(keyFile, []byte("k-file\n"), 0o600)
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags map[string]string
		want  string
	}{
		{"env", map[string]string{"CONFORM_API_KEY": "k"}, nil, "CONFORM_API_KEY"},
		{"flag beats env", map[string]string{"CONFORM_API_KEY": "k"}, map[string]string{"api-key": "k2"}, "--api-key"},
		{"key file flag", map[string]string{"CONFORM_API_KEY": "k"}, map[string]string{"api-key-file": keyFile}, "--api-key-file " + keyFile},
		{"key file env", map[string]string{"CONFORM_API_KEY_FILE": keyFile}, nil, "CONFORM_API_KEY_FILE " + keyFile},
	} {
		c, err := Load(Sources{Env: env(tc.env), Flags: tc.flags})
		if err != nil {
			t.Fatal(err)
		}
		if c.APIKeySource != tc.want {
			t.Errorf("%s: source %q, want %q", tc.name, c.APIKeySource, tc.want)
		}
	}
}

func TestSettingsHaveFlagsAndEnv(t *testing.T) {
	for _, s := range Settings() {
		if s.Help == "" || !strings.HasPrefix(s.Env, "CONFORM_") || strings.Contains(s.Flag, "_") {
			t.Errorf("setting %+v is incomplete", s)
		}
	}
}

func TestRestartSettings(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("restart_cmd: docker restart harness-sk-canary-77\nrestart_timeout: 90s\n"), 0o600)
	c, err := Load(Sources{File: file})
	if err != nil {
		t.Fatal(err)
	}
	if c.RestartCmd != "docker restart harness-sk-canary-77" || c.Timeouts.Restart != 90*time.Second {
		t.Errorf("Load = %q, %s; want the command and 90s from the file", c.RestartCmd, c.Timeouts.Restart)
	}
	if r := c.Redacted(); r["restart_cmd"] != "[REDACTED]" || r["restart_timeout"] != "1m30s" {
		t.Errorf("Redacted() = %v, want the command hidden and the timeout shown", r)
	}
	c, err = Load(Sources{Env: env(map[string]string{"CONFORM_RESTART_CMD": "systemctl restart h"}), Flags: map[string]string{"restart-cmd": "./restart.sh"}})
	if err != nil || c.RestartCmd != "./restart.sh" || c.Timeouts.Restart != time.Minute {
		t.Errorf("Load = %q, %s, %v; want the flag's command and the 1m default", c.RestartCmd, c.Timeouts.Restart, err)
	}
	if d := Defaults().Redacted(); d["restart_cmd"] != "" {
		t.Errorf("unset restart_cmd shows as %q, want empty", d["restart_cmd"])
	}
	for _, bad := range []string{"0s", "2h", "soon"} {
		if _, err := Load(Sources{Flags: map[string]string{"restart-timeout": bad}}); err == nil || !strings.Contains(err.Error(), "--restart-timeout") {
			t.Errorf("--restart-timeout %s: error %v, want one naming the flag", bad, err)
		}
	}
}

func TestTargetErrors(t *testing.T) {
	for _, tc := range []struct{ target, want string }{
		{"127.0.0.1:8080", `target: "127.0.0.1:8080" has no scheme; did you mean http://127.0.0.1:8080?`},
		{"localhost:8080", `target: "localhost:8080" has no scheme; did you mean http://localhost:8080?`},
		{"localhost:8080/api", `did you mean http://localhost:8080/api?`},
		{"localhost", `did you mean http://localhost?`},
		{"harness.example.com/api", `did you mean https://harness.example.com/api?`},
		{"harness.example.com:9000", `did you mean http://harness.example.com:9000?`},
		{"[::1]:8080", `did you mean http://[::1]:8080?`},
		{"ftp://x", `target: "ftp://x" must be an http:// or https:// URL`},
		{"mailto:someone@example.com", "must be an http:// or https:// URL"},
		{"http://", `target: "http://" has no host`},
		{"http:localhost:8080", "has no host; want http://HOST"},
		{"http://host:port", "not a valid URL: the port is not a number"},
		{"http://[::1", "an IPv6 address in the host must be closed with ]"},
		{"http://a%zzb/", "a % is not followed by two hexadecimal digits"},
		{"http://exa mple.com/", "the host contains \" \""},
		{"http://h\x7f/", "control character"},
		{"http://user:pw@h", "credentials in the URL"},
		{"http://user:sk-secret@[::1", `"http://…@[::1" is not a valid URL`},
		{"http://h/?q=1", "must not carry a query or fragment"},
		{"http://h/#f", "must not carry a query or fragment"},
	} {
		_, err := Load(Sources{Flags: map[string]string{"target": tc.target}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("--target %q: error %v, want it to contain %q", tc.target, err, tc.want)
			continue
		}
		for _, raw := range []string{"first path segment", "parse ", "invalid URL escape", "missing protocol", "sk-secret"} {
			if strings.Contains(err.Error(), raw) {
				t.Errorf("--target %q: error %q carries %q", tc.target, err, raw)
			}
		}
	}
	for _, ok := range []string{"http://127.0.0.1:8080", "https://h.example/api/", "http://[::1]:9/x"} {
		if _, err := Load(Sources{Flags: map[string]string{"target": ok}}); err != nil {
			t.Errorf("--target %q: %v", ok, err)
		}
	}
}

func TestRedactFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "secrets")
	os.WriteFile(file, []byte("sk-one-1234\n\n  tok-two-5678  \n"), 0o600)
	c, err := Load(Sources{Env: env(map[string]string{"CONFORM_REDACT": "env-secret-9"}), Flags: map[string]string{"redact-file": file}})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(c.Redact, []string{"env-secret-9", "sk-one-1234", "tok-two-5678"}) {
		t.Errorf("Redact = %q, want the variable's value then the file's lines", c.Redact)
	}
	if s := c.Secrets(); !strings.Contains(strings.Join(s, " "), "tok-two-5678") {
		t.Errorf("Secrets() = %q lacks the file's values", s)
	}
	r := c.Redacted()
	if r["redact"] != "[REDACTED]" || r["redact_file"] != file || strings.Contains(strings.Join(values(r), " "), "sk-one") {
		t.Errorf("Redacted() = %v: want the values hidden and the file named", r)
	}
	if _, err := Load(Sources{Flags: map[string]string{"redact": "sk-visible"}}); err == nil || !strings.Contains(err.Error(), "--redact: unknown flag") {
		t.Errorf("--redact: error %v, want unknown flag (values on a command line are visible in process listings)", err)
	}
	if _, err := Load(Sources{Flags: map[string]string{"redact-file": filepath.Join(dir, "none")}}); err == nil || !strings.Contains(err.Error(), "--redact-file: reading redact file") {
		t.Errorf("--redact-file missing: error %v", err)
	}
	yaml := filepath.Join(dir, "c.yaml")
	os.WriteFile(yaml, []byte("redact_file: "+file+"\n"), 0o600)
	if c, err := Load(Sources{File: yaml}); err != nil || len(c.Redact) != 2 {
		t.Errorf("redact_file in a config file: %q, %v", c.Redact, err)
	}
}

func TestSettingKinds(t *testing.T) {
	kinds := map[string]bool{}
	for _, k := range Kinds {
		kinds[k] = true
	}
	want := map[string]string{"target": "url", "api_key_file": "file", "redact_file": "file", "out": "dir",
		"request_timeout": "duration", "max_duration": "duration", "seed": "int", "levels": "list", "restart_cmd": "command"}
	noFlag := 0
	for _, s := range Settings() {
		if !kinds[s.Kind] {
			t.Errorf("setting %s has kind %q, not one of %v", s.Key, s.Kind, Kinds)
		}
		if w, ok := want[s.Key]; ok && s.Kind != w {
			t.Errorf("setting %s has kind %q, want %q", s.Key, s.Kind, w)
		}
		if s.Flag == "" {
			noFlag++
			if !envOnlySecrets[s.Key] {
				t.Errorf("setting %s has no flag", s.Key)
			}
		}
	}
	if noFlag != len(envOnlySecrets) {
		t.Errorf("%d settings without a flag, want %d (%v)", noFlag, len(envOnlySecrets), envOnlySecrets)
	}
}

// envOnlySecrets are the settings with no flag: secret values, whose flag
// would show them in process listings, and the agent command, which the
// command line gives after -- rather than as a flag.
var envOnlySecrets = map[string]bool{"redact": true, "oauth_client_secret": true,
	"oauth_expired_token": true, "oauth_wrong_audience_token": true, "oauth_wrong_issuer_token": true, "agent_command": true}

func TestOAuthSettings(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	os.WriteFile(secretFile, []byte("cs-canary-file\n"), 0o600)
	expiredFile := filepath.Join(dir, "expired")
	os.WriteFile(expiredFile, []byte("eyJ.expired.canary\n"), 0o600)
	c, err := Load(Sources{
		Env: env(map[string]string{"CONFORM_OAUTH_CLIENT_SECRET": "cs-canary-env", "CONFORM_OAUTH_WRONG_ISSUER_TOKEN": "eyJ.issuer.canary",
			"CONFORM_OAUTH_SCOPE": "tasks:read, sessions:write events:read"}),
		Flags: map[string]string{"oauth-client-id": "client-1", "oauth-token-url": "https://auth.example/oauth/token",
			"oauth-expired-token-file": expiredFile, "oauth-audience": "https://api.example"},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := OAuth{TokenURL: "https://auth.example/oauth/token", ClientID: "client-1", Secret: "cs-canary-env",
		Scope: []string{"tasks:read", "sessions:write", "events:read"}, Audience: "https://api.example",
		ExpiredToken: "eyJ.expired.canary", ExpiredTokenFile: expiredFile, WrongIssuerToken: "eyJ.issuer.canary"}
	if !reflect.DeepEqual(c.OAuth, want) {
		t.Errorf("OAuth = %+v, want %+v", c.OAuth, want)
	}
	// Secrets are redacted everywhere and travel to child processes.
	for _, s := range []string{"cs-canary-env", "eyJ.expired.canary", "eyJ.issuer.canary"} {
		if !slices.Contains(c.Secrets(), s) {
			t.Errorf("Secrets() lacks %q", s)
		}
	}
	red := c.Redacted()
	for k, v := range red {
		if strings.Contains(v, "canary") {
			t.Errorf("Redacted()[%s] = %q shows a secret", k, v)
		}
	}
	if red["oauth_client_secret"] != "[REDACTED]" || red["oauth_client_id"] != "client-1" {
		t.Errorf("Redacted() = %v", red)
	}
	m := map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	got, err := Load(Sources{Env: env(m)})
	if err != nil {
		t.Fatal(err)
	}
	want.ExpiredTokenFile = "" // the value travels, not the path
	if !reflect.DeepEqual(got.OAuth, want) {
		t.Errorf("Load(Environ()) OAuth = %+v, want %+v", got.OAuth, want)
	}
	// The secret file flag.
	c, err = Load(Sources{Flags: map[string]string{"oauth-client-id": "c", "oauth-client-secret-file": secretFile}})
	if err != nil || c.OAuth.Secret != "cs-canary-file" {
		t.Errorf("--oauth-client-secret-file: %+v, %v", c.OAuth, err)
	}
	// Secrets are refused in a config file; everything else is accepted.
	file := filepath.Join(dir, "c.yaml")
	os.WriteFile(file, []byte("oauth_client_secret: cs-canary-yaml\n"), 0o600)
	if _, err := Load(Sources{File: file}); err == nil || !strings.Contains(err.Error(), "oauth_client_secret_file or CONFORM_OAUTH_CLIENT_SECRET") || strings.Contains(err.Error(), "canary") {
		t.Errorf("a secret in the config file: %v", err)
	}
	os.WriteFile(file, []byte("oauth_client_id: c\noauth_client_secret_file: "+secretFile+"\noauth_scope: [tasks:read, tasks:write]\n"), 0o600)
	if c, err := Load(Sources{File: file}); err != nil || c.OAuth.Secret != "cs-canary-file" || len(c.OAuth.Scope) != 2 {
		t.Errorf("config file: %+v, %v", c.OAuth, err)
	}
	for _, bad := range []map[string]string{
		{"oauth-token-url": "ftp://x/token"},
		{"oauth-token-url": "https://u:p@auth.example/token"},
	} {
		if _, err := Load(Sources{Flags: bad}); err == nil || strings.Contains(err.Error(), ":p@") {
			t.Errorf("Load(%v) = %v, want a clean error", bad, err)
		}
	}
	if _, err := Load(Sources{Env: env(map[string]string{"CONFORM_OAUTH_CLIENT_SECRET": "s"})}); err == nil {
		t.Error("a client secret without a client id is accepted")
	}
}

// Profiles (docs/profiles.md): --profile and the agent command.
func TestProfileSettings(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := Load(Sources{Env: env(map[string]string{"CONFORM_PROFILE": "OpenHarness", "CONFORM_TARGET": "http://h/oh"})})
	if err != nil || c.Profile != "openharness" {
		t.Fatalf("CONFORM_PROFILE: %q, %v", c.Profile, err)
	}
	if _, err := Load(Sources{Flags: map[string]string{"profile": "gold"}}); err == nil || !strings.Contains(err.Error(), "unknown profile") {
		t.Errorf("--profile gold: %v, want unknown profile", err)
	}
	if _, err := Load(Sources{Flags: map[string]string{"profile": "openharness", "levels": "core"}}); err == nil || !strings.Contains(err.Error(), "drop levels") {
		t.Errorf("--profile with --levels: %v, want a refusal", err)
	}
	c, err = Load(Sources{Flags: map[string]string{"profile": "acp-harbor"}, Env: env(map[string]string{"CONFORM_AGENT_COMMAND": "from-env x"}),
		AgentCommand: []string{"./agent", "--flag", "two words"}})
	if err != nil || !reflect.DeepEqual(c.AgentCommand, []string{"./agent", "--flag", "two words"}) {
		t.Fatalf("the command line's agent command: %q, %v", c.AgentCommand, err)
	}
	if c.Redacted()["agent_command"] != "[REDACTED]" {
		t.Errorf("reports show the agent command: %q", c.Redacted()["agent_command"])
	}
	// Environ round-trips it, words with spaces included.
	var vars = map[string]string{}
	for _, kv := range c.Environ() {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	c2, err := Load(Sources{Env: env(vars)})
	if err != nil || !reflect.DeepEqual(c2.AgentCommand, c.AgentCommand) {
		t.Errorf("Environ round trip: %q, %v", c2.AgentCommand, err)
	}
	if _, err := Load(Sources{AgentCommand: []string{"./agent"}}); err == nil || !strings.Contains(err.Error(), "--profile acp-harbor") {
		t.Errorf("an agent command without a profile: %v", err)
	}
	if _, err := Load(Sources{Flags: map[string]string{"profile": "openharness"}, AgentCommand: []string{"./agent"}}); err == nil {
		t.Error("openharness took an agent command")
	}
	for in, want := range map[string][]string{`a b  c`: {"a", "b", "c"}, `["a b","c"]`: {"a b", "c"}, ``: nil} {
		if got, err := ParseCommand(in); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("ParseCommand(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{`["a"`, `[]`, `[""]`, `[1]`} {
		if _, err := ParseCommand(bad); err == nil {
			t.Errorf("ParseCommand(%q) succeeded", bad)
		}
	}
	// A YAML list in a config file keeps words with commas whole.
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("profile: acp-harbor\nagent_command: [\"./agent\", \"--x=a,b\"]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(Sources{File: path})
	if err != nil || !reflect.DeepEqual(c.AgentCommand, []string{"./agent", "--x=a,b"}) {
		t.Errorf("file agent_command: %q, %v", c.AgentCommand, err)
	}
}

// The gate's settings: what fails it, and the levels and areas opted in
// and out, checked against the registry.
func TestGateSettings(t *testing.T) {
	load := func(flags map[string]string) (Config, error) {
		return Load(Sources{Env: func(string) string { return "" }, Flags: flags})
	}
	c, err := load(nil)
	if err != nil || c.FailOn != FailOnUnverified {
		t.Fatalf("default fail_on = %q (%v), want %q", c.FailOn, err, FailOnUnverified)
	}
	c, err = load(map[string]string{"fail-on": "Failures", "skip-levels": "replay", "areas": "core-dur, ext-ws", "skip-areas": "CORE-AUTH"})
	if err != nil {
		t.Fatal(err)
	}
	if c.FailOn != FailOnFailures || strings.Join(c.SkipLevels, ",") != "replay" || strings.Join(c.Areas, ",") != "CORE-DUR,EXT-WS" || strings.Join(c.SkipAreas, ",") != "CORE-AUTH" {
		t.Errorf("got fail_on %q, skip_levels %v, areas %v, skip_areas %v", c.FailOn, c.SkipLevels, c.Areas, c.SkipAreas)
	}
	if m := c.Redacted(); m["fail_on"] != "failures" || m["areas"] != "CORE-DUR,EXT-WS" {
		t.Errorf("report config = %v", m)
	}
	for flags, want := range map[string]map[string]string{
		`"always" is not unverified or failures`:          {"fail-on": "always"},
		`skip_levels: unknown level "gold"`:               {"skip-levels": "gold"},
		`unknown area "CORE-DURABILITY"`:                  {"areas": "core-durability"},
		`did you mean CORE-DUR?`:                          {"skip-areas": "CORE-DURABILITY"},
		`areas: CORE-DUR is also in skip_areas`:           {"areas": "CORE-DUR", "skip-areas": "core-dur"},
		`unknown area "CORE-DUR-001"`:                     {"areas": "CORE-DUR-001"},
		`skip_levels: a profile run (profile openharness`: {"profile": "openharness", "skip-levels": "core"},
	} {
		if _, err := load(want); err == nil || !strings.Contains(err.Error(), flags) {
			t.Errorf("%v: error %v, want one containing %q", want, err, flags)
		}
	}
}
