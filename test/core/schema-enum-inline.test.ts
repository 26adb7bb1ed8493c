/**
 * src/schema-enum.ts: an `enum` of fewer than Ajv's `loopEnum` (200) scalar members, and a scalar `const`, whose
 * strings hold at most INLINE_TEXT_MAX characters, are decided by Ajv's own code (`data === m1 || …`, `m !== data`)
 * instead of the table of members (issue 25: the table's call and Set look-up were ~6 ns of a ~10 ns check). A seeded
 * differential: for random members and values, the gate decides each as the table does (the same list with an object
 * member beside, which keeps the table and equals no scalar), as Ajv's `===` does below 200 members and its `equal`
 * from 200, and as a plain Ajv does, verdict and errors.
 */
import { Ajv, type ErrorObject } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ALL_ERRORS_OPTIONS } from '../attacks/fixtures/allerrors-reference.js';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { equal, INLINE_TEXT_MAX } from '../../src/schema-enum.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

const LONG = 'p'.repeat(40);
/** Scalars where `===`, SameValueZero and JSON part: NaN, -0, Infinity, 1 and "1", strings of one length and prefix. */
const scalar = fc.oneof(
  fc.constantFrom<unknown>(
    0,
    -0,
    1,
    1.5,
    -1,
    1e-7,
    2 ** 53,
    Infinity,
    -Infinity,
    NaN,
    '',
    '0',
    '1',
    'a',
    'A',
    'é',
    'e\u0301',
    '\u2028',
    '"',
    '\\',
    '__proto__',
    'constructor',
    `${LONG}a`,
    `${LONG}b`,
    null,
    true,
    false,
  ),
  fc.integer({ min: -3, max: 3 }),
  fc.string({ maxLength: 3 }),
);
/** What a value may be beside a scalar: an array or object holding one (equal to no scalar member), undefined. */
const value = fc.oneof(
  { weight: 4, arbitrary: scalar },
  { weight: 1, arbitrary: fc.constantFrom<unknown>(undefined, [], {}, ['a'], { a: 1 }, [0]) },
);

/** The reference: Ajv's own enum (`===` below `loopEnum`, its `equal` from it) and const (`!==`). */
const reference = new Ajv(ALL_ERRORS_OPTIONS);
const TABLE_MEMBER = { '\u0000table': 0 };

/** The gate's verdict of `{m: data}` under `{m: keyword}`, and its issues. */
function gate(keyword: Record<string, unknown>): (data: unknown) => ValidationResult {
  const validate = compileValidator({ type: 'object', properties: { m: keyword } } as JsonSchema);
  return (data) => sync(validate({ m: data }));
}

/**
 * The gate decides `{m: d}` under `{m: {enum: members}}` for each d as Ajv's `===` (its `equal` from 200 members),
 * as the table (`table`: the list with one member not a scalar, equal to none of `data`, its length kept), and as
 * Ajv itself, errors and all. An undefined `m` is no property: it passes.
 */
function same(members: unknown[], data: unknown[], table: unknown[]): void {
  const many = members.length >= 200;
  const ours = gate({ enum: members });
  const tabled = gate({ enum: table });
  const schema = { type: 'object', properties: { m: { enum: members } } };
  const theirs = reference.compile(schema);
  for (const d of data) {
    const expected = d === undefined || members.some((member) => (many ? equal(d, member) : d === member));
    const verdict = ours(d);
    expect({ members, d, ok: verdict.ok }).toEqual({ members, d, ok: expected });
    expect({ members, d, ok: tabled(d).ok }).toEqual({ members, d, ok: expected });
    expect({ members, d, out: [verdict.ok, verdict.issues] }).toEqual({
      members,
      d,
      out: [theirs({ m: d }) as boolean, issuesOf(theirs.errors)],
    });
  }
  reference.removeSchema(schema);
}

function issuesOf(errors: readonly ErrorObject[] | null | undefined): string[] | undefined {
  return errors === null || errors === undefined ? undefined : errors.map((e) => `${e.instancePath} ${e.message}`);
}

describe("a few scalar members decided as Ajv's own code and as the table decide them (seeded)", () => {
  it('enum: 1–12 members, and padded to 199 and 200 (Ajv loops from 200: NaN equals NaN there)', () =>
    fc.assert(
      fc.property(
        fc.uniqueArray(scalar, { minLength: 1, maxLength: 12, comparator: equal }), // the meta-schema's uniqueItems
        fc.constantFrom(0, 199, 200),
        fc.array(value, { minLength: 1, maxLength: 8 }),
        (members, pad, data) => {
          // Pads no value is (strings of 4 characters or more, not LONG's).
          const pads = Array.from({ length: Math.max(0, pad - members.length) }, (_, i) => `_pad${i}`);
          const padded = [...members, ...pads];
          const table = pads.length > 0 ? [...padded.slice(0, -1), TABLE_MEMBER] : [...padded, TABLE_MEMBER];
          same(padded, [...data, ...members], table);
        },
      ),
      { seed: 20261207, numRuns: 400 },
    ));

  it('const: each scalar, against each value', () =>
    fc.assert(
      fc.property(scalar, fc.array(value, { minLength: 1, maxLength: 8 }), (member, data) => {
        const ours = gate({ const: member });
        const table = gate({ const: [member] }); // a table (an array's), whose one item is compared
        const schema = { type: 'object', properties: { m: { const: member } } };
        const theirs = reference.compile(schema);
        for (const d of [...data, member]) {
          const verdict = ours(d);
          expect({ member, d, ok: verdict.ok }).toEqual({ member, d, ok: d === undefined || d === member });
          expect({ member, d, ok: table([d]).ok }).toEqual({ member, d, ok: equal([d], [member]) });
          expect([verdict.ok, verdict.issues]).toEqual([theirs({ m: d }), issuesOf(theirs.errors)]);
        }
        reference.removeSchema(schema);
      }),
      { seed: 20261208, numRuns: 300 },
    ));
});

describe('what stays with the table', () => {
  it(`strings of more than ${INLINE_TEXT_MAX.toLocaleString('en-US')} characters in all, and 200 members or more, decide alike`, () => {
    const long = ['x'.repeat(INLINE_TEXT_MAX), 'y'];
    const longData = ['y', 'x'.repeat(INLINE_TEXT_MAX), 'x'.repeat(INLINE_TEXT_MAX - 1), 'z', NaN];
    same(long, longData, [...long, TABLE_MEMBER]);
    const numbers = ['_pad', ...Array.from({ length: 198 }, (_, i) => i), NaN];
    same(numbers, [0, -0, 197, 198, '1', NaN, [NaN]], [TABLE_MEMBER, ...numbers.slice(1)]);
  });
});
