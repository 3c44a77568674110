// The TypeScript SDK v1 client at 2025-11-25 is told of its task's status (issue #38):
// node sdk_task_status.mjs URL KEY APPROVER_TOKEN
// The client's transport opens the session's GET stream after initialize (the script waits
// until the server has answered it). A critical call made a task waits for its approver; the
// script plays the approver (the REST decision, with the approver's token); the client's
// handler of notifications/tasks/status (the SDK's schema) gets working, then completed, and
// the last one is the task as tasks/get answers it. Run by approvals_test.cpp.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, GetTaskResultSchema, TaskStatusNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { approveTask, check } from './common.mjs';

const [url, key, approverToken] = process.argv.slice(2);
let streamOpened;
const opened = new Promise((resolve) => { streamOpened = resolve; });
// The GET stream's answer arriving means the server keeps it as the session's channel.
const watchingFetch = async (input, init) => {
  const response = await fetch(input, init);
  if ((init?.method ?? 'GET') === 'GET' && response.ok) streamOpened();
  return response;
};
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
  fetch: watchingFetch,
});
const client = new Client({ name: 'airlock-task-status-test', version: '1.0.0' }, { capabilities: {} });
const told = [];
let ended;
const terminal = new Promise((resolve) => { ended = resolve; });
client.setNotificationHandler(TaskStatusNotificationSchema, (n) => {
  told.push(n.params);
  if (['completed', 'failed', 'cancelled'].includes(n.params.status)) ended();
});
await client.connect(transport);
await opened;

const created = await client.request(
  { method: 'tools/call', params: { name: 'danger', arguments: { x: 31 }, task: {} } }, CreateTaskResultSchema);
const taskId = created.task.taskId;
check(typeof taskId === 'string', 'the critical call is a task', created);
await approveTask(url, taskId, key, approverToken);

// A bound on a failing run, not a timing the test asserts.
const bound = setTimeout(() => check(false, 'the task ended as told by notifications/tasks/status', told), 60000);
await terminal;
clearTimeout(bound);
check(told.every((t) => t.taskId === taskId), 'every notification names the task', told);
check(JSON.stringify(told.map((t) => t.status)) === '["working","completed"]', 'told working once approved, then completed', told);
const polled = await client.request({ method: 'tasks/get', params: { taskId } }, GetTaskResultSchema);
const last = told[told.length - 1];
check(last.status === polled.status && last.lastUpdatedAt === polled.lastUpdatedAt && last.createdAt === polled.createdAt,
  'the last notification is the task as tasks/get answers it', { last, polled });
console.log("ok: the call's status arrived");
await transport.terminateSession();
await client.close();
