/**
 * Issue 10's runner attacks, through AgentRunner's public API: each of these let a call run (or count)
 * that the gate had not decided in that form on the old main.
 */
import { describe, expect, it } from 'vitest';
import {
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  type Agent,
  type RunResult,
  type TenantLimits,
} from '../../src/index.js';
import { InMemoryApprovalStore, ScriptedModel } from '../../src/runner/index.js';
import { SECRET, shop } from './fixtures.js';

function paused(result: RunResult): Extract<RunResult, { status: 'paused' }> {
  if (result.status !== 'paused')
    throw new Error(`expected a paused run, got ${result.status}: ${result.error?.message ?? ''}`);
  return result;
}

describe('attack 3: calls decided before a delegation are decided again after it', () => {
  const pricing: Agent = { name: 'pricing', tools: ['quote'] };
  const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'agent:pricing'], peers: [pricing] };

  it('with maxToolCalls 3, a turn [a, agent:peer, b, c] whose peer makes one call attempts 3 calls, not 4', async () => {
    const { registry, executed } = shop();
    const model = new ScriptedModel({
      concierge: [
        {
          toolCalls: [
            { name: 'search', arguments: { query: 'a' } },
            { name: 'agent:pricing', arguments: { input: 'price it' } },
            { name: 'search', arguments: { query: 'b' } },
            { name: 'search', arguments: { query: 'c' } },
          ],
        },
        { text: 'never' },
      ],
      pricing: [{ toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] }, { text: '42' }],
    });
    const runner = new AgentRunner({ registry, model, tenants: { acme: { maxToolCalls: 3 } } });
    const result = await runner.run(concierge, 'go', { tenant: 'acme' });
    expect(result.status).toBe('budget_exceeded');
    expect(result.attempts).toBe(3);
    expect(executed).toEqual({ search: 1, quote: 1 });
    // The call stopped by the cap is recorded, but it is no attempt: attempts and refusals count charged calls.
    expect(result.decisions.at(-1)).toMatchObject({ effect: 'deny', stage: 'budget', tool: 'search' });
    expect(result.decisions.filter((d) => d.stage !== 'budget')).toHaveLength(result.attempts);
    expect(result.refusals).toBe(result.decisions.filter((d) => d.effect === 'deny' && d.stage !== 'budget').length);
  });

  it('a call decided before the delegation does not run when the tenant plan is revoked during the peer run', async () => {
    const fixture = shop();
    let plan: TenantLimits = { tools: ['search', 'quote', 'agent:pricing'] };
    const model = new ScriptedModel({
      concierge: [
        {
          toolCalls: [
            { name: 'agent:pricing', arguments: { input: 'price it' } },
            { name: 'search', arguments: { query: 'b' } },
          ],
        },
        { text: 'done' },
      ],
      pricing: [
        { toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] },
        () => {
          // An admin revokes search from the tenant's plan while the peer runs.
          plan = { tools: ['quote', 'agent:pricing'] };
          return { text: '42' };
        },
      ],
    });
    const runner = new AgentRunner({
      registry: fixture.registry,
      model,
      onRefusal: 'continue',
      tenants: () => plan,
    });
    const result = await runner.run(concierge, 'go', { tenant: 'acme' });
    expect(fixture.executed['search']).toBeUndefined();
    expect(result.decisions.find((d) => d.tool === 'search')).toMatchObject({
      effect: 'deny',
      stage: 'allowlist',
      layer: 'tenant',
    });
  });

  it('a policy installed during the peer run decides the calls after the delegation', async () => {
    const fixture = shop();
    const model = new ScriptedModel({
      concierge: [
        {
          toolCalls: [
            { name: 'agent:pricing', arguments: { input: 'price it' } },
            { name: 'search', arguments: { query: 'b' } },
          ],
        },
        { text: 'done' },
      ],
      pricing: [
        () => {
          fixture.registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: PermissionResult.DENY }));
          return { text: '42' };
        },
      ],
    });
    const runner = new AgentRunner({ registry: fixture.registry, model });
    const result = await runner.run(concierge, 'go', { tenant: 'acme' });
    expect(result.status).toBe('completed');
    expect(fixture.executed['search']).toBeUndefined();
    expect(result.decisions.map((d) => [d.tool, d.effect])).toEqual([
      ['agent:pricing', 'allow'],
      ['search', 'deny'],
    ]);
  });
});

describe('attack 4: resuming one paused state again and again does not reset the budget', () => {
  const concierge: Agent = { name: 'concierge', tools: ['search', 'refund'] };

  it('with a remembered run approval, three resumes of one state run at most maxToolCalls calls in all', async () => {
    const store = new InMemoryApprovalStore();
    const fixture = shop({ policyVersion: 'v1' });
    let fresh = 0;
    // Like a real model, every later turn's call has a new id, so the ledger cannot recognise it.
    const model = () =>
      new ScriptedModel(
        [
          { toolCalls: [{ id: 'first', name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
          () => ({ toolCalls: [{ id: `r${++fresh}`, name: 'refund', arguments: { order: 'A1', amount: 500 } }] }),
        ],
        { whenDone: 'repeat' },
      );
    const make = () =>
      new AgentRunner({
        registry: fixture.registry,
        model: model(),
        approvals: store,
        secret: SECRET,
        handler: () => 'pending',
        tenants: { acme: { maxToolCalls: 3 } },
      });
    const first = make();
    const state = paused(await first.run(concierge, 'refund', { tenant: 'acme' }));
    const decision = first.answer(state.pending[0]!, 'allow', { scope: 'run' });
    const results = [
      await make().resume(state.state, [decision]),
      await make().resume(state.state),
      await make().resume(state.state),
    ];
    expect(fixture.refunds.length).toBeLessThanOrEqual(3);
    expect(fixture.refunds).toHaveLength(3);
    for (const r of results) expect(r.status).toBe('budget_exceeded');
  });

  it('the tally travels in the signed state: a resume continues it, and an edited tally is refused', async () => {
    const fixture = shop({ policyVersion: 'v1' });
    const store = new InMemoryApprovalStore();
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'search', arguments: { query: 'a' } }] },
      { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
      { toolCalls: [{ name: 'search', arguments: { query: 'b' } }] },
      { toolCalls: [{ name: 'search', arguments: { query: 'c' } }] },
      { text: 'never' },
    ]);
    const runner = new AgentRunner({
      registry: fixture.registry,
      model,
      approvals: store,
      secret: SECRET,
      handler: () => 'pending',
      tenants: { acme: { maxToolCalls: 3 } },
    });
    const p = paused(await runner.run(concierge, 'go', { tenant: 'acme' }));
    expect(p.state.tally).toMatchObject({ attempts: 1, refusals: 0 });
    const edited = { ...p.state, tally: { ...p.state.tally, attempts: 0 } };
    await expect(runner.resume(edited)).rejects.toThrow(/altered/);
    // A fresh store (another deployment) still starts from the state's tally.
    const elsewhere = new AgentRunner({
      registry: fixture.registry,
      model,
      approvals: new InMemoryApprovalStore(),
      secret: SECRET,
      tenants: { acme: { maxToolCalls: 3 } },
    });
    const done = await elsewhere.resume(p.state, [runner.answer(p.pending[0]!, 'allow')]);
    expect(done.status).toBe('budget_exceeded');
    expect(done.attempts).toBe(3);
    expect(fixture.executed['search']).toBe(2);
  });
});

describe('attack 6: remembered session answers cannot collide with run answers', () => {
  const concierge: Agent = { name: 'concierge', tools: ['refund'] };
  const script = () =>
    new ScriptedModel([{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'ok' }]);

  it("a caller whose id is 'run:R1' does not reuse the session answers of the caller-less run R1", async () => {
    const store = new InMemoryApprovalStore();
    const fixture = shop({ policyVersion: 'v1' });
    const allowing = new AgentRunner({
      registry: fixture.registry,
      model: script(),
      approvals: store,
      secret: SECRET,
      handler: () => ({ answer: 'allow', scope: 'session' }),
    });
    await allowing.run(concierge, 'x', { tenant: 'acme', runId: 'R1' });
    expect(fixture.refunds).toHaveLength(1);
    let asked = 0;
    const denying = new AgentRunner({
      registry: fixture.registry,
      model: script(),
      approvals: store,
      secret: SECRET,
      handler: () => (asked++, 'deny'),
    });
    const r = await denying.run(concierge, 'x', { tenant: 'acme', caller: { id: 'run:R1' } });
    expect(asked).toBe(1);
    expect(fixture.refunds).toHaveLength(1);
    expect(r.decisions[0]).toMatchObject({ effect: 'deny', stage: 'handler' });
  });
});

describe('the allowlist step per call: a tenant plan changed in place applies at the next call', () => {
  const pricing: Agent = { name: 'pricing', tools: ['quote'] };
  const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'agent:pricing'], peers: [pricing] };

  it('at the root: a plan cut by splice refuses the next turn, and one grown by push permits it', async () => {
    const { registry, executed } = shop();
    const tools = ['search', 'quote'];
    const model = new ScriptedModel({
      concierge: [
        { toolCalls: [{ name: 'search', arguments: { query: 'a' } }] },
        { toolCalls: [{ name: 'search', arguments: { query: 'b' } }] },
        { toolCalls: [{ name: 'search', arguments: { query: 'c' } }] },
        { text: 'done' },
      ],
    });
    const runner = new AgentRunner({ registry, model, tenants: () => ({ tools }), onRefusal: 'continue' });
    const seen: string[] = [];
    runner.on('tool_decided', (e) => {
      seen.push(`${e.decision.effect}:${e.decision.layer ?? ''}`);
      // The plan is edited in place, the array itself kept: after the first call search is taken away, after
      // the refusal it is given back.
      if (seen.length === 1) tools.splice(0, 1);
      if (seen.length === 2) tools.push('search');
    });
    const result = await runner.run(concierge, 'go');
    expect(seen).toEqual(['allow:', 'deny:tenant', 'allow:']);
    expect(executed['search']).toBe(2);
    expect(result.status).toBe('completed');
  });

  it('below the root (a delegation): a plan cut in place refuses the peer at its next call', async () => {
    const { registry, executed } = shop();
    const tools = ['search', 'quote', 'agent:pricing'];
    const model = new ScriptedModel({
      concierge: [{ toolCalls: [{ name: 'agent:pricing', arguments: { input: 'price it' } }] }, { text: 'done' }],
      pricing: [
        { toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] },
        { toolCalls: [{ name: 'quote', arguments: { item: 'desk' } }] },
        { text: '42' },
      ],
    });
    const runner = new AgentRunner({ registry, model, tenants: () => ({ tools }), onRefusal: 'continue' });
    runner.on('tool_decided', (e) => {
      if (e.decision.tool === 'quote' && e.decision.effect === 'allow') tools.splice(tools.indexOf('quote'), 1);
    });
    const result = await runner.run(concierge, 'go');
    expect(executed['quote']).toBe(1);
    expect(result.decisions.filter((d) => d.tool === 'quote').map((d) => [d.effect, d.layer])).toEqual([
      ['allow', null],
      ['deny', 'tenant'],
    ]);
  });
});
