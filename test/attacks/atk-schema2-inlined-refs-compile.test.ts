/**
 * Attack (availability, src/schema-dialects.ts's Ajv options): Ajv inlines a referenced schema that has no `$ref` of
 * its own (`inlineRefs`, on by default) at every reference, so a schema's code is references × the referenced
 * schema: 200 properties `{"$ref": "#/$defs/leaf"}` to a leaf of 200 properties (11 KB of schema) compile to 12.9 MB
 * of code, 40,000 property checks — 5.7 s of CPU (10.5 s wall, load ~6) and ~0.5 GB while the gate registers the
 * tool or the gateway reads an upstream's `tools/list` (an input schema) or first checks an answer (an output
 * schema), every tenant waiting; 1,000 × 100 (28 KB) 16 s (`npx tsx tmp/inline.mts 200 200`, `tmp/inline2.mts`,
 * scratch; Ajv alone as slow: its own behaviour, exposed to schemas from outside). Quadratic in the schema's size:
 * a 1 MB schema makes more code than a string can hold.
 * Fails on main (eb19b7d): the 11 KB schema compiles in ~5 s of CPU.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { asyncCpuMs } from '../cpu.js';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';

/** `refs` properties, each a reference to one leaf of `width` string properties. */
function blowup(width: number, refs: number): JsonSchema {
  const leaf: Record<string, unknown> = {};
  for (let i = 0; i < width; i++) leaf[`p${i}`] = { type: 'string' };
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < refs; i++) properties[`r${i}`] = { $ref: '#/$defs/leaf' };
  return { type: 'object', $defs: { leaf: { type: 'object', properties: leaf } }, properties };
}

const SCHEMA = blowup(200, 200);

/** The CPU milliseconds of `run`; a schema it finds too costly to compile may throw (refused: only the cost is asked). */
function cpuMs(run: () => unknown): Promise<number> {
  return asyncCpuMs(async () => {
    try {
      await run();
    } catch {
      // not compiled: refused
    }
  });
}

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe("a schema's compiled code grows with the schema, not with its references × their targets", () => {
  it('an 11 KB schema of 200 references to a 200-property leaf compiles (or is refused) in well under a second', async () => {
    expect(JSON.stringify(SCHEMA).length).toBeLessThan(12_000);
    const ms = await cpuMs(() => {
      const check = compileValidator(SCHEMA);
      // still checked as written: a leaf's property of the wrong type is refused
      expect(check({ r7: { p3: 1 } })).toMatchObject({ ok: false });
      expect(check({ r7: { p3: 'x' } })).toMatchObject({ ok: true });
    });
    expect(ms).toBeLessThan(1_000);
  });

  it("an MCP upstream's tools/list with that input schema: connecting costs well under a second", async () => {
    const server = new Server({ name: 'forms', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [{ name: 'fill', description: 'Fill', inputSchema: blowup(200, 199) as never }],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const ms = await cpuMs(async () => {
      open.push(await connectMcpServer(registry, { transport: clientSide, prefix: 'forms' }));
    });
    expect(ms).toBeLessThan(1_000);
  });
});
