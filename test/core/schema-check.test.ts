/**
 * src/schema-check.ts: what one JSON Schema check keeps for its run (uniqueItems' ids, enum's and const's look-ups and
 * measures). Issue 25: a passing check of the README's schema cost 26.5 ns at 0f199a9 against 9.5 at aa94349 (before
 * the bounds), ~12 ns of it three WeakMap deletes of the root before each check, ~6 the enum's call and Set look-up.
 * Counted here, without a clock: the keyed-collection operations of a passing check (0f199a9: three deletes and a
 * Set look-up each; now none), and that a value changed between checks is still read anew.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { counted } from '../attacks/fixtures/counted-reads.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

type Method = 'get' | 'set' | 'has' | 'delete';
const COUNTED: ReadonlyArray<[string, { prototype: object }, readonly Method[]]> = [
  ['WeakMap', WeakMap, ['get', 'set', 'has', 'delete']],
  ['Map', Map, ['get', 'set', 'has', 'delete']],
  ['Set', Set, ['has']],
];
const restore: Array<() => void> = [];
afterEach(() => {
  for (const undo of restore.splice(0)) undo();
});

/** The calls of each counted method while `run` runs ("WeakMap.delete": n), the methods put back after. */
function operations(run: () => void): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const [name, collection, methods] of COUNTED)
    for (const method of methods) {
      const prototype = collection.prototype as Record<Method, (...args: unknown[]) => unknown>;
      const original = prototype[method];
      restore.push(() => (prototype[method] = original));
      prototype[method] = function (this: unknown, ...args: unknown[]) {
        counts[`${name}.${method}`] = (counts[`${name}.${method}`] ?? 0) + 1;
        return original.apply(this, args);
      };
    }
  try {
    run();
  } finally {
    for (const undo of restore.splice(0)) undo();
  }
  return counts;
}

/** bench/engines/toolgate.ts ARGUMENTS_SCHEMA, the README's. */
const README = {
  type: 'object',
  properties: { amount: { type: 'integer', minimum: 0 }, mode: { type: 'string', enum: ['read', 'write', 'admin'] } },
  required: ['amount', 'mode'],
} as const;

/** An `$async` check of a tree of unique items (each level a `$ref`: an await), and a synchronous one of its top. */
function asyncTree() {
  const tree = { $async: true, uniqueItems: true, items: { $ref: '#/$defs/tree' } };
  return {
    validate: compileValidator({
      $async: true,
      type: 'object',
      $defs: { tree },
      properties: { t: tree },
    } as JsonSchema),
    other: compileValidator({ type: 'object', properties: { t: { uniqueItems: true } } } as JsonSchema),
  };
}

describe('a passing check of a schema without uniqueItems or a structured enum', () => {
  it("looks nothing up and deletes nothing in a keyed collection (0f199a9: three WeakMap deletes and a Set's has)", () => {
    const validate = compileValidator(README as JsonSchema);
    const values = Array.from({ length: 100 }, (_, i) =>
      JSON.parse(`{"amount":${i},"mode":"${['read', 'write', 'admin'][i % 3]}"}`),
    ) as Record<string, unknown>[];
    let passed = 0;
    const counts = operations(() => {
      for (const value of values) if (sync(validate(value)).ok) passed++;
    });
    expect(passed).toBe(100);
    expect(counts).toEqual({});
  });

  it('a const of a string, a number, null: the same', () => {
    const validate = compileValidator({
      type: 'object',
      properties: { a: { const: 'x' }, b: { const: 1 }, c: { const: null } },
    } as JsonSchema);
    let passed = 0;
    const counts = operations(() => {
      for (let i = 0; i < 100; i++) if (sync(validate(JSON.parse('{"a":"x","b":1.0,"c":null}'))).ok) passed++;
    });
    expect(passed).toBe(100);
    expect(counts).toEqual({});
  });
});

describe('a value changed between two checks is read anew', () => {
  it('uniqueItems of objects: two items made equal after a passing check are refused', () => {
    const validate = compileValidator({ type: 'object', properties: { l: { uniqueItems: true } } } as JsonSchema);
    const value = JSON.parse('{"l":[{"a":1},{"a":2},[1],[2]]}') as { l: [{ a: number }, { a: number }, number[]] };
    expect(sync(validate(value)).ok).toBe(true);
    value.l[1].a = 1;
    expect(sync(validate(value)).issues).toEqual(['/l must NOT have duplicate items (items ## 0 and 1 are identical)']);
    value.l[1].a = 3;
    expect(sync(validate(value)).ok).toBe(true);
  });

  it('an enum of objects: a member changed into a non-member is refused, and back', () => {
    const validate = compileValidator({
      type: 'object',
      properties: { k: { enum: [{ a: [1] }, { a: [2, 3] }] } },
    } as JsonSchema);
    const value = JSON.parse('{"k":{"a":[1]}}') as { k: { a: number[] } };
    expect(sync(validate(value)).ok).toBe(true);
    value.k.a.push(2);
    expect(sync(validate(value)).ok).toBe(false);
    value.k.a.shift();
    value.k.a.push(3);
    expect(sync(validate(value)).ok).toBe(true);
    // Deeper than every member after a passing check (its measure taken anew), then a member again.
    value.k.a = [[[[2]]]] as never;
    expect(sync(validate(value)).ok).toBe(false);
    value.k.a = [1];
    expect(sync(validate(value)).ok).toBe(true);
  });

  it('an $async check: the same, once each check has settled', async () => {
    const validate = compileValidator({
      $async: true,
      type: 'object',
      properties: { l: { uniqueItems: true }, k: { const: { a: [1] } } },
    } as JsonSchema);
    const value = JSON.parse('{"l":[{"a":1},{"a":2}],"k":{"a":[1]}}') as { l: { a: number }[]; k: { a: number[] } };
    expect((await validate(value)).ok).toBe(true);
    value.l[1]!.a = 1;
    value.k.a[0] = 2;
    expect((await validate(value)).issues).toEqual([
      '/l must NOT have duplicate items (items ## 0 and 1 are identical)',
      '/k must be equal to constant',
    ]);
  });

  it('a synchronous check of the same value while its $async check awaits: each verdict its value at its time', async () => {
    const { validate, other: syncValidate } = asyncTree();
    const value = JSON.parse('{"t":[[{"a":1},{"a":2}],[{"a":3}]]}') as { t: { a: number }[][] };
    const pending = validate(value);
    expect(sync(syncValidate(value)).ok).toBe(true);
    expect((await pending).ok).toBe(true);
    value.t[0]![1]!.a = 1;
    const refused = validate(value);
    expect(sync(syncValidate({ t: [[1], [1]] })).ok).toBe(false);
    expect((await refused).issues).toEqual(['/t/0 must NOT have duplicate items (items ## 0 and 1 are identical)']);
  });
});

describe('an $async check keeps its state while other checks run between its awaits', () => {
  it('a tree 100 levels over an object of 1,000 keys, a synchronous check between each of its steps: each part read a bounded number of times', async () => {
    const { validate, other } = asyncTree();
    const depth = 100;
    const width = 1_000;
    let data: unknown = [Object.fromEntries(Array.from({ length: width }, (_, i) => [`k${i}`, 0])), 1];
    for (let i = 0; i < depth; i++) data = [data, 0];
    const count = { n: 0 };
    const value = counted({ t: data }, count) as Record<string, unknown>;
    let settled = false;
    const pending = Promise.resolve(validate(value)).then((result) => ((settled = true), result));
    let between = 0;
    while (!settled) {
      await Promise.resolve();
      expect(sync(other({ t: [{ a: 1 }, { a: 2 }] })).ok).toBe(true);
      between++;
    }
    expect((await pending).ok).toBe(true);
    expect(between).toBeGreaterThan(depth);
    // Each level's subtree walked again at each level when its state was dropped: ~depth × width (100,000 reads).
    expect(count.n).toBeLessThan(10 * (depth + width));
  });
});
