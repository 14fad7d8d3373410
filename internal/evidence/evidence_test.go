package evidence

import (
	"net/http"
	"slices"
	"testing"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/target"
)

// The hook names are the capabilities the targets advertise.
func TestHookNamesAreCapabilities(t *testing.T) {
	if HookScenarios != target.ScenariosCapability || HookOAuthTestTokens != target.OAuthTestTokensCapability {
		t.Errorf("hook names %q, %q differ from the capabilities %q, %q", HookScenarios, HookOAuthTestTokens, target.ScenariosCapability, target.OAuthTestTokensCapability)
	}
	for _, h := range Hooks {
		if len(h) < len("conform.") || h[:len("conform.")] != "conform." {
			t.Errorf("hook %q is not a conform.* capability", h)
		}
	}
}

func TestHooksIn(t *testing.T) {
	post := func(path, body string, status int) client.Traffic {
		return client.Traffic{Kind: "http", Method: http.MethodPost, Path: path, RequestBody: []byte(body), Status: status}
	}
	for _, tc := range []struct {
		name string
		t    client.Traffic
		want []string
	}{
		{"a scenario task", post("/v1/sessions/s_1/tasks", `{"input":{},"metadata":{"conform.scenario":{"steps":[]}}}`, 202), []string{HookScenarios}},
		{"a scenario task refused", post("/v1/tasks", `{"metadata":{"conform.scenario":{"steps":[]}}}`, 400), nil},
		{"a plain task", post("/v1/tasks", `{"input":{"parts":[{"text":"conform.scenario"}]}}`, 202), nil},
		{"the name in a text only", post("/v1/tasks", `{"input":{"parts":[{"text":"\"conform.scenario\""}]}}`, 202), nil},
		{"a vault with secrets", post("/v1/vaults", `{"provider":"p","secrets":{"k":"v"}}`, 201), []string{HookVaultSecrets}},
		{"a vault without", post("/v1/vaults", `{"provider":"p"}`, 201), nil},
		{"secrets elsewhere", post("/v1/personas", `{"secrets":{"k":"v"}}`, 201), nil},
		{"a quota", post("/v1/conform/quotas", `{"scope":"workspace"}`, 201), []string{HookQuotas}},
		{"a connector", post("/v1/conform/connectors", `{}`, 201), []string{HookConnectors}},
		{"a delivery", post("/v1/conform/connectors/c_1/deliveries", `{"delivery_id":"d"}`, 202), []string{HookConnectors}},
		{"a quota refused", post("/v1/conform/quotas", `{}`, 404), nil},
		{"a read", client.Traffic{Kind: "http", Method: http.MethodGet, Path: "/v1/quotas", Status: 200}, nil},
		{"a stream", client.Traffic{Kind: "sse", Method: http.MethodGet, Path: "/v1/conform/quotas", Status: 200}, nil},
		{"not JSON", post("/v1/tasks", `"conform.scenario" {`, 202), nil},
	} {
		if got := HooksIn(tc.t); !slices.Equal(got, tc.want) {
			t.Errorf("%s: HooksIn = %v, want %v", tc.name, got, tc.want)
		}
	}
}
