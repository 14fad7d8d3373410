package acp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/harn-conform/conform/internal/client"
	"github.com/harn-conform/conform/internal/redact"
	"github.com/harn-conform/conform/internal/testmain"
)

// The agents these tests drive are this test binary, re-executed with
// fakeEnv naming how it should (mis)behave.
const fakeEnv = "CONFORM_ACP_FAKE_AGENT"

func TestMain(m *testing.M) {
	testmain.Setup()
	if mode := os.Getenv(fakeEnv); mode != "" {
		os.Exit(fakeAgent(mode))
	}
	os.Exit(m.Run())
}

// fakeAgent answers each request with {"method": …} after a notification
// naming it, except as mode says.
func fakeAgent(mode string) int {
	out := bufio.NewWriter(os.Stdout)
	write := func(v any) {
		b, _ := json.Marshal(v)
		out.Write(append(b, '\n'))
		out.Flush()
	}
	switch mode {
	case "exit":
		fmt.Fprintln(os.Stderr, "fake agent: exiting at once")
		return 3
	case "flood":
		// One line past any limit, then a working agent.
		out.WriteString(strings.Repeat("x", 3<<20) + "\n")
		out.Flush()
	case "stderr":
		for i := range 5000 {
			fmt.Fprintf(os.Stderr, "log line %d\n", i)
		}
	case "ignore-eof":
		// Keeps running after stdin ends, as a stuck agent would.
		defer time.Sleep(time.Hour)
	case "garbage":
		out.WriteString("starting up...\n")
		out.Flush()
	}
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &msg) != nil || msg.Method == "" {
			continue // responses to its own requests
		}
		if msg.ID == nil {
			continue // notifications
		}
		switch {
		case mode == "silent":
			continue
		case msg.Method == "ask":
			// An agent request to the client, then the answer.
			write(map[string]any{"jsonrpc": "2.0", "id": "perm-1", "method": "session/request_permission",
				"params": map[string]any{"sessionId": "s", "options": []any{
					map[string]any{"optionId": "yes", "kind": "allow_once", "name": "Yes"},
					map[string]any{"optionId": "no", "kind": "reject_once", "name": "No"}}}})
		case msg.Method == "secret":
			write(map[string]any{"jsonrpc": "2.0", "method": "session/update", "params": map[string]any{"token": "canary-secret-123"}})
		case msg.Method == "bad-error":
			write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": "oops"}})
			continue
		}
		write(map[string]any{"jsonrpc": "2.0", "method": "note", "params": map[string]any{"for": msg.Method}})
		write(map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{"method": msg.Method, "params": msg.Params}})
	}
	return 0
}

func startFake(t *testing.T, mode string, opts Options) *Conn {
	t.Helper()
	opts.Command = []string{os.Args[0]}
	opts.Env = append(opts.Env, fakeEnv+"="+mode)
	c, err := Start(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func roundTrip(t *testing.T, c *Conn, method string, d time.Duration) (*Response, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	return c.Call(ctx, method, map[string]any{"n": 1})
}

func TestCallRoundTripAndTranscript(t *testing.T) {
	c := startFake(t, "echo", Options{Grace: time.Minute}) // it exits on EOF: see its status
	r, err := roundTrip(t, c, "hello", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var res struct{ Method string }
	if err := json.Unmarshal(r.Result, &res); err != nil || res.Method != "hello" || r.Kind != KindResponse {
		t.Fatalf("result %s (%v), want the echo of hello", r.Result, err)
	}
	// The notification came before the response: it is kept, before Mark.
	got := c.Received(0)
	if len(got) != 1 || got[0].Method != "note" || r.Mark != 1 {
		t.Errorf("received %v, response mark %d; want the one note before the response", got, r.Mark)
	}
	c.Close()
	ex, _ := c.Exchanges()
	if len(ex) != 2 || ex[0].Op != "hello" || ex[0].Kind != KindStdio || !strings.Contains(ex[0].RequestBody, `"method":"hello"`) ||
		!strings.Contains(ex[0].ResponseBody, `"result"`) || len(ex[0].Frames) != 1 || !strings.HasPrefix(ex[0].Frames[0], "← ") {
		t.Errorf("transcript %+v, want the call with its note, then the process", ex)
	}
	if last := ex[len(ex)-1]; last.Op != "agent process" || !strings.Contains(last.Error, "status 0") {
		t.Errorf("process exchange %+v, want its exit status", last)
	}
	if probs, _ := c.Problems(); len(probs) != 0 {
		t.Errorf("problems %v on a clean exchange", probs)
	}
}

func TestSecretsRedacted(t *testing.T) {
	c := startFake(t, "echo", Options{Redactor: redact.New("canary-secret-123")})
	if _, err := roundTrip(t, c, "secret", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Close()
	ex, _ := c.Exchanges()
	b, _ := json.Marshal(ex)
	if strings.Contains(string(b), "canary-secret-123") {
		t.Errorf("the transcript holds the secret: %s", b)
	}
}

func TestGarbageLineIsAProblem(t *testing.T) {
	c := startFake(t, "garbage", Options{})
	if _, err := roundTrip(t, c, "hello", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	probs, _ := c.Problems()
	if len(probs) != 1 || probs[0].Req != ReqFraming || !strings.Contains(probs[0].Line, "starting up") {
		t.Errorf("problems %v, want the log line under %s", probs, ReqFraming)
	}
}

func TestBadErrorObject(t *testing.T) {
	c := startFake(t, "echo", Options{})
	r, err := roundTrip(t, c, "bad-error", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if r.Error == nil || r.Error.CodeOK {
		t.Errorf("error %+v, want one whose code was not an integer", r.Error)
	}
	probs, _ := c.Problems()
	var reqs []string
	for _, p := range probs {
		reqs = append(reqs, p.Req)
	}
	if strings.Join(reqs, ",") != ReqErrorObject+","+ReqErrorObject {
		t.Errorf("problems %v, want the code and the missing message under %s", probs, ReqErrorObject)
	}
}

func TestSilentAgentTimesOut(t *testing.T) {
	c := startFake(t, "silent", Options{})
	start := time.Now()
	_, err := roundTrip(t, c, "hello", 200*time.Millisecond)
	var te *client.TransportError
	if !errors.As(err, &te) || !te.Timeout() {
		t.Fatalf("error %v, want a transport timeout", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("the call took %s past its 200ms deadline", d)
	}
}

func TestExitedAgent(t *testing.T) {
	c := startFake(t, "exit", Options{})
	_, err := roundTrip(t, c, "hello", time.Minute)
	var te *client.TransportError
	if !errors.As(err, &te) {
		t.Fatalf("error %v, want a transport error", err)
	}
	<-c.Exited()
	c.Close()
	if !strings.Contains(c.Stderr(), "exiting at once") {
		t.Errorf("stderr %q, want the agent's words", c.Stderr())
	}
	ex, _ := c.Exchanges()
	if last := ex[len(ex)-1]; !strings.Contains(last.Error, "exit status 3") {
		t.Errorf("process exchange %+v, want exit status 3", last)
	}
}

func TestOversizeLineSkipped(t *testing.T) {
	c := startFake(t, "flood", Options{MaxMessage: 1 << 20})
	if _, err := roundTrip(t, c, "hello", 20*time.Second); err != nil {
		t.Fatalf("the agent after its long line: %v", err)
	}
	probs, _ := c.Problems()
	if len(probs) != 1 || probs[0].Req != "" || !strings.Contains(probs[0].Message, "limit") {
		t.Errorf("problems %v, want one limit note (no requirement)", probs)
	}
}

func TestOutputBound(t *testing.T) {
	c := startFake(t, "flood", Options{MaxMessage: 1 << 20, MaxOutput: 2 << 20})
	_, err := roundTrip(t, c, "hello", 20*time.Second)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("error %v, want the output bound", err)
	}
}

func TestStderrBounded(t *testing.T) {
	c := startFake(t, "stderr", Options{})
	if _, err := roundTrip(t, c, "hello", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Close()
	s := c.Stderr()
	if len(s) > stderrHead+stderrTail+100 || !strings.Contains(s, "log line 0\n") || !strings.Contains(s, "log line 4999") || !strings.Contains(s, "bytes not shown") {
		t.Errorf("stderr kept %d bytes, want its head and tail with a gap note", len(s))
	}
}

func TestCloseKillsAStuckAgent(t *testing.T) {
	c := startFake(t, "ignore-eof", Options{Grace: 50 * time.Millisecond})
	if _, err := roundTrip(t, c, "hello", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	c.Close()
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Close took %s", d)
	}
	select {
	case <-c.Exited():
	default:
		t.Error("the agent still runs after Close")
	}
}

func TestAgentRequestAnswered(t *testing.T) {
	c := startFake(t, "echo", Options{})
	if _, err := roundTrip(t, c, "ask", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	c.Close()
	ex, _ := c.Exchanges()
	frames := strings.Join(ex[0].Frames, "\n")
	if !strings.Contains(frames, `"optionId":"no"`) || !strings.Contains(frames, `"id":"perm-1"`) {
		t.Errorf("frames %s, want the permission request answered with the reject option", frames)
	}
}

func TestWait(t *testing.T) {
	c := startFake(t, "echo", Options{})
	mark := c.Mark()
	if _, err := roundTrip(t, c, "one", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, next, err := c.Wait(ctx, mark, func(m Message) bool { return m.Method == "note" })
	if err != nil || !strings.Contains(string(m.Params), "one") || next != mark+1 {
		t.Fatalf("Wait = %s, %d, %v", m.Params, next, err)
	}
	short, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	if _, _, err := c.Wait(short, next, func(Message) bool { return true }); !errors.Is(err, ErrNoMessage) {
		t.Errorf("Wait with nothing to come = %v, want ErrNoMessage", err)
	}
}

func TestStartErrors(t *testing.T) {
	if _, err := Start(context.Background(), Options{}); err == nil {
		t.Error("Start without a command succeeded")
	}
	if _, err := Start(context.Background(), Options{Command: []string{"/nonexistent/agent"}}); err == nil || !strings.Contains(err.Error(), "agent") {
		t.Errorf("Start of a missing program = %v", err)
	}
	if _, err := exec.LookPath(os.Args[0]); err != nil {
		t.Skip("this test binary is not runnable by path")
	}
}
