#!/usr/bin/env node
// mcpx as the OAuth client under test of the official conformance suite's
// `auth/*` client scenarios.
//
//   node suite_auth_client.mjs MCPX URL
//
// Like suite_client.mjs, but the suite's protected server is configured
// with an "oauth" block: "openWith" is open_url.mjs (it follows the
// authorization server's redirect to mcpx's loopback redirect URI, as a
// browser would), "clientMetadataUrl" is the suite's Client ID Metadata
// Document URL, and the pre-registered credentials the suite passes in
// MCP_CONFORMANCE_CONTEXT become "clientId" / "clientSecret" (or
// "privateKeyFile" / "signingAlg" with the client-credentials grant). The
// token store goes to a fresh XDG_STATE_HOME; mcpx logs at debug level.
// Through mcpx it lists the tools (until the server's `test-tool` shows, at
// most 20 s) and calls it.
//
// With MCPX_SUITE_VIA_LOGIN=1 (suite_auth_login.mjs) the config has no
// "openWith": a person's way is taken instead. `mcpx auth login suite
// --open-with open_url.mjs` stores the tokens, `mcpx auth status` must say
// "logged in", `mcpx serve` then uses the stored tokens, and `mcpx auth
// logout` / `status` must forget them.
//
// Prints one JSON line on stdout. Exit 0 when the tool was listed and
// called, 1 otherwise, 2 on bad usage.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { here, mcpx, url, scenario, load, report, step, finish } from "./suite_driver.mjs";

const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mcpx-suite-auth-"));
const ctx = JSON.parse(process.env.MCP_CONFORMANCE_CONTEXT || "{}");
const viaLogin = process.env.MCPX_SUITE_VIA_LOGIN === "1";
const opener = `${process.execPath} ${path.join(here, "open_url.mjs")}`;
const oauth = { clientMetadataUrl: "https://conformance-test.local/client-metadata.json" };
if (!viaLogin) oauth.openWith = opener;
if (ctx.client_id) oauth.clientId = ctx.client_id;
if (ctx.client_secret) oauth.clientSecret = ctx.client_secret;
if (ctx.private_key_pem) {
  const key = path.join(dir, "client-key.pem");
  fs.writeFileSync(key, ctx.private_key_pem, { mode: 0o600 });
  oauth.privateKeyFile = key;
  oauth.signingAlg = ctx.signing_algorithm ?? "ES256";
}
if (scenario.startsWith("auth/client-credentials")) oauth.grant = "client_credentials";
const config = path.join(dir, "mcpx.json");
fs.writeFileSync(config, JSON.stringify({ mcpServers: { suite: { url, prefix: "", oauth } } }, null, 2));

const env = { ...process.env, XDG_STATE_HOME: path.join(dir, "state"), MCPX_LOG: process.env.MCPX_LOG ?? "debug" };
// `mcpx auth ARGS...`; its stdout must contain `expect`.
const auth = (args, expect) =>
  step(`mcpx auth ${args[0]}`, () => {
    const r = spawnSync(mcpx, ["auth", ...args, "--config", config], { env, encoding: "utf8", timeout: 25000 });
    process.stderr.write(r.stderr ?? "");
    if (r.status !== 0 || !r.stdout.includes(expect)) {
      throw new Error(`exit ${r.status}, stdout ${JSON.stringify(r.stdout)} (expected ${JSON.stringify(expect)})`);
    }
    return r.stdout.trim();
  });
if (viaLogin) {
  await auth(["login", "suite", "--open-with", opener], "suite: logged in");
  await auth(["status"], "suite: logged in");
}

const client = new Client({ name: "mcpx-suite-auth-client", version: "1.0.0" }, { capabilities: {} });
const transport = new StdioClientTransport({
  command: mcpx,
  args: ["serve", "--config", config],
  // Debug logs, so that the test's search for tokens in them covers everything.
  env,
  stderr: "inherit",
});

let tools = [];
if (await step("connect", async () => (await client.connect(transport), client.getServerVersion()))) {
  const deadline = Date.now() + 20000;
  for (;;) {
    const listed = await client.listTools().catch(() => undefined);
    tools = (listed?.tools ?? []).map((t) => t.name);
    if (tools.includes("test-tool") || Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  if (tools.includes("test-tool")) {
    await step("tools/call test-tool", () => client.callTool({ name: "test-tool", arguments: {} }, undefined, { timeout: 20000 }));
  } else {
    report.ok = false;
    report.steps.push({ what: "tools/list", ok: false, error: `test-tool not listed (listed: ${tools.join(", ")})` });
  }
}

await client.close().catch(() => {});
if (viaLogin) {
  await auth(["logout", "suite"], "suite: logged out");
  await auth(["status"], "suite: not logged in");
}
finish(dir, tools);
