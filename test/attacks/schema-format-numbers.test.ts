/**
 * Attack (argument validation, src/schema.ts `withFormats`): OpenAPI's number formats, as ajv-formats checks them.
 * `int64` was any integer JavaScript holds ("JSON and javascript max Int is 2**53, so any int that passes isInteger
 * is valid for Int64"): 2^63 and 1e300 passed, and a tool storing a signed 64-bit integer ran with a value that
 * overflows it. `float` was any number: 1e39 (past a 32-bit float's largest, 3.4e38) passed. Both are checked now.
 */
import { describe, expect, it } from 'vitest';
import { runsWith } from './fixtures/schema-tool.js';

function runs(format: string, n: number): Promise<boolean> {
  return runsWith({ type: 'object', properties: { n: { type: 'number', format } } }, { n });
}

describe('number formats', () => {
  it.each([2 ** 63, -(2 ** 63) * 2, 1e300, -1e300, 1.5])('int64 refuses %d', async (n) => {
    expect(await runs('int64', n)).toBe(false);
  });

  it.each([0, -1, 2 ** 53, 2 ** 63 - 2 ** 10, -(2 ** 63)])('int64 accepts %d', async (n) => {
    expect(await runs('int64', n)).toBe(true);
  });

  it('float refuses what a 32-bit float cannot hold, accepts the rest (rounded: 3.4028235e38)', async () => {
    for (const n of [1e39, -1e39, 1e300]) expect(await runs('float', n)).toBe(false);
    for (const n of [0, 1.1, -3.4028234663852886e38, 3.4028235e38, 1e-50]) expect(await runs('float', n)).toBe(true);
  });

  it('int32 and double as before', async () => {
    expect(await runs('int32', 2 ** 31)).toBe(false);
    expect(await runs('int32', -(2 ** 31))).toBe(true);
    expect(await runs('double', 1e300)).toBe(true);
  });
});
