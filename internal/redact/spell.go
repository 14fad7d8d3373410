package redact

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
)

// A server that must not show a secret can still pass it on encoded: an API
// key base64-encoded into a receipt's metadata, a token hex-dumped into a
// debug note, a credential URL-encoded into a link. Find looks for a secret
// in every spelling such a server is likely to use, so that the checks
// that say "this answer holds no secret" (CORE-AUTH-004, EXT-AUTHZ-008,
// EXT-PRIV-002, EXT-VAULT-002/003, RCPT-REDACT-001/002/007) are not
// passed by a change of spelling.
//
// The spellings, searched in every text and in everything decoded from it,
// up to two layers deep (a base64 blob of a URL-encoded query, a hex dump
// of a base64 header):
//
//   - the secret as written, JSON-escaped, and URL-escaped (query and path);
//   - URL (percent) encoding: every %XX of the text decoded;
//   - base64 and base64url, padded or not, at any offset: every run of the
//     alphabet long enough to hold the secret is decoded from each of its
//     four starting positions, so a secret inside a larger encoded blob is
//     found whatever its alignment;
//   - hex, upper or lower case, from either starting position.
//
// A decoded run holds the secret only if the secret's bytes are there in
// full, so nothing shorter than the secret can match (the Redactor takes
// no secret shorter than minSecretLen).

// maxLayers is how many encodings deep Find decodes.
const maxLayers = 2

// Find reports whether text holds secret in any of the spellings above, and
// which: "" for the secret as written (or JSON- or URL-escaped), else the
// encodings from the outermost in, e.g. "base64" or "base64 of URL
// encoding". A secret shorter than minSecretLen is never found.
func Find(text, secret string) (spelling string, ok bool) {
	i, spelling, ok := FindAny(text, secret)
	return spelling, ok && i == 0
}

// FindAny is Find for several secrets at once (each text is decoded once):
// the index of the first secret found, and its spelling.
func FindAny(text string, secrets ...string) (index int, spelling string, ok bool) {
	var forms [][][]byte // per secret, its plain spellings
	minLen := 0
	for _, s := range secrets {
		if len(s) < minSecretLen {
			forms = append(forms, nil)
			continue
		}
		forms = append(forms, plainForms(s))
		if minLen == 0 || len(s) < minLen {
			minLen = len(s)
		}
	}
	if minLen == 0 {
		return -1, "", false
	}
	var layers []string
	var found func(b []byte, depth int) bool
	found = func(b []byte, depth int) bool {
		for i, fs := range forms {
			for _, f := range fs {
				if bytes.Contains(b, f) {
					index = i
					return true
				}
			}
		}
		if depth == maxLayers {
			return false
		}
		return decodings(b, minLen, func(name string, dec []byte) bool {
			layers = append(layers, name)
			if found(dec, depth+1) {
				return true
			}
			layers = layers[:len(layers)-1]
			return false
		})
	}
	if !found([]byte(text), 0) {
		return -1, "", false
	}
	return index, strings.Join(layers, " of "), true
}

// plainForms are a secret's spellings that need no decoding: as written,
// JSON-escaped, URL-escaped for a query and for a path.
func plainForms(s string) [][]byte {
	j, _ := json.Marshal(s)
	var out [][]byte
	for _, f := range []string{s, string(j[1 : len(j)-1]), url.QueryEscape(s), url.PathEscape(s)} {
		if !containsBytes(out, f) {
			out = append(out, []byte(f))
		}
	}
	return out
}

func containsBytes(list [][]byte, s string) bool {
	for _, b := range list {
		if string(b) == s {
			return true
		}
	}
	return false
}

// decodings calls visit with each decoding of b that could hold a secret of
// at least minLen bytes, until visit returns true (then it does too).
func decodings(b []byte, minLen int, visit func(name string, dec []byte) bool) bool {
	if bytes.IndexByte(b, '%') >= 0 {
		if dec, changed := percentDecode(b); changed && visit("URL encoding", dec) {
			return true
		}
	}
	// base64 holds 3 bytes in 4 characters: a run shorter than 4/3 of the
	// secret cannot hold it.
	for _, run := range runs(b, isBase64, (4*minLen+2)/3) {
		for off := 0; off < 4 && len(run)-off >= (4*minLen+2)/3; off++ {
			if dec := base64Decode(run[off:]); len(dec) >= minLen && visit("base64", dec) {
				return true
			}
		}
	}
	for _, run := range runs(b, isHex, 2*minLen) {
		for off := 0; off < 2; off++ {
			if dec := hexDecode(run[off:]); len(dec) >= minLen && visit("hex", dec) {
				return true
			}
		}
	}
	return false
}

// EncodedRuns returns the runs of base64 or hex characters in text whose
// decoding holds one of secrets, as [start, end) offsets into text, in
// order and not overlapping: what String replaces with the Marker.
func EncodedRuns(text string, secrets ...string) [][2]int {
	b := []byte(text)
	var out [][2]int
	for _, class := range []*charClass{isBase64, isHex} {
		for _, span := range spans(b, class, 2*minSecretLen) {
			run := b[span[0]:span[1]]
			if _, _, ok := FindAny(string(run), secrets...); !ok {
				continue
			}
			if overlaps(out, span) {
				continue
			}
			out = append(out, span)
		}
	}
	// sort by start (at most a handful)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j][0] < out[j-1][0]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func overlaps(list [][2]int, s [2]int) bool {
	for _, o := range list {
		if s[0] < o[1] && o[0] < s[1] {
			return true
		}
	}
	return false
}

// charClass is a set of bytes.
type charClass [256]bool

func classOf(chars string) *charClass {
	var c charClass
	for i := 0; i < len(chars); i++ {
		c[chars[i]] = true
	}
	return &c
}

var (
	isBase64 = classOf("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_")
	isHex    = classOf("0123456789abcdefABCDEF")
)

// runs are the maximal runs of class characters of at least min bytes.
func runs(b []byte, class *charClass, min int) [][]byte {
	var out [][]byte
	for _, s := range spans(b, class, min) {
		out = append(out, b[s[0]:s[1]])
	}
	return out
}

func spans(b []byte, class *charClass, min int) [][2]int {
	var out [][2]int
	start := -1
	for i := 0; i <= len(b); i++ {
		in := i < len(b) && class[b[i]]
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			if i-start >= min {
				out = append(out, [2]int{start, i})
			}
			start = -1
		}
	}
	return out
}

// base64Decode decodes a run of the base64 or base64url alphabet (no
// padding: a run stops at "="), as much of it as forms whole bytes.
func base64Decode(run []byte) []byte {
	s := make([]byte, len(run))
	for i, c := range run {
		switch c {
		case '-':
			c = '+'
		case '_':
			c = '/'
		}
		s[i] = c
	}
	if len(s)%4 == 1 {
		s = s[:len(s)-1] // one character holds no whole byte
	}
	dec := make([]byte, base64.RawStdEncoding.DecodedLen(len(s)))
	n, err := base64.RawStdEncoding.Decode(dec, s)
	if err != nil {
		return nil
	}
	return dec[:n]
}

func hexDecode(run []byte) []byte {
	run = run[:len(run)&^1]
	dec := make([]byte, hex.DecodedLen(len(run)))
	n, err := hex.Decode(dec, run)
	if err != nil {
		return nil
	}
	return dec[:n]
}

// percentDecode decodes every %XX of b, leaving any other "%" as it is.
func percentDecode(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	changed := false
	for i := 0; i < len(b); i++ {
		if b[i] == '%' && i+2 < len(b) && isHex[b[i+1]] && isHex[b[i+2]] {
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
