// A relay that lets Python tests drive an ACP agent through a client written
// by others: the official TypeScript SDK (@agentclientprotocol/sdk, 2.x).
//
//   IKIGAI_ACP_SDK=/abs/.cache/acp-sdk/node_modules node acp_client.mjs -- AGENT [ARGS...]
//
// The agent is spawned with stdio pipes (stderr passed through, env and cwd
// inherited) and connected with the SDK's client app over ndJsonStream. The
// test speaks JSON lines: commands on our stdin, messages on our stdout (one
// line per message). tests/acp/driver.py is the Python side; its docstring is
// the reference for the commands and messages.
//
// SDK 2.x removed ClientSideConnection: calls go through the connection's
// ClientContext (`conn.agent.request(wire method, params)`). A call names the
// method as the SDK's own request table does (`newSession`, `listSessions`,
// `unstable_forkSession`...; see METHODS) or by its wire name (`session/new`,
// `_vendor/ext`).
//
// What the agent sends is shown in wire order from a tap in front of the SDK,
// because the SDK dispatches notifications through a chain of promises that a
// later response can overtake: an update could otherwise be shown after the
// result of the prompt it belongs to. The SDK still validates everything it
// receives; what it refuses appears as {"type": "rejected"} (the error reply it
// sent the agent) or {"type": "sdk_log"} (what it printed on stderr).

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import readline from "node:readline";
import { Readable } from "node:stream";
import { pathToFileURL } from "node:url";
import { format } from "node:util";

// The SDK's names for the agent methods (its internal agentRequestSpecs table,
// not exported, so copied from dist/v1/acp.js of 2.4.0) -> wire names.
const METHODS = {
  initialize: "initialize",
  authenticate: "authenticate",
  logout: "logout",
  newSession: "session/new",
  loadSession: "session/load",
  listSessions: "session/list",
  deleteSession: "session/delete",
  resumeSession: "session/resume",
  closeSession: "session/close",
  setSessionMode: "session/set_mode",
  setSessionConfigOption: "session/set_config_option",
  prompt: "session/prompt",
  unstable_forkSession: "session/fork",
  unstable_archiveSession: "session/archive",
  unstable_unarchiveSession: "session/unarchive",
  unstable_sessionStatus: "session/status",
  unstable_setSessionTitle: "session/set_title",
  unstable_listProviders: "providers/list",
  unstable_setProvider: "providers/set",
  unstable_disableProvider: "providers/disable",
  unstable_authStatus: "auth/status",
};
const NOTIFICATIONS = { cancel: "session/cancel", unstable_messageMcp: "mcp/message" };
// what the agent may ask of a client; this one offers none of it
const NOT_OFFERED = [
  "fs/read_text_file",
  "fs/write_text_file",
  "terminal/create",
  "terminal/output",
  "terminal/release",
  "terminal/wait_for_exit",
  "terminal/kill",
];
// how long the agent gets to exit once its stdin is closed at our own end
const GRACE_MS = 10_000;

function emit(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

function fatal(text) {
  process.stderr.write(`acp_client.mjs: ${text}\n`);
  process.exit(2);
}

const dashes = process.argv.indexOf("--");
const agentArgv = dashes >= 0 ? process.argv.slice(dashes + 1) : process.argv.slice(2);
if (agentArgv.length === 0) fatal("usage: node acp_client.mjs -- AGENT_COMMAND [ARGS...]");
const sdkRoot = process.env.IKIGAI_ACP_SDK;
if (!sdkRoot) fatal("IKIGAI_ACP_SDK is not set (the node_modules folder holding @agentclientprotocol/sdk)");

// ESM ignores NODE_PATH: resolve through the package's own "exports" map from
// the node_modules folder we were given, then import that file by URL. The
// /unstable entry point is the whole of ACP v1 (stable plus unstable methods).
let acp;
let sdkVersion = null;
try {
  const resolved = createRequire(import.meta.url).resolve("@agentclientprotocol/sdk/unstable", {
    paths: [path.resolve(sdkRoot)],
  });
  acp = await import(pathToFileURL(resolved).href);
  const pkg = path.join(path.resolve(sdkRoot), "@agentclientprotocol", "sdk", "package.json");
  sdkVersion = JSON.parse(readFileSync(pkg, "utf8")).version;
} catch (err) {
  fatal(`cannot load @agentclientprotocol/sdk from ${sdkRoot}: ${err?.message ?? err}`);
}

// The SDK reports what it drops (invalid messages, notifications its schema
// refuses, responses to unknown ids) only on the console: show it to the test.
for (const level of ["error", "warn"]) {
  const original = console[level].bind(console);
  console[level] = (...args) => {
    original(...args);
    emit({ type: "sdk_log", level, text: format(...args) });
  };
}

const trace = process.env.IKIGAI_ACP_TRACE === "1";
const idKey = (id) => JSON.stringify(id ?? null);
const isRecord = (v) => typeof v === "object" && v !== null && !Array.isArray(v);
const isId = (v) => v === null || typeof v === "string" || (typeof v === "number" && Number.isFinite(v));

const sdkPending = new Set(); // ids of the requests the SDK sent and awaits
const deliberate = new Set(); // ids of agent requests we chose to answer with an error
const permissionRids = new Map(); // agent request id -> our rids, in arrival order
const answers = new Map(); // rid -> {promise, resolve}
let nextRid = 1;

function answerSlot(rid) {
  let slot = answers.get(rid);
  if (!slot) {
    let resolve;
    const promise = new Promise((r) => (resolve = r));
    slot = { promise, resolve };
    answers.set(rid, slot);
  }
  return slot;
}

const child = spawn(agentArgv[0], agentArgv.slice(1), { stdio: ["pipe", "pipe", "inherit"] });
// a closed pipe shows as a failed SDK write (the connection closes), not a crash
child.stdin.on("error", () => {});

let exitInfo = null;
const childGone = new Promise((resolve) => {
  child.on("close", (code, signal) => resolve({ code, signal }));
  child.on("error", (err) => {
    if (child.pid === undefined) resolve({ code: null, signal: null, error: err.message });
  });
});

function writeToAgent(bytes) {
  // Synchronous hand-off (no wait for the drain callback): every write, the
  // SDK's and the raw ones, then reaches the pipe in the order it was made.
  if (child.stdin.writable) child.stdin.write(bytes);
  else throw new Error("the agent's stdin is closed");
}

// what the SDK writes to the agent: remember its request ids (so replies to
// anything else are raw replies) and report the error replies it chose itself
let outText = "";
const decoder = new TextDecoder();
function tapOutgoing(bytes) {
  outText += decoder.decode(bytes, { stream: true });
  let nl;
  while ((nl = outText.indexOf("\n")) >= 0) {
    const line = outText.slice(0, nl);
    outText = outText.slice(nl + 1);
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      continue;
    }
    if (trace) emit({ type: "wire", dir: "out", message: msg });
    if (!isRecord(msg)) continue;
    if (typeof msg.method === "string" && "id" in msg) sdkPending.add(idKey(msg.id));
    else if (!("method" in msg) && "error" in msg) {
      const key = idKey(msg.id);
      if (msg.id !== null && deliberate.delete(key)) continue;
      emit({ type: "rejected", message: msg });
    }
  }
}

const toAgent = new WritableStream({
  write(chunk) {
    tapOutgoing(chunk);
    writeToAgent(chunk);
  },
});

// what the agent sends, in wire order, before the SDK sees it; replies to
// requests the SDK did not send (raw lines) stop here
function tapIncoming(msg) {
  if (trace) emit({ type: "wire", dir: "in", message: msg });
  if (!isRecord(msg)) return true;
  if (!("method" in msg) && ("id" in msg || "result" in msg || "error" in msg)) {
    const key = idKey(msg.id);
    if (sdkPending.delete(key)) return true;
    emit({ type: "raw_reply", message: msg });
    return false;
  }
  if (msg.jsonrpc !== "2.0" || typeof msg.method !== "string") return true;
  if ("id" in msg) {
    if (!isId(msg.id)) return true;
    if (msg.method === "session/request_permission") {
      const rid = nextRid++;
      const key = idKey(msg.id);
      permissionRids.set(key, [...(permissionRids.get(key) ?? []), rid]);
      emit({ type: "permission", rid, params: msg.params });
    } else {
      emit({ type: "client_call", method: msg.method, params: msg.params });
    }
  } else if (msg.method === "session/update") {
    emit({ type: "update", params: msg.params });
  } else {
    emit({ type: "notification", method: msg.method, params: msg.params });
  }
  return true;
}

function notOffered({ method, requestId }) {
  deliberate.add(idKey(requestId));
  throw new acp.RequestError(-32601, `not offered by this client: ${method}`, { method });
}

async function askTheTest({ requestId, signal }) {
  const key = idKey(requestId);
  const rids = permissionRids.get(key) ?? [];
  const rid = rids.shift();
  if (rids.length === 0) permissionRids.delete(key);
  if (rid === undefined) throw new Error("permission request the tap did not see");
  const slot = answerSlot(rid);
  // the agent may withdraw its request ($/cancel_request); a closing
  // connection aborts the signal too, and is no withdrawal
  let withdraw;
  const withdrawn = new Promise((_, reject) => {
    withdraw = () => {
      if (signal.reason?.code !== -32800) return;
      deliberate.add(key);
      emit({ type: "permission_aborted", rid });
      reject(signal.reason);
    };
  });
  if (signal.aborted) withdraw();
  else signal.addEventListener("abort", withdraw, { once: true });
  try {
    const answer = await Promise.race([slot.promise, withdrawn]);
    if (answer.never) return await new Promise(() => {}); // a client that hangs
    return { outcome: answer.outcome };
  } finally {
    signal.removeEventListener("abort", withdraw);
    answers.delete(rid);
  }
}

let app = acp
  .client({ name: "ikigai-acp-test-client" })
  // shown from the tap; registered so the SDK validates each update
  .onNotification("session/update", () => {})
  .onRequest("session/request_permission", askTheTest)
  .onRequest("*", notOffered);
for (const method of NOT_OFFERED) app = app.onRequest(method, notOffered);

const stream = acp.ndJsonStream(toAgent, Readable.toWeb(child.stdout));
const tapped = stream.readable.pipeThrough(
  new TransformStream({
    transform(msg, controller) {
      if (tapIncoming(msg)) controller.enqueue(msg);
    },
  }),
);
const conn = app.connect({ readable: tapped, writable: stream.writable });

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

const exited = childGone.then(async (info) => {
  // everything the agent wrote before it went is shown before "exited"
  await Promise.race([conn.closed, new Promise((r) => setTimeout(r, 1000))]);
  await nextTurn();
  exitInfo = info;
  emit({ type: "exited", ...info });
  return info;
});

function errorOf(err) {
  if (err instanceof acp.RequestError || (isRecord(err) && err.name === "RequestError")) {
    return { type: "error", error: { code: err.code, message: err.message, data: err.data ?? null } };
  }
  return { type: "relay_error", error: { message: String(err?.message ?? err) } };
}

async function call(cmd) {
  const name = String(cmd.method);
  const wire = METHODS[name] ?? (name.includes("/") || name.startsWith("_") ? name : null);
  if (wire === null) {
    const known = Object.keys(METHODS).join(", ");
    const message = `SDK ${sdkVersion} has no method ${JSON.stringify(name)} (its names: ${known}; or give the wire name)`;
    emit({ type: "relay_error", id: cmd.id, error: { message } });
    return;
  }
  try {
    const result = await conn.agent.request(wire, cmd.params);
    emit({ type: "result", id: cmd.id, result: result ?? null });
  } catch (err) {
    emit({ id: cmd.id, ...errorOf(err) });
  }
}

async function notify(cmd, method) {
  try {
    await conn.agent.notify(method, cmd.params);
  } catch (err) {
    emit({ id: cmd.id ?? null, ...errorOf(err) });
  }
}

async function handle(cmd) {
  switch (cmd.op) {
    case "call":
      void call(cmd);
      break;
    case "cancel":
      void notify(cmd, "session/cancel");
      break;
    case "notify":
      void notify(cmd, NOTIFICATIONS[cmd.method] ?? cmd.method);
      break;
    case "raw": {
      let bytes = cmd.b64 !== undefined ? Buffer.from(cmd.b64, "base64") : Buffer.from(cmd.line ?? "", "utf8");
      if (cmd.newline !== false) bytes = Buffer.concat([bytes, Buffer.from("\n")]);
      try {
        writeToAgent(bytes);
      } catch (err) {
        emit({ type: "relay_error", id: cmd.id ?? null, error: { message: err.message } });
      }
      break;
    }
    case "answer":
      answerSlot(cmd.rid).resolve(cmd);
      break;
    case "close":
      // "exited" follows when the agent has gone (written once, whoever asked)
      child.stdin.end();
      break;
    case "kill":
      child.kill(cmd.signal ?? "SIGTERM");
      break;
    default:
      emit({ type: "relay_error", id: cmd.id ?? null, error: { message: `unknown op ${JSON.stringify(cmd.op)}` } });
  }
  // let the SDK's promise chain hand this command's bytes to the pipe before a
  // later command (a raw line) writes its own
  await nextTurn();
}

process.on("SIGTERM", () => {
  child.kill("SIGKILL");
  process.exit(143);
});

emit({ type: "ready", sdk_version: sdkVersion, protocol_version: acp.PROTOCOL_VERSION, agent_pid: child.pid ?? null });

const commands = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of commands) {
  if (!line.trim()) continue;
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch {
    emit({ type: "relay_error", id: null, error: { message: `not JSON: ${line.slice(0, 200)}` } });
    continue;
  }
  await handle(cmd);
}

// our stdin closed: the test is done with us; the agent follows
if (exitInfo === null) {
  child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
  await exited;
  clearTimeout(timer);
}
process.exit(0);
