#!/usr/bin/env node
// URL-mode elicitation in the 2026-07-28 era with @modelcontextprotocol/client
// 2.4.0 (from .peers/node, or MCPX_PEERS_NODE) as the client, over Streamable
// HTTP with a bearer token:
//
//   node ts_url_client.mjs URL TOKEN TOOL --browser "CMD ARGS..."
//
// The client is pinned to 2026-07-28 (stateless: no handshake; every request
// carries the `_meta` envelope, whose client capabilities include
// `elicitation: {url: {}}`). It calls TOOL (no arguments). When the server
// answers `input_required`, the SDK hands each embedded elicitation/create
// to the handler registered here, which for a url-mode request runs
// `CMD ARGS... URL` (the "browser") and answers accept on exit 0, decline
// otherwise; the SDK then retries the call with inputResponses and the
// echoed requestState by itself. One JSON line on stdout:
// {"ok": true, "asked": [{"mode": "url", "url": ...}], "text": "..."} or
// {"ok": false, "asked": [...], "error": "..."}.

import path from "node:path";
import { spawn } from "node:child_process";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const { Client, StreamableHTTPClientTransport } = await import(
  pathToFileURL(path.join(peersNode, "node_modules/@modelcontextprotocol/client/dist/index.mjs")).href);

const argv = process.argv.slice(2);
const b = argv.indexOf("--browser");
if (argv.length !== 5 || b !== 3) {
  process.stderr.write('usage: ts_url_client.mjs URL TOKEN TOOL --browser "CMD ARGS..."\n');
  process.exit(2);
}
const [url, token, tool] = argv;
// The browser command is split on whitespace; quotes group words.
const browser = argv[4].match(/"[^"]*"|'[^']*'|\S+/g).map((w) => w.replace(/^(["'])(.*)\1$/, "$2"));

const browse = (target) => new Promise((resolve) => {
  const child = spawn(browser[0], [...browser.slice(1), target], { stdio: ["ignore", process.stderr, process.stderr] });
  child.on("error", (e) => { process.stderr.write(`browser: ${e.message}\n`); resolve(1); });
  child.on("exit", (code) => resolve(code ?? 1));
});

const report = { ok: false, asked: [] };
const timer = setTimeout(() => {
  process.stdout.write(JSON.stringify({ ...report, error: "timed out" }) + "\n");
  process.exit(1);
}, 90_000);
try {
  const client = new Client({ name: "mcpx-ts-url-client", version: "1.0.0" }, {
    capabilities: { elicitation: { url: {} } },
    versionNegotiation: { mode: { pin: "2026-07-28" } },
  });
  client.setRequestHandler("elicitation/create", async (req) => {
    const p = req.params;
    if (p.mode !== "url") return { action: "decline" };
    report.asked.push({ mode: "url", url: p.url });
    return { action: (await browse(p.url)) === 0 ? "accept" : "decline" };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${token}` } } });
  await client.connect(transport);
  const r = await client.callTool({ name: tool, arguments: {} });
  report.text = (r.content ?? []).map((c) => c.text ?? "").join("");
  if (r.isError) throw new Error(`${tool} answered an error: ${report.text}`);
  report.ok = true;
  await client.close().catch(() => {});
} catch (e) {
  report.error = `${e?.name}: ${e?.message}`;
}
clearTimeout(timer);
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(report.ok ? 0 : 1);
