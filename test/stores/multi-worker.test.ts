/**
 * Many workers, one gate: separate Node processes (child_process + tsx) sharing SQLite (one machine),
 * PostgreSQL, or PostgreSQL + Redis. Each scenario uses its own schema / key prefix / file.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import type { Ledger } from '../../src/stores/types.js';
import { PG_URL, Proxy, REDIS_URL, uniqueName } from './servers.js';
import type { WorkerJob } from './worker.js';

const run = promisify(execFile);
const WORKER = join(import.meta.dirname, 'worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-workers-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Exit {
  readonly code: number | null;
  readonly signal: string | null;
  readonly out: unknown;
  readonly stderr: string;
}

/** Runs one worker process to its end (a SIGKILL included). */
async function worker(job: WorkerJob): Promise<Exit> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)], {
      cwd: join(import.meta.dirname, '../..'),
      timeout: 60_000,
    });
    return { code: 0, signal: null, out: JSON.parse(stdout.trim().split('\n').at(-1)!), stderr };
  } catch (error) {
    const e = error as { code?: number; signal?: string; stdout?: string; stderr?: string };
    return { code: e.code ?? null, signal: e.signal ?? null, out: null, stderr: e.stderr ?? '' };
  }
}

function ok(exit: Exit): Record<string, unknown> {
  if (exit.code !== 0) throw new Error(`worker failed (${exit.code ?? exit.signal}): ${exit.stderr}`);
  return exit.out as Record<string, unknown>;
}

const executions = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

/** The backends the runner scenarios run against, with the ledger to inspect afterwards. */
const backends = ['sqlite', 'postgres', 'redis'] as const;

for (const backend of backends) {
  describe(`multi-worker (${backend === 'redis' ? 'PostgreSQL + Redis' : backend})`, () => {
    let base: WorkerJob;
    let ledger: Ledger;
    let close: () => Promise<void>;
    beforeAll(async () => {
      const schema = uniqueName('mw');
      const prefix = uniqueName('mw');
      const sqliteFile = join(dir, `${schema}.db`);
      base = { mode: 'pause', backend, sqliteFile, pgUrl: PG_URL, schema, redisUrl: REDIS_URL, prefix };
      if (backend === 'sqlite') {
        const s = new SqliteStores({ filename: sqliteFile });
        ledger = s.ledger;
        close = async () => s.close();
      } else {
        const pg = new PostgresStores({ connectionString: PG_URL, schema });
        await pg.migrate();
        ledger = pg.ledger;
        const redis = backend === 'redis' ? new RedisStores({ url: REDIS_URL, prefix }) : null;
        close = async () => {
          await pg.dropSchema();
          await pg.close();
          if (redis) {
            await redis.clear(prefix);
            await redis.close();
          }
        };
      }
    }, 60_000);
    afterAll(async () => close());

    /** Pauses a run in its own process; returns the hand-off file (state + a signed allow). */
    async function pause(label: string): Promise<{ handoff: string; executions: string }> {
      const handoff = join(dir, `${label}-${backend}.json`);
      const file = join(dir, `${label}-${backend}.executions`);
      const out = ok(await worker({ ...base, mode: 'pause', executions: file }));
      writeFileSync(handoff, JSON.stringify(out));
      return { handoff, executions: file };
    }

    it('a run paused in process A and resumed in process B executes the tool once', async () => {
      const { handoff, executions: file } = await pause('ab');
      expect(executions(file)).toEqual([]);
      const b = ok(await worker({ ...base, mode: 'resume', handoff, executions: file }));
      expect(b).toMatchObject({ status: 'completed', output: 'done: refunded 500 on A1' });
      expect(executions(file)).toHaveLength(1);
      // Resumed again (a retry after a lost response): the recorded outcome, not a second execution.
      const again = ok(await worker({ ...base, mode: 'resume', handoff, executions: file }));
      expect(again).toMatchObject({ status: 'completed', output: 'done: refunded 500 on A1' });
      expect(executions(file)).toHaveLength(1);
    }, 120_000);

    it('three processes resuming one approved state at once → the tool runs once and all three answer with its outcome', async () => {
      const { handoff, executions: file } = await pause('three');
      // The winner's tool takes a while, so the other two find its call held and wait for the outcome.
      const exits = await Promise.all(
        [0, 1, 2].map(() => worker({ ...base, mode: 'resume', handoff, executions: file, slowMs: 1500 })),
      );
      // None of them ends paused (asking a person again for a call that ran): each answers the model with the
      // settled outcome and completes.
      for (const exit of exits)
        expect(ok(exit)).toMatchObject({ status: 'completed', output: 'done: refunded 500 on A1' });
      expect(executions(file)).toHaveLength(1);
    }, 120_000);

    for (const crash of ['before-effect', 'after-effect'] as const) {
      it(`kill -9 ${crash === 'before-effect' ? 'between reservation and execution' : 'between execution and record'} → never executed twice; the row stays reserved and unrecorded`, async () => {
        const { handoff, executions: file } = await pause(crash);
        const died = await worker({ ...base, mode: 'resume', handoff, executions: file, crash, leaseMs: 1 });
        expect(died.signal).toBe('SIGKILL');
        expect(executions(file)).toHaveLength(crash === 'before-effect' ? 0 : 1);
        // What the store says afterwards: one reservation by the dead worker, no outcome, no record time.
        // The key binds the run's identity: run id, tenant, caller id, then the frame (root agent), turn and call.
        const runId = JSON.parse(readFileSync(handoff, 'utf8')).state.runId;
        const key = JSON.stringify([runId, 'acme', null, 'concierge', 0, 'call_0_0']);
        const row = await ledger.inspect(key);
        expect(row).toMatchObject({ outcome: null, recordedAt: null });
        // After the lease it reads as unknown — and is never reserved (run) again.
        expect(await ledger.reserve(key, 'operator', 60_000)).toMatchObject({ state: 'unknown', owner: row!.owner });
        const after = ok(await worker({ ...base, mode: 'resume', handoff, executions: file }));
        expect(after['status']).toBe('completed');
        expect(String(after['output'])).toMatch(/unknown/i);
        expect(executions(file)).toHaveLength(crash === 'before-effect' ? 0 : 1);
      }, 120_000);
    }

    {
      it('N processes × M calls against a limit of K → exactly K allowed in total', async () => {
        const N = 4;
        const M = 15;
        const K = 37;
        const prefix = uniqueName('lim');
        const exits = await Promise.all(
          Array.from({ length: N }, () => worker({ ...base, mode: 'limit', prefix, calls: M, limit: K })),
        );
        const allowed = exits.map((e) => Number(ok(e)['allowed']));
        expect(allowed.reduce((a, b) => a + b, 0)).toBe(K);
      }, 120_000);
    }
  });
}

describe('an approval outlives a resume that failed on a store (the README split: PostgreSQL + Redis nonces, separate processes)', () => {
  // The workers reach both servers through proxies this test owns, so it can make either unreachable to them.
  const pgProxy = new Proxy(5432);
  const redisProxy = new Proxy(6379);
  const schema = uniqueName('lost');
  const prefix = uniqueName('lost');
  let base: WorkerJob;
  let close: () => Promise<void>;
  beforeAll(async () => {
    await pgProxy.restore();
    await redisProxy.restore();
    const pg = new PostgresStores({ connectionString: PG_URL, schema });
    await pg.migrate();
    const redis = new RedisStores({ url: REDIS_URL, prefix });
    const pgUrl = new URL(PG_URL);
    pgUrl.host = `127.0.0.1:${pgProxy.port}`;
    base = {
      mode: 'pause',
      backend: 'redis',
      pgUrl: pgUrl.toString(),
      schema,
      redisUrl: `redis://127.0.0.1:${redisProxy.port}`,
      prefix,
    };
    close = async () => {
      await pg.dropSchema();
      await pg.close();
      await redis.clear(prefix);
      await redis.close();
    };
  }, 60_000);
  afterAll(async () => {
    await pgProxy.restore();
    await redisProxy.restore();
    await close();
    await pgProxy.cut();
    await redisProxy.cut();
  });

  for (const down of ['PostgreSQL', 'Redis'] as const) {
    it(`${down} drops during resume: the run fails closed, nothing runs, and the same approval resumes once it is back`, async () => {
      const label = `down-${down}`;
      const handoff = join(dir, `${label}.json`);
      const file = join(dir, `${label}.executions`);
      writeFileSync(handoff, JSON.stringify(ok(await worker({ ...base, mode: 'pause', executions: file }))));
      const proxy = down === 'PostgreSQL' ? pgProxy : redisProxy;
      await proxy.cut();
      const failed = await worker({ ...base, mode: 'resume', handoff, executions: file });
      await proxy.restore();
      // Fail closed: whatever the worker reports (a failed run, or an error), nothing ran.
      expect(failed.code !== 0 || (failed.out as { status?: unknown }).status === 'failed').toBe(true);
      expect(executions(file)).toEqual([]);
      // Nothing was used up: the approval is not "already used (replayed)" — the same state and decision
      // run the approved call, once.
      const back = ok(await worker({ ...base, mode: 'resume', handoff, executions: file }));
      expect(back).toMatchObject({ status: 'completed', output: 'done: refunded 500 on A1' });
      expect(executions(file)).toHaveLength(1);
    }, 120_000);
  }
});
