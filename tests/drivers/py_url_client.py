#!/usr/bin/env python3
"""URL-mode elicitation with the official Python SDK as the client (mcp
1.30.0; mcp 2.3.0 too), over Streamable HTTP with a bearer token.

    python py_url_client.py URL TOKEN TOOL --browser "CMD ARGS..." [--mode M]

Connects as a 2025-11-25 client: passing an elicitation callback makes the
SDK declare `elicitation: {form: {}, url: {}}`. Calls TOOL (no arguments).
When the call fails with -32042 (URL elicitation required; the SDK raises
a plain McpError/MCPError, turned into UrlElicitationRequiredError here),
runs `CMD ARGS... URL` (the "browser"), waits up to 20 s for
notifications/elicitation/complete with the same elicitationId, and calls
TOOL again. One JSON line on stdout:
{"ok": true, "asked": {"code": -32042, "elicitationId": ..., "url": ...},
 "completed": true|false, "text": "..."} or {"ok": false, "error": "..."}.
A first call that succeeds (already authorized) gives "asked": null.

--mode (mcp 2.x only, default legacy) is the Client's version negotiation:
with auto or 2026-07-28 the server answers input_required instead, the SDK
hands the embedded URL elicitation to the elicitation callback (which runs
the browser and accepts) and retries by itself; then "asked" is that
request's {"mode": "url", "url": ...} and "completed" is null.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import traceback

import anyio

import mcp
from mcp import types

McpError = getattr(mcp, "McpError", None) or getattr(mcp, "MCPError")
UrlElicitationRequiredError = mcp.UrlElicitationRequiredError
IS_V2 = hasattr(mcp, "MCPError")


def wire(obj):
    return obj.model_dump(by_alias=True, mode="json", exclude_none=True) if hasattr(obj, "model_dump") else obj


def text_of(result) -> str:
    text = "".join(getattr(c, "text", "") for c in result.content)
    if getattr(result, "isError", None) or getattr(result, "is_error", None):
        raise RuntimeError(f"{opts.tool} answered an error: {text}")
    return text


async def browse(url: str) -> None:
    r = await anyio.run_process([*shlex.split(opts.browser), url], check=False)
    sys.stderr.write(r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace"))
    if r.returncode != 0:
        raise RuntimeError(f"browser command exited with {r.returncode}")


async def run() -> dict:
    completed: dict[str, anyio.Event] = {}
    report: dict = {"ok": False, "asked": None, "completed": None}

    async def on_message(message) -> None:
        m = wire(getattr(message, "root", message))
        if isinstance(m, dict) and m.get("method") == "notifications/elicitation/complete":
            completed.setdefault(m["params"]["elicitationId"], anyio.Event()).set()

    async def on_elicit(_context, params):
        p = wire(params)
        if p.get("mode") != "url":
            return types.ElicitResult(action="decline")
        report["asked"] = {"mode": "url", "url": p["url"]}
        report["completed"] = None
        await browse(p["url"])
        return types.ElicitResult(action="accept")

    async def body(call) -> None:
        try:
            report["text"] = text_of(await call())
            return  # no -32042: already authorized, or the SDK took the input_required path
        except McpError as e:
            if e.error.code != types.URL_ELICITATION_REQUIRED:
                raise
            code, asked = e.error.code, UrlElicitationRequiredError.from_error(e.error).elicitations[0]
        eid = asked.elicitationId if hasattr(asked, "elicitationId") else asked.elicitation_id
        report["asked"] = {"code": code, "elicitationId": eid, "url": asked.url}
        done = completed.setdefault(eid, anyio.Event())
        await browse(asked.url)
        with anyio.move_on_after(20):
            await done.wait()
        report["completed"] = done.is_set()
        report["text"] = text_of(await call())

    headers = {"Authorization": f"Bearer {opts.token}"}
    callbacks = {"elicitation_callback": on_elicit, "message_handler": on_message}
    if IS_V2:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        transport = streamable_http_client(opts.url, http_client=create_mcp_http_client(headers=headers))
        async with mcp.Client(transport, mode=opts.mode, **callbacks) as client:
            report["protocol_version"] = client.protocol_version
            await body(lambda: client.call_tool(opts.tool, {}))
    else:
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(opts.url, headers=headers) as (read, write, _):
            async with mcp.ClientSession(read, write, **callbacks) as session:
                report["protocol_version"] = (await session.initialize()).protocolVersion
                await body(lambda: session.call_tool(opts.tool, {}))
    report["ok"] = True
    return report


def leaves(e):
    inner = getattr(e, "exceptions", None)
    return [x for sub in inner for x in leaves(sub)] if inner else [e]


async def main() -> dict:
    with anyio.fail_after(90):
        return await run()


parser = argparse.ArgumentParser()
parser.add_argument("url")
parser.add_argument("token")
parser.add_argument("tool")
parser.add_argument("--browser", required=True)
parser.add_argument("--mode", default="legacy")
opts = parser.parse_args()
try:
    report = anyio.run(main)
except BaseException as e:  # noqa: BLE001 - the report says what failed
    traceback.print_exception(e, file=sys.stderr)
    report = {"ok": False, "error": "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))}
print(json.dumps(report), flush=True)
sys.exit(0 if report["ok"] else 1)
