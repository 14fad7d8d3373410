package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// --ws-trusted-dev is the operator's explicit statement (EXT-WS-002): off
// unless given, from a flag, the environment or the file; not a secret;
// carried to a child process by Environ; anything but a boolean refused.
func TestWSTrustedDev(t *testing.T) {
	if c, err := Load(Sources{}); err != nil || c.WSTrustedDev {
		t.Fatalf("default: %v, %v; want off", c.WSTrustedDev, err)
	}
	file := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(file, []byte("ws_trusted_dev: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]Sources{
		"flag": {Flags: map[string]string{"ws-trusted-dev": "true"}},
		"env":  {Env: func(k string) string { return map[string]string{"CONFORM_WS_TRUSTED_DEV": "1"}[k] }},
		"file": {File: file},
	} {
		c, err := Load(src)
		if err != nil || !c.WSTrustedDev {
			t.Errorf("%s: %v, %v; want on", name, c.WSTrustedDev, err)
			continue
		}
		if got := c.Redacted()["ws_trusted_dev"]; got != "true" {
			t.Errorf("%s: Redacted() shows %q, want true", name, got)
		}
		if !slices.Contains(c.Environ(), "CONFORM_WS_TRUSTED_DEV=true") {
			t.Errorf("%s: Environ() = %v lacks CONFORM_WS_TRUSTED_DEV=true", name, c.Environ())
		}
	}
	if _, err := Load(Sources{Flags: map[string]string{"ws-trusted-dev": "yes please"}}); err == nil || !strings.Contains(err.Error(), "--ws-trusted-dev") {
		t.Errorf("a non-boolean value: %v, want an error naming the flag", err)
	}
	if c, _ := Load(Sources{Flags: map[string]string{"ws-trusted-dev": "false"}}); c.WSTrustedDev || slices.ContainsFunc(c.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CONFORM_WS_TRUSTED_DEV=") }) {
		t.Errorf("false: %v, Environ %v; want off and not exported", c.WSTrustedDev, c.Environ())
	}
}
