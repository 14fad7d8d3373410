// Package redact scrubs secrets from everything the checker writes: reports,
// transcripts, console lines and error messages.
package redact

import (
	"encoding/json"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
)

// Marker replaces every secret.
const Marker = "[REDACTED]"

// sensitiveHeaders are replaced whatever their value, because their value is
// a credential by definition even when it is not one we were told about.
var sensitiveHeaders = []string{"Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key"}

// Redactor replaces known secret values (and their JSON- and URL-escaped
// spellings) with Marker. The zero value and nil redact headers only. It is
// safe for concurrent use; Add extends it while others read.
type Redactor struct {
	forms atomic.Pointer[[]string] // longest first, so a secret containing another is replaced whole
}

// minSecretLen keeps trivially short values (which would shred unrelated
// text) from being treated as secrets.
const minSecretLen = 4

// New returns a Redactor for the given secret values.
func New(secrets ...string) *Redactor {
	r := &Redactor{}
	r.Add(secrets...)
	return r
}

// Add makes further values secret: credentials a run obtains as it goes
// (OAuth2 access tokens). What was written before is not rewritten.
func (r *Redactor) Add(secrets ...string) {
	for {
		old := r.forms.Load()
		var forms []string
		seen := map[string]bool{}
		if old != nil {
			forms = append(forms, *old...)
			for _, f := range forms {
				seen[f] = true
			}
		}
		n := len(forms)
		for _, s := range secrets {
			if len(s) < minSecretLen {
				continue
			}
			j, _ := json.Marshal(s)
			for _, f := range []string{s, string(j[1 : len(j)-1]), url.QueryEscape(s), url.PathEscape(s)} {
				if !seen[f] {
					seen[f] = true
					forms = append(forms, f)
				}
			}
		}
		if len(forms) == n && old != nil {
			return
		}
		sort.SliceStable(forms, func(i, j int) bool { return len(forms[i]) > len(forms[j]) })
		if r.forms.CompareAndSwap(old, &forms) {
			return
		}
	}
}

func (r *Redactor) list() []string {
	if p := r.forms.Load(); p != nil {
		return *p
	}
	return nil
}

// String returns s with every secret replaced.
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, f := range r.list() {
		if strings.Contains(s, f) {
			s = strings.ReplaceAll(s, f, Marker)
		}
	}
	return s
}

// Bytes is String for byte slices.
func (r *Redactor) Bytes(b []byte) string { return r.String(string(b)) }

// Header returns a redacted copy of h: credential headers keep only their
// scheme ("Bearer [REDACTED]"), every other value is scrubbed of secrets.
func (r *Redactor) Header(h http.Header) http.Header {
	out := make(http.Header, len(h))
	for k, vs := range h {
		sensitive := false
		for _, s := range sensitiveHeaders {
			if http.CanonicalHeaderKey(k) == s {
				sensitive = true
			}
		}
		cp := make([]string, len(vs))
		for i, v := range vs {
			switch {
			case sensitive:
				if scheme, _, ok := strings.Cut(v, " "); ok && !strings.Contains(scheme, "=") {
					cp[i] = scheme + " " + Marker
				} else {
					cp[i] = Marker
				}
			default:
				cp[i] = r.String(v)
			}
		}
		out[k] = cp
	}
	return out
}

// Contains reports whether s holds any secret in any spelling; the canary
// tests and the "key never echoed" checks use it.
func (r *Redactor) Contains(s string) bool {
	if r == nil {
		return false
	}
	for _, f := range r.list() {
		if strings.Contains(s, f) {
			return true
		}
	}
	return false
}
