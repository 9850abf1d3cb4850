#!/usr/bin/env node
// Clicks an element of a page in headless Chromium, as a person would, and
// prints the page the click led to.
//
//   node cdp_click.mjs CHROMIUM PROFILE_DIR URL SELECTOR [FIELD TEXT]...
//
// Starts CHROMIUM headless with the DevTools protocol on a free port,
// opens URL, types each TEXT into the element FIELD matches (focused, then
// Input.insertText: as a person types, no page script), presses and
// releases the mouse at the centre of the first
// element SELECTOR matches (Input.dispatchMouseEvent: the browser itself
// submits the form, with its own headers), waits for the next page to load
// and prints its HTML on stdout; with CDP_THEN=SELECTOR in the environment it
// presses that element on the page the first click led to, and prints the
// page after it. Exit 0 on success, 1 on any failure (what
// failed on stderr). Node 22's WebSocket; nothing else.

import { spawn } from "node:child_process";

const [chromium, profile, url, selector, ...typed] = process.argv.slice(2);
if (!selector || typed.length % 2) {
  process.stderr.write("usage: cdp_click.mjs CHROMIUM PROFILE_DIR URL SELECTOR [FIELD TEXT]...\n");
  process.exit(2);
}
const fail = (why) => {
  process.stderr.write(`cdp_click: ${why}\n`);
  process.exit(1);
};
setTimeout(() => fail("timed out after 60 s"), 60000).unref();

const browser = spawn(chromium, [
  "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--remote-debugging-port=0", `--user-data-dir=${profile}`, "about:blank",
], { stdio: ["ignore", "ignore", "pipe"] });
process.on("exit", () => browser.kill("SIGKILL"));

// "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
const wsUrl = await new Promise((resolve, reject) => {
  let err = "";
  browser.stderr.on("data", (d) => {
    err += d;
    const m = err.match(/DevTools listening on (ws:\/\/\S+)/);
    if (m) resolve(m[1]);
  });
  browser.on("exit", (code) => reject(new Error(`chromium exited (${code}): ${err}`)));
}).catch((e) => fail(e.message));

const ws = new WebSocket(wsUrl);
await new Promise((resolve, reject) => {
  ws.onopen = resolve;
  ws.onerror = () => reject(new Error("cannot connect to DevTools"));
}).catch((e) => fail(e.message));

let next = 0;
const pending = new Map();
const waiters = [];
ws.onmessage = (ev) => {
  const m = JSON.parse(ev.data);
  if (m.id !== undefined && pending.has(m.id)) {
    const { resolve, reject } = pending.get(m.id);
    pending.delete(m.id);
    if (m.error) reject(new Error(`${m.error.message} (${m.error.code})`));
    else resolve(m.result);
  } else if (m.method) {
    for (const w of waiters.splice(0)) w(m);
  }
};
const send = (method, params = {}, sessionId) =>
  new Promise((resolve, reject) => {
    const id = ++next;
    pending.set(id, { resolve, reject });
    ws.send(JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) }));
  });
// Resolves with the first event named `method` of `sessionId`.
const event = (method, sessionId) =>
  new Promise((resolve) => {
    const watch = (m) => (m.method === method && m.sessionId === sessionId ? resolve(m) : waiters.push(watch));
    waiters.push(watch);
  });

try {
  const { targetId } = await send("Target.createTarget", { url: "about:blank" });
  const { sessionId } = await send("Target.attachToTarget", { targetId, flatten: true });
  const s = (method, params) => send(method, params, sessionId);
  await s("Page.enable");
  let loaded = event("Page.loadEventFired", sessionId);
  await s("Page.navigate", { url });
  await loaded;
  const { root } = await s("DOM.getDocument");
  for (let i = 0; i < typed.length; i += 2) {
    const field = await s("DOM.querySelector", { nodeId: root.nodeId, selector: typed[i] });
    if (!field.nodeId) fail(`no element matches ${typed[i]}`);
    await s("DOM.focus", { nodeId: field.nodeId });
    await s("Input.insertText", { text: typed[i + 1] });
  }
  // Presses and releases the mouse on the first element `sel` matches in
  // the document `doc`, and waits for the page that leads to.
  const press = async (doc, sel) => {
    const { nodeId } = await s("DOM.querySelector", { nodeId: doc.nodeId, selector: sel });
    if (!nodeId) fail(`no element matches ${sel}`);
    await s("DOM.scrollIntoViewIfNeeded", { nodeId });
    const { model } = await s("DOM.getBoxModel", { nodeId });
    const q = model.content;
    const x = (q[0] + q[2] + q[4] + q[6]) / 4;
    const y = (q[1] + q[3] + q[5] + q[7]) / 4;
    loaded = event("Page.loadEventFired", sessionId);
    for (const type of ["mousePressed", "mouseReleased"]) {
      await s("Input.dispatchMouseEvent", { type, x, y, button: "left", clickCount: 1 });
    }
    await loaded;
  };
  await press(root, selector);
  // CDP_THEN: a second element to press on the page the first led to.
  if (process.env.CDP_THEN) await press((await s("DOM.getDocument")).root, process.env.CDP_THEN);
  const doc = await s("DOM.getDocument");
  const { outerHTML } = await s("DOM.getOuterHTML", { nodeId: doc.root.nodeId });
  process.stdout.write(outerHTML);
  process.exit(0);
} catch (e) {
  fail(e.message);
}
