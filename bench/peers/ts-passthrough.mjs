// A Streamable HTTP → stdio pass-through written on the TypeScript SDK v2:
// the "same job done by the SDK" row of the bench. One stdio client to the
// upstream, shared by every HTTP session; tools/list and tools/call are
// forwarded as they come.
//
//   node ts-passthrough.mjs PORT COMMAND [ARGS...]
//
// Listens on 127.0.0.1:PORT, path /mcp, stateful (Mcp-Session-Id).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Server, WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/server';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const [port, command, ...args] = process.argv.slice(2);
if (!port || !command) {
  console.error('usage: node ts-passthrough.mjs PORT COMMAND [ARGS...]');
  process.exit(2);
}

const upstream = new Client({ name: 'ts-passthrough', version: '1.0.0' });
await upstream.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
await upstream.listTools();

function makeServer() {
  const server = new Server(
    { name: 'ts-passthrough', version: '1.0.0' },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler('tools/list', async (req) => upstream.listTools(req.params));
  server.setRequestHandler('tools/call', async (req) => upstream.callTool(req.params));
  return server;
}

const sessions = new Map();

const httpServer = http.createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (v !== undefined) headers.set(k, Array.isArray(v) ? v.join(', ') : v);
    }
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && body.length > 0;
    const request = new Request(`http://127.0.0.1:${port}${req.url}`, {
      method: req.method,
      headers,
      body: hasBody ? body : undefined,
    });
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      if (sid) {
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32001, message: 'session not found' } }));
        return;
      }
      transport = new WebStandardStreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport),
      });
      transport.onclose = () => {
        if (transport.sessionId) sessions.delete(transport.sessionId);
      };
      await makeServer().connect(transport);
    }
    const parsedBody = hasBody ? JSON.parse(body.toString('utf8')) : undefined;
    const response = await transport.handleRequest(request, { parsedBody });
    const out = {};
    response.headers.forEach((v, k) => { out[k] = v; });
    res.writeHead(response.status, out);
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  } catch (e) {
    if (!res.headersSent) res.writeHead(500);
    res.end(String(e));
  }
});
httpServer.keepAliveTimeout = 60_000;
httpServer.listen(Number(port), '127.0.0.1');

for (const sig of ['SIGTERM', 'SIGINT']) {
  process.on(sig, async () => {
    httpServer.close();
    await upstream.close().catch(() => {});
    process.exit(0);
  });
}
