package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// ErrorStatus maps each core error code to its HTTP status (narrative spec,
// "Error taxonomy").
var ErrorStatus = map[string]int{
	"invalid_request":              400,
	"invalid_state_transition":     400,
	"unauthenticated":              401,
	"permission_denied":            403,
	"resource_not_found":           404,
	"conflict":                     409,
	"idempotency_key_reused":       409,
	"cursor_expired":               410,
	"payload_too_large":            413,
	"policy_violation":             422,
	"resource_locked":              423,
	"unsupported_protocol_version": 426,
	"rate_limited":                 429,
	"client_closed_request":        499,
	"internal_error":               500,
	"upstream_unavailable":         502,
	"service_unavailable":          503,
	"deadline_exceeded":            504,
}

// ErrorTypes are the core error types.
var ErrorTypes = []string{"request_error", "auth_error", "permission_error", "not_found_error", "conflict_error",
	"rate_limit_error", "runtime_error", "upstream_error", "server_error"}

// APIError is a decoded error envelope.
type APIError struct {
	Code, Message, Type string
	Param               string
	HasParam            bool
	Details             map[string]any
}

// Envelope decodes and checks the shape of an error response: a JSON object
// with an "error" object whose code, message and type are strings, and
// whose optional fields have the right types.
func Envelope(resp *client.Response) (APIError, error) {
	m, err := resp.Object()
	if err != nil {
		return APIError{}, fmt.Errorf("error response is not an error envelope: %w", err)
	}
	e, ok := m["error"].(map[string]any)
	if !ok {
		return APIError{}, fmt.Errorf("%s: body has no \"error\" object%s", resp, bodyHint(resp))
	}
	var out APIError
	for _, f := range []struct {
		name string
		dst  *string
	}{{"code", &out.Code}, {"message", &out.Message}, {"type", &out.Type}} {
		s, ok := e[f.name].(string)
		if !ok {
			return out, fmt.Errorf("%s: error.%s is %s, want a string%s", resp, f.name, describe(e[f.name]), bodyHint(resp))
		}
		*f.dst = s
	}
	if out.Code == "" || out.Type == "" {
		return out, fmt.Errorf("%s: error.code and error.type must not be empty%s", resp, bodyHint(resp))
	}
	if p, ok := e["param"]; ok && p != nil {
		s, isStr := p.(string)
		if !isStr {
			return out, fmt.Errorf("%s: error.param is %s, want a string", resp, describe(p))
		}
		out.Param, out.HasParam = s, true
	}
	if d, ok := e["details"]; ok && d != nil {
		dm, isObj := d.(map[string]any)
		if !isObj {
			return out, fmt.Errorf("%s: error.details is %s, want an object", resp, describe(d))
		}
		out.Details = dm
	}
	return out, nil
}

// Error checks a whole error answer: the wanted status, an envelope, and a
// code among the wanted ones.
func Error(resp *client.Response, status int, codes ...string) (APIError, error) {
	if err := Status(resp, status); err != nil {
		return APIError{}, err
	}
	e, err := Envelope(resp)
	if err != nil {
		return e, err
	}
	if len(codes) > 0 && !slices.Contains(codes, e.Code) {
		return e, fmt.Errorf("%s: error.code = %q, want %s", resp, e.Code, orList(quoted(codes)))
	}
	return e, nil
}

// Consistent checks that an error's code and type agree with the spec's
// tables: a known code is sent with its status, and the type is a core
// type. Unknown codes are allowed (the taxonomy is extensible) as long as
// the type is known.
func Consistent(resp *client.Response, e APIError) error {
	if want, ok := ErrorStatus[e.Code]; ok && want != resp.Status {
		return fmt.Errorf("%s: error.code %q belongs with HTTP %d, got %d", resp, e.Code, want, resp.Status)
	}
	if !slices.Contains(ErrorTypes, e.Type) {
		return fmt.Errorf("%s: error.type = %q, want one of %v", resp, e.Type, ErrorTypes)
	}
	return nil
}

func quoted(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

func describe(v any) string {
	switch v.(type) {
	case nil:
		return "missing or null"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// ListsSupportedVersions checks that a 426 answer names the supported
// versions: this project looks in error.details.supported_versions first and
// accepts the current version string anywhere in the body otherwise
// (docs/interpretations.md#supported-versions).
func ListsSupportedVersions(resp *client.Response, e APIError, current string) error {
	if vs, ok := e.Details["supported_versions"].([]any); ok && len(vs) > 0 {
		for _, v := range vs {
			if _, ok := v.(string); !ok {
				return fmt.Errorf("%s: error.details.supported_versions holds %s, want strings", resp, describe(v))
			}
		}
		return nil
	}
	if current != "" && strings.Contains(string(resp.Body), current) {
		return nil
	}
	return fmt.Errorf("%s: the 426 answer does not list the supported versions (no error.details.supported_versions, and %q appears nowhere in the body)", resp, current)
}
