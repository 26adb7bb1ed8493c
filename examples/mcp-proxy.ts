/**
 * The MCP gateway as a library: the official filesystem server behind toolgate, an MCP client in front.
 * The CLI does the same over stdio or HTTP: toolgate-mcp-proxy --policy p.json --agent A -- <server…>
 * npx tsx examples/mcp-proxy.ts
 */
import { mkdirSync, mkdtempSync, realpathSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { createMcpProxy, policyFromData } from '../src/adapters/mcp/index.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-proxy-example-')));
mkdirSync(join(root, 'inbox'));
writeFileSync(join(root, 'readme.txt'), 'welcome');

// The same shape as a --policy file.
const { policy, agents } = policyFromData({
  agents: { writer: { tools: ['read_text_file', 'write_file'] } },
  rules: [
    { name: 'reads', tools: ['read_text_file'], result: 'allow', reason: 'reading is fine' },
    { name: 'inbox', tools: ['write_file'], arguments: { path: { within: [join(root, 'inbox')] } }, result: 'allow', reason: 'the inbox is writable' },
    { name: 'elsewhere', tools: ['write_file'], result: 'deny', reason: 'writes go to the inbox only' },
  ],
});
const proxy = await createMcpProxy({
  upstream: { stdio: { command: join(import.meta.dirname, '../node_modules/.bin/mcp-server-filesystem'), args: [root], stderr: 'ignore' } },
  policy,
  context: { agent: { name: 'writer', tools: agents['writer']!.tools } },
  audit: (record) => console.log(`  audit: ${record.decision.tool} → ${record.decision.effect} (${record.decision.rule ?? record.decision.layer})`),
});

const client = new Client({ name: 'example', version: '1.0.0' });
const [clientSide, proxySide] = InMemoryTransport.createLinkedPair();
await proxy.createServer().connect(proxySide);
await client.connect(clientSide);

console.log('tools/list:', (await client.listTools()).tools.map((t) => t.name).join(', '));
const text = (r: Awaited<ReturnType<Client['callTool']>>) => (r.content as { text: string }[])[0]?.text;
console.log('read:', text(await client.callTool({ name: 'read_text_file', arguments: { path: join(root, 'readme.txt') } })));
console.log('write outside:', text(await client.callTool({ name: 'write_file', arguments: { path: join(root, 'evil.txt'), content: 'x' } })));
console.log('evil.txt exists:', existsSync(join(root, 'evil.txt')));
console.log('write inbox:', text(await client.callTool({ name: 'write_file', arguments: { path: join(root, 'inbox', 'ok.txt'), content: 'ok' } })));
await client.close();
await proxy.close();
