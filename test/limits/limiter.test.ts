import { describe, expect, it } from 'vitest';
import { Limiter, parseWindow, type LimitSubject } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import type { CounterStore } from '../../src/stores/types.js';

const subject = (over: Partial<LimitSubject> = {}): LimitSubject => ({
  tenant: 'acme',
  caller: 'alice',
  agent: 'support',
  runId: 'R1',
  tool: 'refund',
  tags: ['destructive'],
  ...over,
});

function clock(start = Date.parse('2026-01-01T00:00:00Z')) {
  let t = start;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe('Limiter', () => {
  it('"5 refunds per caller per hour": the sixth is refused with when to retry, and spends nothing', async () => {
    const c = clock();
    const counters = new MemoryCounterStore({ now: c.now });
    const limiter = new Limiter({
      counters,
      now: c.now,
      limits: [{ name: 'refunds', per: ['caller'], tools: ['Refund'], max: 5, window: '1h' }],
    });
    for (let i = 0; i < 5; i++) {
      expect((await limiter.charge(subject())).allowed).toBe(true);
      c.advance(60_000);
    }
    const refused = await limiter.charge(subject());
    expect(refused.allowed).toBe(false);
    if (refused.allowed) return;
    expect(refused.limit).toBe('refunds');
    expect(refused.reason).toContain('"refunds"');
    expect(refused.reason).toContain('at most 5 per caller "alice" per 1h');
    // The first refund leaves the window at 01:00:00; five minutes have passed since.
    expect(refused.retryAfterMs).toBe(55 * 60_000 + 1);
    expect(refused.reason).toContain('retried after 2026-01-01T01:00:00.001Z');
    // Refused attempts spend nothing: still 5 used.
    await limiter.charge(subject());
    expect((await limiter.explain(subject()))[0]).toMatchObject({ limit: 'refunds', used: 5, max: 5 });
    // Another caller has its own counter; another tool is not limited.
    expect((await limiter.charge(subject({ caller: 'bob' }))).allowed).toBe(true);
    expect(await limiter.charge(subject({ tool: 'lookup', tags: [] }))).toEqual({ allowed: true, charged: [] });
    // After the window, slots come back.
    c.advance(56 * 60_000);
    expect((await limiter.charge(subject())).allowed).toBe(true);
  });

  it('limits by tag, per tenant per day, and all-or-nothing across limits', async () => {
    const counters = new MemoryCounterStore();
    const limiter = new Limiter({
      counters,
      limits: [
        { name: 'daily', per: ['tenant'], max: 3, window: '1d' },
        { name: 'destructive', per: ['caller'], tags: ['destructive'], max: 1, window: '1h' },
      ],
    });
    expect((await limiter.charge(subject())).allowed).toBe(true); // daily 1, destructive 1
    const refused = await limiter.charge(subject());
    expect(refused).toMatchObject({ allowed: false, limit: 'destructive' });
    // The refusal by "destructive" did not spend a "daily" slot.
    expect((await limiter.explain(subject({ tags: [] })))[0]).toMatchObject({ limit: 'daily', used: 1 });
    expect((await limiter.charge(subject({ tool: 'lookup', tags: [] }))).allowed).toBe(true);
    expect((await limiter.charge(subject({ tool: 'lookup', tags: [] }))).allowed).toBe(true);
    expect(await limiter.charge(subject({ tool: 'lookup', tags: [] }))).toMatchObject({
      allowed: false,
      limit: 'daily',
    });
  });

  it('"cost 20 per run": per-tool costs against a windowless per-run budget', async () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'run-cost', per: ['run'], max: 20, cost: 1, costs: { search: 8 } }],
    });
    const search = subject({ tool: 'search', tags: [] });
    expect((await limiter.charge(search)).allowed).toBe(true);
    expect((await limiter.charge(search)).allowed).toBe(true);
    const refused = await limiter.charge(search);
    expect(refused).toMatchObject({ allowed: false, retryAfterMs: null });
    expect(!refused.allowed && refused.reason).toContain('cannot be retried');
    expect((await limiter.charge(subject({ tool: 'lookup', tags: [] }))).allowed).toBe(true);
    expect((await limiter.charge(subject({ runId: 'R2', tool: 'search', tags: [] }))).allowed).toBe(true);
  });

  it('a counter store that fails refuses the call (fail closed)', async () => {
    const broken: CounterStore = {
      consume: async () => {
        throw new Error('ECONNREFUSED 127.0.0.1:6379');
      },
      peek: async () => 0,
    };
    const limiter = new Limiter({ counters: broken, limits: [{ name: 'any', max: 10, window: '1m' }] });
    const verdict = await limiter.charge(subject());
    expect(verdict).toMatchObject({ allowed: false, stage: 'store', store: 'the counter store', retryAfterMs: null });
    expect(!verdict.allowed && verdict.reason).toContain('ECONNREFUSED');
  });

  it('bad limits are refused at construction, naming the field', () => {
    const counters = new MemoryCounterStore();
    expect(() => new Limiter({ counters, limits: [{ name: 'x', max: -1 }] })).toThrow(/limits\[0\]\.max/);
    expect(() => new Limiter({ counters, limits: [{ name: 'x', max: 1, window: 'soon' }] })).toThrow(/window/);
    expect(() => new Limiter({ counters, limits: [{ name: 'x', max: 1, per: ['planet' as never] }] })).toThrow(/per/);
    expect(
      () =>
        new Limiter({
          counters,
          limits: [
            { name: 'x', max: 1 },
            { name: 'x', max: 2 },
          ],
        }),
    ).toThrow(/twice/);
    expect(() => new Limiter({ counters: {} as never, limits: [] })).toThrow(/CounterStore/);
    expect(parseWindow('1.5h')).toBe(5_400_000);
    expect(parseWindow(250)).toBe(250);
  });

  it('keys keep dimensions apart (a caller named like a tenant does not share its counter)', () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'l', per: ['tenant', 'caller'], max: 1, window: 1000 }],
    });
    const a = limiter.applicable(subject({ tenant: 'a:caller=b', caller: null }))[0]!.key;
    const b = limiter.applicable(subject({ tenant: 'a', caller: 'b' }))[0]!.key;
    expect(a).not.toBe(b);
  });

  it('keys keep no id (null) and the empty id ("") apart, and every other key as it was (stores carry over)', async () => {
    const counters = new MemoryCounterStore();
    const limiter = new Limiter({
      counters,
      limits: [{ name: 'one', per: ['tenant', 'caller', 'agent', 'run'], max: 1, window: 1000 }],
    });
    const keyOf = (over: Partial<LimitSubject>) => limiter.applicable(subject(over))[0]!.key;
    // Two parties: calls with no tenant, caller or run, and calls whose ids are "".
    const none = { tenant: null, caller: null, runId: null };
    const empty = { tenant: '', caller: '', runId: '' };
    expect((await limiter.charge(subject(none))).allowed).toBe(true);
    expect((await limiter.charge(subject(empty))).allowed).toBe(true);
    expect((await limiter.charge(subject(none))).allowed).toBe(false);
    expect((await limiter.charge(subject(empty))).allowed).toBe(false);
    for (const d of ['tenant', 'caller', 'runId'] as const) expect(keyOf({ [d]: null })).not.toBe(keyOf({ [d]: '' }));
    // The keys of existing counters are unchanged: no id, and ids that are not empty (URI-encoded).
    expect(keyOf(none)).toBe('limit:one:tenant=:caller=:agent=support:run=');
    expect(keyOf({ tenant: 'a b', caller: '"', runId: 'R:1' })).toBe(
      'limit:one:tenant=a%20b:caller=%22:agent=support:run=R%3A1',
    );
    expect(keyOf({ ...empty, agent: '' })).toBe('limit:one:tenant="":caller="":agent="":run=""');
  });
});

describe('limits in policy files', () => {
  it('`limits:` loads into PolicySet.limits and charges through set.limiter(counters)', async () => {
    const { parsePolicy } = await import('../../src/policy-file/load.js');
    const result = parsePolicy(`
version: 1
tools:
  refund: { tags: [destructive] }
rules:
  - { name: all, result: allow }
limits:
  - { name: refunds, per: [caller], tools: [refund], max: 2, window: 1h }
  - { name: daily, per: [tenant], max: 1000, window: 1d }
`);
    if (!result.ok) throw new Error(JSON.stringify(result.issues));
    expect(result.policy.limits.map((l) => l.name)).toEqual(['refunds', 'daily']);
    const limiter = result.policy.limiter(new MemoryCounterStore());
    expect((await limiter.charge(subject())).allowed).toBe(true);
    expect((await limiter.charge(subject())).allowed).toBe(true);
    expect(await limiter.charge(subject())).toMatchObject({ allowed: false, limit: 'refunds' });
  });

  it('a bad limit is an issue with its line: schema shapes, windows, names used twice', async () => {
    const { parsePolicy } = await import('../../src/policy-file/load.js');
    const bad = (limits: string) => {
      const r = parsePolicy(`version: 1\nlimits:\n${limits}\n`);
      return r.ok ? [] : r.issues.map((i) => `${i.line}:${i.code}:${i.message}`);
    };
    expect(bad('  - { name: a, max: 1, window: soon }').join()).toMatch(/^3:schema/);
    expect(bad('  - { name: a, max: -1 }').join()).toMatch(/^3:schema/);
    expect(bad('  - { name: a, max: 1, per: [planet] }').join()).toMatch(/^3:schema/);
    expect(bad('  - { name: a, max: 1 }\n  - { name: a, max: 2 }').join()).toMatch(
      /^4:invalid-limit:limits\[1\]\.name/,
    );
  });
});
