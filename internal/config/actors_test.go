package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The further actors' keys (EXT-AUTHZ): from the environment, a flag or a
// file; secrets everywhere; refused in a config file and when they repeat
// the first key; carried to a child process by Environ.
func TestActorKeys(t *testing.T) {
	dir := t.TempDir()
	ro := filepath.Join(dir, "ro")
	if err := os.WriteFile(ro, []byte("sk-read-only-from-file\nignored\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"CONFORM_API_KEY": "sk-first-key", "CONFORM_SECOND_API_KEY": "sk-second-from-env"}
	c, err := Load(Sources{Env: func(k string) string { return env[k] }, Flags: map[string]string{"read-only-api-key-file": ro}})
	if err != nil {
		t.Fatal(err)
	}
	if c.SecondAPIKey != "sk-second-from-env" || c.ReadOnlyAPIKey != "sk-read-only-from-file" || c.ReadOnlyAPIKeyFile != ro {
		t.Errorf("keys = %q, %q (file %q)", c.SecondAPIKey, c.ReadOnlyAPIKey, c.ReadOnlyAPIKeyFile)
	}
	for _, k := range []string{c.SecondAPIKey, c.ReadOnlyAPIKey} {
		if !slices.Contains(c.Secrets(), k) {
			t.Errorf("Secrets() lacks %q", k)
		}
	}
	red := c.Redacted()
	if red["second_api_key"] != "[REDACTED]" || red["read_only_api_key"] != "[REDACTED]" {
		t.Errorf("Redacted() = %q, %q", red["second_api_key"], red["read_only_api_key"])
	}
	back, err := Load(Sources{Env: func(k string) string {
		for _, kv := range c.Environ() {
			if name, v, _ := strings.Cut(kv, "="); name == k {
				return v
			}
		}
		return ""
	}})
	if err != nil || back.SecondAPIKey != c.SecondAPIKey || back.ReadOnlyAPIKey != c.ReadOnlyAPIKey {
		t.Errorf("Load(Environ()) = %q, %q, %v", back.SecondAPIKey, back.ReadOnlyAPIKey, err)
	}
	file := filepath.Join(dir, "conform.yaml")
	os.WriteFile(file, []byte("second_api_key: sk-in-a-file\n"), 0o600)
	if _, err := Load(Sources{File: file}); err == nil || !strings.Contains(err.Error(), "second_api_key_file") {
		t.Errorf("a key in the config file: %v, want a refusal pointing at second_api_key_file", err)
	}
	same := map[string]string{"CONFORM_API_KEY": "sk-same-key", "CONFORM_SECOND_API_KEY": "sk-same-key"}
	if _, err := Load(Sources{Env: func(k string) string { return same[k] }}); err == nil || !strings.Contains(err.Error(), "another actor") {
		t.Errorf("the second key repeating the first: %v, want an error", err)
	}
}
