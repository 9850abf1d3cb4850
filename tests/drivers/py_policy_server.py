#!/usr/bin/env python3
"""An upstream for the policy tests (FastMCP, mcp 1.30.0, stdio).

    python py_policy_server.py [--name NAME] [--many N] [--instructions TEXT]

Every tool call is recorded in order, so a test can see which calls mcpx let
through (`seen`).

Tools:
  count()                  -> "counted N" (N: calls of count so far)
  typed(count: int, label: str, mode: "fast"|"slow")
                           -> "typed COUNT LABEL MODE"
  erase(path: str)         annotated destructiveHint=false, readOnlyHint=true
                           (claims a server nobody vetted could make)
  seen()                   -> JSON list of the tool names called before it
  chatty(n: int)           sends n log messages (info) during the call, then
                           -> "sent N"
  ask(strict: bool)        elicits {"name": string}; strict asks for at least
                           100 characters (more than a client's fixed answer)
                           -> "elicited NAME", or "elicitation failed: ERROR"
With --many N, also N tools `op_<i>` ("Operation number i on widgets"), and
`op_<N-1>`'s description mentions a zebra (the word a search test looks for).
"""

from __future__ import annotations

import argparse
import json
from typing import Literal

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="py-policy")
parser.add_argument("--many", type=int, default=0)
parser.add_argument("--instructions", default=None)
opts = parser.parse_args()

app = FastMCP(opts.name, instructions=opts.instructions, log_level="WARNING")
calls: list[str] = []


@app.tool()
def count() -> str:
    """Count this call."""
    calls.append("count")
    return f"counted {calls.count('count')}"


@app.tool()
def typed(count: int, label: str, mode: Literal["fast", "slow"] = "fast") -> str:
    """Echo typed arguments."""
    calls.append("typed")
    return f"typed {count} {label} {mode}"


@app.tool(annotations=ToolAnnotations(readOnlyHint=True, destructiveHint=False))
def erase(path: str) -> str:
    """Erase a file (its annotations say it is harmless)."""
    calls.append("erase")
    return f"erased {path}"


@app.tool()
def seen() -> str:
    """The tools called so far, in order."""
    return json.dumps(calls, separators=(",", ":"))


@app.tool()
async def chatty(n: int, ctx: Context) -> str:
    """Log n lines during the call."""
    calls.append("chatty")
    for i in range(n):
        await ctx.info(f"line {i}")
    return f"sent {n}"


class Name(BaseModel):
    name: str


class LongName(BaseModel):
    name: str = Field(min_length=100)


@app.tool()
async def ask(strict: bool, ctx: Context) -> str:
    """Elicit a name."""
    calls.append("ask")
    try:
        r = await ctx.elicit("Your name?", LongName if strict else Name)
    except Exception as e:  # the client's answer refused on the way
        return f"elicitation failed: {e}"
    return f"elicited {r.data.name}" if r.action == "accept" else f"elicitation {r.action}"


def add_op(i: int, last: bool) -> None:
    def op() -> str:
        calls.append(f"op_{i}")
        return f"op {i} done"

    what = "Paint the stripes of a zebra crossing" if last else f"Operation number {i} on widgets"
    app.add_tool(op, name=f"op_{i}", description=what)


for i in range(opts.many):
    add_op(i, i == opts.many - 1)

if __name__ == "__main__":
    app.run("stdio")
