#!/usr/bin/env node
// An `openWith` command for tests: "opens" the authorization URL (its last
// argument) the way a browser would, following redirects, so that the
// authorization server's redirect reaches mcpx's loopback redirect URI.
// Exit 0 when the final response is 2xx.
const url = process.argv[process.argv.length - 1];
try {
  const r = await fetch(url, { redirect: "follow", signal: AbortSignal.timeout(20000) });
  await r.text();
  process.exit(r.ok ? 0 : 1);
} catch (e) {
  process.stderr.write(`open_url: ${e?.message ?? e}\n`);
  process.exit(1);
}
