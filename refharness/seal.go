package refharness

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/gowebpki/jcs"

	"github.com/harn-conform/conform/internal/receipt"
)

// Sealing a receipt the harness built itself. receipt.Seal takes arbitrary
// JSON text, so it validates it with a full RFC 8785 pass, decodes it,
// re-encodes and canonicalizes it again for the hash, then encodes it once
// more: three encodings and two canonicalizations of about 2.5 KB for every
// terminal task, most of a terminal transition's cost. Here the receipt is
// written straight from its Go values: once in RFC 8785 form (the hash
// input), once as receipt.Seal writes it (the sealed bytes). And since only
// chain.previous_receipt_hash depends on the receipts issued before, both
// are written once with a mark in its place (preseal), without the server's
// lock; under the lock, presealed.seal splices in the chain head, hashes and
// signs. The result is byte for byte receipt.Seal(json.Marshal(doc)) with
// the head in place (seal_test.go checks that); what these writers were not
// made for (invalid UTF-8, unknown types, a second signer...) goes through
// receipt.Seal as before.

// jsonMode selects what appendJSON writes.
type jsonMode int

const (
	// canonicalJSON is RFC 8785 as jcs writes it: the receipt hash input.
	canonicalJSON jsonMode = iota
	// goJSON is what encoding/json writes with SetEscapeHTML(false), as
	// receipt.Seal writes sealed receipts.
	goJSON
)

// canonicalAppend appends the RFC 8785 form of v to buf. ok is false when v
// holds a type, string or number this encoder does not handle; the caller
// then takes the general path (jcs over the encoded JSON).
func canonicalAppend(buf []byte, v any) ([]byte, bool) {
	return appendJSON(buf, v, canonicalJSON, 0)
}

// goAppend appends v as encoding/json encodes it with SetEscapeHTML(false),
// without reflection; ok is false as for canonicalAppend.
func goAppend(buf []byte, v any) ([]byte, bool) {
	return appendJSON(buf, v, goJSON, 0)
}

// maxJSONDepth bounds nesting on this path; deeper values (which jcs may
// refuse) take the general path.
const maxJSONDepth = 100

// appendJSON writes the values a receipt is made of: the JSON types as
// encoding/json decodes them (json.Number included), and the ints, *int64
// and float64 the harness puts in. The two modes differ only where RFC 8785
// and encoding/json differ: member order (UTF-16 code units, bytes), U+2028
// and U+2029 (as is, escaped), -0 (0, -0) and number literals (rewritten in
// ES6 form, kept as written).
func appendJSON(buf []byte, v any, mode jsonMode, depth int) (_ []byte, ok bool) {
	if depth > maxJSONDepth {
		return buf, false
	}
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), true
	case bool:
		return strconv.AppendBool(buf, x), true
	case string:
		return appendString(buf, x, mode)
	case int:
		return appendInt(buf, int64(x), mode)
	case int64:
		return appendInt(buf, x, mode)
	case *int64:
		if x == nil {
			return append(buf, "null"...), true
		}
		return appendInt(buf, *x, mode)
	case float64:
		return appendFloat(buf, x, mode)
	case json.Number:
		if mode == goJSON {
			b, err := json.Marshal(x) // its own rules for literals
			return append(buf, b...), err == nil
		}
		// As jcs reads a number literal: parsed as a double, written in ES6 form.
		f, err := strconv.ParseFloat(string(x), 64)
		if err != nil {
			return buf, false
		}
		return appendFloat(buf, f, mode)
	case []any:
		buf = append(buf, '[')
		for i, e := range x {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, ok = appendJSON(buf, e, mode, depth+1); !ok {
				return buf, false
			}
		}
		return append(buf, ']'), true
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		if mode == canonicalJSON {
			slices.SortFunc(keys, compareUTF16)
		} else {
			slices.Sort(keys)
		}
		buf = append(buf, '{')
		for i, k := range keys {
			if i > 0 {
				buf = append(buf, ',')
			}
			if buf, ok = appendString(buf, k, mode); !ok {
				return buf, false
			}
			buf = append(buf, ':')
			if buf, ok = appendJSON(buf, x[k], mode, depth+1); !ok {
				return buf, false
			}
		}
		return append(buf, '}'), true
	}
	return buf, false
}

// canonicalString writes s as RFC 8785 does.
func canonicalString(buf []byte, s string) ([]byte, bool) {
	return appendString(buf, s, canonicalJSON)
}

// appendString writes s as RFC 8785 (and jcs) do: the JSON short escapes,
// \u00xx for other controls, everything else as is; goJSON also escapes
// U+2028 and U+2029, as encoding/json does. Invalid UTF-8 is left to the
// general path.
func appendString(buf []byte, s string, mode jsonMode) ([]byte, bool) {
	if !utf8.ValidString(s) {
		return buf, false
	}
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if mode == goJSON && c == 0xe2 && i+2 < len(s) && s[i+1] == 0x80 && (s[i+2] == 0xa8 || s[i+2] == 0xa9) {
			buf = append(buf, s[start:i]...)
			buf = append(buf, '\\', 'u', '2', '0', '2', hex[s[i+2]&0xf])
			i += 2
			start = i + 1
			continue
		}
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[start:i]...)
		switch c {
		case '"', '\\':
			buf = append(buf, '\\', c)
		case '\b':
			buf = append(buf, '\\', 'b')
		case '\f':
			buf = append(buf, '\\', 'f')
		case '\n':
			buf = append(buf, '\\', 'n')
		case '\r':
			buf = append(buf, '\\', 'r')
		case '\t':
			buf = append(buf, '\\', 't')
		default:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	buf = append(buf, s[start:]...)
	return append(buf, '"'), true
}

func appendInt(buf []byte, n int64, mode jsonMode) ([]byte, bool) {
	if mode == canonicalJSON && (n > 1<<53 || n < -(1<<53)) {
		return appendFloat(buf, float64(n), mode) // what a double makes of it
	}
	return strconv.AppendInt(buf, n, 10), true
}

func appendFloat(buf []byte, f float64, mode jsonMode) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return buf, false
	}
	if mode == canonicalJSON {
		s, err := jcs.NumberToJSON(f)
		if err != nil {
			return buf, false
		}
		return append(buf, s...), true
	}
	// encoding/json's float64 encoder.
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	buf = strconv.AppendFloat(buf, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(buf); n >= 4 && buf[n-4] == 'e' && buf[n-3] == '-' && buf[n-2] == '0' {
			buf[n-2] = buf[n-1]
			buf = buf[:n-1]
		}
	}
	return buf, true
}

// compareUTF16 orders member names by their UTF-16 code units (RFC 8785
// §3.2.3). For names without supplementary-plane characters this is the
// byte order of their UTF-8.
func compareUTF16(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if a[i] >= utf8.RuneSelf || b[i] >= utf8.RuneSelf {
			return slices.Compare(utf16.Encode([]rune(a[i:])), utf16.Encode([]rune(b[i:])))
		}
		if a[i] != b[i] {
			return int(a[i]) - int(b[i])
		}
	}
	return len(a) - len(b)
}

// canonicalProof is jsonProof without the round trip through encoded JSON
// when v is made of the types canonicalAppend handles.
func canonicalProof(v any) string {
	if b, ok := canonicalAppend(nil, v); ok {
		return sha256Proof(b)
	}
	return jsonProof(v)
}

// sealDoc seals and signs doc, a receipt without chain.receipt_hash and
// signatures, and returns the sealed bytes and the receipt hash. doc's chain
// object is updated in place. Its result is byte for byte receipt.Seal of
// doc's JSON encoding.
func sealDoc(doc map[string]any, signers []receipt.Signer) ([]byte, string, error) {
	chain, _ := doc["chain"].(map[string]any)
	_, hasSigs := doc["signatures"]
	_, hasHash := chain["receipt_hash"]
	fast := chain != nil && !hasSigs && !hasHash
	for _, s := range signers {
		fast = fast && s.KeyID != "" && len(s.Key) == ed25519.PrivateKeySize &&
			(s.Profile == "" || s.Profile == receipt.ProfileHash || s.Profile == receipt.ProfileCanonical)
	}
	var in []byte
	if fast {
		in, fast = canonicalAppend(make([]byte, 0, 4096), doc)
	}
	if !fast {
		return sealGeneral(doc, signers)
	}
	h := sha256Proof(in)
	chain["receipt_hash"] = h
	if len(signers) > 0 {
		sigs := make([]any, 0, len(signers))
		for _, s := range signers {
			msg := receipt.SignedBytes(h)
			if s.Profile == receipt.ProfileCanonical {
				msg = in
			}
			sig := map[string]any{
				"key_id":    s.KeyID,
				"algorithm": receipt.Ed25519,
				"signature": receipt.SignatureEncodingPrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(s.Key, msg)),
			}
			if !s.SignedAt.IsZero() {
				sig["signed_at"] = s.SignedAt.UTC().Format(time.RFC3339)
			}
			sigs = append(sigs, sig)
		}
		doc["signatures"] = sigs
	}
	var out bytes.Buffer
	out.Grow(len(in) + 512)
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false) // as receipt.Seal writes its result
	if err := enc.Encode(doc); err != nil {
		return nil, "", err
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n")), h, nil
}

// sealGeneral is the general path: receipt.Seal over doc's JSON.
func sealGeneral(doc map[string]any, signers []receipt.Signer) ([]byte, string, error) {
	raw, err := json.Marshal(doc)
	if err != nil {
		return nil, "", err
	}
	sealed, err := receipt.Seal(raw, signers...)
	if err != nil {
		return nil, "", err
	}
	hash, err := sealedHash(sealed)
	if err != nil {
		return nil, "", err
	}
	return sealed, hash, nil
}

// The values of a receipt that depend on the chain head: prepareReceipt
// builds the document with prevMark in their place, preseal encodes it with
// marks for them, and presealed.seal fills them in.
const (
	prevMark = "\x00conform:previous_receipt_hash\x00"
	hashMark = "\x00conform:receipt_hash\x00"
	sigMark  = "\x00conform:signature\x00"
)

// presealed is a receipt sealed but for its link to the previous receipt:
// the canonical hash input and the sealed encoding, each cut where the
// head-dependent values go. Filling them in costs one SHA-256 and one
// signature, so it can be done under the lock that fixes the chain head
// while the canonicalization and encoding are done before, without it.
type presealed struct {
	canon  [2][]byte // hash input before and after the previous_receipt_hash value
	out    [][]byte  // sealed bytes around the marks; len(marks)+1 pieces
	marks  []string  // the mark between out[i] and out[i+1]
	signer *receipt.Signer
}

// preseal prepares doc, whose chain.previous_receipt_hash is prevMark, for
// presealed.seal. It returns nil when sealDoc must do the whole job (more
// than one signer, a profile it does not handle, a value canonicalAppend
// does not handle, or a mark that is not unique). doc is left as it was.
func preseal(doc map[string]any, signers []receipt.Signer) *presealed {
	chain, _ := doc["chain"].(map[string]any)
	if chain == nil || chain["previous_receipt_hash"] != prevMark || len(signers) > 1 {
		return nil
	}
	_, hasSigs := doc["signatures"]
	_, hasHash := chain["receipt_hash"]
	if hasSigs || hasHash {
		return nil
	}
	p := &presealed{}
	if len(signers) == 1 {
		s := signers[0]
		if s.KeyID == "" || len(s.Key) != ed25519.PrivateKeySize ||
			s.Profile != "" && s.Profile != receipt.ProfileHash && s.Profile != receipt.ProfileCanonical {
			return nil
		}
		p.signer = &s
	}
	canon, ok := canonicalAppend(make([]byte, 0, 4096), doc)
	if !ok {
		return nil
	}
	tok, _ := canonicalString(nil, prevMark)
	if bytes.Count(canon, tok) != 1 {
		return nil
	}
	i := bytes.Index(canon, tok)
	p.canon = [2][]byte{canon[:i], canon[i+len(tok):]}

	// The sealed encoding, as sealDoc writes it, with marks for the values.
	chain["receipt_hash"] = hashMark
	marks := []string{prevMark, hashMark}
	if p.signer != nil {
		sig := map[string]any{"key_id": p.signer.KeyID, "algorithm": receipt.Ed25519, "signature": sigMark}
		if !p.signer.SignedAt.IsZero() {
			sig["signed_at"] = p.signer.SignedAt.UTC().Format(time.RFC3339)
		}
		doc["signatures"] = []any{sig}
		marks = append(marks, sigMark)
	}
	b, ok := goAppend(make([]byte, 0, len(canon)+512), doc)
	delete(chain, "receipt_hash")
	delete(doc, "signatures")
	if !ok {
		return nil
	}
	type cut struct {
		at   int
		mark string
	}
	var cuts []cut
	for _, m := range marks {
		tok, _ := canonicalString(nil, m) // also how encoding/json writes it
		if bytes.Count(b, tok) != 1 {
			return nil
		}
		cuts = append(cuts, cut{bytes.Index(b, tok), m})
	}
	slices.SortFunc(cuts, func(x, y cut) int { return x.at - y.at })
	from := 0
	for _, c := range cuts {
		tok, _ := canonicalString(nil, c.mark)
		p.out = append(p.out, b[from:c.at])
		p.marks = append(p.marks, c.mark)
		from = c.at + len(tok)
	}
	p.out = append(p.out, b[from:])
	return p
}

// seal fills in prev (nil or a hash string) as the previous receipt's hash
// and returns the sealed receipt and its hash: sealDoc's result for the
// document with prev in place of prevMark. ok is false if prev is not a
// plain string; then nothing was done.
func (p *presealed) seal(prev any) (sealed, hash string, ok bool) {
	prevJSON := "null"
	if prev != nil {
		s, isStr := prev.(string)
		if !isStr || !plainString(s) {
			return "", "", false
		}
		prevJSON = `"` + s + `"`
	}
	in := make([]byte, 0, len(p.canon[0])+len(prevJSON)+len(p.canon[1]))
	in = append(append(append(in, p.canon[0]...), prevJSON...), p.canon[1]...)
	hash = sha256Proof(in)
	sig := ""
	if p.signer != nil {
		msg := receipt.SignedBytes(hash)
		if p.signer.Profile == receipt.ProfileCanonical {
			msg = in
		}
		sig = receipt.SignatureEncodingPrefix + base64.StdEncoding.EncodeToString(ed25519.Sign(p.signer.Key, msg))
	}
	n := len(prevJSON) + len(hash) + len(sig) + 4
	for _, b := range p.out {
		n += len(b)
	}
	var out strings.Builder // the stored receipt is a string: build it as one
	out.Grow(n)
	for i, b := range p.out {
		out.Write(b)
		if i == len(p.marks) {
			break
		}
		switch p.marks[i] {
		case prevMark:
			out.WriteString(prevJSON)
		case hashMark:
			out.WriteByte('"')
			out.WriteString(hash)
			out.WriteByte('"')
		case sigMark:
			out.WriteByte('"')
			out.WriteString(sig)
			out.WriteByte('"')
		}
	}
	return out.String(), hash, true
}

// plainString reports whether s is printable ASCII that JSON (canonical or
// encoding/json) writes as is between quotes.
func plainString(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
