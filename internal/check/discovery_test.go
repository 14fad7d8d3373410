package check

import (
	"strings"
	"testing"
)

const goodDiscovery = `{"object":"protocol_discovery","protocol_family":"harn_agents_protocol","current_version":"v2",
	"supported_versions":["v1","v2"],"capabilities":{"rest":true,"sse":true,"websocket":false,"x.vendor":"yes"}}`

func TestDiscovery(t *testing.T) {
	if err := Discovery(resp(200, ""), mustObject(t, goodDiscovery), "v1"); err != nil {
		t.Errorf("Discovery(good) = %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"protocol_discovery"`, `"protocol_discovery_resource"`, `object = "protocol_discovery_resource"`},
		{`"harn_agents_protocol"`, `"harn"`, `protocol_family = "harn"`},
		{`["v1","v2"]`, `["v2"]`, `lacks "v1"`},
		{`["v1","v2"]`, `["v1"]`, `current_version "v2" is not in supported_versions`},
		{`["v1","v2"]`, `[]`, "want a non-empty array"},
		{`"sse":true`, `"sse":"yes"`, "capabilities.sse is a string"},
		{`"current_version":"v2"`, `"current_version":2`, "current_version is json.Number"},
	} {
		body := strings.Replace(goodDiscovery, tc.from, tc.to, 1)
		if err := Discovery(resp(200, ""), mustObject(t, body), "v1"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Discovery(%s → %s) = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

const goodCard = `{"id":"card","object":"harn_agent_card","name":"n","description":"d","protocol_version":"v1","skills":[],
	"a2a_card":{"name":"n","description":"d","version":"1","capabilities":{},"defaultInputModes":["text/plain"],
	"defaultOutputModes":["text/plain"],"skills":[],"supportedInterfaces":[{"url":"http://x"}],
	"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},"security":[{"bearer":[]}]}}`

func TestAgentCard(t *testing.T) {
	card := mustObject(t, goodCard)
	if err := AgentCard(resp(200, ""), card, []string{"v1"}); err != nil {
		t.Errorf("AgentCard(good) = %v", err)
	}
	if err := A2ACard(resp(200, ""), card); err != nil {
		t.Errorf("A2ACard(good) = %v", err)
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"harn_agent_card"`, `"agent_card"`, `object = "agent_card", want "harn_agent_card"`},
		{`"skills":[],`, ``, "skills is missing"},
		{`"protocol_version":"v1"`, `"protocol_version":"v0"`, `protocol_version "v0" is not among`},
		{`"description":"d","protocol_version"`, `"protocol_version"`, "description is missing"},
	} {
		body := strings.Replace(goodCard, tc.from, tc.to, 1)
		if err := AgentCard(resp(200, ""), mustObject(t, body), []string{"v1"}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("AgentCard(%s → %s) = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
	noIface := strings.Replace(goodCard, `"supportedInterfaces":[{"url":"http://x"}]`, `"x":1`, 1)
	if err := A2ACard(resp(200, ""), mustObject(t, noIface)); err == nil || !strings.Contains(err.Error(), "names no interface") {
		t.Errorf("A2ACard(no interface) = %v", err)
	}
	legacy := strings.Replace(goodCard, `"supportedInterfaces":[{"url":"http://x"}]`, `"url":"http://x","preferredTransport":"JSONRPC"`, 1)
	if err := A2ACard(resp(200, ""), mustObject(t, legacy)); err != nil {
		t.Errorf("A2ACard(A2A 0.3 url) = %v", err)
	}
	if err := A2ACard(resp(200, ""), mustObject(t, `{"a2a_card":"x"}`)); err == nil {
		t.Error("A2ACard(string) = nil")
	}
	for _, tc := range []struct{ from, to, want string }{
		{`"supportedInterfaces":[{"url":"http://x"}]`, `"supportedInterfaces":[]`, "supportedInterfaces is empty"},
		{`"supportedInterfaces":[{"url":"http://x"}]`, `"supportedInterfaces":[{"protocolBinding":"JSONRPC"}]`, "supportedInterfaces[0] has no url"},
		{`"skills":[],"supportedInterfaces"`, `"skills":[],"additionalInterfaces":{"url":"y"},"supportedInterfaces"`, "additionalInterfaces is an object, want an array"},
		{`"securitySchemes":{"bearer":{"type":"http","scheme":"bearer"}},`, ``, "securitySchemes is missing"},
		{`"security":[{"bearer":[]}]`, `"security":[{"oauth":[]}]`, `names scheme "oauth"`},
	} {
		body := strings.Replace(goodCard, tc.from, tc.to, 1)
		if err := A2ACard(resp(200, ""), mustObject(t, body)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("A2ACard(%s → %s) = %v, want %q", tc.from, tc.to, err, tc.want)
		}
	}
}

func TestCardAgrees(t *testing.T) {
	disc := mustObject(t, goodDiscovery) // rest and sse true, websocket false
	for _, caps := range []string{`["rest","sse","x.vendor"]`, `null`} {
		card := mustObject(t, `{"capabilities":`+caps+`}`)
		if caps == "null" {
			delete(card, "capabilities")
		}
		if err := CardAgrees(resp(200, ""), card, disc); err != nil {
			t.Errorf("CardAgrees(%s) = %v", caps, err)
		}
	}
	for caps, want := range map[string]string{
		`["rest","sse","websocket"]`: `the card lists "websocket" but GET /v1 does not flag it true`,
		`["rest"]`:                   `GET /v1 flags "sse" true but the card's capabilities omit it`,
	} {
		if err := CardAgrees(resp(200, ""), mustObject(t, `{"capabilities":`+caps+`}`), disc); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CardAgrees(%s) = %v, want %q", caps, err, want)
		}
	}
}
