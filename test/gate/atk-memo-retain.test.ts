/**
 * Attack on the memo of JSON argument text (src/gate/snapshot-text.ts `snapshotText`): its bound counts the
 * text's UTF-16 units (at most 256 a text, 1024 texts: "about half a megabyte"), but a short string V8 made
 * by slicing a longer one (substring, slice, a regex capture: a tool call cut out of a model's completion
 * or a stream buffer) holds its whole parent alive. Kept as a Map key, each short text retained its parent:
 * 32 calls of 200-character texts cut from 2 MB completions kept 64 MB after they were answered.
 */
import { describe, expect, it } from 'vitest';
import { heapAfterGc } from '../heap.js';
import { snapshotText, textMemo } from '../../src/gate/snapshot-text.js';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';

describe('the memo of argument text keeps only the texts, not what they were cut from', () => {
  it('32 short texts sliced from 2 MB completions retain far less than the completions', async () => {
    while (textMemo().resting) snapshotText('{}');
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'lookup',
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        execute: () => 'ok',
      }),
    );
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'all', tools: ['lookup'], result: 'allow' }] }),
    );
    const before = heapAfterGc();
    const sizes: number[] = [];
    for (let i = 0; i < 32; i++) {
      // A model's long completion with a tool call in it; the host cuts the call's arguments out of it.
      const completion =
        `{"q":"${String(i).padStart(4, '0')}${'a'.repeat(180)}"}` + ' '.repeat(2 * 1024 * 1024) + String(i);
      const args = /^(\{[^}]*\})/.exec(completion)![1]!;
      sizes.push(args.length);
      const [result] = await registry.dispatch([
        { id: `c${i}`, type: 'function', function: { name: 'lookup', arguments: args } },
      ]);
      expect(result!.status).toBe('ok');
    }
    expect(Math.max(...sizes)).toBeLessThanOrEqual(256);
    expect(textMemo().size).toBeGreaterThanOrEqual(32);
    const retained = heapAfterGc() - before;
    // The texts themselves are 32 x ~200 units; the completions 64 MB. Anything near the latter is the leak.
    expect(retained).toBeLessThan(16 * 1024 * 1024);
  });

  it('ids cut out of long strings (a header, a token, a body) keep none of those alive', () => {
    const before = heapAfterGc();
    for (let i = 0; i < 16; i++) {
      // A host that takes the tenant's and the caller's ids out of a 2 MB string it was sent.
      const sent =
        `tenant-${String(i).padStart(4, '0')}-abcdefghij caller-${i}-abcdefghijkl` + ' '.repeat(2 * 1024 * 1024);
      const [tenant, caller] = /^(\S+) (\S+)/.exec(sent)!.slice(1) as [string, string];
      expect(snapshotText('{"q":1}', tenant, caller)).toEqual({ q: 1 });
      expect(textMemo(tenant, caller).size).toBe(1);
    }
    // 16 ids of ~20 units each against 32 MB of what they were cut from.
    expect(heapAfterGc() - before).toBeLessThan(8 * 1024 * 1024);
  });

  it('a tool that keeps its arguments, read while the memo rests, keeps no completion alive', async () => {
    const who = { tenant: { id: 'keeper' }, caller: { id: 'c' } };
    for (let i = 0; i < 1024 * 2 + 2; i++) snapshotText(`{"unique":${i},"u":"${Math.random()}"}`, 'keeper', 'c');
    expect(textMemo('keeper', 'c').resting).toBe(true);
    const kept: unknown[] = [];
    const registry = new ToolRegistry();
    registry.register(
      defineTool({
        name: 'note',
        parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        execute: (args) => (kept.push(args), 'ok'),
      }),
    );
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [{ name: 'all', tools: ['note'], result: 'allow' }] }));
    const before = heapAfterGc();
    for (let i = 0; i < 32; i++) {
      // A short text whose value is long enough that a slice of it would be a view of the completion.
      const completion =
        `{"q":"${String(i).padStart(4, '0')}${'b'.repeat(30)}"}` + ' '.repeat(2 * 1024 * 1024) + String(i);
      const args = /^(\{[^}]*\})/.exec(completion)![1]!;
      expect(args.length).toBeLessThanOrEqual(64);
      const [result] = await registry.dispatch(
        [{ id: `k${i}`, type: 'function', function: { name: 'note', arguments: args } }],
        who,
      );
      expect(result!.status).toBe('ok');
    }
    expect(kept).toHaveLength(32);
    expect(textMemo('keeper', 'c').resting).toBe(true);
    expect(heapAfterGc() - before).toBeLessThan(16 * 1024 * 1024);
  });
});
