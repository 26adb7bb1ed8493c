/**
 * toolgate/mcp: the official filesystem MCP server's tools, registered under the `fs:` namespace, passing
 * the same gate as native tools.  npx tsx examples/mcp-client.ts
 */
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectMcpServer } from '../src/adapters/mcp/index.js';
import { ASK_DESTRUCTIVE, PermissionPolicy, ToolRegistry } from '../src/index.js';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-example-')));
writeFileSync(join(root, 'notes.txt'), 'buy milk');

const registry = new ToolRegistry();
// The server is not trusted, so its read-only hints are not believed: every tool is tagged destructive +
// network (the MCP defaults) unless local metadata says otherwise. Here we vouch for read_text_file.
const fs = await connectMcpServer(registry, {
  stdio: {
    command: join(import.meta.dirname, '../node_modules/.bin/mcp-server-filesystem'),
    args: [root],
    stderr: 'ignore',
  },
  prefix: 'fs',
  metadata: { read_text_file: { tags: ['read_only', 'file_system'] } },
});
console.log('registered:', fs.tools.join(', '));

registry.setPermissionPolicy(
  new PermissionPolicy({
    rules: [{ name: 'reads', tags: ['read_only'], result: 'allow', reason: 'reading is fine' }, ASK_DESTRUCTIVE],
  }),
);
const context = { agent: { name: 'notes-bot', tools: ['fs:read_text_file', 'fs:write_file'] } };

const read = await registry.invoke('fs:read_text_file', { path: join(root, 'notes.txt') }, context);
console.log(`read → ${read.status}: ${read.content}`);
const write = await registry.invoke('fs:write_file', { path: join(root, 'notes.txt'), content: 'sell milk' }, context);
console.log(`write → ${write.status}: ${write.content}`);
const move = await registry.invoke(
  'fs:move_file',
  { source: join(root, 'notes.txt'), destination: join(root, 'x.txt') },
  context,
);
console.log(`move → ${move.status}: ${move.content}`);
await fs.close();
