/**
 * A tenant plan read through a promise that is not this realm's `Promise` (a query builder such as Knex's or
 * Mongoose's, a Bluebird promise, a promise from another realm: each a thenable) must be awaited like one:
 * charge must apply the plan it resolves to (here a tenant's limit of 0), as explain already does.
 */
import { describe, expect, it } from 'vitest';
import { Limiter, type LimitSubject, type TenantLimitPlan } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { shop } from '../runner/fixtures.js';

const subject: LimitSubject = { tenant: 'free', caller: 'c', agent: 'a', runId: null, tool: 'refund', tags: [] };

/** A promise-like that is not a Promise (what a query builder returns). */
function thenable(plan: TenantLimitPlan): PromiseLike<TenantLimitPlan> {
  return { then: (onFulfilled) => Promise.resolve(plan).then(onFulfilled) } as PromiseLike<TenantLimitPlan>;
}

describe('tenant plans read through a thenable', () => {
  it("a tenant's limit of 0 from a thenable plan refuses the call (as explain reads it)", async () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'refunds', tools: ['refund'], max: 5, window: '1h' }],
      tenants: () => thenable({ limits: { refunds: 0 } }) as Promise<TenantLimitPlan>,
    });
    expect((await limiter.explain(subject))[0]!.max).toBe(0);
    expect(await limiter.charge(subject)).toMatchObject({ allowed: false, stage: 'limit', limit: 'refunds' });
  });

  it('a plan max read through a thenable: the tenant gets its plan value, not the default', async () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'daily', max: { plan: 'daily', default: 100 }, window: '1d' }],
      tenants: () => thenable({ plan: { daily: 1 } }) as Promise<TenantLimitPlan>,
    });
    expect((await limiter.charge(subject)).allowed).toBe(true);
    expect((await limiter.charge(subject)).allowed).toBe(false);
  });

  it('through the registry: the free tenant (refunds: 0) runs no refund', async () => {
    const { registry, refunds } = shop();
    registry.setLimiter(
      new Limiter({
        counters: new MemoryCounterStore(),
        limits: [{ name: 'refunds', tools: ['refund'], max: 5, window: '1h' }],
        tenants: (id) => thenable(id === 'free' ? { limits: { refunds: 0 } } : {}) as Promise<TenantLimitPlan>,
      }),
    );
    const result = await registry.invoke('refund', { order: 'A1', amount: 10 }, { tenant: { id: 'free' } });
    expect(result.status).toBe('refused');
    expect(refunds).toHaveLength(0);
  });

  it('a thenable plan that rejects refuses at stage store', async () => {
    const limiter = new Limiter({
      counters: new MemoryCounterStore(),
      limits: [{ name: 'refunds', max: 5 }],
      tenants: () =>
        ({ then: (_: unknown, onRejected: (e: Error) => void) => onRejected(new Error('db down')) }) as never,
    });
    expect(await limiter.charge(subject)).toMatchObject({ allowed: false, stage: 'store' });
  });
});
