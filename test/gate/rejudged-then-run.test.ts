/**
 * The registry's route (no charge step): a call decided again in phase 2 — it waited for an earlier call —
 * runs only under what is in force when it runs. The re-decision itself can wait (a person asked again) and
 * is announced again (a second tool_decided); what changed meanwhile applies to it (branch atk3: each of these
 * ran the call under a deny-all policy).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, PermissionPolicy, ToolRegistry } from '../../src/index.js';
import { Limiter } from '../../src/limits/limiter.js';
import { MemoryCounterStore } from '../../src/stores/memory.js';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const lockdown = (): PermissionPolicy => new PermissionPolicy({ rules: [], fallback: 'deny', version: 'lockdown' });
const rules = [{ name: 'ask-wire', tools: ['wire'], result: 'ask' as const }];

function slowThenWire() {
  const ran: string[] = [];
  const registry = new ToolRegistry({ handlerTimeoutMs: 1_000, confusables: 'off' });
  let during: (() => void) | null = null;
  registry.register({
    name: 'slow',
    parameters: { type: 'object' },
    execute: async () => {
      ran.push('slow');
      during?.();
      await sleep(2);
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
  return { registry, ran, setDuring: (f: () => void) => (during = f) };
}

const calls = [
  { id: '1', name: 'slow', arguments: {} },
  { id: '2', name: 'wire', arguments: {} },
];

describe('a call decided again in phase 2 (registry route)', () => {
  it('asked again after a policy change; a deny-all policy installed while the person decides: it does not run', async () => {
    const { registry, ran, setDuring } = slowThenWire();
    registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules, fallback: 'allow' }));
    let asks = 0;
    // The person answers at once the first time, and takes 30 ms the second.
    registry.setPermissionHandler(async () => {
      if (++asks > 1) await sleep(30);
      return 'allow' as const;
    });
    setDuring(() => {
      // A new version (wire still asks) while slow runs; 10 ms later the kill switch, while the person decides.
      registry.setPermissionPolicy(new PermissionPolicy({ version: 'v2', rules, fallback: 'allow' }));
      setTimeout(() => registry.setPermissionPolicy(lockdown()), 10);
    });
    const results = await registry.dispatch(calls);
    expect(asks).toBe(2);
    expect(ran).toEqual(['slow']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', policyVersion: 'lockdown' });
  });

  it('announced again after its re-decision; a tool_decided kill switch tripped then: it does not run', async () => {
    const { registry, ran, setDuring } = slowThenWire();
    registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules: [], fallback: 'allow' }));
    let incident = false;
    const decided: string[] = [];
    registry.onChange((e) => {
      if (e.type !== 'tool_decided') return;
      decided.push(`${e.decision.callId}:${e.decision.effect}`);
      // The kill switch: a wire decided while an incident is open locks the registry down.
      if (e.decision.tool === 'wire' && e.decision.effect === 'allow' && incident)
        registry.setPermissionPolicy(lockdown());
    });
    setDuring(() => {
      // slow opens an incident, and something unrelated is registered meanwhile (wire is decided again).
      incident = true;
      registry.register({ name: 'other', parameters: { type: 'object' }, execute: () => 'x' });
    });
    const results = await registry.dispatch(calls);
    expect(ran).toEqual(['slow']);
    expect(results[1]!.decision).toMatchObject({ effect: 'deny', policyVersion: 'lockdown' });
    expect(decided.at(-1)).toBe('2:deny');
  });
});

describe('a call decided again is validated from its arguments, not from what its schema made of them', () => {
  it('a schema that converts dollars to cents: the call runs with the cents of the amount asked, not 100 times them', async () => {
    const { registry, ran, setDuring } = slowThenWire();
    const paid: number[] = [];
    registry.register(
      defineTool({
        name: 'pay',
        parameters: z.object({ amount: z.number().transform((dollars) => dollars * 100) }),
        execute: ({ amount }) => {
          paid.push(amount);
          return 'paid';
        },
      }),
    );
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: 'allow' }));
    // Something unrelated is registered while slow runs: pay is decided again.
    setDuring(() => registry.register({ name: 'other', parameters: { type: 'object' }, execute: () => 'x' }));
    const results = await registry.dispatch([calls[0]!, { id: '2', name: 'pay', arguments: { amount: 5 } }]);
    expect(ran).toEqual(['slow']);
    expect(paid).toEqual([500]);
    expect(results[1]!.decision.parameters).toEqual({ amount: 500 });
  });
});

describe('a limiter set while a batch is in flight', () => {
  it('applies to the calls of the batch that run after it (one call an hour: one more runs, not three)', async () => {
    const { registry, ran, setDuring } = slowThenWire();
    setDuring(() =>
      registry.setLimiter(
        new Limiter({ counters: new MemoryCounterStore(), limits: [{ name: 'hourly', max: 1, window: '1h' }] }),
      ),
    );
    const wires = ['2', '3', '4'].map((id) => ({ id, name: 'wire', arguments: {} }));
    const results = await registry.dispatch([calls[0]!, ...wires]);
    expect(ran).toEqual(['slow', 'wire']);
    expect(results.map((r) => r.status)).toEqual(['ok', 'ok', 'refused', 'refused']);
    expect(results[3]!.decision).toMatchObject({ effect: 'deny', stage: 'limit' });
  });
});
