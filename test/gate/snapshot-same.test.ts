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

/**
 * A record of a shape met before is read and copied by its shape's own code (snapshot.ts, issue 25), which hands
 * over to the key-by-key copy at the first value that is not a leaf: these pin that both read the record as
 * JSON.stringify does — the same reads (getters, Proxy traps, toJSON) in the same order, the same JSON.
 */
describe("a shape's copier reads as JSON does", () => {
  /** What JSON.stringify and the snapshot each do to a record built by `make(log)`, and what they answer. */
  function traced(make: (log: string[]) => Record<string, unknown>): { json: string[]; snapshot: string[] } {
    const json: string[] = [];
    const text = JSON.stringify(make(json));
    const snapshot: string[] = [];
    let copy: unknown;
    try {
      const taken = snapshotArguments(make(snapshot));
      // JSON text writes a number that is not finite as null: the copy must hold that null itself.
      if (!finiteOnly(taken)) snapshot.push('a number that is not finite was copied');
      copy = JSON.stringify(taken);
    } catch (error) {
      copy = `threw ${String(error)}`;
    }
    json.push(`= ${text}`);
    snapshot.push(`= ${String(copy)}`);
    return { json, snapshot };
  }

  function finiteOnly(value: unknown): boolean {
    if (typeof value === 'number') return Number.isFinite(value);
    if (typeof value !== 'object' || value === null) return true;
    return Object.values(value).every(finiteOnly);
  }

  /** A record of these keys whose every read (and every trap, when proxied) is logged. */
  function logged(
    entries: readonly (readonly [string, () => unknown])[],
    proxied: boolean,
  ): (log: string[]) => Record<string, unknown> {
    return (log) => {
      const target: Record<string, unknown> = {};
      for (const [name, get] of entries)
        Object.defineProperty(target, name, {
          enumerable: true,
          configurable: true,
          get() {
            log.push(`get ${name}`);
            return get();
          },
        });
      if (!proxied) return target;
      return new Proxy(target, {
        ownKeys(t) {
          log.push('ownKeys');
          return Reflect.ownKeys(t);
        },
        getOwnPropertyDescriptor(t, p) {
          log.push(`gOPD ${String(p)}`);
          return Reflect.getOwnPropertyDescriptor(t, p);
        },
      });
    };
  }

  const item = fc.oneof(
    fc.integer(),
    fc.constantFrom(Infinity, -Infinity, NaN, -0),
    fc.string({ maxLength: 3 }),
    fc.boolean(),
    fc.constant(null),
    fc.constant(undefined),
    fc.constant('fn'),
    fc.constant('date'),
    fc.constant('nested'),
  );
  const made = (kind: unknown, log: string[]): unknown =>
    kind === 'fn'
      ? () => 1
      : kind === 'date'
        ? { toJSON: (k: string) => (log.push(`toJSON ${k}`), 'd') }
        : kind === 'nested'
          ? { inner: 1, more: [2, 'x'] }
          : kind;
  const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'c', '0', '7', 'x y', 'toJSON', 'ü'), {
    minLength: 1,
    maxLength: 6,
  });

  it('on random records met again and again (plain and proxied): the same reads in the same order, the same JSON', () => {
    fc.assert(
      fc.property(names, fc.array(item, { minLength: 6, maxLength: 6 }), fc.boolean(), (keys, kinds, proxied) => {
        for (let round = 0; round < 3; round++) {
          const { json, snapshot } = traced((log) =>
            logged(
              keys.map((name, i) => [name, () => made(kinds[i], log)] as const),
              proxied,
            )(log),
          );
          // A top-level "toJSON" key is called by both (a getter answering a string: JSON.stringify's text,
          // the snapshot's refusal of a non-object): the reads before the answer are the same.
          if (keys.includes('toJSON')) expect(snapshot.slice(0, -1)).toEqual(json.slice(0, -1));
          else expect(snapshot).toEqual(json);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('records of more keys than a shape holds, of longer keys, and of more shapes than are made, are copied all the same', () => {
    const long = { ['k'.repeat(600)]: 1, short: 'x' };
    for (let round = 0; round < 2; round++) expect(snapshotArguments(long)).toEqual(long);
    for (let n = 1; n <= 40; n++) {
      const given = Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i % 3 === 0 ? `s${i}` : i]));
      for (let round = 0; round < 2; round++) {
        const copy = snapshotArguments(given);
        expect(copy).toEqual(given);
        expect(copy).not.toBe(given);
        expect(Object.isFrozen(copy)).toBe(true);
      }
    }
  });
});
