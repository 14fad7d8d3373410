package acpharbor

import (
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

// connect serves the reference agent in this process and connects the
// SDK's client to it over pipes.
func connect(t *testing.T, opts Options) (*acp.ClientSideConnection, *sdkClient) {
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
	cl := &sdkClient{more: make(chan struct{}, 1)}
	// No SetLogger: it races with the SDK's reader goroutine (agent.go).
	conn := acp.NewClientSideConnection(cl, fromClient, toClient)
	t.Cleanup(func() {
		fromClient.Close()
		cancel()
		<-done
	})
	return conn, cl
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
