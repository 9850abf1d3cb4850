#!/usr/bin/env python3
"""An upstream MCP server written with the official Python SDK (FastMCP, mcp 1.30.0).

It stands for "a server nobody on the mcpx team wrote" in the end-to-end tests.
Runs on stdio:  python py_server.py [--name NAME]
or on Streamable HTTP at http://127.0.0.1:PORT/mcp (loopback only):
                python py_server.py --http PORT
or on the 2024-11-05 HTTP+SSE transport at http://127.0.0.1:PORT/sse:
                python py_server.py --sse PORT
and over HTTPS with --tls CERT KEY (PEM files) added to either.

Tools:
  greet(name)              -> "Hello, NAME! (from py-upstream)"
  multiply(a, b)           -> the product, as text
  ask_user(question)       elicits {answer: str}; returns "user answered: ANSWER"
  ask_user_after(question, delay)
                           the same after sleeping DELAY seconds (so that another
                           client's call can start in between)
  ask_model(prompt)        sampling; returns "model said: TEXT"
  list_roots()             roots/list; returns the root URIs, one a line
  slow(steps, delay)       sleeps steps*delay seconds, reporting progress each step
  auth_header()            "authorization: VALUE" (or "(none)"): the Authorization
                           header of the HTTP request that carried the call
  env_var()                with --env-var NAME only: "NAME=VALUE" (or "NAME unset"),
                           from the process's environment
Resource:  py://info     (text "py-upstream info")
Prompt:    py_prompt(topic)
"""

from __future__ import annotations

import argparse
import asyncio
import os

from mcp.server.fastmcp import Context, FastMCP
from mcp.types import SamplingMessage, TextContent
from pydantic import BaseModel

parser = argparse.ArgumentParser()
parser.add_argument("--name", default="py-upstream")
parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT")
parser.add_argument("--sse", type=int, metavar="PORT", help="serve HTTP+SSE (2024-11-05) on 127.0.0.1:PORT")
parser.add_argument("--tls", nargs=2, metavar=("CERT", "KEY"), help="serve HTTPS with this certificate and key")
parser.add_argument("--env-var", metavar="NAME", help="add tool env_var, which reports this variable of the environment")
opts = parser.parse_args()
if opts.http and opts.sse:
    parser.error("--http and --sse exclude each other")
if opts.tls and not (opts.http or opts.sse):
    parser.error("--tls needs --http or --sse")

app = FastMCP(opts.name, host="127.0.0.1", port=opts.http or opts.sse or 8000, log_level="WARNING")


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
async def ask_user_after(ctx: Context, question: str = "What is your answer?", delay: float = 1.0) -> str:
    """Ask the user a question through elicitation, after a pause."""
    await asyncio.sleep(delay)
    return await ask_user(ctx, question)


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


@app.tool()
def auth_header(ctx: Context) -> str:
    """The Authorization header of the HTTP request that carried this call."""
    request = getattr(ctx.request_context, "request", None)
    value = request.headers.get("authorization") if request is not None else None
    return f"authorization: {value or '(none)'}"


if opts.env_var:
    @app.tool()
    def env_var() -> str:
        """The value of the environment variable this server was told to report."""
        value = os.environ.get(opts.env_var)
        return f"{opts.env_var} unset" if value is None else f"{opts.env_var}={value}"


@app.resource("py://info")
def info() -> str:
    """A static text resource."""
    return f"{opts.name} info"


@app.prompt()
def py_prompt(topic: str) -> str:
    """A prompt with one argument."""
    return f"Please write about {topic}."


def serve_tls() -> None:
    """FastMCP's own runner has no TLS options: run its app under uvicorn."""
    import uvicorn

    web = app.streamable_http_app() if opts.http else app.sse_app()
    uvicorn.run(
        web,
        host="127.0.0.1",
        port=opts.http or opts.sse,
        log_level="warning",
        ssl_certfile=opts.tls[0],
        ssl_keyfile=opts.tls[1],
    )


if __name__ == "__main__":
    if opts.tls:
        serve_tls()
    else:
        app.run("streamable-http" if opts.http else "sse" if opts.sse else "stdio")
