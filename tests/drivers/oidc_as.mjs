#!/usr/bin/env node
// A real OpenID provider for the tests: oidc-provider 9.13.3 (from .peers/node,
// or MCPX_PEERS_NODE), on loopback over plain http.
//
//   node oidc_as.mjs --port PORT --redirect URI [--redirect URI2 ...] [--access-ttl SECONDS] [--no-refresh]
//                    [--exchange-secret SECRET --exchange-subject-aud URL
//                     [--exchange-ttl SECONDS] [--refuse-exchange SUB ...]]
//
// Issuer http://127.0.0.1:PORT. Prints "ready" on stdout when listening; logs
// to stderr.
// - Login: the built-in dev form (/interaction/UID, fields `login` and
//   `password`); the login name becomes `sub`, any password is accepted. The
//   login name `deny` ends the authorization with `error=access_denied` at the
//   client's redirect URI. Consent is granted automatically (no consent page).
//   Cookies: `_interaction` (Path /interaction/UID), `_interaction_resume`
//   (Path /auth/UID), `_session` (Path /, the SSO session: a second
//   authorization with the same cookies skips the login form), each with a
//   `.sig` companion; the interaction ones are cleared with an Expires in 1970.
// - Client `mcpx`: public (token_endpoint_auth_method none), native (a loopback
//   --redirect URI matches on any port), the --redirect URIs,
//   authorization_code + refresh_token, PKCE S256 required. Dynamic
//   client registration at /reg.
// - Resource indicators (RFC 8707): any http(s) `resource` gets an RS256 JWT
//   access token (typ at+jwt, signed with a key made at start, a new kid each
//   run) with aud = the resource, sub = the login name,
//   scope = the requested scopes the resource accepts (only `mcp`), lifetime
//   --access-ttl (default 3600). Without `resource` the access token is opaque
//   (for userinfo only). An authorization request must ask for some scope
//   (`mcp`, or `openid`): with none it ends in `error=access_denied` (with no
//   error_description, unlike `deny`).
// - Refresh tokens: issued to clients allowed the refresh_token grant
//   (offline_access is not needed), unless --no-refresh. They rotate on every use; replaying a used
//   one revokes the whole grant.
// - Metadata at /.well-known/openid-configuration and, the same document, at
//   /.well-known/oauth-authorization-server. Revocation at /token/revocation.
// - With --exchange-secret: a confidential client `mcpx-exchange` (that
//   secret, client_secret_basic, scope `mcp`) allowed the client_credentials
//   grant and OAuth 2.0 Token Exchange (RFC 8693). oidc-provider has no
//   token exchange of its own: the grant handler here is ours, registered
//   with provider.registerGrantType. It takes an access token as the subject
//   token (subject_token_type and any requested_token_type
//   urn:ietf:params:oauth:token-type:access_token) and verifies it: a JWT
//   signed RS256 with this provider's key, `iss` this issuer, not expired,
//   `aud` exactly --exchange-subject-aud (the service it was issued for). It
//   needs one http(s) `resource` (an `audience`, if any, must be the same)
//   and issues an RS256 JWT access token with aud = the resource, sub = the
//   subject token's sub, scope = the requested scopes among `mcp`, lifetime
//   --exchange-ttl (default 3600); the answer has issued_token_type. A
//   subject named by --refuse-exchange is refused with invalid_grant.
// - Test-only: GET /test/log lists the token grants issued so far:
//   [{"grant_type", "client_id", "sub", "aud", "scope", "refresh_token": bool}],
//   an exchange's with "subject": {"sub", "aud", "client_id"} (the verified
//   subject token's claims); a refused exchange is listed too, as
//   {"grant_type", "client_id", "error", "detail", "subject"}.

import crypto from "node:crypto";
import path from "node:path";
import { parseArgs } from "node:util";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peersNode = process.env.MCPX_PEERS_NODE || path.resolve(here, "../../.peers/node");
const { default: Provider, errors, interactionPolicy } = await import(
  pathToFileURL(path.join(peersNode, "node_modules/oidc-provider/lib/index.js")).href
);

const { values: opts } = parseArgs({
  options: {
    port: { type: "string" },
    redirect: { type: "string", multiple: true },
    "access-ttl": { type: "string", default: "3600" },
    "no-refresh": { type: "boolean", default: false },
    "exchange-secret": { type: "string" },
    "exchange-subject-aud": { type: "string" },
    "exchange-ttl": { type: "string", default: "3600" },
    "refuse-exchange": { type: "string", multiple: true, default: [] },
  },
});
if (!opts.port || !opts.redirect?.length) {
  process.stderr.write("usage: oidc_as.mjs --port PORT --redirect URI [--redirect URI ...] [--access-ttl S] [--no-refresh]\n");
  process.exit(2);
}
const issuer = `http://127.0.0.1:${opts.port}`;
const accessTtl = Number(opts["access-ttl"]);
const exchangeTtl = Number(opts["exchange-ttl"]);
const log = [];
const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";

// One RSA signing key, made at start (a new kid on every start).
const jwk = crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ format: "jwk" });
Object.assign(jwk, { kid: crypto.randomBytes(4).toString("hex"), alg: "RS256", use: "sig" });

// Login name "deny": fail the authorization once the login is known.
const policy = interactionPolicy.base();
policy.get("login").checks.add(
  new interactionPolicy.Check("denied", "the End-User denied the authorization", (ctx) => {
    if (ctx.oidc.session.accountId === "deny") {
      throw new errors.AccessDenied("the End-User denied the authorization");
    }
    return false;
  }),
);

// The client that exchanges tokens (and lists with client credentials).
const exchangeClient = opts["exchange-secret"] === undefined ? [] : [{
  client_id: "mcpx-exchange",
  client_secret: opts["exchange-secret"],
  token_endpoint_auth_method: "client_secret_basic",
  grant_types: [TOKEN_EXCHANGE, "client_credentials"],
  response_types: [],
  redirect_uris: [],
  scope: "mcp",
}];

const provider = new Provider(issuer, {
  clients: [...exchangeClient, {
    client_id: "mcpx",
    // Native: a loopback redirect URI matches whatever its port (RFC 8252 §7.3).
    application_type: "native",
    token_endpoint_auth_method: "none",
    redirect_uris: opts.redirect,
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
  }],
  jwks: { keys: [jwk] },
  cookies: { keys: [crypto.randomBytes(16).toString("hex")] },
  scopes: ["openid", "offline_access", "mcp"],
  claims: { openid: ["sub"] },
  interactions: { policy },
  responseTypes: ["code"],
  ttl: { AccessToken: accessTtl },
  features: {
    clientCredentials: { enabled: opts["exchange-secret"] !== undefined },
    devInteractions: { enabled: true },
    registration: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      getResourceServerInfo(_ctx, resource) {
        if (!/^https?:\/\//.test(resource)) throw new errors.InvalidTarget();
        return { scope: "mcp", audience: resource, accessTokenTTL: accessTtl, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } };
      },
    },
  },
  // Consent without a page: grant whatever is asked for.
  async loadExistingGrant(ctx) {
    const { oidc } = ctx;
    if (!oidc.session.accountId) return undefined;
    const grantId = oidc.result?.consent?.grantId || oidc.session.grantIdFor(oidc.client.clientId);
    const grant = (grantId && (await oidc.provider.Grant.find(grantId)))
      || new oidc.provider.Grant({ accountId: oidc.session.accountId, clientId: oidc.client.clientId });
    grant.addOIDCScope([...oidc.requestParamOIDCScopes].join(" "));
    for (const [resource, server] of Object.entries(oidc.resourceServers)) {
      const allowed = new Set(server.scope.split(" "));
      grant.addResourceScope(resource, [...oidc.requestParamScopes].filter((s) => allowed.has(s)).join(" "));
    }
    await grant.save();
    return grant;
  },
  issueRefreshToken: async (_ctx, client) => !opts["no-refresh"] && client.grantTypeAllowed("refresh_token"),
  expiresWithSession: async () => false,
});

// RFC 8693 token exchange (ours, not oidc-provider's): see the header.
const publicKey = crypto.createPublicKey({ key: jwk, format: "jwk" });

/// The claims of subject token `token`, once verified; throws invalid_grant.
function verifySubject(token) {
  const refuse = (why) => new errors.InvalidGrant(`subject_token: ${why}`);
  const [h, p, sig, extra] = String(token ?? "").split(".");
  if (!sig || extra !== undefined) throw refuse("not a JWT");
  let header;
  let claims;
  try {
    header = JSON.parse(Buffer.from(h, "base64url"));
    claims = JSON.parse(Buffer.from(p, "base64url"));
  } catch {
    throw refuse("not a JWT");
  }
  if (header.alg !== "RS256" || header.kid !== jwk.kid) throw refuse("not signed with this provider's key");
  if (!crypto.verify("RSA-SHA256", Buffer.from(`${h}.${p}`), publicKey, Buffer.from(sig, "base64url"))) throw refuse("bad signature");
  if (claims.iss !== issuer) throw refuse(`issued by ${claims.iss}, not ${issuer}`);
  if (!(claims.exp > Date.now() / 1000)) throw refuse("expired");
  if (claims.aud !== opts["exchange-subject-aud"]) throw refuse(`its audience is ${JSON.stringify(claims.aud)}, not ${opts["exchange-subject-aud"]}`);
  if (!claims.sub) throw refuse("no sub");
  return claims;
}

if (opts["exchange-secret"] !== undefined) {
  const params = ["subject_token", "subject_token_type", "requested_token_type", "actor_token", "actor_token_type", "audience", "resource", "scope"];
  provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
    const p = ctx.oidc.params;
    if (p.subject_token_type !== ACCESS_TOKEN_TYPE) throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS_TOKEN_TYPE}`);
    if (p.requested_token_type !== undefined && p.requested_token_type !== ACCESS_TOKEN_TYPE) {
      throw new errors.InvalidRequest(`requested_token_type must be ${ACCESS_TOKEN_TYPE}`);
    }
    const subject = verifySubject(p.subject_token);
    ctx.state.subject = { sub: subject.sub, aud: subject.aud, client_id: subject.client_id ?? null };
    if (opts["refuse-exchange"].includes(subject.sub)) throw new errors.InvalidGrant(`subject ${subject.sub} may not act at the resource`);
    const resource = p.resource;
    if (typeof resource !== "string" || !/^https?:\/\//.test(resource)) throw new errors.InvalidTarget("one http(s) resource is required");
    if (p.audience !== undefined && p.audience !== resource) throw new errors.InvalidTarget("the audience must be the resource");
    const scope = (p.scope ?? "").split(" ").filter((s) => s === "mcp").join(" ") || undefined;
    const { AccessToken, ResourceServer } = ctx.oidc.provider;
    const server = new ResourceServer(resource, { scope: "mcp", audience: resource, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } });
    const at = new AccessToken({ accountId: subject.sub, client: ctx.oidc.client, gty: "token-exchange", scope, expiresIn: exchangeTtl, resourceServer: server });
    const value = await at.save();
    ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: "Bearer", expires_in: at.expiration, scope };
  }, params);
}

provider.on("grant.success", (ctx) => {
  const { access_token: at, refresh_token: rt, scope } = ctx.body ?? {};
  const claims = at?.split(".").length === 3 ? JSON.parse(Buffer.from(at.split(".")[1], "base64url")) : {};
  log.push({
    grant_type: ctx.oidc.params.grant_type,
    client_id: ctx.oidc.client?.clientId,
    sub: claims.sub ?? ctx.oidc.entities.Account?.accountId ?? null,
    aud: claims.aud ?? null,
    scope: scope ?? null,
    refresh_token: Boolean(rt),
    ...(ctx.state.subject && { subject: ctx.state.subject }),
  });
});
provider.on("grant.error", (ctx, err) => {
  if (ctx.oidc?.params?.grant_type !== TOKEN_EXCHANGE) return;
  log.push({ grant_type: TOKEN_EXCHANGE, client_id: ctx.oidc.client?.clientId ?? null, error: err.error, detail: err.error_detail ?? null, subject: ctx.state.subject ?? null });
});
for (const ev of ["server_error", "authorization.error", "grant.error", "interaction.error"]) {
  provider.on(ev, (_ctx, err) => process.stderr.write(`oidc_as: ${ev}: ${err.message} ${err.error_description ?? ""} ${err.error_detail ?? ""}\n`));
}

provider.use(async (ctx, next) => {
  process.stderr.write(`oidc_as: ${ctx.method} ${ctx.url}\n`);
  if (ctx.method === "GET" && ctx.path === "/test/log") {
    ctx.body = log;
    return;
  }
  if (ctx.path === "/.well-known/oauth-authorization-server") ctx.path = "/.well-known/openid-configuration";
  await next();
});

provider.listen(Number(opts.port), "127.0.0.1", () => process.stdout.write("ready\n"));
