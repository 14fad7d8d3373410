package cardsig

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Object is a signature object as a card carries it (the OpenAPI's
// CardSignature). Empty members are left out when written, so a test can
// build the broken shapes too.
type Object struct {
	Algorithm string `json:"algorithm,omitempty"`
	KeyID     string `json:"key_id,omitempty"`
	Value     string `json:"value,omitempty"`
}

// Signer is one issuer key.
type Signer struct {
	KeyID string
	Key   ed25519.PrivateKey
}

// EncodeValue writes signature bytes the way this profile does: ValuePrefix
// and standard, padded base64.
func EncodeValue(sig []byte) string { return ValuePrefix + base64.StdEncoding.EncodeToString(sig) }

// Sign signs a card under the profile with one key: it computes the
// canonical bytes (Canonical) and sets the card's "signature" member to
// {algorithm: "ed25519", key_id, value}, replacing any signature members it
// had. The rest of the card's text is kept byte for byte (member order,
// spacing, number spellings): the signature covers the canonical form, so
// the text may be served as it is.
func Sign(card []byte, key ed25519.PrivateKey, keyID string) ([]byte, error) {
	return SignAll(card, Signer{KeyID: keyID, Key: key})
}

// SignAll is Sign with several keys (a rotation overlap, or co-signers):
// the first signature goes in "signature", the others in "signatures", all
// over the same canonical bytes.
func SignAll(card []byte, signers ...Signer) ([]byte, error) {
	if len(signers) == 0 {
		return nil, errors.New("cardsig: no signer")
	}
	canon, err := Canonical(card)
	if err != nil {
		return nil, fmt.Errorf("cardsig: %v", err)
	}
	objs := make([]Object, 0, len(signers))
	for _, s := range signers {
		if strings.TrimSpace(s.KeyID) == "" {
			return nil, errors.New("cardsig: signer has an empty key id")
		}
		if len(s.Key) != ed25519.PrivateKeySize {
			return nil, fmt.Errorf("cardsig: signer %q: private key is %d bytes, want %d", s.KeyID, len(s.Key), ed25519.PrivateKeySize)
		}
		objs = append(objs, Object{Algorithm: Ed25519, KeyID: s.KeyID, Value: EncodeValue(ed25519.Sign(s.Key, canon))})
	}
	return Attach(card, objs...)
}

// Attach sets a card's signature members to objs, whatever they say: the
// first in "signature", any others in "signatures". Existing signature
// members are cut out first; the rest of the text is kept byte for byte
// and the new members are written after the last member. With no objs it
// only removes them.
func Attach(card []byte, objs ...Object) ([]byte, error) {
	if _, err := parse(card); err != nil {
		return nil, fmt.Errorf("cardsig: %v", err)
	}
	base, err := cutMembers(card, MemberSignature, MemberSignatures)
	if err != nil {
		return nil, fmt.Errorf("cardsig: %v", err)
	}
	if len(objs) == 0 {
		return base, nil
	}
	first, err := jsonv.Marshal(objs[0])
	if err != nil {
		return nil, err
	}
	add := []member{{MemberSignature, first}}
	if len(objs) > 1 {
		rest, err := jsonv.Marshal(objs[1:])
		if err != nil {
			return nil, err
		}
		add = append(add, member{MemberSignatures, rest})
	}
	return splice(base, add)
}

type member struct {
	name  string
	value []byte
}

// span is one top-level member of an object's text: lead is what comes
// before its name (spaces, and the comma unless it is the first member),
// body its name, colon and value.
type span struct {
	name                  string
	leadFrom, from, until int
}

// layout finds the top-level members of a JSON object's text: the offset
// just after its "{", each member's span, and the offset just after the
// last member's value (or after "{" when it has none).
func layout(text []byte) (open int, spans []span, end int, err error) {
	dec := json.NewDecoder(bytes.NewReader(text))
	tok, err := dec.Token()
	if err != nil {
		return 0, nil, 0, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return 0, nil, 0, errors.New("not a JSON object")
	}
	open = int(dec.InputOffset())
	prev := open
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return 0, nil, 0, err
		}
		key, ok := kt.(string)
		if !ok {
			return 0, nil, 0, errors.New("object member without a name")
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return 0, nil, 0, err
		}
		until := int(dec.InputOffset())
		from := prev
		for from < len(text) && (text[from] == ' ' || text[from] == '\t' || text[from] == '\n' || text[from] == '\r' || text[from] == ',') {
			from++
		}
		spans = append(spans, span{name: key, leadFrom: prev, from: from, until: until})
		prev = until
	}
	return open, spans, prev, nil
}

// cutMembers returns the object's text without the named top-level
// members, everything else byte for byte: cutting the members that splice
// added gives back the text it was given.
func cutMembers(text []byte, names ...string) ([]byte, error) {
	open, spans, end, err := layout(text)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(text))
	out.Write(text[:open])
	wrote := false
	for _, s := range spans {
		if slices.Contains(names, s.name) {
			continue
		}
		lead := text[s.leadFrom:s.from]
		if !wrote {
			// The first member written takes no comma before it.
			if i := bytes.IndexByte(lead, ','); i >= 0 {
				lead = append(append([]byte{}, lead[:i]...), lead[i+1:]...)
			}
		}
		out.Write(lead)
		out.Write(text[s.from:s.until])
		wrote = true
	}
	out.Write(text[end:])
	return out.Bytes(), nil
}

// splice writes members after the last member of the object's text;
// cutMembers of their names gives the text back.
func splice(text []byte, add []member) ([]byte, error) {
	_, spans, end, err := layout(text)
	if err != nil {
		return nil, err
	}
	// New members are laid out like the last one (same line breaks and
	// indentation), or compact in an empty object.
	var ws []byte
	if n := len(spans); n > 0 {
		ws = bytes.ReplaceAll(text[spans[n-1].leadFrom:spans[n-1].from], []byte(","), nil)
	}
	var out bytes.Buffer
	out.Grow(len(text) + 256)
	out.Write(text[:end])
	for i, m := range add {
		if i > 0 || len(spans) > 0 {
			out.WriteByte(',')
			out.Write(ws)
		}
		name, _ := json.Marshal(m.name)
		out.Write(name)
		out.WriteByte(':')
		out.Write(m.value)
	}
	out.Write(text[end:])
	return out.Bytes(), nil
}
