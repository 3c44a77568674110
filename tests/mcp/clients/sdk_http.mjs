// The TypeScript SDK v1 client over Streamable HTTP: node sdk_http.mjs URL KEY REVISION [progress]
// REVISION is 2025-11-25 (what the SDK asks for) or 2025-06-18 (asked for by rewriting
// the initialize request the SDK sends).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { callWithProgress, check, listCallAndFail } from './common.mjs';

const [url, key, revision, mode] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === 'initialize') message.params.protocolVersion = revision;
  return send(message, options);
};
const client = new Client({ name: 'airlock-test', version: '1.0.0' });
await client.connect(transport);
check(client.getServerVersion()?.name === 'airlock', 'the server is airlock', client.getServerVersion());
check(transport.protocolVersion === revision, `the session speaks ${revision}`, transport.protocolVersion);
check(typeof transport.sessionId === 'string' && transport.sessionId.length > 0, 'a session id was issued');
if (mode === 'progress') await callWithProgress(client);
else await listCallAndFail(client);
await transport.terminateSession();
await client.close();
