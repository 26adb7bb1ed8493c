/**
 * Attack (legitimate schemas refused, branch `schemacalls`, src/schema-bounds.ts `boundErrors`): a schema that
 * constrains nothing — `{}`, or only annotations (`{"description": "any JSON value"}`) — compiles in Ajv to a function
 * without an error count (`validate10.errors = null; return true;`): no `let errors = 0;` for the new bound of calls to
 * count, so `boundErrors` throws ("a compiled check whose start it cannot count") and the schema does not compile.
 * With `inlineRefs: false` every `$ref` target is such a function of its own, so besides a tool whose parameters are
 * `{}` (the tool cannot be registered at all), every schema with a `$ref` to an "any value" definition — OpenAPI's
 * `AnyValue: {description: …}`, zod's `z.unknown()` / `z.any()` reused as a `$defs` entry — is refused, and an MCP
 * upstream's tool with such an input schema silently disappears from `tools/list`. All of these compile and run on
 * main (416b1c9). Fails on `schemacalls` (498b0ce).
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { runsWith } from './fixtures/schema-tool.js';

const ANY_VALUE = { description: 'Can be any JSON value' };

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe('a schema that allows anything, or a reference to one, compiles and lets its values through', () => {
  it('parameters {}: the tool registers and runs', async () => {
    expect(await runsWith({}, { a: 1 })).toBe(true);
  });

  it('parameters of annotations only: the tool registers and runs', async () => {
    expect(await runsWith({ description: 'free-form options' }, { a: 1 })).toBe(true);
  });

  it("OpenAPI's AnyValue ($ref to a description-only definition, draft-07 definitions)", async () => {
    const schema = {
      type: 'object',
      properties: { key: { type: 'string' }, value: { $ref: '#/definitions/AnyValue' } },
      required: ['key'],
      definitions: { AnyValue: ANY_VALUE },
    };
    expect(await runsWith(schema, { key: 'k', value: [1, { a: null }] })).toBe(true);
    expect(await runsWith(schema, { key: 1, value: 2 })).toBe(false);
  });

  it('a 2020-12 schema with a $defs entry {} (z.unknown() reused)', async () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { before: { $ref: '#/$defs/Payload' }, after: { $ref: '#/$defs/Payload' } },
      $defs: { Payload: {} },
    };
    expect(await runsWith(schema, { before: 1, after: 'x' })).toBe(true);
  });

  it("an MCP upstream's tool whose input schema refers to AnyValue is listed and callable", async () => {
    const server = new Server({ name: 'kv', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        {
          name: 'put',
          description: 'Put a value',
          inputSchema: {
            type: 'object',
            properties: { key: { type: 'string' }, value: { $ref: '#/$defs/AnyValue' } },
            required: ['key'],
            $defs: { AnyValue: ANY_VALUE },
          } as never,
        },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'stored' }] }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    open.push(await connectMcpServer(registry, { transport: clientSide, prefix: 'kv' }));
    const result = await registry.invoke('kv:put', { key: 'a', value: { n: 1 } });
    expect(result.status).toBe('ok');
  });
});
