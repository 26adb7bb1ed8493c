/**
 * A paused run lives in the shared store, not in the memory of the process that paused it: process A runs
 * until an approval, tracks it through an inbox on PostgreSQL, and exits; inbox processes B and C on the same
 * store adopt the stored approval; a person answers it in B's inbox (over HTTP, as the page's form does);
 * both B and C resume the run (B as it answered, C on PostgreSQL's NOTIFY) — and the tool runs once.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStores } from '../../src/stores/postgres.js';
import { answer } from '../inbox/fixture.js';
import { linesOf } from '../lines.js';
import { PG_URL, uniqueName } from './servers.js';
import type { WorkerJob } from './worker.js';

const WORKER = join(import.meta.dirname, 'worker.ts');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-elsewhere-'));
const children = new Set<ChildProcess>();
afterAll(() => {
  for (const child of children) child.kill('SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** A worker process whose JSON lines are read one at a time. */
function start(job: WorkerJob): { next(): Promise<Record<string, unknown>>; exited: Promise<number | null> } {
  const child = spawn(process.execPath, ['--import', 'tsx', WORKER, JSON.stringify(job)], {
    cwd: join(import.meta.dirname, '../..'),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code) => {
      children.delete(child);
      resolve(code);
    }),
  );
  const lines = linesOf(child.stdout!);
  return {
    async next() {
      const line = await lines.next();
      if (line.done) throw new Error(`the worker ended (${String(await exited)}) without a line: ${stderr}`);
      return JSON.parse(line.value) as Record<string, unknown>;
    },
    exited,
  };
}

describe('a paused run resumed from an inbox in another process (PostgreSQL, separate processes)', () => {
  const schema = uniqueName('elsewhere');
  let pg: PostgresStores;
  beforeAll(async () => {
    pg = new PostgresStores({ connectionString: PG_URL, schema });
    await pg.migrate();
  }, 60_000);
  afterAll(async () => {
    await pg.dropSchema();
    await pg.close();
  });

  it('process A tracks it and exits; B and C adopt it; answered in B, it runs once', async () => {
    const executions = join(dir, 'executions');
    const base: WorkerJob = { mode: 'track', backend: 'postgres', pgUrl: PG_URL, schema, executions };
    const a = start(base);
    const tracked = await a.next();
    expect(await a.exited).toBe(0);
    const [id] = tracked['ids'] as string[];
    // The approval is stored with the run's signed state: that is all another process needs.
    const stored = await pg.approvals.get(id!);
    expect(stored).toMatchObject({ source: 'runner', status: 'pending', paused: { runId: tracked['runId'] } });

    const b = start({ ...base, mode: 'inbox' });
    const c = start({ ...base, mode: 'inbox' });
    const [atB, atC] = [await b.next(), await c.next()];
    expect(atB['adopted']).toBe(1);
    expect(atC['adopted']).toBe(1);
    const answered = await answer(String(atB['url']), id!, 'alice@example.com', { effect: 'allow' });
    expect(answered.status).toBe(200);

    const [doneB, doneC] = await Promise.all([b.next(), c.next()]);
    for (const done of [doneB, doneC])
      expect(done).toEqual({ status: 'completed', output: 'done: refunded 500 on A1' });
    expect(await b.exited).toBe(0);
    expect(await c.exited).toBe(0);
    const ran = existsSync(executions) ? readFileSync(executions, 'utf8').split('\n').filter(Boolean) : [];
    expect(ran).toHaveLength(1);
    expect((await pg.approvals.get(id!))?.status).toBe('answered');
  }, 120_000);
});
