/**
 * Ledger tooling (issue 24 item 7): `toolgate ledger list --unknown` finds the row a killed worker left — a
 * real worker process killed between reserve and record — and `toolgate ledger settle` records it (audited),
 * after which a resume answers the model with the settlement and runs nothing. On SQLite and PostgreSQL, with
 * the real command in a process of its own; the Redis ledger through the same command.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import type { LedgerEntry } from '../../src/stores/types.js';
import { PG_URL, REDIS_URL, uniqueName } from './servers.js';
import type { WorkerJob } from './worker.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-ledger-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Exit {
  readonly code: number;
  readonly signal: string | null;
  readonly stdout: string;
  readonly stderr: string;
}

async function node(args: readonly string[]): Promise<Exit> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', ...args], {
      cwd: root,
      timeout: 120_000,
    });
    return { code: 0, signal: null, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; signal?: string; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, signal: e.signal ?? null, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const worker = (job: WorkerJob) => node([join(import.meta.dirname, 'worker.ts'), JSON.stringify(job)]);
const toolgate = (...args: string[]) => node([join(root, 'src/cli/main.ts'), ...args]);
const lastJson = (out: string): Record<string, unknown> =>
  JSON.parse(out.trim().split('\n').at(-1)!) as Record<string, unknown>;
const rows = (out: string): LedgerEntry[] =>
  out
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as LedgerEntry);
const lines = (file: string): string[] =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [];

for (const backend of ['sqlite', 'postgres'] as const) {
  describe(`toolgate ledger on ${backend}`, () => {
    const schema = uniqueName('ledger');
    const sqliteFile = join(dir, `${schema}.db`);
    const store = backend === 'sqlite' ? ['--sqlite', sqliteFile] : ['--postgres', PG_URL, '--schema', schema];
    let pg: PostgresStores | null = null;
    beforeAll(async () => {
      if (backend === 'postgres') {
        pg = new PostgresStores({ connectionString: PG_URL, schema });
        await pg.migrate();
      }
    });
    afterAll(async () => {
      await pg?.dropSchema();
      await pg?.close();
    });

    it('list --unknown finds the row of a worker killed between execution and record; settle records it once', async () => {
      const base: WorkerJob = { mode: 'pause', backend, sqliteFile, pgUrl: PG_URL, schema };
      const executions = join(dir, `${schema}.executions`);
      const handoff = join(dir, `${schema}.json`);
      const paused = await worker({ ...base, executions });
      expect(paused.code).toBe(0);
      writeFileSync(handoff, JSON.stringify(lastJson(paused.stdout)));
      const died = await worker({ ...base, mode: 'resume', handoff, executions, crash: 'after-effect', leaseMs: 1 });
      expect(died.signal).toBe('SIGKILL');
      expect(lines(executions)).toHaveLength(1);

      const listed = await toolgate('ledger', 'list', '--unknown', '--json', ...store);
      expect(listed.code).toBe(0);
      const unknown = rows(listed.stdout);
      expect(unknown).toHaveLength(1);
      const row = unknown[0]!;
      expect(row).toMatchObject({ outcome: null, recordedAt: null });
      expect(JSON.parse(row.key)).toEqual([
        (JSON.parse(readFileSync(handoff, 'utf8')) as { state: { runId: string } }).state.runId,
        'acme',
        null,
        'concierge',
        0,
        'call_0_0',
      ]);
      // The human table names it as unknown, with its worker.
      const text = await toolgate('ledger', 'list', '--unknown', ...store);
      expect(text.stdout).toContain('unknown');
      expect(text.stdout).toContain(row.owner);
      expect((await toolgate('ledger', 'list', '--unknown', '--since', '1m', '--json', ...store)).stdout).toContain(
        row.owner,
      );

      const audit = join(dir, `${schema}.audit.jsonl`);
      const settled = await toolgate(
        'ledger',
        'settle',
        row.key,
        '--outcome',
        'ran',
        '--by',
        'alice',
        '--note',
        'refund seen in the PSP',
        '--audit',
        audit,
        ...store,
      );
      expect(settled.code).toBe(0);
      expect(settled.stdout).toMatch(/settled .*: ran \(by alice\)/);
      expect(lines(audit).map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([
        expect.objectContaining({
          type: 'ledger',
          event: 'settled',
          key: row.key,
          outcome: 'ran',
          by: 'alice',
          owner: row.owner,
        }),
      ]);
      // Once only: a second settle changes nothing and says why (exit 1).
      const twice = await toolgate('ledger', 'settle', row.key, '--outcome', 'not-run', '--by', 'bob', ...store);
      expect(twice.code).toBe(1);
      expect(twice.stderr).toMatch(/settled already \(ran, by alice\); nothing was changed/);
      expect(rows((await toolgate('ledger', 'list', '--unknown', '--json', ...store)).stdout)).toEqual([]);
      const all = rows((await toolgate('ledger', 'list', '--json', ...store)).stdout);
      expect(all.find((r) => r.key === row.key)?.settlement).toMatchObject({
        outcome: 'ran',
        by: 'alice',
        note: 'refund seen in the PSP',
      });

      // The run resumed again: answered from the settlement, the tool not run a second time.
      const after = await worker({ ...base, mode: 'resume', handoff, executions });
      expect(after.code).toBe(0);
      expect(String(lastJson(after.stdout)['output'])).toMatch(
        /The call ran; its result was not recorded \(an operator, alice/,
      );
      expect(lines(executions)).toHaveLength(1);
    }, 240_000);

    it('settle refuses bad input, and a row that is missing', async () => {
      const missing = await toolgate('ledger', 'settle', 'no-such-key', '--outcome', 'ran', '--by', 'ops', ...store);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/there is no such row/);
      const bad = await toolgate('ledger', 'settle', 'k', '--outcome', 'maybe', '--by', 'ops', ...store);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toMatch(/--outcome must be ran or not-run/);
      expect((await toolgate('ledger', 'settle', 'k', '--outcome', 'ran', ...store)).stderr).toMatch(
        /--by <name> is required/,
      );
      expect((await toolgate('ledger', 'list', '--since', 'soon', ...store)).stderr).toMatch(
        /--since must be ISO 8601/,
      );
      expect((await toolgate('ledger', 'list')).stderr).toMatch(
        /give exactly one of: --postgres <url>, --sqlite <file>, --redis <url>/,
      );
    }, 120_000);
  });
}

describe('toolgate ledger on Redis', () => {
  const prefix = uniqueName('ledger');
  let redis: RedisStores;
  beforeAll(() => {
    redis = new RedisStores({ url: REDIS_URL, prefix });
  });
  afterAll(async () => {
    await redis.clear(prefix);
    await redis.close();
  });

  it('lists the unknown row and a held one is not settled', async () => {
    expect(await redis.ledger.reserve('lost', 'dead-worker', 0)).toEqual({ state: 'reserved' });
    expect(await redis.ledger.reserve('running', 'live-worker', 60_000)).toEqual({ state: 'reserved' });
    await new Promise((r) => setTimeout(r, 5));
    const store = ['--redis', REDIS_URL, '--redis-prefix', prefix];
    expect(rows((await toolgate('ledger', 'list', '--unknown', '--json', ...store)).stdout).map((r) => r.key)).toEqual([
      'lost',
    ]);
    const held = await toolgate('ledger', 'settle', 'running', '--outcome', 'ran', '--by', 'ops', ...store);
    expect(held.code).toBe(1);
    expect(held.stderr).toMatch(/still holds it until .*: it may be running/);
    expect((await toolgate('ledger', 'settle', 'lost', '--outcome', 'not-run', '--by', 'ops', ...store)).code).toBe(0);
    expect(await redis.ledger.reserve('lost', 'w', 60_000)).toMatchObject({
      state: 'settled',
      outcome: { isError: true },
    });
  }, 120_000);
});
