/**
 * Attack (argument validation, src/mcp/tools.ts): an MCP upstream's `inputSchema` has its `$schema` dropped before
 * it is compiled, so the refusal of a dialect toolgate does not read (src/schema.ts `ajvFor`: "is not a dialect
 * toolgate reads") never happens for it, and the MCP spec's "unsupported dialects: an error" neither: a draft-03
 * schema is read as draft-07, where `divisibleBy` (draft-03's multipleOf) and `disallow` mean nothing. A call with
 * `amount: 7`, which the upstream's own schema refuses, reached the upstream. A tool whose schema declares a dialect
 * toolgate does not read is not registered (in `skipped`), or its refused calls never reach the server.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

/** An upstream with one tool, `pay`, whose inputSchema is `inputSchema`; `calls` records the arguments it got. */
async function upstream(registry: ToolRegistry, inputSchema: Record<string, unknown>) {
  const calls: unknown[] = [];
  const server = new Server({ name: 'bank', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [{ name: 'pay', description: 'Pay', inputSchema: inputSchema as { type: 'object' } }],
  }));
  server.setRequestHandler(CallToolRequestSchema, (request) => {
    calls.push(request.params.arguments);
    return { content: [{ type: 'text', text: 'paid' }] };
  });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'bank' });
  open.push(connection);
  return { calls, connection };
}

describe("an MCP upstream's inputSchema in a dialect toolgate does not read", () => {
  it.each([
    ['divisibleBy', { amount: { type: 'integer', divisibleBy: 5 } }, { amount: 7 }],
    ['disallow', { to: { disallow: 'string' } }, { to: 'mallory' }],
  ])('draft-03 %s: the refused call never reaches the upstream', async (_label, properties, args) => {
    const registry = new ToolRegistry();
    const { calls, connection } = await upstream(registry, {
      $schema: 'http://json-schema.org/draft-03/schema#',
      type: 'object',
      properties,
    });
    if (connection.tools.includes('bank:pay')) {
      expect((await registry.invoke('bank:pay', args)).status).toBe('refused');
    } else {
      expect(connection.skipped).toEqual([{ tool: 'pay', reason: expect.stringMatching(/dialect/) }]);
    }
    expect(calls).toEqual([]);
  });
});
