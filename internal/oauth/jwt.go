package oauth

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// JWT access tokens (RFC 7519, profiled by RFC 9068). The suite never
// verifies a target's tokens (it holds no key of the target's); it reads
// their claims to build look-alikes the target must refuse, and to check
// that an operator's fixture token is what it claims to be.

var b64 = base64.RawURLEncoding

// Claims decodes the claims of a JWT-shaped token without verifying it. It
// reports false for an opaque token (anything that is not three base64url
// parts whose first two are JSON objects).
func Claims(token string) (map[string]any, bool) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, false
	}
	var hdr map[string]any
	if !decodePart(parts[0], &hdr) {
		return nil, false
	}
	var claims map[string]any
	if !decodePart(parts[1], &claims) {
		return nil, false
	}
	return claims, true
}

func decodePart(p string, v any) bool {
	b, err := b64.DecodeString(p)
	if err != nil {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return dec.Decode(v) == nil && v != nil
}

// Expiry reads the exp claim (seconds since the epoch).
func Expiry(claims map[string]any) (time.Time, bool) {
	n, ok := claims["exp"].(json.Number)
	if !ok {
		return time.Time{}, false
	}
	f, err := n.Float64()
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(int64(f), 0), true
}

// Audiences reads the aud claim, a string or an array of strings.
func Audiences(claims map[string]any) []string {
	switch a := claims["aud"].(type) {
	case string:
		return []string{a}
	case []any:
		var out []string
		for _, v := range a {
			if s, ok := v.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// Sign encodes claims as a JWT access token (typ at+jwt, RFC 9068) signed
// with EdDSA (RFC 8037) by key, naming kid.
func Sign(claims map[string]any, kid string, key ed25519.PrivateKey) (string, error) {
	hdr, err := json.Marshal(map[string]any{"alg": "EdDSA", "typ": "at+jwt", "kid": kid})
	if err != nil {
		return "", err
	}
	body, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	signed := b64.EncodeToString(hdr) + "." + b64.EncodeToString(body)
	return signed + "." + b64.EncodeToString(ed25519.Sign(key, []byte(signed))), nil
}

// ForeignIssuer is the issuer of the tokens Forge makes: a name no target
// can trust (.invalid is reserved by RFC 2606).
const ForeignIssuer = "https://untrusted-issuer.conform.invalid"

// Forge returns a well-formed access token from an issuer the target cannot
// trust: claims (copied from a real token when it is a JWT, so audience,
// subject and scope look right) with iss set to ForeignIssuer, a fresh
// expiry, signed by a key made for this call and thrown away.
func Forge(claims map[string]any, now time.Time) (string, error) {
	_, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return "", err
	}
	c := map[string]any{}
	for k, v := range claims {
		c[k] = v
	}
	c["iss"] = ForeignIssuer
	c["iat"] = now.Unix()
	c["exp"] = now.Add(10 * time.Minute).Unix()
	c["jti"] = "conform-forged-" + randomHex()
	return Sign(c, "conform-untrusted", key)
}

// Tamper returns a token the target never issued that differs from a real
// one as little as possible: for a JWT, one claim added to the payload
// with the header and signature kept (a server that skips the signature
// takes it); for an opaque token, its last character changed.
func Tamper(token string) (string, error) {
	parts := strings.Split(token, ".")
	if claims, ok := Claims(token); ok {
		claims["conform_tampered"] = true
		body, err := json.Marshal(claims)
		if err != nil {
			return "", err
		}
		return parts[0] + "." + b64.EncodeToString(body) + "." + parts[2], nil
	}
	if token == "" {
		return "", errors.New("oauth: empty token")
	}
	last := token[len(token)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return token[:len(token)-1] + string(repl), nil
}

func randomHex() string {
	var b [8]byte
	rand.Read(b[:])
	const hex = "0123456789abcdef"
	out := make([]byte, 16)
	for i, c := range b {
		out[2*i], out[2*i+1] = hex[c>>4], hex[c&15]
	}
	return string(out)
}
