/**
 * Shared limits at Redis speed (issue 25 target 4), exact: the concurrent charges of one process are coalesced
 * into one script call (one round trip for many decisions), each charge set still decided in order and all or
 * nothing; across worker processes with requests in flight the total stays exact.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { RedisStores } from '../../src/stores/redis.js';
import type { CounterCharge } from '../../src/stores/types.js';
import { REDIS_URL, uniqueName } from '../stores/servers.js';
import type { LimitJob } from './limit-worker.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-redis-batch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const one = (key: string, cost: number, limit: number, windowMs = 60_000): CounterCharge[] => [
  { key, cost, limit, windowMs },
];

describe('Redis counters: concurrent charges of one process in one script call', () => {
  const prefix = uniqueName('batch');
  let redis: RedisStores;
  beforeAll(() => {
    redis = new RedisStores({ url: REDIS_URL, prefix });
  });
  afterAll(async () => {
    await redis.clear(prefix);
    await redis.close();
  });

  it('300 concurrent charges against a limit of 37: exactly 37 allowed, in a handful of round trips', async () => {
    const calls = vi.spyOn(redis.client, 'evalsha');
    const verdicts = await Promise.all(Array.from({ length: 300 }, () => redis.counters.consume(one('race', 1, 37))));
    expect(verdicts.filter((v) => v.allowed)).toHaveLength(37);
    // The first charge went alone (nothing was in flight); the other 299 waited for it and went together.
    expect(calls.mock.calls.length).toBeLessThanOrEqual(3);
    calls.mockRestore();
    // In order: the first 37 made are the ones allowed, and the totals count up.
    expect(verdicts.slice(0, 37).every((v) => v.allowed)).toBe(true);
    expect(verdicts.slice(0, 37).map((v) => v.used[0])).toEqual(Array.from({ length: 37 }, (_, i) => i + 1));
    expect(await redis.counters.peek('race', 60_000)).toBe(37);
  });

  it('in one batch each set is all or nothing, and a refusal says when the batch’s own charges free a slot', async () => {
    const sets: CounterCharge[][] = [
      one('b-x', 1, 1), // allowed
      [
        { key: 'b-y', cost: 1, limit: 5, windowMs: 60_000 },
        { key: 'b-x', cost: 1, limit: 1, windowMs: 60_000 }, // refused: b-y must not be charged either
      ],
      one('b-y', 2, 2), // allowed: the refused set spent nothing of b-y
      one('b-x', 1, 1), // refused; the slot frees when the first set's charge leaves the window
      [
        { key: 'b-z', cost: 2, limit: 3, windowMs: 60_000 },
        { key: 'b-z', cost: 2, limit: 3, windowMs: 60_000 }, // two on one counter must fit together
      ],
    ];
    // A first call in flight, so the five below go in one batch.
    const first = redis.counters.consume(one('b-warm', 1, 10));
    const verdicts = await Promise.all(sets.map((s) => redis.counters.consume(s)));
    await first;
    expect(verdicts.map((v) => v.allowed)).toEqual([true, false, true, false, false]);
    expect(verdicts[1]).toMatchObject({ allowed: false, index: 1, used: [0, 1] });
    expect(verdicts[2]).toMatchObject({ allowed: true, used: [2] });
    const retry = verdicts[3]!;
    expect(!retry.allowed && retry.retryAfterMs).toBeGreaterThan(59_000);
    expect(!retry.allowed && retry.retryAfterMs).toBeLessThanOrEqual(60_001);
    expect(verdicts[4]).toMatchObject({ allowed: false, index: 1 });
    expect(await redis.counters.peek('b-x', 60_000)).toBe(1);
    expect(await redis.counters.peek('b-y', 60_000)).toBe(2);
    expect(await redis.counters.peek('b-z', 60_000)).toBe(0);
  });

  it('a batch that fails rejects every call in it (each is refused at stage store), and the next one goes through', async () => {
    const calls = vi.spyOn(redis.client, 'evalsha').mockRejectedValueOnce(new Error('READONLY replica'));
    const results = await Promise.allSettled([redis.counters.consume(one('f', 1, 5))]);
    expect(results[0]).toMatchObject({
      status: 'rejected',
      reason: expect.objectContaining({ message: 'READONLY replica' }),
    });
    calls.mockRestore();
    expect(await redis.counters.consume(one('f', 1, 5))).toMatchObject({ allowed: true, used: [1] });
  });
});

describe('worker processes with requests in flight, on one Redis counter', () => {
  const prefix = uniqueName('batchmw');
  afterAll(async () => {
    const redis = new RedisStores({ url: REDIS_URL, prefix });
    await redis.clear(prefix);
    await redis.close();
  });

  it('4 processes × 150 calls, 32 in flight each, against a tenant limit of 211: exactly 211 ran', async () => {
    const policy = `version: 1
tenants:
  acme: {}
rules:
  - { name: refunds, tools: [refund], result: allow }
limits:
  - { name: refunds, per: [tenant], tools: [refund], max: 211, window: 1h }
`;
    const executions = join(dir, 'executions.log');
    const job: LimitJob = {
      backend: 'redis',
      redisUrl: REDIS_URL,
      prefix,
      policy,
      tenants: ['acme'],
      calls: 150,
      concurrency: 32,
      executions,
    };
    const outs = await Promise.all(
      Array.from({ length: 4 }, async () => {
        const { stdout } = await exec(
          process.execPath,
          ['--import', 'tsx', join(import.meta.dirname, 'limit-worker.ts'), JSON.stringify(job)],
          { cwd: root, timeout: 120_000 },
        );
        return JSON.parse(stdout.trim().split('\n').at(-1)!) as {
          ran: Record<string, number>;
          stages: Record<string, number>;
        };
      }),
    );
    expect(outs.reduce((sum, o) => sum + (o.ran['acme'] ?? 0), 0)).toBe(211);
    expect(outs.reduce((sum, o) => sum + (o.stages['limit'] ?? 0), 0)).toBe(600 - 211);
    expect(existsSync(executions) ? readFileSync(executions, 'utf8').split('\n').filter(Boolean) : []).toHaveLength(
      211,
    );
  }, 180_000);
});
