/**
 * Attack (fail open) on branch `ajvdos` (2026-12-06; merged, then reverted for this): a verdict by an Ajv that stops at
 * the first error (`allErrors: false`, to bound a failing check's work), on the claim that allErrors "changes only
 * which errors are collected, never the verdict". Ajv 8.20's code for two keywords is wrong in that mode only, and
 * skips the keywords that follow them in the same schema object (main keeps `allErrors: true` in
 * src/schema-dialects.ts; these cases guard the verdict against a switch):
 *
 * - `$dynamicRef` / `$recursiveRef` (lib/vocabularies/dynamic/dynamicRef.ts): `let valid = false; { callRef…;
 *   let valid = true }; if (valid) { …the rest… }` — the inner `let` shadows the outer, so `valid` stays false and
 *   every later keyword of the untyped group (not, const, enum, allOf, anyOf, oneOf, if/then, $ref) is skipped.
 * - a tuple (`items: [...]` in draft-07 / 2019-09, `prefixItems` in 2020-12; lib/vocabularies/applicator/items.ts
 *   `validateTuple`): `if (len > i) { … var valid = … } if (valid) { …the rest… }` — for an array no longer than
 *   the index of the tuple's first non-trivial schema `valid` is undefined, and `contains` (minContains) and
 *   `uniqueItems` are skipped.
 *
 * An allErrors Ajv (main's verdict) refuses every value below; the gate ran the tool with it.
 */
import { Ajv } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema } from '../../src/schema.js';
import { ALL_ERRORS_OPTIONS, DIALECT_URI } from './fixtures/allerrors-reference.js';
import { neverRuns } from './fixtures/schema-tool.js';

const D07 = DIALECT_URI['draft-07'];
const D2019 = DIALECT_URI['2019-09'];
const D2020 = DIALECT_URI['2020-12'];
const OPTIONS = ALL_ERRORS_OPTIONS;
// A schema this mend may refuse to compile instead of checking it right.
const REFUSED = /dynamicRef|recursiveRef|prefixItems|items|tuple/i;

/** What main's verdict (an allErrors Ajv of the schema's dialect) says of `value`. */
function allErrorsVerdict(schema: JsonSchema, value: unknown): boolean {
  const dialect = schema['$schema'];
  const ajv = dialect === D2020 ? new Ajv2020(OPTIONS) : dialect === D2019 ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS);
  return ajv.validate(structuredClone(schema), value) as boolean;
}

/** A tree whose children are checked by `$dynamicRef`, `sibling` beside it. */
const dynamicTree = (sibling: JsonSchema): JsonSchema => ({
  $schema: D2020,
  $dynamicAnchor: 'node',
  type: 'object',
  $defs: { named: { required: ['name'] } },
  properties: { children: { type: 'array', items: { $dynamicRef: '#node', ...sibling } } },
});

describe('$dynamicRef / $recursiveRef: the keywords beside it are checked', () => {
  const cases: [string, JsonSchema, Record<string, unknown>][] = [
    ['not', { not: { required: ['admin'] } }, { admin: true }],
    ['const', { const: { name: 'x' } }, { name: 'y' }],
    ['enum', { enum: [{ name: 'x' }] }, { name: 'y' }],
    ['allOf', { allOf: [{ required: ['name'] }] }, {}],
    ['anyOf', { anyOf: [{ required: ['name'] }] }, {}],
    ['oneOf', { oneOf: [{ required: ['name'] }] }, {}],
    ['if/then', { if: true, then: { required: ['name'] } }, {}],
    ['$ref', { $ref: '#/$defs/named' }, {}],
  ];
  for (const [keyword, sibling, child] of cases) {
    it(`${keyword} beside $dynamicRef (2020-12)`, async () => {
      const schema = dynamicTree(sibling);
      const args = { children: [child] };
      expect(allErrorsVerdict(schema, args)).toBe(false);
      await neverRuns(schema, args, REFUSED);
    });
  }

  it('not beside $recursiveRef (2019-09)', async () => {
    const schema = {
      $schema: D2019,
      $recursiveAnchor: true,
      type: 'object',
      properties: { children: { type: 'array', items: { $recursiveRef: '#', not: { required: ['admin'] } } } },
    };
    const args = { children: [{ admin: true }] };
    expect(allErrorsVerdict(schema, args)).toBe(false);
    await neverRuns(schema, args, REFUSED);
  });

  it("an upstream's output schema: the structured content is refused", () => {
    const schema = dynamicTree({ not: { required: ['secret'] } });
    const content = { children: [{ secret: 'leaked' }] };
    expect(allErrorsVerdict(schema, content)).toBe(false);
    let valid: boolean;
    try {
      valid = outputSchemaValidator.getValidator(schema as never)(content).valid;
    } catch (error) {
      expect(String(error)).toMatch(REFUSED);
      return;
    }
    expect(valid).toBe(false);
  });
});

describe('a tuple: contains and uniqueItems are checked on an array shorter than it', () => {
  const tuples: [string, string, string][] = [
    ['draft-07', D07, 'items'],
    ['2019-09', D2019, 'items'],
    ['2020-12', D2020, 'prefixItems'],
  ];
  for (const [name, dialect, keyword] of tuples) {
    it(`${name} ${keyword} + contains: an array without the item it must contain`, async () => {
      const schema = {
        $schema: dialect,
        type: 'object',
        properties: { steps: { type: 'array', [keyword]: [true, { type: 'string' }], contains: { const: 'audit' } } },
      };
      const args = { steps: ['rm -rf /'] };
      expect(allErrorsVerdict(schema, args)).toBe(false);
      await neverRuns(schema, args, REFUSED);
    });

    it(`${name} ${keyword} + uniqueItems: duplicates`, async () => {
      const schema = {
        $schema: dialect,
        type: 'object',
        properties: { ids: { type: 'array', [keyword]: [true, true, { type: 'string' }], uniqueItems: true } },
      };
      const args = { ids: [7, 7] };
      expect(allErrorsVerdict(schema, args)).toBe(false);
      await neverRuns(schema, args, REFUSED);
    });
  }

  it('2020-12 prefixItems + minContains: too few matching items', async () => {
    const schema = {
      $schema: D2020,
      type: 'object',
      properties: {
        approvals: {
          type: 'array',
          prefixItems: [true, { type: 'string' }],
          contains: { const: 'ok' },
          minContains: 2,
        },
      },
    };
    const args = { approvals: ['ok'] };
    expect(allErrorsVerdict(schema, args)).toBe(false);
    await neverRuns(schema, args, REFUSED);
  });

  it('draft-07: an empty array against a one-item tuple and contains', () => {
    const schema = { type: 'array', items: [{ type: 'string' }], contains: { type: 'string' } };
    expect(allErrorsVerdict(schema, [])).toBe(false);
    let ok: boolean;
    try {
      const result = compileValidator(schema)([] as never);
      if (result instanceof Promise) throw new Error('expected a synchronous result');
      ok = result.ok;
    } catch (error) {
      expect(String(error)).toMatch(REFUSED);
      return;
    }
    expect(ok).toBe(false);
  });
});
