// The v2 client (@modelcontextprotocol/client) at the stateless 2026-07-28 revision:
// node v2_client.mjs URL KEY [pin|auto|listen]; pin (the default) asks for 2026-07-28 alone, auto
// probes with server/discover and must still choose it; listen (pinned) opens a
// subscriptions/listen stream for tools/list_changed and must see it acknowledged (issue #38).
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
if (mode === 'listen') {
  const subscription = await client.listen({ toolsListChanged: true, promptsListChanged: true });
  check(subscription.honoredFilter?.toolsListChanged === true, 'the subscription honours toolsListChanged', subscription.honoredFilter);
  check(subscription.honoredFilter?.promptsListChanged === undefined, 'and nothing the server does not offer', subscription.honoredFilter);
  await subscription.close();
} else {
  await listCallAndFail(client);
}
await client.close();
