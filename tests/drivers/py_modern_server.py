#!/usr/bin/env python3
"""An upstream MCP server written with the official Python SDK 2.x (MCPServer),
served over Streamable HTTP at http://127.0.0.1:PORT/mcp (loopback only). The
SDK answers 2026-07-28 requests (server/discover, per-request _meta, no
session) and legacy ones on the same endpoint.

Run:  python py_modern_server.py --http PORT [--name NAME]

Tools:
  greet(name)              -> "Hello, NAME! (from NAME)"
  forecast(region, days)   region and days are annotated with x-mcp-header
                           (Region, Days): -> "forecast for REGION, DAYS days"
  ask_user()               elicits {answer: str}; returns "user answered: ANSWER"
                           (2026-07-28: an input_required result and the retry;
                           legacy sessions: elicitation/create)
"""

from __future__ import annotations

import argparse
from typing import Annotated

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from pydantic import BaseModel, Field

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="py-modern")
parser.add_argument("--http", type=int, metavar="PORT", required=True)
opts = parser.parse_args()

app = MCPServer(opts.name, log_level="WARNING")


@app.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}! (from {opts.name})"


@app.tool()
def forecast(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
    days: Annotated[int, Field(json_schema_extra={"x-mcp-header": "Days"})],
) -> str:
    """A weather forecast; its arguments travel as Mcp-Param-* headers too."""
    return f"forecast for {region}, {days} days"


class Answer(BaseModel):
    answer: str


@app.tool()
async def ask_user(ctx: Context) -> str | InputRequiredResult:
    """Ask the user a question (elicitation)."""
    if ctx.protocol_version == "2026-07-28":
        answered = (ctx.input_responses or {}).get("q")
        if answered is None:
            ask = ElicitRequestFormParams(message="What is your answer?", requested_schema=Answer.model_json_schema())
            return InputRequiredResult(input_requests={"q": ElicitRequest(params=ask)}, request_state="asked")
        content = getattr(answered, "content", None) or {}
        return f"user answered: {content.get('answer')} (state {ctx.request_state})"
    r = await ctx.elicit("What is your answer?", Answer)
    if r.action == "accept" and r.data is not None:
        return f"user answered: {r.data.answer}"
    return f"user declined ({r.action})"


app.run("streamable-http", host="127.0.0.1", port=opts.http)
