#!/usr/bin/env node
// A skills host for end-to-end tests: the official TypeScript SDK v2 client
// (@modelcontextprotocol/client 2.4.0) with its `SkillsClient`, the host
// side of the MCP Skills extension (SEP-2640), which walks `skills/list`,
// gets entries and reads every file of a skill, checking each against the
// entry: listed, its size, its SHA-256 digest and, for a SKILL.md, the
// frontmatter equal to the entry's.
//
//   node ts_skills_client.mjs [--mode legacy|2026-07-28] --url URL
//
// Prints one JSON line on stdout: the negotiated revision, what the server
// offered (`supported`, `directoryRead`), the listing (`skills`, `invalid`,
// `ttlMs`, `cacheScope`), and for every skill `files` (each file read and
// verified: uri, size, verified, and for SKILL.md its frontmatter) and `got`
// (its `skills/get` entry), then `unknown` (the error of a `skills/get` of a
// URI no server serves). Exit 0 when it could report, 1 on failure (stderr).
// The packages come from .peers/node (tests/peers/install.sh), or from the
// directory named by MCPX_PEERS_NODE.

import path from "node:path";
import fs from "node:fs";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");

function fail(msg) {
  process.stderr.write(`ts_skills_client: ${msg}\n`);
  process.exit(1);
}

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const url = opt("--url", null);
const mode = opt("--mode", "legacy");
if (!url) fail("--url URL is required");

async function load(pkg, file) {
  const p = path.join(peersNode, "node_modules", pkg, file);
  if (!fs.existsSync(p)) fail(`${pkg} not found at ${p}: run tests/peers/install.sh`);
  return import(pathToFileURL(p).href);
}

const pkg = "@modelcontextprotocol/client";
const { Client, StreamableHTTPClientTransport } = await load(pkg, "dist/index.mjs");
const { SkillsClient } = await load(pkg, "dist/ext/skills/index.mjs");

const timer = setTimeout(() => fail("timed out after 60 s"), 60_000);
try {
  const client = new Client(
    { name: "mcpx-ts-skills-host", version: "1.0.0" },
    { capabilities: {}, versionNegotiation: { mode: mode === "legacy" ? "legacy" : { pin: mode } } },
  );
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const skills = new SkillsClient(client);
  const report = {
    protocol: client.getNegotiatedProtocolVersion(),
    supported: skills.supported,
    directoryRead: skills.directoryRead,
  };
  const listing = await skills.list();
  Object.assign(report, { skills: listing.skills, invalid: listing.invalid, ttlMs: listing.ttlMs ?? null, cacheScope: listing.cacheScope ?? null });
  report.files = {};
  report.got = {};
  for (const skill of listing.skills) {
    const files = [];
    for (const r of skill.resources) {
      const f = await skills.read(skill, r.uri);
      files.push({ uri: f.uri, size: f.bytes.length, verified: f.verified, ...(f.frontmatter ? { frontmatter: f.frontmatter } : {}) });
    }
    report.files[skill.uri] = files;
    // The skill's root directory, when directories are read (the SDK walks its pages).
    if (skills.directoryRead) {
      const root = skill.uri.replace(/\/SKILL\.md$/, "");
      report.dirs = report.dirs ?? {};
      report.dirs[root] = (await skills.readDirectory(root)).resources.map((r) => ({ uri: r.uri, mimeType: r.mimeType ?? null }));
    }
    report.got[skill.uri] = (await skills.get(skill.uri)).skill;
  }
  try {
    await skills.get("skill://nobody/git-workflow/SKILL.md");
    report.unknown = null;
  } catch (e) {
    report.unknown = { code: e.code ?? null, message: String(e.message) };
  }
  await client.close();
  clearTimeout(timer);
  process.stdout.write(JSON.stringify(report) + "\n");
  process.exit(0);
} catch (e) {
  fail(e?.stack || String(e));
}
