/**
 * MemoryCounterStore keeps memory to the live keys (issue 25 review): a counter left empty is deleted, and a
 * sweep deletes counters idle past their longest window and a minute. It decides exactly as before: the
 * store as it was (copied below) and the store now run the same random charges on one fake clock, and every
 * verdict and every `peek` are equal.
 */
import { describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { checkCharges, retryAfter } from '../../src/stores/shared.js';
import type { CounterCharge, CounterVerdict } from '../../src/stores/types.js';

/** The store before the fix (windows never deleted), for the comparison. */
class OldCounters {
  readonly #windows = new Map<string, { entries: { at: number; cost: number }[]; total: number }>();
  readonly now: () => number;
  constructor(now: () => number) {
    this.now = now;
  }

  consume(charges: readonly CounterCharge[]): CounterVerdict {
    checkCharges(charges);
    const now = this.now();
    const windows = charges.map((c) => this.#window(c.key, c.windowMs, now));
    for (const [i, c] of charges.entries()) {
      const w = windows[i]!;
      if (w.total + c.cost > c.limit) {
        const retry = retryAfter(w.entries, w.total + c.cost - c.limit, c.windowMs, now, c.cost, c.limit);
        return { allowed: false, used: windows.map((x) => x.total), index: i, retryAfterMs: retry };
      }
    }
    for (const [i, c] of charges.entries()) {
      const w = windows[i]!;
      if (w.total + c.cost > c.limit) {
        for (let j = i - 1; j >= 0; j--)
          if (charges[j]!.cost > 0) {
            windows[j]!.entries.pop();
            windows[j]!.total -= charges[j]!.cost;
          }
        return { allowed: false, used: windows.map((x) => x.total), index: i, retryAfterMs: null };
      }
      if (c.cost > 0) {
        w.entries.push({ at: now, cost: c.cost });
        w.total += c.cost;
      }
    }
    return { allowed: true, used: windows.map((w) => w.total) };
  }

  peek(key: string, windowMs: number): number {
    return this.#window(key, windowMs, this.now()).total;
  }

  #window(key: string, windowMs: number, now: number): { entries: { at: number; cost: number }[]; total: number } {
    let w = this.#windows.get(key);
    if (!w) this.#windows.set(key, (w = { entries: [], total: 0 }));
    let drop = 0;
    while (drop < w.entries.length && w.entries[drop]!.at <= now - windowMs) w.total -= w.entries[drop++]!.cost;
    if (drop > 0) w.entries.splice(0, drop);
    return w;
  }
}

describe('MemoryCounterStore memory', () => {
  it('decides as before on random charges (refusals, costs of 0, one key twice, windows leaving, the clock back)', async () => {
    for (let seed = 1; seed <= 30; seed++) {
      const rand = prng(seed);
      let now = 1_000_000;
      const clock = (): number => now;
      const old = new OldCounters(clock);
      const mine = new MemoryCounterStore({ now: clock });
      // Each key keeps one window, as a limit's keys do.
      const keys = Array.from({ length: 12 }, (_, i) => ({ key: `k${i}`, windowMs: [50, 200, 1000, 5000][i % 4]! }));
      const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
      for (let step = 0; step < 600; step++) {
        const r = rand();
        now += r < 0.03 ? -Math.floor(rand() * 50) : r < 0.1 ? Math.floor(rand() * 8000) : Math.floor(rand() * 30);
        if (rand() < 0.1) {
          const k = pick(keys);
          expect(await mine.peek(k.key, k.windowMs), `seed ${seed} step ${step} peek`).toBe(
            old.peek(k.key, k.windowMs),
          );
          continue;
        }
        const charges = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => ({
          ...pick(keys),
          cost: pick([0, 0.5, 1, 1, 2, 5]),
          limit: pick([0, 1, 3, 5, 10, 20]),
        }));
        expect(await mine.consume(charges), `seed ${seed} step ${step} ${JSON.stringify(charges)}`).toEqual(
          old.consume(charges),
        );
      }
    }
  });

  it('holds only the live keys: keys met once are deleted once idle, emptied and peeked ones are not kept', async () => {
    let now = 1_000_000;
    const counters = new MemoryCounterStore({ now: () => now });
    for (let i = 0; i < 5000; i++) await counters.consume([{ key: `caller-${i}`, cost: 1, limit: 10, windowMs: 1000 }]);
    expect(counters.size).toBe(5000);
    // A refused charge on an empty counter and a peek leave nothing behind.
    await counters.consume([{ key: 'never', cost: 5, limit: 1, windowMs: 1000 }]);
    await counters.peek('peeked', 1000);
    expect(counters.size).toBe(5000);
    // Past the window and a minute, the live key's calls sweep the idle ones away.
    now += 1000 + 60_000 + 1;
    for (let i = 0; i < 3000; i++) await counters.consume([{ key: 'live', cost: 1, limit: 1e9, windowMs: 1000 }]);
    expect(counters.size).toBe(1);
    expect(await counters.peek('live', 1000)).toBe(3000);
    // A counter that is still counting is never swept (its newest entry is within the window and a minute).
    now += 60_000;
    for (let i = 0; i < 10; i++) await counters.consume([{ key: `other-${i}`, cost: 1, limit: 10, windowMs: 1000 }]);
    expect(await counters.peek('live', 1000)).toBe(0);
    expect(await counters.peek('other-3', 1000)).toBe(1);
  });
});
