/**
 * Attack (src/schema-regexp.ts, redos5): a `\p{…}` set is read code point by code point (~60 ms of CPU each, more
 * under load) and kept in one process-wide cache of at most 32 names; past 32 distinct names, no pattern with a new
 * one compiles. The cache is keyed by the name as written, so one property spelled 32 ways (`Script=Latin`,
 * `sc=Latn`, `scx=Latn`, `General_Category=Letter`, `gc=L`…) fills it: an MCP upstream's tools/list (or any tenant's
 * registered tool) spends seconds of the event loop once, and from then on every other tenant's, upstream's or the
 * operator's schema using a property not yet read (`^\p{Lu}\p{Ll}+$`, zod's `emoji()`) does not compile: its tool is
 * not registered, not served. Fail closed, but a denial of service across tenants that outlives the upstream.
 * This test fails on redos5. Mended (re2mem, src/schema-regexp-properties.ts): a set is read in a few ms (two V8
 * searches a range, per block of code points), kept by a canonical name (`gc=L` is `L`, `Script=` is `sc=`) in an
 * LRU of 1,024 names whose sets are shared by content; never refused.
 */
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { registryWith } from './fixtures/schema-tool.js';

/** 32 spellings of two properties (Latin script, letters): two sets, 32 names. */
const NAMES = [
  ...['Script=Latin', 'Script=Latn', 'sc=Latin', 'sc=Latn'],
  ...['Script_Extensions=Latin', 'Script_Extensions=Latn', 'scx=Latin', 'scx=Latn'],
  ...['L', 'Letter', 'gc=L', 'gc=Letter', 'General_Category=L', 'General_Category=Letter'],
  ...['Lu', 'Uppercase_Letter', 'gc=Lu', 'gc=Uppercase_Letter', 'General_Category=Lu'],
  ...['General_Category=Uppercase_Letter', 'Ll', 'Lowercase_Letter', 'gc=Ll', 'gc=Lowercase_Letter'],
  ...['General_Category=Ll', 'General_Category=Lowercase_Letter', 'Nd', 'Decimal_Number', 'gc=Nd'],
  ...['gc=Decimal_Number', 'General_Category=Nd', 'General_Category=Decimal_Number'],
];

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe("an upstream's tools/list spelling properties 32 ways", () => {
  it("a later tenant's schema with a property escape still registers", async () => {
    expect(new Set(NAMES).size).toBe(32);
    for (const name of NAMES) new RegExp(`\\p{${name}}`, 'u'); // every name is valid ECMAScript
    const server = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: NAMES.map((name, i) => ({
        name: `t${i}`,
        inputSchema: { type: 'object' as const, properties: { x: { type: 'string', pattern: `\\p{${name}}` } } },
      })),
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'ok' }] }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const upstream = new ToolRegistry();
    const start = process.cpuUsage();
    const connection = await connectMcpServer(upstream, { transport: clientSide, prefix: 'evil' });
    open.push(connection);
    // Compiled at connect or at first call: touch each tool once.
    for (const tool of connection.tools) await upstream.invoke(tool, { x: 'a' });
    const { user, system } = process.cpuUsage(start);
    const upstreamMs = (user + system) / 1000;

    // Another tenant, afterwards: an ordinary schema (a capitalised name), one property not read yet.
    let error: unknown;
    try {
      const { registry } = registryWith({
        type: 'object',
        properties: { name: { type: 'string', pattern: '^\\p{Lt}?\\p{Lo}*$' } },
      });
      expect((await registry.invoke('pay', { name: 'ǅ' })).status).toBe('ok');
    } catch (caught) {
      error = caught;
    }
    // redos5: "pattern … is not supported: a Unicode property escape past the first 32 distinct ones of the process".
    const seen = `the upstream's tools/list cost ${Math.round(upstreamMs)} ms of CPU`;
    expect(String(error ?? 'registered'), seen).toBe('registered');
    // redos5: ~2.5 s (32 sets read code point by code point); re2mem: 0.46–0.64 s at load 8 (the reads ~0.2 s).
    expect(upstreamMs, seen).toBeLessThan(1_500);
  }, 120_000);
});
