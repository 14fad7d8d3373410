package config

import (
	"os"
	"path/filepath"
	"reflect"
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
	if !reflect.DeepEqual(got, c) {
		t.Errorf("Load(Environ(c)) = %+v, want %+v", got, c)
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
