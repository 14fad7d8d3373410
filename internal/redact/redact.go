// Package redact scrubs secrets from everything the checker writes: reports,
// transcripts, console lines and error messages.
package redact

import (
	"net/http"
	"slices"
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
// spellings, and runs of base64 or hex that decode to one: spell.go) with
// Marker. The zero value and nil redact headers only. It is safe for
// concurrent use; Add extends it while others read.
type Redactor struct {
	set atomic.Pointer[secretSet]
}

// secretSet is what a Redactor knows, replaced whole by Add.
type secretSet struct {
	forms   []string    // the spellings String replaces (all but the two-layer ones), longest first, so a secret containing another is replaced whole
	secrets []string    // the values as given
	spells  [][]spelled // per secret, its spellings (spell.go)
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
		old := r.set.Load()
		next := &secretSet{}
		seen := map[string]bool{}
		if old != nil {
			next.forms = append(next.forms, old.forms...)
			next.secrets = append(next.secrets, old.secrets...)
			for _, f := range next.forms {
				seen[f] = true
			}
		}
		next.spells = append(next.spells, old.spellsOrNil()...)
		n := len(next.secrets)
		for _, s := range secrets {
			if len(s) < minSecretLen || slices.Contains(next.secrets, s) {
				continue
			}
			sp := spellings(s)
			next.secrets = append(next.secrets, s)
			next.spells = append(next.spells, sp)
			for _, f := range sp {
				if strings.Contains(f.spelling, " of ") {
					continue // two layers deep: Find's, not the scrubbing's
				}
				if !seen[f.form] {
					seen[f.form] = true
					next.forms = append(next.forms, f.form)
				}
			}
		}
		if len(next.secrets) == n && old != nil {
			return
		}
		sort.SliceStable(next.forms, func(i, j int) bool { return len(next.forms[i]) > len(next.forms[j]) })
		if r.set.CompareAndSwap(old, next) {
			return
		}
	}
}

func (s *secretSet) spellsOrNil() [][]spelled {
	if s == nil {
		return nil
	}
	return s.spells
}

func (r *Redactor) load() *secretSet {
	if p := r.set.Load(); p != nil {
		return p
	}
	return &secretSet{}
}

// String returns s with every secret replaced, in every spelling Find
// knows but the %XX-decoding of text (an encoded secret's characters that
// are its own are replaced; the one or two a blob's neighbouring bytes
// share stay).
func (r *Redactor) String(s string) string {
	if r == nil {
		return s
	}
	for _, f := range r.load().forms {
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

// Contains reports whether s holds any secret in any spelling Find knows
// (encoded ones included); the canary tests and the "key never echoed"
// checks use it.
func (r *Redactor) Contains(s string) bool {
	_, ok := r.Find(s)
	return ok
}

// Find is Contains saying how the secret is spelled ("" as written, else
// the encodings, as Find names them). It never says which secret.
func (r *Redactor) Find(s string) (spelling string, ok bool) {
	if r == nil {
		return "", false
	}
	_, spelling, ok = findIn(s, r.load().spells)
	return spelling, ok
}
