/**
 * The memory stores key their Maps by safeKey (src/crypto.ts): a ledger key holds the caller's run id, a counter's key
 * the tenant's, caller's and run's ids, and V8 hashes a string past 16,383 characters by its length alone, so 2,000
 * ledger keys of 16,400 characters differing at their end took 6.1 s to reserve and record (each compared with all the
 * others; 0.16 s keyed by digest: `npx tsx tmp/misc.mts ledger 2000`). Counted, not timed: no Map is given a key that
 * long, and keys still mean what they meant (equal keys one row, keys differing in their last character two).
 */
import { describe, expect, it } from 'vitest';
import {
  MemoryCounterStore,
  MemoryLedger,
  MemoryNonceStore,
  MemoryRememberStore,
  MemoryTallyStore,
} from '../../src/stores/memory.js';
import { HASHED_LENGTH_MAX, watchLongestKey } from '../long-keys.js';

const long = (last: string) => `${'k'.repeat(20_000)}${last}`;
const longestKey = watchLongestKey();

describe('the memory stores, keyed by texts past 16,383 characters', () => {
  it('the ledger: one row a key, none given to a Map whole', async () => {
    const ledger = new MemoryLedger();
    expect(await ledger.reserve(long('a'), 'me', 60_000)).toEqual({ state: 'reserved' });
    expect(await ledger.reserve(long('b'), 'me', 60_000)).toEqual({ state: 'reserved' });
    expect(await ledger.record(long('a'), 'me', { content: 'done', isError: false })).toBe(true);
    expect((await ledger.inspect(long('a')))?.key).toBe(long('a'));
    expect((await ledger.inspect(long('a')))?.outcome).toMatchObject({ content: 'done' });
    expect((await ledger.inspect(long('b')))?.outcome).toBeNull();
    expect(await ledger.release(long('b'), 'me')).toBe(true);
    expect(await ledger.inspect(long('b'))).toBeUndefined();
    expect((await ledger.list()).map((row) => row.key)).toEqual([long('a')]);
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });

  it('the counters, tallies, nonces and remembered answers: the same', async () => {
    const counters = new MemoryCounterStore();
    const charge = (key: string) => [{ key, cost: 1, limit: 1, windowMs: 60_000 }];
    expect((await counters.consume(charge(long('a')))).allowed).toBe(true);
    expect((await counters.consume(charge(long('a')))).allowed).toBe(false);
    expect((await counters.consume(charge(long('b')))).allowed).toBe(true);
    expect(await counters.peek(long('a'), 60_000)).toBe(1);
    expect(await counters.peek(long('c'), 60_000)).toBe(0);
    expect(counters.size).toBe(2);
    const tallies = new MemoryTallyStore();
    const caps = { maxIterations: 10, maxToolCalls: 1, maxCost: 10 };
    const one = { iterations: 0, attempts: 1, cost: 0 };
    const none = { iterations: 0, attempts: 0, cost: 0 };
    expect((await tallies.spend(long('a'), one, caps, none)).ok).toBe(true);
    expect((await tallies.spend(long('a'), one, caps, none)).ok).toBe(false);
    expect((await tallies.spend(long('b'), one, caps, none)).ok).toBe(true);
    const nonces = new MemoryNonceStore();
    expect(await nonces.consume(long('a'), 60_000)).toBe(true);
    expect(await nonces.consume(long('a'), 60_000)).toBe(false);
    expect(await nonces.consume(long('b'), 60_000)).toBe(true);
    const answers = new MemoryRememberStore();
    await answers.remember(long('a'), { answer: 'allow', scope: 'run', mac: 'm' });
    expect((await answers.recall(long('a')))?.answer).toBe('allow');
    expect(await answers.recall(long('b'))).toBeUndefined();
    expect(longestKey()).toBeLessThanOrEqual(HASHED_LENGTH_MAX);
  });
});
