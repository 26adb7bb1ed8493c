/** Resume cannot get around the policy's own handler, nor widen the caller or the agents beyond the paused state. */
import { describe, expect, it } from 'vitest';
import {
  ALLOW_READONLY,
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  RunStateError,
  ToolNotPermittedError,
  type Agent,
  type PermissionHandler,
  type RunResult,
  type RunState,
} from '../../src/index.js';
import { InMemoryApprovalStore, ScriptedModel, type RunEvent, type ScriptTurn } from '../../src/runner/index.js';
import { ASK_BIG_REFUNDS, DENY_HUGE_REFUNDS, SECRET, shop } from './fixtures.js';

const concierge: Agent = { name: 'concierge', tools: ['search', 'refund'] };
const REFUND = { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] };

function paused(result: RunResult): Extract<RunResult, { status: 'paused' }> {
  if (result.status !== 'paused')
    throw new Error(`expected a paused run, got ${result.status}: ${result.error?.message ?? ''}`);
  return result;
}

function wire(state: RunState): RunState {
  return JSON.parse(JSON.stringify(state)) as RunState;
}

/** A runner (fresh registry, version "v1") whose own handler leaves every ask pending; `policyHandler` goes on the policy. */
function make(
  store: InMemoryApprovalStore,
  steps: ScriptTurn[] = [REFUND, { text: 'done' }],
  policyHandler?: PermissionHandler,
) {
  const fixture = shop({ policyVersion: 'v1' });
  if (policyHandler) {
    fixture.registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [ALLOW_READONLY, DENY_HUGE_REFUNDS, ASK_BIG_REFUNDS],
        fallback: PermissionResult.ALLOW,
        version: 'v1',
        handler: policyHandler,
      }),
    );
  }
  const runner = new AgentRunner({
    registry: fixture.registry,
    model: new ScriptedModel(steps),
    approvals: store,
    secret: SECRET,
    handler: () => 'pending',
  });
  const events: RunEvent[] = [];
  runner.on((e) => events.push(e));
  return { ...fixture, runner, events };
}

describe("AgentRunner resume: the policy's own handler decides first", () => {
  it('an approval given on resume does not stand in for the policy handler: a denying handler refuses the approved call', async () => {
    const store = new InMemoryApprovalStore();
    const first = make(store);
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const decision = first.runner.answer(result.pending[0]!, 'allow');

    let asked = 0;
    const second = make(store, [REFUND, { text: 'done' }], () => (asked++, PermissionResult.DENY));
    const resumed = await second.runner.resume(wire(result.state), [decision]);
    expect(asked).toBe(1);
    expect(second.refunds).toEqual([]);
    expect(resumed.decisions[0]).toMatchObject({ effect: 'deny', stage: 'handler', by: 'handler', asked: 'policy' });
    expect(second.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      answer: 'allow',
      reason: expect.stringMatching(/policy in force has its own handler/),
      decision: { effect: 'deny', asked: 'policy' },
    });

    // A denial given on resume does not override an allowing policy handler either: the policy handler decides.
    const again = paused(await make(store).runner.run(concierge, 'refund A1'));
    const allowing = make(store, [REFUND, { text: 'done' }], () => PermissionResult.ALLOW);
    const r2 = await allowing.runner.resume(wire(again.state), [first.runner.answer(again.pending[0]!, 'deny')]);
    expect(r2.status).toBe('completed');
    expect(allowing.refunds).toEqual([{ order: 'A1', amount: 500 }]);
    expect(r2.decisions[0]).toMatchObject({ effect: 'allow', asked: 'policy' });
  });

  it('a remembered run or session answer does not stand in for the policy handler', async () => {
    const store = new InMemoryApprovalStore();
    const twice = [REFUND, REFUND, { text: 'done' }];
    // Remember "allow" for the session and for the run, under a policy without a handler.
    const first = make(store, twice);
    const result = paused(await first.runner.run(concierge, 'x', { session: 'shared' }));
    const done = await make(store, twice).runner.resume(wire(result.state), [
      first.runner.answer(result.pending[0]!, 'allow', { scope: 'session' }),
    ]);
    expect(done.decisions[1]).toMatchObject({ effect: 'allow', reason: expect.stringMatching(/approved earlier/) });

    // The same session under a policy (same version) with its own handler: the handler is asked for every call.
    let asked = 0;
    const later = make(store, twice, () => (asked++, PermissionResult.DENY));
    const r = await later.runner.run(concierge, 'x', { session: 'shared' });
    expect(asked).toBe(2);
    expect(later.refunds).toEqual([]);
    expect(r.decisions.map((d) => [d.effect, d.asked])).toEqual([
      ['deny', 'policy'],
      ['deny', 'policy'],
    ]);

    // A run-scoped answer granted on resume is not remembered past a policy handler added later in the run.
    const runScoped = make(store, twice);
    const p = paused(await runScoped.runner.run(concierge, 'y', { session: 'other' }));
    let asked2 = 0;
    const guarded = make(store, twice, () => (asked2++, PermissionResult.ALLOW));
    const r2 = await guarded.runner.resume(wire(p.state), [
      runScoped.runner.answer(p.pending[0]!, 'allow', { scope: 'run' }),
    ]);
    expect(r2.status).toBe('completed');
    expect(asked2).toBe(2);
    expect(r2.decisions.map((d) => d.asked)).toEqual(['policy', 'policy']);
  });
});

describe('AgentRunner resume: the caller and the agents only narrow', () => {
  it('a scope revoked while the run was paused refuses the approved call at the caller layer; nothing executes', async () => {
    const store = new InMemoryApprovalStore();
    const first = make(store);
    const result = paused(
      await first.runner.run(concierge, 'refund A1', { caller: { id: 'ann', scopes: ['search', 'refund'] } }),
    );
    const decision = first.runner.answer(result.pending[0]!, 'allow');

    const second = make(store);
    const resumed = await second.runner.resume(wire(result.state), [decision], {
      caller: { id: 'ann', scopes: ['search'] },
    });
    expect(resumed.status).toBe('failed');
    expect(resumed.error).toBeInstanceOf(ToolNotPermittedError);
    expect((resumed.error as ToolNotPermittedError).reason).toBe('caller');
    expect(resumed.decisions[0]).toMatchObject({ effect: 'deny', stage: 'allowlist', layer: 'caller' });
    expect(second.refunds).toEqual([]);
    expect(second.executed).toEqual({});

    // The same scopes as the state's (or no caller option): the approved call runs.
    const again = paused(
      await first.runner.run(concierge, 'refund A1', { caller: { id: 'ann', scopes: ['search', 'refund'] } }),
    );
    const third = make(store);
    expect(
      (
        await third.runner.resume(wire(again.state), [first.runner.answer(again.pending[0]!, 'allow')], {
          caller: { id: 'ann', scopes: ['refund', 'search'] },
        })
      ).status,
    ).toBe('completed');
    expect(third.refunds).toEqual([{ order: 'A1', amount: 500 }]);
  });

  it('a run started without a caller layer takes the scopes given on resume', async () => {
    const store = new InMemoryApprovalStore();
    const first = make(store);
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const second = make(store);
    const resumed = await second.runner.resume(wire(result.state), [first.runner.answer(result.pending[0]!, 'allow')], {
      caller: { scopes: [] },
    });
    expect((resumed.error as ToolNotPermittedError).reason).toBe('caller');
    expect(second.refunds).toEqual([]);
  });

  it('scopes wider than the state are not added, and a paused-again state keeps the narrowing', async () => {
    const store = new InMemoryApprovalStore();
    // The refund is approved; the model then tries search, which the caller never had.
    const steps = [REFUND, { toolCalls: [{ name: 'search', arguments: { query: 'boots' } }] }, { text: 'done' }];
    const first = make(store, steps);
    const result = paused(await first.runner.run(concierge, 'x', { caller: { scopes: ['refund'] } }));
    const second = make(store, steps);
    const resumed = await second.runner.resume(wire(result.state), [first.runner.answer(result.pending[0]!, 'allow')], {
      caller: { scopes: ['refund', 'search'] },
    });
    expect(second.refunds).toEqual([{ order: 'A1', amount: 500 }]);
    expect(second.executed['search']).toBeUndefined();
    expect(resumed.status).toBe('failed');
    expect(resumed.decisions[1]).toMatchObject({ effect: 'deny', tool: 'search', layer: 'caller' });

    // Narrowed on one resume, paused again: the next resume cannot get the revoked scope back.
    const twice = [
      REFUND,
      { toolCalls: [{ name: 'refund', arguments: { order: 'B2', amount: 300 } }] },
      { text: 'done' },
    ];
    const a = make(store, twice);
    const p1 = paused(await a.runner.run(concierge, 'x', { caller: { scopes: ['refund', 'search'] } }));
    const b = make(store, twice);
    const p2 = paused(
      await b.runner.resume(wire(p1.state), [a.runner.answer(p1.pending[0]!, 'allow')], {
        caller: { scopes: ['refund'] },
      }),
    );
    expect(p2.state.caller.scopes).toEqual(['refund']);
    expect(b.refunds).toEqual([{ order: 'A1', amount: 500 }]);
  });

  it('a different caller id on resume is refused before anything runs', async () => {
    const store = new InMemoryApprovalStore();
    const first = make(store);
    const result = paused(
      await first.runner.run(concierge, 'refund A1', { caller: { id: 'ann', scopes: ['refund'] } }),
    );
    const second = make(store);
    await expect(
      second.runner.resume(wire(result.state), [first.runner.answer(result.pending[0]!, 'allow')], {
        caller: { id: 'bob' },
      }),
    ).rejects.toThrow(RunStateError);
    expect(second.refunds).toEqual([]);
    await expect(second.runner.resume(wire(result.state), [], { caller: 'ann' } as never)).rejects.toThrow(
      /option "caller" must be an object/,
    );
  });

  it("agent declarations given on resume narrow the state's and never widen them", async () => {
    const store = new InMemoryApprovalStore();
    const first = make(store);
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const decision = first.runner.answer(result.pending[0]!, 'allow');
    // The agent no longer declares refund: the approved call is refused at the allowlist.
    const second = make(store);
    const resumed = await second.runner.resume(wire(result.state), [decision], {
      agent: { name: 'concierge', tools: ['search', 'quote'] },
    });
    expect(second.refunds).toEqual([]);
    expect(resumed.decisions[0]).toMatchObject({ effect: 'deny', stage: 'allowlist' });

    // A declaration wider than the state's (quote) is not added.
    const steps = [REFUND, { toolCalls: [{ name: 'quote', arguments: { item: 'boots' } }] }, { text: 'done' }];
    const a = make(store, steps);
    const p = paused(await a.runner.run(concierge, 'x'));
    const b = make(store, steps);
    const r = await b.runner.resume(wire(p.state), [a.runner.answer(p.pending[0]!, 'allow')], {
      agent: { name: 'concierge', tools: ['search', 'REFUND', 'quote'] },
    });
    expect(b.refunds).toEqual([{ order: 'A1', amount: 500 }]);
    expect(b.executed['quote']).toBeUndefined();
    expect(r.decisions[1]).toMatchObject({ effect: 'deny', tool: 'quote', stage: 'allowlist' });

    await expect(b.runner.resume(wire(p.state), [], { agent: { name: 'other', tools: [] } })).rejects.toThrow(
      RunStateError,
    );
  });
});
