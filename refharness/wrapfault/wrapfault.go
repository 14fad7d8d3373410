// Package wrapfault holds the wire faults and variants of the reference
// Harness (package fault, Kind Wire): middlewares in front of an
// unmodified Harness that break, or legally vary, one behaviour from
// outside by rewriting one thing in requests or answers. Each is declared
// once, with its middleware, in the file of its area; `conform serve
// --fault NAME` (or --variant NAME) puts it in front of the Harness it
// serves, and the self-check's proof rows (cmd/conform) are derived from
// the declarations. A separate, non-race process serves them for the proof
// runs (package wrapserve): the runs then cost what the suite costs, not
// what the race detector costs.
package wrapfault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/refharness/fault"
)

// Env is what a wrapper may use besides the handler it wraps.
type Env struct {
	// APIKey is the key of actor_default, for setup requests.
	APIKey string
	// Used records that the wrapper changed an answer; a row that proves a
	// legal reading checks the suite met it (a reading it never met proves
	// nothing).
	Used func()
}

// Wrap puts a middleware in front of next (the harness, path prefix
// already stripped). It may set up state through next first.
type Wrap func(next http.Handler, env Env) (http.Handler, error)

var (
	faults   fault.Set[fault.Fault]
	variants fault.Set[fault.Variant]
	wraps    = map[string]Wrap{}
)

// wireFault declares a wire fault, made by w.
func wireFault(f fault.Fault, w Wrap) {
	f.Kind = fault.Wire
	add(faults.Add(f), w)
}

// wireVariant declares a wire variant, made by w.
func wireVariant(v fault.Variant, w Wrap) {
	v.Kind = fault.Wire
	add(variants.Add(v), w)
}

// add keeps w under name; a name used twice (a fault and a variant, or a
// Harness fault or variant) is a programming error.
func add(name string, w Wrap) {
	_, f := refharness.Fault(name).Decl()
	_, v := refharness.Variant(name).Decl()
	if _, dup := wraps[name]; dup || f || v {
		panic("wrapfault: " + name + " is declared twice")
	}
	wraps[name] = w
}

// Faults lists the wire faults' declarations, sorted by name.
func Faults() []fault.Fault { return faults.All() }

// Variants lists the wire variants' declarations, sorted by name.
func Variants() []fault.Variant { return variants.All() }

// Fault is the declaration of the wire fault named name.
func Fault(name string) (fault.Fault, bool) { return faults.Lookup(name) }

// Variant is the declaration of the wire variant named name.
func Variant(name string) (fault.Variant, bool) { return variants.Lookup(name) }

// Names lists every wrapper, faults and variants, sorted.
func Names() []string {
	var out []string
	for n := range wraps {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Apply wraps next in the named middleware.
func Apply(name string, next http.Handler, env Env) (http.Handler, error) {
	w, ok := wraps[name]
	if !ok {
		return nil, fmt.Errorf("wrapfault: no wrapper %q (have %v)", name, Names())
	}
	if env.Used == nil {
		env.Used = func() {}
	}
	return w(next, env)
}

// plain turns a middleware that needs no Env into a Wrap.
func plain(f func(http.Handler) http.Handler) Wrap {
	return func(next http.Handler, _ Env) (http.Handler, error) { return f(next), nil }
}

// rewriting applies f to every JSON answer (streams and artifact bytes
// pass through untouched).
func rewriting(f func(r *http.Request, v any)) Wrap {
	return plain(rewritingFunc(f))
}

func rewritingFunc(f func(r *http.Request, v any)) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/stream") || strings.HasSuffix(r.URL.Path, "/content") {
				next.ServeHTTP(w, r)
				return
			}
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			dec := json.NewDecoder(bytes.NewReader(body))
			dec.UseNumber()
			var v any
			if dec.Decode(&v) == nil {
				f(r, v)
				if b, err := json.Marshal(v); err == nil {
					body = b
				}
			}
			copyRecorded(w, rec, body)
		})
	}
}

// rewritingRaw rewrites the raw body of successful GETs whose path matches.
func rewritingRaw(paths *regexp.Regexp, f func([]byte) []byte) Wrap {
	return plain(func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			next.ServeHTTP(rec, r)
			body := rec.Body.Bytes()
			if r.Method == http.MethodGet && rec.Code == http.StatusOK && paths.MatchString(r.URL.Path) {
				body = f(body)
			}
			copyRecorded(w, rec, body)
		})
	})
}

// copyRecorded writes a recorded answer with another body.
func copyRecorded(w http.ResponseWriter, rec *httptest.ResponseRecorder, body []byte) {
	for k, vs := range rec.Header() {
		w.Header()[k] = vs
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(rec.Code)
	w.Write(body)
}

// eachObject calls f on every JSON object in v whose "object" is kind.
func eachObject(v any, kind string, f func(map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		for _, c := range x {
			eachObject(c, kind, f)
		}
		if x["object"] == kind {
			f(x)
		}
	case []any:
		for _, c := range x {
			eachObject(c, kind, f)
		}
	}
}

// discovery applies f to the capabilities of GET /v1.
func discovery(f func(caps map[string]any)) func(http.Handler) http.Handler {
	return rewritingFunc(func(r *http.Request, v any) {
		if m, ok := v.(map[string]any); ok && r.URL.Path == "/v1" {
			f(m["capabilities"].(map[string]any))
		}
	})
}

// setupRequest sends one request with the key straight to the harness.
func setupRequest(next http.Handler, env Env, method, path, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	// The path may come from a hostile request (an id with spaces or
	// percent signs): escape it, as httptest.NewRequest panics on a
	// request line it cannot parse.
	req := httptest.NewRequest(method, (&url.URL{Path: path}).EscapedPath(), strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.APIKey)
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	next.ServeHTTP(rec, req)
	return rec
}
