/**
 * Attacks on the snapshot's shape copiers (src/gate/snapshot.ts `makeShape`, a336b34) that held: functions made
 * from key names. Keys that would break out of a string literal (quotes, backslashes, U+2028/2029, lone
 * surrogates, `${`, `</script>`, a closing brace and a statement), integer-like keys (the object literal's order
 * against the record's), `__proto__` in every spelling and depth, keys named as the copier's own variables
 * (`r`, `v0`, `stop`), Proxies answering their keys in any order, a getter that calls the gate again from inside a
 * copier (the shared `stopped`), and the process's shapes all taken (1,024, 4 per first key): each read as
 * JSON.stringify reads it, each value read once, deep-frozen, no prototype touched.
 */
import fc from 'fast-check';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { snapshotArguments } from '../../src/gate/snapshot.js';

const NASTY = [
  '"',
  '\\',
  "'",
  '`',
  '${process.exit(1)}',
  '\u2028',
  '\u2029',
  '\ud800',
  '\udfff',
  '\u0000',
  '\n',
  '</script>',
  '"]; process.exit(1); //',
  '}; process.exit(1); ({',
  '1',
  '01',
  '-0',
  '-1',
  '1.5',
  '4294967294',
  '4294967295',
  '9007199254740993',
  'constructor',
  'toString',
  'hasOwnProperty',
  'valueOf',
  '__proto_',
  '__PROTO__',
  ' __proto__',
  '__proto__ ',
  '\u005f_proto__x',
  'r',
  'v0',
  'v1',
  'stop',
  'copy',
  'arguments',
  'this',
  'toJSON',
];

function deepFrozen(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  return Object.isFrozen(value) && Object.values(value).every(deepFrozen);
}

function plainAll(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return true;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== (Array.isArray(value) ? Array.prototype : Object.prototype)) return false;
  return Object.values(value).every(plainAll);
}

/** An own "__proto__" key anywhere (the snapshot refuses it before reading its value, even one JSON leaves out). */
function protoKeyIn(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== null && proto !== Object.prototype && proto !== Array.prototype) return false;
  return Object.hasOwn(value, '__proto__') || Object.values(value).some(protoKeyIn);
}

const leaf = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.string(),
  fc.boolean(),
  fc.constant(null),
  fc.constant(undefined),
  fc.constant(Symbol('s') as unknown),
  fc.constant(Object('w') as unknown),
);
const key = fc.oneof(fc.constantFrom(...NASTY), fc.constantFrom('a', 'b', '__proto__'), fc.string({ maxLength: 3 }));
const value = fc.letrec((tie) => ({
  node: fc.oneof({ depthSize: 'small' }, leaf, tie('array'), tie('record')),
  array: fc.array(tie('node'), { maxLength: 3 }),
  record: fc.dictionary(key, tie('node'), { maxKeys: 6 }),
})).record as fc.Arbitrary<Record<string, unknown>>;

/** `record` behind a Proxy that answers its keys in `order`'s order and logs every value read. */
function proxied(record: Record<string, unknown>, order: number[], log: string[]): Record<string, unknown> {
  const keys = Reflect.ownKeys(record);
  const shuffled = (keys.length === 0 ? [] : order.map((i) => keys[i % keys.length]!)).filter(
    (k, i, all) => all.indexOf(k) === i,
  );
  for (const k of keys) if (!shuffled.includes(k)) shuffled.push(k);
  return new Proxy(record, {
    ownKeys: () => shuffled,
    get(target, name, receiver) {
      if (typeof name === 'string' && Object.hasOwn(target, name)) log.push(name);
      return Reflect.get(target, name, receiver) as unknown;
    },
  });
}

describe('shape copiers made from hostile key names', () => {
  afterEach(() => {
    vi.unstubAllGlobals();
  });

  it('read as JSON.stringify, twice each (made, then met again), plain and deep-frozen, nothing polluted', () => {
    fc.assert(
      fc.property(value, fc.array(fc.nat(), { maxLength: 8 }), (given, order) => {
        const expected = JSON.stringify(given);
        for (let round = 0; round < 2; round++) {
          if (protoKeyIn(given)) {
            expect(() => snapshotArguments(given)).toThrow(/__proto__/);
            continue;
          }
          const copy = snapshotArguments(given);
          expect(JSON.stringify(copy)).toBe(expected);
          expect(deepFrozen(copy)).toBe(true);
          expect(plainAll(copy)).toBe(true);
          // Behind a Proxy answering its keys in another order: the same values, each key read once, in that order.
          const jsonReads: string[] = [];
          const text = JSON.stringify(proxied(given, order, jsonReads));
          const reads: string[] = [];
          const again = snapshotArguments(proxied(given, order, reads));
          // Both read back through JSON: the snapshot keeps a value as given (-0 stays -0, which JSON.parse of the
          // text makes 0), and an object lists integer-like keys first, whatever order the Proxy answered in.
          expect(JSON.parse(JSON.stringify(again))).toEqual(JSON.parse(text));
          expect(reads).toEqual(jsonReads);
        }
        expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(
          Object.getOwnPropertyNames(Object.getPrototypeOf({}) as object).sort(),
        );
        expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
      }),
      { numRuns: 600 },
    );
  });

  it('every hostile key alone and all together: own data properties of exactly those names, by copiers', async () => {
    vi.resetModules(); // no shape met yet
    const fresh = (await import('../../src/gate/snapshot.js')).snapshotArguments;
    // Every shape's copier is made, none refused (a key that broke the function's text would be a SyntaxError,
    // taken for "no code generation" and hidden by the key-by-key copy).
    let made = 0;
    const refused: unknown[] = [];
    const RealFunction = Function;
    vi.stubGlobal(
      'Function',
      new Proxy(RealFunction, {
        construct(target, args: unknown[]) {
          made++;
          try {
            return Reflect.construct(target, args) as object;
          } catch (error) {
            refused.push(error);
            throw error;
          }
        },
      }),
    );
    const all: Record<string, unknown> = {};
    for (const name of NASTY) {
      const one = fresh({ [name]: name });
      expect(Object.getOwnPropertyNames(one)).toEqual([name]);
      expect(one[name]).toBe(name);
      all[name] = name;
    }
    // More than 16 keys: key by key; 16 at a time: one copier each.
    for (let i = 0; i + 16 <= NASTY.length; i += 4) {
      const some = Object.fromEntries(NASTY.slice(i, i + 16).map((name) => [name, { nested: name }]));
      expect(JSON.stringify(fresh(some))).toBe(JSON.stringify(some));
      const leaves = Object.fromEntries(NASTY.slice(i, i + 16).map((name) => [name, name]));
      expect(JSON.stringify(fresh(leaves))).toBe(JSON.stringify(leaves));
    }
    expect(JSON.stringify(fresh(all))).toBe(JSON.stringify(all));
    expect(refused).toEqual([]);
    expect(made).toBeGreaterThanOrEqual(NASTY.length);
    // "__proto__" as an own key (JSON.parse makes one), at any depth, after leaves of a known shape: refused.
    fresh({ a: 1, b: 2 });
    for (const text of ['{"a":1,"b":2,"__proto__":{"polluted":1}}', '{"a":1,"b":{"__proto__":{"polluted":1}}}'])
      expect(() => fresh(JSON.parse(text) as Record<string, unknown>)).toThrow(/__proto__/);
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('a getter that calls the gate from inside a copier (the shared `stopped`): both copies right', () => {
    const inner = { x: 1, deep: { y: 2 }, z: 'z' }; // its copier stops at "deep"
    snapshotArguments(inner);
    let reads = 0;
    let innerCopy: unknown;
    const outer = {
      a: 1,
      get b() {
        reads++;
        innerCopy = snapshotArguments(inner);
        return 'b';
      },
      c: { d: [1, 2] }, // the outer copier stops here, after the inner one stopped and was read
      e: 'e',
    };
    for (let round = 0; round < 3; round++) {
      expect(snapshotArguments(outer)).toEqual({ a: 1, b: 'b', c: { d: [1, 2] }, e: 'e' });
      expect(innerCopy).toEqual(inner);
    }
    expect(reads).toBe(3);
  });

  it("all the process's shapes taken by one caller: others' records still copied right, each getter once", () => {
    let taken = 0;
    for (let i = 0; i < 1200; i++) {
      snapshotArguments({ [`k${i}`]: 1, [`j${i}`]: 2 });
      snapshotArguments({ path: 1, [`p${i}`]: 2 }); // 4 per first key: the rest key by key
      taken++;
    }
    expect(taken).toBe(1200);
    for (const shape of [
      { path: 'a', mode: 'r' },
      { never: 'met', before: true },
      { k5: 1, j5: 2 },
    ]) {
      let reads = 0;
      const given = Object.defineProperty({ ...shape }, 'counted', {
        enumerable: true,
        get: () => ++reads,
      });
      const copy = snapshotArguments(given);
      expect(copy).toEqual({ ...shape, counted: 1 });
      expect(reads).toBe(1);
      expect(Object.isFrozen(copy)).toBe(true);
    }
  });
});
