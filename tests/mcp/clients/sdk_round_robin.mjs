// The TypeScript SDK v1 client behind a load balancer that sends each HTTP request to the next
// of two replicas in turn (issue #38: MCP sessions across replicas):
//   node sdk_round_robin.mjs PORT_A PORT_B KEY
// The proxy counts what each replica served; the client initializes, lists, calls, opens the
// GET stream and pings, and every request after initialize carries the session id a replica
// other than the one that answers it may have opened.
import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check } from './common.mjs';

const [portA, portB, key] = process.argv.slice(2);
const backends = [Number(portA), Number(portB)];
const served = [0, 0];
let next = 0;

const proxy = http.createServer((req, res) => {
  const turn = next;
  next = (next + 1) % backends.length;
  served[turn] += 1;
  const upstream = http.request({ host: '127.0.0.1', port: backends[turn], method: req.method, path: req.url,
    headers: { ...req.headers, host: `127.0.0.1:${backends[turn]}` } }, (answer) => {
    res.writeHead(answer.statusCode, answer.headers);
    answer.pipe(res);
  });
  upstream.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
  req.pipe(upstream);
  res.on('close', () => upstream.destroy());
});
await new Promise((resolve) => proxy.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${proxy.address().port}/mcp`;

const client = new Client({ name: 'airlock-test', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await client.connect(transport);
check(typeof transport.sessionId === 'string' && transport.sessionId.length > 0, 'a session was opened');
for (let i = 0; i < 3; i += 1) {
  const { tools } = await client.listTools();
  check(tools.some((t) => t.name === 'echo'), `tools/list ${i + 1} has echo`);
  const called = await client.callTool({ name: 'echo', arguments: { n: i } });
  check(called.isError !== true && called.structuredContent?.echo?.n === i, `tools/call ${i + 1} answered`, called);
  await client.ping();
}
check(served[0] >= 3 && served[1] >= 3, 'both replicas served the session', served);
await transport.terminateSession();
await client.close();
proxy.close();
console.log('ok: all');
