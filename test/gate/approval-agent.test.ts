/**
 * An approval is bound to the agent of the call it was asked for (`ApprovalBinding.agent`). In process: two
 * agents of one session (same tenant and caller, no run) make the same call with the same call id under the
 * same rule; an answer signed for agent a's request is not spent by agent b's call, and counts once for a's.
 * Before the agent was bound, b's call verified against a's answer and ran.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApprovalBinding, ApprovalOwner, ApprovalRequest } from '../../src/contracts/approval.js';
import type { GateContext } from '../../src/contracts/gate.js';
import { hashOf } from '../../src/crypto.js';
import { bindingOf, requestIdOf, sameBinding, signAnswer, verifyAnswer } from '../../src/gate/approval.js';
import { describe as describeValue } from '../../src/names.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { refundAs, refundRegistry, SECRET } from './fixtures/refund.js';

const context = (agent: string): GateContext => ({ agent, tenant: { id: 'acme' }, caller: { id: 'cy' } });

describe('in process: an approval counts for the agent it was asked for only', () => {
  it("an answer signed for agent a's call is refused for agent b's identical call, and counts once for a's", async () => {
    const { registry, ran } = refundRegistry();
    let asked: ApprovalRequest | undefined;
    await refundAs(registry, context('a'), (r) => {
      asked = r;
      return { effect: 'pending' };
    });
    const signed = signAnswer(SECRET, asked!, { effect: 'allow', approver: 'ann' });
    const nonces = new MemoryNonceStore();
    const replay = (r: ApprovalRequest) => verifyAnswer(SECRET, signed, r, nonces);

    const atB = await refundAs(registry, context('b'), replay);
    expect(atB.status).toBe('refused');
    expect(atB.decision).toMatchObject({ effect: 'deny', stage: 'handler', by: 'approval_invalid', agent: 'b' });
    expect(atB.content).toMatch(/the approval was given for agent "a" and agent "b" asks now/);
    expect(ran).toEqual([]);

    // b's refusal used nothing up: a's own retry runs, once.
    expect((await refundAs(registry, context('a'), replay)).status).toBe('ok');
    expect(ran).toEqual(['refund:o-1']);
    const again = await refundAs(registry, context('a'), replay);
    expect(again.content).toMatch(/the approval was already used/);
    expect(ran).toEqual(['refund:o-1']);
  });

  it("each agent's request binds its own agent, and the request id covers it", async () => {
    const { registry } = refundRegistry();
    const asked: ApprovalRequest[] = [];
    for (const agent of ['a', 'b'])
      await refundAs(registry, context(agent), (r) => {
        asked.push(r);
        return { effect: 'pending' };
      });
    expect(asked.map((r) => [r.agent, r.binding.agent])).toEqual([
      ['a', 'a'],
      ['b', 'b'],
    ]);
    for (const r of asked) {
      expect(r.id).toBe(requestIdOf(SECRET, r.binding));
      expect(requestIdOf(SECRET, { ...r.binding, agent: 'someone else' })).not.toBe(r.id);
    }
  });
});

describe('sameBinding and the agent', () => {
  const want = bindingOf({
    owner: { kind: 'session', id: '["acme","cy"]' },
    agent: 'a',
    callId: 'c1',
    tool: 'refund',
    args: { order: 'o-1' },
    rule: 'refunds',
    policyVersion: 'p1',
    caller: 'cy',
    tenant: 'acme',
  });

  it('names the agent when the agents differ', () => {
    expect(sameBinding({ ...want, agent: 'b' }, want)).toBe(
      'the approval was given for agent "b" and agent "a" asks now',
    );
    expect(sameBinding({ ...want, agent: null }, want)).toMatch(/given for no agent and agent "a" asks now/);
    expect(sameBinding({ ...want }, want)).toBeNull();
  });

  it('a binding stored before the agent was bound (no field) matches no call, of any agent or of none', () => {
    const { agent: _agent, ...old } = want;
    const reason =
      'the approval was asked before approvals were bound to their agent; it counts for no call: ask again';
    expect(sameBinding(old, want)).toBe(reason);
    expect(sameBinding(old, { ...want, agent: null })).toBe(reason);
    expect(sameBinding({ ...old, agent: undefined }, want)).toBe(reason);
  });

  /** sameBinding as it was before the agent was bound (main at 412494d), the oracle for every other field. */
  function before(given: unknown, w: ApprovalBinding): string | null {
    if (typeof given !== 'object' || given === null) return 'the approval is not bound to a call';
    const b = given as Partial<Record<keyof ApprovalBinding, unknown>>;
    if ((b.kind ?? 'tool') !== w.kind) return `the approval was given for a ${String(b.kind)} request`;
    const owner = b.owner as Partial<ApprovalOwner> | null | undefined;
    if (typeof owner !== 'object' || owner === null || owner.kind !== w.owner.kind || owner.id !== w.owner.id)
      return 'the approval was given for another run or session';
    if (b.callId !== w.callId) return 'the approval was given for another call';
    if (b.tool !== w.tool) return 'the approval was given for another tool';
    if (b.argsHash !== w.argsHash) return 'the approval was given for other arguments';
    if (b.rule !== w.rule)
      return `the approval was given under rule ${describeValue(b.rule)} and rule ${JSON.stringify(w.rule)} asks now`;
    if (b.policyVersion !== w.policyVersion)
      return `the approval was given under policy version ${JSON.stringify(b.policyVersion)} and ${JSON.stringify(w.policyVersion)} is in force`;
    if ((b.pin ?? null) !== w.pin) return 'the approval was given for another definition of the tool (its pin changed)';
    if ((b.caller ?? null) !== w.caller) return 'the approval was given for another caller';
    if ((b.tenant ?? null) !== w.tenant) return 'the approval was given for another tenant';
    return null;
  }

  it('old and new decide the same on random bindings, except that another agent (or none recorded) never matches', () => {
    const pick = <T>(...values: T[]) => fc.constantFrom(...values);
    const binding = fc.record({
      kind: pick('tool' as const, 'resource' as const),
      owner: fc.record({ kind: pick('run' as const, 'session' as const), id: pick('R1', 'R2') }),
      agent: pick<string | null | undefined>('a', 'b', 'agent', null, undefined),
      callId: pick('c1', 'c2'),
      tool: pick('refund', 'search'),
      args: pick({ order: 'o-1' }, { order: 'o-2' }),
      rule: pick('refunds', 'other'),
      policyVersion: pick<string | null>('p1', 'p2', null),
      pin: pick<string | null>(null, 'pin1'),
      caller: pick<string | null>('cy', null),
      tenant: pick<string | null>('acme', null),
    });
    type Drawn = typeof binding extends fc.Arbitrary<infer T> ? T : never;
    const mint = (b: Drawn) => {
      const { agent, args, ...rest } = b;
      const minted: Record<string, unknown> = { ...bindingOf({ ...rest, args, agent: agent ?? null }) };
      if (agent === undefined) delete minted['agent']; // stored before the agent was bound
      return minted;
    };
    const keys = [
      'kind',
      'owner',
      'agent',
      'callId',
      'tool',
      'args',
      'rule',
      'policyVersion',
      'pin',
      'caller',
      'tenant',
    ] as const;
    fc.assert(
      // The given binding is the wanted one with a few fields (often none, or only the agent) drawn anew.
      fc.property(binding, binding, fc.uniqueArray(fc.constantFrom(...keys), { maxLength: 2 }), (w, other, changed) => {
        const g: Drawn = { ...w, ...Object.fromEntries(changed.map((k) => [k, other[k]])) };
        const given = mint(g);
        const want = mint({ ...w, agent: w.agent ?? null }) as unknown as ApprovalBinding;
        const old = before(given, want);
        const now = sameBinding(given, want);
        const agentsMatch = 'agent' in given && given['agent'] === want.agent;
        expect(now === null).toBe(old === null && agentsMatch);
        // Where the agents match, every reason is the old one.
        if (agentsMatch) expect(now).toBe(old);
        expect(hashOf(g.args) === (given['argsHash'] as string)).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });
});
