#!/usr/bin/env python3
"""An upstream MCP server (FastMCP, mcp 1.30.0) that tells which W3C trace
context reached it, for the traces test.

    python py_trace_server.py [--name NAME] [--http PORT]

Tool:
  trace_seen()  -> JSON text {"meta": _meta.traceparent of the call,
                              "tracestate": _meta.tracestate,
                              "header": the traceparent header of the HTTP
                              request that carried it (over --http)}
  ask_name()    -> asks the user their name (elicitation) and greets them
"""

from __future__ import annotations

import argparse
import json

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="trace-upstream")
parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
opts = parser.parse_args()

app = FastMCP(opts.name, host="127.0.0.1", port=opts.http or 8000, log_level="WARNING")


@app.tool()
def trace_seen(ctx: Context) -> str:
    """The trace context this call came with."""
    rc = ctx.request_context
    meta = rc.meta.model_dump() if rc.meta is not None else {}
    request = getattr(rc, "request", None)
    header = request.headers.get("traceparent") if request is not None else None
    return json.dumps({"meta": meta.get("traceparent"), "tracestate": meta.get("tracestate"), "header": header})


class Name(BaseModel):
    name: str


@app.tool()
async def ask_name(ctx: Context) -> str:
    """Asks the user's name, then greets them."""
    answer = await ctx.elicit("What is your name?", schema=Name)
    if answer.action != "accept":
        return f"no name ({answer.action})"
    return f"hello {answer.data.name}"


if opts.http:
    app.run(transport="streamable-http")
else:
    app.run()
