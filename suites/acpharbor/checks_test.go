package acpharbor

import (
	"testing"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/harbor"
)

func resp(t *testing.T, line string) *acp.Response {
	t.Helper()
	m, _, err := acp.Decode([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	return &acp.Response{Message: m}
}

func TestCheckInitialize(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1,"agentCapabilities":{},"authMethods":[]}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1","agentCapabilities":{}}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"no"}}`, false},
	}
	for _, tc := range tests {
		if err := checkInitialize(resp(t, tc.line)); (err == nil) != tc.ok {
			t.Errorf("checkInitialize(%s) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}

func TestCheckNegotiated(t *testing.T) {
	tests := []struct {
		line string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":1}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":2}}`, true},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":65535}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":0}}`, false},
		{`{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1"}}`, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"unsupported version"}}`, false},
	}
	for _, tc := range tests {
		if err := checkNegotiated(65535, resp(t, tc.line)); (err == nil) != tc.ok {
			t.Errorf("checkNegotiated(%s) = %v, want ok %v", tc.line, err, tc.ok)
		}
	}
}

func TestCheckAgentInfoAndCustomRoot(t *testing.T) {
	m, _ := harbor.Object([]byte(`{"protocolVersion":1,"agentInfo":{"name":"a","version":"1"},"agentCapabilities":{"_meta":{"agent.harbor":{}}}}`))
	if err := checkAgentInfo(m); err != nil {
		t.Errorf("checkAgentInfo = %v", err)
	}
	if err := checkCustomRoot(m); err != nil {
		t.Errorf("checkCustomRoot = %v", err)
	}
	m, _ = harbor.Object([]byte(`{"protocolVersion":1,"agentCapabilities":{"agent.harbor":{}}}`))
	if checkAgentInfo(m) == nil || checkCustomRoot(m) == nil {
		t.Error("no agentInfo and a bundle at agentCapabilities' root passed")
	}
}

func TestCheckPipelineList(t *testing.T) {
	res, _ := harbor.Object([]byte(`{"pipelines":[{"pipelineId":"p","steps":[{"stepId":"p:1","command":"a","stdoutBytes":1,"stderrBytes":0},{"stepId":"p:2","command":"b","stdoutBytes":0,"stderrBytes":0}]}]}`))
	if err := checkPipelineList(res, "p", []string{"p:1", "p:2"}); err != nil {
		t.Errorf("checkPipelineList = %v", err)
	}
	if checkPipelineList(res, "p", []string{"p:3"}) == nil || checkPipelineList(res, "q", nil) == nil {
		t.Error("a missing step or pipeline passed")
	}
}
