// The v2 client (@modelcontextprotocol/client) pinned to the stateless 2026-07-28 revision:
// node v2_client.mjs URL KEY
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { check, listCallAndFail } from './common.mjs';

const [url, key] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: 'airlock-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
await client.connect(transport);
check(client.getNegotiatedProtocolVersion() === '2026-07-28', 'negotiated 2026-07-28', client.getNegotiatedProtocolVersion());
await listCallAndFail(client);
await client.close();
