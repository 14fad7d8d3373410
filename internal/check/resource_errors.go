package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/harn-conform/conform/internal/client"
)

// typesFor lists, for each core error code, the error types a reasonable
// implementer could pair with it, read from the spec's descriptions of the
// types (docs/interpretations.md#error-type-fits-code). The spec gives no
// code-to-type table, so where two descriptions fit, both are accepted.
var typesFor = map[string][]string{
	"invalid_request":              {"request_error"},
	"invalid_state_transition":     {"request_error", "conflict_error"},
	"unauthenticated":              {"auth_error"},
	"permission_denied":            {"permission_error"},
	"resource_not_found":           {"not_found_error"},
	"conflict":                     {"conflict_error"},
	"idempotency_key_reused":       {"conflict_error", "request_error"},
	"cursor_expired":               {"request_error", "not_found_error", "conflict_error"},
	"payload_too_large":            {"request_error"},
	"policy_violation":             {"permission_error", "rate_limit_error", "request_error"},
	"resource_locked":              {"conflict_error"},
	"unsupported_protocol_version": {"request_error"},
	"rate_limited":                 {"rate_limit_error"},
	"client_closed_request":        {"request_error"},
	"internal_error":               {"server_error", "runtime_error"},
	"upstream_unavailable":         {"upstream_error"},
	"service_unavailable":          {"server_error", "upstream_error"},
	"deadline_exceeded":            {"server_error", "upstream_error", "runtime_error"},
}

// TypeFits checks that an error's type is one the spec's type descriptions
// allow for its code. Unknown codes are not judged here (Consistent checks
// that their type is a core type).
func TypeFits(resp *client.Response, e APIError) error {
	want, ok := typesFor[e.Code]
	if !ok || slices.Contains(want, e.Type) {
		return nil
	}
	return fmt.Errorf("%s: error.type = %q does not fit error.code %q, want %s", resp, e.Type, e.Code, orList(quoted(want)))
}

// ParamNames checks that a 400 names the offending request field in
// error.param. A param naming the field by any common spelling passes: the
// bare name, a dotted or bracketed path ending in it, or a JSON Pointer.
func ParamNames(resp *client.Response, e APIError, field string) error {
	if !e.HasParam || e.Param == "" {
		return fmt.Errorf("%s: error.param is missing, want it to name %q", resp, field)
	}
	p := strings.ToLower(e.Param)
	f := strings.ToLower(field)
	if p == f {
		return nil
	}
	for _, sep := range []string{".", "/", "[", "]"} {
		p = strings.ReplaceAll(p, sep, " ")
	}
	if slices.Contains(strings.Fields(p), f) {
		return nil
	}
	return fmt.Errorf("%s: error.param = %q, want it to name %q", resp, e.Param, field)
}

// NoSecret checks that no secret (as told by contains, e.g. the run's
// redactor) appears in a response's body or header values. It names where
// the secret was found, never the secret.
func NoSecret(resp *client.Response, contains func(string) bool) error {
	var where []string
	if contains(string(resp.Body)) {
		where = append(where, "the body")
	}
	names := make([]string, 0, len(resp.Header))
	for k := range resp.Header {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		for _, v := range resp.Header[k] {
			if contains(v) {
				where = append(where, "header "+k)
				break
			}
		}
	}
	if len(where) == 0 {
		return nil
	}
	return fmt.Errorf("%s: the API key appears in %s; keys must never be echoed", resp, strings.Join(where, " and "))
}
