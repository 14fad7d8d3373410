// A client journey with the browser WebSocket API (Node's built-in
// WebSocket), made the way the protocol's TypeScript SDK makes it
// (docs/websocket.md section 1.5): REST with fetch to create a session and
// submit a task, then `new WebSocket(url, protocols)` on the task stream
// path, which is all its connectTaskEventsWebSocket does, with protocols
// undefined (the SDK's default) or ["harn-ws.v1"], and an auth frame (the
// browser API sets no headers). Written for conform's proof tier
// (TestWSJourneyWithoutSubprotocol); not the SDK's code.
//
//   node browser-ws-journey.mjs BASE_URL API_KEY [PROTOCOL]
//
// Exit 0 when the task's events arrive up to task.completed; else 1 with
// what went wrong on stderr.

const [base, key, protocol] = process.argv.slice(2);
const version = "agents-protocol-2026-04-25";
const part = (text) => ({ type: "text", text, visibility: "public" });

async function rest(method, path, body, want) {
  const r = await fetch(new URL(path, base), {
    method,
    headers: { Authorization: `Bearer ${key}`, "Harn-Agents-Protocol-Version": version, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status !== want) throw new Error(`${method} ${path}: ${r.status} ${text}`);
  return JSON.parse(text);
}

function fail(msg) {
  console.error(msg);
  process.exit(1);
}

const guard = setTimeout(() => fail("no task.completed within 30 s"), 30000);

const ws = await rest("POST", "/v1/workspaces", { name: "browser-journey", root: "/tmp/browser-journey" }, 201);
const sess = await rest("POST", "/v1/sessions", { workspace_id: ws.id }, 201);
const task = await rest("POST", "/v1/tasks", { session_id: sess.id, input: { role: "user", parts: [part("Summarize the release blockers.")] } }, 202);

const url = new URL(`/v1/tasks/${encodeURIComponent(task.id)}/stream`, base);
url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
const socket = new WebSocket(url, protocol ? [protocol] : undefined);
let ready = false;
socket.onopen = () => {
  if (socket.protocol !== (protocol ?? "")) fail(`selected subprotocol ${JSON.stringify(socket.protocol)}, want ${JSON.stringify(protocol ?? "")}`);
  socket.send(JSON.stringify({ type: "auth", id: "c-auth", authorization: `Bearer ${key}`, protocol_version: version }));
};
socket.onmessage = (m) => {
  const f = JSON.parse(m.data);
  if (!ready) {
    if (f.type !== "ready" || f.profile !== "harn-ws.v1" || f.in_reply_to !== "c-auth") fail(`first frame ${m.data}, want ready`);
    ready = true;
    return;
  }
  if (f.type === "ping") socket.send(JSON.stringify({ type: "pong", in_reply_to: f.id }));
  if (f.type === "event" && ["task.completed", "task.failed", "task.canceled"].includes(f.event.event)) {
    if (f.event.event !== "task.completed") fail(`the task ended with ${f.event.event}`);
    clearTimeout(guard);
    socket.close(1000, "done");
    process.exit(0);
  }
};
socket.onerror = () => fail("the WebSocket failed (a refused upgrade shows only as an error and close 1006 in the browser API)");
socket.onclose = (e) => fail(`closed ${e.code} ${e.reason} before task.completed`);
