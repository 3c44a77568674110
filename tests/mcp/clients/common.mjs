// Shared by the client scripts: assertions that exit non-zero with a message.
export function check(condition, message, detail) {
  if (!condition) {
    console.error(`FAIL: ${message}${detail === undefined ? '' : `: ${JSON.stringify(detail)}`}`);
    process.exit(1);
  }
  console.log(`ok: ${message}`);
}

// The checks every client makes once connected: the listing, a call, an error result.
export async function listCallAndFail(client) {
  const { tools } = await client.listTools();
  const echo = tools.find((t) => t.name === 'echo');
  check(echo !== undefined, 'tools/list has echo', tools.map((t) => t.name));
  check(echo.annotations?.readOnlyHint === true, 'echo (low risk) is readOnlyHint', echo.annotations);
  check(echo.inputSchema?.type === 'object', 'echo has an object inputSchema', echo.inputSchema);
  const called = await client.callTool({ name: 'echo', arguments: { n: 4 } });
  check(called.isError !== true, 'tools/call echo succeeds', called);
  check(called.structuredContent?.echo?.n === 4, 'echo answers its arguments as structuredContent', called);
  check(called.content?.[0]?.type === 'text', 'the result has a text block', called.content);
  const crashed = await client.callTool({ name: 'crash', arguments: {} });
  check(crashed.isError === true, 'a crashing tool is an error result', crashed);
  check(crashed.structuredContent?.error?.kind === 'tool_crashed', 'the error result names its kind', crashed);
}

// A call that asked for progress: the notifications it got, in order, before its result.
export async function callWithProgress(client) {
  const seen = [];
  const result = await client.callTool({ name: 'echo', arguments: { n: 5 } }, undefined, {
    onprogress: (p) => seen.push(p),
  });
  check(result.structuredContent?.echo?.n === 5, 'the call with a progress token succeeds', result);
  check(seen.length > 0, 'progress notifications arrived before the result', seen);
  check(seen.some((p) => p.message === 'execute'), 'one of them is the execute stage', seen);
}

// The approver's REST decision on `approvalId`, with the approver's own token; checked to
// have been taken.
async function approve(origin, approvalId, approverToken, reason, message) {
  const decided = await fetch(new URL(`/v1/approvals/${encodeURIComponent(approvalId)}/approve`, origin), {
    method: 'POST',
    headers: { Authorization: `Bearer ${approverToken}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ reason }),
  });
  check(decided.status === 200, message, await decided.text());
}

// The approver at an elicited approval page (/console/#approval/<id>): the decision the page
// makes.
export async function approveAtPage(pageUrl, approverToken) {
  const page = new URL(pageUrl);
  const approval = decodeURIComponent(page.hash.replace(/^#approval\//, ''));
  await approve(page.origin, approval, approverToken, 'checked at the page', 'the approver decided at the elicited page');
}

// The approver of a task's call (the invocation `taskId`, read with its owner's key): finds
// the call's approval and approves it.
export async function approveTask(mcpUrl, taskId, ownerKey, approverToken) {
  const origin = new URL(mcpUrl).origin;
  const row = await (await fetch(`${origin}/v1/invocations/${encodeURIComponent(taskId)}`, {
    headers: { Authorization: `Bearer ${ownerKey}` },
  })).json();
  await approve(origin, row.approval.id, approverToken, 'checked', 'the approver approved');
}
