package preflight

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/config"
)

const discoveryDoc = `{"object":"protocol_discovery","protocol_family":"harn_agents_protocol","current_version":"agents-protocol-2026-04-25","supported_versions":["agents-protocol-2026-04-25"],"capabilities":{"rest":true}}`

func newClient(t *testing.T, base string) *client.Client {
	t.Helper()
	c, err := client.New(client.Options{BaseURL: base, APIKey: "k", ProtocolVersion: config.ProtocolVersion, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func serve(t *testing.T, h http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

func discovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, discoveryDoc)
}

func TestOut(t *testing.T) {
	if p := Out(filepath.Join(t.TempDir(), "a", "b")); p != nil {
		t.Fatalf("a creatable directory: %v", p)
	}
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o644)
	p := Out(filepath.Join(file, "reports"))
	if p == nil || p.Stage != StageOut || !strings.Contains(p.Hint, "--out") {
		t.Fatalf("a directory under a file: %+v", p)
	}
}

func TestReachUnreachableHintsAtWaiting(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, p := Reach(context.Background(), newClient(t, "http://"+addr), 0)
	if p == nil || p.Stage != StageReach || !strings.Contains(p.Hint, "--wait-for-target") {
		t.Fatalf("unreachable target: %+v", p)
	}
}

// --wait-for-target polls through refused connections and a gateway's
// "not ready" answers until the target answers.
func TestReachWaitsForTheTarget(t *testing.T) {
	defer func(d time.Duration) { pollEvery = d }(pollEvery)
	pollEvery = time.Millisecond
	var calls atomic.Int32
	url := serve(t, func(w http.ResponseWriter, r *http.Request) {
		switch n := calls.Add(1); {
		case n <= client.StoppedAfter+1:
			// The connection breaks: a transport error, as while a
			// target is starting.
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
		case n <= client.StoppedAfter+3:
			w.WriteHeader(http.StatusServiceUnavailable)
		default:
			discovery(w, r)
		}
	})
	c := newClient(t, url)
	resp, p := Reach(context.Background(), c, time.Hour)
	if p != nil {
		t.Fatalf("waited target: %v", p)
	}
	if want := int32(client.StoppedAfter + 4); resp.Status != http.StatusOK || calls.Load() != want {
		t.Fatalf("status %d after %d polls, want 200 after %d", resp.Status, calls.Load(), want)
	}
	if why := c.Health().Stopped(); why != "" {
		t.Fatalf("the wait's refused connections stopped the run: %s", why)
	}
}

// Without a wait, one try; a gateway that keeps answering 503 is a target
// not up, named as such.
func TestReachGatewayNotReady(t *testing.T) {
	url := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	_, p := Reach(context.Background(), newClient(t, url), 0)
	if p == nil || p.Stage != StageReach || !strings.Contains(p.Message, "502") {
		t.Fatalf("502 gateway: %+v", p)
	}
}

func TestDiscovery(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/v1", discovery)
	mux.HandleFunc("/static/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>It works!</html>")
	})
	mux.HandleFunc("/list/", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[]}`)
	})
	mux.HandleFunc("/broken/v1", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, `{"object":"protocol_discovery","capabilities":{"rest":tr`)
	})
	mux.HandleFunc("/failing/v1", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusInternalServerError) })
	mux.HandleFunc("/private/v1", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusUnauthorized) })
	base := serve(t, mux.ServeHTTP)
	for _, tc := range []struct {
		name, target string
		problem      bool
		message      string
		hint         string
	}{
		{name: "harness", target: base},
		{name: "broken discovery is the suite's to judge", target: base + "/broken"},
		{name: "failing discovery is the suite's to judge", target: base + "/failing"},
		{name: "non-public discovery is the suite's to judge", target: base + "/private"},
		{name: "target ends in /v1", target: base + "/v1", problem: true, message: "no Harn discovery document", hint: "conform adds /v1 itself: give --target " + base},
		{name: "wrong prefix", target: base + "/api", problem: true, message: "404", hint: "give --target " + base},
		{name: "static file server", target: base + "/static", problem: true, message: "this is not a Harn server", hint: ""},
		{name: "some other JSON API", target: base + "/list", problem: true, message: "not a discovery document"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newClient(t, tc.target)
			resp, p := Reach(context.Background(), c, 0)
			if p != nil {
				t.Fatal(p)
			}
			got := Discovery(context.Background(), c, resp, tc.target)
			if !tc.problem {
				if got != nil {
					t.Fatalf("unexpected problem: %v", got)
				}
				return
			}
			if got == nil || got.Stage != StageDiscovery {
				t.Fatalf("want a discovery problem, got %+v", got)
			}
			if !strings.Contains(got.Message, tc.message) || !strings.Contains(got.Hint, tc.hint) {
				t.Fatalf("message %q hint %q; want %q and %q", got.Message, got.Hint, tc.message, tc.hint)
			}
		})
	}
}

func TestCredential(t *testing.T) {
	status := atomic.Int32{}
	url := serve(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(int(status.Load())) })
	c := newClient(t, url)
	ctx := context.Background()
	cfg := config.Defaults()

	p := Credential(ctx, c, cfg)
	if p == nil || p.Stage != StageCredential || !strings.Contains(p.Hint, "CONFORM_API_KEY") {
		t.Fatalf("no key: %+v", p)
	}
	cfg.APIKey, cfg.APIKeySource = "sk-secret-value", "CONFORM_API_KEY"
	for _, tc := range []struct {
		status  int32
		problem bool
	}{{200, false}, {404, false}, {500, false}, {401, true}, {403, true}} {
		status.Store(tc.status)
		p := Credential(ctx, c, cfg)
		if (p != nil) != tc.problem {
			t.Fatalf("status %d: problem %v", tc.status, p)
		}
		if p != nil {
			if !strings.Contains(p.Message, "CONFORM_API_KEY") || strings.Contains(p.Error(), "sk-secret-value") {
				t.Fatalf("status %d: %q does not name the variable, or shows the key", tc.status, p.Error())
			}
		}
	}
	cfg.APIKeySource, cfg.APIKeyFile = "", "/run/secrets/key"
	status.Store(401)
	if p := Credential(ctx, c, cfg); p == nil || !strings.Contains(p.Message, "/run/secrets/key") {
		t.Fatalf("key from a config file: %+v", p)
	}
}
