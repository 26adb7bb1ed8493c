/**
 * The argument snapshot (src/gate/snapshot.ts) reads as JSON.stringify does, on random values: the same JSON,
 * deep-frozen, a copy (the caller's later changes never reach it); a shared object is no cycle, a cycle at any
 * depth (through arrays, toJSON results) is refused, getters run once. Objects of leaves alone are copied without
 * going on the cycle stack (issue 25): these pin that nothing else changed.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { snapshotArguments } from '../../src/gate/snapshot.js';

function deepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deepFrozen);
}

const leaf = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(() => 1),
  fc.constant(new Date(0)),
  fc.constant(Object(3) as unknown),
  fc.constant({ toJSON: (key: string) => ({ key }) }),
);
const key = fc.oneof(fc.constantFrom('a', 'b', '0', '10', 'toJSON', 'x y'), fc.string({ maxLength: 4 }));
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('record')),
  array: fc.array(tie('node'), { maxLength: 4 }),
  record: fc.dictionary(key, tie('node'), { maxKeys: 4 }),
})).record as fc.Arbitrary<Record<string, unknown>>;

describe('the argument snapshot reads as JSON does', () => {
  it('on random values: the same JSON, deep-frozen, a copy', () => {
    fc.assert(
      fc.property(value, (given) => {
        let expected: string | undefined;
        try {
          expected = JSON.stringify(given);
        } catch {
          return; // not JSON (none generated here)
        }
        if (!expected?.startsWith('{')) {
          // A top-level toJSON made it something else than an object: refused, as the gate refuses it.
          expect(() => snapshotArguments(given)).toThrow(/not an object/);
          return;
        }
        if (expected.includes('"__proto__":')) {
          expect(() => snapshotArguments(given)).toThrow(/__proto__/);
          return;
        }
        const copy = snapshotArguments(given);
        expect(JSON.stringify(copy)).toBe(expected);
        expect(deepFrozen(copy)).toBe(true);
        if (Object.keys(given).length > 0) expect(copy).not.toBe(given);
      }),
      { numRuns: 400 },
    );
  });

  it('a shared object is no cycle; a cycle at any depth is refused', () => {
    const shared = { n: 1 };
    expect(JSON.stringify(snapshotArguments({ a: shared, b: [shared, { c: shared }] }))).toBe(
      '{"a":{"n":1},"b":[{"n":1},{"c":{"n":1}}]}',
    );
    const self: Record<string, unknown> = { x: 1 };
    self['me'] = self;
    const deep: Record<string, unknown> = { x: 1 };
    deep['list'] = [1, 'two', { back: [deep] }];
    const array: unknown[] = [1];
    array.push(array);
    const viaToJSON: Record<string, unknown> = { x: 1 };
    viaToJSON['later'] = { toJSON: () => ({ again: viaToJSON }) };
    for (const cyclic of [self, deep, { wrapped: array }, viaToJSON])
      expect(() => snapshotArguments(cyclic)).toThrow(/cycle/);
    // The stack is left clean: a later read of the same shapes succeeds.
    expect(snapshotArguments({ a: shared, b: [shared] })).toEqual({ a: { n: 1 }, b: [{ n: 1 }] });
  });

  it('runs a getter once, and the caller changing its object afterwards changes nothing', () => {
    let reads = 0;
    const inner = { v: 1 };
    const given = {
      get counted() {
        reads++;
        return reads;
      },
      inner,
    };
    const copy = snapshotArguments(given);
    inner.v = 2;
    expect(reads).toBe(1);
    expect(copy).toEqual({ counted: 1, inner: { v: 1 } });
  });
});
