/**
 * Attack (availability, HIGH; src/schema-steps.ts, loopbound 025b44c): the bound of steps counts the statements of
 * each block Ajv writes, and a statement is one step whatever it does. `minProperties` / `maxProperties` are one
 * statement, `Object.keys(data).length > n`, which collects every key of the object: ~270 ns a key on a large
 * (dictionary) object, more than a `for…in` key (KEY_STEPS = 100 steps), counted as one step. A chain of `allOf`
 * pairs of `$ref`s (atk-round-ref-chain-loops) applies the leaf `{minProperties: 1}` at 2^k places, each collecting
 * all keys again: `npx tsx` of this shape, 2^12 places × 40,000 keys (~490 KB of arguments) passed after 44 s with
 * 65,538 steps counted (the bound is 250,000,000); 2^20 places are ~3 hours, and up to ~15M places fit the bound.
 * No reference is needed: a schema of 20 KB, `allOf` of 1,000 `{minProperties: 1}`, over the same 40,000 keys passed
 * after 25 s at 4,009 steps (and 1,000 `{maxLength: 10000000}` over a 4 MB string after 28.9 s at 4,009 steps:
 * `npx tsx /tmp/scratch/s11.ts 1000 4000000 maxLength`).
 *
 * Counted, not timed: the keys `Object.keys` returns during the check (a wrapper), against the steps counted; and a
 * check that collects 3.1M keys (more than the bound allows at a `for…in` key's weight) is refused.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { refChain, syncResult } from './fixtures/schema-tool.js';
import { KEY_STEPS } from '../../src/schema-steps.js';
import { SCHEMA_STEPS_MAX, stepsCounted, STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';

const keysOf = (n: number): Record<string, number> =>
  Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));

const original = Object.keys;
afterEach(() => {
  Object.keys = original;
});

/** The keys `Object.keys` returned while `run` ran. */
function keysCollected(run: () => void): number {
  let keys = 0;
  Object.keys = (o: object): string[] => {
    const out = original(o);
    keys += out.length;
    return out;
  };
  try {
    run();
  } finally {
    Object.keys = original;
  }
  return keys;
}

describe('minProperties / maxProperties collect every key at each place: their work is counted', () => {
  it.each([
    ['minProperties', { minProperties: 1 }],
    ['maxProperties', { maxProperties: 1_000_000 }],
  ])('%s at 2^6 places over 10,000 keys: a step at least for each key collected', (_, leaf) => {
    const check = compileValidator(refChain(leaf, 6));
    const x = keysOf(10_000);
    let result: ValidationResult | undefined;
    const keys = keysCollected(() => {
      result = syncResult(check({ x }));
    });
    expect(keys).toBe(64 * 10_000);
    expect(result?.ok).toBe(true);
    // A for…in key weighs KEY_STEPS; a key Object.keys collects (as slow) at least one step.
    expect(stepsCounted()).toBeGreaterThanOrEqual(keys);
  });

  it('no reference: an allOf of 64 {minProperties: 1} over 10,000 keys, a step at least for each key collected', () => {
    const check = compileValidator({
      type: 'object',
      properties: { x: { allOf: Array.from({ length: 64 }, () => ({ minProperties: 1 })) } },
    });
    const x = keysOf(10_000);
    const keys = keysCollected(() => {
      expect(syncResult(check({ x })).ok).toBe(true);
    });
    expect(keys).toBe(64 * 10_000);
    expect(stepsCounted()).toBeGreaterThanOrEqual(keys);
  });

  it('2^8 places × 12,000 keys (3.1M keys collected, past the bound at a for…in key’s weight): refused', () => {
    expect(256 * 12_000 * KEY_STEPS).toBeGreaterThan(SCHEMA_STEPS_MAX);
    const check = compileValidator(refChain({ minProperties: 1 }, 8));
    const result = syncResult(check({ x: keysOf(12_000) }));
    expect({ ok: result.ok, issues: result.issues }).toEqual({ ok: false, issues: [STOPPED_STEPS_ISSUE] });
  });
});
