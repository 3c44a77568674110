// The TypeScript SDK v1 client reads the resources and prompts of a gateway server
// (server-everything, named "everything") through the daemon's /mcp (issue #38):
//   node sdk_content.mjs URL KEY OTHER_KEY
// KEY's principal may invoke everything.*; OTHER_KEY's may not: it sees none of them and its
// reads are refused.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { check } from './common.mjs';

const [url, key, otherKey] = process.argv.slice(2);
const prefix = 'airlock-mcp://everything/';

async function connect(bearer) {
  const client = new Client({ name: 'airlock-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  }));
  return client;
}

async function all(list, key) {
  const items = [];
  let cursor;
  do {
    const page = await list(cursor === undefined ? {} : { cursor });
    items.push(...page[key]);
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return items;
}

async function refusal(promise) {
  try {
    await promise;
    return null;
  } catch (e) {
    return e;
  }
}

const client = await connect(key);
const caps = client.getServerCapabilities();
check(caps?.resources !== undefined && caps?.prompts !== undefined, 'the server offers resources and prompts', caps);

// Resources: namespaced, and read back through Airlock.
const resources = await all((p) => client.listResources(p), 'resources');
const doc = resources.find((r) => r.uri.startsWith(`${prefix}demo://resource/static/document/`));
check(doc !== undefined, 'resources/list has the server\'s static documents, namespaced', resources.map((r) => r.uri));
const mine = resources.filter((r) => r.uri.startsWith(prefix));
check(mine.every((r) => r.name.startsWith('everything.')), 'every resource of everything is in its namespace',
  mine.map((r) => [r.uri, r.name]));
const read = await client.readResource({ uri: doc.uri });
check(read.contents?.[0]?.uri === doc.uri, 'resources/read answers with the namespaced uri', read.contents?.[0]?.uri);
check(typeof read.contents?.[0]?.text === 'string' && read.contents[0].text.length > 0, 'the document has text');
check(typeof read._meta?.['airlock.dev/invocationId'] === 'string', 'the read names its invocation', read._meta);

const templates = await all((p) => client.listResourceTemplates(p), 'resourceTemplates');
const textTemplate = templates.find((t) => t.uriTemplate === `${prefix}demo://resource/dynamic/text/{resourceId}`);
check(textTemplate !== undefined, 'resources/templates/list has the dynamic text template, namespaced',
  templates.map((t) => t.uriTemplate));
const dynamic = await client.readResource({ uri: `${prefix}demo://resource/dynamic/text/7` });
check(dynamic.contents?.[0]?.text?.startsWith('Resource 7:'), 'a templated resource is read', dynamic.contents);

const unknown = await refusal(client.readResource({ uri: `${prefix}demo://resource/no/such/thing` }));
check(unknown?.code === -32002, 'an unknown resource is -32002, the server\'s refusal', unknown?.message);
const foreign = await refusal(client.readResource({ uri: 'demo://resource/dynamic/text/1' }));
check(foreign?.code === -32002, 'a uri outside Airlock\'s namespace is not a resource', foreign?.message);

// Prompts: namespaced, their arguments through the pipeline, their text scanned by DLP.
const prompts = await all((p) => client.listPrompts(p), 'prompts');
check(prompts.some((p) => p.name === 'everything.args-prompt'), 'prompts/list has everything.args-prompt',
  prompts.map((p) => p.name));
const weather = await client.getPrompt({ name: 'everything.args-prompt', arguments: { city: 'Paris' } });
check(weather.messages?.[0]?.content?.text === "What's weather in Paris?", 'prompts/get passes the arguments', weather);
const leaky = await client.getPrompt({ name: 'everything.args-prompt', arguments: { city: 'jane.doe@example.org' } });
const leakyText = JSON.stringify(leaky.messages);
check(!leakyText.includes('jane.doe@example.org'), 'DLP redacts an address in a prompt', leakyText);
const noPrompt = await refusal(client.getPrompt({ name: 'everything.no-such-prompt' }));
check(noPrompt?.code === -32602, 'an unknown prompt is invalid params', noPrompt?.message);
const badArgs = await refusal(client.getPrompt({ name: 'everything.args-prompt', arguments: { city: 7 } }));
check(badArgs?.code === -32602 && badArgs?.data?.kind === 'invalid_input', 'a prompt argument must be a string',
  badArgs?.data);
// A hostile server's listing: its malformed entries left out; its resource's leak redacted.
const leakyUri = 'airlock-mcp://leaky/leak://key';
const leakyListed = resources.filter((r) => r.uri.startsWith('airlock-mcp://leaky/'));
check(leakyListed.length === 1 && leakyListed[0].uri === leakyUri, 'only the well-formed entry of leaky is listed',
  leakyListed);
const leaked = JSON.stringify(await client.readResource({ uri: leakyUri }));
check(!leaked.includes('AKIAUP6PPB2TDBM72FQO') && !leaked.includes('jane.doe@example.org'),
  'DLP redacts what a server\'s resource leaks', leaked);
await client.close();

// RBAC: a principal that may not invoke everything.* sees nothing of it and reads nothing.
const other = await connect(otherKey);
check((await all((p) => other.listResources(p), 'resources')).length === 0, 'other lists no resources');
check((await all((p) => other.listPrompts(p), 'prompts')).length === 0, 'other lists no prompts');
const forbidden = await refusal(other.readResource({ uri: doc.uri }));
check(forbidden?.data?.kind === 'forbidden', 'other\'s read is refused by RBAC', forbidden?.data);
const forbiddenPrompt = await refusal(other.getPrompt({ name: 'everything.simple-prompt' }));
check(forbiddenPrompt?.data?.kind === 'forbidden', 'other\'s prompts/get is refused by RBAC', forbiddenPrompt?.data);
await other.close();
console.log('ok: all');
