package hook

import (
	"fmt"
	"sort"
	"unicode/utf8"
)

// The resource hooks (docs/scenarios.md, "Resource hooks"): set-ups no
// client can make through the protocol. Each is advertised on its own in
// discovery, capabilities[name] = Version (Advertise); their routes are not
// part of the protocol and live under /v1/conform/.
const (
	// VaultSecrets: POST /v1/vaults takes "secrets": {NAME: VALUE}, values
	// that are write-only (ParseSecrets); tasks use them through the
	// use_vault_secret step.
	VaultSecrets = "conform.vault_secrets"
	// Quotas: POST QuotasPath creates a Quota whose "tasks" limit gates
	// the tasks of its owner.
	Quotas = "conform.quotas"
	// Connectors: POST ConnectorsPath creates a Connector, and POST
	// ConnectorsPath/{id}/deliveries hands it a provider delivery
	// (DedupeKey).
	Connectors = "conform.connectors"
)

// The resource hooks' routes.
const (
	QuotasPath     = "/v1/conform/quotas"
	ConnectorsPath = "/v1/conform/connectors"
)

// Bounds of the conform.vault_secrets hook.
const (
	MaxSecrets     = 16
	MaxSecretName  = 128  // characters
	MaxSecretValue = 4096 // bytes
)

// ParseSecrets reads the "secrets" member of a vault create body (the
// decoded JSON value; nil when absent): NAME -> VALUE. Its errors name the
// field, never a value: the values must never be shown (EXT-VAULT-002).
func ParseSecrets(v any) (map[string]string, error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &Error{"secrets", "want an object {NAME: VALUE}"}
	}
	if len(m) > MaxSecrets {
		return nil, &Error{"secrets", fmt.Sprintf("%d secrets, want at most %d", len(m), MaxSecrets)}
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make(map[string]string, len(m))
	for _, n := range names {
		if n == "" || utf8.RuneCountInString(n) > MaxSecretName {
			return nil, &Error{"secrets", fmt.Sprintf("a secret name has %d characters, want 1..%d", utf8.RuneCountInString(n), MaxSecretName)}
		}
		val, isStr := m[n].(string)
		if !isStr || val == "" || len(val) > MaxSecretValue {
			return nil, &Error{"secrets." + n, fmt.Sprintf("want a string of 1..%d bytes (the value is not repeated here)", MaxSecretValue)}
		}
		out[n] = val
	}
	return out, nil
}

// DedupeKey is the dedupe key a connector derives from a provider delivery
// id: a redelivery of the same id is deduplicated, distinct ids never are.
func DedupeKey(connectorID, deliveryID string) string {
	return connectorID + "/" + deliveryID
}
