/**
 * One behaviour suite for every store implementation: memory, SQLite, PostgreSQL and Redis (each where it
 * implements the interface). Atomicity is checked with many concurrent callers on one store here; across
 * processes in multi-worker.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryStores } from '../../src/stores/memory.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { RedisStores } from '../../src/stores/redis.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import type {
  ApprovalStore,
  AuditReader,
  AuditRecord,
  AuditSink,
  CounterStore,
  Ledger,
  NonceStore,
  PendingRecord,
  RememberStore,
} from '../../src/stores/types.js';
import type { Decision } from '../../src/decision.js';
import { PG_URL, REDIS_URL, uniqueName } from './servers.js';

interface Backend {
  readonly approvals?: ApprovalStore;
  readonly nonces?: NonceStore;
  readonly remembered?: RememberStore;
  readonly ledger?: Ledger;
  readonly counters?: CounterStore;
  readonly audit?: AuditSink & AuditReader;
  /** Approvals' watch hears other processes too. */
  readonly sharedWatch?: boolean;
}

const backends: Record<string, () => Promise<{ stores: Backend; close(): Promise<void> }>> = {
  memory: async () => ({ stores: memoryStores(), close: async () => undefined }),
  sqlite: async () => {
    const s = new SqliteStores();
    return { stores: s, close: async () => s.close() };
  },
  postgres: async () => {
    const s = new PostgresStores({ connectionString: PG_URL, schema: uniqueName('contract') });
    await s.migrate();
    return {
      stores: {
        approvals: s.approvals,
        nonces: s.nonces,
        remembered: s.remembered,
        ledger: s.ledger,
        counters: s.counters,
        audit: s.audit,
        sharedWatch: true,
      },
      close: async () => {
        await s.dropSchema();
        await s.close();
      },
    };
  },
  redis: async () => {
    const prefix = uniqueName('contract');
    const s = new RedisStores({ url: REDIS_URL, prefix });
    return {
      stores: { nonces: s.nonces, ledger: s.ledger, counters: s.counters },
      close: async () => {
        await s.clear(prefix);
        await s.close();
      },
    };
  },
};

function pending(id: string, overrides: Partial<PendingRecord> = {}): PendingRecord {
  const now = Date.now();
  return {
    id,
    kind: 'tool',
    binding: {
      kind: 'tool',
      owner: { kind: 'run', id: 'R1' },
      agent: 'support',
      callId: `call-${id}`,
      tool: 'refund',
      argsHash: 'ab'.repeat(32),
      policyVersion: 'v1',
      expiresAt: now + 60_000,
      nonce: `nonce-${id}`,
      rule: 'ask-refunds',
      pin: null,
      caller: 'alice',
      tenant: 'acme',
    },
    toolName: 'refund',
    canonical: 'refund',
    parameters: { amount: 5 },
    agent: 'support',
    tenant: 'acme',
    caller: 'alice',
    runId: 'R1',
    rule: 'ask-refunds',
    reason: 'refunds need a person',
    source: 'runner',
    createdAt: now,
    expiresAt: now + 60_000,
    status: 'pending',
    answer: null,
    answeredAt: null,
    ...overrides,
  };
}

function decision(over: Partial<Record<keyof Decision, unknown>> = {}): Decision {
  return {
    effect: 'allow',
    stage: 'policy',
    by: 'rule',
    layer: null,
    callId: 'c1',
    tool: 'refund',
    canonical: 'refund',
    agent: 'support',
    tenant: 'acme',
    runId: null,
    parameters: {},
    rule: 'r',
    reason: 'ok',
    asked: null,
    policyVersion: null,
    ...over,
  } as Decision;
}

for (const [name, make] of Object.entries(backends)) {
  describe(`stores: ${name}`, () => {
    let stores: Backend;
    let close: () => Promise<void>;
    beforeAll(async () => {
      ({ stores, close } = await make());
    });
    afterAll(async () => close());

    if (name !== 'redis') {
      it('approvals: put, get, list; the first answer wins and later ones are refused', async () => {
        const a = stores.approvals!;
        await a.put(pending('p1'));
        await a.put(pending('p1', { tenant: 'other' })); // a second put keeps the first
        await a.put(pending('p2', { tenant: 'globex', createdAt: Date.now() + 1 }));
        expect((await a.get('p1'))?.tenant).toBe('acme');
        expect((await a.get('p1'))?.parameters).toEqual({ amount: 5 });
        expect((await a.list({ tenant: 'acme' })).map((r) => r.id)).toEqual(['p1']);
        expect(await a.answer('p1', { effect: 'allow', approver: 'bob' })).toBe(true);
        expect(await a.answer('p1', { effect: 'deny' })).toBe(false);
        const got = await a.get('p1');
        expect(got?.status).toBe('answered');
        expect(got?.answer).toEqual({ effect: 'allow', approver: 'bob' });
        expect((await a.list({ status: 'pending' })).map((r) => r.id)).toEqual(['p2']);
        expect(await a.answer('missing', { effect: 'allow' })).toBe(false);
      });

      it('approvals: of 20 concurrent answers exactly one wins', async () => {
        const a = stores.approvals!;
        await a.put(pending('race'));
        const results = await Promise.all(
          Array.from({ length: 20 }, (_, i) =>
            a.answer('race', { effect: i % 2 ? 'allow' : 'deny', approver: `p${i}` }),
          ),
        );
        expect(results.filter(Boolean)).toHaveLength(1);
      });

      it('approvals: an expired request reads as expired and cannot be answered', async () => {
        const a = stores.approvals!;
        await a.put(pending('old', { createdAt: Date.now() - 10_000, expiresAt: Date.now() - 5_000 }));
        expect((await a.get('old'))?.status).toBe('expired');
        expect(await a.answer('old', { effect: 'allow' })).toBe(false);
        expect((await a.list({ status: 'expired' })).map((r) => r.id)).toContain('old');
      });

      it('approvals: a malformed answer is refused, never stored', async () => {
        const a = stores.approvals!;
        await a.put(pending('bad'));
        await expect(a.answer('bad', { effect: 'maybe' } as never)).rejects.toThrow(/effect/);
        expect((await a.get('bad'))?.status).toBe('pending');
      });

      it('approvals: watch hears puts and answers', async () => {
        const a = stores.approvals!;
        const heard: string[] = [];
        const stop = a.watch!((id) => heard.push(id));
        if (stores.sharedWatch) await new Promise((r) => setTimeout(r, 200)); // LISTEN is connected
        await a.put(pending('w1'));
        await a.answer('w1', { effect: 'deny', reason: 'no' });
        await expect.poll(() => heard.filter((id) => id === 'w1').length, { timeout: 5000 }).toBe(2);
        stop();
      });

      it('remembered answers: recall what was remembered; expired and malformed ones are not recalled', async () => {
        const r = stores.remembered!;
        expect(await r.recall('k1')).toBeUndefined();
        await r.remember('k1', { answer: 'allow', scope: 'run', mac: 'm1' });
        expect(await r.recall('k1')).toEqual({ answer: 'allow', scope: 'run', mac: 'm1' });
        await r.remember('k1', { answer: 'deny', scope: 'session', mac: 'm2', approver: 'bob' });
        expect(await r.recall('k1')).toEqual({ answer: 'deny', scope: 'session', mac: 'm2', approver: 'bob' });
        await r.remember('k2', { answer: 'allow', scope: 'run', mac: 'm' }, 0);
        expect(await r.recall('k2')).toBeUndefined();
        await expect(r.remember('k3', { answer: 'yes', scope: 'run', mac: 'm' } as never)).rejects.toThrow(
          /remembered answer/,
        );
      });

      it('audit: records are written and found by tenant, caller, tool, effect and time', async () => {
        const sink = stores.audit!;
        const t0 = Date.parse('2026-01-01T00:00:00Z');
        const rec = (i: number, over: Partial<Record<keyof Decision, unknown>>, caller: string): AuditRecord => ({
          time: new Date(t0 + i * 1000).toISOString(),
          route: 'registry',
          caller,
          session: null,
          decision: decision({ callId: `c${i}`, ...over }),
          status: null,
        });
        await sink.write(rec(0, {}, 'alice'));
        await sink.write(rec(1, { effect: 'deny', stage: 'limit', by: 'limit', canonical: 'refund' }, 'bob'));
        await sink.write(rec(2, { tenant: 'globex', canonical: 'lookup', tool: 'lookup' }, 'alice'));
        const ids = async (q: Parameters<AuditReader['query']>[0]) =>
          (await sink.query(q)).map((r) => r.decision.callId);
        expect(await ids({})).toEqual(['c0', 'c1', 'c2']);
        expect(await ids({ tenant: 'acme' })).toEqual(['c0', 'c1']);
        expect(await ids({ caller: 'alice' })).toEqual(['c0', 'c2']);
        expect(await ids({ tool: 'lookup' })).toEqual(['c2']);
        expect(await ids({ effect: 'deny' })).toEqual(['c1']);
        expect(await ids({ since: t0 + 1000 })).toEqual(['c1', 'c2']);
        expect(await ids({ until: new Date(t0 + 1000).toISOString() })).toEqual(['c0']);
        expect(await ids({ limit: 2 })).toEqual(['c1', 'c2']);
        const [first] = await sink.query({ effect: 'deny' });
        expect(first?.decision.stage).toBe('limit');
        await expect(sink.query({ since: 'yesterday' })).rejects.toThrow(/since/);
      });
    }

    it('nonces: consumed once; of 20 concurrent consumers exactly one wins', async () => {
      const n = stores.nonces!;
      expect(await n.consume('n1', 60_000)).toBe(true);
      expect(await n.consume('n1', 60_000)).toBe(false);
      const results = await Promise.all(Array.from({ length: 20 }, () => n.consume('n2', 60_000)));
      expect(results.filter(Boolean)).toHaveLength(1);
      await expect(n.consume('', 1)).rejects.toThrow(/nonce/);
    });

    it('ledger: reserve → record → settled; another owner is held off; never handed out twice', async () => {
      const l = stores.ledger!;
      expect(await l.reserve('call-1', 'w1', 60_000)).toEqual({ state: 'reserved' });
      const held = await l.reserve('call-1', 'w2', 60_000);
      expect(held.state).toBe('held');
      expect(held.state === 'held' && held.owner).toBe('w1');
      expect(await l.record('call-1', 'w2', { content: 'x', isError: false })).toBe(false);
      expect(await l.record('call-1', 'w1', { content: 'done', isError: false })).toBe(true);
      expect(await l.record('call-1', 'w1', { content: 'again', isError: false })).toBe(false);
      expect(await l.reserve('call-1', 'w3', 60_000)).toEqual({
        state: 'settled',
        outcome: { content: 'done', isError: false },
      });
      const row = await l.inspect('call-1');
      expect(row).toMatchObject({ key: 'call-1', owner: 'w1', outcome: { content: 'done', isError: false } });
      expect(row?.recordedAt).toEqual(expect.any(Number));
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => l.reserve('call-2', `w${i}`, 60_000)));
      expect(results.filter((r) => r.state === 'reserved')).toHaveLength(1);
    });

    it('ledger: a reservation past its lease and never recorded reads as unknown, and is never reserved again', async () => {
      const l = stores.ledger!;
      expect(await l.reserve('crashed', 'dead-worker', 0)).toEqual({ state: 'reserved' });
      await new Promise((r) => setTimeout(r, 5));
      const again = await l.reserve('crashed', 'w2', 60_000);
      expect(again).toMatchObject({ state: 'unknown', owner: 'dead-worker' });
      expect(await l.inspect('crashed')).toMatchObject({ owner: 'dead-worker', outcome: null, recordedAt: null });
      // The late worker's real outcome still replaces "unknown".
      expect(await l.record('crashed', 'dead-worker', { content: 'late', isError: false })).toBe(true);
      expect((await l.reserve('crashed', 'w3', 1)).state).toBe('settled');
    });

    it('ledger: list finds the unknown rows (oldest first, since a time); settle records an operator verdict once', async () => {
      const l = stores.ledger!;
      await new Promise((r) => setTimeout(r, 5));
      const since = Date.now();
      await new Promise((r) => setTimeout(r, 2));
      expect(await l.reserve('op-lost', 'dead-worker', 0)).toEqual({ state: 'reserved' });
      await new Promise((r) => setTimeout(r, 2));
      expect(await l.reserve('op-lost-2', 'dead-worker', 0)).toEqual({ state: 'reserved' });
      expect(await l.reserve('op-running', 'live-worker', 60_000)).toEqual({ state: 'reserved' });
      expect(await l.reserve('op-done', 'w', 60_000)).toEqual({ state: 'reserved' });
      expect(await l.record('op-done', 'w', { content: 'done', isError: false })).toBe(true);
      await new Promise((r) => setTimeout(r, 5));
      const unknown = await l.list({ unknown: true, since });
      expect(unknown.map((e) => e.key)).toEqual(['op-lost', 'op-lost-2']);
      expect(unknown[0]).toMatchObject({ owner: 'dead-worker', outcome: null, recordedAt: null });
      expect((await l.list({ since })).map((e) => e.key).sort()).toEqual(
        ['op-done', 'op-lost', 'op-lost-2', 'op-running'].sort(),
      );
      expect((await l.list({ unknown: true, since, limit: 1 })).map((e) => e.key)).toEqual(['op-lost']);
      expect(await l.list({ unknown: true, since: Date.now() + 60_000 })).toEqual([]);
      // Only an unknown row is settled: not one a live worker holds, not a recorded one, not a missing one.
      expect(await l.settle('op-running', { outcome: 'ran', by: 'ops' })).toBe(false);
      expect(await l.settle('op-done', { outcome: 'ran', by: 'ops' })).toBe(false);
      expect(await l.settle('op-nothing', { outcome: 'ran', by: 'ops' })).toBe(false);
      expect(await l.settle('op-lost', { outcome: 'ran', by: 'alice', note: 'refund seen in the PSP' })).toBe(true);
      expect(await l.settle('op-lost', { outcome: 'not-run', by: 'bob' })).toBe(false);
      const settled = await l.inspect('op-lost');
      expect(settled).toMatchObject({
        owner: 'dead-worker',
        outcome: { isError: false },
        settlement: { outcome: 'ran', by: 'alice', note: 'refund seen in the PSP' },
      });
      expect(settled?.settlement?.at).toBe(settled?.recordedAt);
      // From now on the call is answered from the settlement, and never run again; the dead worker's late record loses.
      const again = await l.reserve('op-lost', 'w2', 60_000);
      expect(again.state === 'settled' && again.outcome.content).toMatch(
        /The call ran; .*alice.*refund seen in the PSP/,
      );
      expect(await l.record('op-lost', 'dead-worker', { content: 'late', isError: false })).toBe(false);
      expect(await l.settle('op-lost-2', { outcome: 'not-run', by: 'bob' })).toBe(true);
      const notRun = await l.reserve('op-lost-2', 'w2', 60_000);
      expect(notRun).toMatchObject({ state: 'settled', outcome: { isError: true } });
      expect((await l.list({ unknown: true, since })).map((e) => e.key)).toEqual([]);
      await expect(l.settle('op-lost', { outcome: 'maybe', by: 'x' } as never)).rejects.toThrow(/'ran' or 'not-run'/);
      await expect(l.settle('op-lost', { outcome: 'ran', by: '' })).rejects.toThrow(/"by" must be a non-empty string/);
      await expect(l.list({ since: 'yesterday' })).rejects.toThrow(/"since" must be ISO 8601/);
    });

    it('ledger: release gives back only an unrecorded reservation, only to its owner; the key can be reserved again', async () => {
      const l = stores.ledger!;
      expect(await l.reserve('given-back', 'w1', 60_000)).toEqual({ state: 'reserved' });
      expect(await l.release('given-back', 'w2')).toBe(false);
      expect((await l.reserve('given-back', 'w2', 60_000)).state).toBe('held');
      expect(await l.release('given-back', 'w1')).toBe(true);
      expect(await l.inspect('given-back')).toBeUndefined();
      expect(await l.release('given-back', 'w1')).toBe(false);
      expect(await l.reserve('given-back', 'w2', 60_000)).toEqual({ state: 'reserved' });
      expect(await l.record('given-back', 'w2', { content: 'ran', isError: false })).toBe(true);
      // A recorded call is never given back: it ran.
      expect(await l.release('given-back', 'w2')).toBe(false);
      expect((await l.reserve('given-back', 'w3', 60_000)).state).toBe('settled');
    });

    // Every backend has counters (PostgreSQL's since migration 3).
    {
      const one = (key: string, cost: number, limit: number, windowMs: number) =>
        stores.counters!.consume([{ key, cost, limit, windowMs }]);

      it('counters: exactly `limit` slots; a refused attempt spends nothing and says when to retry', async () => {
        const c = stores.counters!;
        const key = `k-${name}`;
        const verdicts = [];
        for (let i = 0; i < 5; i++) verdicts.push(await one(key, 1, 3, 3_600_000));
        expect(verdicts.map((v) => v.allowed)).toEqual([true, true, true, false, false]);
        const refused = verdicts[4]!;
        expect(refused).toMatchObject({ allowed: false, used: [3], index: 0 });
        expect(!refused.allowed && refused.retryAfterMs).toBeGreaterThan(3_500_000);
        expect(await c.peek(key, 3_600_000)).toBe(3);
        // A cost that can never fit: never.
        expect(await one(`${key}-big`, 20, 10, 1000)).toMatchObject({ allowed: false, retryAfterMs: null });
        // Costs add up.
        expect(await one(`${key}-cost`, 15, 20, 60_000)).toMatchObject({ allowed: true, used: [15] });
        expect(await one(`${key}-cost`, 6, 20, 60_000)).toMatchObject({ allowed: false, used: [15] });
        expect(await one(`${key}-cost`, 5, 20, 60_000)).toMatchObject({ allowed: true, used: [20] });
      });

      it('counters: several charges are all-or-nothing (refused by one limit, no slot of another is spent)', async () => {
        const c = stores.counters!;
        const a = `all-a-${name}`;
        const b = `all-b-${name}`;
        expect(await one(b, 1, 1, 60_000)).toMatchObject({ allowed: true });
        const both = [
          { key: a, cost: 1, limit: 10, windowMs: 60_000 },
          { key: b, cost: 1, limit: 1, windowMs: 60_000 },
        ];
        // Refused: the totals as they stand (nothing of the call is charged).
        expect(await c.consume(both)).toMatchObject({ allowed: false, index: 1, used: [0, 1] });
        expect(await c.peek(a, 60_000)).toBe(0);
        expect(await c.consume([both[0]!])).toMatchObject({ allowed: true, used: [1] });
        // Two charges on one key must fit together.
        const same = `all-same-${name}`;
        const twice = [
          { key: same, cost: 2, limit: 3, windowMs: 60_000 },
          { key: same, cost: 2, limit: 3, windowMs: 60_000 },
        ];
        expect(await c.consume(twice)).toMatchObject({ allowed: false, index: 1 });
        expect(await c.peek(same, 60_000)).toBe(0);
      });

      it('counters: 50 concurrent consumers of a limit of 7 → exactly 7 allowed', async () => {
        const results = await Promise.all(Array.from({ length: 50 }, () => one(`race-${name}`, 1, 7, 60_000)));
        expect(results.filter((r) => r.allowed)).toHaveLength(7);
      });

      it('counters: the window slides (slots come back after the window)', async () => {
        const key = `slide-${name}`;
        expect((await one(key, 1, 1, 150)).allowed).toBe(true);
        expect((await one(key, 1, 1, 150)).allowed).toBe(false);
        await new Promise((r) => setTimeout(r, 250));
        expect((await one(key, 1, 1, 150)).allowed).toBe(true);
      });
    }
  });
}
