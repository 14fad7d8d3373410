package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/redact"
)

// Secret searches. Every check that says "this holds no secret" (an API
// key never in errors, events or receipts; a refusal that repeats no
// credential; a canary kept out of events, reads and receipts) looks for
// the secret in every spelling a server might pass it on in — as written,
// JSON- or URL-escaped, URL (percent) encoded, base64 or base64url at any
// alignment, hex — and in what those decode to (redact.Find). A change of
// spelling is no redaction.

// SecretSpelled says how text holds secret, in words for a finding:
// "" when it does not; "as written"; or the encodings, e.g. "base64-encoded"
// or "hex-encoded (of base64)".
func SecretSpelled(text, secret string) string {
	sp, ok := redact.Find(text, secret)
	if !ok {
		return ""
	}
	return SpellingWords(sp)
}

// SpellingWords says a spelling of redact.Find (or Redactor.Find) in words.
func SpellingWords(sp string) string {
	if sp == "" {
		return "as written"
	}
	outer, inner, nested := strings.Cut(sp, " of ")
	w := strings.TrimSuffix(outer, " encoding") + "-encoded"
	if nested {
		w += " (of " + inner + ")"
	}
	return w
}

// HoldsSecret reports whether text holds secret in any spelling; the
// predicate NoSecret takes.
func HoldsSecret(secret string) func(string) bool {
	return func(text string) bool { return SecretSpelled(text, secret) != "" }
}

// NoSecretIn checks that text, which where describes, holds none of
// secrets (by name: "the API key") in any spelling. It names the secret
// and its spelling, never the value. Secrets shorter than four characters
// are not looked for (they would match by chance).
func NoSecretIn(where, text string, secrets map[string]string) error {
	var found []string
	for _, name := range sortedKeys(secrets) {
		if sp := SecretSpelled(text, secrets[name]); sp != "" {
			found = append(found, fmt.Sprintf("%s (%s)", name, sp))
		}
	}
	if len(found) > 0 {
		return fmt.Errorf("%s carries %s", where, strings.Join(found, ", "))
	}
	return nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
