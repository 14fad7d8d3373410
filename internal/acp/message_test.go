package acp

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		line  string
		kind  Kind
		reqs  []string // requirements of the problems, in order
		fatal bool
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`, KindRequest, nil, false},
		{`{"jsonrpc":"2.0","method":"session/update","params":{"a":1}}`, KindNotification, nil, false},
		{`{"jsonrpc":"2.0","id":"x","result":{}}`, KindResponse, nil, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found","data":{"m":1}}}`, KindResponse, nil, false},
		{`  {"jsonrpc":"2.0","id":1,"result":null}  `, KindResponse, nil, false},
		{`{"id":1,"result":{}}`, KindResponse, []string{ReqFraming}, false},
		{`{"jsonrpc":"1.0","id":1,"result":{}}`, KindResponse, []string{ReqFraming}, false},
		{`{"jsonrpc":"2.0","result":{}}`, KindResponse, []string{ReqResponse}, false},
		{`{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"m"}}`, KindResponse, []string{ReqResponse}, false},
		{`{"jsonrpc":"2.0","id":1}`, KindResponse, []string{ReqResponse}, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":"-32601","message":"m"}}`, KindResponse, []string{ReqErrorObject}, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`, KindResponse, []string{ReqErrorObject}, false},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":1}}`, KindResponse, []string{ReqErrorObject}, false},
		{`{"jsonrpc":"2.0","id":1,"error":"boom"}`, KindResponse, []string{ReqErrorObject}, false},
		{`{"jsonrpc":"2.0","method":"x","params":3}`, KindNotification, []string{ReqFraming}, false},
		{`{"jsonrpc":"2.0","id":{},"method":"x"}`, KindRequest, []string{ReqFraming}, false},
		{`{"jsonrpc":"2.0","method":"x","result":{}}`, KindNotification, []string{ReqFraming}, false},
		{`{"jsonrpc":"2.0"}`, KindInvalid, []string{ReqFraming}, false},
		{`{"jsonrpc":"2.0","id":1,"result":{}} trailing`, KindResponse, []string{ReqFraming}, false},
		{"{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":{\"s\":\"\xff\"}}", KindNotification, []string{ReqFraming}, false},
		{`starting agent...`, KindInvalid, []string{ReqFraming}, true},
		{``, KindInvalid, []string{ReqFraming}, true},
		{`[{"jsonrpc":"2.0","method":"x"}]`, KindInvalid, []string{ReqFraming}, true},
		{`null`, KindInvalid, []string{ReqFraming}, true},
		{`{"jsonrpc":"2.0",`, KindInvalid, []string{ReqFraming}, true},
	}
	for _, tc := range tests {
		m, probs, err := Decode([]byte(tc.line))
		if (err != nil) != tc.fatal {
			t.Errorf("Decode(%q) error = %v, want fatal %v", tc.line, err, tc.fatal)
		}
		var reqs []string
		for _, p := range probs {
			reqs = append(reqs, p.Req)
		}
		if !slices.Equal(reqs, tc.reqs) || m.Kind != tc.kind {
			t.Errorf("Decode(%q) = kind %v, problems %v; want kind %v, problems under %v", tc.line, m.Kind, probs, tc.kind, tc.reqs)
		}
	}
}

func TestDecodeKeepsMeaning(t *testing.T) {
	m, _, err := Decode([]byte(`{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`))
	if err != nil || m.IDKey != "7" || m.Error == nil || !m.Error.CodeOK || m.Error.Code != CodeMethodNotFound || m.Error.Message != "Method not found" {
		t.Errorf("Decode = %+v (error %+v), %v", m, m.Error, err)
	}
}

func TestIDKey(t *testing.T) {
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{`1`, "1", true}, {`1.0`, "1", true}, {`1e0`, "1", true}, {`-3`, "-3", true},
		{`"1"`, `"1"`, true}, {`"a\u0062"`, `"ab"`, true}, {`null`, "null", true},
		{`1.5`, "", false}, {`{}`, "", false}, {`true`, "", false}, {``, "", false},
	}
	for _, tc := range tests {
		got, err := IDKey(json.RawMessage(tc.raw))
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("IDKey(%s) = %q, %v; want %q (ok %v)", tc.raw, got, err, tc.want, tc.ok)
		}
	}
}

// The embedded schema is the SDK's, of the version go.mod pins.
func TestSchemaMatchesSDK(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Version}}", "github.com/coder/acp-go-sdk").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/coder/acp-go-sdk: %v", err)
	}
	if version := strings.TrimSpace(string(out)); version != SchemaVersion {
		t.Fatalf("go.mod pins acp-go-sdk %q, the embedded schema is from %s: copy the new schema/schema.json and update SchemaVersion", version, SchemaVersion)
	}
	dir := sdkDir(t)
	b, err := os.ReadFile(filepath.Join(dir, "schema", "schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != string(SchemaJSON()) {
		t.Errorf("internal/acp/acp.schema.json differs from %s/schema/schema.json", dir)
	}
	// The unstable schema adds exactly unstableMembers to the objects
	// ACP-EXT-001 compares.
	ub, err := os.ReadFile(filepath.Join(dir, "schema", "schema.unstable.json"))
	if err != nil {
		t.Fatal(err)
	}
	var stable, unstable struct {
		Defs map[string]struct {
			Properties map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &stable); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(ub, &unstable); err != nil {
		t.Fatal(err)
	}
	for _, def := range capabilityDefs {
		var extra []string
		for p := range unstable.Defs[def].Properties {
			if _, ok := stable.Defs[def].Properties[p]; !ok {
				extra = append(extra, p)
			}
		}
		slices.Sort(extra)
		if want := unstableMembers[def]; !slices.Equal(extra, want) {
			t.Errorf("%s: the unstable schema adds %v, unstableMembers says %v", def, extra, want)
		}
	}
}

// sdkDir is the module directory of the pinned acp-go-sdk.
func sdkDir(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/coder/acp-go-sdk").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/coder/acp-go-sdk: %v", err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		t.Fatal("the acp-go-sdk module is not downloaded (go mod download)")
	}
	return dir
}

func TestValidate(t *testing.T) {
	tests := []struct {
		def, doc string
		valid    bool
	}{
		{"InitializeResponse", `{"protocolVersion":1,"agentCapabilities":{"loadSession":false},"authMethods":[]}`, true},
		{"InitializeResponse", `{"protocolVersion":"1"}`, false},
		{"NewSessionResponse", `{"sessionId":"s1"}`, true},
		{"NewSessionResponse", `{"sessionId":"s1","modes":"none"}`, false},
		{"PromptResponse", `{"stopReason":"end_turn"}`, true},
		{"PromptResponse", `{"stopReason":"done"}`, false},
		{"SessionNotification", `{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}`, true},
		{"SessionNotification", `{"sessionId":"s","update":{"type":"custom"}}`, false},
	}
	for _, tc := range tests {
		found, err := Validate(tc.def, json.RawMessage(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		if (len(found) == 0) != tc.valid {
			t.Errorf("Validate(%s, %s) = %v, want valid %v", tc.def, tc.doc, found, tc.valid)
		}
	}
	if _, err := Validate("NoSuchDefinition", json.RawMessage(`{}`)); err == nil {
		t.Error("Validate of an unknown definition succeeded")
	}
}

func TestCustomRootMembers(t *testing.T) {
	var res map[string]any
	_ = json.Unmarshal([]byte(`{"protocolVersion":1,"harbor":{},"_meta":{"x":1},"agentCapabilities":{"loadSession":true,"nes":{},"harbor":true,
		"_meta":{"agent.harbor":{}},"promptCapabilities":{"image":true,"video":true}}}`), &res)
	got, err := CustomRootMembers(res)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"agentCapabilities.harbor", "agentCapabilities.promptCapabilities.video", "harbor"}; !slices.Equal(got, want) {
		t.Errorf("CustomRootMembers = %v, want %v", got, want)
	}
}
