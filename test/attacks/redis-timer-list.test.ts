/**
 * Attack (issue 25, RedisStores' timer-list interval): the stores keep one unref'd interval of the command
 * timeout alive. `close()` clears it, but close only quits a client the stores created: a server that builds
 * RedisStores over its own client (per tenant, per request) has no reason to call it — and each construction
 * left one more interval firing for the life of the process (10,000 constructions: 5,000 wake-ups a second at
 * the default 2 s). The number of live intervals must not grow with the constructions.
 */
import { afterAll, describe, expect, it, vi } from 'vitest';
import { Redis } from 'ioredis';
import { RedisStores } from '../../src/stores/redis.js';
import { REDIS_URL } from '../stores/servers.js';

const client = new Redis(REDIS_URL, { lazyConnect: true, commandTimeout: 1234 });
afterAll(() => client.disconnect());

describe('attack: RedisStores over a client of its own, never closed', () => {
  it('does not leave one interval per construction', async () => {
    const made = new Set<unknown>();
    const set = vi.spyOn(globalThis, 'setInterval');
    const clear = vi.spyOn(globalThis, 'clearInterval');
    try {
      for (let i = 0; i < 200; i++) new RedisStores({ client, prefix: `p${i}` });
      for (const r of set.mock.results) made.add(r.value);
      for (const [t] of clear.mock.calls) made.delete(t);
    } finally {
      set.mockRestore();
      clear.mockRestore();
    }
    expect(made.size).toBeLessThanOrEqual(1);
  });

  it('a store that is closed and one that is not: the one left still works', async () => {
    const a = new RedisStores({ client, prefix: 'pa' });
    const b = new RedisStores({ client, prefix: 'pb' });
    await a.close();
    await b.close();
    await b.close(); // twice: no harm
    expect(typeof a.counters.consume).toBe('function');
  });
});
