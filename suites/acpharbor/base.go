package acpharbor

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
	. "github.com/onsi/ginkgo/v2"

	"github.com/harn-conform/conform/internal/acp"
	"github.com/harn-conform/conform/internal/harbor"
	"github.com/harn-conform/conform/internal/suite"
)

// basePrompt is the turn the base specs run: something any agent answers
// without tools.
const basePrompt = "This is a conformance check of the Agent Client Protocol. Reply with the single word: ready. Do not use any tool."

// holdPrompt is the turn the cancellation spec cancels: the reference
// agent holds it open (refharness/acpharbor.HoldWord); a real agent is
// still working on it when the cancel arrives.
const holdPrompt = "conform:hold — This is a conformance check of cancellation: take your time, list the files of the working directory and describe each one in detail. The client will cancel this turn."

// unknownMethod and unknownNotice are custom names no agent implements
// (the .invalid domain is reserved): extension names, so sending them is a
// valid ACP message.
const (
	unknownMethod = "_conform.invalid/probe"
	unknownNotice = "_conform.invalid/notice"
)

var _ = Describe("ACP base protocol", func() {
	It("answers initialize with the chosen version, its capabilities and who it is",
		suite.Req("ACP-INIT-001", "ACP-INIT-003", "ACP-EXT-001"), func(ctx SpecContext) {
			p := start(ctx)
			resp := p.call(sdk.AgentMethodInitialize, initializeParams(sdk.ProtocolVersionNumber), "ACP-INIT-001")
			suite.Check("ACP-INIT-001", checkInitialize(resp))
			obj, err := harbor.Object(resp.Result)
			if err != nil {
				suite.Stop("ACP-INIT-001")
			}
			suite.Should("ACP-INIT-003", checkAgentInfo(obj))
			suite.Check("ACP-EXT-001", checkCustomRoot(obj))
		})

	It("answers a version it does not support with the latest one it does", suite.Req("ACP-INIT-002"), func(ctx SpecContext) {
		p := start(ctx)
		const unsupported = 65535 // the schema's largest version (uint16)
		resp := p.call(sdk.AgentMethodInitialize, initializeParams(unsupported), "ACP-INIT-002")
		suite.Check("ACP-INIT-002", checkNegotiated(unsupported, resp))
	})

	It("writes only JSON-RPC 2.0 messages on stdout, answering each request by its id", suite.Req("ACP-RPC-001", "ACP-RPC-002", "ACP-RPC-003"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		p.mustSession()
		// A custom request no agent knows: its answer is most agents'
		// only error response, the error object's material. Whether it is
		// answered at all is ACP-EXT-002's to judge.
		pending, err := p.conn.Send(unknownMethod, map[string]any{"conform": "probe"})
		suite.Transport(err)
		p.sync()
		wctx, cancel := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Request)
		probe, _ := pending.Wait(wctx)
		cancel()
		probs, _ := p.conn.Problems()
		p.wireFrom = len(probs)
		byReq := map[string][]string{}
		for _, pr := range probs {
			byReq[pr.Req] = append(byReq[pr.Req], pr.String())
		}
		for _, r := range []string{reqFraming, reqResponse, reqErrorObj} {
			if len(byReq[r]) > 0 {
				suite.Check(r, fmt.Errorf("%d line(s): %s", len(byReq[r]), strings.Join(first(byReq[r], 3), "; ")))
			}
		}
		if (probe == nil || probe.Error == nil) && len(byReq[reqErrorObj]) == 0 {
			suite.NothingToCheck(reqErrorObj, "the agent sent no error response in this spec (it did not answer "+unknownMethod+" with an error)",
				"answer unknown methods with a JSON-RPC error (Method not found) so the error object can be checked")
		}
	})

	It("answers an unknown custom request with Method not found and ignores an unknown custom notification",
		suite.Req("ACP-EXT-002", "ACP-EXT-003", "ACP-EXT-004"), func(ctx SpecContext) {
			p := start(ctx)
			p.initialize()
			probe, err := p.conn.Send(unknownMethod, map[string]any{"conform": "probe"})
			suite.Transport(err, "ACP-EXT-002")
			// A request sent after it: once that is answered, the agent
			// has read the custom one too.
			p.sync()
			wctx, cancel := context.WithTimeout(ctx, suite.Env().Config.Timeouts.Request)
			resp, err := probe.Wait(wctx)
			cancel()
			if err != nil {
				suite.CheckBlocks("ACP-EXT-002", fmt.Errorf("the agent answered session/new, sent after the custom request %s, but not the custom request itself within --request-timeout (%s)",
					unknownMethod, suite.Env().Config.Timeouts.Request), "ACP-EXT-003")
			} else if resp.Error == nil || !resp.Error.CodeOK || resp.Error.Code != acp.CodeMethodNotFound {
				suite.Should("ACP-EXT-003", fmt.Errorf("%s was answered with %s, want the Method not found error (-32601)", unknownMethod, clipS(string(resp.Raw))))
			}
			probs, _ := p.conn.Problems()
			before := len(probs)
			suite.Transport(p.conn.Notify(unknownNotice, map[string]any{"conform": "notice"}), "ACP-EXT-004")
			p.sync()
			probs, _ = p.conn.Problems()
			for _, pr := range probs[before:] {
				if pr.Req == reqResponse {
					suite.Should("ACP-EXT-004", fmt.Errorf("after the custom notification %s the agent sent a response to no request (an answer to the notification?): %s", unknownNotice, pr))
					break
				}
			}
		})

	It("opens sessions, each with an id of its own", suite.Req("ACP-SESS-001", "ACP-SESS-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		a, ra := p.newSession("ACP-SESS-001")
		okA := suite.Check("ACP-SESS-001", schemaCheck("session/new", "NewSessionResponse", ra))
		b, rb := p.newSession("ACP-SESS-001")
		if okA {
			suite.Check("ACP-SESS-001", schemaCheck("session/new", "NewSessionResponse", rb))
		}
		if a == "" || b == "" {
			suite.Stop("ACP-SESS-001")
		}
		if a == b {
			suite.Check("ACP-SESS-002", fmt.Errorf("two session/new calls both got session id %q", a))
		}
	})

	It("runs a prompt turn, streaming session/update before its stop reason", suite.Req("ACP-PROMPT-001", "ACP-UPD-001", "ACP-UPD-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		sid := p.mustSession()
		mark := p.conn.Mark()
		resp := p.prompt(sid, basePrompt, "ACP-PROMPT-001")
		suite.Check("ACP-PROMPT-001", schemaCheck("session/prompt", "PromptResponse", resp))
		p.sync()
		any := false
		for _, m := range p.conn.Received(mark) {
			any = any || (m.Method == "session/update" && !harbor.IsHarborUpdate(m))
		}
		if !any {
			suite.NothingToCheck("ACP-UPD-001", "the turn sent no session/update notification",
				"report the turn's output (agent_message_chunk) with session/update")
		} else {
			suite.Check("ACP-UPD-001", p.updateProblems(mark))
		}
		if late := updatesFor(sid, p.conn.Received(resp.Mark)); len(late) > 0 {
			suite.Should("ACP-UPD-002", fmt.Errorf("%d session/update notification(s) for the session came after the turn's response (%s)", len(late), updateKinds(late)))
		}
	})

	It("ends a cancelled turn with the stop reason cancelled, after its last update", suite.Req("ACP-CANCEL-001", "ACP-CANCEL-002"), func(ctx SpecContext) {
		p := start(ctx)
		p.initialize()
		sid := p.mustSession()
		env := suite.Env()
		mark := p.conn.Mark()
		pending, err := p.conn.Send(sdk.AgentMethodSessionPrompt, sdk.PromptRequest{SessionId: sdk.SessionId(sid), Prompt: []sdk.ContentBlock{sdk.TextBlock(holdPrompt)}})
		suite.Transport(err, "ACP-CANCEL-001")
		// Cancel once the turn is under way: at its first update, or after
		// the stream timeout if it sends none.
		wctx, cancel := context.WithTimeout(ctx, env.Config.Timeouts.Stream)
		_, _, _ = p.conn.Wait(wctx, mark, isUpdateFor(sid))
		cancel()
		if pending.Done() {
			r, _ := pending.Wait(ctx)
			reason := "the turn ended (" + clipS(string(r.Raw)) + ") before the client could cancel it"
			suite.Unverified(reason, "let a turn last until a cancel can reach it (the reference agent holds a prompt containing conform:hold)")
		}
		suite.Transport(p.conn.Notify(sdk.AgentMethodSessionCancel, sdk.CancelNotification{SessionId: sdk.SessionId(sid)}), "ACP-CANCEL-001")
		tctx, cancel := context.WithTimeout(ctx, env.Config.Timeouts.Task)
		resp, err := pending.Wait(tctx)
		cancel()
		suite.Transport(err, "ACP-CANCEL-001")
		switch {
		case resp.Error != nil:
			suite.Check("ACP-CANCEL-001", fmt.Errorf("the cancelled turn was answered with an error (%v), not the stop reason cancelled", resp.Error))
		case stopReason(resp) != string(sdk.StopReasonCancelled):
			suite.Check("ACP-CANCEL-001", fmt.Errorf("the cancelled turn ended with stopReason %q, want %q", stopReason(resp), sdk.StopReasonCancelled))
		}
		p.sync()
		if late := updatesFor(sid, p.conn.Received(resp.Mark)); len(late) > 0 {
			suite.Check("ACP-CANCEL-002", fmt.Errorf("%d session/update notification(s) for the cancelled session came after its session/prompt response (%s)", len(late), updateKinds(late)))
		}
	})
})
