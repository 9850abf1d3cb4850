#!/usr/bin/env node
// A "browser" without JavaScript for sign-in flows in the tests.
//
//   node browser_login.mjs URL --login NAME [--token MCPX_TOKEN]
//
// Opens URL, follows 30x redirects by hand (always with GET) and, when a page
// is HTML with a <form>, submits the first form: its method and action
// (resolved against the page URL), every named <input> with its value (hidden
// fields included; checkboxes and radios only when checked), with fields
// filled by name: `token` <- --token, `login` <- --login, `password` <- "pw".
// A consent form is just submitted. A page without a form that has a link
// with id="continue" (an interstitial naming where it leads) has it clicked.
// Keeps one cookie jar per host:port
// (Set-Cookie name/value, Path, Max-Age and Expires; Domain and Secure are
// ignored) and sends a cookie only back to the host:port that set it.
// Stops at a 2xx page without a form, at a 4xx/5xx, at a redirect it cannot
// follow, or after 25 steps. Prints one JSON line:
// {"status": N, "url": "final url", "steps": ["METHOD url -> status", ...],
//  "body": "first 500 chars of the final body"}   (status 0: request failed)
// Exit 0 when the final status is 2xx, 1 otherwise.

import { parseArgs } from "node:util";

const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: { login: { type: "string" }, token: { type: "string" } },
});
if (positionals.length !== 1 || opts.login === undefined) {
  process.stderr.write("usage: browser_login.mjs URL --login NAME [--token MCPX_TOKEN]\n");
  process.exit(2);
}
const fill = { login: opts.login, password: "pw", ...(opts.token !== undefined && { token: opts.token }) };

// --- cookies: host:port -> Map("path\tname" -> {name, value, path, expires}) ---
const jars = new Map();
const origin = (u) => `${u.hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
const jarFor = (u) => jars.get(origin(u)) ?? jars.set(origin(u), new Map()).get(origin(u));

function storeCookies(u, setCookies) {
  const jar = jarFor(u);
  for (const line of setCookies) {
    const [pair, ...attrs] = line.split(";");
    const eq = pair.indexOf("=");
    if (eq < 1) continue;
    const name = pair.slice(0, eq).trim();
    const value = pair.slice(eq + 1).trim();
    const dir = u.pathname.slice(0, u.pathname.lastIndexOf("/"));
    let path = dir || "/";
    let expires = Infinity;
    for (const attr of attrs) {
      const [k, ...rest] = attr.split("=");
      const key = k.trim().toLowerCase();
      const v = rest.join("=").trim();
      if (key === "path" && v.startsWith("/")) path = v;
      else if (key === "max-age" && /^-?\d+$/.test(v)) expires = Date.now() + Number(v) * 1000;
      else if (key === "expires" && expires === Infinity && !Number.isNaN(Date.parse(v))) expires = Date.parse(v);
    }
    jar.delete(`${path}\t${name}`);
    if (expires > Date.now()) jar.set(`${path}\t${name}`, { name, value, path, expires });
  }
}

function cookieHeader(u) {
  const p = u.pathname;
  const match = (cp) => p === cp || (p.startsWith(cp) && (cp.endsWith("/") || p[cp.length] === "/"));
  return [...jarFor(u).values()]
    .filter((c) => c.expires > Date.now() && match(c.path))
    .sort((a, b) => b.path.length - a.path.length)
    .map((c) => `${c.name}=${c.value}`)
    .join("; ");
}

// --- HTML forms (regex-based) ---
const TAG = (names) => new RegExp(`<(${names})\\b((?:[^>"']|"[^"]*"|'[^']*')*)>`, "gi");
const unescape = (s) => s.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos|#39);/gi, (_, e) => {
  const named = { amp: "&", lt: "<", gt: ">", quot: '"', apos: "'" }[e.toLowerCase()];
  if (named) return named;
  return String.fromCodePoint(e[1].toLowerCase() === "x" ? parseInt(e.slice(2), 16) : parseInt(e.slice(1), 10));
});
function attrs(s) {
  const out = {};
  for (const m of s.matchAll(/([^\s=/>"']+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+)))?/g)) {
    out[m[1].toLowerCase()] = unescape(m[2] ?? m[3] ?? m[4] ?? "");
  }
  return out;
}

function parseForm(html, pageUrl) {
  const open = TAG("form").exec(html);
  if (!open) return null;
  const form = attrs(open[2]);
  const end = html.toLowerCase().indexOf("</form", open.index);
  const inner = html.slice(open.index + open[0].length, end === -1 ? undefined : end);
  const fields = new URLSearchParams();
  let submitted = false;
  for (const [, tag, attrText] of inner.matchAll(TAG("input|button"))) {
    const a = attrs(attrText);
    const type = (a.type ?? (tag.toLowerCase() === "button" ? "submit" : "text")).toLowerCase();
    if (!a.name || a.disabled !== undefined) continue;
    if ((type === "checkbox" || type === "radio") && a.checked === undefined) continue;
    if (type === "submit" || type === "image" || type === "button") {
      if (type !== "submit" || submitted) continue;
      submitted = true; // the first named submit button is the one "clicked"
    }
    fields.append(a.name, Object.hasOwn(fill, a.name) ? fill[a.name] : (a.value ?? ""));
  }
  return {
    method: (form.method ?? "get").toUpperCase() === "POST" ? "POST" : "GET",
    action: new URL(form.action || pageUrl, pageUrl),
    fields,
  };
}

// --- the walk ---
const steps = [];
let url = new URL(positionals[0]);
let last = url;
let method = "GET";
let body;
let status = 0;
let text = "";
for (let step = 0; step < 25; step++) {
  const headers = { "user-agent": "mcpx-test-browser", accept: "text/html,*/*" };
  const cookie = cookieHeader(url);
  if (cookie) headers.cookie = cookie;
  if (body) headers["content-type"] = "application/x-www-form-urlencoded";
  let res;
  last = url;
  try {
    res = await fetch(url, { method, headers, body, redirect: "manual", signal: AbortSignal.timeout(20000) });
  } catch (e) {
    steps.push(`${method} ${url} -> error`);
    status = 0;
    text = `request failed: ${e?.cause?.message ?? e?.message ?? e}`;
    break;
  }
  status = res.status;
  steps.push(`${method} ${url} -> ${status}`);
  storeCookies(url, res.headers.getSetCookie());
  text = await res.text();
  const location = res.headers.get("location");
  if (status >= 300 && status < 400 && location) {
    const next = new URL(location, url);
    if (next.protocol !== "http:" && next.protocol !== "https:") break;
    [url, method, body] = [next, "GET", undefined];
    continue;
  }
  if (status < 200 || status >= 300) break;
  const html = /html/i.test(res.headers.get("content-type") ?? "");
  const form = html ? parseForm(text, url) : null;
  if (!form) {
    const go = html ? [...text.matchAll(TAG("a"))].map((m) => attrs(m[2])).find((a) => a.id === "continue" && a.href) : null;
    if (!go) break;
    [url, method, body] = [new URL(go.href, url), "GET", undefined];
    continue;
  }
  if (form.method === "GET") {
    form.action.search = form.fields.toString();
    [url, method, body] = [form.action, "GET", undefined];
  } else {
    [url, method, body] = [form.action, "POST", form.fields.toString()];
  }
}

process.stdout.write(JSON.stringify({ status, url: last.href, steps, body: text.slice(0, 500) }) + "\n");
process.exit(status >= 200 && status < 300 ? 0 : 1);
