import { describe, expect, it } from 'vitest';
import type { ToolNotPermittedError } from '../../src/index.js';
import {
  AgentRunner,
  PermissionPolicy,
  PermissionResult,
  RunStateError,
  type Agent,
  type RunResult,
  type RunState,
  type TenantLimits,
} from '../../src/index.js';
import { InMemoryApprovalStore, ScriptedModel, type RunEvent } from '../../src/runner/index.js';
import { ASK_BIG_REFUNDS, DENY_HUGE_REFUNDS, SECRET, shop } from './fixtures.js';

const concierge: Agent = { name: 'concierge', tools: ['search', 'refund'] };

function refundScript(amount = 500): ScriptedModel {
  return new ScriptedModel([
    { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount } }] },
    (r) => ({
      text: `done: ${r.messages.at(-1)?.role === 'tool' ? (r.messages.at(-1) as { content: string }).content : ''}`,
    }),
  ]);
}

function pendingRunner(
  store: InMemoryApprovalStore,
  extra: {
    tenants?: Record<string, TenantLimits>;
    onRefusal?: 'fail' | 'continue';
    policyVersion?: string | null;
    /** The model of each runner made (a fresh script each). @default refundScript */
    model?: () => ScriptedModel;
  } = {},
) {
  // A version pinned the same in every process ('v1' unless told), so an approval given in one process is
  // valid in another. Without a pinned version (`policyVersion: null`) each PermissionPolicy object has a
  // version of its own, and an approval given under one policy object is refused under another: the test
  // 'without a pinned policy version, an approval from another policy object is refused' shows it.
  const version = extra.policyVersion === undefined ? 'v1' : extra.policyVersion;
  const fixture = shop(version === null ? {} : { policyVersion: version });
  const runner = new AgentRunner({
    registry: fixture.registry,
    model: extra.model ? extra.model() : refundScript(),
    approvals: store,
    secret: SECRET,
    handler: () => 'pending',
    ...(extra.tenants ? { tenants: extra.tenants } : {}),
    ...(extra.onRefusal ? { onRefusal: extra.onRefusal } : {}),
  });
  const events: RunEvent[] = [];
  runner.on((e) => events.push(e));
  return { ...fixture, runner, events };
}

function paused(result: RunResult): Extract<RunResult, { status: 'paused' }> {
  if (result.status !== 'paused')
    throw new Error(`expected a paused run, got ${result.status}: ${result.error?.message ?? ''}`);
  return result;
}

/** The state as another process would get it. */
function overTheWire(state: RunState): RunState {
  return JSON.parse(JSON.stringify(state)) as RunState;
}

describe('AgentRunner: asking a human in-process', () => {
  it('awaits an async handler and records the runner as the one asked', async () => {
    const { registry, refunds } = shop();
    const runner = new AgentRunner({
      registry,
      model: refundScript(),
      handler: async () => new Promise((r) => setTimeout(() => r('allow'), 20)),
    });
    const result = await runner.run(concierge, 'refund A1');
    expect(result.status).toBe('completed');
    expect(refunds).toEqual([{ order: 'A1', amount: 500 }]);
    expect(result.decisions[0]).toMatchObject({
      effect: 'allow',
      by: 'handler',
      asked: 'runner',
      rule: 'ask_big_refunds',
    });
  });

  it('a handler that times out, throws or answers nonsense denies (fail closed), and the run goes on', async () => {
    for (const [handler, by] of [
      [() => new Promise<never>(() => undefined), 'handler_timeout'],
      [
        () => {
          throw new Error('approver crashed');
        },
        'handler_error',
      ],
      [() => 'maybe', 'handler_invalid'],
    ] as const) {
      const { registry, refunds } = shop();
      const runner = new AgentRunner({ registry, model: refundScript(), handler: handler as never });
      const result = await runner.run(concierge, 'refund A1');
      expect(result.status).toBe('completed');
      expect(refunds).toEqual([]);
      expect(result.decisions[0]).toMatchObject({ effect: 'deny', stage: 'handler', by });
    }
  });

  it("the policy's own handler is asked before the runner's", async () => {
    const { registry, refunds } = shop();
    registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [ASK_BIG_REFUNDS], fallback: 'allow', handler: () => PermissionResult.DENY }),
    );
    const result = await new AgentRunner({ registry, model: refundScript(), handler: () => 'allow' }).run(
      concierge,
      'x',
    );
    expect(refunds).toEqual([]);
    expect(result.decisions[0]).toMatchObject({ effect: 'deny', asked: 'policy' });
  });
});

describe('AgentRunner: durable approvals', () => {
  it('pauses on a pending answer with a JSON RunState listing the approval, executing nothing', async () => {
    const { runner, refunds, events } = pendingRunner(new InMemoryApprovalStore());
    const result = paused(await runner.run(concierge, 'refund A1', { tenant: 'acme' }));
    expect(refunds).toEqual([]);
    expect(result.pending).toHaveLength(1);
    expect(result.pending[0]).toMatchObject({
      kind: 'tool',
      toolName: 'refund',
      canonical: 'refund',
      parameters: { order: 'A1', amount: 500 },
      rule: 'ask_big_refunds',
      agent: 'concierge',
      runId: result.runId,
      binding: { owner: { kind: 'run', id: result.runId }, callId: 'call_0_0', tool: 'refund', policyVersion: 'v1' },
    });
    expect(overTheWire(result.state)).toEqual(result.state);
    expect(events.map((e) => e.type)).toEqual(['run_started', 'approval_requested', 'run_paused']);
    // Nothing of the paused turn is charged yet: it is charged when it is dispatched on resume.
    expect(result.attempts).toBe(0);
  });

  it('resumes in a fresh runner (fresh registry and model) from the JSON state and runs the approved call once', async () => {
    const store = new InMemoryApprovalStore();
    const first = pendingRunner(store);
    const result = paused(await first.runner.run(concierge, 'refund A1', { tenant: 'acme' }));
    const wire = JSON.stringify(result.state);
    const decision = first.runner.answer(result.pending[0]!, 'allow');

    const second = pendingRunner(store);
    const resumed = await second.runner.resume(JSON.parse(wire) as RunState, [JSON.parse(JSON.stringify(decision))]);
    expect(resumed.status).toBe('completed');
    expect(resumed.output).toBe('done: refunded 500 on A1');
    expect(second.refunds).toEqual([{ order: 'A1', amount: 500 }]);
    expect(first.refunds).toEqual([]);
    expect(resumed.runId).toBe(result.runId);
    expect(resumed.attempts).toBe(1);
    expect(resumed.decisions[0]).toMatchObject({ effect: 'allow', by: 'handler', asked: 'runner' });
    expect(second.events.map((e) => e.type)).toEqual([
      'run_resumed',
      'approval_resolved',
      'tool_decided',
      'run_finished',
    ]);
    expect(second.events[1]).toMatchObject({
      accepted: true,
      answer: 'allow',
      callId: result.pending[0]!.binding.callId,
    });
  });

  it('resuming the same state twice executes the tool once (the ledger), in sequence and concurrently', async () => {
    const store = new InMemoryApprovalStore();
    const first = pendingRunner(store);
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const decision = first.runner.answer(result.pending[0]!, 'allow');
    const a = pendingRunner(store);
    const b = pendingRunner(store);
    const one = await a.runner.resume(overTheWire(result.state), [decision]);
    const two = await b.runner.resume(overTheWire(result.state), [decision]);
    expect(a.refunds.length + b.refunds.length).toBe(1);
    expect(one.status).toBe('completed');
    expect(two.status).toBe('completed');
    expect(two.output).toBe(one.output); // the recorded outcome, not a second execution
    expect(b.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/already settled/),
    });

    // Concurrently, from a fresh pause.
    const store2 = new InMemoryApprovalStore();
    const p = pendingRunner(store2);
    const r2 = paused(await p.runner.run(concierge, 'refund A1'));
    const d2 = p.runner.answer(r2.pending[0]!, 'allow');
    const c1 = pendingRunner(store2);
    const c2 = pendingRunner(store2);
    const both = await Promise.all([
      c1.runner.resume(overTheWire(r2.state), [d2]),
      c2.runner.resume(overTheWire(r2.state), [d2]),
    ]);
    expect(c1.refunds.length + c2.refunds.length).toBe(1);
    expect(both.map((r) => r.status)).toContain('completed');
  });

  it('refuses a tampered state or one signed with another secret, running nothing', async () => {
    const store = new InMemoryApprovalStore();
    const { runner } = pendingRunner(store);
    const result = paused(await runner.run(concierge, 'refund A1'));
    const decision = runner.answer(result.pending[0]!, 'allow');
    const tampered = overTheWire(result.state) as unknown as {
      agents: Record<string, { tools: string[] }>;
      frames: { messages: unknown[] }[];
    };
    tampered.agents['concierge']!.tools.push('ledger');
    const fresh = pendingRunner(store);
    await expect(fresh.runner.resume(tampered as unknown as RunState, [decision])).rejects.toBeInstanceOf(
      RunStateError,
    );
    const args = overTheWire(result.state) as unknown as { pending: { parameters: { amount: number } }[] };
    args.pending[0]!.parameters.amount = 5;
    await expect(fresh.runner.resume(args as unknown as RunState, [decision])).rejects.toThrow(/altered/);
    const other = new AgentRunner({
      registry: fresh.registry,
      model: refundScript(),
      approvals: store,
      secret: 'another-secret-of-enough-length',
    });
    await expect(other.resume(overTheWire(result.state), [decision])).rejects.toBeInstanceOf(RunStateError);
    await expect(fresh.runner.resume({ kind: 'nope' } as unknown as RunState)).rejects.toBeInstanceOf(RunStateError);
    expect(fresh.refunds).toEqual([]);
    // The untampered state still resumes.
    expect((await fresh.runner.resume(overTheWire(result.state), [decision])).status).toBe('completed');
    expect(fresh.refunds).toHaveLength(1);
  });

  it('refuses a decision for another call, an altered decision, or one bound to other arguments', async () => {
    const store = new InMemoryApprovalStore();
    const { runner } = pendingRunner(store);
    const runA = paused(await runner.run(concierge, 'refund A1'));
    const runB = paused(await runner.run(concierge, 'refund A1'));
    const forA = runner.answer(runA.pending[0]!, 'allow');

    // A's decision given to B: no pending approval of B matches it; B's call is asked again and pauses again.
    const b = pendingRunner(store);
    const resumedB = await b.runner.resume(overTheWire(runB.state), [forA]);
    expect(resumedB.status).toBe('paused');
    expect(b.refunds).toEqual([]);
    expect(b.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/no pending approval/),
    });

    // A deny flipped to allow: the MAC fails.
    const denied = runner.answer(runA.pending[0]!, 'deny');
    const flipped = { ...denied, answer: { ...denied.answer, effect: 'allow' as const } };
    const a = pendingRunner(store);
    expect((await a.runner.resume(overTheWire(runA.state), [flipped])).status).toBe('paused');
    expect(a.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/not signed|altered/),
    });
    expect(a.refunds).toEqual([]);

    // A decision signed for a binding of other arguments (the approver was shown amount 5): its id is not
    // that binding's, so it does not verify, and the call is asked again.
    const wrongArgs = runner.answer(
      { ...runA.pending[0]!, binding: { ...runA.pending[0]!.binding, argsHash: '0'.repeat(64) } },
      'allow',
    );
    const a2 = pendingRunner(store);
    const r = await a2.runner.resume(overTheWire(runA.state), [wrongArgs]);
    expect(r.status).toBe('paused');
    expect(a2.refunds).toEqual([]);
    expect(a2.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/not signed|altered/),
    });
  });

  it('a nonce store that fails or answers garbage after the claim: nothing runs, the claim is given back, and the decision still resumes', async () => {
    const store = new InMemoryApprovalStore();
    const first = pendingRunner(store);
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const decision = first.runner.answer(result.pending[0]!, 'allow');
    for (const consume of [() => Promise.reject(new Error('nonce store down')), () => Promise.resolve('yes')]) {
      const reserved: string[] = [];
      const ledger = {
        reserve: (key: string, owner: string, leaseMs: number) => (
          reserved.push(key),
          store.ledger.reserve(key, owner, leaseMs)
        ),
        record: store.ledger.record.bind(store.ledger),
        release: store.ledger.release.bind(store.ledger),
        inspect: store.ledger.inspect.bind(store.ledger),
      };
      const broken = { ...store, ledger, nonces: { consume } as unknown as typeof store.nonces };
      const attempt = pendingRunner(broken as InMemoryApprovalStore);
      const failed = await attempt.runner.resume(overTheWire(result.state), [decision]);
      expect(failed.status).toBe('failed');
      expect(attempt.refunds).toEqual([]);
      // The ledger claim was given back: nothing reads as held or unknown for the call.
      const key = JSON.stringify([result.runId, 'default', null, 'concierge', 0, result.pending[0]!.binding.callId]);
      // (The row existed: the claim was made under this key before the nonce store was asked.)
      expect(reserved).toContain(key);
      expect(await store.ledger.inspect(key)).toBeUndefined();
    }
    const back = pendingRunner(store);
    const done = await back.runner.resume(overTheWire(result.state), [decision]);
    expect(done.status).toBe('completed');
    expect(back.refunds).toEqual([{ order: 'A1', amount: 500 }]);
  });

  it('a replayed decision runs nothing: the call keeps the refusal it was settled with', async () => {
    const store = new InMemoryApprovalStore();
    const plans: Record<string, TenantLimits> = { acme: { tools: ['search'] } };
    const { runner } = pendingRunner(store, { tenants: { acme: { tools: ['search', 'refund'] } } });
    const result = paused(await runner.run(concierge, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(result.pending[0]!, 'allow');
    // First use: the plan no longer has refund, so the approved call is refused at the allowlist on resume.
    const first = pendingRunner(store, { tenants: plans, onRefusal: 'continue' });
    const r1 = await first.runner.resume(overTheWire(result.state), [decision]);
    expect(r1.decisions[0]).toMatchObject({ effect: 'deny', stage: 'allowlist', layer: 'tenant' });
    // The plan is restored, and the same decision is presented again: it was used, and the call was settled
    // with its refusal in the ledger, so the replay answers with that refusal and runs nothing.
    const again = pendingRunner(store, { tenants: { acme: { tools: ['search', 'refund'] } } });
    const r2 = await again.runner.resume(overTheWire(result.state), [decision]);
    expect(again.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/already settled/),
    });
    expect(r2.status).toBe('completed');
    expect(r2.messages.find((m) => m.role === 'tool')).toMatchObject({
      isError: true,
      content: expect.stringMatching(/tenant/),
    });
    expect(first.refunds.length + again.refunds.length).toBe(0);
  });

  it('runs the gate again on resume under the tenant limits and policy in force then', async () => {
    const store = new InMemoryApprovalStore();
    const { runner } = pendingRunner(store, { policyVersion: 'v1' });
    const result = paused(await runner.run(concierge, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(result.pending[0]!, 'allow');
    expect(result.pending[0]!.binding.policyVersion).toBe('v1');

    // The tenant lost refund meanwhile: the approved call is refused at the allowlist and the run fails.
    const downgraded = pendingRunner(store, { tenants: { acme: { tools: ['search'] } }, policyVersion: 'v1' });
    const r1 = await downgraded.runner.resume(overTheWire(result.state), [decision]);
    expect(r1.status).toBe('failed');
    expect((r1.error as ToolNotPermittedError).reason).toBe('tenant');
    expect(downgraded.refunds).toEqual([]);
    expect(downgraded.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: true,
      reason: expect.stringMatching(/not needed/),
      decision: { stage: 'allowlist' },
    });

    // The policy changed version: an approval given under v1 is not valid under v2.
    const result2 = paused(await runner.run(concierge, 'refund A1'));
    const d2 = runner.answer(result2.pending[0]!, 'allow');
    const v2 = pendingRunner(store, { policyVersion: 'v2' });
    const r2 = await v2.runner.resume(overTheWire(result2.state), [d2]);
    expect(v2.refunds).toEqual([]);
    expect(r2.decisions[0]).toMatchObject({
      effect: 'deny',
      by: 'approval_invalid',
      reason: expect.stringMatching(/policy version "v1".*"v2"/),
    });

    // The new policy denies refunds outright: denied whatever the approval said.
    const result3 = paused(await runner.run(concierge, 'refund A1'));
    const d3 = runner.answer(result3.pending[0]!, 'allow');
    const strict = pendingRunner(store, { policyVersion: 'v1' });
    strict.registry.setPermissionPolicy(
      new PermissionPolicy({ rules: [{ name: 'no_refunds', tools: ['refund'], result: 'deny' }], version: 'v1' }),
    );
    const r3 = await strict.runner.resume(overTheWire(result3.state), [d3]);
    expect(strict.refunds).toEqual([]);
    expect(r3.decisions[0]).toMatchObject({ effect: 'deny', stage: 'policy', rule: 'no_refunds' });
  });

  it('without a pinned policy version, an approval from another policy object is refused (fail closed)', async () => {
    const store = new InMemoryApprovalStore();
    const first = pendingRunner(store, { policyVersion: null });
    const result = paused(await first.runner.run(concierge, 'refund A1'));
    const decision = first.runner.answer(result.pending[0]!, 'allow');
    // Another process builds its own policy object from the same rules, without a version.
    const second = pendingRunner(store, { policyVersion: null });
    const firstVersion = first.registry.getPermissionPolicy()!.version;
    expect(second.registry.getPermissionPolicy()!.version).not.toBe(firstVersion);
    expect(result.pending[0]!.binding.policyVersion).toBe(firstVersion);
    const resumed = await second.runner.resume(overTheWire(result.state), [decision]);
    expect(second.refunds).toEqual([]);
    expect(resumed.decisions[0]).toMatchObject({
      effect: 'deny',
      by: 'approval_invalid',
      reason: expect.stringMatching(/policy version/),
    });
    expect(second.events.find((e) => e.type === 'approval_resolved')).toMatchObject({
      accepted: false,
      reason: expect.stringMatching(/policy version/),
    });
  });

  it('an approver may edit the arguments; the edited call passes the whole gate again', async () => {
    const store = new InMemoryApprovalStore();
    const { runner } = pendingRunner(store);
    const cases: [Record<string, unknown>, (r: RunResult, refunds: unknown[]) => void][] = [
      [
        { order: 'A1', amount: 50 },
        (r, refunds) => {
          expect(refunds).toEqual([{ order: 'A1', amount: 50 }]);
          expect(r.decisions[0]).toMatchObject({ effect: 'allow', by: 'fallback', parameters: { amount: 50 } });
        },
      ],
      [
        { order: 'A1', amount: 300 },
        (r, refunds) => {
          expect(refunds).toEqual([{ order: 'A1', amount: 300 }]);
          expect(r.decisions[0]).toMatchObject({
            effect: 'allow',
            by: 'handler',
            asked: 'runner',
            reason: expect.stringMatching(/edited/),
          });
        },
      ],
      [
        { order: 'A1', amount: 5000 },
        (r, refunds) => {
          expect(refunds).toEqual([]);
          expect(r.decisions[0]).toMatchObject({ effect: 'deny', rule: DENY_HUGE_REFUNDS.name });
        },
      ],
      [
        { order: 'A1', amount: -1 },
        (r, refunds) => {
          expect(refunds).toEqual([]);
          expect(r.decisions[0]).toMatchObject({ effect: 'deny', stage: 'validation' });
        },
      ],
    ];
    for (const [edited, check] of cases) {
      const result = paused(await runner.run(concierge, 'refund A1'));
      const decision = runner.answer(result.pending[0]!, 'allow', { arguments: edited });
      const next = pendingRunner(store);
      const resumed = await next.runner.resume(overTheWire(result.state), [decision]);
      check(resumed, next.refunds);
    }
  });

  it('edited arguments go through the allowlist again too', async () => {
    const store = new InMemoryApprovalStore();
    const { runner } = pendingRunner(store, { tenants: { acme: { tools: ['refund'] } } });
    const result = paused(await runner.run(concierge, 'refund A1', { tenant: 'acme' }));
    const decision = runner.answer(result.pending[0]!, 'allow', { arguments: { order: 'A1', amount: 300 } });
    const next = pendingRunner(store, { tenants: { acme: { tools: [] } } });
    const resumed = await next.runner.resume(overTheWire(result.state), [decision]);
    expect(resumed.status).toBe('failed');
    expect(next.refunds).toEqual([]);
  });

  it('remembers answers for the run or the session; once is asked again', async () => {
    const store = new InMemoryApprovalStore();
    const twice = () =>
      new ScriptedModel([
        { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
        { text: 'done' },
      ]);
    const make = () => pendingRunner(store, { model: twice });
    // once: the second identical call pauses again.
    const o = make();
    const r1 = paused(await o.runner.run(concierge, 'x', { session: 's1' }));
    const r1b = await make().runner.resume(r1.state, [o.runner.answer(r1.pending[0]!, 'allow', { scope: 'once' })]);
    expect(r1b.status).toBe('paused');

    // run: the second identical call in the run is allowed without asking.
    const r = make();
    const r2 = paused(await r.runner.run(concierge, 'x', { session: 's2' }));
    const next = make();
    const r2b = await next.runner.resume(r2.state, [r.runner.answer(r2.pending[0]!, 'allow', { scope: 'run' })]);
    expect(r2b.status).toBe('completed');
    expect(next.refunds).toHaveLength(2);
    expect(r2b.decisions[1]).toMatchObject({
      effect: 'allow',
      reason: expect.stringMatching(/approved earlier for this run/),
    });
    // ...but not in another run of the same session.
    expect((await make().runner.run(concierge, 'x', { session: 's2' })).status).toBe('paused');

    // session: another run of the same session is not asked at all.
    const s = make();
    const r3 = paused(await s.runner.run(concierge, 'x', { session: 's3' }));
    await make().runner.resume(r3.state, [s.runner.answer(r3.pending[0]!, 'allow', { scope: 'session' })]);
    const later = make();
    const r4 = await later.runner.run(concierge, 'x', { session: 's3' });
    expect(r4.status).toBe('completed');
    expect(later.refunds).toHaveLength(2);
    // A remembered record that does not carry this runner's MAC (written or altered by someone else) is ignored: asked again.
    const real = new InMemoryApprovalStore();
    const forged = {
      ...real,
      remembered: {
        recall: async () => ({ answer: 'allow' as const, scope: 'session' as const, mac: 'f'.repeat(64) }),
        remember: real.remembered.remember.bind(real.remembered),
      },
    };
    const f = shop({ policyVersion: 'v1' });
    let asked = 0;
    const spy = new AgentRunner({
      registry: f.registry,
      model: twice(),
      stores: forged,
      secret: SECRET,
      handler: () => (asked++, 'deny'),
    });
    await spy.run(concierge, 'x', { session: 's3' });
    expect(asked).toBe(2);
    expect(f.refunds).toHaveLength(0);
  });

  it('an in-process handler may answer with a scope, and the store remembers it across runners', async () => {
    const store = new InMemoryApprovalStore();
    let asked = 0;
    const f = shop({ policyVersion: 'v1' });
    const runner = new AgentRunner({
      registry: f.registry,
      model: refundScript(),
      approvals: store,
      secret: SECRET,
      handler: () => {
        asked++;
        return { answer: 'allow', scope: 'session' };
      },
    });
    await runner.run(concierge, 'x', { session: 'desk-7' });
    const again = new AgentRunner({
      registry: f.registry,
      model: refundScript(),
      approvals: store,
      secret: SECRET,
      handler: () => 'deny',
    });
    const r = await again.run(concierge, 'x', { session: 'desk-7' });
    expect(asked).toBe(1);
    expect(f.refunds).toHaveLength(2);
    expect(r.decisions[0]).toMatchObject({ effect: 'allow', asked: 'runner' });
  });

  it('the default session is the tenant and caller id; without a caller id a session answer lasts for the run only', async () => {
    const store = new InMemoryApprovalStore();
    let asked = 0;
    const f = shop({ policyVersion: 'v1' });
    const make = () =>
      new AgentRunner({
        registry: f.registry,
        model: refundScript(),
        approvals: store,
        secret: SECRET,
        handler: () => {
          asked++;
          return { answer: 'allow', scope: 'session' };
        },
      });
    await make().run(concierge, 'x', { tenant: 'acme' });
    await make().run(concierge, 'x', { tenant: 'acme' });
    expect(asked).toBe(2);
    await make().run(concierge, 'x', { tenant: 'acme', caller: { id: 'ana' } });
    await make().run(concierge, 'x', { tenant: 'acme', caller: { id: 'ana' } });
    expect(asked).toBe(3);
    await make().run(concierge, 'x', { tenant: 'other', caller: { id: 'ana' } });
    expect(asked).toBe(4);
  });

  it('pauses inside a peer and resumes the delegation in a fresh runner', async () => {
    const store = new InMemoryApprovalStore();
    const billing: Agent = { name: 'billing', tools: ['refund'] };
    const top: Agent = { name: 'concierge', tools: ['search', 'refund', 'agent:billing'], peers: [billing] };
    const model = () =>
      new ScriptedModel({
        concierge: [
          {
            toolCalls: [
              { name: 'search', arguments: { query: 'order A1' } },
              { name: 'agent:billing', arguments: { input: 'refund A1' } },
            ],
          },
          (r) => ({ text: `concierge: ${(r.messages.at(-1) as { content: string }).content}` }),
        ],
        billing: [
          { toolCalls: [{ name: 'refund', arguments: { order: 'A1', amount: 500 } }] },
          { text: 'billing: refunded' },
        ],
      });
    const make = () => pendingRunner(store, { model });
    const first = make();
    const result = paused(await first.runner.run(top, 'refund A1'));
    expect(first.executed).toEqual({ search: 1 });
    expect(result.pending[0]).toMatchObject({ agent: 'billing', runId: result.runId });
    expect(result.state.frames).toHaveLength(2);
    expect(first.events.find((e) => e.type === 'approval_requested')).toMatchObject({
      agent: 'billing',
      path: ['concierge', 'billing'],
    });
    const decision = first.runner.answer(result.pending[0]!, 'allow');
    const second = make();
    const resumed = await second.runner.resume(overTheWire(result.state), [decision]);
    expect(resumed.status).toBe('completed');
    expect(resumed.output).toBe('concierge: billing: refunded');
    expect(second.executed).toEqual({ refund: 1 }); // search is not run again
    expect(resumed.attempts).toBe(3);
    // Twice: never a second refund.
    const third = make();
    const again = await third.runner.resume(overTheWire(result.state), [decision]);
    expect(again.output).toBe('concierge: billing: refunded');
    expect(third.executed).toEqual({});
  });

  it('lists every pending approval of a turn together; a partial answer pauses again for the rest', async () => {
    const store = new InMemoryApprovalStore();
    const model = () =>
      new ScriptedModel([
        {
          toolCalls: [
            { name: 'refund', arguments: { order: 'A1', amount: 200 } },
            { name: 'refund', arguments: { order: 'A2', amount: 300 } },
          ],
        },
        { text: 'ok' },
      ]);
    const make = () => pendingRunner(store, { model: model });
    const a = make();
    const r = paused(await a.runner.run(concierge, 'x'));
    expect(r.pending.map((p) => p.parameters['order'])).toEqual(['A1', 'A2']);
    const b = make();
    const r2 = paused(await b.runner.resume(r.state, [a.runner.answer(r.pending[0]!, 'allow')]));
    expect(b.refunds).toEqual([]); // nothing of the turn runs while part of it waits
    expect(r2.pending.map((p) => p.parameters['order'])).toEqual(['A2']);
    const c = make();
    const r3 = await c.runner.resume(r2.state, [b.runner.answer(r2.pending[0]!, 'deny')]);
    expect(r3.status).toBe('completed');
    expect(c.refunds).toEqual([{ order: 'A1', amount: 200 }]);
    expect(r3.decisions.map((d) => d.effect)).toEqual(['allow', 'deny']);
  });
});
