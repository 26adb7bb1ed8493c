import { describe, expect, it } from 'vitest';
import { AgentRunner, ScriptedModel, ToolAllowlist, ToolAllowlistGuard } from '../../src/index.js';
import { shop } from './fixtures.js';

const concierge = { name: 'concierge', tools: ['search', 'refund', 'quote'] };

describe('AgentRunner.run: budgets', () => {
  it('refused calls count against maxToolCalls; over the cap the run ends as budget_exceeded keeping what was done', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'search', arguments: { query: 'a' } }] },
      { toolCalls: [{ name: 'refund', arguments: { order: 'A', amount: 5000 } }] }, // denied by policy: still an attempt
      { toolCalls: [{ name: 'refund', arguments: { order: 'B', amount: 5000 } }] }, // denied again
      { toolCalls: [{ name: 'search', arguments: { query: 'b' } }] }, // the 4th attempt: over a cap of 3
      { text: 'never' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: { acme: { maxToolCalls: 3 } } });
    const result = await runner.run(concierge, 'go', { tenant: 'acme' });
    expect(result.status).toBe('budget_exceeded');
    expect(result.status === 'budget_exceeded' && result.cap).toBe('maxToolCalls');
    expect(result.attempts).toBe(3);
    // The two policy denials; the call the cap stopped was never charged, so it is no attempt and no refusal.
    expect(result.refusals).toBe(2);
    expect(executed['search']).toBe(1);
    expect(result.decisions.at(-1)).toMatchObject({ effect: 'deny', stage: 'budget', by: 'budget' });
    // What was done is kept: the transcript holds the first search's result.
    expect(result.messages.some((m) => m.role === 'tool' && m.content === '3 results for a')).toBe(true);
  });

  it('refused allowlist calls (onRefusal continue) count against the cap too', async () => {
    const { registry, executed } = shop();
    let n = 0;
    // Different arguments every time, so it is the cap that ends the run, not the refusal loop.
    const model = new ScriptedModel(
      [() => ({ toolCalls: [{ name: 'refund', arguments: { order: `A${++n}`, amount: 1 } }] })],
      { whenDone: 'repeat' },
    );
    const runner = new AgentRunner({
      registry,
      model,
      onRefusal: 'continue',
      tenants: { t: { tools: ['search'], maxToolCalls: 5 } },
    });
    const result = await runner.run(concierge, 'go', { tenant: 't' });
    expect(result.status).toBe('budget_exceeded');
    expect(result.attempts).toBe(5);
    expect(executed['refund']).toBeUndefined();
  });

  it('charges maxCost with costOf per tool', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'quote', arguments: { item: 'x' } },
          { name: 'quote', arguments: { item: 'y' } },
          { name: 'search', arguments: { query: 'z' } },
        ],
      },
      { text: 'ok' },
    ]);
    const runner = new AgentRunner({
      registry,
      model,
      tenants: { t: { maxCost: 10 } },
      costOf: (tool) => (tool === 'quote' ? 4 : 3),
    });
    const result = await runner.run(concierge, 'go', { tenant: 't' });
    expect(result.status).toBe('budget_exceeded');
    expect(result.status === 'budget_exceeded' && result.cap).toBe('maxCost');
    expect(result.cost).toBe(8);
    // The calls within budget ran; the one past it did not.
    expect(executed['quote']).toBe(2);
    expect(executed['search']).toBeUndefined();
  });

  it('caps model turns with maxIterations (refused turns count)', async () => {
    const { registry } = shop();
    let n = 0;
    const model = new ScriptedModel(
      [() => ({ toolCalls: [{ name: 'refund', arguments: { order: `O${++n}`, amount: 5000 } }] })],
      { whenDone: 'repeat' },
    );
    const runner = new AgentRunner({ registry, model, tenants: { t: { maxIterations: 4 } } });
    const result = await runner.run(concierge, 'go', { tenant: 't' });
    expect(result.status).toBe('budget_exceeded');
    expect(result.status === 'budget_exceeded' && result.cap).toBe('maxIterations');
    expect(result.iterations).toBe(4);
    expect(model.requests).toHaveLength(4);
  });

  it('the same refused call three times ends the run as refusal_loop', async () => {
    const { registry } = shop();
    const model = new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A', amount: 5000 } }] }], {
      whenDone: 'repeat',
    });
    const result = await new AgentRunner({ registry, model }).run(concierge, 'go');
    expect(result.status).toBe('refusal_loop');
    expect(result.status === 'refusal_loop' && result.decision).toMatchObject({ rule: 'deny_huge_refunds' });
    expect(result.attempts).toBe(3);
    expect(result.refusals).toBe(3);
    expect(model.requests).toHaveLength(3);
  });

  it('refusal_loop keys on canonical tool and arguments: other arguments or spellings are the same call only when canonical', async () => {
    const { registry } = shop();
    const spellings = ['refund', 'REFUND', 'Ｒｅｆｕｎｄ'];
    let i = 0;
    const model = new ScriptedModel(
      [() => ({ toolCalls: [{ name: spellings[i++ % 3]!, arguments: { amount: 5000, order: 'A' } }] })],
      { whenDone: 'repeat' },
    );
    const result = await new AgentRunner({ registry, model, refusalLoopLimit: 3 }).run(
      { name: 'c', tools: ['refund'] },
      'go',
    );
    expect(result.status).toBe('refusal_loop');
    expect(result.attempts).toBe(3);

    let amount = 2000;
    const varying = new ScriptedModel(
      [() => ({ toolCalls: [{ name: 'refund', arguments: { order: 'A', amount: amount++ } }] })],
      { whenDone: 'repeat' },
    );
    const result2 = await new AgentRunner({ registry, model: varying, tenants: { t: { maxIterations: 6 } } }).run(
      { name: 'c', tools: ['refund'] },
      'go',
      { tenant: 't' },
    );
    expect(result2.status).toBe('budget_exceeded');
  });

  it('refusal_loop catches a model that keeps calling a tool outside the allowlist', async () => {
    const { registry } = shop();
    const model = new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A', amount: 1 } }] }], {
      whenDone: 'repeat',
    });
    const result = await new AgentRunner({ registry, model, onRefusal: 'continue' }).run(concierge, 'go', {
      caller: { scopes: ['search'] },
    });
    expect(result.status).toBe('refusal_loop');
    expect(result.decisions).toHaveLength(3);
  });

  it('ToolAllowlistGuard.follow keeps the tally across allowlists (what the runner charges)', () => {
    const guard = new ToolAllowlistGuard(ToolAllowlist.resolve(['a', 'b']));
    guard.decide('a');
    guard.follow(ToolAllowlist.resolve(['a', 'b'], { tenant: ['b'] }));
    expect(guard.decide('a')).toEqual({ tool: 'a', permitted: false, reason: 'tenant' });
    expect([guard.attempts, guard.refusals]).toEqual([2, 1]);
    expect(() => guard.follow({} as ToolAllowlist)).toThrow(TypeError);
  });
});
