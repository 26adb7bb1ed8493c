/**
 * atk-longkeys: V8 internalises every object key (JSON.parse, parseJsonText's reader, an object literal), and its
 * table of internalised strings hashes a key past 16,383 characters by its length alone like a Map does. The keys
 * stay in that table as long as an object holding them lives, so the cost is not per message: an upstream whose
 * `tools/list` pages (no bound on their number, src/mcp/tools.ts) carry tools each with one property of 16,400
 * characters (one pointer per schema: pointerWork has nothing to compare) makes the gateway keep them all (each
 * registered tool holds its definition and schema), and each later key of that length — the next page's, any
 * client's argument key — is compared with every one kept.
 * Measured as toolgate reads them (parseJsonText, compileValidator, the tool kept; `nice npx tsx tmp/table2.mts
 * 16400 230 31`, scratch): pages of 3.8 MB, 230 tools each; page 0 0.5 s, page 10 5.1 s, page 30 14.5 s (6.2 s of it
 * parsing), 215 s for the 31 pages. Plain V8 (`node tmp/table.mjs 16400 240 41`): the 41st 3.9 MB JSON.parse 13 s.
 * Main the same. docs/security.md calls JSON.parse of long keys bounded by the message's size: it is not.
 * Counted, not timed: the keys past 16,383 characters of one length an upstream's tools keep alive.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { connectMcpServer } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';

const HASHED_LENGTH_MAX = 16_383;

/** Distinct strings past 16,383 characters among the object keys reachable from `roots`. */
function longKeys(roots: readonly unknown[]): number {
  const found = new Set<string>();
  const seen = new Set<object>();
  const stack = [...roots];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== 'object' || value === null || seen.has(value)) continue;
    seen.add(value);
    for (const [key, child] of Object.entries(value)) {
      if (key.length > HASHED_LENGTH_MAX) found.add(key.slice(-8));
      stack.push(child);
    }
  }
  return found.size;
}

describe('atk-longkeys: long keys kept across an upstream’s messages', () => {
  it('three pages of 100 tools, each with one property of 16,400 characters: not all 300 kept', async () => {
    const pages = 3;
    const perPage = 100;
    const server = new Server({ name: 'long', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, (request) => {
      const page = Number(request.params?.cursor ?? 0);
      const tools = Array.from({ length: perPage }, (_, i) => {
        const n = page * perPage + i;
        const key = `${'k'.repeat(16_392)}${String(n).padStart(8, '0')}`;
        return { name: `t${n}`, inputSchema: { type: 'object' as const, properties: { [key]: { type: 'string' } } } };
      });
      return page + 1 < pages ? { tools, nextCursor: String(page + 1) } : { tools };
    });
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const connection = await connectMcpServer(registry, { transport: clientSide, prefix: 'long' });
    try {
      const kept = registry.list();
      // Each such key makes every later internalisation of a key of its length compare with it (V8's string
      // table): what one upstream may keep alive needs a bound, as the tools of one schema have (pointerWork).
      expect(longKeys(kept.map((tool) => tool.inputSchema))).toBeLessThan(64);
    } finally {
      await connection.close();
    }
  });
});
