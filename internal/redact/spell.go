package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"sync"
)

// A server that must not show a secret can still pass it on encoded: an API
// key base64-encoded into a receipt's metadata, a token hex-dumped into a
// debug note, a credential URL-encoded into a link. Find looks for a secret
// in every spelling such a server is likely to use, so that the checks
// that say "this answer holds no secret" (CORE-AUTH-004, EXT-AUTHZ-008,
// EXT-PRIV-002, EXT-VAULT-002/003, RCPT-REDACT-001/002/007) are not
// passed by a change of spelling.
//
// The spellings, found anywhere in a text:
//
//   - the secret as written, JSON-escaped, and URL-escaped (query and path);
//   - base64 and base64url, padded or not, inside a larger encoded blob at
//     any alignment: for each of the three offsets a secret can start at
//     within base64's 3-byte groups, the characters that encode its bytes
//     alone (not those shared with what comes before or after);
//   - hex, lower or upper case;
//   - URL (percent) encoding of every byte, and any %XX of the text decoded;
//   - two layers of these: base64 or hex of any of the above (a base64
//     blob of a URL-encoded query, a hex dump of a base64 header).
//
// The forms are computed once per secret, so a search is a handful of
// substring searches, fast enough for the redactor to run on everything
// the checker writes. Encoded forms are looked for only for secrets of
// minEncodedLen bytes or more: a shorter secret's base64 fragment is a few
// characters, which unrelated text holds by chance.

// minEncodedLen is the shortest secret whose encodings are looked for.
const minEncodedLen = 8

// spelled is one form of a secret and how it is spelled ("" as written).
type spelled struct {
	form     string
	spelling string
}

// spelledCache keeps each secret's forms (a run looks for a few dozen
// secrets, in thousands of texts); it is emptied when it grows past
// maxCached secrets.
var (
	spelledMu    sync.Mutex
	spelledCache = map[string][]spelled{}
)

const maxCached = 4096

// spellings are secret's forms, the plain ones first.
func spellings(secret string) []spelled {
	spelledMu.Lock()
	defer spelledMu.Unlock()
	if sp, ok := spelledCache[secret]; ok {
		return sp
	}
	if len(spelledCache) >= maxCached {
		clear(spelledCache)
	}
	sp := computeSpellings(secret)
	spelledCache[secret] = sp
	return sp
}

func computeSpellings(secret string) []spelled {
	var out []spelled
	seen := map[string]bool{}
	add := func(form, spelling string) {
		if form != "" && !seen[form] {
			seen[form] = true
			out = append(out, spelled{form, spelling})
		}
	}
	for _, f := range plainForms(secret) {
		add(f, "")
	}
	if len(secret) < minEncodedLen {
		return out
	}
	first := encodings(secret)
	for _, e := range first {
		add(e.form, e.spelling)
	}
	for _, inner := range first {
		for _, e := range encodings(inner.form) {
			if e.spelling == "URL encoding" {
				continue // an encoding's own characters need no escaping
			}
			add(e.form, e.spelling+" of "+inner.spelling)
		}
	}
	return out
}

// plainForms are a secret's spellings that need no decoding: as written,
// JSON-escaped, URL-escaped for a query and for a path.
func plainForms(s string) []string {
	j, _ := json.Marshal(s)
	out := []string{s}
	for _, f := range []string{string(j[1 : len(j)-1]), url.QueryEscape(s), url.PathEscape(s)} {
		if !contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// encodings are the one-layer encodings of s: its base64 and base64url
// fragments at the three alignments, its hex in both cases, and every
// byte percent-encoded in both cases.
func encodings(s string) []spelled {
	var out []spelled
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for _, f := range base64Fragments([]byte(s), enc) {
			out = append(out, spelled{f, "base64"})
		}
	}
	h := hex.EncodeToString([]byte(s))
	out = append(out, spelled{h, "hex"}, spelled{strings.ToUpper(h), "hex"})
	var lower, upper strings.Builder
	for i := 0; i < len(s); i++ {
		x := hex.EncodeToString([]byte{s[i]})
		lower.WriteString("%" + x)
		upper.WriteString("%" + strings.ToUpper(x))
	}
	return append(out, spelled{upper.String(), "URL encoding"}, spelled{lower.String(), "URL encoding"})
}

// base64Fragments are, for each offset a secret can start at within
// base64's 3-byte groups, the characters that encode its bytes alone:
// whatever a blob holds around the secret, its encoding holds one of them.
func base64Fragments(s []byte, enc *base64.Encoding) []string {
	var out []string
	for a := 0; a < 3; a++ {
		e := enc.EncodeToString(append(make([]byte, a), s...))
		start := (8*a + 5) / 6      // the first character after the padding's bits
		end := 8 * (a + len(s)) / 6 // the characters wholly within the secret's bits
		if end-start >= minEncodedLen {
			out = append(out, e[start:end])
		}
	}
	return out
}

// Find reports whether text holds secret in any of the spellings above, and
// which: "" for the secret as written (or JSON- or URL-escaped), else the
// encodings from the outermost in, e.g. "base64" or "base64 of URL
// encoding". A secret shorter than minSecretLen is never found.
func Find(text, secret string) (spelling string, ok bool) {
	_, spelling, ok = FindAny(text, secret)
	return spelling, ok
}

// FindAny is Find for several secrets at once: the index of the first
// secret found, and its spelling.
func FindAny(text string, secrets ...string) (index int, spelling string, ok bool) {
	sets := make([][]spelled, len(secrets))
	for i, s := range secrets {
		if len(s) >= minSecretLen {
			sets[i] = spellings(s)
		}
	}
	return findIn(text, sets)
}

// findIn searches text, and text with its %XX decoded, for the forms.
func findIn(text string, sets [][]spelled) (int, string, bool) {
	for i, set := range sets {
		for _, sp := range set {
			if strings.Contains(text, sp.form) {
				return i, sp.spelling, true
			}
		}
	}
	if strings.IndexByte(text, '%') < 0 {
		return -1, "", false
	}
	dec, changed := percentDecode([]byte(text))
	if !changed {
		return -1, "", false
	}
	for i, set := range sets {
		for _, sp := range set {
			if bytes.Contains(dec, []byte(sp.form)) {
				if sp.spelling == "" {
					return i, "URL encoding", true
				}
				return i, "URL encoding of " + sp.spelling, true
			}
		}
	}
	return -1, "", false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// percentDecode decodes every %XX of b, leaving any other "%" as it is.
func percentDecode(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	changed := false
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex(b[i+1]) && isHex(b[i+2]) {
			var v [1]byte
			hex.Decode(v[:], b[i+1:i+3])
			out = append(out, v[0])
			i += 2
			changed = true
			continue
		}
		out = append(out, b[i])
	}
	return out, changed
}
