// An ACP v1 client built on the official ACP TypeScript SDK
// (@agentclientprotocol/sdk), as an editor that does not know Harbor would
// write it: it starts the agent given as its arguments, initializes (no
// Harbor in its capabilities), opens a session, sends "Hello, agent!" and
// prints the session updates it handles. The SDK logs what it cannot
// handle to stderr ("Error handling notification …"). Written for
// conform's proof tier (TestACPTypeScriptClientHarborSilent); run from a
// directory where the SDK is installed:
//
//   node acp-ts-client.mjs AGENT ARGS…
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";

const [cmd, ...args] = process.argv.slice(2);
const agent = spawn(cmd, args, { stdio: ["pipe", "pipe", "ignore"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));
const app = acp
  .client({ name: "conform-ts-probe" })
  .onNotification(acp.methods.client.session.update, ({ params }) => console.log("update", params.update.sessionUpdate))
  .onRequest(acp.methods.client.session.requestPermission, () => ({ outcome: { outcome: "cancelled" } }));
const guard = setTimeout(() => { console.error("no end of turn within 60 s"); process.exit(1); }, 60000);
await app.connectWith(stream, async (ctx) => {
  await ctx.request(acp.methods.agent.initialize, { protocolVersion: 1, clientCapabilities: {} });
  const s = await ctx.request(acp.methods.agent.session.new, { cwd: process.cwd(), mcpServers: [] });
  const r = await ctx.request(acp.methods.agent.session.prompt, { sessionId: s.sessionId, prompt: [{ type: "text", text: "Hello, agent!" }] });
  console.log("stop", r.stopReason);
});
clearTimeout(guard);
agent.kill();
