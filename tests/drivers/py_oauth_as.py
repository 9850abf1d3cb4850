"""A small OAuth 2.1 authorization server for the tests, on loopback.

Run with a pinned Python SDK venv (starlette, uvicorn, PyJWT, cryptography):
    python py_oauth_as.py --port PORT

Issuer http://127.0.0.1:PORT. RFC 8414 metadata, a JWKS with one RSA key
(kid "k1"), dynamic client registration, an authorization endpoint that
approves at once (redirects with a code), a token endpoint (authorization
code with PKCE S256, refresh token) issuing RS256 JWT access tokens whose
`aud` is the RFC 8707 `resource` of the request, and RFC 7662
introspection of opaque tokens. Test-only: GET /mint?aud=&sub=&scope=&exp=
(seconds from now, may be negative)&kid=&opaque=1 returns a token as is,
and GET /log lists the token requests it served and the access tokens it
issued for them (JSON).
"""

import argparse
import base64
import hashlib
import json
import secrets
import time

import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import rsa
from starlette.applications import Starlette
from starlette.responses import JSONResponse, PlainTextResponse, RedirectResponse
from starlette.routing import Route

ap = argparse.ArgumentParser()
ap.add_argument("--port", type=int, required=True)
args = ap.parse_args()
ISSUER = f"http://127.0.0.1:{args.port}"

KEYS = {kid: rsa.generate_private_key(public_exponent=65537, key_size=2048) for kid in ("k1", "unpublished")}
CODES = {}
OPAQUE = {}
LOG = []


def b64(n):
    raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def token(aud, sub, scope, exp_in=3600, kid="k1", client_id="test-client"):
    now = int(time.time())
    claims = {"iss": ISSUER, "sub": sub, "aud": aud, "scope": scope, "client_id": client_id,
              "iat": now, "exp": now + exp_in, "jti": secrets.token_hex(8)}
    return jwt.encode(claims, KEYS[kid], algorithm="RS256", headers={"kid": kid})


async def metadata(_req):
    return JSONResponse({
        "issuer": ISSUER,
        "authorization_endpoint": f"{ISSUER}/authorize",
        "token_endpoint": f"{ISSUER}/token",
        "registration_endpoint": f"{ISSUER}/register",
        "jwks_uri": f"{ISSUER}/jwks",
        "introspection_endpoint": f"{ISSUER}/introspect",
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "scopes_supported": ["mcp:tools", "mcp"],
    })


async def jwks(_req):
    pub = KEYS["k1"].public_key().public_numbers()
    return JSONResponse({"keys": [{"kty": "RSA", "kid": "k1", "use": "sig", "alg": "RS256", "n": b64(pub.n), "e": b64(pub.e)}]})


async def register(req):
    meta = await req.json()
    meta["client_id"] = "client-" + secrets.token_hex(4)
    meta["client_id_issued_at"] = int(time.time())
    meta.setdefault("token_endpoint_auth_method", "none")
    return JSONResponse(meta, status_code=201)


async def authorize(req):
    q = req.query_params
    if q.get("code_challenge_method") != "S256" or not q.get("code_challenge"):
        return PlainTextResponse("PKCE S256 required", status_code=400)
    code = secrets.token_hex(8)
    CODES[code] = dict(q)
    sep = "&" if "?" in q["redirect_uri"] else "?"
    return RedirectResponse(f"{q['redirect_uri']}{sep}code={code}&state={q.get('state', '')}&iss={ISSUER}", status_code=302)


async def token_endpoint(req):
    form = dict(await req.form())
    LOG.append({k: v for k, v in form.items() if k in ("grant_type", "resource", "scope", "client_id")})
    if form.get("grant_type") == "authorization_code":
        c = CODES.pop(form.get("code", ""), None)
        if c is None:
            return JSONResponse({"error": "invalid_grant"}, status_code=400)
        digest = base64.urlsafe_b64encode(hashlib.sha256(form.get("code_verifier", "").encode()).digest()).rstrip(b"=").decode()
        if digest != c["code_challenge"]:
            return JSONResponse({"error": "invalid_grant", "error_description": "PKCE"}, status_code=400)
        resource = form.get("resource") or c.get("resource") or ""
        scope = c.get("scope") or form.get("scope") or ""
        client = c.get("client_id", "")
    elif form.get("grant_type") == "refresh_token":
        resource, scope, client = form.get("resource", ""), form.get("scope", ""), form.get("client_id", "")
    else:
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
    access = token(resource, "user-of-" + client, scope, client_id=client)
    LOG[-1]["issued"] = access
    return JSONResponse({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "scope": scope,
                         "refresh_token": secrets.token_hex(8)})


async def mint(req):
    q = req.query_params
    aud, sub, scope = q.get("aud", ""), q.get("sub", "someone"), q.get("scope", "")
    exp_in = int(q.get("exp", "3600"))
    if q.get("opaque"):
        t = secrets.token_hex(16)
        now = int(time.time())
        OPAQUE[t] = {"active": True, "iss": ISSUER, "sub": sub, "aud": aud, "scope": scope, "exp": now + exp_in, "client_id": "test-client"}
        return PlainTextResponse(t)
    return PlainTextResponse(token(aud, sub, scope, exp_in, q.get("kid", "k1")))


async def introspect(req):
    form = dict(await req.form())
    info = OPAQUE.get(form.get("token", ""))
    if info is None or info["exp"] <= time.time():
        return JSONResponse({"active": False})
    return JSONResponse(info)


async def log(_req):
    return JSONResponse(LOG)


app = Starlette(routes=[
    Route("/.well-known/oauth-authorization-server", metadata),
    Route("/jwks", jwks),
    Route("/register", register, methods=["POST"]),
    Route("/authorize", authorize),
    Route("/token", token_endpoint, methods=["POST"]),
    Route("/introspect", introspect, methods=["POST"]),
    Route("/mint", mint),
    Route("/log", log),
])

uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
