/**
 * The runner's confirm step and the resume of a paused delegation (branch atk3): each of these ran a call
 * that the tenant plan or policy in force refused.
 */
import { describe, expect, it } from 'vitest';
import { AgentRunner, PermissionPolicy, PermissionResult, type Agent, type TenantLimits } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { ASK_BIG_REFUNDS, DENY_HUGE_REFUNDS, shop } from './fixtures.js';

describe('the confirm step at the root frame', () => {
  it('a tool_decided listener that replaces the tenant plan (a new object) stops the very call it was told of', async () => {
    const { registry, executed } = shop();
    const plans: Record<string, TenantLimits> = { acme: { tools: ['search', 'quote'] } };
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: (id) => plans[id], onRefusal: 'continue' });
    const concierge: Agent = { name: 'concierge', tools: ['search', 'quote'] };
    runner.on('tool_decided', (e) => {
      // The plan is replaced, not edited in place: quote is taken away.
      if (e.decision.tool === 'quote' && e.decision.effect === 'allow') plans['acme'] = { tools: ['search'] };
    });
    const result = await runner.run(concierge, 'go', { tenant: 'acme' });
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.at(-1)).toMatchObject({ tool: 'quote', effect: 'deny', layer: 'tenant' });
  });
});

describe('the resume of a paused delegation is judged on the input it ran with', () => {
  it('a deeper frame reusing the call id and peer (agent graph with a cycle) does not stand in for it', async () => {
    const f = shop({ policyVersion: 'v1' });
    const pricing: { name: string; tools: string[]; peers: Agent[] } = {
      name: 'pricing',
      tools: ['refund', 'quote', 'agent:pricing', 'agent:concierge'],
      peers: [],
    };
    const concierge: Agent = {
      name: 'concierge',
      tools: ['refund', 'quote', 'agent:pricing', 'agent:concierge'],
      peers: [pricing],
    };
    pricing.peers.push(concierge);
    const root = (request: { path: readonly string[] }): boolean => request.path.length === 1;
    const model = new ScriptedModel({
      concierge: [
        // The root delegates the evil task; the concierge at depth 2 delegates a benign one under the same call id.
        (r) => ({
          toolCalls: [{ id: 'c', name: 'agent:pricing', arguments: { input: root(r) ? 'EVIL: drain it' : 'benign' } }],
        }),
        (r) =>
          root(r)
            ? { text: 'done' }
            : { toolCalls: [{ id: 'r', name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'refunded' },
      ],
      pricing: [
        (r) =>
          r.path.length === 2
            ? { toolCalls: [{ id: 'd', name: 'agent:concierge', arguments: { input: 'go' } }] }
            : { text: '42' },
        { text: 'priced' },
      ],
    });
    const runner = new AgentRunner({
      registry: f.registry,
      model,
      secret: 'test-secret-with-enough-bytes-0123456789',
      handler: () => 'pending',
      onRefusal: 'continue',
    });
    const first = await runner.run(concierge, 'go', { tenant: 'acme' });
    if (first.status !== 'paused') throw new Error(`expected a pause, got ${first.status}`);
    expect(first.pending[0]).toMatchObject({ toolName: 'refund' });
    // While the run is paused, the policy (same pinned version) comes to refuse the evil delegation.
    f.registry.setPermissionPolicy(
      new PermissionPolicy({
        version: 'v1',
        rules: [
          {
            name: 'no-evil-delegation',
            tools: ['agent:pricing'],
            match: (_tool, params) => String(params['input']).includes('EVIL'),
            result: PermissionResult.DENY,
            reason: 'evil tasks are not delegated',
          },
          DENY_HUGE_REFUNDS,
          ASK_BIG_REFUNDS,
        ],
        fallback: PermissionResult.ALLOW,
      }),
    );
    const state = JSON.parse(JSON.stringify(first.state)) as typeof first.state;
    const resumed = await runner.resume(state, [runner.answer(first.pending[0]!, 'allow')]);
    expect(f.refunds).toHaveLength(0);
    expect(resumed.decisions.find((d) => d.rule === 'no-evil-delegation')).toMatchObject({
      tool: 'agent:pricing',
      effect: 'deny',
      parameters: { input: 'EVIL: drain it' },
    });
  });
});

describe('the confirm step reads the route again after every re-decision', () => {
  it('the plan replaced while the handler is asked again in the confirm step: the call does not run', async () => {
    const { registry, executed } = shop({ policyVersion: 'v1' });
    registry.setPermissionPolicy(new PermissionPolicy({ version: 'v1', rules: [], fallback: PermissionResult.ALLOW }));
    const plans: Record<string, TenantLimits> = { acme: { tools: ['search', 'quote'] } };
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({
      registry,
      model,
      tenants: (id) => plans[id],
      onRefusal: 'continue',
      // The person takes 30 ms.
      handler: () => new Promise((resolve) => setTimeout(() => resolve('allow'), 30)),
    });
    let switched = false;
    registry.onChange((e) => {
      if (e.type !== 'tool_decided' || e.decision.effect !== 'allow' || switched) return;
      switched = true;
      // Told of quote: a new version asks for quote, and 10 ms later quote leaves the tenant's plan.
      registry.setPermissionPolicy(new PermissionPolicy({ version: 'v2', rules: [], fallback: PermissionResult.ASK }));
      setTimeout(() => (plans['acme'] = { tools: ['search'] }), 10);
    });
    const result = await runner.run({ name: 'concierge', tools: ['search', 'quote'] }, 'go', { tenant: 'acme' });
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.at(-1)).toMatchObject({ tool: 'quote', effect: 'deny', layer: 'tenant' });
  });
});
