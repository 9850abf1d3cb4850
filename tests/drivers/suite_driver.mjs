// What the conformance suite's client drivers (suite_client.mjs,
// suite_auth_client.mjs) share: their command line (`node DRIVER MCPX URL`,
// the scenario in MCP_CONFORMANCE_SCENARIO), the pinned TypeScript SDK
// (@modelcontextprotocol/sdk from .peers/node, or MCPX_PEERS_NODE), and the
// report of steps they print as one JSON line on stdout before exiting 0
// when every step got a result, 1 when one failed (2 on bad usage).

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

export const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const sdkDir = path.join(peersNode, "node_modules", "@modelcontextprotocol", "sdk", "dist", "esm");

export const [mcpx, url] = [process.argv[2], process.argv[process.argv.length - 1]];
export const scenario = process.env.MCP_CONFORMANCE_SCENARIO;
if (!mcpx || !url || process.argv.length < 4 || !scenario) {
  process.stderr.write(`usage: MCP_CONFORMANCE_SCENARIO=S node ${path.basename(process.argv[1])} MCPX URL\n`);
  process.exit(2);
}

/** A module of the pinned SDK's ESM build, e.g. "client/index.js". */
export const load = (f) => import(pathToFileURL(path.join(sdkDir, f)).href);

export const report = { scenario, url, steps: [], ok: true };

/** Runs one step, recording its result or its error in the report. */
export const step = async (what, fn) => {
  try {
    const result = await fn();
    report.steps.push({ what, ok: true, result });
    return result;
  } catch (e) {
    report.ok = false;
    report.steps.push({ what, ok: false, error: String(e?.message ?? e) });
    return undefined;
  }
};

/** Removes the scratch folder `dir`, prints the report and exits. */
export const finish = (dir, tools) => {
  fs.rmSync(dir, { recursive: true, force: true });
  report.tools = tools;
  process.stdout.write(JSON.stringify(report) + "\n");
  process.exit(report.ok ? 0 : 1);
};
