// The v2 client (@modelcontextprotocol/client) at the stateless 2026-07-28 revision:
// node v2_client.mjs URL KEY [pin|auto]; pin (the default) asks for 2026-07-28 alone, auto
// probes with server/discover and must still choose it.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { check, listCallAndFail } from './common.mjs';

const [url, key, mode = 'pin'] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: 'airlock-test', version: '1.0.0' }, {
  versionNegotiation: { mode: mode === 'auto' ? 'auto' : { pin: '2026-07-28' } },
});
await client.connect(transport);
check(client.getNegotiatedProtocolVersion() === '2026-07-28', 'negotiated 2026-07-28', client.getNegotiatedProtocolVersion());
await listCallAndFail(client);
await client.close();
