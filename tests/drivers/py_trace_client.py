#!/usr/bin/env python3
"""A client on the official Python SDK (mcp 1.30.0) that starts traces, for
the traces test: over Streamable HTTP with a `traceparent` header on every
request, it calls each tool named with `_meta.traceparent` (and
`tracestate`) as an instrumented application sends them, or without. It
accepts every elicitation, filling each field (`true` for a boolean, "Ada"
for text).

    python py_trace_client.py URL HEADER_TRACEPARENT CALLS_JSON

CALLS_JSON: [{"tool": NAME, "meta": {...} or null}, ...]. Prints one JSON
line: {"results": [the text of each call's result], "error": null or why}.
"""

from __future__ import annotations

import json
import sys

import anyio
from mcp import ClientSession, types
from mcp.client.streamable_http import streamablehttp_client


async def elicited(_context, params: types.ElicitRequestParams) -> types.ElicitResult:
    props = (getattr(params, "requestedSchema", None) or {}).get("properties", {})
    content = {k: True if p.get("type") == "boolean" else "Ada" for k, p in props.items()}
    return types.ElicitResult(action="accept", content=content)


async def main() -> None:
    with anyio.fail_after(60):
        await run()


async def run() -> None:
    url, header, calls = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    results = []
    async with streamablehttp_client(url, headers={"traceparent": header}) as (read, write, _):
        async with ClientSession(read, write, elicitation_callback=elicited) as session:
            await session.initialize()
            for c in calls:
                r = await session.call_tool(c["tool"], {}, meta=c.get("meta"))
                if r.isError:
                    raise RuntimeError(f"{c['tool']} answered an error: {r.content}")
                results.append(r.content[0].text)
    print(json.dumps({"results": results, "error": None}), flush=True)


try:
    anyio.run(main)
except Exception as e:  # noqa: BLE001 - reported to the test
    print(json.dumps({"results": [], "error": f"{type(e).__name__}: {e}"}), flush=True)
    sys.exit(1)
