#!/usr/bin/env node
// The TypeScript SDK's OAuth client flow against an MCP server URL.
//
//   node ts_oauth_client.mjs v1|v2 URL TOOL ARGS_JSON
//
// v1 is @modelcontextprotocol/sdk 1.32.2, v2 @modelcontextprotocol/client
// 2.4.0 (from .peers/node, or MCPX_PEERS_NODE). Discovers the server's
// Protected Resource Metadata and authorization server, registers, runs the
// authorization code flow (the authorization endpoint is fetched without a
// browser: its redirect carries the code), reconnects, lists the tools and
// calls TOOL. One-line JSON report on stdout:
// {"ok": true, "tools": [...], "text": "..."} or {"ok": false, "error": "..."}.

import path from "node:path";
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const load = (pkg, file) => import(pathToFileURL(path.join(peersNode, "node_modules", pkg, file)).href);

async function sdk(v) {
  if (v === "v1") {
    const pkg = "@modelcontextprotocol/sdk";
    const { Client } = await load(pkg, "dist/esm/client/index.js");
    const { StreamableHTTPClientTransport } = await load(pkg, "dist/esm/client/streamableHttp.js");
    const { UnauthorizedError } = await load(pkg, "dist/esm/client/auth.js");
    return { Client, StreamableHTTPClientTransport, UnauthorizedError };
  }
  return load("@modelcontextprotocol/client", "dist/index.mjs");
}

const REDIRECT = "http://127.0.0.1:1/callback";

class Provider {
  constructor() {
    this.info = undefined;
    this.saved = undefined;
    this.verifier = undefined;
    this.callback = undefined;
  }
  get redirectUrl() { return REDIRECT; }
  get clientMetadata() {
    return { client_name: "mcpx-test", redirect_uris: [REDIRECT], grant_types: ["authorization_code", "refresh_token"],
             response_types: ["code"], token_endpoint_auth_method: "none" };
  }
  clientInformation() { return this.info; }
  saveClientInformation(i) { this.info = i; }
  tokens() { return this.saved; }
  saveTokens(t) { this.saved = t; }
  saveDiscoveryState(s) { this.discovery = s; }
  discoveryState() { return this.discovery; }
  saveCodeVerifier(v) { this.verifier = v; }
  codeVerifier() { return this.verifier; }
  async redirectToAuthorization(url) {
    const r = await fetch(url, { redirect: "manual" });
    this.callback = new URL(r.headers.get("location"));
  }
}

async function main() {
  const [v, url, tool, args] = process.argv.slice(2);
  const { Client, StreamableHTTPClientTransport, UnauthorizedError } = await sdk(v);
  const provider = new Provider();
  const connect = async () => {
    const client = new Client({ name: "mcpx-oauth-test", version: "1.0.0" }, {});
    const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    await client.connect(transport);
    return { client, transport };
  };
  let c;
  try {
    c = await connect();
  } catch (e) {
    if (!(e instanceof UnauthorizedError) || !provider.callback) throw e;
    const t = new StreamableHTTPClientTransport(new URL(url), { authProvider: provider });
    const p = provider.callback.searchParams;
    await t.finishAuth(p.get("code"), p.get("iss") ?? undefined);
    c = await connect();
  }
  const tools = (await c.client.listTools()).tools.map((t) => t.name);
  const r = await c.client.callTool({ name: tool, arguments: JSON.parse(args) });
  const text = r.content.map((x) => x.text ?? "").join("");
  await c.client.close();
  return { ok: true, tools, text };
}

let report;
try {
  report = await main();
} catch (e) {
  report = { ok: false, error: `${e?.name}: ${e?.message}` };
}
process.stdout.write(JSON.stringify(report) + "\n");
process.exit(report.ok ? 0 : 1);
