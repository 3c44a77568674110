// The TypeScript SDK v1 client at 2025-11-25, connected while the daemon's gateway changes
// (issue #38): node sdk_list_changed.mjs URL KEY MODE ...
//   first TOOL [FAILED]  connected right at daemon start, its first tools/list has TOOL (the
//                        listing waited for every server's first listing), and names the server
//                        FAILED as failed in _meta["airlock.dev/mcpServers"]
//   pin CALL GONE        once the GET /mcp stream is open, calls CALL (a rug-pull server
//                        changes its listing after a call): notifications/tools/list_changed
//                        arrives, and tools/list no longer has GONE (its pin is broken)
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { check } from './common.mjs';

const [url, key, mode, ...rest] = process.argv.slice(2);

// Resolved when the server answers the SDK's GET /mcp with a stream: from then on a change is
// announced to this client.
let streamOpen;
const streamOpened = new Promise((resolve) => { streamOpen = resolve; });
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
  fetch: async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && response.ok &&
        (response.headers.get('content-type') ?? '').startsWith('text/event-stream'))
      streamOpen();
    return response;
  },
});
let changes = 0;
let changed;
const nextChange = () => new Promise((resolve) => { changed = resolve; });
const client = new Client({ name: 'airlock-test', version: '1.0.0' });
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes += 1;
  if (changed) changed();
});

function within(ms, promise, what) {
  return Promise.race([promise, new Promise((_, reject) => setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms))]);
}

async function listAll() {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return tools.map((t) => t.name);
}

await client.connect(transport);
check(client.getServerCapabilities()?.tools?.listChanged === true, 'the server says its tool list changes');

if (mode === 'first') {
  const [tool, failed] = rest;
  const first = await client.listTools();
  const names = first.tools.map((t) => t.name);
  check(names.includes(tool), `the first tools/list has ${tool}`, names);
  if (failed) {
    const servers = first._meta?.['airlock.dev/mcpServers'];
    check(servers?.failed?.[failed] !== undefined, `it names ${failed} as failed`, first._meta);
  }
} else if (mode === 'pin') {
  const [call, gone] = rest;
  await within(20000, streamOpened, 'the GET /mcp stream');
  check((await listAll()).includes(gone), `${gone} is listed before the change`);
  const waiting = nextChange();
  const result = await client.callTool({ name: call, arguments: {} });
  check(result.isError !== true, `${call} succeeds`, result);
  await within(30000, waiting, 'notifications/tools/list_changed');
  check(changes >= 1, 'notifications/tools/list_changed arrived on the GET stream');
  // The change may come in two publishes (the listing, then the pin): list until it shows.
  let names = await listAll();
  for (let i = 0; i < 50 && names.includes(gone); i += 1) {
    await new Promise((r) => setTimeout(r, 100));
    names = await listAll();
  }
  check(!names.includes(gone), `${gone} is no longer listed (its pin is broken)`, names);
} else {
  check(false, `unknown mode ${mode}`);
}
await transport.terminateSession();
await client.close();
