/**
 * Limits at step 6 of the one dispatch path: the registry's own route and the runner's route charge the
 * registry's Limiter; refused calls count; a call over the limit is refused at stage `limit` with when to
 * retry, and spends nothing.
 */
import { describe, expect, it } from 'vitest';
import { AgentRunner } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { readCall } from '../../src/formats/index.js';
import { dispatchCalls } from '../../src/gate/dispatch.js';
import { environmentOf } from '../../src/gate/environment.js';
import type { Route } from '../../src/contracts/route.js';
import type { ToolResult } from '../../src/registry.js';
import { Limiter } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';
import { shop } from '../runner/fixtures.js';

const alice = { tenant: { id: 'acme' }, caller: { id: 'alice' } };

describe('limits on the dispatch path', () => {
  it('registry: "2 refunds per caller per hour" — the third is refused at stage limit, with when to retry', async () => {
    const { registry, refunds } = shop();
    const counters = new MemoryCounterStore();
    registry.setLimiter(
      new Limiter({
        counters,
        limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 2, window: '1h' }],
      }),
    );
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await registry.invoke('refund', { order: `A${i}`, amount: 10 }, alice));
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'refused']);
    expect(refunds).toHaveLength(2);
    const refused = results[2]!;
    expect(refused.decision).toMatchObject({ effect: 'deny', stage: 'limit', by: 'limit' });
    expect(refused.content).toMatch(/limit "refunds".*may be retried after .*do not retry before then/s);
    // Another caller has a counter of its own; other tools are not limited.
    expect((await registry.invoke('refund', { order: 'B1', amount: 10 }, { caller: { id: 'bob' } })).status).toBe('ok');
    expect((await registry.invoke('ledger', {}, alice)).status).toBe('ok');
    // Refused-over-limit attempts spent nothing.
    expect(await counters.peek('limit:refunds:caller=alice', 3_600_000)).toBe(2);
  });

  it('a limiter set during a batch charges each later call once, refused ones too', async () => {
    const { registry, refunds } = shop();
    const counters = new MemoryCounterStore();
    let set = false;
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && !set) {
        set = true;
        registry.setLimiter(
          new Limiter({
            counters,
            limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 5, window: '1h' }],
          }),
        );
      }
    });
    const results = await registry.dispatch(
      [
        { id: '1', name: 'refund', arguments: { order: 'A1', amount: 10 } },
        { id: '2', name: 'refund', arguments: { order: 'A2', amount: 10 } },
        { id: '3', name: 'refund', arguments: { order: 'A3', amount: 5000 } }, // denied by the policy: counts too
        { id: '4', name: 'refund', arguments: { order: 'A4', amount: 10 } },
      ],
      alice,
    );
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'refused', 'ok']);
    expect(refunds.map((r) => r.order)).toEqual(['A1', 'A2', 'A4']);
    // A2, A3 and A4 were charged once each (A1 ran before the limiter existed).
    expect(await counters.peek('limit:refunds:caller=alice', 3_600_000)).toBe(3);
  });

  it('refused calls count: a call the policy denied spends its slot', async () => {
    const { registry, refunds } = shop();
    registry.setLimiter(
      new Limiter({
        counters: new MemoryCounterStore(),
        limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 2, window: '1h' }],
      }),
    );
    // Over 1000: denied by the policy (deny_huge_refunds) — and counted.
    const denied = await registry.invoke('refund', { order: 'A1', amount: 5000 }, alice);
    expect(denied.decision).toMatchObject({ effect: 'deny', stage: 'policy', rule: 'deny_huge_refunds' });
    expect((await registry.invoke('refund', { order: 'A2', amount: 10 }, alice)).status).toBe('ok');
    const third = await registry.invoke('refund', { order: 'A3', amount: 10 }, alice);
    expect(third.decision).toMatchObject({ effect: 'deny', stage: 'limit' });
    expect(refunds).toEqual([{ order: 'A2', amount: 10 }]);
  });

  it("runner route: the same Limiter refuses the run's calls at stage limit (shared counters)", async () => {
    const { registry, refunds } = shop();
    const counters = new MemoryCounterStore();
    registry.setLimiter(
      new Limiter({ counters, limits: [{ name: 'tenant-calls', per: ['tenant'], max: 1, window: '1d' }] }),
    );
    const runner = new AgentRunner({
      registry,
      model: new ScriptedModel([
        {
          toolCalls: [
            { name: 'refund', arguments: { order: 'A1', amount: 10 } },
            { name: 'refund', arguments: { order: 'A2', amount: 10 } },
          ],
        },
        { text: 'done' },
      ]),
    });
    const result = await runner.run({ name: 'clerk', tools: ['refund'] }, 'two refunds', { tenant: 'acme' });
    expect(refunds).toEqual([{ order: 'A1', amount: 10 }]);
    expect(result.decisions.map((d) => `${d.effect}/${d.stage}`)).toEqual(['allow/policy', 'deny/limit']);
    // The registry's own route shares the tenant's counter.
    expect((await registry.invoke('ledger', {}, { tenant: { id: 'acme' } })).decision.stage).toBe('limit');
  });

  it('an adapter route on the one dispatch path (the SDK adapters and the MCP gateway): charged the same way', async () => {
    // An adapter's route: its own person, calls one at a time (what the SDK adapters and the gateway pass).
    const route: Route = { name: 'adapter', grouped: false };
    const dispatchOne = async (r: typeof registry, c: ReturnType<typeof call>, ctx: typeof alice) =>
      (await dispatchCalls([readCall(c)], ctx, environmentOf(r), route))[0] as ToolResult;
    const { registry, refunds } = shop();
    registry.setLimiter(
      new Limiter({
        counters: new MemoryCounterStore(),
        limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 1, window: '1h' }],
      }),
    );
    const decided: string[] = [];
    registry.onChange((e) => e.type === 'tool_decided' && decided.push(`${e.decision.effect}/${e.decision.stage}`));
    const call = (id: string) => ({ id, name: 'refund', arguments: { order: id, amount: 10 } });
    expect((await dispatchOne(registry, call('A1'), alice)).status).toBe('ok');
    const second = await dispatchOne(registry, call('A2'), alice);
    expect(second.decision).toMatchObject({ effect: 'deny', stage: 'limit' });
    expect(refunds).toEqual([{ order: 'A1', amount: 10 }]);
    // The announced Decision is the charged one.
    expect(decided).toEqual(['allow/policy', 'deny/limit']);
  });

  it('a counter store that fails refuses every limited call (fail closed)', async () => {
    const { registry, refunds } = shop();
    registry.setLimiter(
      new Limiter({
        counters: {
          consume: () => Promise.reject(new Error('connection refused')),
          peek: () => Promise.reject(new Error('connection refused')),
        },
        limits: [{ name: 'all', max: 100, window: '1m' }],
      }),
    );
    const result = await registry.invoke('refund', { order: 'A1', amount: 10 }, alice);
    expect(result.decision).toMatchObject({ effect: 'deny', stage: 'store', by: 'store' });
    expect(result.content).toContain('connection refused');
    expect(refunds).toEqual([]);
    expect(() => registry.setLimiter({} as never)).toThrow(/Limiter/);
  });
});
