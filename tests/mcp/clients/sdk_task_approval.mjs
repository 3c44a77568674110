// The TypeScript SDK v1 client at 2025-11-25 calls a critical tool as a task (issue #38):
// node sdk_task_approval.mjs URL KEY APPROVER_TOKEN [AIRLOCK]
// With AIRLOCK (the CLI), the client reaches the daemon through the stdio bridge
// (`airlock mcp --server`), as a desktop client does; without it, over HTTP.
// The client declares URL-mode elicitation. callToolStream makes the call a task; the task is
// input_required while it waits for a person, so the client takes tasks/result, whose stream
// brings an elicitation/create of the console's approval page. The handler plays the user who
// opens it and the approver who decides there (the REST decision the page makes, with the
// approver's own token); notifications/elicitation/complete and the tool's result follow.
// Run by approvals_test.cpp.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, ElicitationCompleteNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { approveAtPage, check } from './common.mjs';

const [url, key, approverToken, airlock] = process.argv.slice(2);
const transport = airlock
  ? new StdioClientTransport({ command: airlock, args: ['mcp', '--server', new URL(url).origin, '--key', key] })
  : new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { Authorization: `Bearer ${key}` } } });
const client = new Client({ name: 'airlock-task-approval-test', version: '1.0.0' }, {
  capabilities: { elicitation: { url: {} } },
});
const elicited = [];
const completed = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  elicited.push(request.params);
  await approveAtPage(request.params.url, approverToken);
  return { action: 'accept' };
});
client.setNotificationHandler(ElicitationCompleteNotificationSchema, (n) => { completed.push(n.params); });
await client.connect(transport);
check(client.getServerVersion()?.name === 'airlock', 'the server is airlock', client.getServerVersion());
const { tools } = await client.listTools();
const danger = tools.find((t) => t.name === 'danger');
check(danger?.execution?.taskSupport === 'optional', 'the critical tool may be a task', danger);

const statuses = [];
let result;
for await (const message of client.experimental.tasks.callToolStream({ name: 'danger', arguments: { x: 9 } })) {
  if (message.type === 'taskCreated' || message.type === 'taskStatus') statuses.push(message.task.status);
  if (message.type === 'result') result = message.result;
  if (message.type === 'error') check(false, 'the task stream ended without an error', String(message.error));
}
check(statuses[0] === 'input_required', 'the task waits for input: where a person approves it', statuses);
check(elicited.length === 1, 'the user was shown the approval page once', elicited);
check(elicited[0].mode === 'url' && elicited[0].url.includes('/console/#approval/'), 'a URL-mode elicitation of the console page', elicited[0]);
check(elicited[0]._meta?.['io.modelcontextprotocol/related-task']?.taskId !== undefined, 'the elicitation names its task', elicited[0]);
check(completed.length === 1 && completed[0].elicitationId === elicited[0].elicitationId, 'the elicitation was completed', completed);
check(result?.isError !== true && result?.structuredContent?.echo?.x === 9, "the call's result arrived", result);
if (!airlock) await transport.terminateSession();
await client.close();
