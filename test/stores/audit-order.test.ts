/**
 * The PostgreSQL audit trail in time order (issue 22): records come back ordered by the decision's time (then
 * their insertion), `limit` keeps the newest, and closing the stores writes what was still queued. Through the
 * route a user takes: worker processes auditing a registry with `auditRegistry`, read back by `toolgate audit`.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vi } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { auditRegistry } from '../../src/stores/audit.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import type { AuditRecord } from '../../src/stores/types.js';
import type { Decision } from '../../src/decision.js';
import { PG_URL, uniqueName } from './servers.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');

function node(script: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return exec(process.execPath, ['--import', 'tsx', script, ...args], { cwd: root, timeout: 120_000 });
}

async function auditWorker(schema: string, label: string, calls: number): Promise<string[]> {
  const { stdout } = await node(join(import.meta.dirname, 'audit-worker.ts'), [
    JSON.stringify({ pgUrl: PG_URL, schema, calls, label }),
  ]);
  return (JSON.parse(stdout.trim().split('\n').at(-1)!) as { announced: string[] }).announced;
}

async function toolgateAudit(schema: string, ...args: string[]): Promise<AuditRecord[]> {
  const { stdout } = await node(join(root, 'src/cli/main.ts'), [
    'audit',
    '--postgres',
    PG_URL,
    '--schema',
    schema,
    '--json',
    ...args,
  ]);
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditRecord);
}

describe('the PostgreSQL audit, read back in time order', () => {
  const schema = uniqueName('auditorder');
  let pg: PostgresStores;
  beforeAll(async () => {
    pg = new PostgresStores({ connectionString: PG_URL, schema });
    await pg.migrate();
  });
  afterAll(async () => {
    await pg.dropSchema();
    await pg.close();
  });

  it('one worker: every record written before close, in the order announced; --limit keeps the newest', async () => {
    const announced = await auditWorker(schema, 'w1', 400);
    expect(announced).toHaveLength(400);
    const all = await toolgateAudit(schema, '--limit', '1000');
    expect(all.map((r) => r.decision.callId)).toEqual(announced);
    const newest = await toolgateAudit(schema, '--limit', '5');
    expect(newest.map((r) => r.decision.callId)).toEqual(announced.slice(-5));
  }, 180_000);

  it('two workers at once: records in time order, and --limit 10 gives the ten latest of them', async () => {
    const [a, b] = await Promise.all([auditWorker(schema, 'w2', 300), auditWorker(schema, 'w3', 300)]);
    const records = (await pg.audit.query({ limit: 100_000 })).filter((r) => !r.decision.callId.startsWith('w1-'));
    expect(records).toHaveLength(600);
    const times = records.map((r) => Date.parse(r.time));
    expect(times).toEqual([...times].sort((x, y) => x - y));
    // Each worker's own records keep its order.
    for (const ids of [a!, b!]) {
      const mine = new Set(ids);
      expect(records.map((r) => r.decision.callId).filter((id) => mine.has(id))).toEqual(ids);
    }
    const latest = await toolgateAudit(schema, '--limit', '10');
    expect(latest.map((r) => r.decision.callId)).toEqual(records.slice(-10).map((r) => r.decision.callId));
  }, 180_000);
});

function record(callId: string, time: string): AuditRecord {
  const decision = {
    effect: 'allow',
    stage: 'policy',
    by: 'rule',
    layer: null,
    callId,
    tool: 'echo',
    canonical: 'echo',
    agent: 'a',
    tenant: 'acme',
    runId: null,
    parameters: {},
    rule: 'r',
    reason: 'ok',
    asked: null,
    policyVersion: null,
  } as Decision;
  return { time, route: 'registry', caller: null, session: null, decision, status: null };
}

describe('the PostgreSQL audit queue', () => {
  const schema = uniqueName('auditq');
  let pg: PostgresStores;
  beforeAll(async () => {
    pg = new PostgresStores({ connectionString: PG_URL, schema, auditQueueLimit: 3 });
    await pg.migrate();
  });
  afterAll(async () => {
    await pg.dropSchema();
    await pg.close();
  });

  it('orders by the time of the decision, not by insertion; limit keeps the newest by time', async () => {
    await pg.audit.write(record('late', '2026-01-01T00:00:02.000Z'));
    await pg.audit.write(record('early', '2026-01-01T00:00:01.000Z'));
    expect((await pg.audit.query({})).map((r) => r.decision.callId)).toEqual(['early', 'late']);
    expect((await pg.audit.query({ limit: 1 })).map((r) => r.decision.callId)).toEqual(['late']);
  });

  it('is bounded: a write past the bound is refused at once; a bad record fails alone, not its batch', async () => {
    const writes = ['a', 'b', 'c', 'd'].map((id, i) => pg.audit.write(record(`q-${id}`, `2026-01-02T00:00:0${i}Z`)));
    const bad = pg.audit.write(record('q-bad', 'not a time'));
    const settled = await Promise.allSettled([...writes, bad]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'rejected']);
    expect(String((settled[3] as PromiseRejectedResult).reason)).toMatch(/queue is full \(3 records waiting\)/);
    expect(String((settled[4] as PromiseRejectedResult).reason)).toMatch(/"time" is "not a time"/);
    const ids = (await pg.audit.query({ since: '2026-01-02T00:00:00Z' })).map((r) => r.decision.callId);
    expect(ids).toEqual(['q-a', 'q-b', 'q-c']);
  });

  it('auditRegistry: flush() waits for the writes; a full queue is reported, never changes a decision', async () => {
    const registry = new ToolRegistry();
    registry.register(defineTool({ name: 'echo', parameters: { type: 'object' }, execute: () => 'ok' }));
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const audit = auditRegistry(registry, pg.audit);
    const results = await Promise.all(Array.from({ length: 5 }, () => registry.invoke('echo', {})));
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok']);
    await audit.close();
    expect(warn.mock.calls.some(([m]) => /audit sink failed: the PostgreSQL audit queue is full/.test(String(m)))).toBe(
      true,
    );
    warn.mockRestore();
    // Nothing is recorded after close.
    await registry.invoke('echo', {});
    await pg.audit.flush();
    expect((await pg.audit.query({ tool: 'echo', since: Date.now() - 60_000 })).length).toBe(3);
  });
});
