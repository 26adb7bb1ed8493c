/**
 * Attack (availability, HIGH; src/schema-weights.ts): some keywords cost one step of a check's count however long
 * the value they read — `maxLength` / `minLength` (Ajv's `ucs2length` loops over the string), `pattern` and
 * `patternProperties` (a linear match of the string or key), `format` (its validator reads the string),
 * `maxProperties` / `minProperties` (`Object.keys`). Applied at 2^20 places by a `$ref` chain of 20 `allOf` pairs, a
 * leaf `{maxLength: 1000000}` over a 1,000,000-character string ran ~80 s on main (e982ff4), and passed. Now each
 * adds steps by the characters or keys it reads: the chain stops at SCHEMA_STEPS_MAX and the value is refused, while
 * one check of a 4 MB string, or of hundreds of thousands of ordinary strings, passes.
 *
 * Counted, not timed: the refusal names the bound; the steps of one check follow the value's length.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { SCHEMA_STEPS_MAX, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';
import { refChain, registryWith } from './fixtures/schema-tool.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

const REFUSED = { ok: false, issues: [STOPPED_STEPS_ISSUE] };
/** On main each of these took ~1–2 s and passed; a longer string is as many times longer (1,000,000: ~80 s). */
const LETTERS = 'a'.repeat(1_000);
const KEYS = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`k${i}`, 1]));

describe('a keyword that reads the whole value, applied at 2^20 places: refused at the bound of steps', () => {
  it('maxLength over 1,000 characters: refused naming the bound, and the tool does not run', async () => {
    const schema = refChain({ maxLength: 1_000_000 });
    expect(sync(compileValidator(schema)({ x: LETTERS }))).toEqual(REFUSED);
    const { registry, ran } = registryWith(schema);
    const result = await registry.invoke('pay', { x: LETTERS });
    expect(result.status).toBe('refused');
    expect(result.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect(ran).toEqual([]);
  });

  it.each([
    ['minLength', { minLength: 1 }, LETTERS],
    ['pattern (ECMAScript’s own, linear)', { pattern: '^a*$' }, LETTERS],
    ['pattern (RE2)', { pattern: '(a|b)*c' }, `${'ab'.repeat(50)}c`],
    ['format: email', { format: 'email' }, `${'a'.repeat(200)}@example.com`],
    ['enum of 21 strings', { enum: [...Array.from({ length: 20 }, (_, i) => `m${i}`), LETTERS] }, LETTERS],
    ['const', { const: LETTERS }, LETTERS],
    ['format: uri-reference', { format: 'uri-reference' }, `/${'a'.repeat(200)}`],
  ])('%s over a string: refused naming the bound', (_, leaf, x) => {
    expect(sync(compileValidator(refChain(leaf))({ x }))).toEqual(REFUSED);
  });

  it('patternProperties over a key of 101 characters (RE2): refused naming the bound', () => {
    const x = { [`${'ab'.repeat(50)}c`]: 1 };
    expect(sync(compileValidator(refChain({ patternProperties: { '(a|b)*c': { type: 'integer' } } }))({ x }))).toEqual(
      REFUSED,
    );
  });

  it.each([
    ['maxProperties', { maxProperties: 10_000 }],
    ['minProperties', { minProperties: 1 }],
  ])('%s over 1,000 keys: refused naming the bound', (_, leaf) => {
    expect(sync(compileValidator(refChain(leaf))({ x: KEYS }))).toEqual(REFUSED);
  });
});

describe('one check counts the characters and keys it reads', () => {
  const one = (leaf: object, x: unknown): number => {
    const result = sync(compileValidator({ type: 'object', properties: { x: leaf } })({ x }));
    expect(result.ok).toBe(true);
    return stepsCounted();
  };

  it('a string of 1,000,000 characters weighs at least one step a character, an object of 100,000 keys more', () => {
    const long = 'a'.repeat(1_000_000);
    expect(one({ maxLength: 2_000_000 }, long)).toBeGreaterThanOrEqual(999_000);
    expect(one({ minLength: 1 }, long)).toBeGreaterThanOrEqual(999_000);
    expect(one({ pattern: '^a*$' }, long)).toBeGreaterThanOrEqual(999_000);
    expect(one({ format: 'json-pointer' }, `/${long}`)).toBeGreaterThanOrEqual(999_000);
    const keys = Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, 1]));
    expect(one({ maxProperties: 200_000 }, keys)).toBeGreaterThanOrEqual(100_000 * 100);
  });

  it('a format Ajv does not check (a UI hint) weighs nothing', () => {
    const hint = one({ format: 'textarea' }, 'a'.repeat(1_000_000));
    expect(hint).toBeLessThan(100);
  });
});

describe('ordinary large values pass, their steps well under the bound', () => {
  it('a 4 MB string through maxLength, minLength and a pattern', () => {
    const check = compileValidator({
      type: 'object',
      properties: { text: { type: 'string', minLength: 1, maxLength: 5_000_000, pattern: '^[a-z ]+$' } },
    });
    expect(sync(check({ text: 'lorem ipsum '.repeat(350_000) })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 10);
  });

  it('300,000 strings of 16 characters through an RE2 pattern, 100,000 date-times and emails', () => {
    const tags = compileValidator({
      type: 'object',
      properties: { tags: { type: 'array', items: { type: 'string', pattern: '^(?:[a-z]+-)*[0-9a-f]{4}$' } } },
    });
    expect(sync(tags({ tags: Array.from({ length: 300_000 }, () => 'alpha-beta-0a1f') })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 2);
    const rows = compileValidator({
      type: 'object',
      properties: {
        rows: {
          type: 'array',
          items: {
            type: 'object',
            properties: { at: { format: 'date-time' }, who: { format: 'email', maxLength: 254 } },
          },
        },
      },
    });
    const row = { at: '2026-12-07T05:00:00Z', who: 'ann.example@example.com' };
    expect(sync(rows({ rows: Array.from({ length: 100_000 }, () => row) })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 2);
  });

  it('a map of 200,000 keys through maxProperties', () => {
    const map = compileValidator({
      type: 'object',
      properties: { m: { type: 'object', maxProperties: 1_000_000, additionalProperties: { type: 'integer' } } },
    });
    const m = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`key${i}`, i]));
    expect(sync(map({ m })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 2);
  });
});
