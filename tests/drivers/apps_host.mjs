#!/usr/bin/env node
// An MCP Apps host for end-to-end tests: the official TypeScript SDK v2
// client declaring the `io.modelcontextprotocol/ui` extension, the official
// host side of @modelcontextprotocol/ext-apps (AppBridge, which forwards an
// app's requests to the server verbatim), and each app's HTML rendered in
// headless Chromium.
//
//   node apps_host.mjs CHROMIUM PROFILE_DIR [--mode legacy|2026-07-28] --url URL
//   node apps_host.mjs CHROMIUM PROFILE_DIR [--mode ...] -- COMMAND [ARGS...]
//   node apps_host.mjs --plain [--mode ...] (--url URL | -- COMMAND...)
//
// Lists the tools, reads every UI resource a tool links, calls each tool
// that links one and is the model's, and renders its app in an iframe of
// one host page (served on a loopback port; each frame's postMessage
// relayed to its AppBridge here over a server-sent-event stream and POSTs):
// the bridge answers the app's `ui/initialize`, sends it the tool's input
// and result, and forwards the tools/call requests the app makes. Waits
// until every app initialized and every app whose name is in --wait-call
// made a call, then prints one JSON line: what the host saw. Exit 0 when it
// could report, 1 on failure (on stderr). `calls` are the apps' own, and
// `ownName` what the server answered a call by an app's server's own tool
// name that several servers have (`get-time`), as AppBridge would forward it.
// --plain: a client without the extension (a model's), which only lists.

import http from "node:http";
import path from "node:path";
import fs from "node:fs";
import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const UI = "io.modelcontextprotocol/ui";
const MIME = "text/html;profile=mcp-app";
const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const load = (pkg, file) => import(pathToFileURL(path.join(peers, "node_modules", pkg, file)).href);
const fail = (why) => {
  process.stderr.write(`apps_host: ${why}\n`);
  process.exit(1);
};
setTimeout(() => fail("timed out after 90 s"), 90000).unref();

let argv = process.argv.slice(2);
const plain = argv[0] === "--plain";
if (plain) argv = ["", "", ...argv.slice(1)];
const [chromium, profile] = argv;
let mode = "legacy", url = null, command = [], waitCall = [];
for (let i = 2; i < argv.length; i++) {
  if (argv[i] === "--") { command = argv.slice(i + 1); break; }
  if (argv[i] === "--mode") mode = argv[++i];
  else if (argv[i] === "--url") url = argv[++i];
  else if (argv[i] === "--wait-call") waitCall.push(argv[++i]);
  else fail(`unknown argument ${argv[i]}`);
}
if ((!plain && (!chromium || !profile)) || (!url && !command.length)) fail("usage: apps_host.mjs CHROMIUM PROFILE_DIR [--mode M] [--wait-call TOOL]... (--url URL | -- COMMAND...)");

const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client", "dist/index.mjs");
const { StdioClientTransport } = await load("@modelcontextprotocol/client", "dist/stdio.mjs");
const { AppBridge } = await load("@modelcontextprotocol/ext-apps", "dist/src/app-bridge.js");

const client = new Client({ name: "mcpx-apps-host", version: "1.0.0" }, {
  capabilities: plain ? {} : { extensions: { [UI]: { mimeTypes: [MIME] } } },
  versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } },
});
// What the apps asked of the server, through the bridges (which call
// `client.request` with the app's params as they are).
const calls = [];
const request = client.request.bind(client);
let hostCalling = false;
client.request = async (req, ...rest) => {
  if (req?.method !== "tools/call" || hostCalling) return request(req, ...rest);
  const rec = { name: req.params?.name };
  calls.push(rec);
  try {
    const r = await request(req, ...rest);
    rec.ok = !r.isError;
    return r;
  } catch (e) {
    rec.error = String(e?.message ?? e);
    throw e;
  }
};
const transport = url
  ? new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });
await client.connect(transport).catch((e) => fail(`connect: ${e.message}`));

const report = {
  protocol: client.getNegotiatedProtocolVersion?.() ?? null,
  extensions: client.getServerCapabilities()?.extensions ?? null,
  tools: [],
  reads: {},
  apps: [],
  calls,
};
const tools = [];
for (let cursor; ;) {
  const page = await client.listTools(cursor ? { cursor } : {});
  tools.push(...page.tools);
  if (!(cursor = page.nextCursor)) break;
}
for (const t of tools) {
  report.tools.push({ name: t.name, resourceUri: t._meta?.ui?.resourceUri ?? null, visibility: t._meta?.ui?.visibility ?? null });
}
if (plain) {
  process.stdout.write(JSON.stringify(report) + "\n");
  await client.close().catch(() => {});
  process.exit(0);
}
const html = {};
for (const uri of new Set(tools.map((t) => t._meta?.ui?.resourceUri).filter(Boolean))) {
  const r = await client.readResource({ uri });
  const c = r.contents?.[0] ?? {};
  const text = c.text ?? (c.blob ? Buffer.from(c.blob, "base64").toString("utf8") : "");
  report.reads[uri] = { uri: c.uri, mimeType: c.mimeType, bytes: text.length, csp: c._meta?.ui?.csp ?? null };
  html[uri] = text;
}

// One frame per model-visible tool that links an app.
const entries = tools.filter((t) => t._meta?.ui?.resourceUri && (t._meta.ui.visibility ?? ["model"]).includes("model"));
const frames = [];
for (const [i, tool] of entries.entries()) {
  hostCalling = true;
  const result = await client.callTool({ name: tool.name, arguments: {} });
  hostCalling = false;
  const relay = {
    sse: null, queue: [],
    async start() {},
    async send(m) {
      const line = `data: ${JSON.stringify(m)}\n\n`;
      if (this.sse) this.sse.write(line); else this.queue.push(line);
    },
    async close() { this.onclose?.(); },
  };
  const app = { tool: tool.name, uri: tool._meta.ui.resourceUri, initialized: false, appInfo: null };
  report.apps.push(app);
  const bridge = new AppBridge(client, { name: "mcpx-apps-host", version: "1.0.0" }, { serverTools: {}, serverResources: {}, logging: {} },
    { hostContext: { toolInfo: { tool }, displayMode: "inline" } });
  bridge.oninitialized = () => {
    app.initialized = true;
    app.appInfo = bridge.getAppVersion?.() ?? null;
    bridge.sendToolInput({ arguments: {} });
    bridge.sendToolResult(result);
  };
  await bridge.connect(relay);
  frames.push({ i, relay, html: html[app.uri] ?? "" });
}

const page = `<!doctype html><meta charset="utf-8"><title>mcpx apps host</title><body>${frames.map((f) =>
  `<iframe id="f${f.i}" sandbox="allow-scripts" style="width:640px;height:480px"></iframe>`).join("")}
<script>
for (const i of ${JSON.stringify(frames.map((f) => f.i))}) {
  const f = document.getElementById("f" + i);
  window.addEventListener("message", (e) => {
    if (e.source === f.contentWindow) fetch("/up/" + i, { method: "POST", body: JSON.stringify(e.data) });
  });
  fetch("/html/" + i).then((r) => r.text()).then((h) => {
    f.srcdoc = h;
    const es = new EventSource("/down/" + i);
    es.onmessage = (e) => f.contentWindow.postMessage(JSON.parse(e.data), "*");
  });
}
</script>`;
const server = http.createServer((req, res) => {
  const [, kind, n] = req.url.split("/");
  const f = frames.find((x) => String(x.i) === n);
  if (req.url === "/") return res.writeHead(200, { "content-type": "text/html" }).end(page);
  if (!f) return res.writeHead(404).end();
  if (kind === "html") return res.writeHead(200, { "content-type": "text/html" }).end(f.html);
  if (kind === "down") {
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
    f.relay.sse = res;
    for (const l of f.relay.queue.splice(0)) res.write(l);
    return;
  }
  if (kind === "up" && req.method === "POST") {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      res.writeHead(204).end();
      try { f.relay.onmessage?.(JSON.parse(body)); } catch (e) { process.stderr.write(`apps_host: bad frame message: ${e.message}\n`); }
    });
    return;
  }
  res.writeHead(404).end();
});
await new Promise((r) => server.listen(0, "127.0.0.1", r));
const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  `--user-data-dir=${profile}`, `http://127.0.0.1:${server.address().port}/`,
], { stdio: "ignore" });
process.on("exit", () => browser.kill("SIGKILL"));

const done = () => report.apps.every((a) => a.initialized) && waitCall.every((n) => calls.some((c) => c.name === n && ("ok" in c || "error" in c)));
for (let t = 0; t < 600 && !done(); t++) await new Promise((r) => setTimeout(r, 100));
report.complete = done();
hostCalling = true;
report.ownName = await client.callTool({ name: "get-time", arguments: {} }).then((r) => ({ ok: !r.isError }), (e) => ({ error: String(e?.message ?? e), data: e?.data ?? null }));
process.stdout.write(JSON.stringify(report) + "\n");
browser.kill("SIGKILL");
server.close();
await client.close().catch(() => {});
process.exit(0);
