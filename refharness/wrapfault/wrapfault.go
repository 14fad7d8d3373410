// Package wrapfault holds the middlewares the self-check (cmd/conform's
// fault rows) puts in front of an unmodified reference Harness: behaviour
// the Harness has no switch for, broken or legally varied from outside by
// rewriting one thing in requests or answers. They are named so that a
// separate, non-race process can serve them (package wrapserve): the proof
// runs then cost what the suite costs, not what the race detector costs.
//
// This is test support, not part of the conformance tool.
package wrapfault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"

	"github.com/harn-conform/conform/refharness"
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

var wraps = map[string]Wrap{}

// register adds wrappers; a name used twice is a programming error.
func register(ws map[string]Wrap) {
	for name, w := range ws {
		if _, dup := wraps[name]; dup {
			panic("wrapfault: " + name + " registered twice")
		}
		wraps[name] = w
	}
}

// Names lists every wrapper, sorted.
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
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+env.APIKey)
	req.Header.Set(refharness.VersionHeader, refharness.ProtocolVersion)
	next.ServeHTTP(rec, req)
	return rec
}
