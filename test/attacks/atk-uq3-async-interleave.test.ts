/**
 * Attack (availability, src/schema-bounds.ts `uniqueItems`'s memo, 416b1c9): the memo that makes a recursive schema
 * linear (each array's and object's structural id kept for the whole check) is one per process, dropped whenever any
 * check starts (`newCheck()`). An `$async` check awaits at each `$ref` to an `$async` schema, and every check that
 * starts meanwhile drops the memo under it: each level of the tree walks its whole subtree again, depth × payload, as
 * before 416b1c9. A batch of calls to a tool with an `$async` schema starts one check every few microtasks (each call
 * is decided after the one before it has settled), so one client sending the big call and a batch of small ones
 * together gets the interleaving for nothing. The tree `{$async, uniqueItems, items: {$ref: tree}}` 200 levels over
 * one object of 50,000 keys (490 KB of arguments): 56 ms of CPU alone, 2.9 s beside a batch of 400 `{"t":[]}` calls
 * to the same tool — all of it microtasks, the event loop held throughout (`npx tsx tmp/interleave3.mts 200 50000
 * 400`, scratch). Fails on main (416b1c9).
 */
import { describe, expect, it } from 'vitest';
import { asyncCpuMs } from '../cpu.js';
import { registryWith } from './fixtures/schema-tool.js';

const TREE = { $async: true, uniqueItems: true, items: { $ref: '#/$defs/tree' } };
const SCHEMA = { $async: true, type: 'object', $defs: { tree: TREE }, properties: { t: TREE } };

/** `{"t":[[…[{"0":0,…,"49999":0},1]…,0],0]}`: 200 levels over one object of 50,000 keys (490 KB). */
function bigArguments(): string {
  let json = `[{${Array.from({ length: 50_000 }, (_, i) => `"${i}":0`).join(',')}},1]`;
  for (let i = 0; i < 200; i++) json = `[${json},0]`;
  return `{"t":${json}}`;
}

describe('an $async check keeps its structural ids while other checks start', () => {
  it('490 KB of arguments beside a batch of 400 small calls: well under a second of CPU (main: ~2.9 s)', async () => {
    const { registry, ran } = registryWith(SCHEMA);
    const args = bigArguments();
    expect(args.length).toBeLessThan(500_000);
    const small = Array.from({ length: 400 }, (_, i) => ({ id: `s${i}`, name: 'pay', arguments: '{"t":[]}' }));
    const alone = await asyncCpuMs(() => registry.executeToolCalls([{ id: 'a', name: 'pay', arguments: args }]));
    let big: unknown;
    // CPU, not the wall clock (a loaded machine stretches the latter): main ~2.9 s, a memo per root value ~60 ms.
    const ms = await asyncCpuMs(async () => {
      [[big]] = await Promise.all([
        registry.executeToolCalls([{ id: 'b', name: 'pay', arguments: args }]),
        registry.executeToolCalls(small),
      ]);
    });
    expect(big).toMatchObject({ isError: false });
    expect(ran).toHaveLength(2 + 400);
    expect(alone).toBeLessThan(1_000);
    expect(ms).toBeLessThan(1_000);
  });
});
