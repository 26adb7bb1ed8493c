/**
 * The runner's confirm step and the resume of a paused delegation (branch atk3): each of these ran a call
 * that the tenant plan or policy in force refused.
 */
import { describe, expect, it } from 'vitest';
import { AgentRunner, type Agent, type TenantLimits } from '../../src/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { shop } from './fixtures.js';

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
