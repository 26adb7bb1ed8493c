/**
 * Attack (src/schema-regexp.ts, redos5): RE2 is linear in the text, but its time is O(text × program), and the
 * program is as large as the pattern makes it. A repeat of a group (`(?:[ab]?…){1000}`, 3 KB of pattern text) is
 * RE2's own limit (~1.2 million instructions after expansion, under re2js' MAX_SIZE of 1,398,101), accepted as
 * "linear". Each leading lookahead of `^(?=A)(?=B)…R` is a separate RE2 program with its own limit: one pattern's
 * programs are unbounded in number.
 *
 * Measured on redos5 (load 4–7, 2 cores; node --expose-gc --import tsx, scratch scripts):
 *   - compiling `(?:[ab]?×600){1000}c` (3,011 characters): ~1.0 s CPU, ~200 MB of heap kept for the process
 *     (Ajv's scope and the schema cache keep every pattern compiled);
 *   - its `test` on "" 0.9 s, on 10 characters 1.5 s, 100: 4.9 s, 400: 15 s (CPU);
 *   - `^(?=…)(?=…)(?=…)` with that body thrice (9 KB): 4.1 s to compile, 594 MB kept, test("ab") 3.9 s;
 *     eight of them (24 KB) ran out of a 1 GB heap (node aborts: the whole gateway, every tenant). With the default
 *     heap (4.3 GB here) ~22 lookaheads (66 KB of one tools/list) crash it.
 *   - `[ab]{999}a[ab]{999}` (19 characters) on 100,000 random a/b: 3.8 s (main's V8: 0.17 ms, it stops at the
 *     first match; RE2's testExact reads all of `.*(?:P).*`, its DFA over budget, the NFA ~2,000 threads a character).
 *   - RE2's lazily built DFA (8 MB budget a pattern) is kept with the pattern: 50 patterns `a[ab]{17}<i>` and one
 *     call with 50 random strings of 20,000 characters keep ~195 MB (~4 MB a pattern) for the process, 1.7 s.
 * The MCP upstream writes the pattern (its tools/list); the model writes the argument.
 * These tests fail on redos5: a pattern must compile, and be matched, in bounded time and memory, or be refused.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { afterEach, describe, expect, it } from 'vitest';
import { connectMcpServer, type McpConnection } from '../../src/adapters/mcp/index.js';
import { ToolRegistry } from '../../src/index.js';
import { registryWith } from './fixtures/schema-tool.js';
import { asyncCpuMs, cpuMs } from '../cpu.js';

/** 3,011 characters: 600 optional classes, the group repeated 1,000 times (RE2's largest repeat count). */
const BODY = `(?:${'[ab]?'.repeat(600)}){1000}`;
const WIDE = `${BODY}c`;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

function heapMb(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed / 1e6;
}

const open: McpConnection[] = [];
afterEach(async () => {
  for (const connection of open.splice(0)) await connection.close();
});

describe('a pattern RE2 compiles to a million instructions', () => {
  it('a 100-character argument holds the event loop for seconds (bounded, or the pattern refused)', async () => {
    let registered: ReturnType<typeof registryWith> | undefined;
    const [, compileMs] = cpuMs(() => {
      try {
        registered = registryWith({ type: 'object', properties: { to: { type: 'string', pattern: WIDE } } });
      } catch (error) {
        expect(String(error)).toMatch(/not supported|too large/); // refused: fail closed, fine
      }
    });
    if (registered === undefined) return;
    const { registry, ran } = registered;
    // Run once to compile lazily if the registry does, then the measured call.
    await registry.invoke('pay', { to: 'ab' });
    const ms = await asyncCpuMs(async () => {
      expect((await registry.invoke('pay', { to: 'a'.repeat(100) })).status).toBe('refused');
    });
    expect(ran).toEqual([]);
    // redos5: compile ~1,000 ms, the call ~4,900 ms of CPU (main's backtracking on ^(a+)+$ and 28 characters: 1.7 s).
    const seen = `compile ${Math.round(compileMs)} ms, the call ${Math.round(ms)} ms of CPU`;
    expect(compileMs, seen).toBeLessThan(500);
    expect(ms, seen).toBeLessThan(500);
  }, 300_000);

  it('a 19-character pattern: a 100,000-character argument costs seconds (main: under a millisecond)', async () => {
    // Counting ambiguity: RE2's DFA meets a new state at every character, gives up (its 8 MB budget), and the NFA
    // steps ~2,000 threads a character; testExact reads the whole text (`.*(?:P).*`), where a backtracking search
    // stops at the first match. redos5: ~3.8 s of CPU; main (V8): 0.17 ms. The MCP gateway takes 4 MB bodies (~150 s).
    // Now: that pattern's program is past MAX_PROGRAM (refused by name); one ten times smaller compiles, and a text
    // longer than MAX_WORK / its program fails it at once (refused), a shorter one is tested.
    expect(() =>
      registryWith({ type: 'object', properties: { to: { type: 'string', pattern: '[ab]{999}a[ab]{999}' } } }),
    ).toThrow(/pattern "\[ab\]\{999\}a\[ab\]\{999\}" is not supported: too large: up to \d+ RE2 instructions/);
    const pattern = '[ab]{99}a[ab]{99}';
    const { registry, ran } = registryWith({ type: 'object', properties: { to: { type: 'string', pattern } } });
    let seed = 1;
    const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const text = Array.from({ length: 100_000 }, () => (random() < 0.5 ? 'a' : 'b')).join('');
    expect(new RegExp(pattern, 'u').test(text)).toBe(true);
    await registry.invoke('pay', { to: 'ab' });
    const ms = await asyncCpuMs(async () => {
      expect((await registry.invoke('pay', { to: text })).status).toBe('refused');
    });
    expect(ms, `the call: ${Math.round(ms)} ms of CPU`).toBeLessThan(500);
    expect((await registry.invoke('pay', { to: text.slice(0, 1_000) })).status).toBe('ok');
    expect(ran).toHaveLength(1);
  }, 300_000);

  // Mended (re2mem, src/schema-regexp-dfa.ts): each test charges its DFA's growth to one ledger for the process;
  // past 32 MB the DFAs grown least recently are emptied.
  it("RE2's DFA caches (8 MB each) are kept for the process: one call's arguments pin hundreds of MB", async () => {
    // 50 small patterns (`a[ab]{17}0` …), one call with 50 random a/b strings of 20,000 characters (1 MB; the MCP
    // gateway takes 4 MB): each pattern's lazily built DFA grows to its budget and stays (Ajv's scope and the schema
    // cache keep every compiled pattern). redos5: ~4 MB a pattern, ~195 MB for this call; ~1,100 patterns hit once
    // each exhaust a 4.3 GB heap (the process aborts).
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 50; i++) properties[`p${i}`] = { type: 'string', pattern: `a[ab]{17}${i}` };
    const { registry } = registryWith({ type: 'object', properties });
    let seed = 7;
    const random = (): number => (seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
    const args: Record<string, string> = {};
    for (let i = 0; i < 50; i++)
      args[`p${i}`] = Array.from({ length: 20_000 }, () => (random() < 0.5 ? 'a' : 'b')).join('');
    await registry.invoke('pay', { p0: 'x' });
    const before = heapMb();
    const ms = await asyncCpuMs(async () => {
      expect((await registry.invoke('pay', args)).status).toBe('refused'); // no pattern's digit: refused, as on main
    });
    const keptMb = heapMb() - before;
    const seen = `the call ${Math.round(ms)} ms of CPU, ${Math.round(keptMb)} MB kept after it`;
    expect(keptMb, seen).toBeLessThan(64);
  }, 300_000);

  it("an upstream's tools/list: one 9 KB pattern keeps hundreds of MB for the process (a few crash it)", async () => {
    // Three leading lookaheads: three programs of RE2's largest size, one pattern.
    const pattern = `^(?=${BODY})(?=${BODY}a)(?=${BODY}b)`;
    const server = new Server({ name: 'evil', version: '1.0.0' }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({
      tools: [
        { name: 'pay', inputSchema: { type: 'object' as const, properties: { to: { type: 'string', pattern } } } },
      ],
    }));
    server.setRequestHandler(CallToolRequestSchema, () => ({ content: [{ type: 'text', text: 'paid' }] }));
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const registry = new ToolRegistry();
    const before = heapMb();
    const connectMs = await asyncCpuMs(async () => {
      open.push(await connectMcpServer(registry, { transport: clientSide, prefix: 'evil' }));
    });
    // Compiled at connect or at the first call: either way, what one call of the upstream's tool costs the process.
    const callMs = await asyncCpuMs(async () => {
      await registry.invoke('evil:pay', { to: 'ab' });
    });
    const keptMb = heapMb() - before;
    // redos5: ~4 s of CPU and ~600 MB kept (8 such lookaheads: out of a 1 GB heap, the process aborts).
    const seen = `connect ${Math.round(connectMs)} ms + first call ${Math.round(callMs)} ms of CPU, ${Math.round(keptMb)} MB kept`;
    expect(keptMb, seen).toBeLessThan(64);
    expect(connectMs + callMs, seen).toBeLessThan(1000);
  }, 300_000);
});
