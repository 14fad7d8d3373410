package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

// A user's mistake is exit 2 with a hint and a report that says why —
// never "not conformant", never a failure blamed on the target.
func TestUserMistakesExit2(t *testing.T) {
	t.Parallel()
	url := harness(t, refharness.Options{})
	wrongKey := filepath.Join(t.TempDir(), "key")
	os.WriteFile(wrongKey, []byte("sk-not-the-key\n"), 0o600)
	static := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>It works!</html>")
	}))
	t.Cleanup(static.Close)
	for _, tc := range []struct {
		name  string
		args  []string
		stage string
		hint  string
	}{
		{"refused key", []string{"--target", url, "--api-key-file", wrongKey}, "credential", "--api-key-file"},
		{"target ends in /v1", []string{"--target", url + "/v1"}, "discovery", "conform adds /v1 itself: give --target " + url},
		{"wrong path prefix", []string{"--target", strings.TrimSuffix(url, "/prefix") + "/prefx"}, "discovery", "check the path prefix /prefx"},
		{"not a Harn server", []string{"--target", static.URL}, "discovery", "is this the Harness's address and port?"},
		{"filter matches nothing", []string{"--target", url, "--label-filter", "req:NO-SUCH-REQ"}, "filter", "conform list"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, console, r, _ := runConform(t, append([]string{"run", "--levels", "core"}, tc.args...)...)
			if code != 2 {
				t.Fatalf("exit %d, want 2:\n%s", code, console)
			}
			if !strings.Contains(console, tc.hint) {
				t.Errorf("the console does not give the hint %q:\n%s", tc.hint, console)
			}
			if r == nil {
				t.Fatalf("an exit-2 run wrote no report:\n%s", console)
			}
			if r.Stopped == nil || r.Stopped.Stage != tc.stage || r.ExitCode != 2 {
				t.Fatalf("report: stopped %+v exit %d, want stage %s and exit 2", r.Stopped, r.ExitCode, tc.stage)
			}
			if failed := verdicts(r, reports.Fail); len(failed) > 0 {
				t.Errorf("a user's mistake is blamed on the target: %v", failed)
			}
			if strings.Contains(console, "sk-not-the-key") || strings.Contains(console, testKey) {
				t.Errorf("a key reached the console:\n%s", console)
			}
		})
	}
}

// A target that answers discovery and then hangs gets exit 2 after a few
// unanswered exchanges ("target stopped answering"), not a verdict per
// spec each waiting out its timeout, and nothing is blamed on it.
func TestTargetThatStopsAnswering(t *testing.T) {
	t.Parallel()
	h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var hang atomic.Bool
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The preflight's own reads pass; from the first POST on, the
		// target answers nothing.
		if r.Method == http.MethodPost {
			hang.Store(true)
		}
		if hang.Load() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		h.ServeHTTP(w, r)
	}))
	defer func() { close(release); srv.CloseClientConnections(); srv.Close() }()
	// The request timeout bounds the hung exchanges (three in a row end
	// the run) and the preflight's own reads alike: long enough that a
	// loaded machine answers the preflight within it.
	code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--levels", "core,receipts", "--request-timeout", "2s")
	if code != 2 {
		t.Fatalf("exit %d, want 2:\n%s", code, console)
	}
	if r == nil || r.Stopped == nil || r.Stopped.Stage != reports.StageTargetStopped {
		t.Fatalf("report does not say the target stopped answering: %+v", r)
	}
	if failed := verdicts(r, reports.Fail); len(failed) > 0 {
		t.Errorf("a hung target is blamed: %v%s", failed, messages(r, failed))
	}
	if !strings.Contains(console, "stopped answering") {
		t.Errorf("the console does not say why:\n%s", console)
	}
	if strings.Contains(console, "] FAIL ") {
		t.Errorf("the console prints FAIL for errors:\n%s", console)
	}
}

// --wait-for-target polls discovery until the target is up: a CI job may
// start the server in the background and run conform at once.
func TestWaitForTarget(t *testing.T) {
	t.Parallel()
	url := harness(t, refharness.Options{})
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1" && polls.Add(1) <= 3 {
			w.WriteHeader(http.StatusServiceUnavailable) // still starting
			return
		}
		proxy(w, r, url)
	}))
	defer srv.Close()
	code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--levels", "core", "--wait-for-target", "10m", "--label-filter", "req:CORE-DISC-001")
	if r == nil || r.Stopped != nil {
		t.Fatalf("exit %d; the run did not get past the wait:\n%s", code, console)
	}
	if polls.Load() < 4 {
		t.Fatalf("%d discovery polls; want the wait to poll until the target answered", polls.Load())
	}
}

// proxy forwards a request to the reference Harness at base.
func proxy(w http.ResponseWriter, r *http.Request, base string) {
	req, err := http.NewRequestWithContext(r.Context(), r.Method, base+r.URL.RequestURI(), r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	io.Copy(w, resp.Body)
}
