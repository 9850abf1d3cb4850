#!/usr/bin/env node
// A skills server (MCP Skills extension, `io.modelcontextprotocol/skills`,
// SEP-2640) built on the official TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0, whose `ext/skills` implements the
// extension's server side): a `SkillsExtension` over a `SkillSource` of one
// skill, attached to an `McpServer`, served on Streamable HTTP by the SDK's
// `createMcpHandler` (2026-07-28 requests, and 2025-era ones through its
// stateless legacy fallback) at http://127.0.0.1:PORT/mcp.
//
//   node ts_skills_server.mjs --port PORT [--name NAME]
//
// The skill: skill://git-workflow/SKILL.md with references/GUIDE.md, its
// entry (digests, sizes, frontmatter parsed from SKILL.md) built by the
// SDK's `skillEntry`. The source has no `readDirectory`, so the server
// declares the extension without `directoryRead` and does not serve
// `resources/directory/read`. Prints "listening PORT" on stderr when ready.
// The packages come from .peers/node (tests/peers/install.sh), or from the
// directory named by MCPX_PEERS_NODE.

import http from "node:http";
import path from "node:path";
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");

function fail(msg) {
  process.stderr.write(`ts_skills_server: ${msg}\n`);
  process.exit(2);
}

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const port = Number(opt("--port", ""));
const name = opt("--name", "ts-skills");
if (!Number.isInteger(port) || port <= 0) fail("--port PORT is required");

async function load(pkg, file) {
  const p = path.join(peersNode, "node_modules", pkg, file);
  if (!fs.existsSync(p)) fail(`${pkg} not found at ${p}: run tests/peers/install.sh`);
  return import(pathToFileURL(p).href);
}

const { McpServer, createMcpHandler } = await load("@modelcontextprotocol/server", "dist/index.mjs");
const { SkillsExtension, skillEntry } = await load("@modelcontextprotocol/server", "dist/ext/skills/index.mjs");

const SKILL_MD = `---
name: git-workflow
description: Branch and commit the way the TypeScript team does.
license: MIT
compatibility: Requires git 2.40 or later.
---

# Git workflow (TypeScript team)

- One pull request per change; squash on merge.
- See references/GUIDE.md for commit messages.
`;
const GUIDE = "# Commit messages\n\nImperative mood, at most 72 characters in the subject.\n";

const files = { "SKILL.md": SKILL_MD, "references/GUIDE.md": GUIDE };
const entry = await skillEntry("git-workflow", files);
const byUri = new Map(Object.entries(files).map(([p, text]) => [`skill://git-workflow/${p}`, text]));

const skills = new SkillsExtension({
  source: {
    async list() {
      return { skills: [entry] };
    },
    async get(uri) {
      return uri === entry.uri ? entry : undefined;
    },
    async read(uri) {
      const text = byUri.get(uri);
      return text === undefined ? undefined : { text, mimeType: "text/markdown" };
    },
    async listResources() {
      return [{ uri: entry.uri, name: "git-workflow", mimeType: "text/markdown" }];
    },
  },
  cacheHint: { ttlMs: 60000, cacheScope: "public" },
  strict: true,
});

const handler = createMcpHandler(() => {
  const mcp = new McpServer({ name, version: "1.0.0" });
  skills.attach(mcp);
  return mcp;
});

// node:http to the handler's web-standard fetch face and back.
const server = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(", ") : v);
    }
    const body = req.method === "GET" || req.method === "HEAD" ? undefined : Buffer.concat(chunks);
    const response = await handler.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (e) {
    process.stderr.write(`ts_skills_server: ${e?.stack || e}\n`);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  }
});
server.listen(port, "127.0.0.1", () => process.stderr.write(`listening ${port}\n`));
