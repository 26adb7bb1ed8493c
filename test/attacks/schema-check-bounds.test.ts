/**
 * Attack (availability, src/schema-bounds.ts): every JSON Schema check runs Ajv with `allErrors`, and a failing
 * check built one error object per problem — 300,000 empty objects (900 KB) against a `required` of three were
 * 900,000 issues (0.5–2 s, ~1 GB), a failing `$ref` or `anyOf` chain of a 1 KB schema a million or two, an upstream's
 * 150 KB answer against its own output schema held the gateway seconds; `uniqueItems` compared every pair of object
 * items (20,000 objects 6 s, a passing value too). A check now stops once it holds more than SCHEMA_ERRORS_MAX errors
 * and the value is refused; `uniqueItems` is found in linear time. Below the bound, the verdict and the issues are an
 * allErrors Ajv's (seeded differential; the verdict alone: atk-ajvdos-verdict-differential.test.ts).
 */
import { Ajv, type ValidateFunction } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import {
  boundErrors,
  SCHEMA_STEPS_MAX,
  SCHEMA_ERRORS_MAX,
  STOPPED_STEPS_ISSUE,
  STOPPED_ISSUE,
} from '../../src/schema-bounds.js';
import { ALL_ERRORS_OPTIONS } from './fixtures/allerrors-reference.js';
import { registryWith } from './fixtures/schema-tool.js';

const ITEMS = {
  type: 'object',
  properties: { items: { type: 'array', items: { type: 'object', required: ['a', 'b', 'c'] } } },
} as const;
const empties = (n: number): Record<string, unknown> => ({ items: Array.from({ length: n }, () => ({})) });
const FIRST = "/items/0 must have required property 'a'";

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** `$defs` d0 … dk, each an `allOf` / `anyOf` of two references to the one below; d0 a string. */
function chain(k: number, keyword: 'allOf' | 'anyOf'): JsonSchema {
  const defs: Record<string, unknown> = { d0: { type: 'string' } };
  for (let i = 1; i <= k; i++)
    defs[`d${i}`] = { [keyword]: [{ $ref: `#/$defs/d${i - 1}` }, { $ref: `#/$defs/d${i - 1}` }] };
  return { $defs: defs, type: 'object', properties: { x: { $ref: `#/$defs/d${k}` } } };
}

describe('a failing check stops at its bound of errors', () => {
  it('300,000 empty objects: refused with the first ten errors and why, not 900,000 issues', () => {
    const result = sync(compileValidator({ ...ITEMS })(empties(300_000)));
    expect(result.ok).toBe(false);
    expect(result.issues).toHaveLength(10);
    expect(result.issues![0]).toBe(STOPPED_ISSUE);
    expect(result.issues![1]).toBe(FIRST);
    expect(result.issues![2]).toBe("/items/0 must have required property 'b'");
  });

  it('at the bound every issue is listed; one past it, the check stops', () => {
    const validate = compileValidator({ type: 'array', items: { type: 'object', required: ['a'] } });
    const at = sync(validate(Array.from({ length: SCHEMA_ERRORS_MAX }, () => ({})) as never));
    expect(at.issues).toHaveLength(SCHEMA_ERRORS_MAX);
    expect(at.issues).not.toContain(STOPPED_ISSUE);
    const past = sync(validate(Array.from({ length: SCHEMA_ERRORS_MAX + 1 }, () => ({})) as never));
    expect(past.issues).toHaveLength(10);
    expect(past.issues![0]).toBe(STOPPED_ISSUE);
  });

  it('a failing $ref chain (2^20 applications of its leaf) stops; a passing value still passes', () => {
    const validate = compileValidator(chain(20, 'allOf'));
    const failed = sync(validate({ x: 1 }));
    expect(failed.ok).toBe(false);
    expect(failed.issues).toHaveLength(10);
    expect(failed.issues![0]).toBe(STOPPED_ISSUE);
    expect(failed.issues![1]).toBe('/x must be string');
    expect(sync(compileValidator(chain(12, 'allOf'))({ x: 'a' })).ok).toBe(true);
  });

  it('a failing anyOf chain (every branch keeps its errors) stops', () => {
    const result = sync(compileValidator(chain(20, 'anyOf'))({ x: 1 }));
    expect(result.issues).toHaveLength(10);
    expect(result.issues![0]).toBe(STOPPED_ISSUE);
  });

  it('a value valid by a later branch passes while the failing branch holds up to the bound; past it, refused', () => {
    const union = {
      type: 'object',
      properties: {
        x: {
          anyOf: [
            { type: 'array', items: { type: 'string' } },
            { type: 'array', items: { type: 'number' } },
          ],
        },
      },
    };
    const validate = compileValidator(union);
    expect(sync(validate({ x: Array.from({ length: SCHEMA_ERRORS_MAX }, (_, i) => i) })).ok).toBe(true);
    const past = sync(validate({ x: Array.from({ length: SCHEMA_ERRORS_MAX + 1 }, (_, i) => i) }));
    expect(past.ok).toBe(false);
    expect(past.issues![0]).toBe(STOPPED_ISSUE);
    // Branches that each pass reset their errors: a union per item holds a few at a time.
    const perItem = compileValidator({ type: 'array', items: { anyOf: [{ type: 'string' }, { type: 'number' }] } });
    expect(sync(perItem(Array.from({ length: 3 * SCHEMA_ERRORS_MAX }, (_, i) => i) as never)).ok).toBe(true);
  });

  it('an $async schema stops the same way: refused, not a rejected validation', async () => {
    const result = await compileValidator({ ...ITEMS, $async: true })(empties(300_000));
    expect(result.ok).toBe(false);
    expect(result.issues).toHaveLength(10);
    expect(result.issues![0]).toBe(STOPPED_ISSUE);
  });

  it("an upstream's output schema: refused, its message bounded", () => {
    const result = outputSchemaValidator.getValidator({ ...ITEMS } as never)(empties(300_000));
    expect(result.valid).toBe(false);
    expect(result.errorMessage).toContain(STOPPED_ISSUE);
    expect(result.errorMessage!.length).toBeLessThan(2000);
  });

  it('the gate refuses the 300,000-object call, naming why, and the tool does not run', async () => {
    const { registry, ran } = registryWith({ ...ITEMS });
    const [batch] = await registry.executeToolCalls([
      { id: 'c1', name: 'pay', arguments: JSON.stringify(empties(300_000)) },
    ]);
    expect(batch).toMatchObject({ isError: true });
    const result = await registry.invoke('pay', empties(300_000));
    expect(result.status).toBe('refused');
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'validation', by: 'invalid_arguments' });
    expect(result.decision.reason).toContain(STOPPED_ISSUE);
    expect(result.decision.reason).toContain(FIRST);
    expect(result.decision.reason).not.toMatch(/and \d+ more/);
    expect(ran).toEqual([]);
  });
});

describe('a check stops at its bound of steps (calls of compiled checks, weighed by their statements)', () => {
  /** A node of a tree as zod writes a discriminated union: `group` or `list`, each with children of the node. */
  const node = (kind: string) => ({
    type: 'object',
    required: ['kind'],
    properties: { kind: { const: kind }, children: { type: 'array', items: { $ref: '#/$defs/node' } } },
  });
  const TREE = {
    $defs: { node: { oneOf: [node('group'), node('list')] } },
    type: 'object',
    properties: { t: { $ref: '#/$defs/node' } },
  };
  const tree = (depth: number): unknown =>
    depth === 0 ? { kind: 'list', children: [] } : { kind: depth % 2 ? 'group' : 'list', children: [tree(depth - 1)] };

  it("a tree of a recursive union: each level's failing branch goes on into the children (2^depth calls); past the bound, refused", async () => {
    const validate = compileValidator(TREE);
    expect(sync(validate({ t: tree(14) })).ok).toBe(true);
    expect(sync(validate({ t: tree(26) }))).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    // 778 bytes of arguments held the gate ~5 s on main; now refused, and the tool does not run.
    const { registry, ran } = registryWith(TREE);
    const result = await registry.invoke('pay', { t: tree(26) } as never);
    expect(result.status).toBe('refused');
    expect(result.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect(ran).toEqual([]);
  });

  it('a passing value through a $ref chain of 2^26 calls: refused; the count starts again at each check', () => {
    const validate = compileValidator(chain(25, 'allOf'));
    expect(sync(validate({ x: 'a' }))).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    const under = compileValidator(chain(18, 'allOf')); // 2^19 calls in all: under the bound
    expect(sync(under({ x: 'a' })).ok).toBe(true);
    expect(sync(under({ x: 'a' })).ok).toBe(true);
  });

  it('errors held in every frame of a recursion (each frame under the bound of errors held): stopped by the steps', () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 13; i++)
      defs[`c${i}`] = { allOf: [{ $ref: `#/$defs/c${i + 1}` }, { $ref: `#/$defs/c${i + 1}` }] };
    defs['c13'] = { required: ['x'] };
    const schema = { $defs: defs, type: 'object', allOf: [{ $ref: '#/$defs/c0' }], properties: { a: { $ref: '#' } } };
    let value: Record<string, unknown> = {};
    for (let i = 0; i < 1000; i++) value = { a: value };
    const result = sync(compileValidator(schema)(value));
    expect(result.ok).toBe(false);
    expect(result.issues![0]).toBe(STOPPED_STEPS_ISSUE);
  });

  it('an $async schema: refused, not a rejected validation', async () => {
    const result = await compileValidator({ ...TREE, $async: true })({ t: tree(26) });
    expect(result).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });
});

describe("the bound is put into Ajv's code, never into its strings", () => {
  it('properties named like the code it changes are checked as written', () => {
    const names = ['errors++;', 'errors = vErrors.length;', '"errors++;"', '\\"errors++;'];
    const validate = compileValidator({
      type: 'object',
      required: names,
      properties: { 'errors++;': { type: 'integer' } },
    });
    const all = Object.fromEntries(names.map((name) => [name, 1]));
    expect(sync(validate(all)).ok).toBe(true);
    expect(sync(validate({ ...all, 'errors++;': 'x' })).issues).toEqual(['/errors++; must be integer']);
    const missing = sync(validate({ 'errors++;': 1 }));
    expect(missing.issues).toHaveLength(3);
  });

  it('code that changes its error count another way does not compile (never unbounded)', () => {
    expect(() => boundErrors('let errors = 0;errors += 2;return errors === 0;')).toThrow(/cannot bound/);
    expect(() => boundErrors('let errors = 0;errors = 5;')).toThrow(/cannot bound/);
    expect(() => boundErrors('let errors = 0;const s = "open;')).toThrow(/cannot bound/);
    // A function whose start (its count of steps) is not found.
    expect(() => boundErrors('function validate0(data){let vErrors = null;return true;}')).toThrow(/cannot bound/);
    const bounded = boundErrors(
      'function validate0(data){let vErrors = null;let errors = 0;errors++;const s = "errors++;*/";}',
    );
    expect(bounded).toContain(
      `if(++errors>${SCHEMA_ERRORS_MAX}){throw new RangeError(${JSON.stringify(STOPPED_ISSUE)}`,
    );
    expect(bounded).toContain(
      `.steps+=4)>${SCHEMA_STEPS_MAX}){throw new RangeError(${JSON.stringify(STOPPED_STEPS_ISSUE)}`,
    );
    expect(bounded).toContain('const s = "errors++;*\\/";');
  });
});

describe('uniqueItems in linear time', () => {
  it('2,000 distinct objects: each item read a bounded number of times (Ajv read every pair: ~4,000,000)', () => {
    const n = 2000;
    let reads = 0;
    const items = new Proxy(
      Array.from({ length: n }, (_, i) => ({ id: i, tags: ['a', { b: i % 7 }] })),
      {
        get(target, key, receiver) {
          if (typeof key === 'string' && /^\d+$/.test(key)) reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      },
    );
    const validate = compileValidator({ type: 'object', properties: { list: { type: 'array', uniqueItems: true } } });
    expect(sync(validate({ list: items })).ok).toBe(true);
    expect(reads).toBeLessThan(10 * n);
  });

  it("two '__proto__' strings are duplicates (Ajv's object of seen items had no such key: they passed)", () => {
    const validate = compileValidator({ type: 'array', items: { type: 'string' }, uniqueItems: true });
    expect(sync(validate(['__proto__', 'a', '__proto__'] as never)).issues).toEqual([
      '(root) must NOT have duplicate items (items ## 2 and 0 are identical)',
    ]);
  });

  it('an array changed between two checks is read anew (the ids a check keeps are its own)', () => {
    const validate = compileValidator({ type: 'object', properties: { list: { type: 'array', uniqueItems: true } } });
    const inner = [{ a: 1 }, { a: 2 }];
    const value = { list: [inner, [{ a: 1 }, { a: 1 }]] };
    expect(sync(validate(value)).ok).toBe(true);
    inner[1] = { a: 1 }; // now equal to the second item
    expect(sync(validate(value)).issues).toEqual([
      '/list must NOT have duplicate items (items ## 0 and 1 are identical)',
    ]);
  });

  it("2020-12: its error before unevaluatedItems's, where Ajv has it (it was added after every array keyword)", () => {
    const schema = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      prefixItems: [{}],
      unevaluatedItems: false,
      uniqueItems: true,
    };
    expect(sync(compileValidator(schema)([1, 1] as never)).issues).toEqual([
      '(root) must NOT have duplicate items (items ## 0 and 1 are identical)',
      '(root) must NOT have more than 1 items',
    ]);
  });

  it("items that are not plain data are compared by Ajv's equal", () => {
    const validate = compileValidator({ type: 'object', properties: { list: { type: 'array', uniqueItems: true } } });
    expect(sync(validate({ list: [new Date(5), { a: 1 }, new Date(5)] })).issues).toEqual([
      '/list must NOT have duplicate items (items ## 0 and 2 are identical)',
    ]);
    expect(sync(validate({ list: [new Date(5), new Date(6), { a: undefined }, {}] })).ok).toBe(true);
  });
});

// ---- the differential: below the bound, the same verdict and issues as an allErrors Ajv ----

const withFormats = (ajv: Ajv): Ajv => formats.default(ajv as never, { mode: 'full', keywords: false }) as never;
const reference07 = withFormats(new Ajv(ALL_ERRORS_OPTIONS));
const reference2020 = withFormats(new Ajv2020(ALL_ERRORS_OPTIONS) as unknown as Ajv);

const names = fc.constantFrom('a', 'b', 'c', 'd');
const leaf: fc.Arbitrary<JsonSchema> = fc.oneof(
  fc.record({ type: fc.constantFrom('string', 'number', 'integer', 'boolean', 'null', 'object', 'array') }),
  fc.record({ type: fc.constant(['string', 'number', 'null']) }),
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
        items: fc.oneof(tie('s'), leaf),
        minItems: fc.nat(2),
        maxItems: fc.nat(6),
        uniqueItems: fc.boolean(),
      },
      { requiredKeys: ['type'] },
    ),
    fc.record({ uniqueItems: fc.constant(true), contains: tie('s') }, { requiredKeys: ['uniqueItems'] }),
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
// Small values with many equal ones (uniqueItems): few scalars, -0, objects with their keys in either order.
const valueArb = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constantFrom(0, -0, 1, 2, 1.5, -1),
    fc.constantFrom('a', 'ab', 'b', '1', 'x@y.z', '2020-01-01', 'http://e.x/', ''),
    fc.boolean(),
    fc.constant(null),
    fc.constantFrom({ a: 1, b: 2 }, { b: 2, a: 1 }, { a: [] }),
    fc.array(tie('v'), { maxLength: 5 }),
    fc.dictionary(fc.constantFrom('a', 'b', 'c', 'd', 'cc'), tie('v'), { maxKeys: 3, noNullPrototype: true }),
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
    const issues = valid
      ? undefined
      : ref.errors!.map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
    expect({ schema, value, ok: result.ok, issues: result.issues }).toEqual({ schema, value, ok: valid, issues });
  }
}

describe('below the bound: the same verdict and issues as an allErrors Ajv (seeded)', () => {
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
