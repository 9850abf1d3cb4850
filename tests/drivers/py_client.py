#!/usr/bin/env python3
"""A real MCP client built on the official Python SDK, for end-to-end tests.

Runs one scenario against a server and prints a one-line JSON report on stdout.
Exit status: 0 every expectation held, 1 an expectation failed (or a timeout),
2 bad usage, 3 the scenario needs a feature this SDK version does not have.

Works under every pinned SDK: mcp 1.3.0, 1.9.4, 1.12.4, 1.30.0 (ClientSession)
and mcp 2.3.0 (mcp.Client). Differences handled here:
  * 1.3.0 has no message_handler: notifications queue on session.incoming_messages
    and block the session until read. Like a typical 1.3.0 application, this
    driver only starts reading them once it has read the tools list, so a server
    that sends an unsolicited notification before that deadlocks it (a real
    1.3.0 client quirk; it shows up here as a timeout).
  * 1.3.0 has no progress_callback: the progress token is set in _meta by hand.
  * elicitation exists from 1.10 on; elsewhere the scenario exits 3.
  * 1.x does not send notifications/cancelled when a call is abandoned, so the
    driver sends it; 2.x sends it itself.

Usage:
  py_client.py [options] SCENARIO [ARGS...] -- COMMAND [COMMAND ARGS...]
  py_client.py [options] --url URL SCENARIO [ARGS...]

Scenarios (tool names get --prefix prepended, e.g. --prefix demo__):
  list                          list tools/resources/templates/prompts
  call TOOL [ARGS_JSON]         call a tool
  elicitation [TOOL [ARGS]]     answer an elicitation; default tool ask_user
  sampling [TOOL [ARGS]]        answer a sampling request; default tool ask_model
  roots [TOOL [ARGS]]           answer roots/list; default tool list_roots
  progress [TOOL [ARGS]]        record progress notifications; default tool slow
  cancel [TOOL [ARGS]]          start a call, cancel it, check the server still
                                answers; default tool slow
  read URI                      read a resource
  prompt NAME [ARGS_JSON]       get a prompt
  complete REF NAME ARG VALUE   completion/complete; REF is prompt or template
  script STEPS_JSON             run steps in one session (see run_script)

Options:
  --prefix P          prepended to tool names in call-type scenarios
  --expect-text S     (repeatable) S must occur in the result's text
  --expect-tool N     (repeatable) list: tool N must be listed
  --expect-error      call: the result must be an error (isError or JSON-RPC error)
  --elicit A          declare elicitation in every scenario and answer each
                      elicitation/create with A: accept (fixed valid answers) or decline
  --timeout SECONDS   whole-run limit (default 60)
  --cancel-after S    cancel: seconds to wait before cancelling (default 1.0)
  --mode M            mcp 2.x only: legacy | auto | 2026-07-28 (default legacy)
  --env K=V           (repeatable) environment for the spawned server
  --header 'N: V'     (repeatable) HTTP header sent with every request (--url, mcp 1.x)
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from importlib.metadata import version as pkg_version
from typing import Any

import anyio

import mcp
from mcp import types

SDK_VERSION = pkg_version("mcp")
SDK_MAJOR, SDK_MINOR = (int(x) for x in SDK_VERSION.split(".")[:2])
IS_V2 = SDK_MAJOR >= 2
HAS_MESSAGE_HANDLER = (SDK_MAJOR, SDK_MINOR) >= (1, 9)  # 1.3.0: incoming_messages only
HAS_PROGRESS_CALLBACK = (SDK_MAJOR, SDK_MINOR) >= (1, 9)
HAS_ELICITATION = hasattr(types, "ElicitResult")

# Fixed answers the callbacks give; tests look for them in tool results.
ELICIT_TEXT = "mcpx-elicited-answer"
SAMPLED_TEXT = "mcpx-sampled-answer"
SAMPLED_MODEL = "mcpx-test-model"
ROOT_URI = "file:///mcpx-test-root"
ROOT_NAME = "mcpx-test-root"

McpError = getattr(mcp, "McpError", None) or getattr(mcp, "MCPError")

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_UNSUPPORTED = 0, 1, 2, 3


class Unsupported(Exception):
    pass


def wire(obj: Any) -> Any:
    """A pydantic model as its JSON wire form (same shape in every SDK version)."""
    if hasattr(obj, "model_dump"):
        return obj.model_dump(by_alias=True, mode="json", exclude_none=True)
    if isinstance(obj, list):
        return [wire(o) for o in obj]
    return obj


def texts_of(result: dict) -> str:
    """Every string inside a wire-form result, joined: what --expect-text searches."""
    out: list[str] = []

    def walk(v: Any) -> None:
        if isinstance(v, str):
            out.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(result)
    return "\n".join(out)


class Report:
    def __init__(self, scenario: str):
        self.data: dict[str, Any] = {
            "sdk": "python",
            "sdk_version": SDK_VERSION,
            "scenario": scenario,
            "ok": False,
            "failures": [],
            "notifications": [],
            "server_requests": [],
        }

    def __setitem__(self, k: str, v: Any) -> None:
        self.data[k] = v

    def __getitem__(self, k: str) -> Any:
        return self.data[k]

    def fail(self, msg: str) -> None:
        self.data["failures"].append(msg)

    def expect(self, cond: bool, msg: str) -> None:
        if not cond:
            self.fail(msg)


# ---------------------------------------------------------------- callbacks


def answer_for(schema: dict) -> Any:
    """A valid fixed answer for one primitive elicitation property."""
    t = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if "oneOf" in schema:
        return schema["oneOf"][0].get("const")
    if t == "string":
        fmt = schema.get("format")
        return {
            "email": "mcpx@example.com",
            "uri": "https://example.com/mcpx",
            "date": "2026-01-02",
            "date-time": "2026-01-02T03:04:05Z",
        }.get(fmt, ELICIT_TEXT)
    if t == "boolean":
        return True
    if t in ("integer", "number"):
        if "default" in schema:
            return schema["default"]
        return int(schema.get("minimum", 42)) if t == "integer" else float(schema.get("minimum", 42))
    if t == "array":
        items = schema.get("items", {})
        if "enum" in items:
            return items["enum"][:1]
        if "anyOf" in items:
            return [items["anyOf"][0].get("const")]
        return []
    return None


class Callbacks:
    """Client-side handlers for server requests; each records what it saw."""

    def __init__(self, report: Report):
        self.report = report
        self.notifications: list[dict] = report["notifications"]
        self.progress: list[dict] = []
        self.progress_token: Any = None
        self.got_notification = anyio.Event()
        # --elicit decline: every elicitation is declined.
        self.decline = False

    async def sampling(self, context: Any, params: Any) -> Any:
        self.report["server_requests"].append({"method": "sampling/createMessage", "params": wire(params)})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=SAMPLED_TEXT),
            model=SAMPLED_MODEL,
            stopReason="endTurn",
        )

    async def elicitation(self, context: Any, params: Any) -> Any:
        p = wire(params)
        self.report["server_requests"].append({"method": "elicitation/create", "params": p})
        if self.decline:
            return types.ElicitResult(action="decline")
        props = (p.get("requestedSchema") or {}).get("properties") or {}
        content = {k: answer_for(v) for k, v in props.items()}
        content = {k: v for k, v in content.items() if v is not None}
        return types.ElicitResult(action="accept", content=content)

    async def list_roots(self, context: Any) -> Any:
        self.report["server_requests"].append({"method": "roots/list"})
        return types.ListRootsResult(roots=[types.Root(uri=ROOT_URI, name=ROOT_NAME)])

    async def on_progress(self, progress: float, total: float | None, message: str | None = None) -> None:
        self.progress.append({"progress": progress, "total": total, "message": message})

    async def message_handler(self, message: Any) -> None:
        self.record(message)

    def record(self, message: Any) -> None:
        if isinstance(message, Exception):
            self.notifications.append({"exception": repr(message)})
            return
        m = getattr(message, "root", message)
        method = getattr(m, "method", None)
        if method is None:
            return  # a server request: the session answers it through the callbacks
        params = wire(getattr(m, "params", None))
        self.notifications.append({"method": method, "params": params})
        if method == "notifications/progress" and not HAS_PROGRESS_CALLBACK:
            if params and params.get("progressToken") == self.progress_token:
                self.progress.append(
                    {"progress": params.get("progress"), "total": params.get("total"), "message": params.get("message")}
                )
        self.got_notification.set()


# ------------------------------------------------------------- connection


class Conn:
    """One connected client session, hiding the 1.x / 2.x API differences."""

    def __init__(self, session: Any, client: Any, cb: Callbacks, tg: Any):
        self.session = session  # ClientSession (both majors)
        self.client = client  # mcp.Client on 2.x, None on 1.x
        self.cb = cb
        self.tg = tg
        self.draining = False
        self.capabilities: dict = {}

    def start_reading_notifications(self) -> None:
        """1.3.0: consume session.incoming_messages (once the tools list is read)."""
        if HAS_MESSAGE_HANDLER or self.draining:
            return
        self.draining = True

        async def drain() -> None:
            async for msg in self.session.incoming_messages:
                self.cb.record(msg)

        self.tg.start_soon(drain)

    async def list_tools(self) -> list[dict]:
        tools: list[dict] = []
        cursor = None
        while True:
            if self.client is not None:
                r = wire(await self.client.list_tools(cursor=cursor))
            elif cursor is None:
                r = wire(await self.session.list_tools())
            else:
                r = wire(await self.session.list_tools(cursor=cursor))
            tools += r.get("tools", [])
            cursor = r.get("nextCursor")
            if not cursor:
                break
        self.start_reading_notifications()
        return tools

    async def _list_paged(self, what: str, key: str) -> list[dict]:
        items: list[dict] = []
        cursor = None
        while True:
            target = self.client if self.client is not None else self.session
            fn = getattr(target, what)
            if cursor is None:
                r = wire(await fn())
            elif self.client is not None:
                r = wire(await fn(cursor=cursor))
            else:
                r = wire(await fn(cursor))
            items += r.get(key, [])
            cursor = r.get("nextCursor")
            if not cursor:
                return items

    async def list_resources(self) -> list[dict]:
        return await self._list_paged("list_resources", "resources")

    async def list_templates(self) -> list[dict]:
        return await self._list_paged("list_resource_templates", "resourceTemplates")

    async def list_prompts(self) -> list[dict]:
        return await self._list_paged("list_prompts", "prompts")

    async def call_tool(self, name: str, args: dict, progress: bool = False) -> dict:
        """Call a tool; a JSON-RPC error comes back as {"jsonrpc_error": {...}}."""
        try:
            if self.client is not None:
                r = await self.client.call_tool(name, args, progress_callback=self.cb.on_progress if progress else None)
            elif progress and HAS_PROGRESS_CALLBACK:
                r = await self.session.call_tool(name, args, progress_callback=self.cb.on_progress)
            elif progress:
                token = f"mcpx-progress-{self.session._request_id}"
                self.cb.progress_token = token
                r = await self.session.send_request(
                    types.ClientRequest(
                        types.CallToolRequest(
                            method="tools/call",
                            params=types.CallToolRequestParams(
                                name=name, arguments=args, **{"_meta": {"progressToken": token}}
                            ),
                        )
                    ),
                    types.CallToolResult,
                )
            else:
                r = await self.session.call_tool(name, args)
        except McpError as e:
            return {"jsonrpc_error": wire(e.error) if hasattr(e, "error") else {"message": str(e)}}
        return wire(r)

    async def cancel_notification(self, rid: Any) -> None:
        await self.session.send_notification(
            types.ClientNotification(
                types.CancelledNotification(
                    method="notifications/cancelled",
                    params=types.CancelledNotificationParams(requestId=rid, reason="cancelled by test driver"),
                )
            )
        )

    async def read(self, uri: str) -> dict:
        if self.client is not None:
            return wire(await self.client.read_resource(uri))
        from pydantic import AnyUrl

        return wire(await self.session.read_resource(AnyUrl(uri)))

    async def prompt(self, name: str, args: dict) -> dict:
        target = self.client if self.client is not None else self.session
        return wire(await target.get_prompt(name, args))

    async def complete(self, ref_kind: str, ref_name: str, arg: str, value: str) -> dict:
        if ref_kind == "prompt":
            ref = types.PromptReference(type="ref/prompt", name=ref_name)
        else:
            cls = getattr(types, "ResourceTemplateReference", None) or types.ResourceReference
            ref = cls(type="ref/resource", uri=ref_name)
        target = self.client if self.client is not None else self.session
        return wire(await target.complete(ref, {"name": arg, "value": value}))


async def connect_and_run(opts: argparse.Namespace, report: Report, body) -> None:
    cb = Callbacks(report)
    cb.decline = opts.elicit == "decline"
    want_elicitation = opts.scenario in ("elicitation", "script") or opts.elicit is not None
    if (opts.scenario == "elicitation" or opts.elicit) and not HAS_ELICITATION:
        raise Unsupported(f"mcp {SDK_VERSION} has no elicitation support")

    callbacks: dict[str, Any] = {
        "sampling_callback": cb.sampling,
        "list_roots_callback": cb.list_roots,
    }
    if HAS_ELICITATION and want_elicitation:
        callbacks["elicitation_callback"] = cb.elicitation
    if HAS_MESSAGE_HANDLER:
        callbacks["message_handler"] = cb.message_handler

    env = dict(os.environ)
    for kv in opts.env:
        k, _, v = kv.partition("=")
        env[k] = v

    async with anyio.create_task_group() as tg:
        if IS_V2 and opts.header:
            raise Unsupported("--header is implemented for mcp 1.x only")
        if IS_V2:
            server: Any = opts.url if opts.url else mcp.StdioServerParameters(
                command=opts.command[0], args=opts.command[1:], env=env
            )
            async with mcp.Client(server, mode=opts.mode, **callbacks) as client:
                report["protocol_version"] = client.protocol_version
                report["server_info"] = wire(client.server_info)
                conn = Conn(client.session, client, cb, tg)
                conn.capabilities = wire(client.server_capabilities) or {}
                await body(conn)
                report["scenario_done"] = True
        else:
            from mcp.client.session import ClientSession

            if opts.url:
                try:
                    from mcp.client.streamable_http import streamablehttp_client
                except ImportError:
                    raise Unsupported(f"mcp {SDK_VERSION} has no Streamable HTTP client")
                headers = dict((k.strip(), v.strip()) for k, _, v in (h.partition(":") for h in opts.header))
                transport = streamablehttp_client(opts.url, headers=headers or None)
            else:
                from mcp.client.stdio import stdio_client

                transport = stdio_client(
                    mcp.StdioServerParameters(command=opts.command[0], args=opts.command[1:], env=env)
                )
            async with transport as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, **callbacks) as session:
                    init = await session.initialize()
                    report["protocol_version"] = init.protocolVersion
                    report["server_info"] = wire(init.serverInfo)
                    conn = Conn(session, None, cb, tg)
                    conn.capabilities = wire(init.capabilities) or {}
                    await body(conn)
                    report["scenario_done"] = True
        tg.cancel_scope.cancel()


# --------------------------------------------------------------- scenarios


def check_texts(report: Report, result: dict, opts: argparse.Namespace) -> None:
    text = texts_of(result)
    for s in opts.expect_text:
        report.expect(s in text, f"expected text {s!r} in the result")


def check_call_ok(report: Report, result: dict, what: str) -> None:
    if "jsonrpc_error" in result:
        report.fail(f"{what}: JSON-RPC error {result['jsonrpc_error']}")
    elif result.get("isError"):
        report.fail(f"{what}: tool returned isError: {texts_of(result.get('content', []))[:500]}")


def tool_and_args(opts: argparse.Namespace, default_tool: str) -> tuple[str, dict]:
    a = opts.args
    tool = a[0] if len(a) > 0 else default_tool
    args = json.loads(a[1]) if len(a) > 1 else {}
    return opts.prefix + tool, args


async def scenario_list(conn: Conn, report: Report, opts) -> None:
    tools = await conn.list_tools()
    report["tools"] = [t["name"] for t in tools]
    caps = conn.capabilities
    report["resources"] = [r["uri"] for r in await conn.list_resources()] if "resources" in caps else []
    report["resource_templates"] = (
        [t["uriTemplate"] for t in await conn.list_templates()] if "resources" in caps else []
    )
    report["prompts"] = [p["name"] for p in await conn.list_prompts()] if "prompts" in caps else []
    report["capabilities"] = caps
    for name in opts.expect_tool:
        report.expect(name in report["tools"], f"tool {name!r} not listed")


async def scenario_call(conn: Conn, report: Report, opts) -> None:
    if not opts.args:
        raise SystemExit("call needs TOOL [ARGS_JSON]")
    tool, args = tool_and_args(opts, "")
    await conn.list_tools()
    result = await conn.call_tool(tool, args)
    report["tool"] = tool
    report["result"] = result
    if opts.expect_error:
        report.expect("jsonrpc_error" in result or bool(result.get("isError")), "expected an error result")
    else:
        check_call_ok(report, result, tool)
    check_texts(report, result, opts)


async def scenario_elicitation(conn: Conn, report: Report, opts) -> None:
    tool, args = tool_and_args(opts, "ask_user")
    await conn.list_tools()
    result = await conn.call_tool(tool, args)
    report["tool"] = tool
    report["result"] = result
    check_call_ok(report, result, tool)
    asked = [r for r in report["server_requests"] if r["method"] == "elicitation/create"]
    report.expect(len(asked) >= 1, "the server never sent elicitation/create")
    report.expect(ELICIT_TEXT in texts_of(result), f"the elicited answer {ELICIT_TEXT!r} is not in the result")
    check_texts(report, result, opts)


async def scenario_sampling(conn: Conn, report: Report, opts) -> None:
    tool, args = tool_and_args(opts, "ask_model")
    await conn.list_tools()
    result = await conn.call_tool(tool, args)
    report["tool"] = tool
    report["result"] = result
    check_call_ok(report, result, tool)
    asked = [r for r in report["server_requests"] if r["method"] == "sampling/createMessage"]
    report.expect(len(asked) >= 1, "the server never sent sampling/createMessage")
    report.expect(SAMPLED_TEXT in texts_of(result), f"the sampled answer {SAMPLED_TEXT!r} is not in the result")
    check_texts(report, result, opts)


async def scenario_roots(conn: Conn, report: Report, opts) -> None:
    tool, args = tool_and_args(opts, "list_roots")
    await conn.list_tools()
    result = await conn.call_tool(tool, args)
    report["tool"] = tool
    report["result"] = result
    check_call_ok(report, result, tool)
    asked = [r for r in report["server_requests"] if r["method"] == "roots/list"]
    report.expect(len(asked) >= 1, "the server never sent roots/list")
    report.expect(ROOT_URI in texts_of(result), f"the root {ROOT_URI!r} is not in the result")
    check_texts(report, result, opts)


async def scenario_progress(conn: Conn, report: Report, opts) -> None:
    tool, args = tool_and_args(opts, "slow")
    await conn.list_tools()
    result = await conn.call_tool(tool, args, progress=True)
    report["tool"] = tool
    report["result"] = result
    report["progress"] = conn.cb.progress
    check_call_ok(report, result, tool)
    report.expect(len(conn.cb.progress) > 0, "no progress notification arrived")
    values = [p["progress"] for p in conn.cb.progress]
    report.expect(values == sorted(values), f"progress values not increasing: {values}")
    check_texts(report, result, opts)


async def scenario_cancel(conn: Conn, report: Report, opts) -> None:
    tool, args = tool_and_args(opts, "slow")
    await conn.list_tools()
    report["tool"] = tool
    outcome: dict[str, Any] = {}
    rid = None if conn.client is not None else conn.session._request_id

    async def slow_call(scope_done: anyio.Event) -> None:
        try:
            outcome["result"] = await conn.call_tool(tool, args)
        finally:
            scope_done.set()

    done = anyio.Event()
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as tg:
            tg.start_soon(slow_call, done)
            await anyio.sleep(opts.cancel_after)
            report.expect(not done.is_set(), f"{tool} finished before it could be cancelled: {outcome}")
            scope.cancel()
    if rid is not None:
        await conn.cancel_notification(rid)
    report["cancelled_request_id"] = rid
    # The server must keep serving this session after the cancellation.
    with anyio.fail_after(10):
        tools = await conn.list_tools()
    report["tools_after_cancel"] = len(tools)
    report.expect(len(tools) > 0, "no tools listed after the cancellation")
    await anyio.sleep(0.3)  # a late response to the cancelled id would be dropped by the SDK


async def scenario_read(conn: Conn, report: Report, opts) -> None:
    if not opts.args:
        raise SystemExit("read needs URI")
    result = await conn.read(opts.args[0])
    report["uri"] = opts.args[0]
    report["result"] = result
    report.expect(len(result.get("contents", [])) > 0, "no contents")
    check_texts(report, result, opts)


async def scenario_prompt(conn: Conn, report: Report, opts) -> None:
    if not opts.args:
        raise SystemExit("prompt needs NAME [ARGS_JSON]")
    args = json.loads(opts.args[1]) if len(opts.args) > 1 else {}
    result = await conn.prompt(opts.args[0], args)
    report["prompt"] = opts.args[0]
    report["result"] = result
    report.expect(len(result.get("messages", [])) > 0, "no messages")
    check_texts(report, result, opts)


async def scenario_complete(conn: Conn, report: Report, opts) -> None:
    if len(opts.args) != 4 or opts.args[0] not in ("prompt", "template"):
        raise SystemExit("complete needs prompt|template NAME ARG VALUE")
    result = await conn.complete(*opts.args)
    report["result"] = result
    report["values"] = result.get("completion", {}).get("values", [])
    report.expect(len(report["values"]) > 0, "no completion values")
    check_texts(report, result, opts)


async def run_script(conn: Conn, report: Report, opts) -> None:
    """STEPS_JSON is a list of steps run in order in one session:
    {"op": "list_tools", "expect_tools": [...], "expect_absent": [...]}
    {"op": "list_tools", ..., "retry_for": SECONDS}  (lists again until the expectations hold)
    {"op": "call", "tool": T, "args": {...}, "expect": "ok"|"error"|"any",
        "expect_text": S, "retry_for": SECONDS, "progress": true}   (tool gets --prefix;
        with progress, the notifications received go to the step's "progress")
    {"op": "wait_notification", "method": M, "timeout": SECONDS}
        (counts notifications since the start of the last "call" or "signal" step)
    {"op": "sleep", "seconds": S}
    {"op": "signal", "path": P}                     creates the file P (for the test)
    {"op": "wait_file", "path": P, "timeout": SECONDS}   waits until the test creates P
    {"op": "reconnect"}   a new session (initialize again), as a client does after
        its session's 404; the steps after it run in the new one
    Each step's outcome is appended to report["steps"]."""
    if len(opts.args) != 1:
        raise SystemExit("script needs STEPS_JSON")
    report["steps"] = []
    await run_steps(conn, report, opts, json.loads(opts.args[0]), 0)


async def run_steps(conn: Conn, report: Report, opts, steps: list, first: int) -> None:
    """Steps of a script, numbered from `first`, in the session of `conn`."""
    mark = 0
    await conn.list_tools()
    for i, step in enumerate(steps, start=first):
        op = step["op"]
        out: dict[str, Any] = {"op": op}
        report["steps"].append(out)
        if op == "list_tools":
            deadline = anyio.current_time() + float(step.get("retry_for", 0))
            while True:
                names = [t["name"] for t in await conn.list_tools()]
                missing = [n for n in step.get("expect_tools", []) if n not in names]
                present = [n for n in step.get("expect_absent", []) if n in names]
                if not (missing or present) or anyio.current_time() >= deadline:
                    break
                await anyio.sleep(0.25)
            out["tools"] = names
            for n in missing:
                report.expect(False, f"step {i}: tool {n!r} not listed")
            for n in present:
                report.expect(False, f"step {i}: tool {n!r} still listed")
        elif op == "call":
            tool = opts.prefix + step["tool"]
            expect = step.get("expect", "ok")
            mark = len(conn.cb.notifications)  # wait_notification looks from here on
            deadline = anyio.current_time() + float(step.get("retry_for", 0))
            attempts = 0
            while True:
                attempts += 1
                conn.cb.progress.clear()
                result = await conn.call_tool(tool, step.get("args", {}), progress=bool(step.get("progress")))
                is_err = "jsonrpc_error" in result or bool(result.get("isError"))
                good = expect == "any" or (expect == "error") == is_err
                if "expect_text" in step and step["expect_text"] not in texts_of(result):
                    good = False
                if good or anyio.current_time() >= deadline:
                    break
                await anyio.sleep(0.25)
            out.update(tool=tool, result=result, attempts=attempts)
            if step.get("progress"):
                out["progress"] = list(conn.cb.progress)
            report.expect(good, f"step {i}: {tool} gave {result} (expected {expect}, text {step.get('expect_text')!r})")
        elif op == "wait_notification":
            method = step["method"]
            seen = lambda: any(n.get("method") == method for n in conn.cb.notifications[mark:])  # noqa: E731
            with anyio.move_on_after(float(step.get("timeout", 5))):
                while not seen():
                    conn.cb.got_notification = anyio.Event()
                    if seen():
                        break
                    await conn.cb.got_notification.wait()
            out["seen"] = seen()
            report.expect(out["seen"], f"step {i}: no {method} notification")
        elif op == "sleep":
            await anyio.sleep(float(step["seconds"]))
        elif op == "signal":
            mark = len(conn.cb.notifications)  # wait_notification looks from here on
            with open(step["path"], "w"):
                pass
        elif op == "wait_file":
            with anyio.move_on_after(float(step.get("timeout", 30))):
                while not os.path.exists(step["path"]):
                    await anyio.sleep(0.05)
            out["seen"] = os.path.exists(step["path"])
            report.expect(out["seen"], f"step {i}: no file {step['path']}")
        elif op == "reconnect":
            rest = steps[i - first + 1 :]
            await connect_and_run(opts, report, lambda c: run_steps(c, report, opts, rest, i + 1))
            return
        else:
            raise SystemExit(f"unknown script op {op!r}")


SCENARIOS = {
    "list": scenario_list,
    "call": scenario_call,
    "elicitation": scenario_elicitation,
    "sampling": scenario_sampling,
    "roots": scenario_roots,
    "progress": scenario_progress,
    "cancel": scenario_cancel,
    "read": scenario_read,
    "prompt": scenario_prompt,
    "complete": scenario_complete,
    "script": run_script,
}


def parse(argv: list[str]) -> argparse.Namespace:
    command: list[str] = []
    if "--" in argv:
        i = argv.index("--")
        argv, command = argv[:i], argv[i + 1 :]
    p = argparse.ArgumentParser(description="MCP test client (Python SDK)", usage=__doc__)
    p.add_argument("--prefix", default="")
    p.add_argument("--url")
    p.add_argument("--expect-text", action="append", default=[])
    p.add_argument("--expect-tool", action="append", default=[])
    p.add_argument("--expect-error", action="store_true")
    p.add_argument("--elicit", choices=["accept", "decline"])
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--cancel-after", type=float, default=1.0)
    p.add_argument("--mode", default="legacy")
    p.add_argument("--env", action="append", default=[])
    p.add_argument("--header", action="append", default=[])
    p.add_argument("scenario", choices=sorted(SCENARIOS))
    p.add_argument("args", nargs="*")
    opts = p.parse_args(argv)
    opts.command = command
    if bool(opts.url) == bool(command):
        p.error("give either --url URL or -- COMMAND ...")
    return opts


def main() -> int:
    opts = parse(sys.argv[1:])
    report = Report(opts.scenario)
    code = EXIT_OK

    async def go() -> None:
        with anyio.fail_after(opts.timeout):
            await connect_and_run(opts, report, lambda conn: SCENARIOS[opts.scenario](conn, report, opts))

    try:
        anyio.run(go)
    except Unsupported as e:
        report["unsupported"] = str(e)
        code = EXIT_UNSUPPORTED
    except TimeoutError:
        report.fail(f"timed out after {opts.timeout}s")
    except BaseException as e:  # report anything else as a failure, with its cause
        if isinstance(e, SystemExit) and isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return EXIT_USAGE
        if isinstance(e, KeyboardInterrupt):
            raise
        leaf = e
        while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
            leaf = leaf.exceptions[0]
        if isinstance(leaf, Unsupported):
            report["unsupported"] = str(leaf)
            code = EXIT_UNSUPPORTED
        elif report.data.get("scenario_done") and isinstance(leaf, (anyio.BrokenResourceError, anyio.ClosedResourceError)):
            # SDK 1.x stdio teardown race: the server wrote (e.g. a late roots/list)
            # after the session closed. The scenario itself had finished.
            report["teardown_error"] = repr(leaf)
        elif isinstance(leaf, TimeoutError):
            report.fail(f"timed out after {opts.timeout}s")
        else:
            report.fail(f"exception: {leaf!r}")
            traceback.print_exception(e, file=sys.stderr)
    if code == EXIT_OK:
        report["ok"] = not report["failures"]
        code = EXIT_OK if report["ok"] else EXIT_FAILED
    print(json.dumps(report.data), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
