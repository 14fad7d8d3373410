// Package openharness is conform's reading of OpenHarness v1.0.0-draft
// messages (spec 001, docs/openharness.md): a bounded decoder for request
// and response envelopes, their JSON Schemas (written from the document,
// fixtures/schemas/openharness-*.v1.schema.json) and the checks the
// openharness profile and `conform openharness validate` make, each a plain
// function that returns an error naming what was wrong and where.
package openharness

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/harn-conform/conform/internal/jsonv"
)

// Version is the wire format version conform speaks and the reference
// Engine answers with.
const Version = "1.0.0"

// MaxMessageBytes bounds one message the decoder, the validator and the
// reference Engine read: envelopes carry references, not bytes (§9.1), so
// a megabyte is far above any legitimate message.
const MaxMessageBytes = 1 << 20

// Kind is which envelope a message is.
type Kind string

const (
	Request  Kind = "request"
	Response Kind = "response"
)

// Decode parses one message: a single JSON object, numbers kept exact
// (json.Number), nothing but white space after it. Its errors say what the
// bytes are instead.
func Decode(b []byte) (map[string]any, error) {
	if len(b) > MaxMessageBytes {
		return nil, fmt.Errorf("message is %d bytes, above the %d-byte bound", len(b), MaxMessageBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty body: want a JSON object")
		}
		return nil, fmt.Errorf("not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not one JSON value: more data follows the first")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a JSON %s, want an object (an envelope)", jsonv.Kind(v))
	}
	return m, nil
}

// KindOf tells a request envelope (with a request member) from a response
// envelope (with a response member).
func KindOf(doc map[string]any) (Kind, error) {
	_, req := doc["request"]
	_, resp := doc["response"]
	switch {
	case req && !resp:
		return Request, nil
	case resp && !req:
		return Response, nil
	case req && resp:
		return "", errors.New("the object has both request and response members: say which envelope it is with --kind")
	}
	return "", errors.New("the object has neither a request nor a response member: not an OpenHarness envelope")
}

// semver is Semantic Versioning 2.0.0's own pattern.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// IsSemver reports whether s is a semantic version (1.0.0, 1.0.0-draft).
func IsSemver(s string) bool { return semver.MatchString(s) }

// Major is the major number of a semantic version, or "" if s is none.
func Major(s string) string {
	if !IsSemver(s) {
		return ""
	}
	m, _, _ := strings.Cut(s, ".")
	return m
}

// obj returns m[k] as an object, or nil.
func obj(m map[string]any, k string) map[string]any {
	o, _ := m[k].(map[string]any)
	return o
}

// str returns m[k] as a string and whether it is one.
func str(m map[string]any, k string) (string, bool) {
	s, ok := m[k].(string)
	return s, ok
}

// Status is response.status, or "" when there is none.
func Status(doc map[string]any) string {
	s, _ := str(obj(doc, "response"), "status")
	return s
}

// ErrorObject is response.error, or nil.
func ErrorObject(doc map[string]any) map[string]any { return obj(obj(doc, "response"), "error") }

// ErrorCode is response.error.code, or "".
func ErrorCode(doc map[string]any) string {
	s, _ := str(ErrorObject(doc), "code")
	return s
}

// quoteList renders names for a message, at most n of them.
func quoteList(names []string, n int) string {
	var q []string
	for i, s := range names {
		if i == n {
			q = append(q, fmt.Sprintf("and %d more", len(names)-n))
			break
		}
		q = append(q, fmt.Sprintf("%q", s))
	}
	return strings.Join(q, ", ")
}

func itoa(i int) string { return fmt.Sprint(i) }

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }
