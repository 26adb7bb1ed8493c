/**
 * Attack (availability, branch `schemaround`, src/schema-enum.ts `idIn` / `structureId`): a string inside a value
 * looked up against object members is written out whole (`JSON.stringify`) and its text hashed in the table's Map,
 * and so is each object key, at every keyword — scalars are never kept, and the kept ids are per keyword's table.
 * K keywords whose members are small objects, and a value of one object holding a string (or a key) of S
 * characters, cost K · S: Ajv's `equal` compared the string with the member's by `===` (different lengths: no
 * character read), the key by a property look-up. 2,000 keywords `{enum: [{"k<i>": "v"}]}` (~50 KB of schema) and a
 * 1 MB string: ~2·10^9 characters written and hashed, 3.4 s CPU for one check (tsx, this machine; Ajv's own `enum`:
 * 24 ms). Counted here: the characters `JSON.stringify` writes during
 * the check. Fails on `schemaround` af4cceb.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { compileValidator, type JsonSchema, type ValidationResult } from '../../src/schema.js';

function sync(result: ValidationResult | Promise<ValidationResult>): ValidationResult {
  if (result instanceof Promise) throw new Error('expected a synchronous result');
  return result;
}

const stringify = JSON.stringify;
afterEach(() => {
  JSON.stringify = stringify;
});

/** The characters JSON.stringify writes while `run` runs. */
function written(run: () => void): number {
  let total = 0;
  JSON.stringify = ((...args: Parameters<typeof stringify>) => {
    const text = stringify(...args);
    total += text?.length ?? 0;
    return text;
  }) as typeof stringify;
  try {
    run();
  } finally {
    JSON.stringify = stringify;
  }
  return total;
}

describe('a long string or key is not written out again at each keyword', () => {
  const keywords = 200;
  const size = 50_000;
  const schema = {
    type: 'object',
    allOf: Array.from({ length: keywords }, (_, i) => ({ enum: [{ [`k${i}`]: 'v' }, 'x'] })),
  } as JsonSchema;

  it.each([
    ['a string value', { k0: 'y'.repeat(size) }],
    ['a key', { ['k'.repeat(size)]: 'v' }],
  ])('%s of 50,000 characters against 200 enums of small objects', (_label, value) => {
    const validate = compileValidator(schema);
    let result: ValidationResult | undefined;
    const chars = written(() => {
      result = sync(validate(value as never));
    });
    expect(result?.ok).toBe(false);
    // Ajv's equal: no character of the string read. Here: 200 × 50,000 characters written, each hashed again.
    expect(chars).toBeLessThan(10 * (size + stringify(schema).length));
  });
});
