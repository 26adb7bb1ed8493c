/**
 * src/schema-pointers.ts `pointerWork`: the JSON Pointers Ajv's compilation builds for a schema's subschemas
 * (`getSchemaRefs` keys an object by each, through json-schema-traverse), counted before Ajv compiles.
 *
 * V8 hashes a string past 16,383 characters by its length alone, so pointers of one length past it (a long property
 * name above many subschemas) are compared with each other as each is internalised: a property name of 100,000
 * characters above 600 subschemas under `not` (122 KB, little code: the bound of code does not see it) took 3.9 s to
 * compile (refused now before Ajv compiles: test/core/schema-pointers-refused.test.ts). The count is
 * json-schema-traverse's own (its pointers built and measured here), and no schema of the corpus comes near either
 * bound.
 */
import traverse from 'json-schema-traverse';
import { describe, expect, it } from 'vitest';
import type { JsonSchema } from '../../src/schema.js';
import { HASHED_LENGTH_MAX } from '../../src/crypto.js';
import {
  pointerWork,
  POINTER_CHARACTERS_MAX,
  URI_CHARACTERS_MAX,
  type PointerWork,
} from '../../src/schema-pointers.js';
import { edgeSchemas, randomSchemas, realSchemas, zodSchemas } from './schema-cost-corpus.js';

/** What json-schema-traverse builds for `schema`, as Ajv's getSchemaRefs walks it, counted from its pointers. */
function traversed(schema: object): Omit<PointerWork, 'uri' | 'uris'> {
  const lengths = new Map<number, number>();
  let characters = 0;
  traverse(schema, { allKeys: true }, (_sch, pointer, _root, parent) => {
    if (parent === undefined) return;
    characters += pointer.length;
    lengths.set(pointer.length, (lengths.get(pointer.length) ?? 0) + 1);
  });
  let compared = 0;
  let colliding = 0;
  for (const [length, n] of lengths)
    if (length > HASHED_LENGTH_MAX && n > 1) {
      compared += ((n * (n - 1)) / 2) * length;
      colliding += n;
    }
  return { characters, colliding, compared };
}

/** A property name of `length` characters above `count` subschemas, under `not` (the finding's shape). */
function quiet(length: number, count: number): JsonSchema {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < count; i++) properties[`p_${i}`] = { properties: { x: { minLength: 1 } } };
  return { not: { type: 'object', properties: { ['x'.repeat(length)]: { type: 'object', properties } } } };
}

describe('the JSON Pointers of a schema, counted before Ajv compiles it', () => {
  it("are json-schema-traverse's own, for every schema of the corpus and the edges of its walk", () => {
    const edges: [string, JsonSchema][] = [
      ['escaped names', { properties: { 'a/b~c': { properties: { '~~//': {} } } }, $defs: { 'x/y': {} } }],
      ['inherited names', JSON.parse('{"constructor": {"a": {}}, "toString": [{}, {}], "valueOf": {"b": {}}}')],
      ['a proto key', JSON.parse('{"properties": {"__proto__": {"not": {}}}, "__proto__": {"x": {}}}')],
      ['keywords unescaped', { dependentSchemas: { 'a/b': { not: {} } }, examples: [{ a: {} }], default: { a: {} } }],
      ['arrays', { items: [{}, { items: {} }], allOf: [{}, [{}]], prefixItems: [{}], enum: [{}], x: [{ y: {} }] }],
      ['long keys', quiet(HASHED_LENGTH_MAX + 5, 30)],
      ['long keys apart', { properties: { ['a'.repeat(20_000)]: { properties: { p: {}, q: {}, rr: {} } } } }],
    ];
    const corpus = [...realSchemas(5), ...zodSchemas(), ...edgeSchemas(), ...randomSchemas(11, 200), ...edges];
    for (const [name, schema] of corpus) expect(pointerWork(schema), name).toMatchObject(traversed(schema));
    // The long keys' pointers: 10 of one length, 20 of another (p_0…p_9, p_10…p_29), twice each (x under each).
    expect(pointerWork(quiet(HASHED_LENGTH_MAX + 5, 30)).colliding).toBe(60);
  });

  it('no schema of the corpus comes near either bound (none has a pointer past 16,383 characters)', () => {
    const corpus = [...realSchemas(1), ...zodSchemas(), ...edgeSchemas(), ...randomSchemas(7, 250)];
    let most = 0;
    let mostUris = 0;
    for (const [name, schema] of corpus) {
      const work = pointerWork(schema);
      expect(work.compared, name).toBe(0);
      // Nor a URI near the length V8 stops hashing strings by (the $ids around a $ref or $anchor added).
      expect(work.uri, name).toBeLessThan(HASHED_LENGTH_MAX / 16);
      mostUris = Math.max(mostUris, work.uris);
      most = Math.max(most, work.characters);
    }
    expect(most).toBeGreaterThan(0);
    expect(most * 16).toBeLessThan(POINTER_CHARACTERS_MAX);
    expect(mostUris * 8).toBeLessThan(URI_CHARACTERS_MAX);
  });
});
