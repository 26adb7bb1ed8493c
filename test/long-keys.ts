/**
 * For tests of strings past the length V8 hashes by its characters (String::kMaxHashCalcLength, 16,383: a longer one is
 * hashed by its length alone, so Maps and Sets of such keys compare each with all the others). Watches the keys given to
 * every Map's `set` (and Set's `add`) while each test of the file runs.
 */
import { afterEach, beforeEach, vi, type MockInstance } from 'vitest';

export { HASHED_LENGTH_MAX } from '../src/crypto.js';

/** The longest string key any Map (or, with `sets`, Set) was given since the current test began. */
export function watchLongestKey(options: { readonly sets?: boolean } = {}): () => number {
  const spies: MockInstance[] = [];
  beforeEach(() => {
    spies.push(vi.spyOn(Map.prototype, 'set'));
    if (options.sets === true) spies.push(vi.spyOn(Set.prototype, 'add'));
  });
  afterEach(() => {
    for (const spy of spies.splice(0)) spy.mockRestore();
  });
  return () =>
    Math.max(0, ...spies.flatMap((spy) => spy.mock.calls.map(([key]) => (typeof key === 'string' ? key.length : 0))));
}
