"""The Python SDK's OAuth client flow against an MCP server URL (mcp 1.x
with httpx, or 2.x with httpx2).

    python py_oauth_client.py URL TOOL ARGS_JSON

Discovers the server's Protected Resource Metadata and authorization
server, registers, runs the authorization code flow (the authorization
endpoint is followed without a browser: its redirect carries the code),
then lists the tools and calls TOOL. One-line JSON report on stdout:
{"ok": true, "tools": [...], "text": "..."} or {"ok": false, "error": "..."}.
"""

import asyncio
import json
import sys
import traceback
from urllib.parse import parse_qs, urlparse

from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

try:  # mcp 2.x
    import httpx2 as httpx
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client
    from mcp.shared.auth import AuthorizationCodeResult

    def connect(url, auth):
        return streamable_http_client(url, http_client=create_mcp_http_client(auth=auth))

    def code_result(box):
        return AuthorizationCodeResult(code=box["code"], state=box["state"], iss=box["iss"])
except ImportError:  # mcp 1.x
    import httpx
    from mcp.client.streamable_http import streamablehttp_client

    def connect(url, auth):
        return streamablehttp_client(url, auth=auth)

    def code_result(box):
        return box["code"], box["state"]

REDIRECT = "http://127.0.0.1:1/callback"


class Memory(TokenStorage):
    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


async def main(url, tool, args):
    box = {}

    async def redirect(auth_url):
        async with httpx.AsyncClient() as h:
            r = await h.get(auth_url, follow_redirects=False)
        q = parse_qs(urlparse(r.headers["location"]).query)
        box["code"], box["state"], box["iss"] = q["code"][0], q.get("state", [None])[0], q.get("iss", [None])[0]

    async def callback():
        return code_result(box)

    meta = OAuthClientMetadata(client_name="mcpx-test", redirect_uris=[REDIRECT], grant_types=["authorization_code", "refresh_token"],
                               response_types=["code"], token_endpoint_auth_method="none")
    auth = OAuthClientProvider(url, meta, Memory(), redirect, callback)
    async with connect(url, auth) as streams:
        read, write = streams[0], streams[1]
        async with ClientSession(read, write) as s:
            await s.initialize()
            tools = [t.name for t in (await s.list_tools()).tools]
            r = await s.call_tool(tool, args)
            text = "".join(getattr(c, "text", "") for c in r.content)
    return {"ok": True, "tools": tools, "text": text}


def leaves(e):
    """The exceptions a task group's ExceptionGroup wraps, innermost."""
    inner = getattr(e, "exceptions", None)
    return [x for sub in inner for x in leaves(sub)] if inner else [e]


try:
    report = asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
except BaseException as e:  # noqa: BLE001 - the report says what failed
    traceback.print_exception(e, file=sys.stderr)
    report = {"ok": False, "error": "; ".join(f"{type(x).__name__}: {x}" for x in leaves(e))}
print(json.dumps(report))
sys.exit(0 if report["ok"] else 1)
