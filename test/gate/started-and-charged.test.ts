/**
 * The registry's route when calls run together (concurrency-safe) or are charged (a Limiter): a change made
 * by a call that already started, or by a listener told of a call's Decision, applies to the calls that run
 * after it (branch atk1: each of these ran a call the plan or policy in force refused).
 */
import { describe, expect, it } from 'vitest';
import { PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { Limiter } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';

function setUp(options: { limiter?: boolean; concurrencySafe?: boolean; onA?: (r: ToolRegistry) => void } = {}) {
  const ran: string[] = [];
  const registry = new ToolRegistry({
    handlerTimeoutMs: 500,
    confusables: 'off',
    limiter: options.limiter
      ? new Limiter({ counters: new MemoryCounterStore(), limits: [{ name: 'all', max: 1000, window: '1h' }] })
      : null,
  });
  for (const name of ['a', 'b']) {
    registry.register({
      name,
      parameters: { type: 'object' },
      metadata: { concurrencySafe: options.concurrencySafe ?? true },
      // Synchronous: it has finished when its promise is made.
      execute: (): string => {
        ran.push(name);
        if (name === 'a') options.onA?.(registry);
        return `${name} ok`;
      },
    });
  }
  return { registry, ran };
}

const AB = [
  { id: '1', name: 'a', arguments: {} },
  { id: '2', name: 'b', arguments: {} },
];
const lockdown = (): PermissionPolicy => new PermissionPolicy({ rules: [], fallback: 'deny', version: 'lockdown' });

describe('calls that run together, calls that are charged', () => {
  it('concurrency-safe: a tool_executed listener of call a cuts the plan in place; call b is refused', async () => {
    const { registry, ran } = setUp();
    const tenantTools = ['a', 'b'];
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && e.tool === 'a') tenantTools.splice(tenantTools.indexOf('b'), 1);
    });
    const results = await registry.dispatch(AB, { tenant: { id: 't', tools: tenantTools } });
    expect(ran).toEqual(['a']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });

  it('concurrency-safe with a limiter: call a sets a deny-all policy; call b is refused', async () => {
    const { registry, ran } = setUp({ limiter: true, onA: (r) => r.setPermissionPolicy(lockdown()) });
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
    const results = await registry.dispatch(AB);
    expect(ran).toEqual(['a']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', policyVersion: 'lockdown' });
  });

  for (const concurrencySafe of [true, false])
    it(`with a limiter (concurrencySafe ${concurrencySafe}): a tool_decided listener sets deny-all; no call runs`, async () => {
      const { registry, ran } = setUp({ limiter: true, concurrencySafe });
      registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
      let tripped = false;
      const decided: string[] = [];
      registry.onChange((e) => {
        if (e.type !== 'tool_decided') return;
        decided.push(`${e.decision.callId}:${e.decision.effect}`);
        if (!tripped) {
          tripped = true;
          registry.setPermissionPolicy(lockdown());
        }
      });
      const results = await registry.dispatch(AB);
      expect(ran).toEqual([]);
      expect(results.map((r) => r.status)).toEqual(['refused', 'refused']);
      // The call announced as allowed is announced again with its refusal.
      expect(decided).toEqual(['1:allow', '1:deny', '2:deny']);
    });

  it('with a limiter: a listener that changes the registry at every announcement gets the call refused', async () => {
    const { registry, ran } = setUp({ limiter: true, concurrencySafe: false });
    registry.onChange((e) => {
      if (e.type === 'tool_decided' && e.decision.effect === 'allow')
        registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
    });
    const [result] = await registry.dispatch([AB[0]!]);
    expect(ran).toEqual([]);
    expect(result!.decision).toMatchObject({ effect: 'deny', by: 'rule_error' });
  });
});

describe('a listener of the announcement cuts a layer in place (registry route, no charge step)', () => {
  for (const batch of [[AB[0]!], AB])
    it(`a tool_decided listener splices the tenant plan: the call it was told of does not run (${batch.length} call(s))`, async () => {
      const { registry, ran } = setUp({ concurrencySafe: false });
      const tenantTools = ['a', 'b'];
      registry.onChange((e) => {
        if (e.type === 'tool_decided' && e.decision.callId === '1' && e.decision.effect === 'allow')
          tenantTools.splice(tenantTools.indexOf('a'), 1);
      });
      const results = await registry.dispatch(batch, { tenant: { id: 't', tools: tenantTools } });
      expect(ran).not.toContain('a');
      expect(results[0]!.decision).toMatchObject({ effect: 'deny', layer: 'tenant' });
    });
});

describe('an answer given before a wait stands only under the same policy and handler (branch atk1)', () => {
  function slowAndAsked() {
    const ran: string[] = [];
    const registry = new ToolRegistry({ handlerTimeoutMs: 500, confusables: 'off' });
    let during: (() => void) | null = null;
    registry.register({
      name: 'slow',
      parameters: { type: 'object' },
      execute: async () => {
        ran.push('slow');
        during?.();
        await new Promise((r) => setTimeout(r, 2));
        return 'ok';
      },
    });
    registry.register({
      name: 'wire',
      parameters: { type: 'object' },
      execute: () => {
        ran.push('wire');
        return 'sent';
      },
    });
    const rules = [{ name: 'ask-wire', tools: ['wire'], result: 'ask' as const }];
    registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules, fallback: 'allow' }));
    registry.setPermissionHandler(() => 'allow');
    return { registry, ran, rules, setDuring: (f: () => void) => (during = f) };
  }
  const calls = [
    { id: '1', name: 'slow', arguments: {} },
    { id: '2', name: 'wire', arguments: {} },
  ];

  it('the registry handler replaced by a deny-all one while an earlier call runs: the approved call does not run', async () => {
    const { registry, ran, setDuring } = slowAndAsked();
    setDuring(() => registry.setPermissionHandler(() => 'deny'));
    const results = await registry.dispatch(calls);
    expect(ran).toEqual(['slow']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', by: 'handler' });
  });

  it('a policy of the same version whose own handler denies, installed while an earlier call runs: no run', async () => {
    const { registry, ran, rules, setDuring } = slowAndAsked();
    setDuring(() =>
      registry.setPermissionPolicy(
        new PermissionPolicy({ version: 'v1', rules, fallback: 'allow', handler: () => 'deny' }),
      ),
    );
    await registry.dispatch(calls);
    expect(ran).toEqual(['slow']);
  });

  it('an unrelated registration while an earlier call runs keeps the answer', async () => {
    const { registry, ran, setDuring } = slowAndAsked();
    let asked = 0;
    registry.setPermissionHandler(() => (asked++, 'allow'));
    setDuring(() => registry.register({ name: 'other', parameters: { type: 'object' }, execute: () => 'x' }));
    await registry.dispatch(calls);
    expect(ran).toEqual(['slow', 'wire']);
    expect(asked).toBe(1);
  });
});
