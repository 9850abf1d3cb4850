#!/usr/bin/env node
// mcpx as the client under test of the official conformance suite's client
// scenarios (`conformance client --command CMD --scenario S`).
//
//   node suite_client.mjs MCPX URL
//
// The suite starts a test server, appends its URL to the command and names
// the scenario in MCP_CONFORMANCE_SCENARIO. This driver writes an mcpx config
// with that URL as the single remote upstream (no prefix, so the test
// server's names stay as they are), starts `MCPX serve --config FILE` on
// stdio, connects to it with the official TypeScript SDK client
// (@modelcontextprotocol/sdk 1.32.2 from .peers/node, or MCPX_PEERS_NODE),
// and performs the scenario through mcpx: the requests the suite's test
// server sees are mcpx's. Elicitation requests relayed by mcpx are accepted
// with the SDK applying the schema's defaults.
//
// Prints one JSON line (what was done) on stdout. Exit 0 when every step
// got a result, 1 when one failed, 2 on bad usage.

import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { mcpx, url, scenario, load, report, step, finish } from "./suite_driver.mjs";

const { Client } = await load("client/index.js");
const { StdioClientTransport } = await load("client/stdio.js");
const { ElicitRequestSchema, CreateMessageRequestSchema, ListRootsRequestSchema } = await load("types.js");

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mcpx-suite-client-"));
const config = path.join(dir, "mcpx.json");
fs.writeFileSync(config, JSON.stringify({ mcpServers: { suite: { url, prefix: "" } } }, null, 2));

const client = new Client(
  { name: "mcpx-suite-client", version: "1.0.0" },
  {
    capabilities: {
      elicitation: { form: { applyDefaults: true } },
      sampling: {},
      roots: { listChanged: true },
    },
  },
);

// Between MRTR rounds, sep-2322-client-request-state wants an unrelated call
// in flight (parallel isolation): made while the first elicitation is open.
let beforeFirstElicitAnswer = null;

client.setRequestHandler(ElicitRequestSchema, async (req) => {
  if (beforeFirstElicitAnswer) {
    const f = beforeFirstElicitAnswer;
    beforeFirstElicitAnswer = null;
    await f();
  }
  // Required fields without a default get a value; the SDK fills in defaults.
  const schema = req.params.requestedSchema ?? {};
  const content = {};
  for (const name of schema.required ?? []) {
    const p = schema.properties?.[name] ?? {};
    if (p.default !== undefined) continue;
    content[name] = Array.isArray(p.enum)
      ? p.enum[0]
      : p.type === "boolean"
        ? true
        : p.type === "number" || p.type === "integer"
          ? 1
          : "mcpx-suite-answer";
  }
  return { action: "accept", content };
});
client.setRequestHandler(CreateMessageRequestSchema, async () => ({
  role: "assistant",
  content: { type: "text", text: "mcpx-suite-sampled" },
  model: "mcpx-suite-model",
  stopReason: "endTurn",
}));
client.setRequestHandler(ListRootsRequestSchema, async () => ({
  roots: [{ uri: "file:///mcpx-suite-root", name: "mcpx-suite-root" }],
}));

const transport = new StdioClientTransport({
  command: mcpx,
  args: ["serve", "--config", config],
  stderr: "inherit",
});

const call = (name, args = {}) =>
  step(`tools/call ${name}`, () => client.callTool({ name, arguments: args }, undefined, { timeout: 20000 }));

let tools = [];
const connected = await step("connect", async () => {
  await client.connect(transport);
  return client.getServerVersion();
});

if (connected) {
  const listed = await step("tools/list", () => client.listTools());
  tools = (listed?.tools ?? []).map((t) => t.name);
  const has = (n) => tools.includes(n);
  const need = (n) => {
    if (!has(n)) {
      report.ok = false;
      report.steps.push({ what: `tool ${n}`, ok: false, error: `not listed by mcpx (listed: ${tools.join(", ")})` });
      return false;
    }
    return true;
  };

  switch (scenario) {
    case "initialize":
    case "request-metadata":
    case "json-schema-ref-no-deref":
      break; // the handshake and tools/list are the scenario
    case "tools_call":
      if (need("add_numbers")) await call("add_numbers", { a: 2, b: 3 });
      break;
    case "elicitation-sep1034-client-defaults":
      if (need("test_client_elicitation_defaults")) await call("test_client_elicitation_defaults");
      break;
    case "sse-retry":
      if (need("test_reconnection")) await call("test_reconnection");
      break;
    case "sep-2322-client-request-state":
      if (need("test_mrtr_echo_state")) {
        if (has("test_mrtr_unrelated")) beforeFirstElicitAnswer = () => call("test_mrtr_unrelated");
        await call("test_mrtr_echo_state");
      }
      if (need("test_mrtr_no_state")) await call("test_mrtr_no_state");
      if (need("test_mrtr_no_result_type")) await call("test_mrtr_no_result_type");
      break;
    case "http-standard-headers": {
      for (const t of tools) await call(t, {});
      const res = await step("resources/list", () => client.listResources());
      for (const r of res?.resources ?? []) await step(`resources/read ${r.uri}`, () => client.readResource({ uri: r.uri }));
      const pr = await step("prompts/list", () => client.listPrompts());
      for (const p of pr?.prompts ?? []) await step(`prompts/get ${p.name}`, () => client.getPrompt({ name: p.name }));
      break;
    }
    case "http-custom-headers":
      if (need("test_custom_headers"))
        await call("test_custom_headers", {
          region: "us-west1",
          priority: 42,
          verbose: false,
          debug: true,
          empty_val: "",
          method_val: "custom-method",
          float_val: 1.5,
          non_ascii_val: "Gr\u00fc\u00dfe \u65e5\u672c",
          whitespace_val: "  padded  ",
          leading_space_val: " leading",
          trailing_space_val: "trailing ",
        });
      if (need("test_custom_headers_null"))
        await call("test_custom_headers_null", { region: "us-east1", priority: 1, verbose: null });
      break;
    case "http-invalid-tool-headers":
      // Only the tools mcpx lists are called: a tool with an invalid
      // x-mcp-header must not be among them.
      for (const t of tools) await call(t, t === "valid_tool" ? { region: "us-west1" } : {});
      break;
    default:
      report.ok = false;
      report.steps.push({ what: "scenario", ok: false, error: `this driver does not know scenario ${scenario}` });
  }
}

await client.close().catch(() => {});
finish(dir, tools);
