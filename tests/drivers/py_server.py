#!/usr/bin/env python3
"""An upstream MCP server written with the official Python SDK (FastMCP, mcp 1.30.0).

It stands for "a server nobody on the mcpx team wrote" in the end-to-end tests.
Runs on stdio:  python py_server.py [--name NAME]
or on Streamable HTTP at http://127.0.0.1:PORT/mcp (loopback only):
                python py_server.py --http PORT

Tools:
  greet(name)              -> "Hello, NAME! (from py-upstream)"
  multiply(a, b)           -> the product, as text
  ask_user(question)       elicits {answer: str}; returns "user answered: ANSWER"
  ask_model(prompt)        sampling; returns "model said: TEXT"
  list_roots()             roots/list; returns the root URIs, one a line
  slow(steps, delay)       sleeps steps*delay seconds, reporting progress each step
Resource:  py://info     (text "py-upstream info")
Prompt:    py_prompt(topic)
"""

from __future__ import annotations

import argparse
import asyncio

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="py-upstream")
parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
opts = parser.parse_args()

app = FastMCP(opts.name, host="127.0.0.1", port=opts.http or 8000, log_level="WARNING")


@app.tool()
def greet(name: str) -> str:
    """Greet someone by name."""
    return f"Hello, {name}! (from {opts.name})"


@app.tool()
def multiply(a: float, b: float) -> str:
    """Multiply two numbers."""
    return f"{a * b:g}"


class Answer(BaseModel):
    answer: str


@app.tool()
async def ask_user(ctx: Context, question: str = "What is your answer?") -> str:
    """Ask the user a question through elicitation."""
    result = await ctx.elicit(message=question, schema=Answer)
    if result.action == "accept" and result.data is not None:
        return f"user answered: {result.data.answer}"
    return f"user did not answer: {result.action}"


@app.tool()
async def ask_model(ctx: Context, prompt: str = "Say something") -> str:
    """Ask the client's model through sampling."""
    result = await ctx.session.create_message(
        messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=50,
    )
    text = result.content.text if isinstance(result.content, TextContent) else repr(result.content)
    return f"model said: {text}"


@app.tool()
async def list_roots(ctx: Context) -> str:
    """List the client's roots."""
    result = await ctx.session.list_roots()
    return "\n".join(str(r.uri) for r in result.roots) or "(no roots)"


@app.tool()
async def slow(ctx: Context, steps: int = 5, delay: float = 0.2) -> str:
    """Sleep steps*delay seconds, reporting progress after each step."""
    for i in range(1, steps + 1):
        await asyncio.sleep(delay)
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
    return f"slow done after {steps} steps"


@app.resource("py://info")
def info() -> str:
    """A static text resource."""
    return f"{opts.name} info"


@app.prompt()
def py_prompt(topic: str) -> str:
    """A prompt with one argument."""
    return f"Please write about {topic}."


if __name__ == "__main__":
    app.run("streamable-http" if opts.http else "stdio")
