package client

import (
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/redact"
)

// KeyVariable is the shell variable a curl line reads the configured API key
// from.
const KeyVariable = "CONFORM_API_KEY"

// curl renders a shell command that reproduces a request exactly as it was
// sent: every header with the value sent, so a deliberately malformed
// Authorization ("Bearer" with no key, another scheme, a wrong key) stays
// as it was. Only secrets are left out: wherever the configured API key was
// sent it becomes "$CONFORM_API_KEY" (expanded by the shell, so the line
// still sends it), and any other configured secret becomes [REDACTED].
func curl(r *redact.Redactor, apiKey, method, u string, h http.Header, body []byte) string {
	var b strings.Builder
	b.WriteString("curl -sS -i")
	if method != http.MethodGet {
		b.WriteString(" -X " + shellWord(r, apiKey, method))
	}
	b.WriteString(" " + shellWord(r, apiKey, u))
	for _, k := range slices.Sorted(maps.Keys(h)) {
		for _, v := range h[k] {
			b.WriteString(" -H " + shellWord(r, apiKey, k+": "+v))
		}
	}
	if body != nil {
		b.WriteString(" --data-binary " + shellWord(r, apiKey, string(body)))
	}
	return b.String()
}

// shellWord quotes s as one shell word, each occurrence of the API key
// replaced by a double-quoted expansion of $CONFORM_API_KEY and every other
// secret redacted.
func shellWord(r *redact.Redactor, apiKey, s string) string {
	if apiKey == "" || !strings.Contains(s, apiKey) {
		return shellQuote(r.String(s))
	}
	var b strings.Builder
	for i, part := range strings.Split(s, apiKey) {
		if i > 0 {
			b.WriteString(`"$` + KeyVariable + `"`)
		}
		if part != "" {
			b.WriteString(shellQuote(r.String(part)))
		}
	}
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
