package acpharbor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/suite"
)

// Agents that need authentication (docs/acp-harbor.md; ACP v1,
// "Authentication": agents advertise authMethods in their initialize
// result, and a client that is told "Authentication required" calls
// authenticate with one of them). conform is told which with
// --acp-auth-method; without it, what needs a session is unverified with a
// remedy naming the agent's methods, never failed.

// codeAuthRequired is ACP's "Authentication required" error code.
const codeAuthRequired = -32000

// authMethod is one advertised authentication method.
type authMethod struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Type        string `json:"type"`
}

func (m authMethod) String() string {
	s := m.ID
	if m.Name != "" {
		s += " (" + m.Name
		if m.Description != "" {
			s += ": " + m.Description
		}
		s += ")"
	}
	return s
}

// authMethods reads the authMethods of an initialize result (entries that
// are not objects with a string id are left out).
func authMethods(init map[string]any) []authMethod {
	list, _ := init["authMethods"].([]any)
	var out []authMethod
	for _, e := range list {
		b, _ := json.Marshal(e)
		var m authMethod
		if json.Unmarshal(b, &m) == nil && m.ID != "" {
			out = append(out, m)
		}
	}
	return out
}

func methodList(ms []authMethod) string {
	var s []string
	for _, m := range ms {
		s = append(s, m.String())
	}
	return strings.Join(s, "; ")
}

// authRequired reports whether resp is ACP's "Authentication required":
// code -32000 from an agent that advertises authMethods, or whose message
// says so (-32000 is also JSON-RPC's generic server error).
func authRequired(init map[string]any, resp *acp.Response) bool {
	if resp == nil || resp.Error == nil || !resp.Error.CodeOK || resp.Error.Code != codeAuthRequired {
		return false
	}
	return len(authMethods(init)) > 0 || strings.Contains(strings.ToLower(resp.Error.Message), "auth")
}

// authRemedy tells the user how to let conform authenticate the agent.
func authRemedy(ms []authMethod) string {
	if len(ms) == 0 {
		return "the agent advertises no authMethods, so no ACP client can authenticate it: give it its credentials in its environment (it inherits conform's) or its own configuration (docs/acp-harbor.md, \"Agents that need authentication\")"
	}
	return fmt.Sprintf("run with --acp-auth-method ID (CONFORM_ACP_AUTH_METHOD), ID one of the agent's authMethods: %s; and give the agent what that method needs, such as its API key, in conform's environment, which the agent inherits (docs/acp-harbor.md, \"Agents that need authentication\")", methodList(ms))
}

// needAuth ends the spec unverified when resp (the answer to method) says
// the agent requires authentication.
func (p *peer) needAuth(method string, resp *acp.Response) {
	GinkgoHelper()
	if !authRequired(p.init, resp) {
		return
	}
	why := fmt.Sprintf("the agent requires authentication: %s was answered %s", method, clipS(string(resp.Raw)))
	if m := suite.Env().Config.ACPAuthMethod; m != "" {
		why += " although conform called authenticate with --acp-auth-method " + m
	}
	suite.Unverified(why, authRemedy(authMethods(p.init)))
}

// authenticate calls authenticate with --acp-auth-method, when it is
// given, right after initialize. A refusal leaves the spec unverified: the
// preflight made the same call, so this is an agent that changed its mind.
func (p *peer) authenticate() {
	GinkgoHelper()
	m := suite.Env().Config.ACPAuthMethod
	if m == "" {
		return
	}
	resp := p.call(sdk.AgentMethodAuthenticate, sdk.AuthenticateRequest{MethodId: m})
	if resp.Error != nil {
		suite.Unverified(fmt.Sprintf("authenticate with --acp-auth-method %s was answered %s", m, clipS(string(resp.Raw))), authRemedy(authMethods(p.init)))
	}
}

// preflightAuth is the preflight's part for --acp-auth-method: the method
// must be one the agent advertises, and authenticate with it must succeed
// (else the user's setup is wrong: exit 2 with the agent's answer).
func preflightAuth(ctx context.Context, conn *acp.Conn, init *acp.Response, method string) (msg, hint string) {
	var obj map[string]any
	_ = json.Unmarshal(init.Result, &obj)
	ms := authMethods(obj)
	known := false
	for _, m := range ms {
		known = known || m.ID == method
	}
	if !known {
		if len(ms) == 0 {
			return fmt.Sprintf("--acp-auth-method %s: the agent advertises no authMethods in its initialize result", method),
				"drop --acp-auth-method (CONFORM_ACP_AUTH_METHOD): this agent has nothing to authenticate with"
		}
		return fmt.Sprintf("--acp-auth-method %s: the agent advertises no such authentication method", method),
			"use one of its authMethods: " + methodList(ms)
	}
	resp, err := conn.Call(ctx, sdk.AgentMethodAuthenticate, sdk.AuthenticateRequest{MethodId: method})
	switch {
	case err != nil:
		return fmt.Sprintf("authenticate with --acp-auth-method %s got no answer: %v", method, err), "check that the agent implements authenticate"
	case resp.Error != nil:
		return fmt.Sprintf("authenticate with --acp-auth-method %s was refused: %s", method, clipS(string(resp.Raw))),
			"give the agent what this method needs (such as its API key) in conform's environment, which the agent inherits; its authMethods: " + methodList(ms)
	}
	return "", ""
}
