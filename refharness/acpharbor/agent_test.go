package acpharbor

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/acp-go-sdk"
)

// sdkClient is the SDK's own client, as an editor would use it: the
// reference agent must work with an off-the-shelf ACP client, which sees
// its standard updates and, for the Harbor ones, an update it cannot
// decode (and ignores).
type sdkClient struct {
	mu      sync.Mutex
	updates []acp.SessionNotification
	more    chan struct{} // signalled after each update
}

func (c *sdkClient) SessionUpdate(_ context.Context, n acp.SessionNotification) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updates = append(c.updates, n)
	if c.more != nil {
		select {
		case c.more <- struct{}{}:
		default:
		}
	}
	return nil
}

// waitUpdates waits until the client has handled n updates: the SDK hands
// notifications to the client on its own goroutine, so a turn's response
// can arrive before the last of its updates is handled.
func (c *sdkClient) waitUpdates(ctx context.Context, n int) {
	for {
		c.mu.Lock()
		have := len(c.updates)
		c.mu.Unlock()
		if have >= n {
			return
		}
		select {
		case <-c.more:
		case <-ctx.Done():
			return
		}
	}
}

func (c *sdkClient) RequestPermission(context.Context, acp.RequestPermissionRequest) (acp.RequestPermissionResponse, error) {
	return acp.RequestPermissionResponse{Outcome: acp.NewRequestPermissionOutcomeCancelled()}, nil
}

func (c *sdkClient) ReadTextFile(context.Context, acp.ReadTextFileRequest) (acp.ReadTextFileResponse, error) {
	return acp.ReadTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsReadTextFile)
}

func (c *sdkClient) WriteTextFile(context.Context, acp.WriteTextFileRequest) (acp.WriteTextFileResponse, error) {
	return acp.WriteTextFileResponse{}, acp.NewMethodNotFound(acp.ClientMethodFsWriteTextFile)
}

func (c *sdkClient) CreateTerminal(context.Context, acp.CreateTerminalRequest) (acp.CreateTerminalResponse, error) {
	return acp.CreateTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalCreate)
}

func (c *sdkClient) KillTerminal(context.Context, acp.KillTerminalRequest) (acp.KillTerminalResponse, error) {
	return acp.KillTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalKill)
}

func (c *sdkClient) TerminalOutput(context.Context, acp.TerminalOutputRequest) (acp.TerminalOutputResponse, error) {
	return acp.TerminalOutputResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalOutput)
}

func (c *sdkClient) ReleaseTerminal(context.Context, acp.ReleaseTerminalRequest) (acp.ReleaseTerminalResponse, error) {
	return acp.ReleaseTerminalResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalRelease)
}

func (c *sdkClient) WaitForTerminalExit(context.Context, acp.WaitForTerminalExitRequest) (acp.WaitForTerminalExitResponse, error) {
	return acp.WaitForTerminalExitResponse{}, acp.NewMethodNotFound(acp.ClientMethodTerminalWaitForExit)
}

// serveOverPipes serves the reference agent in this process over pipes:
// w writes what the agent reads, r reads what it writes. The test's end
// closes w and waits for the agent.
func serveOverPipes(t *testing.T, opts Options) (w *io.PipeWriter, r *io.PipeReader) {
	t.Helper()
	toAgent, fromClient := io.Pipe()
	toClient, fromAgent := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, toAgent, fromAgent, io.Discard, opts)
		fromAgent.Close()
	}()
	t.Cleanup(func() {
		fromClient.Close()
		cancel()
		<-done
	})
	return fromClient, toClient
}

// connect serves the reference agent in this process and connects the
// SDK's client to it over pipes.
func connect(t *testing.T, opts Options) (*acp.ClientSideConnection, *sdkClient) {
	t.Helper()
	w, r := serveOverPipes(t, opts)
	cl := &sdkClient{more: make(chan struct{}, 1)}
	// No SetLogger: it races with the SDK's reader goroutine (agent.go).
	return acp.NewClientSideConnection(cl, w, r), cl
}

func TestReferenceWithTheSDKClient(t *testing.T) {
	conn, cl := connect(t, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
	if err != nil {
		t.Fatal(err)
	}
	if init.ProtocolVersion != acp.ProtocolVersionNumber || init.AgentCapabilities.Meta["agent.harbor"] == nil || init.AgentInfo == nil {
		t.Fatalf("initialize = %+v, want version 1, the Harbor bundle and agentInfo", init)
	}
	sess, err := conn.NewSession(ctx, acp.NewSessionRequest{Cwd: "/tmp", McpServers: []acp.McpServer{}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := conn.Prompt(ctx, acp.PromptRequest{SessionId: sess.SessionId, Prompt: []acp.ContentBlock{acp.TextBlock("run `printf 'a\\nERROR b\\n' | grep ERROR | wc -l`")}})
	if err != nil || resp.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt = %+v, %v", resp, err)
	}
	cl.waitUpdates(ctx, 4)
	cl.mu.Lock()
	var kinds []string
	var output string
	for _, u := range cl.updates {
		switch {
		case u.Update.AgentMessageChunk != nil:
			kinds = append(kinds, "message")
		case u.Update.ToolCall != nil:
			kinds = append(kinds, "tool_call")
		case u.Update.ToolCallUpdate != nil:
			kinds = append(kinds, "tool_call_update")
			for _, c := range u.Update.ToolCallUpdate.Content {
				if c.Content != nil && c.Content.Content.Text != nil {
					output = c.Content.Content.Text.Text
				}
			}
		}
	}
	cl.mu.Unlock()
	if strings.Join(kinds, ",") != "message,tool_call,tool_call_update,message" || output != "1\n" {
		t.Errorf("updates the SDK client decoded: %v (tool output %q); want the turn's standard updates and the pipeline's output 1", kinds, output)
	}
	raw, err := conn.CallExtension(ctx, "_ah/snapshot_create", map[string]any{"sessionId": sess.SessionId, "label": "x"})
	if err != nil {
		t.Fatal(err)
	}
	var snap struct {
		Snapshot struct {
			ID, Label, Provider string
		}
	}
	if err := json.Unmarshal(raw, &snap); err != nil || snap.Snapshot.ID == "" || snap.Snapshot.Label != "x" || snap.Snapshot.Provider != provider {
		t.Errorf("_ah/snapshot_create = %s (%v)", raw, err)
	}
	if _, err := conn.CallExtension(ctx, "_other/method", nil); err == nil || !strings.Contains(err.Error(), "-32601") {
		t.Errorf("an unknown extension = %v, want Method not found", err)
	}
}

func TestVariantsAdvertise(t *testing.T) {
	tests := []struct {
		v    Variant
		meta string // the _meta keys, joined
	}{
		{"", "agent.harbor"},
		{VariantNestedMeta, "agent"},
		{VariantGateAlias, "agent.harbor,agentHarborSnapshots"},
		{VariantNoHarbor, ""},
	}
	for _, tc := range tests {
		conn, _ := connect(t, Options{Variant: tc.v})
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		init, err := conn.Initialize(ctx, acp.InitializeRequest{ProtocolVersion: acp.ProtocolVersionNumber})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for k := range init.AgentCapabilities.Meta {
			keys = append(keys, k)
		}
		sortStrings(keys)
		if strings.Join(keys, ",") != tc.meta {
			t.Errorf("variant %q: _meta keys %v, want %s", tc.v, keys, tc.meta)
		}
	}
}

func sortStrings(s []string) {
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
}

func TestRunPipeline(t *testing.T) {
	tests := []struct {
		line, out string
		steps     []int // exit codes
	}{
		{`printf 'alpha\nERROR beta\nERROR gamma\n' | grep ERROR | wc -l`, "2\n", []int{0, 0, 0}},
		{`echo hello world | cat`, "hello world\n", []int{0, 0}},
		{`printf 'b\na\nc\n' | sort | head -n 2`, "a\nb\n", []int{0, 0, 0}},
		{`echo x | grep nothing`, "", []int{0, 1}},
		{`rm -rf / | cat`, "", []int{127, 0}},
	}
	for _, tc := range tests {
		steps, out := runPipeline(tc.line)
		var codes []int
		for _, s := range steps {
			codes = append(codes, s.exit)
		}
		if string(out) != tc.out || !slices.Equal(codes, tc.steps) {
			t.Errorf("runPipeline(%q) = %q, exits %v; want %q, %v", tc.line, out, codes, tc.out, tc.steps)
		}
	}
	if got := pipelineIn("run `ls` then `a | b` and `c | d`"); got != "a | b" {
		t.Errorf("pipelineIn = %q, want the first span with a pipe", got)
	}
	if a, r := lineCounts("a\nb\n", "a\nc\nd\n"); a != 2 || r != 1 {
		t.Errorf("lineCounts = +%d -%d, want +2 -1", a, r)
	}
}

func TestMainFlags(t *testing.T) {
	var out, errb strings.Builder
	// Every fault with its requirements, every variant with what it does.
	if code := Main(context.Background(), []string{"--list-faults"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Errorf("--list-faults = %d, %q", code, out.String())
	}
	for _, d := range FaultDecls() {
		if !strings.Contains(out.String(), d.Name) || !strings.Contains(out.String(), d.Own()[0]) {
			t.Errorf("--list-faults does not show %s with %s:\n%s", d.Name, d.Own()[0], out.String())
		}
	}
	out.Reset()
	if code := Main(context.Background(), []string{"--list-variants"}, strings.NewReader(""), &out, &errb); code != 0 || !strings.Contains(out.String(), string(VariantNestedMeta)) || !strings.Contains(out.String(), "_meta.agent.harbor") {
		t.Errorf("--list-variants = %d, %q", code, out.String())
	}
	if code := Main(context.Background(), []string{"--fault", "no-such"}, strings.NewReader(""), &out, &errb); code != 2 || !strings.Contains(errb.String(), "no-such") {
		t.Errorf("--fault no-such = %d, %q", code, errb.String())
	}
	if code := Main(context.Background(), []string{"--variant", "odd"}, strings.NewReader(""), &out, &errb); code != 2 {
		t.Errorf("--variant odd = %d", code)
	}
	// An agent whose stdin ends at once ends with exit 0.
	out.Reset()
	if code := Main(context.Background(), nil, strings.NewReader(""), &out, &errb); code != 0 || out.Len() != 0 {
		t.Errorf("serve with empty stdin = %d, stdout %q", code, out.String())
	}
}

// raw serves the reference agent in this process and speaks to it line by
// line: send writes one message, lines receives each line it writes.
func raw(t *testing.T, opts Options) (send func(string), lines <-chan string) {
	t.Helper()
	w, r := serveOverPipes(t, opts)
	out := make(chan string, 1024)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			out <- sc.Text()
		}
	}()
	return func(line string) {
		if _, err := io.WriteString(w, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}, out
}

// until reads lines up to the answer to request id, returning them all.
func until(t *testing.T, lines <-chan string, id int) []string {
	t.Helper()
	var got []string
	timeout := time.After(30 * time.Second) // a hang guard
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the agent ended before answering request %d: %v", id, got)
			}
			got = append(got, l)
			var m struct {
				ID     *int            `json:"id"`
				Method string          `json:"method"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(l), &m) == nil && m.ID != nil && *m.ID == id && m.Method == "" {
				return got
			}
		case <-timeout:
			t.Fatalf("no answer to request %d: %v", id, got)
		}
	}
}

// Harbor notifications (docs/interpretations.md, ah-notification-forms):
// _ah/… extension notifications by default, the text's custom
// session/update only to a client that asks for it in its capabilities'
// _meta, and to every client with the harbor-updates-unasked fault. Every
// turn ends with an automatic snapshot, so even a plain turn announces
// one.
func TestHarborNotificationForms(t *testing.T) {
	ask := `{"agent.harbor":{"notifications":{"version":1,"customSessionUpdate":true}}}`
	for _, tc := range []struct {
		name, meta string
		faults     []Fault
		want       string // how harbor/snapshot_created travels
	}{
		{"default", `{}`, nil, `"method":"_ah/snapshot_created"`},
		{"asked", ask, nil, `"customType":"harbor/snapshot_created"`},
		{"asked, nested", `{"agent":{"harbor":{"notifications":{"customSessionUpdate":true}}}}`, nil, `"customType":"harbor/snapshot_created"`},
		{"unasked, with the fault", `{}`, []Fault{FaultHarborUpdatesUnasked}, `"customType":"harbor/snapshot_created"`},
	} {
		send, lines := raw(t, Options{Faults: tc.faults})
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{"_meta":` + tc.meta + `}}}`)
		until(t, lines, 1)
		send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		until(t, lines, 2)
		send(`{"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":"sess-0001","prompt":[{"type":"text","text":"Hello, agent!"}]}}`)
		got := strings.Join(until(t, lines, 3), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("%s: the turn's lines hold no %s:\n%s", tc.name, tc.want, got)
		}
		if tc.want != `"method":"_ah/snapshot_created"` && strings.Contains(got, `"method":"_ah/`) {
			t.Errorf("%s: an _ah/ notification besides the asked-for form:\n%s", tc.name, got)
		}
	}
}

// The auth-required variant: authMethods advertised, session/new and
// _ah/session/new refused with Authentication required until authenticate
// succeeds, which needs the token.
func TestAuthRequiredVariant(t *testing.T) {
	for _, tc := range []struct {
		name, token, method string
		authed              bool
	}{
		{"no token", "", AuthMethodID, false},
		{"another method", "t", "oauth", false},
		{"the method and its token", "t", AuthMethodID, true},
	} {
		send, lines := raw(t, Options{Variant: VariantAuthRequired, Token: tc.token})
		send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}`)
		if init := strings.Join(until(t, lines, 1), "\n"); !strings.Contains(init, `"authMethods":[{"description"`) || !strings.Contains(init, AuthMethodID) {
			t.Fatalf("initialize: %s, want authMethods with %s", init, AuthMethodID)
		}
		send(`{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		if r := until(t, lines, 2); !strings.Contains(r[len(r)-1], `"code":-32000`) {
			t.Errorf("%s: session/new before authenticate = %s, want -32000", tc.name, r[len(r)-1])
		}
		send(`{"jsonrpc":"2.0","id":3,"method":"authenticate","params":{"methodId":"` + tc.method + `"}}`)
		auth := until(t, lines, 3)
		if ok := !strings.Contains(auth[len(auth)-1], `"error"`); ok != tc.authed {
			t.Errorf("%s: authenticate = %s, want success %v", tc.name, auth[len(auth)-1], tc.authed)
		}
		send(`{"jsonrpc":"2.0","id":4,"method":"_ah/session/new","params":{"agents":[{"model":{"id":"m"}}]}}`)
		send(`{"jsonrpc":"2.0","id":5,"method":"session/new","params":{"cwd":"/tmp","mcpServers":[]}}`)
		r := until(t, lines, 5)
		if ok := !strings.Contains(strings.Join(r, "\n"), `"code":-32000`); ok != tc.authed {
			t.Errorf("%s: after authenticate, _ah/session/new and session/new = %v, want success %v", tc.name, r, tc.authed)
		}
	}
}
