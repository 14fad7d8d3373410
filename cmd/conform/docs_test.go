package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/harn-conform/conform/reports"
)

// docBlock returns the first fenced code block of lang after the line
// heading in the markdown file path (relative to the repository root): the
// docs' commands, read at test time so that they cannot drift from what
// runs.
func docBlock(t *testing.T, path, heading, lang string) string {
	t.Helper()
	_, section, ok := strings.Cut(readRepoFile(t, path), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("%s has no line %q", path, heading)
	}
	for _, f := range fences(section) {
		if f.lang == lang {
			return f.body
		}
	}
	t.Fatalf("%s: no ```%s block after %q", path, lang, heading)
	return ""
}

// shellCommands counts the commands of a shell block: its lines, a
// here-document's body counting with the command that writes it, and a
// line ending in a backslash with the next.
func shellCommands(block string) int {
	n, end, cont := 0, "", false
	for _, line := range strings.Split(block, "\n") {
		switch {
		case end != "":
			if strings.TrimSpace(line) == end {
				end = ""
			}
			continue
		case strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#"):
			continue
		}
		if !cont {
			n++
		}
		cont = strings.HasSuffix(line, "\\")
		if _, tag, ok := strings.Cut(line, "<<'"); ok {
			end, _, _ = strings.Cut(tag, "'")
		}
	}
	return n
}

// docsWorkdir is a directory that looks like the checkout (its module and
// source, linked) for docs' commands that build conform from it; what the
// commands write stays in the directory.
func docsWorkdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); n == "go.mod" || n == "go.sum" || e.IsDir() && !strings.HasPrefix(n, ".") && n != "docs" {
			if err := os.Symlink(filepath.Join(root, n), filepath.Join(dir, n)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// docs/ci.md's "From zero to green" reaches conformant on every level
// against conform serve, run verbatim (out of process, its port changed to
// a free one), in at most ten commands.
func TestDocsZeroToGreen(t *testing.T) {
	proofTier(t)
	if testing.Short() {
		t.Skip("builds conform and runs every level")
	}
	t.Parallel()
	block := docBlock(t, "docs/ci.md", "## From zero to green", "sh")
	if n := shellCommands(block); n > 10 {
		t.Errorf("docs/ci.md's zero-to-green path has %d commands, want at most 10", n)
	}
	if !strings.Contains(block, "127.0.0.1:8080") {
		t.Fatalf("the block names no 127.0.0.1:8080 to move to a free port:\n%s", block)
	}
	dir := docsWorkdir(t)
	script := filepath.Join(dir, "zero-to-green.sh")
	if err := os.WriteFile(script, []byte(strings.ReplaceAll(block, "127.0.0.1:8080", freeAddr(t))), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*distTimeout) // a build, then every level
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", script)
	cmd.Dir, cmd.Env = dir, ciEnv(nil)
	t.Cleanup(func() { // the server the block started, if its own kill did not run
		if b, err := os.ReadFile(filepath.Join(dir, "serve.pid")); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "conform exited 0") {
		log, _ := os.ReadFile(filepath.Join(dir, "serve.log"))
		t.Fatalf("the zero-to-green block: %v\n%.6000s\nserve.log:\n%.3000s", err, out, log)
	}
	b, err := os.ReadFile(filepath.Join(dir, "conform-report", reports.JSONFile))
	if err != nil {
		t.Fatal(err)
	}
	var r reports.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if len(r.Levels) != 4 {
		t.Errorf("%d levels in the report, want 4", len(r.Levels))
	}
	for _, l := range r.Levels {
		if l.Status != reports.Conformant {
			t.Errorf("%s: %s (%s), want conformant", l.Level, l.Status, l.Why)
		}
	}
}
