#!/usr/bin/env python3
"""An OAuth-protected upstream MCP server (FastMCP, mcp 1.30.0) for the tests.

Run with the pinned mcp-1.30.0 venv (httpx, PyJWT, cryptography, uvicorn):
    python py_protected_server.py --port PORT --issuer ISSUER_URL [--scopes "mcp"]

Streamable HTTP at http://127.0.0.1:PORT/mcp, a resource server as the MCP
spec describes: a request without a valid bearer token gets 401 with
`WWW-Authenticate: Bearer error="invalid_token", ..., resource_metadata="http://127.0.0.1:PORT/.well-known/oauth-protected-resource/mcp"`,
and that URL serves the Protected Resource Metadata (resource
http://127.0.0.1:PORT/mcp, authorization_servers [ISSUER], scopes_supported
the required scopes). Access tokens are JWTs checked against the issuer's
JWKS (found through ISSUER/.well-known/oauth-authorization-server, cached,
fetched again for an unknown kid): signature (RS256/ES256), `iss` equal to the
metadata's issuer, `exp`, and `aud` exactly the resource URL. --scopes lists
the scopes a token must carry, space-separated (default "mcp"; "" for none);
a token without them gets 403 insufficient_scope.

Tools:
  whoami()    -> "sub=SUB aud=AUD" of the token that carried the call
  echo(text)  -> TEXT
Test-only: GET /test/seen lists every request to /mcp, accepted or not:
[{"method", "sha256": hex digest of its bearer token (null without one),
"sub", "aud": the token's claims, unverified (null when unreadable)}].
Prints "ready" on stdout once it listens.
"""

import argparse
import asyncio
import hashlib
import sys

import httpx
import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.fastmcp import FastMCP
from starlette.responses import JSONResponse

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--issuer", required=True)
ap.add_argument("--scopes", default="mcp")
args = ap.parse_args()
RESOURCE = f"http://127.0.0.1:{args.port}/mcp"
SEEN = []


def recording(app):
    """`app`, with each request to /mcp listed in SEEN first."""

    async def asgi(scope, receive, send):
        if scope["type"] == "http" and scope["path"] == "/mcp":
            auth = dict(scope["headers"]).get(b"authorization", b"").decode("latin-1")
            token = auth[7:].strip() if auth[:7].lower() == "bearer " else None
            try:
                claims = jwt.decode(token, options={"verify_signature": False}) if token else {}
            except Exception:  # not a JWT
                claims = {}
            digest = hashlib.sha256(token.encode()).hexdigest() if token else None
            SEEN.append({"method": scope["method"], "sha256": digest, "sub": claims.get("sub"), "aud": claims.get("aud")})
        await app(scope, receive, send)

    return asgi


class JwksVerifier:
    """TokenVerifier: a JWT access token of ISSUER for RESOURCE."""

    def __init__(self):
        self.issuer = None
        self.jwks_uri = None
        self.keys = {}

    async def _load(self, force=False):
        async with httpx.AsyncClient(timeout=10) as http:
            if self.jwks_uri is None:
                meta = (await http.get(args.issuer.rstrip("/") + "/.well-known/oauth-authorization-server")).json()
                self.issuer, self.jwks_uri = meta["issuer"], meta["jwks_uri"]
            if force or not self.keys:
                jwks = (await http.get(self.jwks_uri)).json()
                self.keys = {k.get("kid"): jwt.PyJWK(k).key for k in jwks["keys"] if k.get("use", "sig") == "sig"}

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            await self._load()
            kid = jwt.get_unverified_header(token).get("kid")
            if kid not in self.keys:
                await self._load(force=True)
            claims = jwt.decode(
                token, self.keys[kid], algorithms=["RS256", "ES256"], issuer=self.issuer,
                options={"verify_aud": False, "require": ["iss", "exp", "aud", "sub"]},
            )
        except Exception as e:  # unknown kid, bad signature, expired, wrong issuer, AS down...
            print(f"py_protected_server: token rejected: {e!r}", file=sys.stderr)
            return None
        if claims["aud"] not in (RESOURCE, [RESOURCE]):
            print(f"py_protected_server: token rejected: aud {claims['aud']!r}", file=sys.stderr)
            return None
        return AccessToken(
            token=token, client_id=claims.get("client_id", ""), scopes=claims.get("scope", "").split(),
            expires_at=claims["exp"], resource=RESOURCE, subject=claims["sub"], claims=claims,
        )


mcp = FastMCP(
    "py-protected",
    host="127.0.0.1",
    port=args.port,
    log_level="WARNING",
    token_verifier=JwksVerifier(),
    auth=AuthSettings(
        issuer_url=args.issuer,
        resource_server_url=RESOURCE,
        required_scopes=args.scopes.split() or None,
        validate_token_resource=True,
    ),
)


@mcp.tool()
def whoami() -> str:
    """The subject and audience of the access token of this request."""
    token = get_access_token()
    if token is None:
        return "sub=(none) aud=(none)"
    return f"sub={token.subject} aud={token.claims['aud']}"


@mcp.tool()
def echo(text: str) -> str:
    """Return the text as is."""
    return text


@mcp.custom_route("/test/seen", methods=["GET"])
async def test_seen(_request):
    return JSONResponse(SEEN)


async def main():
    config = uvicorn.Config(recording(mcp.streamable_http_app()), host="127.0.0.1", port=args.port, log_level="warning")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve())
    while not server.started and not serving.done():
        await asyncio.sleep(0.05)
    if server.started:
        print("ready", flush=True)
    await serving


asyncio.run(main())
