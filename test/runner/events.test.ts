import { describe, expect, expectTypeOf, it } from 'vitest';
import { AgentRunner, type Decision, type RegistryEvent } from '../../src/index.js';
import {
  InMemoryApprovalStore,
  ScriptedModel,
  type RunEvent,
  type RunEventMap,
  type RunEventType,
} from '../../src/runner/index.js';
import { SECRET, shop } from './fixtures.js';

describe('AgentRunner events', () => {
  it('emits every event type, each with run id, agent, tenant and path, and the Decision where one applies', async () => {
    const store = new InMemoryApprovalStore();
    const make = () => {
      const f = shop({ policyVersion: 'v1' });
      const model = new ScriptedModel([
        {
          toolCalls: [
            { name: 'search', arguments: { query: 'a' } },
            { name: 'refund', arguments: { order: 'A', amount: 500 } },
          ],
        },
        { toolCalls: [{ name: 'refund', arguments: { order: 'B', amount: 5000 } }] },
        { text: 'done' },
      ]);
      const runner = new AgentRunner({
        registry: f.registry,
        model,
        approvals: store,
        secret: SECRET,
        handler: () => 'pending',
      });
      const events: RunEvent[] = [];
      runner.on((e) => events.push(e));
      const registryEvents: RegistryEvent[] = [];
      f.registry.onChange((e) => registryEvents.push(e));
      return { runner, events, registryEvents };
    };
    const first = make();
    const result = await first.runner.run({ name: 'concierge', tools: ['search', 'refund'] }, 'go', { tenant: 'acme' });
    if (result.status !== 'paused') throw new Error('expected a pause');
    const second = make();
    const done = await second.runner.resume(result.state, [first.runner.answer(result.pending[0]!, 'allow')]);
    expect(done.status).toBe('completed');

    const all = [...first.events, ...second.events];
    const types = new Set(all.map((e) => e.type));
    const expected: RunEventType[] = [
      'run_started',
      'tool_decided',
      'tool_refused',
      'approval_requested',
      'approval_resolved',
      'run_paused',
      'run_resumed',
      'run_finished',
    ];
    expect([...types].sort()).toEqual([...expected].sort());
    for (const event of all) {
      expect(event).toMatchObject({ runId: result.runId, agent: 'concierge', tenant: 'acme', path: ['concierge'] });
    }
    const decided = second.events.filter((e) => e.type === 'tool_decided') as RunEventMap['tool_decided'][];
    expect(decided.map((e) => [e.decision.tool, e.decision.effect])).toEqual([
      ['search', 'allow'],
      ['refund', 'allow'],
      ['refund', 'deny'],
    ]);
    const refused = second.events.find((e) => e.type === 'tool_refused') as RunEventMap['tool_refused'];
    expect(refused.decision).toMatchObject({ rule: 'deny_huge_refunds' });
    expect(refused.error).toBeNull(); // a policy denial is not an allowlist refusal
    const resolved = second.events.find((e) => e.type === 'approval_resolved') as RunEventMap['approval_resolved'];
    expect(resolved.decision).toMatchObject({ effect: 'allow', tool: 'refund' });
    const finished = second.events.at(-1) as RunEventMap['run_finished'];
    expect(finished).toMatchObject({ type: 'run_finished', status: 'completed', error: null });
    // The registry's own listeners (audit) see the runner's decisions too.
    expect(
      second.registryEvents
        .filter((e) => e.type === 'tool_decided')
        .map((e) => (e as { decision: Decision }).decision.tool),
    ).toEqual(['search', 'refund', 'refund']);
    expect(first.registryEvents.some((e) => e.type === 'permission_asked')).toBe(true);
  });

  it('on(type, listener) receives only that type, typed; unsubscribe stops it; a throwing listener does not stop the run', async () => {
    const { registry } = shop();
    const runner = new AgentRunner({
      registry,
      model: new ScriptedModel([{ toolCalls: [{ name: 'search', arguments: { query: 'q' } }] }, { text: 'ok' }]),
    });
    const seen: string[] = [];
    const off = runner.on('tool_decided', (e) => {
      expectTypeOf(e.decision).toEqualTypeOf<Decision>();
      seen.push(e.decision.tool);
    });
    runner.on('run_started', () => {
      throw new Error('listener bug');
    });
    const warnings: string[] = [];
    const onWarning = (w: Error): void => void warnings.push(w.message);
    process.on('warning', onWarning);
    const result = await runner.run({ name: 'a', tools: ['search'] }, 'x');
    expect(result.status).toBe('completed');
    expect(seen).toEqual(['search']);
    off();
    await runner.run({ name: 'a', tools: ['search'] }, 'x');
    expect(seen).toEqual(['search']);
    await new Promise((r) => setImmediate(r));
    process.off('warning', onWarning);
    expect(warnings.some((w) => w.includes('listener bug'))).toBe(true);
  });
});
