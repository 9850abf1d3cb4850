#!/usr/bin/env python3
"""A 2025-11-25 task client on the official Python SDK's experimental tasks
API (mcp 1.30.0: session.experimental), for end-to-end tests of mcpx.

  py_task_client.py [--header 'N: V']... [--foreign 'N: V'] [--elicit accept|decline] TOOL ARGS_JSON --url URL
  py_task_client.py [--foreign ...] [--elicit ...] TOOL ARGS_JSON -- COMMAND [ARGS...]

It declares the tasks capability (a tasks/list handler), lists the tools
(TOOL's execution.taskSupport is reported), calls TOOL as a task (ttl 60 s),
polls tasks/get until the task is terminal (bounded), fetches tasks/result
and finds the task in tasks/list. With --foreign (HTTP only) a second
session with that header instead (another principal) asks tasks/get and
tasks/result about the task; each must be refused.

With --elicit it declares form elicitation and answers every
elicitation/create with {approve: true} and that action (an approval mcpx
asks for); the report's `asked` lists the questions' related-task ids.

Prints a one-line JSON report: {ok, taskSupport, created, taskId, statuses,
text, isError, listed, asked, foreign: [error messages], error}. Exit 0 when
the task was created at once and its result fetched (and every foreign
request refused), 1 otherwise, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings

import anyio
import mcp
import mcp.types as types
from mcp.client.experimental.task_handlers import ExperimentalTaskHandlers
from mcp.shared.exceptions import McpError

warnings.filterwarnings("ignore", category=DeprecationWarning)


async def no_tasks_of_ours(ctx, params):
    return types.ListTasksResult(tasks=[])


def headers_of(lines):
    return dict((k.strip(), v.strip()) for k, _, v in (h.partition(":") for h in lines)) or None


def transport(opts, headers):
    if opts.url:
        from mcp.client.streamable_http import streamablehttp_client

        return streamablehttp_client(opts.url, headers=headers)
    from mcp.client.stdio import stdio_client

    return stdio_client(mcp.StdioServerParameters(command=opts.command[0], args=opts.command[1:]))


async def session_do(opts, headers, work, report):
    async def elicit(ctx, params):
        meta = params.meta.model_dump(by_alias=True) if params.meta else {}
        report.setdefault("asked", []).append((meta.get("io.modelcontextprotocol/related-task") or {}).get("taskId"))
        if opts.elicit == "accept":
            return types.ElicitResult(action="accept", content={"approve": True})
        return types.ElicitResult(action="decline")

    async with transport(opts, headers) as streams:
        read, write = streams[0], streams[1]
        handlers = ExperimentalTaskHandlers(list_tasks=no_tasks_of_ours)
        callback = elicit if opts.elicit else None
        async with mcp.ClientSession(read, write, experimental_task_handlers=handlers, elicitation_callback=callback) as s:
            await s.initialize()
            return await work(s)


async def run(opts, report):
    async def create_and_poll(s):
        tools = (await s.list_tools()).tools
        tool = next((t for t in tools if t.name == opts.tool), None)
        report["taskSupport"] = tool.execution.taskSupport if tool and tool.execution else None
        created = await s.experimental.call_tool_as_task(opts.tool, json.loads(opts.args), ttl=60_000)
        report["created"] = created.task.status
        task_id = created.task.taskId
        report["taskId"] = task_id
        report["statuses"] = []
        for _ in range(300):
            got = await s.experimental.get_task(task_id)
            report["statuses"].append(got.status)
            if got.status in ("completed", "failed", "cancelled"):
                break
            await anyio.sleep(min((got.pollInterval or 100) / 1000, 0.5))
        result = await s.experimental.get_task_result(task_id, types.CallToolResult)
        report["text"] = " ".join(c.text for c in result.content if isinstance(c, types.TextContent))
        report["isError"] = result.isError
        listed = await s.experimental.list_tasks()
        report["listed"] = any(t.taskId == task_id for t in listed.tasks)

    await session_do(opts, headers_of(opts.header), create_and_poll, report)
    if opts.foreign:
        async def ask_foreign(s):
            report["foreign"] = []
            for ask in (s.experimental.get_task, lambda t: s.experimental.get_task_result(t, types.CallToolResult)):
                try:
                    await ask(report["taskId"])
                    report["foreign"].append(None)
                except McpError as e:
                    report["foreign"].append(e.error.message)

        await session_do(opts, headers_of(opts.header + [opts.foreign]), ask_foreign, report)
    foreign_ok = not opts.foreign or (len(report["foreign"]) == 2 and None not in report["foreign"])
    created_ok = report.get("created") == ("input_required" if opts.elicit else "working")
    report["ok"] = created_ok and "text" in report and foreign_ok


def main():
    argv = sys.argv[1:]
    command = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser()
    p.add_argument("--url")
    p.add_argument("--header", action="append", default=[])
    p.add_argument("--foreign", help="a header of another principal (HTTP)")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--elicit", choices=["accept", "decline"])
    p.add_argument("tool")
    p.add_argument("args")
    opts = p.parse_args(argv)
    opts.command = command
    if bool(opts.url) == bool(command) or (opts.foreign and not opts.url):
        p.error("give either --url URL or -- COMMAND ...; --foreign needs --url")
    report = {"ok": False}
    try:
        async def bounded():
            with anyio.fail_after(opts.timeout):
                await run(opts, report)

        anyio.run(bounded)
    except BaseException as e:  # a timeout, a transport error: reported
        report["error"] = repr(e)
    print(json.dumps(report), flush=True)
    sys.exit(0 if report["ok"] else 1)


if __name__ == "__main__":
    main()
