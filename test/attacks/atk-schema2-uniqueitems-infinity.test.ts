/**
 * Attack (fail open, src/schema-bounds.ts `uniqueItems`, an upstream's output schema): the keyword's scalar case
 * (`items` of scalar types) compares only the items it takes to be of those types, by `ofType`, which holds a number
 * finite ("Ajv's strictNumbers"). But every Ajv of the gate has `strict: false`, which turns `strictNumbers` off: Ajv's
 * `type: "number"` / `"integer"` accepts Infinity. A JSON number past a double (`1e400`, `1e999`: JSON.parse's
 * Infinity) passes `items` and is skipped by `uniqueItems`: `[1e400, 1e400]` — two identical JSON texts — passes
 * `{items: {type: number}, uniqueItems: true}`. A correct JSON Schema check refuses it (equal numbers), and so does
 * Ajv alone with the gate's options (its own keyword, same `strict: false`). The gate's arguments are read as JSON
 * first (Infinity becomes null: refused by `type`), but an upstream's `structuredContent` is checked as parsed: its
 * answer passes its own output schema with duplicate items.
 * Fails on main (eb19b7d).
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { Ajv } from 'ajv';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { ALL_ERRORS_OPTIONS } from './fixtures/allerrors-reference.js';

const listOf = (items: JsonSchema): JsonSchema => ({
  type: 'object',
  required: ['ids'],
  properties: { ids: { type: 'array', items, uniqueItems: true } },
});
const CASES: [string, JsonSchema, string][] = [
  ['number', listOf({ type: 'number' }), '{"ids":[1e400,1e400]}'],
  ['integer', listOf({ type: 'integer' }), '{"ids":[-1e999,-1e999]}'],
  ['number or null', listOf({ type: ['number', 'null'] }), '{"ids":[7,1e400,1e400]}'],
];

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe('uniqueItems of numbers past a double', () => {
  it.each(CASES)('%s items: duplicates are refused, as Ajv alone refuses them', (_label, schema, text) => {
    const value = JSON.parse(text) as Record<string, unknown>;
    expect(new Ajv(ALL_ERRORS_OPTIONS).compile(schema)(value)).toBe(false);
    expect(compileValidator(schema)(value)).toMatchObject({ ok: false });
    expect(outputSchemaValidator.getValidator(schema as never)(value).valid).toBe(false);
  });

  it("an MCP upstream's answer with duplicate items does not pass its output schema", async () => {
    const schema = listOf({ type: 'number' });
    const server = new Server({ name: 'bank', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'ids', description: 'Ids', inputSchema: { type: 'object' }, outputSchema: schema as never }],
    }));
    // what JSON.parse makes of `{"ids":[1e400,1e400]}` on the wire
    server.setRequestHandler(CallToolRequestSchema, () => ({
      content: [{ type: 'text', text: 'ids' }],
      structuredContent: JSON.parse('{"ids":[1e400,1e400]}') as Record<string, unknown>,
    }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    open.push(await connectMcpServer(registry, { transport: clientSide, prefix: 'bank' }));
    const result = await registry.invoke('bank:ids', {});
    expect(result.status === 'ok' && !result.isError).toBe(false);
  });
});
