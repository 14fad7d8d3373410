// Package preflight runs before any spec and tells a user's mistake or an
// unready target from a verdict on the server. A wrong key, a wrong URL, a
// server that is not a Harness, a report directory that cannot be written,
// a target that is not up yet: each is a Problem — exit 2 with a hint that
// says what to change — never "not conformant". Whatever passes the
// preflight is judged by the suites, so a broken Harness still gets its
// failures: the preflight only stops a run that could not say anything true
// about the target.
package preflight

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
)

// Stages of the preflight, in order.
const (
	StageOut        = "out"        // the report directory
	StageReach      = "reach"      // the target answers at all
	StageDiscovery  = "discovery"  // it is a Harn server at the given URL
	StageCredential = "credential" // the API key is accepted
	// StageCommand is a profile's agent command (ACP): it exists and
	// starts (docs/profiles.md).
	StageCommand = "command"
)

// Problem is why a run stopped before its specs.
type Problem struct {
	Stage   string `json:"stage"`
	Message string `json:"message"`
	Hint    string `json:"hint,omitempty"`
}

func (p *Problem) Error() string {
	if p.Hint == "" {
		return p.Message
	}
	return p.Message + "\n  hint: " + p.Hint
}

// Out checks that the report directory can be created and written, before
// a run spends minutes on a target it could then not report on.
func Out(dir string) *Problem {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &Problem{Stage: StageOut, Message: fmt.Sprintf("report directory %s cannot be created: %v", dir, err),
			Hint: "give --out a directory you can write"}
	}
	f, err := os.CreateTemp(dir, ".conform-write-test-*")
	if err != nil {
		return &Problem{Stage: StageOut, Message: fmt.Sprintf("report directory %s is not writable: %v", dir, err),
			Hint: "give --out a directory you can write"}
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return nil
}

// pollEvery is the pause between discovery polls while waiting for a
// target to come up.
var pollEvery = 250 * time.Millisecond

// Reach reads discovery (GET /v1). With wait > 0 it polls until the target
// answers with anything but a gateway's "not ready" (502, 503, 504) or wait
// passes — for CI jobs that start the target in the background. The
// response is the last answer.
func Reach(ctx context.Context, c *client.Client, wait time.Duration) (*client.Response, *Problem) {
	// A target still starting refuses connections: those misses are the
	// wait's, not a target that stopped answering.
	c = c.Detached()
	deadline := time.Now().Add(wait)
	var last string
	for {
		resp, err := c.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1"})
		switch {
		case err == nil && httpToHTTPS(resp):
			return nil, schemeProblem(c, "http", "https", resp.String())
		case err == nil && !notReady(resp.Status):
			return resp, nil
		case err == nil:
			last = resp.String()
		default:
			last = err.Error()
			var te *client.TransportError
			if !errors.As(err, &te) {
				return nil, &Problem{Stage: StageReach, Message: last}
			}
			if httpsToHTTP(err) {
				return nil, schemeProblem(c, "https", "http", last) // a mistake that waiting does not heal
			}
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			break
		}
		t := time.NewTimer(min(pollEvery, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
		case <-t.C:
		}
	}
	p := &Problem{Stage: StageReach, Message: fmt.Sprintf("the target does not answer discovery (GET %s): %s", c.URL(client.Request{Path: "/v1"}), last)}
	if wait > 0 {
		p.Message = fmt.Sprintf("the target did not answer discovery within --wait-for-target %s (last try: %s)", wait, last)
		p.Hint = "is it started, on this address and port? Its logs may say why it is not up"
	} else {
		p.Hint = "is it started, on this address and port? If your CI starts it in the background, give --wait-for-target 60s"
	}
	return nil, p
}

// httpsToHTTP reports whether err is a TLS handshake answered in plain
// HTTP: an https:// target that is an HTTP server.
func httpsToHTTP(err error) bool {
	var rh tls.RecordHeaderError
	return errors.As(err, &rh) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client")
}

// httpToHTTPS reports whether resp is an HTTPS server's answer to plain
// HTTP (Go's servers answer 400 "Client sent an HTTP request to an HTTPS
// server.").
func httpToHTTPS(resp *client.Response) bool {
	return resp.Status == http.StatusBadRequest && strings.Contains(string(resp.Body), "HTTP request to an HTTPS server")
}

// schemeProblem is a target given with the wrong scheme: from what it is,
// to what the server speaks.
func schemeProblem(c *client.Client, from, to, detail string) *Problem {
	u, err := url.Parse(c.URL(client.Request{}))
	target := to + "://HOST:PORT"
	if err == nil {
		u.Scheme, u.Path, u.RawQuery = to, strings.TrimSuffix(u.Path, "/"), ""
		target = u.String()
	}
	what := map[string]string{"http": "plain HTTP (no TLS)", "https": "HTTPS (TLS)"}[to]
	return &Problem{Stage: StageReach,
		Message: fmt.Sprintf("the target speaks %s, but --target is %s:// (%s)", what, from, detail),
		Hint:    fmt.Sprintf("use %s://: give --target %s", to, target)}
}

func notReady(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// Discovery checks that the answer is a Harn discovery document, or at
// least an attempt at one (a Harness with a broken discovery is the suites'
// to judge). Otherwise it looks around for the likely mistake: a target
// URL that already ends in /v1, a wrong path prefix, a server that is not a
// Harness at all.
func Discovery(ctx context.Context, c *client.Client, resp *client.Response, target string) *Problem {
	if harnish(resp) {
		return nil
	}
	if resp.Status == http.StatusUnauthorized || resp.Status == http.StatusForbidden || resp.Status >= 500 {
		// Discovery must be public and must not fail; either is the
		// target's own defect, reported by the Core suite.
		return nil
	}
	at := c.URL(client.Request{Path: "/v1"})
	p := &Problem{Stage: StageDiscovery}
	if resp.Status == http.StatusOK {
		p.Message = fmt.Sprintf("this is not a Harn server: GET %s answered 200 %s, which is not a discovery document", at, describe(resp))
	} else {
		p.Message = fmt.Sprintf("no Harn discovery document at GET %s (%s)", at, resp)
	}
	u, err := url.Parse(target)
	if err != nil {
		return p
	}
	trimmed := strings.TrimRight(u.Path, "/")
	switch {
	case strings.HasSuffix(trimmed, "/v1"):
		alt := *u
		alt.Path = strings.TrimSuffix(trimmed, "/v1")
		p.Hint = fmt.Sprintf("conform adds /v1 itself: give --target %s", alt.String())
	case trimmed != "" && answersDiscovery(ctx, c, u.Scheme+"://"+u.Host):
		p.Hint = fmt.Sprintf("%s://%s/v1 answers a Harn discovery document: give --target %s://%s (or fix the path prefix %s)", u.Scheme, u.Host, u.Scheme, u.Host, trimmed)
	case trimmed != "":
		p.Hint = fmt.Sprintf("check the path prefix %s: conform sends every request to <target>/v1/…", trimmed)
	default:
		p.Hint = "is this the Harness's address and port? conform sends every request to <target>/v1/…"
	}
	return p
}

// harnish reports whether a discovery answer is, or tries to be, a Harn
// discovery document: a JSON object with one of its fields, or a body that
// names the protocol even if it is not valid JSON.
func harnish(resp *client.Response) bool {
	var m map[string]any
	if json.Unmarshal(resp.Body, &m) == nil && m != nil {
		for _, k := range []string{"protocol_family", "current_version", "supported_versions"} {
			if _, ok := m[k]; ok {
				return true
			}
		}
		if m["object"] == "protocol_discovery" {
			return true
		}
		return false
	}
	b := string(resp.Body)
	return resp.Status == http.StatusOK && (strings.Contains(b, "protocol_discovery") || strings.Contains(b, "harn_agents_protocol"))
}

// answersDiscovery asks base/v1 for a discovery document.
func answersDiscovery(ctx context.Context, c *client.Client, base string) bool {
	alt, err := client.New(withBase(c.Options(), base))
	if err != nil {
		return false
	}
	resp, err := alt.Do(ctx, client.Request{Method: http.MethodGet, Path: "/v1"})
	return err == nil && resp.Status == http.StatusOK && harnish(resp)
}

func withBase(o client.Options, base string) client.Options {
	o.BaseURL = base
	return o
}

func describe(resp *client.Response) string {
	ct := resp.Header.Get("Content-Type")
	if ct == "" {
		ct = "with no Content-Type"
	}
	return ct
}

// Credential makes one authorized read, so that a missing or refused key
// is named once, with the place it came from, instead of being guessed from
// dozens of 401s. A target that accepts any key passes here; the Core
// suite's auth checks judge it.
func Credential(ctx context.Context, c *client.Client, cfg config.Config) *Problem {
	if cfg.APIKey == "" {
		return &Problem{Stage: StageCredential, Message: "no API key configured",
			Hint: "set CONFORM_API_KEY (in CI, from your secret store: a pull request from a fork gets no secrets) or give --api-key-file FILE"}
	}
	resp, err := c.Do(ctx, client.Request{Path: "/v1/tasks", Query: url.Values{"limit": {"1"}}})
	if err != nil || (resp.Status != http.StatusUnauthorized && resp.Status != http.StatusForbidden) {
		return nil // not the preflight's business: the suites judge it
	}
	source := keySource(cfg)
	return &Problem{Stage: StageCredential,
		Message: fmt.Sprintf("the API key from %s was refused: %s", source, resp),
		Hint:    fmt.Sprintf("check that %s holds a key this target accepts (and for this environment)", source)}
}

func keySource(cfg config.Config) string {
	switch {
	case cfg.APIKeySource != "":
		return cfg.APIKeySource
	case cfg.APIKeyFile != "":
		return "api_key_file " + filepath.Clean(cfg.APIKeyFile) + " (config file)"
	}
	return config.EnvName("api_key")
}
