package oauth

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"encoding/json"

	openapidoc "github.com/harn-conform/conform/fixtures/openapi"
)

// The scopes an operation needs, derived from the vendored OpenAPI document
// (docs/oauth.md#scopes). The document declares the scope vocabulary in its
// oauth2ClientCredentials security scheme (sessions:read, sessions:write,
// tasks:read, tasks:write, events:read, artifacts:read, artifacts:write,
// receipts:read) but attaches no scope to any operation: every operation
// inherits the document-wide `bearerAuth: []`. The narrative spec says token
// scopes SHOULD "map to resource actions". So an operation's scope is read
// off the document like this:
//
//   - the resource is the operation's first tag, in lower case (Tasks →
//     tasks), so POST /v1/sessions/{id}/tasks (tag Tasks) needs tasks:write,
//     not sessions:write;
//   - the action is read for GET and HEAD, write for every other method;
//   - the scope is resource:action when the scheme declares it. A resource
//     whose only declared scope is resource:read (events, receipts) needs
//     that scope for every operation: POST /v1/receipts/{id}/verify reads a
//     receipt and changes nothing;
//   - a resource the scheme declares no scope for (personas, workspaces,
//     messages, memories, …) gets resource:action by the same rule, marked
//     not Declared: the document does not say it, so a checker holds no
//     target to it, and the reference harness uses it as its own extension
//     of the vocabulary ("such as" in the spec).

// SchemeName is the OpenAPI security scheme that declares the scopes.
const SchemeName = "oauth2ClientCredentials"

// Operation is one non-public operation of the document with its scope.
type Operation struct {
	ID       string // operationId
	Method   string // upper case
	Template string // e.g. /v1/tasks/{task_id}
	Resource string // the first tag, lower case
	Scope    string // resource:action
	// Declared: the document's oauth2ClientCredentials scheme lists Scope.
	Declared bool
	segs     []string // template segments, "" for a parameter
}

type scopeDoc struct {
	ops      []Operation
	byID     map[string]Operation
	declared []string
	err      error
}

var (
	docOnce sync.Once
	doc     scopeDoc
)

var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

func load() *scopeDoc {
	docOnce.Do(func() { doc = parseScopes(openapidoc.JSON) })
	return &doc
}

func parseScopes(b []byte) scopeDoc {
	// Parsing the whole document into typed values would drag in every
	// schema; decode only what is needed.
	var root struct {
		Security   []map[string][]string                 `json:"security"`
		Paths      map[string]map[string]json.RawMessage `json:"paths"`
		Components struct {
			SecuritySchemes map[string]struct {
				Type  string `json:"type"`
				Flows map[string]struct {
					Scopes map[string]string `json:"scopes"`
				} `json:"flows"`
			} `json:"securitySchemes"`
		} `json:"components"`
	}
	if err := json.Unmarshal(b, &root); err != nil {
		return scopeDoc{err: fmt.Errorf("oauth: the vendored OpenAPI document does not parse: %w", err)}
	}
	declared := map[string]bool{}
	if sch, ok := root.Components.SecuritySchemes[SchemeName]; ok {
		for name := range sch.Flows["clientCredentials"].Scopes {
			declared[name] = true
		}
	}
	if len(declared) == 0 {
		return scopeDoc{err: fmt.Errorf("oauth: the vendored OpenAPI document declares no %s clientCredentials scopes", SchemeName)}
	}
	d := scopeDoc{byID: map[string]Operation{}}
	for name := range declared {
		d.declared = append(d.declared, name)
	}
	sort.Strings(d.declared)
	secured := len(root.Security) > 0
	for tmpl, item := range root.Paths {
		for _, m := range httpMethods {
			node, ok := item[m]
			if !ok {
				continue
			}
			var op struct {
				ID       string                 `json:"operationId"`
				Tags     []string               `json:"tags"`
				Security *[]map[string][]string `json:"security"`
			}
			if err := json.Unmarshal(node, &op); err != nil {
				return scopeDoc{err: fmt.Errorf("oauth: %s %s: %w", strings.ToUpper(m), tmpl, err)}
			}
			public := !secured
			if op.Security != nil {
				public = len(*op.Security) == 0
			}
			if public || op.ID == "" || len(op.Tags) == 0 {
				continue
			}
			o := Operation{ID: op.ID, Method: strings.ToUpper(m), Template: tmpl, Resource: strings.ToLower(op.Tags[0])}
			o.Scope, o.Declared = scopeFor(o.Resource, o.Method, declared)
			for _, s := range strings.Split(strings.Trim(tmpl, "/"), "/") {
				if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
					s = ""
				}
				o.segs = append(o.segs, s)
			}
			d.ops = append(d.ops, o)
			d.byID[o.ID] = o
		}
	}
	sort.Slice(d.ops, func(i, j int) bool {
		if d.ops[i].Template != d.ops[j].Template {
			return d.ops[i].Template < d.ops[j].Template
		}
		return d.ops[i].Method < d.ops[j].Method
	})
	return d
}

// scopeFor applies the rule of the package comment.
func scopeFor(resource, method string, declared map[string]bool) (string, bool) {
	action := "write"
	if method == "GET" || method == "HEAD" {
		action = "read"
	}
	s := resource + ":" + action
	switch {
	case declared[s]:
		return s, true
	case action == "write" && declared[resource+":read"]:
		// resource:write is not declared (else the case above): the
		// resource's one declared scope governs it.
		return resource + ":read", true
	}
	return s, false
}

// Operations lists every non-public operation of the vendored document with
// the scope it needs, sorted by template and method.
func Operations() ([]Operation, error) {
	d := load()
	return d.ops, d.err
}

// ScopeOf returns the operation with the given operationId.
func ScopeOf(id string) (Operation, bool) {
	d := load()
	o, ok := d.byID[id]
	return o, ok
}

// DeclaredScopes lists the scopes the document's oauth2ClientCredentials
// scheme declares, sorted.
func DeclaredScopes() ([]string, error) {
	d := load()
	return append([]string(nil), d.declared...), d.err
}

// Vocabulary lists every scope any operation needs (declared or derived),
// sorted: what a server following the document's rule issues.
func Vocabulary() ([]string, error) {
	d := load()
	seen := map[string]bool{}
	var out []string
	for _, s := range d.declared {
		seen[s] = true
		out = append(out, s)
	}
	for _, o := range d.ops {
		if !seen[o.Scope] {
			seen[o.Scope] = true
			out = append(out, o.Scope)
		}
	}
	sort.Strings(out)
	return out, d.err
}

// Match finds the operation a request addresses: method (HEAD counts as
// GET) and an unescaped path below the protocol root ("/v1/tasks/t_1"). A
// literal segment beats a parameter ("/v1/events/stream" is streamEvents,
// not getEvent).
func Match(method, path string) (Operation, bool) {
	d := load()
	method = strings.ToUpper(method)
	if method == "HEAD" {
		method = "GET"
	}
	segs := strings.Split(strings.Trim(path, "/"), "/")
	best, bestLit := Operation{}, -1
	for _, o := range d.ops {
		if o.Method != method || len(o.segs) != len(segs) {
			continue
		}
		lit, ok := 0, true
		for i, s := range o.segs {
			switch {
			case s == "" && segs[i] != "":
			case s == segs[i]:
				lit++
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if ok && lit > bestLit {
			best, bestLit = o, lit
		}
	}
	return best, bestLit >= 0
}

// ScopeSet is a set of scope names, parsed from the space-separated form
// of RFC 6749 §3.3.
type ScopeSet map[string]bool

// ParseScope splits a scope parameter or claim.
func ParseScope(s string) ScopeSet {
	set := ScopeSet{}
	for _, f := range strings.Fields(s) {
		set[f] = true
	}
	return set
}

// Has reports whether the set holds s.
func (s ScopeSet) Has(scope string) bool { return s[scope] }

// String is the space-separated, sorted form.
func (s ScopeSet) String() string { return strings.Join(s.Sorted(), " ") }

// Sorted lists the set's scopes in order.
func (s ScopeSet) Sorted() []string {
	out := make([]string, 0, len(s))
	for k := range s {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
