/**
 * Attack (fail open) on branch `ajvdos`'s first-error verdict (`allErrors: false`; reverted, main keeps `allErrors:
 * true`, so this passes on main and guards a switch): a seeded differential of the gate's verdict against
 * an allErrors Ajv of the same dialect and options (main's verdict), over draft-07, 2019-09 and 2020-12 schemas with
 * tuples (`items: [...]`, `prefixItems`), `contains` / `minContains` / `maxContains`, `uniqueItems`, `unevaluated*`,
 * `dependentSchemas`, `propertyNames`, `if` / `then` / `else`, `$ref` with siblings and a root-anchored `$dynamicRef`
 * with siblings. Every value the allErrors Ajv refuses, the gate refuses. Without tuples and `$dynamicRef` 12,000 runs
 * (tsx, seeds 1–3 and 11–13) found no difference; with them, each seed here finds one (see
 * atk-ajvdos-first-error-verdict.test.ts). The gate's own formats (`url`, `byte`, `int64`, `float`) are left out: the
 * reference does not have them, and a format does not depend on allErrors.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { ALL_ERRORS_OPTIONS, DIALECT_URI } from './fixtures/allerrors-reference.js';

const OPTIONS = ALL_ERRORS_OPTIONS;
const withFormats = (ajv: Ajv): Ajv => formats.default(ajv as never, { mode: 'full', keywords: false }) as never;
const DIALECTS = {
  'draft-07': {
    uri: DIALECT_URI['draft-07'],
    ajv: withFormats(new Ajv(OPTIONS)),
    tuple: 'items',
  },
  '2019-09': {
    uri: DIALECT_URI['2019-09'],
    ajv: withFormats(new Ajv2019(OPTIONS) as unknown as Ajv),
    tuple: 'items',
  },
  '2020-12': {
    uri: DIALECT_URI['2020-12'],
    ajv: withFormats(new Ajv2020(OPTIONS) as unknown as Ajv),
    tuple: 'prefixItems',
  },
} as const;
type Dialect = keyof typeof DIALECTS;

const names = fc.constantFrom('a', 'b', 'c');
const leaf: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(true, false, {}),
  fc.record({ type: fc.constantFrom('string', 'number', 'integer', 'object', 'array', 'null') }),
  fc.record({ const: fc.constantFrom(0, 1, 'a', null) }),
  fc.record({ enum: fc.constant([0, 'a']) }),
  fc.record({ type: fc.constant('string'), format: fc.constantFrom('email', 'date', 'uuid', 'date-time', 'ipv4') }),
  fc.record({ minimum: fc.integer({ min: -1, max: 2 }) }),
  fc.record({ maxLength: fc.nat(2), pattern: fc.constantFrom('^a', 'b') }),
);

/** Subschemas of `dialect`; `dynamic`: a `$dynamicRef` (2020-12) or `$recursiveRef` (2019-09) to the root. */
function schemas(tuple: string, dynamic: Record<string, unknown> | undefined): fc.Arbitrary<unknown> {
  return fc.letrec<{ s: unknown }>((tie) => ({
    s: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      leaf,
      fc.record(
        {
          properties: fc.dictionary(names, tie('s'), { maxKeys: 2, noNullPrototype: true }),
          required: fc.uniqueArray(names, { maxLength: 2 }),
          additionalProperties: fc.oneof(fc.boolean(), tie('s')),
          propertyNames: fc.record({ maxLength: fc.nat(1) }),
          dependentSchemas: fc.dictionary(names, tie('s'), { maxKeys: 1, noNullPrototype: true }),
          unevaluatedProperties: fc.oneof(fc.boolean(), tie('s')),
        },
        { requiredKeys: [] },
      ),
      fc.record(
        {
          items: tie('s'),
          maxItems: fc.nat(3),
          uniqueItems: fc.boolean(),
          contains: tie('s'),
          minContains: fc.nat(2),
          maxContains: fc.nat(3),
        },
        { requiredKeys: [] },
      ),
      fc.record(
        {
          [tuple]: fc.array(tie('s'), { minLength: 1, maxLength: 3 }),
          contains: tie('s'),
          minContains: fc.nat(2),
          uniqueItems: fc.boolean(),
        },
        { requiredKeys: [tuple] },
      ),
      fc.record({ anyOf: fc.array(tie('s'), { minLength: 1, maxLength: 2 }) }),
      fc.record({ oneOf: fc.array(tie('s'), { minLength: 1, maxLength: 2 }) }),
      fc.record({ allOf: fc.array(tie('s'), { minLength: 1, maxLength: 2 }) }),
      fc.record({ not: tie('s') }),
      fc.record({ if: tie('s'), then: tie('s'), else: tie('s') }, { requiredKeys: ['if'] }),
      fc.record(
        { $ref: fc.constant('#/$defs/d'), not: tie('s'), anyOf: fc.array(tie('s'), { minLength: 1, maxLength: 2 }) },
        { requiredKeys: ['$ref'] },
      ),
      ...(dynamic === undefined
        ? []
        : [
            fc.record({
              type: fc.constant('array'),
              items: fc
                .record(
                  {
                    not: tie('s'),
                    const: fc.constantFrom<unknown>({}, { a: 1 }),
                    allOf: fc.array(tie('s'), { maxLength: 1 }),
                  },
                  { requiredKeys: [] },
                )
                .map((siblings) => ({ ...dynamic, ...siblings })),
            }),
          ]),
    ),
  })).s;
}

const values = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small' },
    fc.constantFrom<unknown>(0, 1, 2, -1, 1.5, 'a', 'b', 'ab', '', 'x@y.z', '2020-01-01', null, true),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'bb'), tie('v'), { maxKeys: 3, noNullPrototype: true }),
  ),
})).v;

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** The gate refuses what the allErrors Ajv refuses (and passes what it passes), where both read the schema. */
function agrees(dialect: Dialect, schema: JsonSchema, inputs: unknown[]): void {
  const { ajv } = DIALECTS[dialect];
  let reference: ValidateFunction;
  let validate: ReturnType<typeof compileValidator>;
  try {
    reference = ajv.compile(structuredClone(schema));
    validate = compileValidator(structuredClone(schema));
  } catch {
    return; // one of them does not compile it (the gate refuses some schemas by design)
  } finally {
    ajv.removeSchema();
  }
  for (const input of inputs) {
    let expected: boolean;
    try {
      expected = reference(structuredClone(input)) as boolean;
    } catch {
      continue; // a schema that applies itself to the same value forever
    }
    let ok: boolean;
    try {
      ok = sync(validate(structuredClone(input) as Record<string, unknown>)).ok;
    } catch {
      ok = false; // the gate refuses a validation that throws
    }
    expect({ schema, input, ok }).toEqual({ schema, input, ok: expected });
  }
}

function differential(dialect: Dialect, seed: number): void {
  const { uri, tuple } = DIALECTS[dialect];
  const dynamic =
    dialect === '2020-12' ? { $dynamicRef: '#node' } : dialect === '2019-09' ? { $recursiveRef: '#' } : undefined;
  const anchor =
    dialect === '2020-12' ? { $dynamicAnchor: 'node' } : dialect === '2019-09' ? { $recursiveAnchor: true } : {};
  const sub = schemas(tuple, dynamic);
  const root = fc.record({ body: sub, def: sub }).map(({ body, def }): JsonSchema => ({
    ...(typeof body === 'object' && body !== null ? body : { allOf: [body] }),
    $schema: uri,
    ...anchor,
    $defs: { d: def },
  }));
  fc.assert(
    fc.property(root, fc.array(values, { minLength: 1, maxLength: 5 }), (schema, inputs) =>
      agrees(dialect, schema, inputs),
    ),
    { seed, numRuns: 400 },
  );
}

describe('the verdict is an allErrors Ajv verdict (seeded differential)', () => {
  it('draft-07', () => differential('draft-07', 20261206));
  it('2019-09', () => differential('2019-09', 20261207));
  it('2020-12', () => differential('2020-12', 20261208));
});
