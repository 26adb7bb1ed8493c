/**
 * atk-longkeys: readResponse (src/runner/run.ts) renames the k-th repeat of a call id `${id}~n` by trying n = 2, 3, …
 * against the turn's Set of ids, so k calls of one id make ~k²/2 look-ups (and as many strings built): a model's one
 * response of 20,000 calls `{id: "c", name: "t", arguments: {}}` (740 KB) held the event loop 11.9 s, 5,000 (185 KB)
 * 0.73 s (`nice npx tsx tmp/dup.mts 1 20000`, scratch; main the same: 0.64 s at 5,000). No bound on a turn's calls
 * comes before it. Counted, not timed: look-ups of the Set per call.
 */
import { afterEach, beforeEach, describe, expect, it, vi, type MockInstance } from 'vitest';
import { readResponse } from '../../src/runner/run.js';

let has: MockInstance;
beforeEach(() => {
  has = vi.spyOn(Set.prototype, 'has');
});
afterEach(() => {
  has.mockRestore();
});

describe('atk-longkeys: a turn of repeated call ids', () => {
  it('2,000 calls of one id: each refused under an id of its own, in a linear number of look-ups', () => {
    const k = 2_000;
    const toolCalls = Array.from({ length: k }, () => ({ id: 'c', name: 't', arguments: {} }));
    const { calls } = readResponse({ toolCalls });
    const lookups = has.mock.calls.length;
    has.mockRestore();
    expect(new Set(calls.map((call) => call.id)).size).toBe(k);
    expect(calls.slice(1).every((call) => 'problem' in call)).toBe(true);
    expect(lookups).toBeLessThanOrEqual(8 * k);
  });
});
