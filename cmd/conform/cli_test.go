package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/harn-conform/conform/refharness"
	"github.com/harn-conform/conform/reports"
)

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "no command given"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"run"}, "no target"},
		{[]string{"run", "--target", "ftp://x"}, "must be an http"},
		{[]string{"run", "--target", "http://x", "--request-timeout", "soon"}, "--request-timeout"},
		{[]string{"run", "--bogus"}, "flag provided but not defined: -bogus"},
		{[]string{"run", "--target", "http://x", "extra"}, `unexpected argument "extra"`},
		{[]string{"list", "--format", "yaml"}, "--format"},
		{[]string{"list", "--levels", "gold"}, "unknown level"},
		{[]string{"serve", "--api-key-file", "/nonexistent/key"}, "--api-key-file"},
	} {
		var out, errb bytes.Buffer
		code := Main(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("conform %v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errb.String(), tc.want)
		}
		if strings.Contains(errb.String(), "goroutine ") {
			t.Errorf("conform %v printed a stack trace", tc.args)
		}
	}
}

func TestVersion(t *testing.T) {
	var out bytes.Buffer
	if code := Main(context.Background(), []string{"version"}, nil, &out, &out); code != 0 || !strings.Contains(out.String(), "agents-protocol-2026-04-25") {
		t.Errorf("version: exit %d, %q", code, out.String())
	}
}

// An unreachable target is an engine error (exit 2), reported quickly and
// by name, not a nonconformance.
func TestUnreachableTarget(t *testing.T) {
	code, console, r, _ := runConform(t, "run", "--target", "http://127.0.0.1:1", "--request-timeout", "2s")
	if code != 2 || !strings.Contains(console, "127.0.0.1:1") || r != nil {
		t.Errorf("exit %d, report %v, output %q; want exit 2 naming the target and no report", code, r != nil, console)
	}
}

// The canary: a whole run with a known key, then the key must appear in no
// report file and nowhere on the console.
func TestCanaryKeyNeverOutput(t *testing.T) {
	url := harness(t, refharness.Options{})
	code, console, r, out := runConform(t, "run", "--target", url)
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if strings.Contains(console, testKey) {
		t.Error("the console shows the API key")
	}
	files, _ := filepath.Glob(filepath.Join(out, "*"))
	if len(files) < 3 {
		t.Errorf("report files = %v, want conform.json, junit.xml and summary.md", files)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte(testKey)) {
			t.Errorf("%s contains the API key", filepath.Base(f))
		}
	}
}

// selftest end to end: the reference Harness passes its own suite.
func TestSelftestConformant(t *testing.T) {
	code, console, r, _ := runConform(t, "selftest")
	if code != 0 || r == nil {
		t.Fatalf("selftest exit %d:\n%s", code, console)
	}
	if r.Levels[0].Status != "conformant" {
		t.Errorf("core = %s (%s)", r.Levels[0].Status, r.Levels[0].Why)
	}
}

func TestListJSON(t *testing.T) {
	out, err := exec.Command(conformBin, "list", "--format", "json", "--levels", "core").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out, []byte(`"CORE-VER-001"`)) || !bytes.Contains(out, []byte("refuses a non-public request")) {
		t.Errorf("list output lacks CORE-VER-001 and its spec:\n%.500s", out)
	}
}

// The coverage gate: in every level that has specs, each wire-observable
// MUST (or MUST NOT) is verified by at least one spec or carries an explicit
// exclusion with its reason.
func TestCoverageGate(t *testing.T) {
	out, err := exec.Command(conformBin, "list", "--format", "json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rows []struct {
		ID, Level, Keyword, Exclusion string
		Observable                    bool
		Specs                         []string
	}
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatal(err)
	}
	implemented := map[string]bool{}
	for _, r := range rows {
		if len(r.Specs) > 0 {
			implemented[r.Level] = true
		}
	}
	if !implemented["core"] {
		t.Fatal("no Core spec found: the suites are not registered")
	}
	for _, r := range rows {
		mandatory := r.Keyword == "MUST" || r.Keyword == "MUST NOT"
		if implemented[r.Level] && mandatory && r.Observable && len(r.Specs) == 0 && r.Exclusion == "" {
			t.Errorf("%s (%s %s) is observable but no spec verifies it and it has no exclusion", r.ID, r.Level, r.Keyword)
		}
	}
}

// A target that answers garbage — HTML, truncated JSON, a stream that never
// sends — gets clear findings (exit 1), never a panic or a hang.
func TestGarbageTarget(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"html": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html><body>It works!</body></html>")
		},
		"truncated json": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"protocol_discovery","capabilities":{"rest":tr`)
		},
		"hanging stream": func(w http.ResponseWriter, r *http.Request) {
			if strings.HasSuffix(r.URL.Path, "/stream") {
				w.Header().Set("Content-Type", "text/event-stream")
				w.(http.Flusher).Flush()
				<-r.Context().Done()
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			io.WriteString(w, `{"object":"list","data":[],"page":{"has_more":false,"next_cursor":null}}`)
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			srv := httptest.NewServer(h)
			defer srv.Close()
			code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--request-timeout", "1s", "--stream-timeout", "500ms", "--task-timeout", "2s")
			if r == nil || code != 1 {
				t.Fatalf("exit %d, report %v; want findings (exit 1):\n%s", code, r != nil, console)
			}
			if len(verdicts(r, reports.Fail)) == 0 {
				t.Errorf("no requirement failed against a garbage target")
			}
		})
	}
}

// --max-duration bounds a run: a target that stops answering task reads
// (until the client gives up) is cut off at the bound, and what the bound
// cuts off is an error (exit 2), never a failure of the target.
func TestMaxDurationCutsOff(t *testing.T) {
	h, err := refharness.New(refharness.Options{APIKeys: map[string]string{testKey: "actor_default"}})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/v1/tasks/") && strings.Count(r.URL.Path, "/") == 3 {
			<-r.Context().Done() // answers no task read, ever
			return
		}
		h.ServeHTTP(w, r)
	})
	srv := httptest.NewServer(hang)
	defer func() { srv.CloseClientConnections(); srv.Close() }()
	code, console, r, _ := runConform(t, "run", "--target", srv.URL, "--levels", "core", "--max-duration", "2s", "--request-timeout", "10m")
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, console)
	}
	if code != 2 {
		t.Errorf("exit %d, want 2 (cut off by --max-duration)", code)
	}
	if failed := verdicts(r, reports.Fail); len(failed) > 0 {
		t.Errorf("a run cut off by --max-duration blames the target: %v%s", failed, messages(r, failed))
	}
	if len(verdicts(r, reports.Error)) == 0 || !strings.Contains(strings.Join(r.Notes, "\n"), "cut off") {
		t.Errorf("the cut is not reported: errors %v, notes %v", verdicts(r, reports.Error), r.Notes)
	}
}
