/**
 * Attack (src/schema-regexp.ts, redos5), what held: a pattern the translator refuses never lets the tool run. An MCP
 * upstream's tool whose pattern is refused is not served (calls to it are refused, the upstream never called); one
 * that was served and then changes (notifications/tools/list_changed) to a refused pattern is withdrawn, not kept
 * under its old schema; refused patterns in `patternProperties` and `propertyNames` are refused alike; a pattern
 * nested 100,000 groups deep (the translator's recursion overflows) is refused by name, not a crash.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { neverRuns } from './fixtures/schema-tool.js';

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe("an upstream's refused pattern", () => {
  it('is not served, and a served tool changed to one is withdrawn', async () => {
    let pattern = '^[a-z]+$';
    const calls: unknown[] = [];
    const server = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: { listChanged: true } } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'pay', inputSchema: { type: 'object' as const, properties: { to: { type: 'string', pattern } } } },
        {
          name: 'keys',
          inputSchema: {
            type: 'object' as const,
            patternProperties: { [pattern === '^[a-z]+$' ? '^x' : '(?<=a)b']: { type: 'number' } },
            additionalProperties: false,
          },
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, (request) => {
      calls.push(request.params.arguments);
      return { content: [{ type: 'text', text: 'paid' }] };
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'evil' });
    open.push(connection);
    expect((await registry.invoke('evil:pay', { to: 'abc' })).status).toBe('ok');
    expect(calls).toEqual([{ to: 'abc' }]);

    // The upstream changes the schema to a lookbehind (what RE2 cannot match alike): a new tools/list.
    pattern = '^(?<=x)[a-z]+$';
    const changed = new Promise<void>((resolve) => connection.onToolsChanged(() => resolve()));
    await server.sendToolListChanged();
    await Promise.race([changed, new Promise((resolve) => setTimeout(resolve, 2000))]);
    expect(connection.tools).not.toContain('evil:pay');
    expect(connection.tools).not.toContain('evil:keys');
    for (const args of [{ to: 'abc' }, { to: 'ABC' }, { x: 1 }, { b: 1 }]) {
      expect((await registry.invoke('evil:pay', args)).status).not.toBe('ok');
      expect((await registry.invoke('evil:keys', args)).status).not.toBe('ok');
    }
    expect(calls).toEqual([{ to: 'abc' }]);
    expect(connection.skipped.map((s) => s.tool).sort()).toEqual(['keys', 'pay']);
  });
});

describe('a registered tool', () => {
  it.each([
    ['patternProperties', { type: 'object', patternProperties: { '(a)\\1': { type: 'number' } } }, { aa: 'x' }],
    ['propertyNames', { type: 'object', propertyNames: { pattern: '^(?!a)(?<=b)' } }, { a: 1 }],
    ['nested 100,000 deep', { type: 'object', properties: { x: { type: 'string', pattern: deep(100_000) } } }, {}],
  ])('%s: a refused pattern never runs the tool', async (_label, schema, args) => {
    await neverRuns(schema, args, /not supported/);
  });
});

function deep(depth: number): string {
  return `${'(?:'.repeat(depth)}a${')'.repeat(depth)}`;
}
