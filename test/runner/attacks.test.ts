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
import { ASK_BIG_REFUNDS, DENY_HUGE_REFUNDS, SECRET, shop } from './fixtures.js';

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
      // The plan is edited in place, the array itself kept: after the first call ran search is taken away,
      // after the refusal it is given back. (A cut made while a call is announced refuses that call itself.)
      if (seen.length === 2) tools.push('search');
    });
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && seen.length === 1) tools.splice(0, 1);
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
    // Cut after the first quote ran (a cut made while a call is announced refuses that call itself).
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && e.tool === 'quote') tools.splice(tools.indexOf('quote'), 1);
    });
    const result = await runner.run(concierge, 'go');
    expect(executed['quote']).toBe(1);
    expect(result.decisions.filter((d) => d.tool === 'quote').map((d) => [d.effect, d.layer])).toEqual([
      ['allow', null],
      ['deny', 'tenant'],
    ]);
  });
});

const planConcierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'refund'] };

describe('attack: a tenant plan cut during a turn applies to the calls of that turn not yet run', () => {
  it('A1: plan replaced (new object) while call 1 runs: call 2 of the same turn must be refused', async () => {
    const { registry, executed } = shop();
    let plan: TenantLimits = { tools: ['search', 'quote'] };
    registry.onChange((e) => {
      // an admin revokes quote while search executes (tool_executed fires after search ran)
      if (e.type === 'tool_executed' && e.tool === 'search') plan = { tools: ['search'] };
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'search', arguments: { query: 'a' } },
          { name: 'quote', arguments: { item: 'lamp' } },
        ],
      },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: () => plan, onRefusal: 'continue' });
    const result = await runner.run(planConcierge, 'go');
    expect(executed['search']).toBe(1);
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.find((d) => d.tool === 'quote')).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });

  it('A2: plan cut in place (splice) while call 1 runs: call 2 of the same turn must be refused', async () => {
    const { registry, executed } = shop();
    const tools = ['search', 'quote'];
    registry.onChange((e) => {
      if (e.type === 'tool_executed' && e.tool === 'search') tools.splice(tools.indexOf('quote'), 1);
    });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'search', arguments: { query: 'a' } },
          { name: 'quote', arguments: { item: 'lamp' } },
        ],
      },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({ registry, model, tenants: () => ({ tools }), onRefusal: 'continue' });
    const result = await runner.run(planConcierge, 'go');
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.find((d) => d.tool === 'quote')).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });

  it('A3: plan revoked while the in-process handler is asked about call 2: call 1 (decided before) must be refused', async () => {
    const { registry, executed, refunds } = shop();
    let plan: TenantLimits = { tools: ['quote', 'refund'] };
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'quote', arguments: { item: 'lamp' } },
          { name: 'refund', arguments: { order: 'A-1', amount: 250 } },
        ],
      },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({
      registry,
      model,
      tenants: () => plan,
      onRefusal: 'continue',
      handler: async () => {
        // while a person looks at the refund, the tenant loses quote
        plan = { tools: ['refund'] };
        await new Promise((r) => setTimeout(r, 5));
        return 'allow' as const;
      },
    });
    const result = await runner.run(planConcierge, 'go');
    expect(refunds).toHaveLength(1);
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.find((d) => d.tool === 'quote')).toMatchObject({ effect: 'deny', layer: 'tenant' });
  });
});

describe('attack: what was granted before a pause or by another caller does not carry over', () => {
  const billing: Agent = { name: 'billing', tools: ['refund'] };
  const top: Agent = { name: 'concierge', tools: ['refund', 'agent:billing'], peers: [billing] };
  /** Delegating to billing needs a person's approval; the refund rules as before. */
  const askDelegation = () =>
    new PermissionPolicy({
      version: 'v1',
      rules: [
        { name: 'ask_delegation', tools: ['agent:billing'], result: PermissionResult.ASK, reason: 'a person decides' },
        DENY_HUGE_REFUNDS,
        ASK_BIG_REFUNDS,
      ],
      fallback: PermissionResult.ALLOW,
    });

  const wire = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

  it('a tenant that loses agent:billing while the run is paused inside billing: the resumed peer does not act', async () => {
    const store = new InMemoryApprovalStore();
    let plan: TenantLimits = { tools: ['refund', 'agent:billing'] };
    const model = () =>
      new ScriptedModel({
        concierge: [{ toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1' } }] }, { text: 'done' }],
        billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
      });
    const f = shop({ policyVersion: 'v1' });
    const runner = new AgentRunner({
      registry: f.registry,
      model: model(),
      approvals: store,
      secret: SECRET,
      tenants: () => plan,
      handler: () => 'pending',
      onRefusal: 'continue',
    });
    const p = paused(await runner.run(top, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(p.pending[0]!, 'allow');
    // the tenant's plan no longer includes the billing agent
    plan = { tools: ['refund'] };
    const resumed = await runner.resume(wire(p.state), [decision]);
    expect(f.refunds).toHaveLength(0);
    expect(resumed.decisions.at(-1)).toMatchObject({ tool: 'agent:billing', effect: 'deny', layer: 'tenant' });
  });

  it('a delegation that needs approval under the policy in force on resume does not continue unasked (branch atk1)', async () => {
    const store = new InMemoryApprovalStore();
    const model = new ScriptedModel({
      concierge: [{ toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1' } }] }, { text: 'done' }],
      billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
    });
    const f = shop({ policyVersion: 'v1' });
    let asked = 0;
    const runner = new AgentRunner({
      registry: f.registry,
      model,
      approvals: store,
      secret: SECRET,
      handler: (request) => {
        if (request.toolName === 'agent:billing') asked++;
        return request.toolName === 'agent:billing' ? 'deny' : 'pending';
      },
      onRefusal: 'continue',
    });
    const p = paused(await runner.run(top, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(p.pending[0]!, 'allow');
    // While the run is paused inside billing, delegating to billing comes to need a person's approval (the
    // policy keeps its pinned version, so the refund's approval still binds).
    f.registry.setPermissionPolicy(askDelegation());
    const resumed = await runner.resume(wire(p.state), [decision]);
    expect(f.refunds).toHaveLength(0);
    expect(resumed.decisions.at(-1)).toMatchObject({ tool: 'agent:billing', effect: 'deny' });
    expect(asked).toBeLessThanOrEqual(1);
  });

  it('a delegation approved before the pause for the same binding continues on resume (branch atk1)', async () => {
    const f = shop({ policyVersion: 'v1' });
    f.registry.setPermissionPolicy(askDelegation());
    const runner = new AgentRunner({
      registry: f.registry,
      model: new ScriptedModel({
        concierge: [{ toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1' } }] }, { text: 'done' }],
        billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
      }),
      approvals: new InMemoryApprovalStore(),
      secret: SECRET,
      handler: (request) => (request.toolName === 'agent:billing' ? 'allow' : 'pending'),
    });
    const p = paused(await runner.run(top, 'refund A1', { tenant: 'acme' }));
    const resumed = await runner.resume(wire(p.state), [runner.answer(p.pending[0]!, 'allow')]);
    expect(resumed.status).toBe('completed');
    expect(f.refunds).toHaveLength(1);
  });

  it('a delegation approved with edited input before the peer paused continues on resume (branch atk1)', async () => {
    const f = shop({ policyVersion: 'v1' });
    f.registry.setPermissionPolicy(askDelegation());
    const runner = new AgentRunner({
      registry: f.registry,
      model: new ScriptedModel({
        concierge: [
          { toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1 and A2' } }] },
          { text: 'done' },
        ],
        billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
      }),
      approvals: new InMemoryApprovalStore(),
      secret: SECRET,
      handler: () => 'pending',
    });
    const first = paused(await runner.run(top, 'refund', { tenant: 'acme' }));
    const edited = runner.answer(first.pending[0]!, 'allow', { arguments: { input: 'refund A1' } });
    const second = paused(await runner.resume(wire(first.state), [edited]));
    expect(second.pending[0]).toMatchObject({ toolName: 'refund' });
    const done = await runner.resume(wire(second.state), [runner.answer(second.pending[0]!, 'allow')]);
    expect(done.status).toBe('completed');
    expect(f.refunds).toHaveLength(1);
  });

  it("a paused delegation deeper than the resuming runner's maxDepth does not continue (branch atk1)", async () => {
    const store = new InMemoryApprovalStore();
    const model = () =>
      new ScriptedModel({
        concierge: [{ toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1' } }] }, { text: 'done' }],
        billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
      });
    const f = shop({ policyVersion: 'v1' });
    const options = { registry: f.registry, approvals: store, secret: SECRET, handler: () => 'pending' as const };
    const first = new AgentRunner({ ...options, model: model(), maxDepth: 2 });
    const p = paused(await first.run(top, 'refund A1', { tenant: 'acme' }));
    // Resumed where delegation is no longer allowed at all.
    const strict = new AgentRunner({ ...options, model: model(), maxDepth: 0, onRefusal: 'continue' });
    const resumed = await strict.resume(wire(p.state), [first.answer(p.pending[0]!, 'allow')]);
    expect(f.refunds).toHaveLength(0);
    expect(resumed.decisions.at(-1)).toMatchObject({ tool: 'agent:billing', effect: 'deny', stage: 'depth' });
  });

  it('a resume that narrows the root so it no longer declares agent:billing; the paused delegation does not continue', async () => {
    const store = new InMemoryApprovalStore();
    const model = () =>
      new ScriptedModel({
        concierge: [{ toolCalls: [{ name: 'agent:billing', arguments: { input: 'refund A1' } }] }, { text: 'done' }],
        billing: [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'refunded' }],
      });
    const f = shop({ policyVersion: 'v1' });
    const runner = new AgentRunner({
      registry: f.registry,
      model: model(),
      approvals: store,
      secret: SECRET,
      handler: () => 'pending',
      onRefusal: 'continue',
    });
    const p = paused(await runner.run(top, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(p.pending[0]!, 'allow');
    // the root as declared now: it keeps refund but no longer delegates to billing (peers kept in the graph)
    const now: Agent = { name: 'concierge', tools: ['refund'], peers: [billing] };
    const resumed = await runner.resume(wire(p.state), [decision], { agent: now });
    expect(f.refunds).toHaveLength(0);
    expect(resumed.decisions.at(-1)).toMatchObject({ tool: 'agent:billing', effect: 'deny', layer: 'not_declared' });
  });

  it('a run-scoped approval is not reused by another caller whose run has the same runId', async () => {
    const store = new InMemoryApprovalStore();
    const concierge: Agent = { name: 'concierge', tools: ['refund'] };
    const f = shop({ policyVersion: 'v1' });
    const model = () =>
      new ScriptedModel([
        { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ]);
    const alice = new AgentRunner({
      registry: f.registry,
      model: model(),
      approvals: store,
      secret: SECRET,
      handler: () => ({ answer: 'allow', scope: 'run' }),
    });
    await alice.run(concierge, 'x', { tenant: 'acme', runId: 'conv-42', caller: { id: 'alice' } });
    expect(f.refunds).toHaveLength(1);
    let asked = 0;
    const mallory = new AgentRunner({
      registry: f.registry,
      model: new ScriptedModel([
        { toolCalls: [{ id: 'mallory-1', name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ]),
      approvals: store,
      secret: SECRET,
      handler: () => {
        asked++;
        return 'deny';
      },
    });
    const r = await mallory.run(concierge, 'x', { tenant: 'acme', runId: 'conv-42', caller: { id: 'mallory' } });
    expect(f.refunds).toHaveLength(1);
    expect(asked).toBe(1);
    expect(r.decisions[0]).toMatchObject({ effect: 'deny', asked: 'runner' });
  });

  it('an answer the handler gives after handlerTimeoutMs is not remembered: the call was denied', async () => {
    const store = new InMemoryApprovalStore();
    const remembered: string[] = [];
    const remember = store.remembered.remember.bind(store.remembered);
    store.remembered.remember = (key, value) => {
      remembered.push(key);
      return remember(key, value);
    };
    const concierge: Agent = { name: 'concierge', tools: ['refund'] };
    const f = shop({ policyVersion: 'v1', handlerTimeoutMs: 20 });
    let answeredLate!: () => void;
    const late = new Promise<void>((resolve) => (answeredLate = resolve));
    let asked = 0;
    const runner = new AgentRunner({
      registry: f.registry,
      model: new ScriptedModel(
        [{ toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] }, { text: 'done' }],
        { whenDone: 'repeat' },
      ),
      approvals: store,
      secret: SECRET,
      handler: async () => {
        asked++;
        if (asked > 1) return 'deny' as const;
        await late;
        return { answer: 'allow' as const, scope: 'run' as const };
      },
    });
    const first = await runner.run(concierge, 'x', { tenant: 'acme', runId: 'r-late', caller: { id: 'alice' } });
    expect(first.decisions[0]).toMatchObject({ effect: 'deny', by: 'handler_timeout' });
    answeredLate();
    await new Promise((resolve) => setImmediate(resolve));
    expect(remembered).toEqual([]);
    const second = await runner.run(concierge, 'x', { tenant: 'acme', runId: 'r-late', caller: { id: 'alice' } });
    expect(asked).toBe(2);
    expect(second.decisions[0]).toMatchObject({ effect: 'deny', by: 'handler' });
    expect(f.refunds).toHaveLength(0);
  });
});

describe('a kill switch in a run-event listener (branch atk1)', () => {
  it('a tool_decided listener that sets a deny-all policy stops the very call it was told of, and the rest', async () => {
    const { registry, executed } = shop();
    registry.setPermissionPolicy(new PermissionPolicy({ rules: [], fallback: PermissionResult.ALLOW }));
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'search', arguments: { query: 'a' } },
          { name: 'search', arguments: { query: 'b' } },
        ],
      },
      { text: 'done' },
    ]);
    const runner = new AgentRunner({ registry, model, onRefusal: 'continue' });
    const seen: string[] = [];
    runner.on('tool_decided', (e) => {
      seen.push(`${e.decision.callId}:${e.decision.effect}`);
      if (e.decision.effect === 'allow')
        registry.setPermissionPolicy(
          new PermissionPolicy({ rules: [], fallback: PermissionResult.DENY, version: 'off' }),
        );
    });
    const result = await runner.run({ name: 'concierge', tools: ['search'] }, 'go');
    expect(executed['search'] ?? 0).toBe(0);
    expect(result.status).toBe('completed');
    expect(seen.at(-1)).toMatch(/:deny$/);
    expect(result.decisions.filter((d) => d.effect === 'deny')).toHaveLength(2);
  });
});

describe('a plan cut in place by a run-event listener below the root (branch atk1)', () => {
  it('the call a tool_decided listener cut from the plan does not run in a peer', async () => {
    const { registry, executed } = shop();
    const tools = ['search', 'quote', 'agent:pricing'];
    const pricing: Agent = { name: 'pricing', tools: ['quote'] };
    const concierge: Agent = { name: 'concierge', tools: ['search', 'quote', 'agent:pricing'], peers: [pricing] };
    const model = new ScriptedModel({
      concierge: [{ toolCalls: [{ name: 'agent:pricing', arguments: { input: 'price it' } }] }, { text: 'done' }],
      pricing: [{ toolCalls: [{ name: 'quote', arguments: { item: 'lamp' } }] }, { text: '42' }],
    });
    const runner = new AgentRunner({ registry, model, tenants: () => ({ tools }), onRefusal: 'continue' });
    runner.on('tool_decided', (e) => {
      if (e.decision.tool === 'quote' && e.decision.effect === 'allow') tools.splice(tools.indexOf('quote'), 1);
    });
    const result = await runner.run(concierge, 'go');
    expect(executed['quote'] ?? 0).toBe(0);
    expect(result.decisions.filter((d) => d.tool === 'quote').at(-1)).toMatchObject({
      effect: 'deny',
      layer: 'tenant',
    });
  });
});
