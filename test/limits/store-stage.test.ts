/**
 * A counter store that answers garbage, or fails, refuses the call at its own stage `store` (issue 22, issue
 * 24 item 6): only `allowed === true` allows. Through the README's route: a registry with a limiter.
 */
import { describe, expect, it } from 'vitest';
import { defineTool, ToolRegistry } from '../../src/index.js';
import { Limiter } from '../../src/limits/limiter.js';
import type { CounterStore } from '../../src/stores/types.js';

function registryOver(consume: () => unknown, name?: string) {
  let ran = 0;
  const counters = {
    ...(name !== undefined ? { name } : {}),
    consume: async () => consume(),
    peek: async () => 0,
  } as unknown as CounterStore;
  const limiter = new Limiter({
    counters,
    limits: [{ name: 'refunds', per: ['caller'], tools: ['refund'], max: 5, window: '1h' }],
  });
  const registry = new ToolRegistry({ limiter });
  registry.register(defineTool({ name: 'refund', parameters: { type: 'object' }, execute: () => `ran ${++ran}` }));
  return { registry, ran: () => ran };
}

const alice = { tenant: { id: 'acme' }, caller: { id: 'alice' } };

describe('a counter store that answers garbage', () => {
  const garbage: [string, unknown, RegExp][] = [
    ["{ allowed: 'no' }", { allowed: 'no' }, /"allowed" is "no", not true or false/],
    ['{ allowed: 1, used: [1] }', { allowed: 1, used: [1] }, /"allowed" is number 1/],
    ['{ allowed: true } without used', { allowed: true }, /"used"/],
    ['{ allowed: true, used: [NaN] }', { allowed: true, used: [Number.NaN] }, /"used"/],
    ['{ allowed: true, used: [] } (a total missing)', { allowed: true, used: [] }, /0 totals for 1 charges/],
    // eslint-disable-next-line no-sparse-arrays
    ['{ allowed: true, used: [ , ] } (a hole: no total)', { allowed: true, used: [,] }, /"used"/],
    [
      '{ allowed: false } with an index out of range',
      { allowed: false, used: [5], index: 3, retryAfterMs: 10 },
      /"index" is number 3/,
    ],
    [
      '{ allowed: false } with a negative retry',
      { allowed: false, used: [5], index: 0, retryAfterMs: -1 },
      /"retryAfterMs"/,
    ],
    ['null', null, /not a verdict: null/],
    ['undefined', undefined, /not a verdict: undefined/],
    ['a string', 'allowed', /not a verdict/],
  ];
  for (const [what, answer, problem] of garbage) {
    it(`${what}: refused at stage store, the tool not run, the store named`, async () => {
      const { registry, ran } = registryOver(() => answer, 'acme-counters');
      const result = await registry.invoke('refund', {}, alice);
      expect(result.status).toBe('refused');
      expect(result.decision).toMatchObject({ effect: 'deny', stage: 'store', by: 'store', layer: null });
      expect(result.content).toMatch(/counter store \(acme-counters\) answered garbage/);
      expect(result.content).toMatch(problem);
      expect(ran()).toBe(0);
    });
  }

  it('a well-formed refusal is a limit refusal; a well-formed allow runs', async () => {
    const refused = registryOver(() => ({ allowed: false, used: [5], index: 0, retryAfterMs: 1000 }));
    const r = await refused.registry.invoke('refund', {}, alice);
    expect(r.decision).toMatchObject({ stage: 'limit', by: 'limit' });
    expect(r.content).toMatch(/limit "refunds"/);
    const allowed = registryOver(() => ({ allowed: true, used: [1] }));
    expect((await allowed.registry.invoke('refund', {}, alice)).content).toBe('ran 1');
  });

  it('a store that rejects: stage store, named by its default name when it has none, no limit named', async () => {
    const { registry, ran } = registryOver(() => Promise.reject(new Error('ECONNREFUSED 10.0.0.9:6379')));
    const result = await registry.invoke('refund', {}, alice);
    expect(result.decision).toMatchObject({ stage: 'store', by: 'store' });
    expect(result.content).toMatch(/the counter store \(the counter store\) failed: ECONNREFUSED/);
    expect(result.content).not.toMatch(/limit "refunds"/);
    expect(ran()).toBe(0);
  });

  it("a store's name is shown display-safe (a name cannot reorder the text around it)", async () => {
    const { registry } = registryOver(() => ({ allowed: 'no' }), 'evil\u202E\u001b[2K');
    const result = await registry.invoke('refund', {}, alice);
    expect(result.content).toContain('evil\\u{202E}\\u{001B}[2K');
  });
});
