/**
 * Limits that fit how products sell (issue 24 item 6): a limit's `max` from the tenant's plan
 * (`max: { plan: refunds_per_day }`) or a per-tenant override in the policy file's `tenants:`.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Limiter, type LimitSubject } from '../../src/limits/limiter.js';
import { parsePolicy } from '../../src/policy-file/load.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import type { LimitJob } from './limit-worker.js';

const exec = promisify(execFile);
const root = join(import.meta.dirname, '../..');
const dir = mkdtempSync(join(tmpdir(), 'toolgate-plans-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const subject = (tenant: string | null): LimitSubject => ({
  tenant,
  caller: 'alice',
  agent: 'support',
  runId: null,
  tool: 'refund',
  tags: [],
});

const POLICY = `version: 1
tenants:
  pro: { plan: { refunds_per_day: 7 } }
  free: { plan: { refunds_per_day: 2 } }
  vip: { plan: { refunds_per_day: 7 }, limits: { refunds: 4 } }
  trial: {}
rules:
  - { name: refunds, tools: [refund], result: allow }
limits:
  - name: refunds
    per: [tenant]
    tools: [refund]
    max: { plan: refunds_per_day }
    window: 1d
`;

describe('a limit whose max is the tenant plan', () => {
  it('each tenant gets its plan value; an override by name wins; no value and no default refuses, naming it', async () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      tenants: {
        pro: { plan: { refunds_per_day: 3 } },
        free: { plan: { refunds_per_day: 1 } },
        vip: { limits: { refunds: 2 } },
      },
      limits: [{ name: 'refunds', per: ['tenant'], tools: ['refund'], max: { plan: 'refunds_per_day' }, window: '1d' }],
    });
    const run = async (tenant: string | null, n: number) => {
      const out = [];
      for (let i = 0; i < n; i++) out.push((await limiter.charge(subject(tenant))).allowed);
      return out.filter(Boolean).length;
    };
    expect(await run('pro', 5)).toBe(3);
    expect(await run('free', 5)).toBe(1);
    expect(await run('vip', 5)).toBe(2);
    const refused = await limiter.charge(subject('free'));
    expect(!refused.allowed && refused.reason).toMatch(/at most 1 per tenant "free" per 1d; 1 used/);
    const unknown = await limiter.charge(subject('globex'));
    expect(unknown).toMatchObject({ allowed: false, stage: 'limit', limit: 'refunds', counter: null });
    expect(!unknown.allowed && unknown.reason).toMatch(/plan value "refunds_per_day", and tenant "globex" has no plan/);
    const none = await limiter.charge(subject(null));
    expect(!none.allowed && none.reason).toMatch(/the call names no tenant/);
    // explain shows each tenant's max, and null where there is none.
    expect((await limiter.explain(subject('pro')))[0]).toMatchObject({ used: 3, max: 3 });
    expect((await limiter.explain(subject('globex')))[0]).toMatchObject({ used: 0, max: null });
  });

  it('a default serves tenants without the value; a plan read per call by a function (async) applies at once', async () => {
    let proMax = 2;
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      tenants: async (tenant) => (tenant === 'pro' ? { plan: { calls: proMax } } : undefined),
      limits: [{ name: 'calls', per: ['tenant'], max: { plan: 'calls', default: 1 }, window: '1h' }],
    });
    expect((await limiter.charge(subject('pro'))).allowed).toBe(true);
    expect((await limiter.charge(subject('pro'))).allowed).toBe(true);
    expect((await limiter.charge(subject('pro'))).allowed).toBe(false);
    proMax = 3; // upgraded
    expect((await limiter.charge(subject('pro'))).allowed).toBe(true);
    expect((await limiter.charge(subject('other'))).allowed).toBe(true);
    expect((await limiter.charge(subject('other'))).allowed).toBe(false);
  });

  it('a plan source that fails or answers garbage refuses at stage store, naming it', async () => {
    const failing = new Limiter({
      counters: new MemoryCounterStore(),
      tenants: () => {
        throw new Error('plans database down');
      },
      limits: [{ name: 'calls', max: { plan: 'calls' } }],
    });
    expect(await failing.charge(subject('pro'))).toMatchObject({ allowed: false, stage: 'store' });
    expect(((await failing.charge(subject('pro'))) as { reason: string }).reason).toMatch(
      /the tenant plans \(Limiter option "tenants"\) failed: plans database down/,
    );
    const garbage = new Limiter({
      counters: new MemoryCounterStore(),
      tenants: () => ({ plan: { calls: 'lots' } }) as never,
      limits: [{ name: 'calls', max: { plan: 'calls' } }],
    });
    expect(((await garbage.charge(subject('pro'))) as { reason: string }).reason).toMatch(
      /"plan.calls" must be a finite number >= 0, got "lots"/,
    );
    // A limit named like an Object property reads no inherited value.
    const proto = new Limiter({
      counters: new MemoryCounterStore(),
      tenants: { pro: { plan: {} } },
      limits: [{ name: 'constructor', max: { plan: 'toString' } }],
    });
    expect(await proto.charge(subject('pro'))).toMatchObject({ allowed: false, stage: 'limit' });
  });

  it('bad maxes and plans are refused at construction, naming the field', () => {
    const make = (max: unknown, tenants?: unknown) => () =>
      new Limiter({
        counters: new MemoryCounterStore(),
        limits: [{ name: 'l', max: max as number }],
        tenants: tenants as never,
      });
    expect(make({ plan: '' })).toThrow(/limits\[0\]\.max must be a number >= 0 or \{ plan: name, default\? \}/);
    expect(make({ plan: 'x', default: -1 })).toThrow(/limits\[0\]\.max\.default must be a finite number >= 0/);
    expect(make({ plan: 'x', dflt: 3 })).toThrow(/unknown field "dflt"/);
    expect(make(1, { acme: { limits: { l: 'ten' } } })).toThrow(/"acme" "limits.l" must be a finite number >= 0/);
    expect(make(1, 'acme')).toThrow(/option "tenants" must be an object or a function/);
  });
});

describe('plans in a policy file', () => {
  it('tenants: plan values and limits overrides load; a misspelt limit name or a bad max is an issue with its line', () => {
    const ok = parsePolicy(POLICY);
    if (!ok.ok) throw new Error(JSON.stringify(ok.issues));
    const bad = (text: string) => {
      const r = parsePolicy(text);
      return r.ok ? [] : r.issues.map((i) => `${i.line}:${i.code}:${i.message}`);
    };
    expect(bad(POLICY.replace('limits: { refunds: 4 }', 'limits: { refund: 4 }')).join()).toMatch(
      /^5:invalid-limit:tenants\.vip\.limits\.refund: "refund" is not a limit of this file; its limits: refunds/,
    );
    expect(
      bad(POLICY.replace('max: { plan: refunds_per_day }', 'max: { plan: refunds_per_day, per: 2 }')).join(),
    ).toMatch(/:schema/);
    expect(bad(POLICY.replace('refunds_per_day: 2', 'refunds_per_day: many')).join()).toMatch(/^4:schema/);
  });

  describe('worker processes on PostgreSQL counters', () => {
    const schema = uniqueName('plans');
    let pg: PostgresStores;
    beforeAll(async () => {
      pg = new PostgresStores({ connectionString: PG_URL, schema });
      await pg.migrate();
    });
    afterAll(async () => {
      await pg.dropSchema();
      await pg.close();
    });

    it('N processes × M calls for each tenant: exactly its plan (pro 7, free 2, vip 4), the rest refused at stage limit', async () => {
      const executions = join(dir, 'executions.log');
      const N = 3;
      const M = 5;
      const tenants = ['pro', 'free', 'vip', 'trial'];
      const outs = await Promise.all(
        Array.from({ length: N }, async () => {
          const job: LimitJob = {
            backend: 'postgres',
            pgUrl: PG_URL,
            schema,
            policy: POLICY,
            tenants,
            calls: M,
            executions,
          };
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
      const total = (tenant: string) => outs.reduce((sum, o) => sum + (o.ran[tenant] ?? 0), 0);
      expect(tenants.map(total)).toEqual([7, 2, 4, 0]);
      expect(outs.reduce((sum, o) => sum + (o.stages['limit'] ?? 0), 0)).toBe(N * M * tenants.length - 13);
      expect(existsSync(executions) ? readFileSync(executions, 'utf8').split('\n').filter(Boolean) : []).toHaveLength(
        13,
      );
    }, 180_000);
  });
});
