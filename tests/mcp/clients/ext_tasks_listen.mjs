// 2026-07-28's tasks extension (@modelcontextprotocol/ext-tasks, SEP-2663): a task's status
// through subscriptions/listen (issue #38):
// node ext_tasks_listen.mjs URL KEY APPROVER_TOKEN OTHER_KEY
// A critical call from a client that declares the extension is a task. The client opens a
// subscriptions/listen stream naming it (the package's contributeTaskFilterV2) and reads the
// acknowledgement with readAcceptedTaskIdsV2; another principal's stream naming the same id
// is not acknowledged it. The script plays the approver (the REST decision); the owner's stream
// carries notifications/tasks (each one the package's TaskStatusNotificationV2 schema
// accepts): working, then completed with the tool's result. The other stream carries none.
// The requests are plain POSTs with 2026-07-28's headers, as ext_tasks_approval.mjs sends
// them. Run by approvals_test.cpp.
import { contributeTaskFilterV2, isTaskStatusNotificationV2, readAcceptedTaskIdsV2, withTaskCapabilityV2 } from '@modelcontextprotocol/ext-tasks/core/v2';
import { approveTask, check } from './common.mjs';

const [url, key, approverToken, otherKey] = process.argv.slice(2);
const revision = '2026-07-28';
const meta = {
  'io.modelcontextprotocol/protocolVersion': revision,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'airlock-ext-tasks-listen-test', version: '1.0.0' },
};
let nextId = 1;
function post(method, params, bearer, name, signal) {
  return fetch(url, {
    method: 'POST',
    signal,
    headers: {
      Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': revision, 'Mcp-Method': method, ...(name ? { 'Mcp-Name': name } : {}),
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: `listen-${nextId++}`, method, params: { ...params, _meta: { ...meta, ...params._meta } } }),
  });
}

// A subscriptions/listen stream naming `taskId`: its messages as they come.
async function listen(bearer, taskId) {
  const aborter = new AbortController();
  const params = contributeTaskFilterV2({ notifications: {} }, [taskId]);
  const response = await post('subscriptions/listen', params, bearer, undefined, aborter.signal);
  check(response.status === 200, 'subscriptions/listen is answered with a stream', response.status);
  const messages = [];
  const waiters = [];
  (async () => {
    const decoder = new TextDecoder();
    let text = '';
    try {
      for await (const chunk of response.body) {
        text += decoder.decode(chunk, { stream: true });
        let cut;
        while ((cut = text.indexOf('\n\n')) >= 0) {
          const data = text.slice(0, cut).split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).join('\n');
          text = text.slice(cut + 2);
          if (data) messages.push(JSON.parse(data));
          waiters.splice(0).forEach((wake) => wake());
        }
      }
    } catch { /* aborted */ }
  })();
  const until = async (done) => {
    const bound = Date.now() + 60000;  // a bound on a failing run, not a timing the test asserts
    while (!done(messages) && Date.now() < bound)
      await new Promise((resolve) => { waiters.push(resolve); setTimeout(resolve, 1000); });
    return done(messages);
  };
  return { messages, until, close: () => aborter.abort() };
}

const called = await (await post('tools/call', withTaskCapabilityV2({ name: 'danger', arguments: { x: 41 }, _meta: meta }), key, 'danger')).json();
const taskId = called.result?.taskId;
check(called.result?.resultType === 'task' && typeof taskId === 'string', 'the critical call is a task', called);

const acknowledged = (messages) => messages.find((m) => m.method === 'notifications/subscriptions/acknowledged');
const mine = await listen(key, taskId);
const theirs = await listen(otherKey, taskId);
check(await mine.until(acknowledged), 'the stream is acknowledged', mine.messages);
check(await theirs.until(acknowledged), "the other principal's stream is acknowledged", theirs.messages);
check(JSON.stringify(readAcceptedTaskIdsV2(acknowledged(mine.messages).params)) === JSON.stringify([taskId]),
  'the task is accepted for its owner', acknowledged(mine.messages));
check(readAcceptedTaskIdsV2(acknowledged(theirs.messages).params).length === 0,
  'nobody else is accepted it', acknowledged(theirs.messages));

await approveTask(url, taskId, key, approverToken);

const told = (messages) => messages.filter((m) => m.method === 'notifications/tasks');
const ended = (messages) => told(messages).some((m) => m.params.status !== 'working' && m.params.status !== 'input_required');
check(await mine.until(ended), 'the task ended as told by notifications/tasks', mine.messages);
const statuses = told(mine.messages);
check(statuses.every((m) => isTaskStatusNotificationV2(m)), "each is the extension's task notification", statuses);
check(statuses.every((m) => m.params.taskId === taskId), 'each names the task', statuses);
check(statuses.every((m) => m.params._meta?.['io.modelcontextprotocol/subscriptionId'] !== undefined),
  'each is stamped with its subscription', statuses);
check(JSON.stringify(statuses.map((m) => m.params.status)) === '["working","completed"]', 'told working once approved, then completed', statuses);
const last = statuses[statuses.length - 1].params;
check(last.result?.structuredContent?.echo?.x === 41, "the completed task carries the call's result", last);
check(told(theirs.messages).length === 0, 'the other principal was told nothing', theirs.messages);
mine.close();
theirs.close();
console.log("ok: the task's status arrived through subscriptions/listen");
