package check

import (
	"fmt"
	"slices"
	"sort"

	"github.com/harn-conform/conform/internal/client"
)

// ProtocolFamily is the discovery document's protocol_family constant.
const ProtocolFamily = "harn_agents_protocol"

// transportFlags are the capability flags the discovery document defines;
// any other capability key is an extension and may hold any value.
var transportFlags = []string{"rest", "sse", "websocket", "receipts", "replay"}

// Discovery checks GET /v1 (wire-contract ruling 1): object
// protocol_discovery, protocol_family harn_agents_protocol, a current_version
// listed in supported_versions, the version this suite speaks among the
// supported ones, and boolean transport flags in capabilities.
func Discovery(resp *client.Response, m map[string]any, speaks string) error {
	var errs []string
	if m["object"] != "protocol_discovery" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"protocol_discovery\"", showValue(m["object"])))
	}
	if m["protocol_family"] != ProtocolFamily {
		errs = append(errs, fmt.Sprintf("protocol_family = %s, want %q", showValue(m["protocol_family"]), ProtocolFamily))
	}
	current, ok := m["current_version"].(string)
	if !ok || current == "" {
		errs = append(errs, fmt.Sprintf("current_version is %s, want a version string", describe(m["current_version"])))
	}
	var supported []string
	if vs, ok := m["supported_versions"].([]any); !ok || len(vs) == 0 {
		errs = append(errs, fmt.Sprintf("supported_versions is %s, want a non-empty array of strings", showValue(m["supported_versions"])))
	} else {
		for i, v := range vs {
			s, ok := v.(string)
			if !ok {
				errs = append(errs, fmt.Sprintf("supported_versions[%d] is %s, want a string", i, describe(v)))
				continue
			}
			supported = append(supported, s)
		}
	}
	if current != "" && supported != nil && !slices.Contains(supported, current) {
		errs = append(errs, fmt.Sprintf("current_version %q is not in supported_versions %v", current, supported))
	}
	if speaks != "" && supported != nil && !slices.Contains(supported, speaks) {
		errs = append(errs, fmt.Sprintf("supported_versions %v lacks %q, the version this suite checks", supported, speaks))
	}
	caps, ok := m["capabilities"].(map[string]any)
	if !ok {
		errs = append(errs, fmt.Sprintf("capabilities is %s, want an object", describe(m["capabilities"])))
	}
	for _, f := range transportFlags {
		if v, present := caps[f]; present {
			if _, isBool := v.(bool); !isBool {
				errs = append(errs, fmt.Sprintf("capabilities.%s is %s, want a boolean", f, describe(v)))
			}
		}
	}
	return findings(resp, "discovery", errs)
}

// AgentCard checks GET /v1/agent-card against the narrative's HarnAgentCard
// (wire-contract ruling 2): object harn_agent_card; id, name, description
// and protocol_version strings; an a2a_card object; a skills array; and a
// protocol_version the discovery document lists as supported (when known).
// The upstream runner's object "agent_card" shape is not accepted: the two
// cannot both be satisfied and the narrative wins.
func AgentCard(resp *client.Response, m map[string]any, supported []string) error {
	var errs []string
	if m["object"] != "harn_agent_card" {
		errs = append(errs, fmt.Sprintf("object = %s, want \"harn_agent_card\"", showValue(m["object"])))
	}
	for _, f := range []string{"id", "name", "description", "protocol_version"} {
		if s, ok := m[f].(string); !ok || s == "" {
			errs = append(errs, fmt.Sprintf("%s is %s, want a non-empty string", f, describe(m[f])))
		}
	}
	if _, ok := m["a2a_card"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("a2a_card is %s, want the A2A AgentCard object", describe(m["a2a_card"])))
	}
	if _, ok := m["skills"].([]any); !ok {
		errs = append(errs, fmt.Sprintf("skills is %s, want an array", describe(m["skills"])))
	}
	if v, ok := m["protocol_version"].(string); ok && len(supported) > 0 && !slices.Contains(supported, v) {
		errs = append(errs, fmt.Sprintf("protocol_version %q is not among the supported_versions %v of GET /v1", v, supported))
	}
	return findings(resp, "agent card", errs)
}

// A2ACard checks that the nested A2A card carries the A2A AgentCard's core
// fields. Either generation of the A2A interface list is accepted:
// supportedInterfaces (A2A 1.0) or url + preferredTransport (0.3).
func A2ACard(resp *client.Response, card map[string]any) error {
	a, ok := card["a2a_card"].(map[string]any)
	if !ok {
		return fmt.Errorf("%s: a2a_card is %s, want an object", resp, describe(card["a2a_card"]))
	}
	var errs []string
	for _, f := range []string{"name", "description", "version"} {
		if _, ok := a[f].(string); !ok {
			errs = append(errs, fmt.Sprintf("a2a_card.%s is %s, want a string", f, describe(a[f])))
		}
	}
	if _, ok := a["capabilities"].(map[string]any); !ok {
		errs = append(errs, fmt.Sprintf("a2a_card.capabilities is %s, want an object", describe(a["capabilities"])))
	}
	for _, f := range []string{"defaultInputModes", "defaultOutputModes", "skills"} {
		if _, ok := a[f].([]any); !ok {
			errs = append(errs, fmt.Sprintf("a2a_card.%s is %s, want an array", f, describe(a[f])))
		}
	}
	// docs/interpretations.md#a2a-card: either A2A generation's interface
	// list, and security declarations.
	ifaces, v1 := a["supportedInterfaces"].([]any)
	_, url := a["url"].(string)
	switch {
	case !v1 && !url:
		errs = append(errs, "a2a_card names no interface (neither supportedInterfaces nor url)")
	case v1 && len(ifaces) == 0 && !url:
		errs = append(errs, "a2a_card.supportedInterfaces is empty, want at least one interface")
	}
	errs = append(errs, interfaceURLs("supportedInterfaces", a["supportedInterfaces"])...)
	errs = append(errs, interfaceURLs("additionalInterfaces", a["additionalInterfaces"])...)
	schemes, _ := a["securitySchemes"].(map[string]any)
	if len(schemes) == 0 {
		errs = append(errs, fmt.Sprintf("a2a_card.securitySchemes is %s, want the security schemes a client authenticates with (a non-empty object)", describe(a["securitySchemes"])))
	}
	for _, key := range []string{"security", "securityRequirements"} {
		reqs, _ := a[key].([]any)
		for _, r := range reqs {
			m, _ := r.(map[string]any)
			for name := range m {
				if _, ok := schemes[name]; !ok {
					errs = append(errs, fmt.Sprintf("a2a_card.%s names scheme %q, which securitySchemes does not declare", key, name))
				}
			}
		}
	}
	sort.Strings(errs)
	return findings(resp, "agent card", errs)
}

// CardAgrees checks that the agent card's capabilities array and the
// discovery document's capability flags make the same claims about the
// protocol's own transports and levels. Other entries are extensions.
func CardAgrees(resp *client.Response, card, discovery map[string]any) error {
	caps, _ := discovery["capabilities"].(map[string]any)
	listed, ok := card["capabilities"].([]any)
	if !ok {
		return nil // optional on the card
	}
	var errs []string
	onCard := map[string]bool{}
	for _, v := range listed {
		if s, ok := v.(string); ok {
			onCard[s] = true
		}
	}
	for _, f := range transportFlags {
		flag, _ := caps[f].(bool)
		switch {
		case onCard[f] && !flag:
			errs = append(errs, fmt.Sprintf("the card lists %q but GET /v1 does not flag it true", f))
		case flag && !onCard[f] && len(onCard) > 0:
			errs = append(errs, fmt.Sprintf("GET /v1 flags %q true but the card's capabilities omit it", f))
		}
	}
	return findings(resp, "agent card", errs)
}

// UpstreamCardNote says how a card compares with the shape the upstream
// runner expects (object "agent_card" with an interfaces array). No server
// can satisfy both shapes, so this is information for the reader, never a
// verdict (wire-contract ruling 2).
func UpstreamCardNote(card map[string]any) string {
	_, hasInterfaces := card["interfaces"].([]any)
	switch {
	case card["object"] == "agent_card":
		return "agent card: the card uses the upstream runner's shape (object \"agent_card\"); the narrative spec's HarnAgentCard (object \"harn_agent_card\") is what CORE-CARD-001 checks"
	case !hasInterfaces:
		return "agent card: the upstream conformance runner would expect object \"agent_card\" with an interfaces array; this card follows the narrative spec's HarnAgentCard instead, which is what conform checks (informational)"
	}
	return ""
}

// interfaceURLs checks an A2A interface list, when present: an array of
// objects, each with a string url.
func interfaceURLs(name string, v any) []string {
	if v == nil {
		return nil
	}
	list, ok := v.([]any)
	if !ok {
		return []string{fmt.Sprintf("a2a_card.%s is %s, want an array", name, describe(v))}
	}
	var errs []string
	for i, it := range list {
		m, _ := it.(map[string]any)
		if u, _ := m["url"].(string); u == "" {
			errs = append(errs, fmt.Sprintf("a2a_card.%s[%d] has no url", name, i))
		}
	}
	return errs
}
