/**
 * Shared limits at Redis speed (issue 25 target 4), exact: the concurrent charges of one process are coalesced
 * into one server step (one Redis script call, one PostgreSQL function call: one round trip for many
 * decisions), each charge set still decided in order and all or nothing; across worker processes with requests
 * in flight the total stays exact.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import pg from 'pg';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import type { CounterCharge, CounterStore } from '../../src/stores/types.js';
import { PG_URL, REDIS_URL, uniqueName } from '../stores/servers.js';
import type { LimitJob } from './limit-worker.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-redis-batch-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const one = (key: string, cost: number, limit: number, windowMs = 60_000): CounterCharge[] => [
  { key, cost, limit, windowMs },
];

interface Backend {
  readonly counters: CounterStore;
  /** Counts the server steps (round trips) made for counters. */
  spy(): { readonly calls: () => number; fail(error: Error): void; restore(): void };
  close(): Promise<void>;
}

const backends: Record<string, () => Promise<Backend>> = {
  redis: async () => {
    const prefix = uniqueName('batch');
    const redis = new RedisStores({ url: REDIS_URL, prefix });
    return {
      counters: redis.counters,
      spy: () => {
        const s = vi.spyOn(redis.client, 'evalsha');
        return {
          calls: () => s.mock.calls.length,
          fail: (error) => void s.mockRejectedValueOnce(error),
          restore: () => s.mockRestore(),
        };
      },
      close: async () => {
        await redis.clear(prefix);
        await redis.close();
      },
    };
  },
  postgres: async () => {
    const schema = uniqueName('batch');
    const pool = new pg.Pool({ connectionString: PG_URL });
    const stores = new PostgresStores({ pool, schema });
    await stores.migrate();
    return {
      counters: stores.counters,
      spy: () => {
        const s = vi.spyOn(pool, 'query');
        const counting = () => s.mock.calls.filter((c) => /consume_counter/.test(String(c[0]))).length;
        return {
          calls: counting,
          fail: (error) => void s.mockRejectedValueOnce(error as never),
          restore: () => s.mockRestore(),
        };
      },
      close: async () => {
        await stores.dropSchema();
        await stores.close();
        await pool.end();
      },
    };
  },
};

for (const [name, make] of Object.entries(backends)) {
  describe(`${name} counters: concurrent charges of one process in one server step`, () => {
    let b: Backend;
    beforeAll(async () => {
      b = await make();
    });
    afterAll(async () => b.close());

    it('300 concurrent charges against a limit of 37: exactly 37 allowed, in a handful of round trips', async () => {
      const spy = b.spy();
      const verdicts = await Promise.all(Array.from({ length: 300 }, () => b.counters.consume(one('race', 1, 37))));
      expect(verdicts.filter((v) => v.allowed)).toHaveLength(37);
      // The first charge went alone (nothing was in flight); the other 299 waited for it and went together.
      expect(spy.calls()).toBeLessThanOrEqual(3);
      spy.restore();
      // In order: the first 37 made are the ones allowed, and the totals count up.
      expect(verdicts.slice(0, 37).every((v) => v.allowed)).toBe(true);
      expect(verdicts.slice(0, 37).map((v) => v.used[0])).toEqual(Array.from({ length: 37 }, (_, i) => i + 1));
      expect(await b.counters.peek('race', 60_000)).toBe(37);
    });

    it('in one batch each set is all or nothing, and a refusal says when a slot frees', async () => {
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
      const spy = b.spy();
      const first = b.counters.consume(one('b-warm', 1, 10));
      const verdicts = await Promise.all(sets.map((s) => b.counters.consume(s)));
      await first;
      expect(spy.calls()).toBe(2);
      spy.restore();
      expect(verdicts.map((v) => v.allowed)).toEqual([true, false, true, false, false]);
      expect(verdicts[1]).toMatchObject({ allowed: false, index: 1, used: [0, 1] });
      expect(verdicts[2]).toMatchObject({ allowed: true, used: [2] });
      const retry = verdicts[3]!;
      expect(!retry.allowed && retry.retryAfterMs).toBeGreaterThan(59_000);
      expect(!retry.allowed && retry.retryAfterMs).toBeLessThanOrEqual(60_001);
      expect(verdicts[4]).toMatchObject({ allowed: false, index: 1 });
      expect(await b.counters.peek('b-x', 60_000)).toBe(1);
      expect(await b.counters.peek('b-y', 60_000)).toBe(2);
      expect(await b.counters.peek('b-z', 60_000)).toBe(0);
    });

    it('a server step that fails rejects every call in it (each is refused at stage store); the next goes through', async () => {
      const spy = b.spy();
      spy.fail(new Error('server gone'));
      const results = await Promise.allSettled([
        b.counters.consume(one('f', 1, 5)),
        b.counters.consume(one('f', 1, 5)),
      ]);
      spy.restore();
      expect(results[0]).toMatchObject({
        status: 'rejected',
        reason: expect.objectContaining({ message: 'server gone' }),
      });
      expect(await b.counters.consume(one('f', 1, 5))).toMatchObject({ allowed: true });
    });
  });
}

for (const backend of ['redis', 'postgres'] as const) {
  describe(`worker processes with requests in flight, on one ${backend} counter`, () => {
    const prefix = uniqueName('batchmw');
    let pgStores: PostgresStores | null = null;
    beforeAll(async () => {
      if (backend === 'postgres') {
        pgStores = new PostgresStores({ connectionString: PG_URL, schema: prefix });
        await pgStores.migrate();
      }
    });
    afterAll(async () => {
      if (pgStores) {
        await pgStores.dropSchema();
        await pgStores.close();
        return;
      }
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
      const executions = join(dir, `${backend}-executions.log`);
      const job: LimitJob = {
        backend,
        redisUrl: REDIS_URL,
        prefix,
        pgUrl: PG_URL,
        schema: prefix,
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
}
