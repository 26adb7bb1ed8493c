/**
 * Attack (false refusal, branch `schemaround`, src/schema-cost.ts `target`): the lower bound resolves a `#/…` reference
 * itself, and two spellings Ajv reads otherwise send it to a subschema Ajv never compiles, whose code it then counts:
 *
 * - `#/` is the root to Ajv (its `$ref` keyword: `$ref === "#/"` calls the root; `normalizeId` drops a trailing `#/`),
 *   to the bound the root's member named `""`;
 * - a reference ending in `#` (`#/$defs/a#`): Ajv's `normalizeId` drops the trailing `#` (it resolves `#/$defs/a`), the
 *   bound looks up the member `a#`.
 *
 * Either way the bound counts a subschema Ajv never reads (an unknown keyword `""`, an unreferenced `$defs` entry):
 * with a large one there the schema, which compiles on main (8393c61) to a few KB of code, is refused, and in every
 * case the bound is above the code Ajv writes (a lower bound that is not one). Fails on `schemaround` (af4cceb).
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { codeWritten, newCheck, SCHEMA_CODE_MAX } from '../../src/schema-bounds.js';
import { codeAtLeast } from '../../src/schema-cost.js';
import { ajvFor } from '../../src/schema-dialects.js';

/** 700 checked strings under a key of 2,000 characters: the bound counts ~5.8 M characters for it. */
function big(): JsonSchema {
  const properties: Record<string, unknown> = {};
  for (let i = 0; i < 700; i++) properties[`p${i}`] = { type: 'string', minLength: 1 };
  return { type: 'object', properties: { ['k'.repeat(2_000)]: { type: 'object', properties } } };
}

/** The code Ajv writes compiling `schema` in the gate's Ajv, the bound not checked first. */
function written(schema: JsonSchema): number {
  const ajv = ajvFor(schema);
  newCheck(schema);
  try {
    ajv.compile(schema);
    return codeWritten();
  } finally {
    ajv.removeSchema(schema);
  }
}

const CASES: readonly (readonly [string, () => JsonSchema])[] = [
  ['a reference to the root spelled #/', () => ({ type: 'object', properties: { self: { $ref: '#/' } }, '': big() })],
  [
    'a reference ending in #',
    () => ({
      type: 'object',
      properties: { a: { $ref: '#/$defs/a#' } },
      $defs: { 'a#': big(), a: { type: 'string' } },
    }),
  ],
];

describe('the lower bound follows a reference where Ajv does not', () => {
  for (const [name, make] of CASES) {
    it(`${name}: the bound is at most the code Ajv writes`, () => {
      const schema = make();
      expect(JSON.stringify(schema).length).toBeLessThan(100_000);
      const actual = written(schema);
      expect(actual).toBeLessThan(SCHEMA_CODE_MAX / 100); // Ajv compiles a few KB
      expect(codeAtLeast(schema)).toBeLessThanOrEqual(actual);
    });

    it(`${name}: the schema compiles (it does on main)`, () => {
      expect(() => compileValidator(make())).not.toThrow();
    });
  }
});
