/**
 * Attack (availability, src/schema-bounds.ts `uniqueItems`): the keyword is linear in one array, but each array
 * computes its items' structural ids afresh, down to the leaves, and a recursive schema checks `uniqueItems` at every
 * level: `{"uniqueItems": true, "items": {"$ref": "#"}}` (41 bytes, a tree of arrays) on `[[[…[payload], 0]…, 0], 0]`
 * walks the whole payload once per level — depth × payload. Ajv's own keyword compared the two items of each level
 * (the subtree and `0`: different types, at once): linear. A passing value of 293 KB (1,000 levels over 50,000
 * numbers) took 15.7 s (12.3 s CPU); the gate with 290 KB of arguments (200 levels) 2.3 s and the tool ran; the
 * same as an upstream's output schema and answer 2.5 s (`npx tsx tmp/uq.mts 1000 50000`, `npx tsx tmp/uqgate.mts
 * 200 50000`, scratch, load ~5–7). Counted here by the reads of the payload's items, without a clock.
 * Fails on main (eb19b7d): each payload item is read once per level.
 */
import { describe, expect, it } from 'vitest';
import { asyncCpuMs } from '../cpu.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { registryWith } from './fixtures/schema-tool.js';

const TREE = { uniqueItems: true, items: { $ref: '#' } } as const;
/** The tree as an object's property `t` (arguments and structured content are objects). */
const TREE_DEF = { uniqueItems: true, items: { $ref: '#/$defs/tree' } };
const WRAPPED = { type: 'object', $defs: { tree: TREE_DEF }, properties: { t: TREE_DEF } };

/** `depth` levels of `[subtree, 0]` over an array of `size` distinct numbers whose reads are counted. */
function counted(depth: number, size: number): { value: unknown[]; reads: () => number } {
  let reads = 0;
  const payload: number[] = [];
  for (let i = 0; i < size; i++)
    Object.defineProperty(payload, i, {
      enumerable: true,
      get: () => {
        reads++;
        return i;
      },
    });
  let value: unknown[] = payload;
  for (let i = 0; i < depth; i++) value = [value, 0];
  return { value, reads: () => reads };
}

function nestedText(depth: number, size: number): string {
  let json = `[${Array.from({ length: size }, (_, i) => i).join(',')}]`;
  for (let i = 0; i < depth; i++) json = `[${json},0]`;
  return json;
}

describe('uniqueItems under a recursive schema: linear in the value, not depth × payload', () => {
  it.each([
    ['draft-07', TREE],
    ['2020-12', { $schema: 'https://json-schema.org/draft/2020-12/schema', ...TREE }],
  ])(
    '%s: a tree 200 deep over 1,000 items reads each item a bounded number of times (main: ~200 each)',
    (_d, schema) => {
      const { value, reads } = counted(200, 1_000);
      const result = compileValidator(schema as JsonSchema)(value as never);
      expect(result).toMatchObject({ ok: true });
      expect(reads()).toBeLessThan(20 * 1_000);
    },
  );

  it("an upstream's output schema and its answer: the same", () => {
    const { value, reads } = counted(200, 1_000);
    const checked = outputSchemaValidator.getValidator(WRAPPED as never)({ t: value });
    expect(checked.valid).toBe(true);
    expect(reads()).toBeLessThan(20 * 1_000);
  });

  it('the gate: 290 KB of arguments, a tree 200 deep over 50,000 numbers, in well under a second of CPU (main: ~2.3 s)', async () => {
    const { registry, ran } = registryWith(WRAPPED);
    const args = `{"t":${nestedText(200, 50_000)}}`;
    expect(args.length).toBeLessThan(300_000);
    let result: unknown;
    const ms = await asyncCpuMs(async () => {
      [result] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: args }]);
    });
    expect(result).toMatchObject({ isError: false });
    expect(ran).toHaveLength(1);
    expect(ms).toBeLessThan(1_000);
  });
});
