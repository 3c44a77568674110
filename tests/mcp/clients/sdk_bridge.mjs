// `airlock mcp` as a bridge to a running daemon (docs/mcp-server.md, "One daemon, many
// clients"): node sdk_bridge.mjs URL AIRLOCK WORKDIR KEY
// The TypeScript SDK v1 client launches two bridges at once, one with --server and one with
// the running daemon's own --config, beside a client of the daemon's /mcp over HTTP. All
// three list, call, get progress, and share one daemon: a variable one sets in a session the
// others read; a reload's list_changed reaches a bridged client. Closing a bridge deletes its MCP session (its default workspace ends). A bad
// --subject-token reaches the daemon, which refuses it. An embedded `airlock mcp` holds its
// data directory for one client, and a second one on the same config says so.
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, listCallAndFail } from './common.mjs';

const [url, airlock, work, key] = process.argv.slice(2);
const origin = new URL(url).origin;
const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

async function bridge(args) {
  const transport = new StdioClientTransport({ command: airlock, args: ['mcp', ...args], stderr: 'pipe' });
  let log = '';
  transport.stderr?.on('data', (d) => { log += d; });
  const client = new Client({ name: 'airlock-bridge-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, log: () => log };
}

// A call with a progress token, read line by line from a bridge: every stage's notification,
// in order, then the answer. (Not through the SDK client: it handles notifications a tick after
// an answer read in the same chunk of stdout, so a progress notification that arrives with the
// answer reaches no handler: the SDK's race, not the bridge's.)
async function progressOnTheWire() {
  const child = spawn(airlock, ['mcp', '--server', origin, '--key', key], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = [];
  let buffered = '', waiting = null;
  child.stdout.on('data', (d) => {
    buffered += d;
    let end;
    while ((end = buffered.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buffered.slice(0, end)));
      buffered = buffered.slice(end + 1);
    }
    waiting?.();
  });
  const answerTo = async (id) => {
    for (;;) {
      const found = lines.find((m) => m.id === id);
      if (found) return found;
      await new Promise((r) => { waiting = r; });
    }
  };
  const send = (m) => child.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
  send({ id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
  await answerTo(1);
  send({ method: 'notifications/initialized' });
  send({ id: 2, method: 'tools/call', params: { name: 'echo', arguments: { n: 5 }, _meta: { progressToken: 'p' } } });
  const answer = await answerTo(2);
  check(answer.result?.structuredContent?.echo?.n === 5, 'a call with a progress token succeeds through the bridge', answer);
  const stages = lines.slice(0, lines.indexOf(answer)).filter((m) => m.method === 'notifications/progress')
    .map((m) => m.params.message);
  check(stages.includes('execute') && stages.at(-1) === 'scan_output', 'every stage\'s progress came before the answer', stages);
  child.stdin.end();
  await new Promise((resolve) => child.on('exit', resolve));
}

async function restSession(id) {
  const resp = await fetch(`${origin}/v1/sessions/${id}`, { headers: { Authorization: `Bearer ${key}` } });
  return resp.status;
}

// ---- two bridges and an HTTP client at once ----
const [viaServer, viaConfig] = await Promise.all([
  bridge(['--server', origin, '--key', key]),
  bridge(['--config', `${work}/airlock.yaml`, '--key', key]),
]);
const http = new Client({ name: 'airlock-bridge-test-http', version: '1.0.0' });
const httpTransport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
await http.connect(httpTransport);
for (const c of [viaServer.client, viaConfig.client])
  check(c.getServerVersion()?.name === 'airlock', 'a bridge reaches the daemon', c.getServerVersion());
check(viaConfig.log().includes('an airlock serve holds the data directory'),
  '--config of a running daemon bridges to it', viaConfig.log());
await Promise.all([listCallAndFail(viaServer.client), listCallAndFail(viaConfig.client), listCallAndFail(http)]);
await progressOnTheWire();

// ---- what the daemon sends unasked reaches a bridged client (the bridge reads the GET stream) ----
// A reload (SIGHUP, the same config) publishes the tools again: list_changed. Sent again until
// it arrives, as the bridge opens its stream once the session exists, not at a known moment.
let changed = false;
viaServer.client.setNotificationHandler(ToolListChangedNotificationSchema, () => { changed = true; });
const daemonPid = Number(readFileSync(`${work}/pid`, 'utf8'));
for (let i = 0; i < 20 && !changed; i++) {
  process.kill(daemonPid, 'SIGHUP');
  for (let j = 0; j < 10 && !changed; j++) await new Promise((r) => setTimeout(r, 100));
}
check(changed, 'notifications/tools/list_changed reaches the client through the bridge');

// ---- one daemon: a session one client made, the others use ----
const created = await viaServer.client.callTool({ name: 'session_create', arguments: {} });
const id = created.structuredContent?.id;
check(typeof id === 'string', 'a session is created through the first bridge', created);
await viaServer.client.callTool({ name: 'session_code', arguments: { session: id, code: 'shared = 41' } });
const fromConfig = await viaConfig.client.callTool({ name: 'session_code', arguments: { session: id, code: 'shared + 1' } });
check(fromConfig.structuredContent?.result?.json === 42, 'the second bridge reads the first one\'s variable', fromConfig);
const fromHttp = await http.callTool({ name: 'session_code', arguments: { session: id, code: 'shared + 2' } });
check(fromHttp.structuredContent?.result?.json === 43, 'so does the HTTP client', fromHttp);
await viaServer.client.callTool({ name: 'session_end', arguments: { session: id } });

// ---- closing a bridge ends its MCP session, and its default workspace with it ----
const cell = await viaConfig.client.callTool({ name: 'session_code', arguments: { code: 'y = 1' } });
const workspace = cell.structuredContent?.session;
check(typeof workspace === 'string' && (await restSession(workspace)) === 200, 'the bridge\'s MCP session has a workspace', cell);
await viaConfig.client.close();  // stdin closed: the bridge DELETEs its MCP session, then exits
let gone = false;
for (let i = 0; i < 300 && !gone; i++) {
  gone = (await restSession(workspace)) === 404;
  if (!gone) await new Promise((r) => setTimeout(r, 100));
}
check(gone, 'the workspace ended when the bridge closed');
await viaServer.client.close();
await httpTransport.terminateSession();
await http.close();

// ---- the subject token goes to the daemon ----
let refused = '';
try {
  await bridge(['--server', origin, '--key', key, '--subject-token', 'not-a-token']);
} catch (e) {
  refused = String(e?.message ?? e);
}
check(refused !== '', 'a bad --subject-token is refused by the daemon', refused);
check(refused.includes('Airlock-Subject-Token is not valid'), 'the refusal says why', refused);

// ---- the embedded mode holds its data directory for one client, and says so ----
const embeddedConfig = `${work}/airlock-bridge-embedded.yaml`;
writeFileSync(embeddedConfig, readFileSync(`${work}/airlock-stdio.yaml`, 'utf8').replace('data-stdio', 'data-bridge-embedded'));
const embedded = spawn(airlock, ['mcp', '--config', embeddedConfig, '--key', key], { stdio: ['pipe', 'pipe', 'pipe'] });
let embeddedLog = '';
await new Promise((resolve, reject) => {
  embedded.stderr.on('data', (d) => {
    embeddedLog += d;
    if (embeddedLog.includes('serving MCP on stdin')) resolve();
  });
  embedded.on('exit', () => reject(new Error(`the embedded airlock mcp exited: ${embeddedLog}`)));
});
const second = spawnSync(airlock, ['mcp', '--config', embeddedConfig, '--key', key], { input: '', encoding: 'utf8' });
check(second.status === 1, 'a second airlock mcp on an embedded one\'s config is refused', second);
check(second.stderr.includes('serves only the client that started it') && second.stderr.includes('airlock serve'),
  'it names the holder and says to run airlock serve', second.stderr);
embedded.stdin.end();
await new Promise((resolve) => embedded.on('exit', resolve));

// ---- the embedded mode passes the subject token too ----
const initialize = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
const withToken = spawnSync(airlock, ['mcp', '--config', embeddedConfig, '--key', key, '--subject-token', 'not-a-token'],
  { input: `${initialize}\n`, encoding: 'utf8' });
check(withToken.stdout.includes('Airlock-Subject-Token is not valid'), 'embedded, a bad --subject-token is refused too',
  withToken);
