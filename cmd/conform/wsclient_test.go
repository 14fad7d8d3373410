package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// A client journey the way the protocol's TypeScript SDK makes it
// (docs/websocket.md section 1.5): REST to create a session and submit a
// task, then connectTaskEventsWebSocket — a browser-API WebSocket on the
// stream path that offers no subprotocol unless told to, and so
// authenticates with an auth frame. The SDK itself cannot be installed
// (`@burin-labs/harn` is not on npm; its repository is not reachable from
// CI), so this is its journey with a client of its own, written against
// docs/websocket.md and not conform's checker: coder/websocket, the
// browser's choices (no headers on the upgrade, no subprotocol), against a
// `conform serve` process. Per the ruling ws-no-subprotocol
// (docs/interpretations.md) every step must work without a subprotocol as
// with one; with the ws-requires-subprotocol fault the upgrade without one
// is refused with 400, which is what this journey would have met before.
func TestWSJourneyWithoutSubprotocol(t *testing.T) {
	proofTier(t)
	t.Parallel()
	for _, tc := range []struct {
		name      string
		protocols []string
		flags     []string
		refused   bool
	}{
		{"no subprotocol", nil, nil, false},
		{"harn-ws.v1 offered", []string{"harn-ws.v1"}, nil, false},
		{"no subprotocol, old refusal", nil, []string{"--fault", "ws-requires-subprotocol"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := serveProcess(t, tc.flags...)
			j := &journey{t: t, base: base}
			ws := j.rest("POST", "/v1/workspaces", map[string]any{"name": "sdk-journey", "root": "/tmp/sdk-journey"}, 201)
			sess := j.rest("POST", "/v1/sessions", map[string]any{"workspace_id": ws["id"]}, 201)["id"].(string)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second) // a hang guard
			defer cancel()
			c, resp, err := websocket.Dial(ctx, j.wsURL("/v1/sessions/"+sess+"/events/stream"), &websocket.DialOptions{Subprotocols: tc.protocols})
			if tc.refused {
				if err == nil || resp == nil || resp.StatusCode != http.StatusBadRequest {
					t.Fatalf("with ws-requires-subprotocol: %v (%v), want the upgrade refused with 400", err, resp)
				}
				return
			}
			if err != nil {
				t.Fatalf("session stream upgrade offering %v: %v (%v)", tc.protocols, err, resp)
			}
			defer c.CloseNow()
			if got, want := c.Subprotocol(), strings.Join(tc.protocols, ""); got != want {
				t.Errorf("selected subprotocol %q, want %q", got, want)
			}
			fc := j.authenticate(ctx, c)
			fc.send(map[string]any{"type": "user_message", "id": "c-msg", "session_id": sess,
				"message": map[string]any{"role": "user", "parts": []any{textPart("Summarize the release blockers.")}}})
			if r := fc.until("the user_message's answer", func(f map[string]any) bool { return f["in_reply_to"] == "c-msg" }); r["type"] != "result" || r["status"] != float64(201) {
				t.Errorf("user_message answered %v, want result 201", r)
			}
			c.Close(websocket.StatusNormalClosure, "done")

			// submitTask, then connectTaskEventsWebSocket: every event up
			// to the task's end.
			task := j.rest("POST", "/v1/tasks", map[string]any{"session_id": sess,
				"input": map[string]any{"role": "user", "parts": []any{textPart("Summarize the release blockers.")}}}, 202)["id"].(string)
			tc2, resp, err := websocket.Dial(ctx, j.wsURL("/v1/tasks/"+task+"/stream"), &websocket.DialOptions{Subprotocols: tc.protocols})
			if err != nil {
				t.Fatalf("task stream upgrade offering %v: %v (%v)", tc.protocols, err, resp)
			}
			defer tc2.CloseNow()
			ft := j.authenticate(ctx, tc2)
			end := ft.until("the task's terminal event", func(f map[string]any) bool {
				ev, _ := f["event"].(map[string]any)
				kind, _ := ev["event"].(string)
				return f["type"] == "event" && (kind == "task.completed" || kind == "task.failed" || kind == "task.canceled")
			})
			if ev := end["event"].(map[string]any); ev["event"] != "task.completed" {
				t.Errorf("the task ended with %v, want task.completed", ev["event"])
			}
		})
	}
}

// textPart is the SDK's textPart(text): visibility public by default.
func textPart(text string) map[string]any {
	return map[string]any{"type": "text", "text": text, "visibility": "public"}
}

// serveProcess starts `conform serve` on a free loopback port with the
// test key and flags, and returns its base URL once it listens.
func serveProcess(t *testing.T, flags ...string) string {
	t.Helper()
	cmd := exec.Command(conformBin, append([]string{"serve", "--addr", "127.0.0.1:0"}, flags...)...)
	cmd.Env = append(os.Environ(), "CONFORM_SERVE_API_KEY="+testKey)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("conform serve %v said on stderr:\n%s", flags, errb.String())
		}
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "conform serve: listening on "); ok {
				url <- u
			}
		}
	}()
	select {
	case u := <-url:
		return u
	case <-time.After(time.Minute): // a hang guard, not a deadline the test races
		t.Fatalf("conform serve %v never said where it listens", flags)
		return ""
	}
}

// journey is the client side: REST with the key, WebSocket as a browser.
type journey struct {
	t    *testing.T
	base string
}

func (j *journey) wsURL(path string) string { return "ws" + strings.TrimPrefix(j.base, "http") + path }

func (j *journey) rest(method, path string, body any, want int) map[string]any {
	j.t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, j.base+path, bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Harn-Agents-Protocol-Version", "agents-protocol-2026-04-25")
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		j.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var m map[string]any
	if resp.StatusCode != want || json.Unmarshal(raw, &m) != nil {
		j.t.Fatalf("%s %s: %d %s, want %d and a JSON object", method, path, resp.StatusCode, raw, want)
	}
	return m
}

// frames reads a connection's frames on a goroutine, answering pings.
type frames struct {
	t   *testing.T
	ctx context.Context
	c   *websocket.Conn
	in  chan map[string]any
	err chan error
}

// authenticate sends the auth frame (a browser cannot set headers) and
// waits for ready naming it and the profile.
func (j *journey) authenticate(ctx context.Context, c *websocket.Conn) *frames {
	j.t.Helper()
	f := &frames{t: j.t, ctx: ctx, c: c, in: make(chan map[string]any, 256), err: make(chan error, 1)}
	go func() {
		for {
			typ, b, err := c.Read(ctx)
			if err != nil {
				f.err <- err
				return
			}
			var m map[string]any
			if typ != websocket.MessageText || json.Unmarshal(b, &m) != nil {
				f.err <- fmt.Errorf("a frame that is not a JSON text message: %q", b)
				return
			}
			if m["type"] == "ping" {
				f.send(map[string]any{"type": "pong", "in_reply_to": m["id"]})
				continue
			}
			f.in <- m
		}
	}()
	f.send(map[string]any{"type": "auth", "id": "c-auth", "authorization": "Bearer " + testKey, "protocol_version": "agents-protocol-2026-04-25"})
	r := f.until("ready", func(m map[string]any) bool { return true })
	if r["type"] != "ready" || r["profile"] != "harn-ws.v1" || r["in_reply_to"] != "c-auth" {
		j.t.Fatalf("first frame after the auth frame: %v, want ready (profile harn-ws.v1, in_reply_to c-auth)", r)
	}
	return f
}

func (f *frames) send(v any) {
	b, _ := json.Marshal(v)
	if err := f.c.Write(f.ctx, websocket.MessageText, b); err != nil {
		f.t.Errorf("sending %s: %v", b, err)
	}
}

// until returns the first frame that want accepts.
func (f *frames) until(what string, want func(map[string]any) bool) map[string]any {
	f.t.Helper()
	for {
		select {
		case m := <-f.in:
			if want(m) {
				return m
			}
		case err := <-f.err:
			var ce websocket.CloseError
			if errors.As(err, &ce) {
				f.t.Fatalf("waiting for %s: closed %d %q", what, ce.Code, ce.Reason)
			}
			f.t.Fatalf("waiting for %s: %v", what, err)
			return nil
		}
	}
}

// The same journey with the browser WebSocket API itself: Node's built-in
// WebSocket (undici's implementation of the WHATWG API, what the SDK calls
// in Node ≥ 22), driven by testdata/browser-ws-journey.mjs the way
// connectTaskEventsWebSocket drives it. Skipped, saying so, on a machine
// without Node.js or without a WebSocket in it.
func TestWSBrowserJourney(t *testing.T) {
	proofTier(t)
	t.Parallel()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no Node.js on PATH: the browser-API WebSocket journey needs node (Debian package nodejs)")
	}
	var flags []string
	for _, try := range [][]string{nil, {"--experimental-websocket"}} {
		out, err := exec.Command(node, append(try, "-e", "process.stdout.write(typeof WebSocket)")...).Output()
		if err == nil && string(out) == "function" {
			flags = append(try, "testdata/browser-ws-journey.mjs")
			break
		}
	}
	if flags == nil {
		t.Skip("this Node.js has no WebSocket (Node 22, or Node 20 with --experimental-websocket, has one)")
	}
	for _, tc := range []struct {
		name     string
		protocol string
		fault    []string
		ok       bool
	}{
		{"no subprotocol", "", nil, true},
		{"harn-ws.v1 offered", "harn-ws.v1", nil, true},
		{"no subprotocol, old refusal", "", []string{"--fault", "ws-requires-subprotocol"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			base := serveProcess(t, tc.fault...)
			args := append(append([]string{}, flags...), base, testKey)
			if tc.protocol != "" {
				args = append(args, tc.protocol)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a hang guard
			defer cancel()
			out, err := exec.CommandContext(ctx, node, args...).CombinedOutput()
			if tc.ok && err != nil {
				t.Errorf("the browser-API journey failed: %v\n%s", err, out)
			}
			if !tc.ok && err == nil {
				t.Errorf("the browser-API journey passed against ws-requires-subprotocol; want it refused:\n%s", out)
			}
		})
	}
}
