package receipt

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// secretNames are member names (lower-cased, "-" read as "_") whose value is
// a credential whenever it is present and not redacted. Matching is on the
// whole name so counters such as "input_tokens" are never taken for tokens.
var secretNames = map[string]bool{
	"access_token":  true,
	"refresh_token": true,
	"id_token":      true,
	"bearer_token":  true,
	"session_token": true,
	"auth_token":    true,
	"client_secret": true,
	"private_key":   true,
	"secret_key":    true,
	"signing_key":   true,
	"api_key":       true,
	"apikey":        true,
	"password":      true,
	"passwd":        true,
	"secret":        true,
	"authorization": true,
	"cookie":        true,
	"set_cookie":    true,
}

// secretPatterns are shapes of credentials found inside any string,
// whatever member holds it.
var secretPatterns = []struct {
	what string
	re   *regexp.Regexp
}{
	{"a PEM private key block", regexp.MustCompile(`-----BEGIN ([A-Z0-9]+ )*PRIVATE KEY( BLOCK)?-----`)},
	{"a bearer credential", regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9\-._~+/]{16,}=*`)},
	{"a JSON Web Token", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"a GitHub token", regexp.MustCompile(`\bgh[pousr]_[A-Za-z0-9]{36,}\b`)},
	{"an AWS access key id", regexp.MustCompile(`\b(AKIA|ASIA)[0-9A-Z]{16}\b`)},
	{"a Slack token", regexp.MustCompile(`\bxox[abposr]-[0-9A-Za-z-]{10,}`)},
	{"an sk- API key", regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{20,}`)},
}

// redactedMarker matches string values that say "this was removed" rather
// than carrying the secret: [REDACTED], <redacted>, redacted:reason, ***,
// and similar.
var redactedMarker = regexp.MustCompile(`(?i)^\s*[\[<({]?\s*(redacted|removed|omitted|hidden|masked|withheld)\b[^\]>)}]*[\]>)}]?\s*$|^[*x•.\-_ ]*$`)

var proofHash = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// redacted reports whether a value under a secret name is harmless: null,
// a boolean flag, a redaction marker, or a proof hash standing in for it.
func redacted(v any) bool {
	switch x := v.(type) {
	case nil, bool:
		return true
	case string:
		return redactedMarker.MatchString(x) || proofHash.MatchString(x)
	}
	return false
}

// findSecrets walks the whole decoded receipt (signatures included) and
// returns one message per place that holds secret material. Messages name
// the JSON pointer and the rule, never the value.
func findSecrets(doc any) []string {
	var out []string
	var walk func(ptr string, v any)
	walk = func(ptr string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if isPrivateJWK(x) {
				out = append(out, fmt.Sprintf("%s: object is a private JSON Web Key (has \"kty\" and \"d\")", orRoot(ptr)))
			}
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				child := ptr + "/" + jsonv.Token(k)
				name := strings.ReplaceAll(strings.ToLower(k), "-", "_")
				if secretNames[name] && !redacted(x[k]) {
					if _, isObj := x[k].(map[string]any); !isObj {
						out = append(out, fmt.Sprintf("%s: member %q holds a non-redacted %s", child, k, describe(x[k])))
						continue
					}
				}
				walk(child, x[k])
			}
		case []any:
			for i, e := range x {
				walk(fmt.Sprintf("%s/%d", ptr, i), e)
			}
		case string:
			for _, p := range secretPatterns {
				if p.re.MatchString(x) {
					out = append(out, fmt.Sprintf("%s: string contains %s", orRoot(ptr), p.what))
				}
			}
		}
	}
	walk("", doc)
	return out
}

func isPrivateJWK(m map[string]any) bool {
	_, kty := m["kty"].(string)
	d, hasD := m["d"].(string)
	return kty && hasD && !redacted(d)
}

// describe says what kind of value was found without revealing it.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("value (string of %d bytes)", len(x))
	case json.Number:
		return "value (a number)"
	}
	return "value (" + jsonv.AKind(v) + ")"
}

func orRoot(ptr string) string {
	if ptr == "" {
		return "/"
	}
	return ptr
}
