import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { annotationTags, connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ASK_DESTRUCTIVE, PermissionPolicy, ToolRegistry, ToolTag, type Decision } from '../../src/index.js';
import { tempDir } from '../harness.js';

const FS_SERVER = join(process.cwd(), 'node_modules/.bin/mcp-server-filesystem');
const open: McpConnection[] = [];
afterEach(async () => {
  while (open.length) await open.pop()!.close();
});

/** A real MCP SDK server, linked to the client by the SDK's in-memory transport. */
function catalogueServer() {
  const server = new McpServer({ name: 'catalogue', version: '1.0.0' });
  const calls: string[] = [];
  server.registerTool(
    'search',
    {
      description: 'Search the catalogue',
      inputSchema: { query: z.string() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ query }) => {
      calls.push(`search:${query}`);
      return { content: [{ type: 'text', text: `hits for ${query}` }] };
    },
  );
  server.registerTool(
    'drop',
    { description: 'Drop the catalogue', inputSchema: { really: z.boolean() }, annotations: { readOnlyHint: true } },
    async () => {
      calls.push('drop');
      return { content: [{ type: 'text', text: 'dropped' }] };
    },
  );
  server.registerTool('broken', { description: 'Always fails', inputSchema: {} }, async () => ({
    isError: true,
    content: [{ type: 'text', text: 'the index is offline' }],
  }));
  return { server, calls };
}

async function connectCatalogue(
  registry: ToolRegistry,
  options: { prefix?: string | null; trusted?: boolean; metadata?: Record<string, { tags?: ToolTag[] }> } = {},
) {
  const { server, calls } = catalogueServer();
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const connection = await connectMcpServer(registry, { transport: clientSide, ...options });
  open.push(connection);
  return { server, calls, connection };
}

describe('toolgate/mcp: tools from MCP servers', () => {
  it('registers tools under mcp:<tool> by default and under a per-server prefix, never colliding with native tools', async () => {
    const registry = new ToolRegistry();
    registry.register({ name: 'search', parameters: { type: 'object' }, execute: () => 'native' });
    const a = await connectCatalogue(registry);
    const b = await connectCatalogue(registry, { prefix: 'shop' });
    expect(a.connection.tools).toEqual(['mcp:search', 'mcp:drop', 'mcp:broken']);
    expect(b.connection.tools).toEqual(['shop:search', 'shop:drop', 'shop:broken']);
    expect(registry.get('mcp:search')!.namespace).toBe('mcp');
    // A grant of one name is not a grant of another.
    const only = {
      agent: { name: 'a', tools: ['search', 'mcp:search', 'shop:search'] },
      caller: { scopes: ['mcp:search'] },
    };
    expect((await registry.invoke('search', {}, only)).status).toBe('refused');
    expect((await registry.invoke('shop:search', { query: 'x' }, only)).status).toBe('refused');
    const ok = await registry.invoke('mcp:search', { query: 'lamp' }, only);
    expect(ok).toMatchObject({ status: 'ok', content: 'hits for lamp' });
    expect(a.calls).toEqual(['search:lamp']);
    expect(b.calls).toEqual([]);
  });

  it('validates arguments against the inputSchema with the core validator; an invalid call never reaches the server', async () => {
    const registry = new ToolRegistry();
    const { calls } = await connectCatalogue(registry);
    const result = await registry.invoke('mcp:search', { query: 42 }, {});
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ stage: 'validation' });
    expect(calls).toEqual([]);
  });

  it('believes annotations only from trusted servers; untrusted hints take the MCP defaults (destructive, network)', async () => {
    const untrusted = new ToolRegistry();
    await connectCatalogue(untrusted);
    expect([...untrusted.get('mcp:search')!.metadata.tags]).toEqual([ToolTag.DESTRUCTIVE, ToolTag.NETWORK]);
    const trusted = new ToolRegistry();
    await connectCatalogue(trusted, { trusted: true });
    expect([...trusted.get('mcp:search')!.metadata.tags]).toEqual([ToolTag.READ_ONLY]);
    expect([...trusted.get('mcp:broken')!.metadata.tags]).toEqual([ToolTag.DESTRUCTIVE, ToolTag.NETWORK]);
    expect(annotationTags({ destructiveHint: false, openWorldHint: false, idempotentHint: true }, true)).toEqual({
      tags: [],
      customTags: ['mcp', 'idempotent'],
    });
    expect(annotationTags({ readOnlyHint: true }, false).tags).toEqual([ToolTag.DESTRUCTIVE, ToolTag.NETWORK]);
  });

  it('lets local metadata override what annotations say, for trusted and untrusted servers', async () => {
    const registry = new ToolRegistry();
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [ASK_DESTRUCTIVE, { name: 'rest', match: () => true, result: 'allow', reason: 'ok' }],
      }),
    );
    // The server claims `drop` is read-only; locally it is known to be destructive.
    const { calls } = await connectCatalogue(registry, {
      trusted: true,
      metadata: { drop: { tags: [ToolTag.DESTRUCTIVE] } },
    });
    expect([...registry.get('mcp:drop')!.metadata.tags]).toEqual([ToolTag.DESTRUCTIVE]);
    const refused = await registry.invoke('mcp:drop', { really: true }, {});
    expect(refused.decision).toMatchObject({ effect: 'deny', by: 'no_handler', rule: 'ask_destructive' });
    expect(calls).toEqual([]);
  });

  it('maps an MCP isError result to an error result', async () => {
    const registry = new ToolRegistry();
    await connectCatalogue(registry);
    const result = await registry.invoke('mcp:broken', {}, {});
    expect(result).toMatchObject({ status: 'error', isError: true });
    expect(result.content).toMatch(/the index is offline/);
  });

  it('tracks tools/list_changed: added and removed tools appear in and leave the registry', async () => {
    const registry = new ToolRegistry();
    const { server, connection } = await connectCatalogue(registry);
    const changed = new Promise<readonly string[]>((resolve) => connection.onToolsChanged(resolve));
    const added = server.registerTool('count', { description: 'Count', inputSchema: {} }, async () => ({
      content: [{ type: 'text', text: '3' }],
    }));
    expect(await changed).toContain('mcp:count');
    expect(registry.has('mcp:count')).toBe(true);
    const removed = new Promise<readonly string[]>((resolve) => connection.onToolsChanged(resolve));
    added.remove();
    expect(await removed).not.toContain('mcp:count');
    expect(registry.has('mcp:count')).toBe(false);
  });

  it('connects over real stdio to the official filesystem server; its tools pass the gate', async () => {
    const root = tempDir('mcp');
    writeFileSync(join(root, 'note.txt'), 'hello from disk');
    const registry = new ToolRegistry();
    const decisions: Decision[] = [];
    registry.onChange((e) => e.type === 'tool_decided' && decisions.push(e.decision));
    const fs = await connectMcpServer(registry, {
      stdio: { command: FS_SERVER, args: [root], stderr: 'ignore' },
      prefix: 'fs',
    });
    open.push(fs);
    expect(fs.tools).toContain('fs:read_text_file');
    expect(fs.tools).toContain('fs:write_file');
    const context = { agent: { name: 'reader', tools: ['fs:read_text_file'] } };
    const read = await registry.invoke('fs:read_text_file', { path: join(root, 'note.txt') }, context);
    expect(read).toMatchObject({ status: 'ok', content: 'hello from disk' });
    const write = await registry.invoke(
      'fs:write_file',
      { path: join(root, 'note.txt'), content: 'overwritten' },
      context,
    );
    expect(write.decision).toMatchObject({ effect: 'deny', stage: 'allowlist', layer: 'not_declared' });
    expect(readFileSync(join(root, 'note.txt'), 'utf8')).toBe('hello from disk');
    expect(decisions.map((d) => d.effect)).toEqual(['allow', 'deny']);
  });

  it('validates its options', async () => {
    const registry = new ToolRegistry();
    await expect(connectMcpServer(registry, {})).rejects.toThrow(/exactly one of/);
    await expect(connectMcpServer(registry, { url: 'http://127.0.0.1:1/mcp', prefix: 'a:b' })).rejects.toThrow(
      /option "prefix"/,
    );
    await expect(connectMcpServer({} as ToolRegistry, { url: 'http://x' })).rejects.toThrow(TypeError);
  });
});
