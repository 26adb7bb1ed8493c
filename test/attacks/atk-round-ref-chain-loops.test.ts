/**
 * Attack (availability, HIGH, atk-round (d); src/schema-steps.ts): a check's bound counted the calls of compiled
 * checks, not the work inside them. A chain of 20 `allOf` pairs of `$ref`s applies its leaf 2^20 times (under the
 * 4,000,000 calls), and each application of `{items: {type: string}}` loops over the whole array: 10,000 one-character
 * strings (40 KB of arguments) passed after ~9 s on main (9aba657). The same with the loops over an object's keys
 * (`additionalProperties`, `patternProperties`, `propertyNames`), with `uniqueItems` (its own loop, in
 * src/schema-bounds.ts), and with no loop at all: a leaf of 1,000 `properties` runs 1,000 checks at each of its 2^20
 * places. Now each loop iteration and each function start counts its statements against SCHEMA_STEPS_MAX: all are
 * refused, naming the bound, while ordinary large values pass with the count well under it.
 *
 * Counted, not timed: the refusal (the count reached its bound), and the steps an ordinary value takes.
 */
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { boundErrors, SCHEMA_STEPS_MAX, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';
import { registryWith } from './fixtures/schema-tool.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

/** `$defs` d0 … d20, each an `allOf` of two references to the next; d20 the leaf; the arguments' `x` is a d0. */
function chain(leaf: object): Record<string, unknown> {
  const defs: Record<string, unknown> = { d20: leaf };
  for (let i = 19; i >= 0; i--)
    defs[`d${i}`] = { allOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  return { $defs: defs, type: 'object', properties: { x: { $ref: '#/$defs/d0' } } };
}

const STRINGS = Array.from({ length: 10_000 }, () => 'a');
const KEYS = Object.fromEntries(Array.from({ length: 10_000 }, (_, i) => [`k${i}`, 'a']));

describe('a leaf applied at 2^20 places does its work at each: the check stops at its bound of steps', () => {
  it('{items: {type: string}} over 10,000 strings (40 KB): refused naming the bound, and the tool does not run', async () => {
    const schema = chain({ items: { type: 'string' } });
    expect(JSON.stringify(schema).length).toBeLessThan(1_700);
    expect(sync(compileValidator(schema)({ x: STRINGS }))).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
    const { registry, ran } = registryWith(schema);
    const result = await registry.invoke('pay', { x: STRINGS });
    expect(result.status).toBe('refused');
    expect(result.decision.reason).toContain(STOPPED_STEPS_ISSUE);
    expect(ran).toEqual([]);
  });

  it.each([
    ['additionalProperties', { additionalProperties: { type: 'string' } }],
    ['patternProperties', { patternProperties: { '^k': { type: 'string' } } }],
    ['propertyNames', { propertyNames: { type: 'string' } }],
  ])('%s over 10,000 keys: refused naming the bound', (_, leaf) => {
    expect(sync(compileValidator(chain(leaf))({ x: KEYS }))).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });

  it('uniqueItems over 10,000 numbers (its loop is toolgate’s own): refused naming the bound', () => {
    const numbers = STRINGS.map((_, i) => i);
    const result = sync(compileValidator(chain({ uniqueItems: true }))({ x: numbers }));
    expect(result).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });

  it('a leaf of 1,000 properties and no loop (a large function called 2^20 times): refused naming the bound', () => {
    const properties = Object.fromEntries(Array.from({ length: 1_000 }, (_, i) => [`p${i}`, { type: 'string' }]));
    expect(sync(compileValidator(chain({ properties }))({ x: {} }))).toEqual({
      ok: false,
      issues: [STOPPED_STEPS_ISSUE],
    });
  });
});

/** Ten event kinds as an OpenAPI document writes them: a `oneOf` of `$ref`s per item, each with four `$ref` fields. */
function tenVariants(): JsonSchema {
  const defs: Record<string, unknown> = {
    Id: { type: 'string', minLength: 1, maxLength: 64 },
    Time: { type: 'string', format: 'date-time' },
    Actor: {
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, role: { enum: ['user', 'admin', 'bot'] } },
    },
    Meta: { type: 'object', additionalProperties: { type: 'string' } },
  };
  for (let v = 0; v < 10; v++)
    defs[`Ev${v}`] = {
      type: 'object',
      required: ['kind', 'id', 'at', 'who', 'meta'],
      properties: {
        kind: { const: `e${v}` },
        id: { $ref: '#/$defs/Id' },
        at: { $ref: '#/$defs/Time' },
        who: { $ref: '#/$defs/Actor' },
        meta: { $ref: '#/$defs/Meta' },
        n: { type: 'integer', minimum: 0 },
      },
    };
  const variants = Array.from({ length: 10 }, (_, v) => ({ $ref: `#/$defs/Ev${v}` }));
  return { $defs: defs, type: 'object', properties: { events: { type: 'array', items: { oneOf: variants } } } };
}

/** Rows of three kinds, each a closed object with a list of tags: an `anyOf` of `$ref`s per item. */
function threeVariants(): JsonSchema {
  const row = (kind: string, extra: Record<string, unknown>) => ({
    type: 'object',
    required: ['kind', 'id'],
    additionalProperties: false,
    properties: {
      kind: { const: kind },
      id: { type: 'integer' },
      name: { type: 'string', maxLength: 200 },
      tags: { type: 'array', items: { type: 'string' } },
      ...extra,
    },
  });
  return {
    $defs: {
      A: row('a', { price: { type: 'number' } }),
      B: row('b', { qty: { type: 'integer', minimum: 0 } }),
      C: row('c', { ok: { type: 'boolean' } }),
    },
    type: 'object',
    properties: {
      rows: { type: 'array', items: { anyOf: [{ $ref: '#/$defs/A' }, { $ref: '#/$defs/B' }, { $ref: '#/$defs/C' }] } },
    },
  };
}

const ROWS = [
  { kind: 'a', id: 0, name: 'widget', tags: ['x', 'y'], price: 1.5 },
  { kind: 'b', id: 1, name: 'gadget', tags: ['z'], qty: 3 },
  { kind: 'c', id: 2, name: 'thing', tags: [], ok: true },
];

describe('ordinary large values pass, their steps well under the bound', () => {
  it('40,000 events of a ten-variant union (4.8 MB; each item makes errors in nine variants)', () => {
    const events = Array.from({ length: 40_000 }, (_, i) => ({
      kind: `e${i % 10}`,
      id: `id-${i}`,
      at: '2026-12-07T05:00:00Z',
      who: { name: 'ann', role: 'user' },
      meta: { a: 'b' },
      n: i,
    }));
    expect(sync(compileValidator(tenVariants())({ events })).ok).toBe(true);
    // Its 400,000 `date-time` checks (each variant's `at`) are two thirds of its CPU (423 of 645 ms here, 2026-12-07)
    // and count since their calls do (atk-steps-call-costs): 214M steps, under the bound.
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX);
  });

  it('100,000 rows of a three-variant union (6.3 MB)', () => {
    const rows = Array.from({ length: 100_000 }, (_, i) => ({ ...ROWS[i % 3], id: i }));
    expect(JSON.stringify(rows).length).toBeGreaterThan(6_000_000);
    expect(sync(compileValidator(threeVariants())({ rows })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 2);
  });

  it('1,000,000 strings in an array, and a map of 200,000 keys', () => {
    const strings = compileValidator({
      type: 'object',
      properties: { s: { type: 'array', items: { type: 'string' } } },
    });
    expect(sync(strings({ s: Array.from({ length: 1_000_000 }, () => 'a') })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 10);
    const map = compileValidator({
      type: 'object',
      properties: { m: { type: 'object', additionalProperties: { type: 'integer' } } },
    });
    const m = Object.fromEntries(Array.from({ length: 200_000 }, (_, i) => [`key${i}`, i]));
    expect(sync(map({ m })).ok).toBe(true);
    expect(stepsCounted()).toBeLessThan(SCHEMA_STEPS_MAX / 10);
  });
});

describe('the count is put into every loop and function start, or the schema does not compile', () => {
  const start = 'function validate0(data){let vErrors = null;let errors = 0;';

  it('a loop Ajv does not write (while, do, another for) throws', () => {
    expect(() => boundErrors(`${start}while(data.length){data.pop();}return errors === 0;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}do{data.pop();}while(data.length);return errors === 0;}`)).toThrow(
      /cannot bound/,
    );
    expect(() => boundErrors(`${start}for(;data.length;){data.pop();}return errors === 0;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}for(const x of data)data.pop();return errors === 0;}`)).toThrow(/cannot bound/);
    expect(() => boundErrors(`${start}if(data){return errors === 0;}`)).toThrow(/cannot bound/);
  });

  it("Ajv's loops count each iteration by its statements; a function's start by its own", () => {
    const code = boundErrors(
      `${start}for(let i0=0; i0<len0; i0++){a();b();}for(const key0 in data){c();}const s = "for(;;){";return errors === 0;}`,
    );
    // Each function reads the count of the check running now at its start (src/schema-bounds.ts newAsyncCheck).
    expect(code).toContain('for(let i0=0; i0<len0; i0++){if(($toolgateCount.steps+=2)>');
    expect(code).toContain('for(const key0 in data){if(($toolgateCount.steps+=101)>');
    expect(code).toContain('let errors = 0;const $toolgateCount=self.$toolgateWork.cur;if(($toolgateCount.steps+=4)>');
    expect(code).toContain('const s = "for(;;){";');
  });
});
