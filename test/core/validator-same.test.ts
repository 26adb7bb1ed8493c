/**
 * A compiled check is called with one shared empty context (src/schema.ts, issue 25) instead of none: on seeded
 * random values, for schemas that use what that context carries (the instance path of an error, `$ref`s to the
 * root and recursive ones, `$async`), `compileValidator` answers as a check of its own Ajv called bare does —
 * the same verdict and the same issue texts.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';
import { prng } from '../../bench/scenario.js';

const SCHEMAS: readonly JsonSchema[] = [
  {
    type: 'object',
    properties: { amount: { type: 'integer', minimum: 0 }, mode: { type: 'string', enum: ['read', 'write'] } },
    required: ['amount', 'mode'],
  },
  {
    type: 'object',
    definitions: {
      node: { type: 'object', properties: { next: { $ref: '#/definitions/node' }, n: { type: 'number' } } },
    },
    properties: { list: { $ref: '#/definitions/node' } },
  },
  {
    $id: 'https://example.test/tree',
    type: 'object',
    properties: { n: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#' } } },
    additionalProperties: false,
  },
];

function value(random: () => number, depth: number): unknown {
  const r = random();
  if (depth > 3 || r < 0.3) return [0, -1, 1.5, 'read', 'write', 'x', true, null][Math.floor(random() * 8)];
  if (r < 0.45) return Array.from({ length: Math.floor(random() * 3) }, () => value(random, depth + 1));
  const keys = ['amount', 'mode', 'list', 'next', 'n', 'kids', 'other'];
  const out: Record<string, unknown> = {};
  for (const key of keys) if (random() < 0.4) out[key] = value(random, depth + 1);
  return out;
}

function bare(schema: JsonSchema): (data: Record<string, unknown>) => Promise<ValidationResult> {
  const check = new Ajv({ allErrors: true, strict: false, coerceTypes: false, useDefaults: false }).compile(schema);
  const issues = (errors: typeof check.errors): string[] =>
    (errors ?? []).map((e) => `${e.instancePath || '(root)'} ${e.message ?? 'is invalid'}`);
  return async (data) => {
    if (schema['$async'] !== true)
      return check(data) ? { ok: true, value: data } : { ok: false, issues: issues(check.errors) };
    try {
      await (check(data) as unknown as Promise<unknown>);
      return { ok: true, value: data };
    } catch (error) {
      return { ok: false, issues: issues((error as { errors: typeof check.errors }).errors) };
    }
  };
}

const VALID: readonly Record<string, unknown>[] = [
  { amount: 3, mode: 'read' },
  { list: { n: 1, next: { n: 2, next: {} } } },
  { n: 1, kids: [{ n: 2, kids: [] }, { n: 3 }] },
];

describe('a compiled check with the shared context answers as one called bare', () => {
  const all = [...SCHEMAS, ...SCHEMAS.map((s) => ({ ...s, $id: undefined, $async: true }))];
  it.each(all.map((schema, i) => [i, schema] as const))('schema %i', async (i, schema) => {
    const mine = compileValidator(schema);
    const theirs = bare(schema);
    const random = prng(1000 + i);
    const valid = VALID[i % VALID.length]!;
    const answers = { ok: 0, refused: 0 };
    for (let k = 0; k < 400; k++) {
      // Half of them a valid value with one field replaced by a random one, half random values.
      const data = (
        k % 2 === 0
          ? { ...valid, [Object.keys(valid)[k % Object.keys(valid).length]!]: value(random, 1) }
          : value(random, 0)
      ) as Record<string, unknown>;
      const a = await mine(data);
      expect(a).toEqual(await theirs(data));
      answers[a.ok ? 'ok' : 'refused']++;
    }
    expect(await mine({ ...valid })).toMatchObject({ ok: true });
    // The random values reach both answers.
    expect(answers.ok).toBeGreaterThan(5);
    expect(answers.refused).toBeGreaterThan(5);
  });
});
