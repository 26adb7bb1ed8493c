/**
 * Attack (availability, src/schema-enum.ts): Ajv's `enum` compares the value with each member by deep equality (a
 * loop of `equal(data, member)` from 200 members, `data === m1 || …` below), so a schema of 20,000 object members and
 * a value of 100,000 items each checked against it made 2·10^9 comparisons (~51 s CPU a check on this machine, tsx;
 * one request, or one upstream answer). The gate decides membership through a table of the members' structures built
 * at compile time: each item costs its own size. Below, the cost is counted (calls of Ajv's `equal`, reads of the
 * value), and a seeded differential holds the verdict and the errors to Ajv's own `enum` and `const`.
 */
import { createRequire } from 'node:module';
import { Ajv, type ErrorObject } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { counted } from './fixtures/counted-reads.js';
import { outputSchemaValidator } from '../../src/mcp/output-schemas.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { newCheck } from '../../src/schema-bounds.js';
import { ajvFor } from '../../src/schema-dialects.js';
import { ALL_ERRORS_OPTIONS } from './fixtures/allerrors-reference.js';

// Ajv's generated code calls the `default` of its runtime `equal` module, read at each compilation: counted here.
const equalModule = createRequire(import.meta.url)('ajv/dist/runtime/equal.js') as {
  default: (a: unknown, b: unknown) => boolean;
};
const ajvEqual = equalModule.default;
let equalCalls = 0;
equalModule.default = Object.assign((a: unknown, b: unknown) => (equalCalls++, ajvEqual(a, b)), ajvEqual);

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

describe('enum membership costs the value, not members × value', () => {
  const n = 2000;
  const members = Array.from({ length: n }, (_, i) => ({ id: i, kind: 'k' }));

  it('2,000 object members × 2,000 items (keys in another order): no call of equal, each item read a bounded number of times', () => {
    const validate = compileValidator({ type: 'array', items: { enum: members } } as JsonSchema);
    const items = Array.from({ length: n }, (_, i) => ({ kind: 'k', id: (i * 7) % n }));
    const count = { n: 0 };
    const value = counted(items, count);
    equalCalls = 0;
    expect(sync(validate(value as never)).ok).toBe(true);
    // Ajv's loop: ~2,000,000 calls of equal (each member until the equal one).
    expect(equalCalls).toBe(0);
    expect(count.n).toBeLessThan(30 * n);
  });

  it('2,000 string members × 2,000 strings, and the same refused: no call of equal', () => {
    const validate = compileValidator({
      type: 'array',
      items: { enum: Array.from({ length: n }, (_, i) => `s${i}`) },
    } as JsonSchema);
    equalCalls = 0;
    expect(sync(validate(Array.from({ length: n }, (_, i) => `s${n - 1 - i}`) as never)).ok).toBe(true);
    const refused = sync(validate(['s1', 's2000', 7] as never));
    expect(refused.issues).toEqual([
      '/1 must be equal to one of the allowed values',
      '/2 must be equal to one of the allowed values',
    ]);
    expect(equalCalls).toBe(0);
  });

  it.each([
    ['enum', (member: unknown) => ({ enum: [member, 'x'] })],
    ['const', (member: unknown) => ({ const: member })],
  ])(
    'a deep member of %s applied at every level of a deep value (a recursive schema): each level read once',
    (_keyword, keyword) => {
      const depth = 500;
      let member: unknown = [];
      for (let i = 0; i < depth; i++) member = [member];
      const schema = { anyOf: [keyword(member), { type: 'array', items: { $ref: '#' } }] };
      const validate = compileValidator(schema as JsonSchema);
      let data: unknown = [];
      for (let i = 0; i < depth - 1; i++) data = [data];
      const count = { n: 0 };
      equalCalls = 0;
      expect(sync(validate(counted(data, count) as never)).ok).toBe(true);
      // Ajv: equal at each level walks the level's whole subtree (~depth² / 2 levels read).
      expect(count.n).toBeLessThan(20 * depth);
      expect(equalCalls).toBe(0);
    },
  );

  it('a value made of parts of a member, bigger than every member: read once for the check, not at each of 20 keywords', () => {
    // The member: an array of 200 zeros and 199 zeros beside it. The value: 200 arrays of 200 zeros, each part found.
    const w = 200;
    const zeros = (): number[] => Array.from({ length: w }, () => 0);
    const member = [zeros(), ...zeros().slice(1)];
    const validate = compileValidator({
      allOf: Array.from({ length: 20 }, () => ({ enum: [member, 'x'] })),
    } as JsonSchema);
    const count = { n: 0 };
    const result = sync(validate(counted(Array.from({ length: w }, zeros), count) as never));
    expect(result.issues).toHaveLength(20);
    // Ajv's equal compared the last items first (one read each). Here the value is measured once for the check (its
    // parts and levels, kept for every keyword): larger than the member, no keyword walks it. Read at each keyword
    // up to the member's size: 20 × ~2w² (1.6M); walked whole at each: more.
    expect(count.n).toBeLessThan(3 * w * (w + 1));
  });

  it("a value deeper than every member is none, its walk stopped at the members' depth (not the stack)", () => {
    // A wide member (10,002 parts) two levels deep; a value 20,000 levels deep, an array as the other branch allows.
    const member = [...Array.from({ length: 10_000 }, () => 0), [[]]];
    const validate = compileValidator({ anyOf: [{ enum: [member] }, { type: 'array' }] } as JsonSchema);
    let data: unknown = [];
    for (let i = 0; i < 20_000; i++) data = [data];
    expect(sync(validate(data as never)).ok).toBe(true);
  });

  it("the gateway's output-schema path refuses a non-member and passes a member with its keys in another order", () => {
    const validate = outputSchemaValidator.getValidator({
      type: 'object',
      properties: { k: { enum: [{ a: 1, b: [1, { c: null }] }, 'x'] } },
    } as never);
    expect(validate({ k: { b: [1.0, { c: null }], a: 1 } }).valid).toBe(true);
    expect(validate({ k: { b: [1, { c: 0 }], a: 1 } })).toMatchObject({
      valid: false,
      errorMessage: '/k must be equal to one of the allowed values',
    });
  });
});

describe('enum and const as JSON Schema compares, where Ajv did not', () => {
  const parsed = (text: string): unknown => JSON.parse(text);

  it('an own __proto__ key is data: equal in any key order, refused when it differs', () => {
    const validate = compileValidator({ enum: [parsed('{"__proto__":{"a":1},"b":2}')] } as JsonSchema);
    expect(sync(validate(parsed('{"b":2,"__proto__":{"a":1}}') as never)).ok).toBe(true);
    expect(sync(validate(parsed('{"b":2,"__proto__":{"a":2}}') as never)).ok).toBe(false);
    expect(sync(validate(parsed('{"b":2}') as never)).ok).toBe(false);
  });

  it("an own constructor key holding an object is data (Ajv's equal compared it by identity: a member was refused)", () => {
    const member = '{"constructor":{"a":[1]},"b":1}';
    const validate = compileValidator({ enum: [parsed(member), 'x'] } as JsonSchema);
    expect(sync(validate(parsed('{"b":1,"constructor":{"a":[1]}}') as never)).ok).toBe(true);
    expect(sync(validate(parsed('{"b":1,"constructor":{"a":[2]}}') as never)).ok).toBe(false);
    const konst = compileValidator({ const: parsed(member) } as JsonSchema);
    expect(sync(konst(parsed(member) as never)).ok).toBe(true);
  });

  it("own valueOf and toString keys are data (Ajv's equal called them, and threw)", () => {
    const validate = compileValidator({ enum: [{ valueOf: 1, toString: 'a' }] } as JsonSchema);
    expect(sync(validate(parsed('{"toString":"a","valueOf":1}') as never)).ok).toBe(true);
    expect(sync(validate(parsed('{"valueOf":2}') as never)).issues).toEqual([
      '(root) must be equal to one of the allowed values',
    ]);
  });

  it('numbers: 1 and 1.0, -0 and 0, an upstream 1e400 (Infinity) are themselves', () => {
    const validate = compileValidator(parsed('{"enum":[1.0,-0,1e400,{"n":[-0,1e400]}]}') as JsonSchema);
    for (const text of ['1', '0', '-0', '1e999', '{"n":[0,1e401]}'])
      expect(sync(validate(parsed(text) as never)).ok, text).toBe(true);
    for (const text of ['-1e999', '1.5', '{"n":[0,-1e401]}'])
      expect(sync(validate(parsed(text) as never)).ok, text).toBe(false);
  });
});

// ---- the differential: Ajv's own `enum` and `const` against the gate's, the verdict and every error ----

const reference07 = new Ajv(ALL_ERRORS_OPTIONS);
const reference2020 = new Ajv2020(ALL_ERRORS_OPTIONS) as unknown as Ajv;

const LONG = 'x'.repeat(300);
const scalar = fc.constantFrom<unknown>(
  0,
  -0,
  1,
  1.5,
  -1,
  2,
  Infinity,
  -Infinity,
  'a',
  'b',
  '',
  '1',
  '__proto__',
  'constructor',
  null,
  true,
  false,
  `${LONG}a`,
  `${LONG}b`,
);
/** Plain JSON data: objects built by Object.fromEntries (an own `__proto__` key is data, as JSON.parse makes it). */
const plain = fc.letrec<{ v: unknown }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.array(tie('v'), { maxLength: 3 }),
    fc
      .uniqueArray(fc.tuple(fc.constantFrom('a', 'b', 'c', '__proto__', 'constructor'), tie('v')), {
        maxLength: 3,
        selector: ([key]) => key,
      })
      // Ajv's equal compares an own `constructor` by identity: a scalar there is compared alike by both.
      .map((entries) =>
        Object.fromEntries(
          entries.map(([key, v]) => [key, key === 'constructor' && typeof v === 'object' && v !== null ? 1 : v]),
        ),
      ),
  ),
})).v;

/** The same data, every object's keys in reverse order (1.0 is 1: JavaScript has one of them). */
function reordered(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reordered);
  if (typeof value !== 'object' || value === null || Object.getPrototypeOf(value) !== Object.prototype) return value;
  return Object.fromEntries(
    Object.entries(value)
      .reverse()
      .map(([key, v]) => [key, reordered(v)]),
  );
}

/** Data that is not plain, compared by Ajv's equal: a getter, no prototype, a Date, a hole, a class instance. */
function unplain(value: unknown, kind: number): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    if (kind === 0) {
      const holed = [...value, 0];
      delete holed[holed.length - 1];
      return holed;
    }
    return value.map((item) => unplain(item, kind));
  }
  if (kind === 0) {
    const getters = {};
    for (const [key, v] of Object.entries(value))
      Object.defineProperty(getters, key, { get: () => v, enumerable: true });
    return getters;
  }
  if (kind === 1) return Object.assign(Object.create(null) as object, value);
  if (kind === 2) return new Date(0);
  return Object.assign(new (class Row {})(), value);
}

const values = (members: unknown[]): fc.Arbitrary<unknown> =>
  fc.oneof(
    plain,
    fc.constantFrom(...members).map(reordered),
    fc.tuple(fc.constantFrom(...members), fc.nat(3)).map(([member, kind]) => unplain(member, kind)),
  );

/** `enum` members: a few, or past Ajv's `loopEnum` (200: Ajv compares each by its `equal` then, NaN too). */
const membersArb = fc
  .tuple(fc.array(plain, { minLength: 1, maxLength: 6 }), fc.boolean(), fc.boolean())
  .map(([members, many, nan]) => [
    ...members,
    ...(nan ? [NaN, { n: NaN }] : []),
    ...(many ? Array.from({ length: 200 }, (_, i) => `pad${i}`) : []),
  ]);

const placed = (keyword: fc.Arbitrary<Record<string, unknown>>): fc.Arbitrary<JsonSchema> =>
  fc.oneof(
    keyword,
    keyword.map((k) => ({ type: 'array', items: k, minItems: 1 })),
    keyword.map((k) => ({ type: 'object', properties: { a: k }, additionalProperties: k, required: ['a'] })),
    keyword.map((k) => ({ anyOf: [k, { type: 'string' }] })),
    keyword.map((k) => ({ not: k })),
    keyword.map((k) => ({ ...k, type: 'object', minProperties: 2 })),
    keyword.map((k) => ({ ...k, const: 1, minimum: 2 })),
  );

/** What a compiled check says of `data`: its verdict and errors, or what it threw. */
function outcome(check: ((data: unknown) => unknown) | Error, data: unknown): unknown {
  if (check instanceof Error) return 'not compiled';
  newCheck(data);
  try {
    const valid = check(data);
    return [valid, (check as unknown as { errors: ErrorObject[] | null }).errors];
  } catch (error) {
    return ['threw', String(error)];
  }
}

function compiled(ajv: Ajv, schema: JsonSchema): ((data: unknown) => unknown) | Error {
  try {
    return ajv.compile(schema);
  } catch (error) {
    return error as Error;
  } finally {
    ajv.removeSchema(schema);
  }
}

/** The gate's Ajv and the reference compile `schema` alike (or neither) and say the same of each value, errors and all. */
function same(placedSchema: JsonSchema, inputs: unknown[], reference: Ajv, dialect?: string): void {
  const schema = dialect === undefined ? placedSchema : { $schema: dialect, ...placedSchema };
  const ours = compiled(ajvFor(schema) as Ajv, schema);
  const theirs = compiled(reference, schema);
  expect(ours instanceof Error).toBe(theirs instanceof Error);
  for (const input of inputs)
    for (const data of [input, { a: input, b: input }, [input, input]])
      expect({ schema, data, out: outcome(ours, data) }).toEqual({ schema, data, out: outcome(theirs, data) });
}

describe("the same verdict and errors as Ajv's own enum and const (seeded)", () => {
  const run = (reference: Ajv, seed: number, dialect?: string) =>
    fc.assert(
      fc.property(
        membersArb.chain((members) =>
          fc.tuple(
            placed(
              fc.oneof(
                fc.constant({ enum: members }),
                fc.constantFrom(...members.slice(0, 6)).map((member) => ({ const: member })),
              ),
            ),
            fc.array(values(members.slice(0, 8)), { minLength: 1, maxLength: 6 }),
          ),
        ),
        ([schema, inputs]) => same(schema, inputs, reference, dialect),
      ),
      { seed, numRuns: 300 },
    );

  it('draft-07', () => run(reference07, 20261206));
  it('2020-12', () => run(reference2020, 20261207, 'https://json-schema.org/draft/2020-12/schema'));

  it('an empty enum and a $data enum compile in neither', () => {
    for (const schema of [{ enum: [] }, { enum: { $data: '1/a' } }]) {
      expect(() => reference07.compile(schema)).toThrow();
      expect(() => compileValidator(schema as JsonSchema)).toThrow();
    }
  });
});
