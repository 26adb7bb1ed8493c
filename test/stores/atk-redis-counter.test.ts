/**
 * Attacks on the Redis counter script (lone-set fast path, packed numbers, %d totals), through the store's own
 * consume, against the memory store on the same charges (windows long enough that nothing leaves them, so
 * both must decide alike): random lone sets (up to 6 charges, repeated counters, costs of 0, fractions that
 * are exact in binary, large costs and limits up to 2^53), coalesced batches mixing lone and not-lone sets,
 * and a total past 1e14, where a total written with 14 significant digits stops counting small costs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { prng } from '../../bench/scenario.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { RedisStores } from '../../src/stores/redis.js';
import type { CounterCharge } from '../../src/stores/types.js';
import { REDIS_URL, uniqueName } from './servers.js';

const prefix = uniqueName('atkr');
let redis: RedisStores;
beforeAll(() => {
  redis = new RedisStores({ url: REDIS_URL, prefix });
});
afterAll(async () => {
  await redis.clear(prefix);
  await redis.close();
});

const HOUR = 3_600_000;

describe('the Redis counter script against the memory store', () => {
  it('decides random lone sets and coalesced batches alike (no overshoot, no spill between keys)', async () => {
    const memory = new MemoryCounterStore();
    let allowed = 0;
    let refused = 0;
    for (let seed = 1; seed <= 12; seed++) {
      const rand = prng(seed);
      const pick = <T>(list: readonly T[]): T => list[Math.floor(rand() * list.length)]!;
      const names = [`a${seed}`, `b${seed}`, `c${seed}`, `a${seed} 1`, `-1`, `1e21${seed}`];
      // Odd seeds: fractions not exact in binary (their sums must round as the memory store's do).
      const costs = seed % 2 ? [0, 0.1, 0.2, 1 / 3, 1e-7, 0.7] : [0, 1, 1, 2, 0.5, 0.25, 3, 2 ** 40, 2 ** 52];
      const limits = seed % 2 ? [0.3, 0.6, 1, 1.7, 2] : [0, 1, 3, 5, 10, 2 ** 41, 2 ** 53];
      const charge = (): CounterCharge => ({
        key: pick(names),
        cost: pick(costs),
        limit: pick(limits),
        windowMs: pick([HOUR, 2 * HOUR, HOUR + 0.5]),
      });
      for (let b = 0; b < 60; b++) {
        // Mostly a lone caller; sometimes several at once (one coalesced step of lone and not-lone sets).
        const width = rand() < 0.7 ? 1 : 2 + Math.floor(rand() * 3);
        const sets = Array.from({ length: width }, () => Array.from({ length: 1 + Math.floor(rand() * 6) }, charge));
        const mine = await Promise.all(sets.map((s) => redis.counters.consume(s)));
        for (let i = 0; i < sets.length; i++) {
          const theirs = await memory.consume(sets[i]!);
          const what = `seed ${seed} batch ${b} set ${i}: ${JSON.stringify(sets[i])}`;
          expect(mine[i]!.allowed, what).toBe(theirs.allowed);
          // The refused charge alike, when the set's counters are distinct (a counter charged twice in the set,
          // which a Limiter never sends: the memory store names the first charge that does not fit alone, Redis
          // the first that does not fit with the set's earlier ones, and each answers such a set's totals its own way).
          const distinct = new Set(sets[i]!.map((c) => c.key)).size === sets[i]!.length;
          if (!theirs.allowed && distinct) expect((mine[i] as { index: number }).index, what).toBe(theirs.index);
          else if (theirs.allowed && distinct && seed % 2 === 0) expect(mine[i]!.used, what).toEqual(theirs.used);
          // (Fractions: to the last bits, which the memory store's undo of a refused set, (t + c) - c, moves.)
          else if (theirs.allowed && distinct)
            for (const [j, u] of mine[i]!.used.entries()) expect(u, what).toBeCloseTo(theirs.used[j]!, 12);
          if (mine[i]!.allowed) allowed++;
          else refused++;
        }
      }
    }
    expect(allowed).toBeGreaterThan(100);
    expect(refused).toBeGreaterThan(100);
  }, 120_000);

  it('keeps counting small costs once a total passes 1e14 (a limit of 1e14 + 3 allows 3 more of cost 1)', async () => {
    const memory = new MemoryCounterStore();
    const big: CounterCharge = { key: 'bytes', cost: 1e14, limit: 1e14 + 3, windowMs: HOUR };
    const small: CounterCharge = { ...big, cost: 1 };
    expect((await redis.counters.consume([big])).allowed).toBe(true);
    expect((await memory.consume([big])).allowed).toBe(true);
    const ran = { redis: 0, memory: 0 };
    for (let i = 0; i < 10; i++) {
      if ((await redis.counters.consume([small])).allowed) ran.redis++;
      if ((await memory.consume([small])).allowed) ran.memory++;
    }
    expect(ran.memory).toBe(3);
    expect(ran.redis).toBe(ran.memory);
  });
});
