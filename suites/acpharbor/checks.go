package acpharbor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/harbor"
)

// The checks of the base protocol: plain functions of what came back.

// schemaCheck validates a response's result against an ACP schema
// definition; an error response fails it too.
func schemaCheck(method, def string, r *acp.Response) error {
	if r.Error != nil {
		return fmt.Errorf("%s was answered with an error, not a result: %v", method, r.Error)
	}
	if len(r.Result) == 0 {
		return fmt.Errorf("%s was answered without a result", method)
	}
	found, err := acp.Validate(def, r.Result)
	if err != nil {
		return err
	}
	if len(found) > 0 {
		return fmt.Errorf("%s result does not match ACP's %s: %s (result %s)", method, def, strings.Join(first(found, 4), "; "), clipS(string(r.Result)))
	}
	return nil
}

// checkInitialize is ACP-INIT-001.
func checkInitialize(r *acp.Response) error {
	if err := schemaCheck("initialize", "InitializeResponse", r); err != nil {
		return err
	}
	var res struct {
		ProtocolVersion   *json.RawMessage `json:"protocolVersion"`
		AgentCapabilities *json.RawMessage `json:"agentCapabilities"`
	}
	_ = json.Unmarshal(r.Result, &res)
	var missing []string
	if res.ProtocolVersion == nil {
		missing = append(missing, "protocolVersion")
	}
	if res.AgentCapabilities == nil {
		// The schema defaults it; the prose says the agent responds with
		// "the capabilities it supports".
		missing = append(missing, "agentCapabilities")
	}
	if len(missing) > 0 {
		return fmt.Errorf("the initialize result has no %s", strings.Join(missing, " and no "))
	}
	return nil
}

// checkAgentInfo is ACP-INIT-003.
func checkAgentInfo(result map[string]any) error {
	info, ok := result["agentInfo"].(map[string]any)
	if !ok {
		return errors.New("the initialize result has no agentInfo (name and version of the agent)")
	}
	return harbor.Fields("agentInfo", info, map[string]string{"name": "nonempty", "version": "nonempty"})
}

// checkNegotiated is ACP-INIT-002: the answer to a request for a version
// no agent supports is the agent's latest version, below the request.
func checkNegotiated(requested int, r *acp.Response) error {
	if r.Error != nil {
		return fmt.Errorf("initialize with protocol version %d was answered with an error (%v); the agent must answer with the latest version it supports", requested, r.Error)
	}
	var res struct {
		ProtocolVersion any `json:"protocolVersion"`
	}
	if err := json.Unmarshal(r.Result, &res); err != nil {
		return fmt.Errorf("initialize result: %v", err)
	}
	v, ok := harbor.Int(res.ProtocolVersion)
	switch {
	case !ok:
		return fmt.Errorf("protocolVersion is %s, want an integer", harbor.Raw(res.ProtocolVersion))
	case v == int64(requested):
		return fmt.Errorf("the agent answered protocolVersion %d, echoing a version it cannot support, instead of the latest version it supports", v)
	case v < 1 || v > int64(requested):
		return fmt.Errorf("protocolVersion is %d, want the agent's latest version (1 to %d)", v, requested-1)
	}
	return nil
}

// checkCustomRoot is ACP-EXT-001.
func checkCustomRoot(result map[string]any) error {
	custom, err := acp.CustomRootMembers(result)
	if err != nil {
		return err
	}
	if len(custom) > 0 {
		return fmt.Errorf("custom members at the root of ACP types (custom data belongs under _meta): %s", strings.Join(custom, ", "))
	}
	return nil
}

// stopReason reads a prompt response's stop reason ("" when none).
func stopReason(r *acp.Response) string {
	var res struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(r.Result, &res)
	return res.StopReason
}

// updatesFor lists the non-Harbor session/update notifications for a
// session among msgs.
func updatesFor(session string, msgs []acp.Message) []acp.Message {
	var out []acp.Message
	for _, m := range msgs {
		if isUpdateFor(session)(m) {
			out = append(out, m)
		}
	}
	return out
}

func isUpdateFor(session string) func(acp.Message) bool {
	return func(m acp.Message) bool {
		if m.Method != "session/update" || harbor.IsHarborUpdate(m) {
			return false
		}
		var n struct {
			SessionID string `json:"sessionId"`
		}
		_ = json.Unmarshal(m.Params, &n)
		return n.SessionID == session
	}
}

// updateKinds names the update kinds of a list, for messages.
func updateKinds(msgs []acp.Message) string {
	var kinds []string
	for _, m := range msgs {
		var n struct {
			Update struct {
				SessionUpdate string `json:"sessionUpdate"`
			} `json:"update"`
		}
		_ = json.Unmarshal(m.Params, &n)
		kinds = append(kinds, n.Update.SessionUpdate)
	}
	return strings.Join(kinds, ", ")
}
