#!/usr/bin/env node
// A real MCP client built on the official TypeScript SDK, for end-to-end tests.
// Same scenarios, options, report and exit codes as py_client.py (see there):
//   0 every expectation held, 1 an expectation failed or timed out, 2 bad usage,
//   3 the scenario needs something this SDK does not have.
//
//   node ts_client.mjs [--sdk v1|v2] [options] SCENARIO [ARGS...] -- COMMAND [ARGS...]
//   node ts_client.mjs [--sdk v1|v2] [options] --url URL SCENARIO [ARGS...]
//
// --sdk v1 (default) is @modelcontextprotocol/sdk 1.32.2; --sdk v2 is
// @modelcontextprotocol/client 2.4.0 (needs Node >= 22), where --mode picks the
// version negotiation: legacy (default) | auto | 2026-07-28.
// The packages are loaded from .peers/node (installed by tests/peers/install.sh),
// or from the directory named by MCPX_PEERS_NODE.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import fs from "node:fs";

const ELICIT_TEXT = "mcpx-elicited-answer";
const SAMPLED_TEXT = "mcpx-sampled-answer";
const SAMPLED_MODEL = "mcpx-test-model";
const ROOT_URI = "file:///mcpx-test-root";
const ROOT_NAME = "mcpx-test-root";
const EXIT = { OK: 0, FAILED: 1, USAGE: 2, UNSUPPORTED: 3 };

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");

function usage(msg) {
  process.stderr.write(`ts_client: ${msg}\n`);
  process.exit(EXIT.USAGE);
}

// ------------------------------------------------------------------ options

function parseArgs(argv) {
  const o = {
    sdk: "v1", prefix: "", url: null, expectText: [], expectTool: [], expectError: false,
    timeout: 60, cancelAfter: 1.0, mode: "legacy", env: {}, command: [], scenario: null, args: [], elicit: null,
  };
  const dd = argv.indexOf("--");
  if (dd >= 0) {
    o.command = argv.slice(dd + 1);
    argv = argv.slice(0, dd);
  }
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) usage(`${a} needs a value`);
      return argv[++i];
    };
    switch (a) {
      case "--sdk": o.sdk = val(); break;
      case "--prefix": o.prefix = val(); break;
      case "--url": o.url = val(); break;
      case "--expect-text": o.expectText.push(val()); break;
      case "--expect-tool": o.expectTool.push(val()); break;
      case "--expect-error": o.expectError = true; break;
      case "--timeout": o.timeout = Number(val()); break;
      case "--cancel-after": o.cancelAfter = Number(val()); break;
      case "--mode": o.mode = val(); break;
      // Declare elicitation in every scenario; answer each with accept or decline.
      case "--elicit": o.elicit = val(); break;
      case "--env": { const [k, ...v] = val().split("="); o.env[k] = v.join("="); break; }
      default:
        if (a.startsWith("--")) usage(`unknown option ${a}`);
        if (o.scenario === null) o.scenario = a; else o.args.push(a);
    }
  }
  if (!o.scenario) usage("no scenario given");
  if (!SCENARIOS[o.scenario]) usage(`unknown scenario ${o.scenario}; one of ${Object.keys(SCENARIOS).join(", ")}`);
  if (!!o.url === (o.command.length > 0)) usage("give either --url URL or -- COMMAND ...");
  if (!["v1", "v2"].includes(o.sdk)) usage("--sdk is v1 or v2");
  return o;
}

// ---------------------------------------------------------------- SDK loading

async function load(pkg, file) {
  const p = path.join(peersNode, "node_modules", pkg, file);
  if (!fs.existsSync(p)) {
    throw new Unsupported(`${pkg} not found at ${p}: run tests/peers/install.sh`);
  }
  return import(pathToFileURL(p).href);
}

class Unsupported extends Error {}

async function loadSdk(sdk) {
  if (sdk === "v1") {
    const pkg = "@modelcontextprotocol/sdk";
    const { Client } = await load(pkg, "dist/esm/client/index.js");
    const { StdioClientTransport } = await load(pkg, "dist/esm/client/stdio.js");
    const { StreamableHTTPClientTransport } = await load(pkg, "dist/esm/client/streamableHttp.js");
    const t = await load(pkg, "dist/esm/types.js");
    const version = JSON.parse(fs.readFileSync(path.join(peersNode, "node_modules", pkg, "package.json"))).version;
    return {
      version, Client, StdioClientTransport, StreamableHTTPClientTransport,
      // v1 registers handlers by schema, v2 by method name.
      handle: (client, method, fn) => client.setRequestHandler({
        "sampling/createMessage": t.CreateMessageRequestSchema,
        "elicitation/create": t.ElicitRequestSchema,
        "roots/list": t.ListRootsRequestSchema,
      }[method], fn),
      callTool: (client, params, options) => client.callTool(params, undefined, options),
      clientOptions: () => ({}),
    };
  }
  const pkg = "@modelcontextprotocol/client";
  const { Client, StreamableHTTPClientTransport } = await load(pkg, "dist/index.mjs");
  const { StdioClientTransport } = await load(pkg, "dist/stdio.mjs");
  const version = JSON.parse(fs.readFileSync(path.join(peersNode, "node_modules", pkg, "package.json"))).version;
  return {
    version, Client, StdioClientTransport, StreamableHTTPClientTransport,
    handle: (client, method, fn) => client.setRequestHandler(method, fn),
    callTool: (client, params, options) => client.callTool(params, options),
    clientOptions: (o) => ({
      versionNegotiation: { mode: o.mode === "legacy" || o.mode === "auto" ? o.mode : { pin: o.mode } },
    }),
  };
}

// ----------------------------------------------------------------- helpers

function textsOf(v) {
  const out = [];
  const walk = (x) => {
    if (typeof x === "string") out.push(x);
    else if (Array.isArray(x)) x.forEach(walk);
    else if (x && typeof x === "object") Object.values(x).forEach(walk);
  };
  walk(v);
  return out.join("\n");
}

function answerFor(s) {
  if (Array.isArray(s.enum)) return s.enum[0];
  if (Array.isArray(s.oneOf)) return s.oneOf[0].const;
  switch (s.type) {
    case "string":
      return { email: "mcpx@example.com", uri: "https://example.com/mcpx", date: "2026-01-02",
        "date-time": "2026-01-02T03:04:05Z" }[s.format] ?? ELICIT_TEXT;
    case "boolean": return true;
    case "integer": case "number":
      return s.default !== undefined ? s.default : (s.minimum !== undefined ? s.minimum : 42);
    case "array": {
      const it = s.items || {};
      if (Array.isArray(it.enum)) return it.enum.slice(0, 1);
      if (Array.isArray(it.anyOf)) return [it.anyOf[0].const];
      return [];
    }
    default: return undefined;
  }
}

class Report {
  constructor(scenario, sdk, version) {
    this.data = { sdk: `typescript-${sdk}`, sdk_version: version, scenario, ok: false, failures: [],
      notifications: [], server_requests: [] };
  }
  fail(m) { this.data.failures.push(m); }
  expect(c, m) { if (!c) this.fail(m); }
}

function toolAndArgs(o, def) {
  const tool = o.args.length > 0 ? o.args[0] : def;
  const args = o.args.length > 1 ? JSON.parse(o.args[1]) : {};
  return [o.prefix + tool, args];
}

function checkCallOk(r, result, what) {
  if (result.jsonrpc_error) r.fail(`${what}: JSON-RPC error ${JSON.stringify(result.jsonrpc_error)}`);
  else if (result.isError) r.fail(`${what}: tool returned isError: ${textsOf(result.content).slice(0, 500)}`);
}

function checkTexts(r, result, o) {
  const text = textsOf(result);
  for (const s of o.expectText) r.expect(text.includes(s), `expected text ${JSON.stringify(s)} in the result`);
}

const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

// ---------------------------------------------------------------- connection

class Conn {
  constructor(sdk, client, report) {
    this.sdk = sdk;
    this.client = client;
    this.report = report;
    this.progress = [];
    this.waiters = [];
    this.mark = 0;
  }

  async listTools() {
    const tools = [];
    let cursor;
    do {
      const r = await this.client.listTools(cursor ? { cursor } : undefined);
      tools.push(...r.tools);
      cursor = r.nextCursor;
    } while (cursor);
    return tools;
  }

  async listPaged(fn, key) {
    const items = [];
    let cursor;
    do {
      const r = await this.client[fn](cursor ? { cursor } : undefined);
      items.push(...r[key]);
      cursor = r.nextCursor;
    } while (cursor);
    return items;
  }

  async callTool(name, args, { progress = false, signal } = {}) {
    const options = { timeout: 120000 };
    if (progress) options.onprogress = (p) => this.progress.push(p);
    if (signal) options.signal = signal;
    try {
      return await this.sdk.callTool(this.client, { name, arguments: args }, options);
    } catch (e) {
      if (signal && signal.aborted) throw e;
      if (typeof e?.code === "number") return { jsonrpc_error: { code: e.code, message: e.message, data: e.data } };
      throw e;
    }
  }

  notified(method) {
    return this.report.data.notifications.slice(this.mark).some((n) => n.method === method);
  }
}

async function connect(o, report, sdk) {
  const capabilities = { sampling: {}, roots: { listChanged: true } };
  if (o.scenario === "elicitation" || o.scenario === "script" || o.elicit) capabilities.elicitation = {};
  const client = new sdk.Client({ name: "mcpx-ts-test-client", version: "1.0.0" },
    { capabilities, ...sdk.clientOptions(o) });
  const conn = new Conn(sdk, client, report);

  sdk.handle(client, "sampling/createMessage", async (req) => {
    report.data.server_requests.push({ method: "sampling/createMessage", params: req.params });
    return { role: "assistant", content: { type: "text", text: SAMPLED_TEXT }, model: SAMPLED_MODEL, stopReason: "endTurn" };
  });
  if (capabilities.elicitation) {
    sdk.handle(client, "elicitation/create", async (req) => {
      report.data.server_requests.push({ method: "elicitation/create", params: req.params });
      if (o.elicit === "decline") return { action: "decline" };
      const props = req.params?.requestedSchema?.properties || {};
      const content = {};
      for (const [k, s] of Object.entries(props)) {
        const v = answerFor(s);
        if (v !== undefined) content[k] = v;
      }
      return { action: "accept", content };
    });
  }
  sdk.handle(client, "roots/list", async () => {
    report.data.server_requests.push({ method: "roots/list" });
    return { roots: [{ uri: ROOT_URI, name: ROOT_NAME }] };
  });
  client.fallbackNotificationHandler = async (n) => {
    report.data.notifications.push({ method: n.method, params: n.params });
    for (const w of conn.waiters.splice(0)) w();
  };

  let transport;
  if (o.url) {
    transport = new sdk.StreamableHTTPClientTransport(new URL(o.url));
  } else {
    transport = new sdk.StdioClientTransport({
      command: o.command[0], args: o.command.slice(1), env: { ...process.env, ...o.env }, stderr: "inherit",
    });
  }
  // v1 has no accessor for the negotiated revision; it hands it to the transport.
  let negotiated = null;
  if (!client.getNegotiatedProtocolVersion) {
    const set = transport.setProtocolVersion?.bind(transport);
    transport.setProtocolVersion = (v) => { negotiated = v; set?.(v); };
  }
  await client.connect(transport);
  report.data.protocol_version = client.getNegotiatedProtocolVersion?.() ?? negotiated;
  report.data.server_info = client.getServerVersion() ?? null;
  conn.capabilities = client.getServerCapabilities() || {};
  return conn;
}

// --------------------------------------------------------------- scenarios

const SCENARIOS = {
  async list(c, r, o) {
    r.data.tools = (await c.listTools()).map((t) => t.name);
    const caps = c.capabilities;
    r.data.resources = caps.resources ? (await c.listPaged("listResources", "resources")).map((x) => x.uri) : [];
    r.data.resource_templates = caps.resources
      ? (await c.listPaged("listResourceTemplates", "resourceTemplates")).map((x) => x.uriTemplate) : [];
    r.data.prompts = caps.prompts ? (await c.listPaged("listPrompts", "prompts")).map((x) => x.name) : [];
    r.data.capabilities = caps;
    for (const n of o.expectTool) r.expect(r.data.tools.includes(n), `tool ${JSON.stringify(n)} not listed`);
  },

  async call(c, r, o) {
    if (o.args.length === 0) usage("call needs TOOL [ARGS_JSON]");
    const [tool, args] = toolAndArgs(o, "");
    await c.listTools();
    const result = await c.callTool(tool, args);
    Object.assign(r.data, { tool, result });
    if (o.expectError) r.expect(!!result.jsonrpc_error || !!result.isError, "expected an error result");
    else checkCallOk(r, result, tool);
    checkTexts(r, result, o);
  },

  async elicitation(c, r, o) {
    const [tool, args] = toolAndArgs(o, "ask_user");
    await c.listTools();
    const result = await c.callTool(tool, args);
    Object.assign(r.data, { tool, result });
    checkCallOk(r, result, tool);
    r.expect(r.data.server_requests.some((x) => x.method === "elicitation/create"), "the server never sent elicitation/create");
    r.expect(textsOf(result).includes(ELICIT_TEXT), `the elicited answer ${ELICIT_TEXT} is not in the result`);
    checkTexts(r, result, o);
  },

  async sampling(c, r, o) {
    const [tool, args] = toolAndArgs(o, "ask_model");
    await c.listTools();
    const result = await c.callTool(tool, args);
    Object.assign(r.data, { tool, result });
    checkCallOk(r, result, tool);
    r.expect(r.data.server_requests.some((x) => x.method === "sampling/createMessage"), "the server never sent sampling/createMessage");
    r.expect(textsOf(result).includes(SAMPLED_TEXT), `the sampled answer ${SAMPLED_TEXT} is not in the result`);
    checkTexts(r, result, o);
  },

  async roots(c, r, o) {
    const [tool, args] = toolAndArgs(o, "list_roots");
    await c.listTools();
    const result = await c.callTool(tool, args);
    Object.assign(r.data, { tool, result });
    checkCallOk(r, result, tool);
    r.expect(r.data.server_requests.some((x) => x.method === "roots/list"), "the server never sent roots/list");
    r.expect(textsOf(result).includes(ROOT_URI), `the root ${ROOT_URI} is not in the result`);
    checkTexts(r, result, o);
  },

  async progress(c, r, o) {
    const [tool, args] = toolAndArgs(o, "slow");
    await c.listTools();
    const result = await c.callTool(tool, args, { progress: true });
    Object.assign(r.data, { tool, result, progress: c.progress });
    checkCallOk(r, result, tool);
    r.expect(c.progress.length > 0, "no progress notification arrived");
    const values = c.progress.map((p) => p.progress);
    r.expect(values.every((v, i) => i === 0 || v >= values[i - 1]), `progress values not increasing: ${values}`);
    checkTexts(r, result, o);
  },

  async cancel(c, r, o) {
    const [tool, args] = toolAndArgs(o, "slow");
    await c.listTools();
    r.data.tool = tool;
    const ac = new AbortController();
    let finished = false;
    const call = c.callTool(tool, args, { signal: ac.signal }).then(
      (res) => { finished = true; return res; },
      (err) => ({ aborted: ac.signal.aborted, error: String(err) }),
    );
    await sleep(o.cancelAfter * 1000);
    r.expect(!finished, `${tool} finished before it could be cancelled`);
    ac.abort("cancelled by test driver"); // the SDK sends notifications/cancelled
    const outcome = await call;
    r.expect(outcome.aborted === true, `the call did not end as aborted: ${JSON.stringify(outcome)}`);
    const tools = await c.listTools();
    r.data.tools_after_cancel = tools.length;
    r.expect(tools.length > 0, "no tools listed after the cancellation");
    await sleep(300);
  },

  async read(c, r, o) {
    if (o.args.length === 0) usage("read needs URI");
    const result = await c.client.readResource({ uri: o.args[0] });
    Object.assign(r.data, { uri: o.args[0], result });
    r.expect((result.contents || []).length > 0, "no contents");
    checkTexts(r, result, o);
  },

  async prompt(c, r, o) {
    if (o.args.length === 0) usage("prompt needs NAME [ARGS_JSON]");
    const args = o.args.length > 1 ? JSON.parse(o.args[1]) : {};
    const result = await c.client.getPrompt({ name: o.args[0], arguments: args });
    Object.assign(r.data, { prompt: o.args[0], result });
    r.expect((result.messages || []).length > 0, "no messages");
    checkTexts(r, result, o);
  },

  async complete(c, r, o) {
    if (o.args.length !== 4 || !["prompt", "template"].includes(o.args[0])) usage("complete needs prompt|template NAME ARG VALUE");
    const [kind, name, arg, value] = o.args;
    const ref = kind === "prompt" ? { type: "ref/prompt", name } : { type: "ref/resource", uri: name };
    const result = await c.client.complete({ ref, argument: { name: arg, value } });
    r.data.result = result;
    r.data.values = result.completion?.values || [];
    r.expect(r.data.values.length > 0, "no completion values");
    checkTexts(r, result, o);
  },

  // Steps as in py_client.py run_script.
  async script(c, r, o) {
    if (o.args.length !== 1) usage("script needs STEPS_JSON");
    const steps = JSON.parse(o.args[0]);
    r.data.steps = [];
    await c.listTools();
    for (const [i, step] of steps.entries()) {
      const out = { op: step.op };
      r.data.steps.push(out);
      if (step.op === "list_tools") {
        const deadline = Date.now() + 1000 * (step.retry_for || 0);
        let names, missing, present;
        for (;;) {
          names = (await c.listTools()).map((t) => t.name);
          missing = (step.expect_tools || []).filter((n) => !names.includes(n));
          present = (step.expect_absent || []).filter((n) => names.includes(n));
          if ((missing.length === 0 && present.length === 0) || Date.now() >= deadline) break;
          await sleep(250);
        }
        out.tools = names;
        for (const n of missing) r.fail(`step ${i}: tool ${n} not listed`);
        for (const n of present) r.fail(`step ${i}: tool ${n} still listed`);
      } else if (step.op === "call") {
        const tool = o.prefix + step.tool;
        const expect = step.expect || "ok";
        c.mark = r.data.notifications.length; // wait_notification looks from here on
        const deadline = Date.now() + 1000 * (step.retry_for || 0);
        let result, good, attempts = 0;
        for (;;) {
          attempts++;
          c.progress = [];
          result = await c.callTool(tool, step.args || {}, { progress: !!step.progress });
          const isErr = !!result.jsonrpc_error || !!result.isError;
          good = expect === "any" || (expect === "error") === isErr;
          if (step.expect_text !== undefined && !textsOf(result).includes(step.expect_text)) good = false;
          if (good || Date.now() >= deadline) break;
          await sleep(250);
        }
        Object.assign(out, { tool, result, attempts });
        if (step.progress) out.progress = c.progress;
        r.expect(good, `step ${i}: ${tool} gave ${JSON.stringify(result)} (expected ${expect}, text ${step.expect_text})`);
      } else if (step.op === "wait_notification") {
        const until = Date.now() + 1000 * (step.timeout ?? 5);
        while (!c.notified(step.method) && Date.now() < until) {
          await Promise.race([new Promise((res) => c.waiters.push(res)), sleep(until - Date.now())]);
        }
        out.seen = c.notified(step.method);
        r.expect(out.seen, `step ${i}: no ${step.method} notification`);
      } else if (step.op === "sleep") {
        await sleep(1000 * step.seconds);
      } else if (step.op === "signal") {
        c.mark = r.data.notifications.length; // wait_notification looks from here on
        fs.writeFileSync(step.path, "");
      } else if (step.op === "wait_file") {
        const until = Date.now() + 1000 * (step.timeout ?? 30);
        while (!fs.existsSync(step.path) && Date.now() < until) await sleep(50);
        out.seen = fs.existsSync(step.path);
        r.expect(out.seen, `step ${i}: no file ${step.path}`);
      } else {
        usage(`unknown script op ${step.op}`);
      }
    }
  },
};

// -------------------------------------------------------------------- main

async function main() {
  const o = parseArgs(process.argv.slice(2));
  let sdk;
  let report = new Report(o.scenario, o.sdk, null);
  let code = EXIT.OK;
  let conn;
  const timer = setTimeout(() => {
    report.fail(`timed out after ${o.timeout}s`);
    process.stdout.write(JSON.stringify(report.data) + "\n", () => process.exit(EXIT.FAILED));
  }, o.timeout * 1000);
  try {
    sdk = await loadSdk(o.sdk);
    report = new Report(o.scenario, o.sdk, sdk.version);
    conn = await connect(o, report, sdk);
    await SCENARIOS[o.scenario](conn, report, o);
  } catch (e) {
    if (e instanceof Unsupported) {
      report.data.unsupported = e.message;
      code = EXIT.UNSUPPORTED;
    } else {
      report.fail(`exception: ${e?.stack || e}`);
    }
  }
  try {
    await conn?.client.close();
  } catch (e) {
    report.data.teardown_error = String(e);
  }
  clearTimeout(timer);
  if (code === EXIT.OK) {
    report.data.ok = report.data.failures.length === 0;
    code = report.data.ok ? EXIT.OK : EXIT.FAILED;
  }
  process.stdout.write(JSON.stringify(report.data) + "\n", () => process.exit(code));
}

main();
