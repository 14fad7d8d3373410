package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/harn-conform/conform/refharness/acpharbor"
	"github.com/harn-conform/conform/reports"
)

// The ACP library's own examples, peers nobody here wrote: acp-go-sdk
// (a dependency of this module, so its example/client and example/agent
// are in the module cache at the pinned version) builds both. Its example
// client runs the reference agent as an editor would (initialize,
// session/new, one "Hello, agent!" turn); its example agent is the
// third-party target of the profile (docs/acp-harbor.md).

var acpExamples struct {
	once sync.Once
	dir  string
	err  error
	out  []byte
}

// acpExample builds example/NAME of acp-go-sdk (once per test binary) and
// returns its path.
func acpExample(t *testing.T, name string) string {
	t.Helper()
	acpExamples.once.Do(func() {
		acpExamples.dir = filepath.Dir(conformBin) // TestMain removes it
		for _, n := range []string{"client", "agent"} {
			out, err := exec.Command("go", "build", "-o", filepath.Join(acpExamples.dir, "acp-example-"+n), "github.com/coder/acp-go-sdk/example/"+n).CombinedOutput()
			if err != nil {
				acpExamples.err, acpExamples.out = err, out
				return
			}
		}
	})
	if acpExamples.err != nil {
		t.Fatalf("building acp-go-sdk's examples from the module cache: %v\n%s", acpExamples.err, acpExamples.out)
	}
	return filepath.Join(acpExamples.dir, "acp-example-"+name)
}

// The reference agent's Harbor notifications raise no error in the ACP
// library's example client: by default they are _ah/… extension
// notifications (docs/interpretations.md, ah-notification-forms), which an
// ACP v1 client that does not know Harbor ignores. Every turn of the
// reference ends with an automatic snapshot, so the example's "Hello,
// agent!" turn carries harbor/snapshot_created. The forms the ruling
// moves away from show why: the text's custom session/update is misread by
// this client as a user message chunk, and a harbor/… notification is
// logged as an error.
func TestACPExampleClientHarborSilent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	client := acpExample(t, "client")
	for _, tc := range []struct {
		name  string
		flags []string
		quiet bool
		shows string // what a noisy run shows, on stdout or stderr
	}{
		{"default", nil, true, ""},
		{"the text's custom session/update", []string{"--fault", string(acpharbor.FaultHarborUpdatesUnasked)}, false, "[ user_message_chunk ]"},
		{"harbor/… notifications", []string{"--variant", string(acpharbor.VariantMethodNotifications)}, false, "ERROR failed to handle notification"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			cmd := exec.CommandContext(ctx, client, append([]string{conformBin, "serve-acp"}, tc.flags...)...)
			cmd.Dir = t.TempDir()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("the example client: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
			}
			if !strings.Contains(stdout.String(), "Agent completed") {
				t.Fatalf("the example client's turn did not complete:\n%s\n%s", &stdout, &stderr)
			}
			noisy := strings.Contains(stderr.String(), "ERROR") || strings.Contains(stdout.String(), "user_message_chunk")
			switch {
			case tc.quiet && noisy:
				t.Errorf("the example client logged an error or misread an update:\nstdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			case !tc.quiet && !strings.Contains(stdout.String()+stderr.String(), tc.shows):
				t.Errorf("want the example client to show %q for this form (else this test proves nothing):\nstdout:\n%s\nstderr:\n%s", tc.shows, &stdout, &stderr)
			}
		})
	}
}

// The profile against acp-go-sdk's example agent, on every proof run: a
// base-ACP agent without Harbor (a scripted turn that streams messages and
// tool calls for about 5 s and asks permission midway). It is conformant:
// the base requirements pass, the Harbor ones are not claimed, and its one
// warning is ACP-INIT-003 (its initialize result names no agentInfo).
func TestACPExampleAgentProfile(t *testing.T) {
	proofTier(t)
	t.Parallel()
	agent := acpExample(t, "agent")
	defer direct()()
	out := t.TempDir()
	args := []string{"run", "--profile", "acp-harbor", "--out", out, "--", agent}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute) // a hang guard
	defer cancel()
	b, err := exec.CommandContext(ctx, conformBin, args...).CombinedOutput()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(out, reports.JSONFile))
	if err != nil {
		t.Fatalf("no report (exit %d):\n%s", code, b)
	}
	r, problems := reportProblems(args, string(b), raw)
	for _, p := range problems {
		t.Error(p)
	}
	if r == nil {
		t.Fatalf("no report; exit %d:\n%s", code, b)
	}
	if bad := append(append(verdicts(r, reports.Fail), verdicts(r, reports.Error)...), verdicts(r, reports.Unverified)...); len(bad) > 0 || code != 0 {
		t.Errorf("exit %d, findings %v: %s\n%s", code, bad, messages(r, bad), b)
	}
	if w := verdicts(r, reports.Warn); !slices.Equal(w, []string{"ACP-INIT-003"}) {
		t.Errorf("warnings %v, want ACP-INIT-003 only: %s", w, messages(r, w))
	}
	passed, skipped := verdicts(r, reports.Pass), verdicts(r, reports.Skip)
	for _, id := range []string{"ACP-INIT-001", "ACP-SESS-001", "ACP-PROMPT-001", "ACP-UPD-001", "ACP-CANCEL-001", "ACP-RPC-001", "ACP-EXT-002"} {
		if !slices.Contains(passed, id) {
			t.Errorf("%s did not pass against the example agent (passed: %v)", id, passed)
		}
	}
	for _, id := range []string{"ACP-CAP-001", "ACP-SNAP-001", "ACP-NOTIF-003"} {
		if !slices.Contains(skipped, id) {
			t.Errorf("%s is not skipped (not claimed) for an agent without a Harbor bundle (skipped: %v)", id, skipped)
		}
	}
}

// The same with the official ACP TypeScript SDK (@agentclientprotocol/sdk,
// installed with npm into a temporary directory; skipped, saying so, when
// Node.js or the npm registry cannot be reached): an editor's client that
// does not know Harbor handles the reference agent's turn without a
// single "Error handling notification", while the text's custom
// session/update is rejected and logged (-32602 Invalid params).
func TestACPTypeScriptClientHarborSilent(t *testing.T) {
	proofTier(t)
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no Node.js on PATH: the TypeScript SDK client needs node and npm (Debian packages nodejs, npm)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("no npm on PATH: the TypeScript SDK client is installed with npm")
	}
	dir := t.TempDir()
	script, err := os.ReadFile("testdata/acp-ts-client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mjs"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "package.json"), []byte(`{"name":"conform-acp-ts-probe","private":true,"type":"module"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ictx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	install := exec.CommandContext(ictx, npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "@agentclientprotocol/sdk@2.4.0")
	install.Dir = dir
	if out, err := install.CombinedOutput(); err != nil {
		t.Skipf("npm could not install @agentclientprotocol/sdk@2.4.0 (is the npm registry reachable?): %v\n%s", err, out)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		quiet bool
	}{
		{"default", nil, true},
		{"the text's custom session/update", []string{"--fault", string(acpharbor.FaultHarborUpdatesUnasked)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			cmd := exec.CommandContext(ctx, node, append([]string{"client.mjs", conformBin, "serve-acp"}, tc.flags...)...)
			cmd.Dir = dir
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil || !strings.Contains(stdout.String(), "stop end_turn") {
				t.Fatalf("the TypeScript client's turn did not end: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
			}
			logged := strings.Contains(stderr.String(), "Error handling notification")
			if logged == tc.quiet {
				t.Errorf("logged an error: %v, want %v\nstdout:\n%s\nstderr:\n%s", logged, !tc.quiet, &stdout, &stderr)
			}
		})
	}
}
