/**
 * Attack (availability, branch `schemacalls`'s `inlineRefs: false`, src/schema-dialects.ts): Ajv no longer inlines a
 * `$ref` target at each reference, but it still compiles one function per reference *URI*, and each function holds its
 * target's whole subtree inline. Two schemas of the size the fix was measured on compile to as much code as before:
 *
 * - the same 200-property leaf referred to 200 times (the earlier attacker's 11 KB shape), each reference spelled
 *   differently: `$` is a URI sub-delimiter, so `%24` is not normalised to it, and `#/$defs/$$$$$$$$`,
 *   `#/%24defs/$$$$$$$$`, `#/$defs/%24$$$$$$$`… (2^9 spellings, each a distinct key of `root.refs`) name one schema:
 *   13 KB of schema, 200 compiled copies of the leaf, ~2.4 s (`npx tsx tmp/spell3.mts 200 200`, scratch);
 * - no trick at all: a chain of 62 nested `properties` whose bottom holds 600 properties, with a reference (a JSON
 *   pointer or an `$anchor`) to each level: each level's function holds every level below it, 28 KB of schema,
 *   60 MB of code, ~7 s (`npx tsx tmp/nest.mts 62 600 anchor`): the code is depth × schema, up to 64 ×.
 *
 * Either is a tool's input schema or an upstream's `tools/list` (input or output schema): the gateway's event loop is
 * held while it compiles. Fails on `schemacalls` (498b0ce): the spelled 200 × 200 compiles in ~2–3 s of CPU, the nested
 * one ~3 s at 62 × 300. A bound of the code one compilation may write (its `code.process`), or compiling one function
 * per target schema object, would pass it.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';

const NAME = '$$$$$$$$';

/** `refs` properties, each a reference to one leaf of `width` string properties, each reference spelled its own way. */
function spelled(width: number, refs: number): JsonSchema {
  const leaf: Record<string, unknown> = {};
  for (let i = 0; i < width; i++) leaf[`p${i}`] = { type: 'string' };
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < refs; i++) {
    let ref = i & 1 ? '#/%24defs/' : '#/$defs/';
    for (let b = 0; b < NAME.length; b++) ref += (i >> (b + 1)) & 1 ? '%24' : '$';
    properties[`r${i}`] = { $ref: ref };
  }
  return { type: 'object', $defs: { [NAME]: { type: 'object', properties: leaf } }, properties };
}

/** `depth` nested levels (`properties.x`), the last of `width` properties, and a reference to each level. */
function nested(depth: number, width: number): JsonSchema {
  const leaf: Record<string, unknown> = {};
  for (let i = 0; i < width; i++) leaf[`p${i}`] = { type: 'string', minLength: 1 };
  let node: Record<string, unknown> = { type: 'object', properties: leaf };
  for (let k = depth; k >= 1; k--) node = { $anchor: `a${k}`, type: 'object', properties: { x: node } };
  const refs: Record<string, unknown> = {};
  for (let k = 1; k <= depth; k++) refs[`r${k}`] = { $ref: `#a${k}` };
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    properties: { n: node, ...refs },
  };
}

/**
 * The characters of code Ajv wrote compiling `schema` through the gate (counted by `code.process`), and whether it
 * compiled: the cost of a compilation is the code it writes, counted without a clock.
 */
function written(schema: JsonSchema): { compiled: boolean; code: number } {
  try {
    compileValidator(schema);
    return { compiled: true, code: codeWritten() };
  } catch (error) {
    expect(String(error)).toMatch(/characters of code/);
    return { compiled: false, code: codeWritten() };
  }
}

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe("a schema's compiled code is bounded, however its references are spelled or nested", () => {
  it('a 13 KB schema of 200 differently spelled references to one 200-property leaf: refused once its code passes the bound', () => {
    const schema = spelled(200, 200);
    expect(JSON.stringify(schema).length).toBeLessThan(14_000);
    const printed: unknown[][] = [];
    const spy = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => void printed.push(args));
    let result: { compiled: boolean; code: number };
    try {
      result = written(schema);
    } finally {
      spy.mockRestore();
    }
    const { compiled, code } = result;
    expect(compiled).toBe(false);
    // Ajv printed the whole function it had written (megabytes) for each refused schema; a line now.
    expect(JSON.stringify(printed).length).toBeLessThan(1_000);
    expect(code).toBeLessThan(SCHEMA_CODE_MAX + 200_000); // the bound and the one function that passed it
    // Fewer references compile, and check as written.
    const check = compileValidator(spelled(200, 20));
    expect(check({ r7: { p3: 1 } })).toMatchObject({ ok: false });
    expect(check({ r7: { p3: 'x' } })).toMatchObject({ ok: true });
  });

  it('a 17 KB schema of 62 nested levels (300 properties at the bottom), each level referred to: its code bounded', () => {
    const schema = nested(62, 300);
    expect(JSON.stringify(schema).length).toBeLessThan(18_000);
    expect(written(schema).code).toBeLessThan(SCHEMA_CODE_MAX + 2_000_000);
  });

  it("an MCP upstream's tools/list with the spelled input schema: the tool is not offered, the others are", async () => {
    const server = new Server({ name: 'forms', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'fill', description: 'Fill', inputSchema: spelled(200, 199) as never },
        { name: 'ping', description: 'Ping', inputSchema: { type: 'object' } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'forms' });
    open.push(connection);
    expect(connection.tools).toEqual(['forms:ping']);
  });
});
