// The v2 client (@modelcontextprotocol/client) at 2026-07-28 calls a critical tool (issue #38):
// node v2_approval.mjs URL KEY APPROVER_TOKEN
// The call answers input_required with a URL-mode elicitation of the console's approval page;
// the client's handler plays the user who opens it and the approver who decides there (the
// REST decision the page makes, with the approver's own token), and callTool resolves with
// the tool's result once the retry sees the call end. Run by approvals_test.cpp.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { approveAtPage, check } from './common.mjs';

const [url, key, approverToken] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${key}` } },
});
const client = new Client({ name: 'airlock-approval-test', version: '1.0.0' }, {
  capabilities: { elicitation: { url: {} } },
  versionNegotiation: { mode: { pin: '2026-07-28' } },
});
const elicited = [];
client.setRequestHandler('elicitation/create', async (request) => {
  const params = request.params ?? request;
  elicited.push(params);
  await approveAtPage(params.url, approverToken);
  return { action: 'accept' };
});
await client.connect(transport);
check(client.getNegotiatedProtocolVersion() === '2026-07-28', 'negotiated 2026-07-28', client.getNegotiatedProtocolVersion());
const result = await client.callTool({ name: 'danger', arguments: { x: 7 } });
check(elicited.length === 1, 'the user was shown the approval page once', elicited);
check(elicited[0].mode === 'url' && elicited[0].url.includes('/console/#approval/'), 'a URL-mode elicitation of the console page', elicited[0]);
check(result.isError !== true && result.structuredContent?.echo?.x === 7, "the call's result arrived", result);
await client.close();
