// The TypeScript SDK v1 client launching `airlock mcp`: node sdk_stdio.mjs AIRLOCK CONFIG KEY
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { callWithProgress, check, listCallAndFail } from './common.mjs';

const [airlock, config, key] = process.argv.slice(2);
const transport = new StdioClientTransport({ command: airlock, args: ['mcp', '--config', config, '--key', key], stderr: 'inherit' });
const client = new Client({ name: 'airlock-test', version: '1.0.0' });
await client.connect(transport);
check(client.getServerVersion()?.name === 'airlock', 'the server is airlock', client.getServerVersion());
await listCallAndFail(client);
await callWithProgress(client);
await client.close();
