/**
 * src/schema-cost.ts: a lower bound of the code Ajv writes for a schema, checked before it compiles.
 *
 * - It is a lower bound: for every schema of a corpus (the repository's JSON Schemas, vega's and vega-lite's
 *   definitions, Ajv's secure meta-schema, zod 4's `toJSONSchema` outputs, seeded random schemas with nested
 *   keywords, `$defs`, `$ref`s spelled several ways, nested `$id`s and keys to escape) that compiles, the bound is at
 *   most the code Ajv wrote (`codeWritten()`, counted by `code.process`): no schema that compiles is refused by it.
 * - The schemas found by the attacker are refused before Ajv writes any code (counted, not timed): 24,000 properties
 *   of `{type: "string", minLength: 1}` (Ajv wrote 16 M characters before the bound refused them, ~6.7 s of CPU here),
 *   and a property key of 10,000 characters above 10,000 properties (406 M characters, ~4 s, ~0.7 GB).
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, newCheck, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';
import { codeAtLeast } from '../../src/schema-cost.js';
import { ajvFor } from '../../src/schema-dialects.js';
import { edgeSchemas, randomSchemas, realSchemas, zodSchemas } from './schema-cost-corpus.js';

/** The code Ajv writes compiling `schema` in the gate's Ajv (the bound not checked first), or undefined: no compile. */
function written(schema: JsonSchema): number | undefined {
  let ajv;
  try {
    ajv = ajvFor(schema);
    newCheck(schema);
    ajv.compile(schema);
    return codeWritten();
  } catch {
    return undefined;
  } finally {
    try {
      ajv?.removeSchema(schema);
    } catch {
      // not added
    }
  }
}

/** 24,000 properties of a checked string: 1.1 MB of schema (the attacker's (a)). */
function wide(): JsonSchema {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 24_000; i++) properties[`property_${i}`] = { type: 'string', minLength: 1 };
  return { type: 'object', properties };
}

/** One property key of `length` characters above `count` properties (the attacker's (b)). */
function longKey(length: number, count: number): JsonSchema {
  const inner: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) inner[`k${i}`] = { type: 'string', minLength: 1 };
  return { type: 'object', properties: { ['x'.repeat(length)]: { type: 'object', properties: inner } } };
}

describe('the lower bound of the code a schema compiles to', () => {
  it('is at most the code Ajv writes, for every schema of the corpus that compiles', () => {
    const corpus = [...realSchemas(20), ...zodSchemas(), ...edgeSchemas(), ...randomSchemas(7, 250)];
    let compiled = 0;
    const over: string[] = [];
    for (const [name, schema] of corpus) {
      const actual = written(schema);
      if (actual === undefined) continue;
      compiled++;
      const least = codeAtLeast(schema);
      expect(least).toBeGreaterThan(0);
      if (least > actual) over.push(`${name}: ${least} > ${actual}`);
    }
    expect(over).toEqual([]);
    expect(compiled).toBeGreaterThan(200);
  }, 120_000); // ~500 compilations (5–14 s; 30 s under a loaded Node 24 run)

  it('is tight enough to count the error paths: within 3 × of the code for a flat object of checked strings', () => {
    const properties: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) properties[`p${i}`] = { type: 'string', minLength: 1 };
    const schema = { type: 'object', properties };
    const actual = written(schema)!;
    expect(codeAtLeast(schema)).toBeLessThanOrEqual(actual);
    expect(codeAtLeast(schema) * 3).toBeGreaterThan(actual);
  });

  it('counts each $ref target once, in its own function, and none for the root or a boolean', () => {
    const leaf = { type: 'object', properties: { a: { type: 'string', minLength: 1 } } };
    const alone = codeAtLeast(leaf);
    const once = codeAtLeast({ $ref: '#/$defs/x', $defs: { x: leaf } });
    const spelled = codeAtLeast({ allOf: [{ $ref: '#/$defs/x' }, { $ref: '#/%24defs/x' }], $defs: { x: leaf } });
    expect(once).toBeGreaterThan(alone); // the target's function, and the root's
    expect(spelled).toBe(once);
    expect(codeAtLeast({ $ref: '#', $defs: { x: leaf } })).toBeLessThan(alone);
    expect(codeAtLeast({ $defs: { x: leaf } })).toBeLessThan(alone); // unreferenced: no code
    // An `$id` with a fragment is a name Ajv may resolve `#/…` to instead of the pointer: no reference followed.
    const named = { $ref: '#/$defs/x', $defs: { x: leaf, y: { $id: 'http://example.com/s#/$defs/x' } } };
    expect(codeAtLeast(named)).toBeLessThan(alone);
    // Nor through or under a nested `$id` (another base).
    expect(codeAtLeast({ $ref: '#/$defs/x', $defs: { x: { ...leaf, $id: 'http://example.com/x' } } })).toBeLessThan(
      alone,
    );
  });
});

describe('a schema that surely compiles past the bound of code', () => {
  it('24,000 properties of a checked string: refused before Ajv writes any code', () => {
    const schema = wide();
    expect(codeAtLeast(schema)).toBeGreaterThan(SCHEMA_CODE_MAX);
    expect(() => compileValidator(schema)).toThrow(/characters of code \(at least [\d,]+ by its keywords/);
    expect(codeWritten()).toBe(0);
  });

  it('a key of 10,000 characters above 10,000 properties: refused before Ajv writes any code', () => {
    const schema = longKey(10_000, 10_000);
    expect(codeAtLeast(schema)).toBeGreaterThan(100 * SCHEMA_CODE_MAX);
    expect(() => compileValidator(schema)).toThrow(/characters of code \(at least/);
    expect(codeWritten()).toBe(0);
  });

  it('the same shapes behind a $ref or under any applicator counted are refused the same way', () => {
    const big = longKey(3_000, 3_000);
    const wrapped: JsonSchema[] = [
      { $ref: '#/$defs/big', $defs: { big } },
      { type: 'array', items: big },
      { items: [{}, big] },
      { $schema: 'https://json-schema.org/draft/2020-12/schema', prefixItems: [big] },
      { additionalProperties: big },
      { patternProperties: { '^x': big } },
      { dependencies: { a: big } },
      { dependentSchemas: { a: big } },
      { propertyNames: big },
      { if: {}, then: big },
      { if: { type: 'string' }, else: big },
      { allOf: [big] },
      { oneOf: [{ type: 'string' }, big] },
      { anyOf: [{ type: 'string' }, big] },
    ];
    for (const schema of wrapped) {
      expect(() => compileValidator(schema)).toThrow(/characters of code \(at least/);
      expect(codeWritten()).toBe(0);
    }
  });

  it('a smaller one of the same shapes still compiles', () => {
    expect(() => compileValidator(longKey(100, 100))).not.toThrow();
    expect(codeWritten()).toBeGreaterThan(codeAtLeast(longKey(100, 100)));
  });
});
