/**
 * Attack (availability, branch `schemacap`, src/schema-bounds.ts `duplicatePair`): `uniqueItems` is found in linear
 * time only for items that are "plain JSON data"; an object with an own key `constructor` (or `valueOf`, `toString`)
 * is not, and each such item is compared by Ajv's `equal` with every other item, both ways, with no stop at a
 * duplicate. JSON text makes such objects (`JSON.parse('{"constructor":1}')` has the key as its own): 20,000 items
 * `{"constructor":i}` (429 KB of arguments) held the gate ~2 s per check (~4.7 s through executeToolCalls, tsx, this
 * machine), quadratic in the items, where 20,000 `{"id":i}` took 28 ms. With the last two items equal the reference
 * Ajv (its pairwise loop from the end, stopping at the first duplicate) refuses them in 2 ms; the gate still compares
 * every pair. An upstream's answer makes other such items: a number past a double (`1e999`, JSON.parse's Infinity),
 * 20,000 rows `[1e999,i]` (269 KB) ~4.9 s a check. Fails on `schemacap` 149549b (and, by its read counts, on main).
 */
import { describe, expect, it } from 'vitest';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { registryWith } from './fixtures/schema-tool.js';

const LIST = { type: 'object', properties: { list: { type: 'array', uniqueItems: true } } } as const;

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** `items` behind a Proxy counting the reads of its indices. */
function counted(items: unknown[]): { list: unknown[]; reads: () => number } {
  let reads = 0;
  const list = new Proxy(items, {
    get(target, key, receiver) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
      return Reflect.get(target, key, receiver) as unknown;
    },
  });
  return { list, reads: () => reads };
}

describe('uniqueItems stays linear for objects JSON text makes', () => {
  it.each([
    ['an own key constructor', (i: number) => ({ constructor: i })],
    ['one nested a level down', (i: number) => ({ id: i, meta: { constructor: 0 } })],
  ])('2,000 objects with %s, from JSON text: each item read a bounded number of times', (_label, make) => {
    const n = 2000;
    const items = JSON.parse(JSON.stringify(Array.from({ length: n }, (_, i) => make(i)))) as unknown[];
    const { list, reads } = counted(items);
    const result = sync(compileValidator({ ...LIST })({ list }));
    expect(result.ok).toBe(true);
    // Ajv's `{"id": i}` items: ~2 reads each. These: ~8,000,000 in all.
    expect(reads()).toBeLessThan(10 * n);
  });

  it("an upstream's content: 2,000 rows holding 1e999 (JSON.parse: Infinity, not plain data), each read a bounded number of times", () => {
    const n = 2000;
    const text = `[${Array.from({ length: n }, (_, i) => `[1e999,${i}]`).join(',')}]`;
    const { list, reads } = counted(JSON.parse(text) as unknown[]);
    const validate = outputSchemaValidator.getValidator({ ...LIST } as never);
    expect(validate({ list }).valid).toBe(true);
    // 20,000 such rows (269 KB of an upstream's answer): ~4.9 s a check.
    expect(reads()).toBeLessThan(10 * n);
  });

  it('2,000 such objects, the last two equal: refused, each item read a bounded number of times; the gate refuses the call', async () => {
    const n = 2000;
    const items = Array.from({ length: n }, (_, i) => ({ constructor: i === n - 1 ? n - 2 : i }));
    const { list, reads } = counted(JSON.parse(JSON.stringify(items)) as unknown[]);
    expect(sync(compileValidator({ ...LIST })({ list })).issues).toEqual([
      `/list must NOT have duplicate items (items ## ${n - 2} and ${n - 1} are identical)`,
    ]);
    // The reference Ajv stops at the first duplicate from the end (a few reads); the gate read ~8,000,000.
    expect(reads()).toBeLessThan(10 * n);
    const { registry, ran } = registryWith({ ...LIST });
    const [batch] = await registry.executeToolCalls([
      { id: 'c1', name: 'pay', arguments: JSON.stringify({ list: items }) },
    ]);
    expect(batch).toMatchObject({ isError: true });
    expect(ran).toEqual([]);
  });
});
