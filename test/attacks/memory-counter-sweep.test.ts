/**
 * Attack (issue 25, MemoryCounterStore's sweep): the sweep deletes a counter whose *last pushed* entry is
 * past its longest window and a minute. After the clock steps back (an NTP correction), the last pushed entry
 * is not the newest: a counter still holding an entry inside its window was deleted, and the limit let more
 * calls through than its max. The store before the sweep refused them; it must still.
 */
import { describe, expect, it } from 'vitest';
import { MemoryCounterStore } from '../../src/stores/memory.js';

const W = 60_000;

describe('attack: the memory counter sweep after the clock steps back', () => {
  it('never deletes a counter with an entry still in its window', async () => {
    let now = 10_000_000;
    const counters = new MemoryCounterStore({ now: () => now });
    const charge = () => counters.consume([{ key: 'refunds:caller=mallory', cost: 1, limit: 2, windowMs: W }]);
    expect((await charge()).allowed).toBe(true); // A, at 10,000,000
    now -= 200_000; // the clock steps back 200 s
    expect((await charge()).allowed).toBe(true); // B, at 9,800,000 (pushed last)
    now = 10_000_000 + 1_000; // the clock is right again: A is 1 s old, well inside the minute
    // The limit's window holds A (and B, which the store cannot tell from a future entry): full.
    expect(await counters.peek('refunds:caller=mallory', W)).toBeGreaterThanOrEqual(1);
    const third = await charge();
    const fourth = await charge();
    expect([third.allowed, fourth.allowed]).not.toEqual([true, true]);
  });

  it('the sweep still deletes idle counters whose every entry is old', async () => {
    let now = 10_000_000;
    const counters = new MemoryCounterStore({ now: () => now });
    await counters.consume([{ key: 'a', cost: 1, limit: 2, windowMs: W }]);
    now -= 100;
    await counters.consume([{ key: 'a', cost: 1, limit: 2, windowMs: W }]);
    now += 100 + W + 60_000 + 1;
    for (let i = 0; i < 4; i++) await counters.consume([{ key: 'live', cost: 1, limit: 100, windowMs: W }]);
    expect(counters.size).toBe(1);
  });
});
