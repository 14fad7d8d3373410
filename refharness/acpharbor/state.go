package acpharbor

import (
	"bytes"
	"fmt"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The reference keeps everything in memory, per process: an ACP agent
// serves one client over its stdio and ends with it.

// file is one node of a session's workspace.
type file struct {
	content  string
	base     string // the content at the session's start ("" for a new file)
	modified time.Time
}

// workspace is a session's working copy: a few files, some modified since
// the session started, as an agent's edits leave them.
type workspace struct {
	files map[string]*file // by slash path, no leading slash
}

func newWorkspace(now time.Time) *workspace {
	t0 := now.Add(-time.Hour)
	return &workspace{files: map[string]*file{
		"README.md":   {content: "# webapp\n\nA demo workspace of the reference Harbor agent.\n", base: "# webapp\n\nA demo workspace of the reference Harbor agent.\n", modified: t0},
		"src/auth.rs": {content: "fn login(user: &str) -> bool {\n    log::info!(\"login {user}\");\n    check(user)\n}\n", base: "fn login(user: &str) -> bool {\n    check(user)\n}\n", modified: now},
		"src/main.rs": {content: "fn main() {\n    println!(\"hello\");\n}\n", base: "fn main() {\n    println!(\"hello\");\n}\n", modified: t0},
		"src/log.rs":  {content: "pub fn init() {}\n", modified: now},
	}}
}

func (w *workspace) usage() int64 {
	var n int64
	for _, f := range w.files {
		n += int64(len(f.content))
	}
	return n
}

// status is a file's state against the session's start.
func (f *file) status() string {
	switch {
	case f.base == "" && f.content != "":
		return "added"
	case f.base != f.content:
		return "modified"
	}
	return "unchanged"
}

// lineCounts counts the lines a unified diff from base to content adds
// and removes (a longest-common-subsequence diff; files are small).
func lineCounts(base, content string) (added, removed int) {
	a, b := splitLines(base), splitLines(content)
	lcs := lcsLen(a, b)
	return len(b) - lcs, len(a) - lcs
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
}

func lcsLen(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			switch {
			case strings.TrimSuffix(a[i], "\n") == strings.TrimSuffix(b[j], "\n"):
				cur[j+1] = prev[j] + 1
			case prev[j+1] >= cur[j]:
				cur[j+1] = prev[j+1]
			default:
				cur[j+1] = cur[j]
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// unifiedDiff is a whole-file unified diff (one hunk), enough for the
// per-file diffs the text asks for.
func unifiedDiff(name, base, content string) string {
	a, b := splitLines(base), splitLines(content)
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "--- a/%s\n+++ b/%s\n@@ -1,%d +1,%d @@\n", name, name, len(a), len(b))
	for _, l := range a {
		buf.WriteString("-" + strings.TrimSuffix(l, "\n") + "\n")
	}
	for _, l := range b {
		buf.WriteString("+" + strings.TrimSuffix(l, "\n") + "\n")
	}
	return buf.String()
}

// children lists the direct children of dir ("" is the root).
func (w *workspace) children(dir string, recursive, modifiedOnly bool) []map[string]any {
	dirs := map[string]bool{}
	var out []map[string]any
	for p, f := range w.files {
		rel := p
		if dir != "" {
			if !strings.HasPrefix(p, dir+"/") {
				continue
			}
			rel = strings.TrimPrefix(p, dir+"/")
		}
		if modifiedOnly && f.status() == "unchanged" {
			continue
		}
		if i := strings.IndexByte(rel, '/'); i >= 0 && !recursive {
			sub := path.Join(dir, rel[:i])
			if !dirs[sub] {
				dirs[sub] = true
				out = append(out, map[string]any{"path": sub, "name": rel[:i], "type": "directory"})
			}
			continue
		}
		out = append(out, map[string]any{"path": p, "name": path.Base(p), "type": "file", "status": f.status(), "size": len(f.content)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i]["path"].(string) < out[j]["path"].(string) })
	return out
}

// isDir reports whether dir names a directory of the workspace.
func (w *workspace) isDir(dir string) bool {
	if dir == "" {
		return true
	}
	for p := range w.files {
		if strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// snapshot is a captured state of a session's workspace.
type snapshot struct {
	id, label, session string
	created            time.Time
	locked             bool
	anchor             map[string]any
	token              string
}

func (s *snapshot) meta() map[string]any {
	m := map[string]any{
		"id": s.id, "provider": provider, "workingCopy": workingCopy, "execPath": execPath,
		"createdAt": s.created.UTC().Format("2006-01-02T15:04:05.000Z07:00"), "branchable": !s.locked,
		"cleanupToken": s.token, "locked": s.locked,
	}
	if s.label != "" {
		m["label"] = s.label
	}
	if s.anchor != nil {
		m["anchor"] = s.anchor
	}
	return m
}

// The one provider and working-copy mode this reference offers.
const (
	provider    = "agentfs"
	workingCopy = "cow-overlay"
	execPath    = "/workspace"
)

// branch is a writable workspace made from a snapshot.
type branch struct {
	id, name, status, snapshotID, parent, mount string
	sessions                                    []string
	created                                     time.Time
}

func (b *branch) meta() map[string]any {
	return map[string]any{
		"branchId": b.id, "name": b.name, "status": b.status, "snapshotId": b.snapshotID,
		"mountPath": b.mount, "parentSessionId": b.parent, "createdBy": "acp-client",
		"provider": provider, "workingCopy": workingCopy, "execPath": b.mount,
		"createdAt": b.created.UTC().Format("2006-01-02T15:04:05.000Z07:00"),
	}
}

// execution is one recorded tool execution: a shell pipeline and its steps.
type execution struct {
	id, session string
	pipelines   []*pipeline
}

type pipeline struct {
	id           string
	started, end time.Time
	steps        []*step
}

type step struct {
	id, command             string
	argv                    []string
	index                   int
	pid                     int
	in, stdout, stderr      int
	started, ended          time.Time
	exit                    int
	stdoutStart, stderrFrom int
}

func (s *step) meta(p *pipeline, exec string) map[string]any {
	m := map[string]any{
		"pipelineId": p.id, "stepId": s.id, "index": s.index, "command": s.command, "argv": s.argv,
		"pid": s.pid, "stdoutBytes": s.stdout, "stderrBytes": s.stderr, "inputBytes": s.in,
		"startedAt": s.started.UTC().Format(time.RFC3339Nano), "endedAt": s.ended.UTC().Format(time.RFC3339Nano),
		"executionId": exec, "exitCode": s.exit, "status": "completed",
	}
	ranges := map[string]any{"stdout": map[string]any{"start": s.stdoutStart, "len": s.stdout}, "stderr": nil}
	if s.stderr > 0 {
		ranges["stderr"] = map[string]any{"start": s.stderrFrom, "len": s.stderr}
	}
	m["byteRanges"] = ranges
	return m
}

// runPipeline runs a shell pipeline with a few built-in commands (printf,
// echo, grep, wc -l, sort, head -n, cat) over bytes in memory: a stand-in
// for the commands Harbor's recorder sees, real enough that byte counts
// and step outputs are what the commands produce. No process is started:
// a client's prompt never runs anything on the host.
func runPipeline(line string) (steps []*step, out []byte) {
	var input []byte
	for i, part := range strings.Split(line, "|") {
		argv := shellWords(strings.TrimSpace(part))
		st := &step{index: i + 1, command: strings.TrimSpace(part), argv: argv, in: len(input)}
		stdout, stderr, code := builtin(argv, input)
		st.stdout, st.stderr, st.exit = len(stdout), len(stderr), code
		steps = append(steps, st)
		input = stdout
	}
	return steps, input
}

func builtin(argv []string, in []byte) (out, errOut []byte, code int) {
	if len(argv) == 0 {
		return nil, []byte("sh: empty command\n"), 2
	}
	switch argv[0] {
	case "printf":
		if len(argv) < 2 {
			return nil, nil, 0
		}
		return []byte(unescape(argv[1])), nil, 0
	case "echo":
		return []byte(strings.Join(argv[1:], " ") + "\n"), nil, 0
	case "cat":
		return in, nil, 0
	case "grep":
		if len(argv) < 2 {
			return nil, []byte("grep: no pattern\n"), 2
		}
		var b bytes.Buffer
		for _, l := range splitLines(string(in)) {
			if strings.Contains(l, argv[1]) {
				b.WriteString(strings.TrimSuffix(l, "\n") + "\n")
			}
		}
		if b.Len() == 0 {
			return nil, nil, 1
		}
		return b.Bytes(), nil, 0
	case "wc":
		return []byte(strconv.Itoa(len(splitLines(string(in)))) + "\n"), nil, 0
	case "sort":
		ls := splitLines(string(in))
		for i := range ls {
			ls[i] = strings.TrimSuffix(ls[i], "\n")
		}
		sort.Strings(ls)
		if len(ls) == 0 {
			return nil, nil, 0
		}
		return []byte(strings.Join(ls, "\n") + "\n"), nil, 0
	case "head":
		n := 10
		if len(argv) == 3 && argv[1] == "-n" {
			if v, err := strconv.Atoi(argv[2]); err == nil && v >= 0 {
				n = v
			}
		}
		ls := splitLines(string(in))
		return []byte(strings.Join(ls[:min(n, len(ls))], "")), nil, 0
	}
	return nil, []byte("sh: " + argv[0] + ": command not found\n"), 127
}

// shellWords splits a command on blanks, honouring single and double quotes.
func shellWords(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ' || c == '\t':
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

func unescape(s string) string {
	r := strings.NewReplacer(`\n`, "\n", `\t`, "\t", `\\`, `\`)
	return r.Replace(s)
}

// pipelineIn finds the first `…` span of a prompt that holds a pipe.
func pipelineIn(text string) string {
	for rest := text; ; {
		i := strings.IndexByte(rest, '`')
		if i < 0 {
			return ""
		}
		j := strings.IndexByte(rest[i+1:], '`')
		if j < 0 {
			return ""
		}
		if cmd := rest[i+1 : i+1+j]; strings.Contains(cmd, "|") {
			return cmd
		}
		rest = rest[i+1+j+1:]
	}
}
