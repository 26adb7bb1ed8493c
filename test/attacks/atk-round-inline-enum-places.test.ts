/**
 * Attack (availability, src/schema-enum.ts `inlined`, ce7c69a): an `enum` of fewer than 200 scalar members (at most
 * 4,096 characters of strings) is now Ajv's own chain `data === m0 || data === m1 || …`, "a value costs at most the
 * members' text at each place". But a place is cheap to multiply: a chain of 20 `allOf` pairs of `$ref`s (6.2 KB of
 * schema with the enum) applies its leaf 2^20 times, within the 4,000,000 calls a check may make, and each place
 * compares the value with every member before the last: 199 strings of 20 characters and a value equal to the last
 * one are 2^20 × 199 = 2.1·10^8 string comparisons of equal length. A passing check of a 25-byte argument: 755 ms of
 * CPU on main (0d91161), 28.7 ms on 0f199a9 (its table: one Set look-up a place): 26 times the cost the bound of
 * calls was sized for (`npx tsx tmp/m1.ts 20 199 20` in each tree, scratch). One member of 20 characters: 27.6 ms.
 * With the `items` loop of atk-round-ref-chain-loops (1,000 strings at the leaf) each 2^20 places become 2^30.
 *
 * Fix: inline only a handful of members (≤ 8, as few comparisons as a Set look-up costs), or count each inlined place's
 * members into the check's work (`self.$toolgateWork.calls += n`), so that places × members is bounded.
 *
 * Counted, not timed: either the check stops at its bound of work (refused, saying so), or each place is one look-up
 * in the members' Set (0f199a9's table: at least 2^20 Set look-ups), never 199 comparisons.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { compileValidator, type ValidationResult } from '../../src/schema.js';
import { STOPPED_STEPS_ISSUE } from '../../src/schema-bounds.js';

function chain(depth: number, leaf: object): object {
  const definitions: Record<string, unknown> = {};
  for (let i = 0; i < depth; i++)
    definitions[`a${i}`] = { allOf: [{ $ref: `#/definitions/a${i + 1}` }, { $ref: `#/definitions/a${i + 1}` }] };
  definitions[`a${depth}`] = leaf;
  return { type: 'object', properties: { s: { $ref: '#/definitions/a0' } }, definitions };
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('an inlined enum of 199 strings applied at 2^20 places', () => {
  it('is not 2^20 × 199 comparisons: refused at the bound of work, or one look-up a place (199 members inlined, ce7c69a: 0 look-ups, fails)', () => {
    const members = Array.from({ length: 199 }, (_, i) => `m${i}`.padStart(20, 'x'));
    const schema = chain(20, { enum: members });
    expect(JSON.stringify(schema).length).toBeLessThan(7_000);
    const validate = compileValidator(schema as never);
    const has = vi.spyOn(Set.prototype, 'has');
    const result = validate({ s: members[198]! }) as ValidationResult;
    const lookUps = has.mock.calls.length;
    has.mockRestore();
    if (result.ok) expect(lookUps).toBeGreaterThanOrEqual(2 ** 20);
    else expect(result.issues[0]).toBe(STOPPED_STEPS_ISSUE);
  });
});
