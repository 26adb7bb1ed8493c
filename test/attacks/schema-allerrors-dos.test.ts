/**
 * Attack (availability, src/schema.ts / src/schema-issues.ts): every JSON Schema was compiled with Ajv's `allErrors`,
 * and a failing check built one error per problem: 300,000 empty objects (900 KB) against a `required` of three were
 * 900,000 issues in one call (most of a second of the event loop), and an upstream's 150 KB answer against its own
 * output schema held the gateway 5–9 s and 1.5 GB. The verdict's check now stops at the first error; every issue is
 * listed, as before, only for a small value (an allErrors check compiled on the first failure), a larger one gets its
 * first error and a note. On seeded random schemas and values, the verdict and the issues of a small value are an
 * allErrors Ajv's.
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { countValues, ISSUE_VALUES, ISSUE_WORK } from '../../src/schema-issues.js';
import { linearRegExp } from '../../src/schema-regexp.js';
import { registryWith } from './fixtures/schema-tool.js';

const ITEMS = {
  type: 'object',
  properties: { items: { type: 'array', items: { type: 'object', required: ['a', 'b', 'c'] } } },
} as const;
const empties = (n: number): Record<string, unknown> => ({ items: Array.from({ length: n }, () => ({})) });
const FIRST = "/items/0 must have required property 'a'";
const NOTE = /^further issues are not listed: the value holds more than (\d+) values$/;
const limitOf = (note: string): number => Number(NOTE.exec(note)![1]);
const LIMIT = Math.min(ISSUE_VALUES, Math.floor(ISSUE_WORK / 11));

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

describe('a failing check on a large value', () => {
  it('300,000 empty objects: the first error and a note, not 900,000 issues', () => {
    const result = sync(compileValidator({ ...ITEMS })(empties(300_000)));
    expect(result).toEqual({
      ok: false,
      issues: [FIRST, `further issues are not listed: the value holds more than ${LIMIT} values`],
    });
  });

  it('lists every issue up to the limit of values, and none past it (the allErrors check is not run)', () => {
    const validate = compileValidator({ ...ITEMS });
    const limit = limitOf(sync(validate(empties(300_000))).issues![1]!);
    // The schema's weight: 11 values in its JSON tree.
    expect(limit).toBe(Math.min(ISSUE_VALUES, Math.floor(ISSUE_WORK / 11)));
    // 1 (root) + 1 (the array) + n objects.
    const at = sync(validate(empties(limit - 2)));
    expect(at.issues).toHaveLength(3 * (limit - 2));
    expect(at.issues![1]).toBe("/items/0 must have required property 'b'");
    const past = sync(validate(empties(limit - 1)));
    expect(past.issues).toEqual([FIRST, `further issues are not listed: the value holds more than ${limit} values`]);
  });

  it('a large schema lowers the limit: values × schema weight stays bounded', () => {
    const names = Array.from({ length: 1000 }, (_, i) => `p${i}`);
    const validate = compileValidator({ type: 'array', items: { type: 'object', required: names } });
    // 600 empty objects were 600,000 issues under allErrors.
    const large = sync(validate(Array.from({ length: 600 }, () => ({})) as unknown as Record<string, unknown>));
    expect(large.issues).toHaveLength(2);
    const limit = limitOf(large.issues![1]!);
    // The errors listed in full stay under ISSUE_WORK: 1,000 per object.
    expect(limit * 1000).toBeLessThanOrEqual(ISSUE_WORK);
    const small = sync(validate(Array.from({ length: limit - 1 }, () => ({})) as unknown as Record<string, unknown>));
    expect(small.issues).toHaveLength(1000 * (limit - 1));
  });

  it('an $async schema is bounded the same way, and a small value gets every issue', async () => {
    const validate = compileValidator({ ...ITEMS, $async: true });
    const large = await validate(empties(300_000));
    expect(large.ok).toBe(false);
    expect(large.issues).toHaveLength(2);
    expect(large.issues![0]).toBe(FIRST);
    // Its weight is 12 (`$async: true` counted).
    expect(limitOf(large.issues![1]!)).toBe(Math.min(ISSUE_VALUES, Math.floor(ISSUE_WORK / 12)));
    expect((await validate(empties(2))).issues).toEqual(sync(compileValidator({ ...ITEMS })(empties(2))).issues);
  });

  it('an upstream output schema: the error message is bounded', () => {
    const check = outputSchemaValidator.getValidator({ ...ITEMS } as never);
    const result = check(empties(300_000));
    expect(result.valid).toBe(false);
    expect(result.errorMessage!.length).toBeLessThan(200);
  });

  it('the gate refuses the 300,000-object call with a clear reason', async () => {
    const { registry, ran } = registryWith({ ...ITEMS });
    const text = JSON.stringify(empties(300_000));
    const [batch] = await registry.executeToolCalls([{ id: 'c1', name: 'pay', arguments: text }]);
    expect(batch).toMatchObject({ isError: true });
    const result = await registry.invoke('pay', empties(300_000));
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'validation', by: 'invalid_arguments' });
    expect(result.decision.reason).toContain(FIRST);
    expect(result.decision.reason).toContain(
      `further issues are not listed: the value holds more than ${LIMIT} values`,
    );
    expect(result.decision.reason).not.toContain('more;');
    expect(ran).toEqual([]);
  });
});

describe('counting a value', () => {
  it('stops at the limit without reading past it (a huge array: no element read)', () => {
    let reads = 0;
    const big = new Proxy(new Array<unknown>(1_000_000).fill(0), {
      getOwnPropertyDescriptor(target, key) {
        reads++;
        return Reflect.getOwnPropertyDescriptor(target, key);
      },
    });
    expect(countValues(big, 10_000)).toBe('large');
    expect(reads).toBe(0);
  });

  it('a cycle is counted round until the limit', () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic['self'] = cyclic;
    expect(countValues(cyclic, 100)).toBe('large');
  });

  it('a getter is not called, an inherited key or a throwing trap is not read', () => {
    let called = 0;
    const withGetter = {
      get x() {
        called++;
        return 1;
      },
    };
    expect(countValues({ a: withGetter }, 100)).toBe('unread');
    expect(called).toBe(0);
    expect(countValues(Object.create({ inherited: 1 }) as object, 100)).toBe('unread');
    const hostile = new Proxy(
      {},
      {
        ownKeys() {
          throw new Error('trap');
        },
      },
    );
    expect(countValues(hostile, 100)).toBe('unread');
    expect(countValues({ a: [1, 'b', null, { c: true }] }, 100)).toBe('within');
  });

  it('a value not plain data gets the first error and a note, its getter run by the verdict check only', () => {
    let called = 0;
    const value = {
      get amount() {
        called++;
        return 'x';
      },
    };
    const schema = { type: 'object', properties: { amount: { type: 'integer' } } };
    new Ajv({ strict: false }).compile(schema)(value);
    const byAjv = called;
    called = 0;
    const result = sync(compileValidator({ ...schema })(value));
    expect(result.issues).toEqual([
      '/amount must be integer',
      'further issues are not listed: the value is not plain data',
    ]);
    expect(called).toBe(byAjv);
  });
});

// ---- the differential: the same verdict and, for small values, the same issues as an allErrors Ajv ----

const OPTIONS = {
  allErrors: true,
  strict: false,
  coerceTypes: false,
  useDefaults: false,
  code: { regExp: linearRegExp },
};
const reference07 = formats.default(new Ajv(OPTIONS) as never, { mode: 'full', keywords: false }) as unknown as Ajv;
const reference2020 = formats.default(new Ajv2020(OPTIONS) as never, {
  mode: 'full',
  keywords: false,
}) as unknown as Ajv;

const names = fc.constantFrom('a', 'b', 'c', 'd');
const leaf: fc.Arbitrary<JsonSchema> = fc.oneof(
  fc.record({ type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'null', 'object', 'array') }),
  fc.record({ type: fc.constant('string'), minLength: fc.nat(3), pattern: fc.constantFrom('^a', 'b$', '^[a-c]+$') }),
  fc.record({ type: fc.constant('string'), format: fc.constantFrom('email', 'date', 'uuid', 'uri') }),
  fc.record({ minimum: fc.integer({ min: -2, max: 2 }), multipleOf: fc.constantFrom(1, 2, 0.5) }),
  fc.record({ enum: fc.array(fc.oneof(fc.integer({ min: 0, max: 3 }), names, fc.constant(null)), { minLength: 1 }) }),
  fc.record({ const: fc.oneof(fc.integer({ min: 0, max: 2 }), names) }),
);
const schemaArb: fc.Arbitrary<JsonSchema> = fc.letrec<{ s: JsonSchema }>((tie) => ({
  s: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record(
      {
        type: fc.constant('object'),
        properties: fc.dictionary(names, tie('s'), { maxKeys: 3, noNullPrototype: true }),
        required: fc.uniqueArray(names, { maxLength: 3 }),
        additionalProperties: fc.oneof(fc.boolean(), tie('s')),
        minProperties: fc.nat(2),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record(
      {
        type: fc.constant('array'),
        items: tie('s'),
        minItems: fc.nat(2),
        maxItems: fc.nat(4),
        uniqueItems: fc.boolean(),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record({ anyOf: fc.array(tie('s'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ oneOf: fc.array(tie('s'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ allOf: fc.array(tie('s'), { minLength: 1, maxLength: 3 }) }),
    fc.record({ not: tie('s') }),
    fc.record({ if: tie('s'), then: tie('s'), else: tie('s') }, { requiredKeys: ['if'] }),
    fc.record({
      contains: tie('s'),
      dependencies: fc.dictionary(names, fc.uniqueArray(names, { maxLength: 2 }), { noNullPrototype: true }),
    }),
  ),
})).s;
const schema2020: fc.Arbitrary<JsonSchema> = fc.record(
  {
    $schema: fc.constant('https://json-schema.org/draft/2020-12/schema'),
    type: fc.constant('object'),
    properties: fc.dictionary(names, schemaArb, { maxKeys: 2, noNullPrototype: true }),
    patternProperties: fc.constant({ '^c': { type: 'integer' } }),
    dependentRequired: fc.dictionary(names, fc.uniqueArray(names, { maxLength: 2 }), { noNullPrototype: true }),
    unevaluatedProperties: fc.oneof(fc.boolean(), schemaArb),
    prefixItems: fc.array(schemaArb, { maxLength: 2 }),
  },
  { requiredKeys: ['$schema'] },
);
const valueArb = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer({ min: -3, max: 4 }), fc.double({ min: -2, max: 2, noNaN: true })),
    fc.constantFrom('a', 'ab', 'b', 'abc', 'x@y.z', '2020-01-01', 'http://e.x/', ''),
    fc.boolean(),
    fc.constant(null),
    fc.array(tie('v'), { maxLength: 4 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'cc', 'e'), tie('v'), { maxKeys: 4, noNullPrototype: true }),
  ),
})).v;

function same(schema: JsonSchema, values: unknown[], reference: Ajv): void {
  let ref: ValidateFunction;
  try {
    ref = reference.compile(schema);
  } catch {
    return; // the reference does not compile it (a 2020-12 tuple it refuses): nothing to compare
  } finally {
    reference.removeSchema(schema);
  }
  const validate = compileValidator(schema);
  for (const value of values) {
    const result = sync(validate(value as Record<string, unknown>));
    const valid = ref(value);
    expect(result.ok).toBe(valid);
    if (!valid)
      expect(result.issues).toEqual(
        ref.errors!.map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`),
      );
  }
}

describe('the same verdict and issues as an allErrors Ajv (seeded)', () => {
  it('draft-07 schemas', () => {
    fc.assert(
      fc.property(schemaArb, fc.array(valueArb, { minLength: 1, maxLength: 6 }), (schema, values) =>
        same(schema, values, reference07),
      ),
      { seed: 20261206, numRuns: 400 },
    );
  });

  it('2020-12 schemas (unevaluatedProperties, prefixItems, dependentRequired)', () => {
    fc.assert(
      fc.property(schema2020, fc.array(valueArb, { minLength: 1, maxLength: 6 }), (schema, values) =>
        same(schema, values, reference2020),
      ),
      { seed: 20261207, numRuns: 300 },
    );
  });
});
