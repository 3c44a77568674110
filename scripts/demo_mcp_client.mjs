// make demo, step 8: the official MCP TypeScript SDK (tests/mcp/node_modules, npm ci) as an
// agent would use it: Streamable HTTP to Airlock's /mcp, list the tools, call two of them.
//   node scripts/demo_mcp_client.mjs URL KEY
const sdk = new URL('../tests/mcp/node_modules/@modelcontextprotocol/sdk/dist/esm/', import.meta.url);
const { Client } = await import(new URL('client/index.js', sdk));
const { StreamableHTTPClientTransport } = await import(new URL('client/streamableHttp.js', sdk));

const [url, key] = process.argv.slice(2);
const client = new Client({ name: 'airlock-demo', version: '1.0.0' });
await client.connect(new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
}));
const { tools } = await client.listTools();
console.log(`  tools/list (${tools.length}): ${tools.map((t) => t.name).join(', ')}`);

async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  const text = (r.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join(' ');
  console.log(`  tools/call ${name} ${JSON.stringify(args)}`);
  console.log(`    -> ${r.isError ? 'isError: ' : ''}${text.replace(/\s+/g, ' ').slice(0, 160)}`);
}
await call('csv-summary', { csv: 'city,temp\nParis,21\nOslo,12\n' });
await call('docs.read_text_file', { path: '/data/welcome.txt' });
await call('docs.read_text_file', { path: '/data/../../etc/shadow' });
await client.close();
