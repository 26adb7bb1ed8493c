/**
 * The Redis counter log (one list per counter: a header "total until oldest", then "ms:cost" entries in time
 * order), against the real server: an expired head longer than one read is trimmed exactly, a refusal's retry
 * time reads past the first chunk, a clock that stepped back only ever keeps a count longer, the TTL is moved
 * only when it would end within a window, and a sorted set left by the earlier layout is converted in place
 * with its count kept (a worker of the new version never restarts a limit the old one was counting).
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisStores } from '../../src/stores/redis.js';
import { REDIS_URL, uniqueName } from './servers.js';

const prefix = uniqueName('rlog');
let redis: RedisStores;
/** A plain client for reading and writing the keys by hand. */
let raw: Redis;
beforeAll(() => {
  redis = new RedisStores({ url: REDIS_URL, prefix });
  raw = new Redis(REDIS_URL);
});
afterAll(async () => {
  await redis.clear(prefix);
  await redis.close();
  raw.disconnect();
});

const keyOf = (name: string): string => `${prefix}:c:${name}`;
async function serverNow(): Promise<number> {
  const [s, us] = await raw.time();
  return Number(s) * 1000 + Math.floor(Number(us) / 1000);
}
/** Writes a log by hand: entries [at, cost] in list order. */
async function writeLog(name: string, entries: readonly (readonly [number, number])[], ttlMs = 600_000): Promise<void> {
  const total = entries.reduce((sum, [, cost]) => sum + cost, 0);
  const now = await serverNow();
  await raw.del(keyOf(name));
  await raw.rpush(
    keyOf(name),
    `${total} ${now + ttlMs} ${entries[0]![0]}`,
    ...entries.map(([at, cost]) => `${at}:${cost}`),
  );
  await raw.pexpire(keyOf(name), ttlMs);
}
const charge = (key: string, cost: number, limit: number, windowMs = 60_000) =>
  redis.counters.consume([{ key, cost, limit, windowMs }]);

describe('the Redis counter log', () => {
  it('drops an expired head longer than one read (150 entries) exactly, keeping the rest', async () => {
    const now = await serverNow();
    await writeLog('trim', [
      ...Array.from({ length: 150 }, () => [now - 120_000, 1] as const),
      ...Array.from({ length: 30 }, () => [now - 1000, 2] as const),
    ]);
    expect(await charge('trim', 1, 1000)).toMatchObject({ allowed: true, used: [61] });
    expect(await raw.llen(keyOf('trim'))).toBe(1 + 30 + 1);
    expect((await raw.lindex(keyOf('trim'), 0))!.split(' ')[0]).toBe('61');
    expect(await redis.counters.peek('trim', 60_000)).toBe(61);
  });

  it('deletes a log whose every entry has left the window (a total of 0 exactly)', async () => {
    const now = await serverNow();
    await writeLog(
      'gone',
      Array.from({ length: 230 }, () => [now - 120_000, 0.1] as const),
    );
    expect(await charge('gone', 0.3, 0.3)).toMatchObject({ allowed: true, used: [0.3] });
    expect(await raw.llen(keyOf('gone'))).toBe(2);
  });

  it('a refusal reads past the first 100 entries for its retry time', async () => {
    const now = await serverNow();
    await writeLog('retry', [
      ...Array.from({ length: 100 }, () => [now - 20_000, 1] as const),
      ...Array.from({ length: 50 }, () => [now - 10_000, 1] as const),
    ]);
    // 150 used of 150; a cost of 120 needs the first 120 entries gone: the 120th is 10 s old.
    const v = await charge('retry', 120, 150);
    expect(v).toMatchObject({ allowed: false, used: [150], index: 0 });
    const retry = !v.allowed ? v.retryAfterMs! : 0;
    expect(retry).toBeGreaterThan(49_000);
    expect(retry).toBeLessThanOrEqual(50_001);
    expect(await raw.llen(keyOf('retry'))).toBe(151);
  });

  it('an entry behind a newer one (the clock stepped back) is counted until that one leaves: never early', async () => {
    const now = await serverNow();
    await writeLog('back', [
      [now - 1000, 1],
      [now - 120_000, 5],
    ]);
    // The 5 is older than the window but sits behind the 1: still counted, so a cost of 1 against 6 is refused.
    expect(await charge('back', 1, 6)).toMatchObject({ allowed: false, used: [6] });
    expect(await charge('back', 1, 7)).toMatchObject({ allowed: true, used: [7] });
  });

  it('sets the TTL to a window and at most a minute, and moves it only when it would end within a window', async () => {
    expect(await charge('ttl', 1, 10, 3_600_000)).toMatchObject({ allowed: true });
    const first = await raw.pttl(keyOf('ttl'));
    expect(first).toBeGreaterThan(3_600_000);
    expect(first).toBeLessThanOrEqual(3_660_000);
    await new Promise((r) => setTimeout(r, 30));
    expect(await charge('ttl', 1, 10, 3_600_000)).toMatchObject({ allowed: true, used: [2] });
    // Not moved: still counting down from the first charge's deadline.
    expect(await raw.pttl(keyOf('ttl'))).toBeLessThan(first);
    // A window of 1 s: a deadline 2 s away still covers it; one of 1 h moves it.
    const short = await raw.pttl(keyOf('ttl'));
    await raw.pexpire(keyOf('ttl'), 500);
    const h = (await raw.lindex(keyOf('ttl'), 0))!.split(' ');
    await raw.lset(keyOf('ttl'), 0, `${h[0]} ${(await serverNow()) + 500} ${h[2]}`);
    expect(await charge('ttl', 1, 10, 3_600_000)).toMatchObject({ allowed: true, used: [3] });
    expect(await raw.pttl(keyOf('ttl'))).toBeGreaterThan(short);
  });

  it("converts a sorted set of the earlier layout in place, keeping its count, its entries' times and its TTL", async () => {
    const now = await serverNow();
    const z = keyOf('old');
    await raw.del(z);
    await raw.zadd(z, now - 30_000, 'a1b2.1:3', now - 20_000, 'c3d4.2:2', now - 120_000, 'e5f6.1:4');
    await raw.pexpire(z, 300_000);
    // The earlier layout is read as it is (the 4 has left a 60 s window)…
    expect(await redis.counters.peek('old', 60_000)).toBe(5);
    // …and converted at the first charge: 5 within the window, this call's 1 makes 6.
    expect(await charge('old', 1, 6)).toMatchObject({ allowed: true, used: [6] });
    expect(await raw.type(z)).toBe('list');
    expect(await charge('old', 1, 6)).toMatchObject({ allowed: false, used: [6] });
    expect(await redis.counters.peek('old', 60_000)).toBe(6);
    const entries = await raw.lrange(z, 1, -1);
    expect(entries.slice(0, 2)).toEqual([`${now - 30_000}:3`, `${now - 20_000}:2`]);
    const ttl = await raw.pttl(z);
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
  });

  it('a server that lost its scripts (SCRIPT FLUSH, a restart) is sent the script again, and the count goes on', async () => {
    expect(await charge('flush', 1, 5)).toMatchObject({ allowed: true, used: [1] });
    await raw.script('FLUSH');
    expect(await charge('flush', 1, 5)).toMatchObject({ allowed: true, used: [2] });
    expect(await charge('flush', 1, 5)).toMatchObject({ allowed: true, used: [3] });
  });

  it('a key of another type is an error (the call is refused at stage store), never a count of 0', async () => {
    await raw.set(keyOf('str'), 'x');
    await expect(charge('str', 1, 5)).rejects.toThrow(/WRONGTYPE/);
  });
});
