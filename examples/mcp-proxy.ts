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
import { createMcpProxy } from '../src/adapters/mcp/index.js';
import { parsePolicy } from '../src/policy-file/index.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-proxy-example-')));
mkdirSync(join(root, 'inbox'));
writeFileSync(join(root, 'readme.txt'), 'welcome');

// A toolgate policy file, as `toolgate-mcp-proxy --policy` reads it (YAML or JSON).
const parsed = parsePolicy(`
version: 1
agents:
  writer: { tools: [read_text_file, write_file] }
rules:
  - { name: reads, tools: read_text_file, result: allow, reason: reading is fine }
  - { name: inbox, tools: write_file, when: { path: { path: "${root}/inbox/**" } }, result: allow, reason: the inbox is writable }
  - { name: elsewhere, tools: write_file, result: deny, reason: writes go to the inbox only }
`);
if (!parsed.ok) throw new Error(parsed.issues.map((i) => i.message).join('; '));
const set = parsed.policy;
const proxy = await createMcpProxy({
  upstream: {
    stdio: {
      command: join(import.meta.dirname, '../node_modules/.bin/mcp-server-filesystem'),
      args: [root],
      stderr: 'ignore',
    },
  },
  policy: set.policy,
  context: set.context({ agent: 'writer' }),
  audit: (record) =>
    console.log(
      `  audit: ${record.decision.tool} → ${record.decision.effect} (${record.decision.rule ?? record.decision.layer})`,
    ),
});

const client = new Client({ name: 'example', version: '1.0.0' });
const [clientSide, proxySide] = InMemoryTransport.createLinkedPair();
await proxy.createServer().connect(proxySide);
await client.connect(clientSide);

console.log('tools/list:', (await client.listTools()).tools.map((t) => t.name).join(', '));
const text = (r: Awaited<ReturnType<Client['callTool']>>) => (r.content as { text: string }[])[0]?.text;
console.log(
  'read:',
  text(await client.callTool({ name: 'read_text_file', arguments: { path: join(root, 'readme.txt') } })),
);
console.log(
  'write outside:',
  text(await client.callTool({ name: 'write_file', arguments: { path: join(root, 'evil.txt'), content: 'x' } })),
);
console.log('evil.txt exists:', existsSync(join(root, 'evil.txt')));
console.log(
  'write inbox:',
  text(
    await client.callTool({ name: 'write_file', arguments: { path: join(root, 'inbox', 'ok.txt'), content: 'ok' } }),
  ),
);
await client.close();
await proxy.close();
