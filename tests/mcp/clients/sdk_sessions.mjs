// Session tools through the TypeScript SDK v1 client over Streamable HTTP (docs/mcp-server.md,
// "Session tools"): node sdk_sessions.mjs URL KEY
// The listing and its schemas; a session created, two cells sharing a variable, a file written
// and read, the session ended; another principal refused the session's id; a principal that
// may create no session sees no session tools; an MCP session's default workspace ended when
// the MCP session is deleted. The daemon's REST API says whether a session still exists.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check } from './common.mjs';

const [url, key] = process.argv.slice(2);
const origin = new URL(url).origin;
const SESSION_TOOLS = ['session_create', 'session_exec', 'session_code', 'session_write_file', 'session_read_file',
  'session_end'];

async function connect(apiKey) {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${apiKey}` } },
  });
  const client = new Client({ name: 'airlock-sessions-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport };
}

// GET /v1/sessions/{id} as `apiKey`: its status and body.
async function restSession(id, apiKey) {
  const resp = await fetch(`${origin}/v1/sessions/${id}`, { headers: { Authorization: `Bearer ${apiKey}` } });
  return { status: resp.status, body: await resp.json() };
}

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

// ---- the listing ----
const a = await connect(key);
const { tools } = await a.client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
for (const name of SESSION_TOOLS) check(byName[name] !== undefined, `tools/list has ${name}`, tools.map((t) => t.name));
check(tools.every((t) => /^[A-Za-z0-9_.-]{1,128}$/.test(t.name)), 'every name keeps to the MCP tool-name rules');
const create = byName.session_create.inputSchema;
check(JSON.stringify(create.properties.template.enum) === '["workspace"]', 'session_create enumerates the templates', create);
check(create.properties.template.default === 'workspace', 'the only template is the default', create);
const code = byName.session_code.inputSchema;
check(code.type === 'object' && code.properties.code.type === 'string', 'session_code takes code, a string', code);
check(JSON.stringify(code.required) === '["code"]', 'session_code requires code only', code);
check(code.properties.session?.type === 'string', 'session is an optional string argument', code);
check(code.additionalProperties === false, 'unknown arguments are not accepted', code);
check(JSON.stringify(byName.session_write_file.inputSchema.required) === '["path","content"]',
  'session_write_file requires path and content', byName.session_write_file.inputSchema);
check(byName.session_read_file.annotations?.readOnlyHint === true, 'session_read_file is read-only',
  byName.session_read_file.annotations);
check(byName.session_end.annotations?.destructiveHint === true, 'session_end is destructive',
  byName.session_end.annotations);

// ---- a session: two cells sharing a variable, a file, its end ----
const created = await a.client.callTool({ name: 'session_create', arguments: { template: 'workspace' } });
check(created.isError !== true, 'session_create succeeds', created);
const id = created.structuredContent.id;
check(typeof id === 'string' && created.structuredContent.state === 'running', 'it answers a running session', created);
check(text(created).includes(id), 'its text names the session', created);
const first = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: 'x = 41' } });
check(first.isError !== true && first.structuredContent.verdict === 'ok', 'the first cell runs', first);
const second = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: 'x + 1' } });
check(second.structuredContent?.result?.json === 42, 'the second cell sees the first one\'s x: 42', second);
check(text(second).includes('42'), 'the model reads 42 in the text', second.content);
check(typeof second._meta?.['airlock.dev/invocationId'] === 'string', 'the result names its invocation', second._meta);
const failing = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: 'def f():\n    return 1 / 0\nf()' } });
check(failing.isError === true, 'a cell that raises is an error result', failing);
check(text(failing).includes('ZeroDivisionError') && text(failing).includes('line 2'),
  'its text has the exception and the traceback\'s line', failing.content);
const rejected = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: "eval('1')" } });
check(rejected.isError === true && rejected.structuredContent?.error?.kind === 'code_rejected',
  'a cell the validator rejects is refused, saying why', rejected);
const written = await a.client.callTool({
  name: 'session_write_file', arguments: { session: id, path: 'notes/a.txt', content: 'hello from MCP\n' },
});
check(written.isError !== true && written.structuredContent.size === 15, 'session_write_file writes the file', written);
const read = await a.client.callTool({ name: 'session_read_file', arguments: { session: id, path: 'notes/a.txt' } });
check(read.structuredContent?.content === 'hello from MCP\n' && text(read) === 'hello from MCP\n',
  'session_read_file reads it back', read);
const cat = await a.client.callTool({ name: 'session_exec', arguments: { session: id, command: 'cat notes/a.txt; exit 3' } });
check(cat.structuredContent?.stdout === 'hello from MCP\n' && cat.structuredContent?.exit_code === 3,
  'session_exec sees the file and answers its exit code', cat);
check(cat.isError !== true, 'a command that exits non-zero is its answer, not an error', cat);
const outside = await a.client.callTool({ name: 'session_read_file', arguments: { session: id, path: '../etc/passwd' } });
check(outside.isError === true, 'a path out of the workspace is refused', outside);
const unknownArg = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: '1', extra: 1 } });
check(unknownArg.isError === true && unknownArg.structuredContent?.error?.kind === 'invalid_input',
  'an unknown argument is refused by name', unknownArg);

// ---- another principal: the id is not theirs ----
const other = await connect(`${key}-other`);
const stolen = await other.client.callTool({ name: 'session_code', arguments: { session: id, code: 'x' } });
check(stolen.isError === true && stolen.structuredContent?.error?.kind === 'not_found',
  'another principal cannot use the session', stolen);
check(Object.keys(stolen.structuredContent).join() === 'error' && stolen.content.length === 1,
  'and learns nothing of it: an error, no result', stolen);
const stolenEnd = await other.client.callTool({ name: 'session_end', arguments: { session: id } });
check(stolenEnd.isError === true, 'nor end it', stolenEnd);
check((await restSession(id, key)).body.state === 'running', 'the session runs on for its owner');
await other.transport.terminateSession();
await other.client.close();

// ---- a principal that may create no session sees no session tools ----
const none = await connect(`${key}-none`);
const noneTools = (await none.client.listTools()).tools.map((t) => t.name);
check(noneTools.includes('echo') && !noneTools.some((n) => n.startsWith('session_')),
  'no session tools for a principal that may create no session', noneTools);
await none.transport.terminateSession();
await none.client.close();

// ---- the end ----
const ended = await a.client.callTool({ name: 'session_end', arguments: { session: id } });
check(ended.isError !== true && ended.structuredContent.state === 'ended', 'session_end ends it', ended);
check((await restSession(id, key)).status === 404, 'the ended session is gone');
const after = await a.client.callTool({ name: 'session_code', arguments: { session: id, code: 'x' } });
check(after.isError === true && after.structuredContent?.error?.kind === 'not_found', 'an ended session is not found', after);
await a.transport.terminateSession();
await a.client.close();

// ---- the default workspace ends with its MCP session ----
const b = await connect(key);
const y = await b.client.callTool({ name: 'session_code', arguments: { code: 'y = 6 * 7\ny' } });
check(y.structuredContent?.result?.json === 42, 'a cell without a session runs in the workspace made for it', y);
const workspace = y.structuredContent.session;
const again = await b.client.callTool({ name: 'session_code', arguments: { code: 'y + 1' } });
check(again.structuredContent?.session === workspace && again.structuredContent?.result?.json === 43,
  'the next cell runs in the same workspace', again);
check((await restSession(workspace, key)).body.state === 'running', 'the workspace is a session of its owner');
await b.transport.terminateSession();  // DELETE /mcp with its Mcp-Session-Id
// Its end runs as the DELETE is answered; wait for it (bounded), never assuming how long it takes.
let gone = false;
for (let i = 0; i < 300 && !gone; i++) {
  gone = (await restSession(workspace, key)).status === 404;
  if (!gone) await new Promise((r) => setTimeout(r, 100));
}
check(gone, 'the workspace ended with its MCP session');
await b.client.close();
