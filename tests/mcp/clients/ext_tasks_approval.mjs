// The official Tasks extension client (@modelcontextprotocol/ext-tasks, SEP-2663) on the v2
// client at 2026-07-28 calls a critical tool (issue #38):
// node ext_tasks_approval.mjs URL KEY APPROVER_TOKEN
// The client declares the extension and URL-mode elicitation. The call comes back as a task
// (resultType "task"), input_required; its input request is the console's approval page. The
// input handler plays the user who opens it and the approver who decides there (the REST
// decision the page makes, with the approver's own token); the answer goes back with
// tasks/update, and polling tasks/get ends with the tool's result. The extension's requests
// go through rawDispatch, a plain POST with 2026-07-28's headers, as the package asks of a host
// (the v2 client's codec has no task shapes). Run by approvals_test.cpp.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { approveAtPage, check } from './common.mjs';

const [url, key, approverToken] = process.argv.slice(2);
const revision = '2026-07-28';
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: 'airlock-ext-tasks-test', version: '1.0.0' }, {
  capabilities: { elicitation: { url: {} } },
  versionNegotiation: { mode: { pin: revision } },
});
await client.connect(transport);
check(client.getNegotiatedProtocolVersion() === revision, `negotiated ${revision}`, client.getNegotiatedProtocolVersion());
check(client.getServerCapabilities()?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined,
  'server/discover offers the tasks extension', client.getServerCapabilities());

// The requests the extension sends itself (tools/call, tasks/*): one JSON-RPC message per POST.
let nextId = 1;
const methods = [];
async function rawDispatch(request, options) {
  methods.push(request.method);
  const headers = {
    Authorization: `Bearer ${key}`,
    'Content-Type': 'application/json',
    Accept: 'application/json, text/event-stream',
    'MCP-Protocol-Version': revision,
    'Mcp-Method': request.method,
    ...(request.method === 'tools/call' ? { 'Mcp-Name': request.params.name } : {}),
    ...(options?.context?.headers ?? {}),
  };
  const response = await fetch(url, {
    method: 'POST', headers, signal: options?.signal,
    body: JSON.stringify({ jsonrpc: '2.0', id: `ext-${nextId++}`, ...request }),
  });
  const text = await response.text();
  const data = text.split('\n').filter((line) => line.startsWith('data: ')).map((line) => line.slice(6));
  const message = JSON.parse(data.length > 0 ? data[data.length - 1] : text);
  return message.error !== undefined ? { kind: 'error', error: message.error } : { kind: 'result', result: message.result };
}

const asked = [];
const session = createTaskSessionFromClient(client, {
  endpointId: 'airlock-test',
  rawDispatch,
  v2RequestFraming: {
    protocolVersion: revision,
    clientInfo: { name: 'airlock-ext-tasks-test', version: '1.0.0' },
    clientCapabilities: { elicitation: { url: {} } },
  },
  onInputRequest: async (input) => {
    asked.push(input);
    await approveAtPage(input.params.url, approverToken);
    return { action: 'accept' };
  },
});
try {
  const execution = await session.callTool('danger', { x: 13 });
  check(execution.kind === 'task', 'the critical call came back as a task', execution.kind);
  const statuses = [];
  const { outcome } = await execution.settle({ onEvent: (e) => { if (e.type === 'task') statuses.push(e.task.status); } });
  check(asked.length === 1 && asked[0].kind === 'elicitation' && asked[0].params.mode === 'url' &&
        asked[0].params.url.includes('/console/#approval/'), "the task's input request is the approval page", asked);
  check(methods.includes('tasks/update'), 'the answer went back with tasks/update', methods);
  const result = resultFromTaskOutcome(outcome);
  check(result?.isError !== true && result?.structuredContent?.echo?.x === 13, "the call's result arrived", { outcome, statuses });
} finally {
  await session.close();
}
await client.close();
