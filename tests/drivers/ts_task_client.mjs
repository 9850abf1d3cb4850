#!/usr/bin/env node
// A 2025-11-25 task-augmented tool call with the TypeScript SDK 1.32.2's
// experimental tasks client (`client.experimental.tasks`), against a server
// on stdio:
//
//   node ts_task_client.mjs TOOL ARGS_JSON -- COMMAND [ARGS...]
//
// It lists the tools (TOOL must say execution.taskSupport "optional" or
// "required"), calls TOOL with a task (ttl 60 s) through callToolStream, and
// then asks tasks/get and tasks/list about the task the stream created.
// Prints a one-line JSON report: {ok, taskSupport, messages: [types...],
// taskId, text, getStatus, listed, error}. Exit 0 when the stream created a
// task and ended with a result, 1 otherwise, 2 on bad usage.

import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const sdk = (f) => import(pathToFileURL(path.join(peersNode, "node_modules/@modelcontextprotocol/sdk/dist/esm", f)).href);

const argv = process.argv.slice(2);
const dd = argv.indexOf("--");
if (dd !== 2 || argv.length < 4) {
  process.stderr.write("usage: ts_task_client.mjs TOOL ARGS_JSON -- COMMAND [ARGS...]\n");
  process.exit(2);
}
const [tool, argsJson] = argv;
const [command, ...commandArgs] = argv.slice(dd + 1);

const { Client } = await sdk("client/index.js");
const { StdioClientTransport } = await sdk("client/stdio.js");
const { CallToolResultSchema } = await sdk("types.js");

const report = { ok: false, messages: [] };
// `tasks: {}` (no task-augmented requests of its own to take): mcpx offers
// tasks to 2025-11-25 clients that declare the capability.
const client = new Client({ name: "mcpx-ts-task-client", version: "1.0.0" }, { capabilities: { tasks: {} } });
const timer = setTimeout(() => {
  report.error = "timed out";
  console.log(JSON.stringify(report));
  process.exit(1);
}, 30_000);
try {
  await client.connect(new StdioClientTransport({ command, args: commandArgs, stderr: "inherit" }));
  const { tools } = await client.listTools();
  report.taskSupport = tools.find((t) => t.name === tool)?.execution?.taskSupport ?? null;
  const stream = client.experimental.tasks.callToolStream(
    { name: tool, arguments: JSON.parse(argsJson) },
    CallToolResultSchema,
    { task: { ttl: 60_000 } },
  );
  for await (const m of stream) {
    report.messages.push(m.type);
    if (m.type === "taskCreated") report.taskId = m.task.taskId;
    if (m.type === "result") report.text = m.result.content?.[0]?.text;
    if (m.type === "error") report.error = String(m.error?.message ?? m.error);
  }
  if (report.taskId) {
    report.getStatus = (await client.experimental.tasks.getTask(report.taskId)).status;
    const listed = await client.experimental.tasks.listTasks();
    report.listed = listed.tasks.some((t) => t.taskId === report.taskId);
  }
  report.ok = report.messages[0] === "taskCreated" && report.messages.at(-1) === "result";
} catch (e) {
  report.error = String(e?.stack ?? e);
}
clearTimeout(timer);
console.log(JSON.stringify(report));
await client.close().catch(() => {});
process.exit(report.ok ? 0 : 1);
