package refharness

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// serveProc is a running `conform serve` subprocess.
type serveProc struct {
	cmd  *exec.Cmd
	base string
}

func startServe(t *testing.T, bin, data, key string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+key)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start conform serve: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	// Its first line, once it listens (EOF if it exits instead).
	br := bufio.NewReader(out)
	l, _ := br.ReadString('\n')
	go io.Copy(io.Discard, br)
	base, ok := strings.CutPrefix(strings.TrimSpace(l), "conform serve: listening on ")
	if !ok {
		t.Fatalf("conform serve printed %q, want the listening line", l)
	}
	return &serveProc{cmd: cmd, base: base}
}

func (p *serveProc) post(key, path, idem string, body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", p.base+path, bytes.NewReader(b))
	req.Header.Set(VersionHeader, ProtocolVersion)
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Idempotency-Key", idem)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	var m map[string]any
	if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
		return res.StatusCode, nil, err
	}
	return res.StatusCode, m, nil
}

func (p *serveProc) getAll(t *testing.T, key, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	cursor := ""
	for {
		req, _ := http.NewRequest("GET", p.base+path+"?limit=200"+cursor, nil)
		req.Header.Set(VersionHeader, ProtocolVersion)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		var l struct {
			Data []map[string]any
			Page struct {
				HasMore    bool    `json:"has_more"`
				NextCursor *string `json:"next_cursor"`
			}
		}
		err = json.NewDecoder(res.Body).Decode(&l)
		res.Body.Close()
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		out = append(out, l.Data...)
		if !l.Page.HasMore {
			return out
		}
		cursor = "&cursor=" + *l.Page.NextCursor
	}
}

// TestCrashKeepsAcknowledgedWrites kills `conform serve` with SIGKILL while
// writers are busy, restarts it on the same data directory, and checks that
// every acknowledged write is there exactly once and that idempotent retries
// still answer with the original resource.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/conform and kills a subprocess; skipped in -short mode")
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "cmd", "conform")); err != nil {
		t.Skip("cmd/conform is not there yet: " + err.Error())
	}
	// Built where it outlives the run (the user's cache directory, one per
	// checkout), so that a warm run relinks nothing, and linked into a
	// directory of this test's, which a concurrent build cannot change.
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	sum := sha256.Sum256([]byte(root))
	shared := filepath.Join(cache, "conform-selfcheck", hex.EncodeToString(sum[:8]), "refharness")
	if err := os.MkdirAll(shared, 0o700); err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", filepath.Join(shared, "conform"), "./cmd/conform")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Skipf("cannot build cmd/conform (another engineer's work in progress?): %v\n%s", err, out)
	}
	bin := filepath.Join(t.TempDir(), "conform")
	if err := os.Link(filepath.Join(shared, "conform"), bin); err != nil {
		b, err := os.ReadFile(filepath.Join(shared, "conform"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(bin, b, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	data := t.TempDir()
	const key = "crash-test-key"
	p := startServe(t, bin, data, key)
	code, sess, err := p.post(key, "/v1/workspaces", "setup-ws", map[string]any{"name": "setup", "root": "/"})
	if err != nil || code != 201 {
		t.Fatalf("setup workspace: %d %v", code, err)
	}
	code, sess, err = p.post(key, "/v1/sessions", "setup-session", map[string]any{"workspace_id": sess["id"]})
	if err != nil || code != 201 {
		t.Fatalf("setup session: %d %v", code, err)
	}
	sessID := sess["id"].(string)

	type ack struct{ kind, idem, id, name string }
	var (
		mu    sync.Mutex
		acked []ack
		wg    sync.WaitGroup
	)
	enough, stopped := make(chan struct{}), make(chan struct{})
	var once sync.Once
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				name := fmt.Sprintf("w-%d-%d", g, i)
				idem := "idem-" + name
				kind, path, body, want := "workspace", "/v1/workspaces", any(map[string]any{"name": name, "root": "/"}), 201
				if i%2 == 1 {
					kind, path, want = "task", "/v1/sessions/"+sessID+"/tasks", 202
					body = map[string]any{"input": map[string]any{"text": name}}
				}
				code, m, err := p.post(key, path, idem, body)
				if err != nil {
					return // the server is gone
				}
				if code != want {
					t.Errorf("POST %s: status %d, want %d", path, code, want)
					return
				}
				mu.Lock()
				acked = append(acked, ack{kind, idem, m["id"].(string), name})
				if len(acked) >= 400 {
					once.Do(func() { close(enough) })
				}
				mu.Unlock()
			}
		}()
	}
	// Kill it once 400 writes are acknowledged, or when every writer has
	// stopped (a failed write: the check below says how many got through).
	go func() { wg.Wait(); close(stopped) }()
	select {
	case <-enough:
	case <-stopped:
	}
	if err := p.cmd.Process.Kill(); err != nil { // SIGKILL on Unix
		t.Fatal(err)
	}
	p.cmd.Wait()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 10 {
		t.Fatalf("only %d writes acknowledged before the kill", len(acked))
	}

	p2 := startServe(t, bin, data, key)
	workspaces := map[string][]string{}
	for _, w := range p2.getAll(t, key, "/v1/workspaces") {
		workspaces[w["name"].(string)] = append(workspaces[w["name"].(string)], w["id"].(string))
	}
	tasks := map[string][]map[string]any{}
	for _, tk := range p2.getAll(t, key, "/v1/tasks") {
		in, _ := tk["input"].(map[string]any)
		name, _ := in["text"].(string)
		tasks[name] = append(tasks[name], tk)
	}
	for name, ids := range workspaces {
		if len(ids) > 1 {
			t.Errorf("workspace %s exists %d times", name, len(ids))
		}
	}
	for name, ts := range tasks {
		if len(ts) > 1 {
			t.Errorf("task %s exists %d times", name, len(ts))
		}
	}
	recovered := map[string]bool{StatusSubmitted: true, StatusWorking: true, StatusCompleted: true, StatusFailed: true, StatusCanceled: true}
	for _, a := range acked {
		switch a.kind {
		case "workspace":
			if ids := workspaces[a.name]; len(ids) != 1 || ids[0] != a.id {
				t.Errorf("acknowledged workspace %s (%s) after restart: %v", a.name, a.id, ids)
			}
		case "task":
			ts := tasks[a.name]
			if len(ts) != 1 || ts[0]["id"] != a.id {
				t.Errorf("acknowledged task %s (%s) after restart: %v", a.name, a.id, ts)
				continue
			}
			if st, _ := ts[0]["status"].(string); !recovered[st] {
				t.Errorf("task %s recovered as %s", a.id, st)
			}
		}
	}
	// Idempotency records survived: a retry answers with the original resource.
	for i, a := range acked {
		if i%10 != 0 {
			continue
		}
		path, body := "/v1/workspaces", any(map[string]any{"name": a.name, "root": "/"})
		if a.kind == "task" {
			path, body = "/v1/sessions/"+sessID+"/tasks", map[string]any{"input": map[string]any{"text": a.name}}
		}
		_, m, err := p2.post(key, path, a.idem, body)
		if err != nil || m["id"] != a.id {
			t.Errorf("retry of %s after the crash answered %v (%v), want id %s", a.idem, m["id"], err, a.id)
		}
	}
	t.Logf("%d acknowledged writes, all present exactly once after SIGKILL", len(acked))
}
