/**
 * What an approval binds as its agent (`boundAgentOf`): the agent a context names, or null when it names
 * none. Old (`agentNameOf`, the default `agent` for none) and new decide the same on random contexts and
 * answers, except where one context names no agent and the other names the agent `agent`: an answer signed
 * for one never counts for the other. The request still shows `agent` for a call naming none.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../../src/contracts/approval.js';
import type { GateContext } from '../../src/contracts/gate.js';
import { approvalKeys } from '../../src/adapters/ai-sdk/approval-signature.js';
import { signAnswer, verifyAnswer } from '../../src/gate/approval.js';
import { agentNameOf, boundAgentOf } from '../../src/gate/index.js';
import { ToolAllowlist } from '../../src/index.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { refundAs, refundRegistry, SECRET } from './fixtures/refund.js';

const who = { tenant: { id: 'acme' }, caller: { id: 'cy' } };
const name = fc.constantFrom('agent', 'ops', 'Agent', 'agent ', '');
const agentOf = fc.oneof(
  fc.constant(undefined),
  name,
  name.map((n) => ({ name: n, tools: ['refund'] })),
  name.map((n) => ({ name: n })),
);
const contextOf = (agent: GateContext['agent'] | undefined): GateContext =>
  agent === undefined ? { ...who } : { ...who, agent };

describe('the bound agent of a call that names none', () => {
  it('old and new decide the same on random contexts, except a call naming none against the agent named "agent"', async () => {
    await fc.assert(
      fc.asyncProperty(agentOf, agentOf, async (a, b) => {
        const { registry, ran } = refundRegistry();
        const ca = contextOf(a);
        const cb = contextOf(b);
        let asked: ApprovalRequest | undefined;
        await refundAs(registry, ca, (r) => {
          asked = r;
          return { effect: 'pending' };
        });
        // Shown as before; bound to the name the context gives, or to none.
        expect(asked!.agent).toBe(agentNameOf(ca));
        expect(asked!.binding.agent).toBe(boundAgentOf(ca));
        const signed = signAnswer(SECRET, asked!, { effect: 'allow' });
        const result = await refundAs(registry, cb, (r) => verifyAnswer(SECRET, signed, r, new MemoryNonceStore()));
        const oldRuns = agentNameOf(ca) === agentNameOf(cb);
        const unnamedVsAgent = (boundAgentOf(ca) === null) !== (boundAgentOf(cb) === null) && oldRuns; // one names none, the other `agent`
        expect(result.status === 'ok').toBe(oldRuns && !unnamedVsAgent);
        expect(ran.length).toBe(oldRuns && !unnamedVsAgent ? 1 : 0);
      }),
      { numRuns: 150, seed: 20261205 },
    );
  });

  it('a context naming no agent binds null, and its own retry runs once', async () => {
    const { registry, ran } = refundRegistry();
    let asked: ApprovalRequest | undefined;
    await refundAs(registry, who, (r) => {
      asked = r;
      return { effect: 'pending' };
    });
    expect([asked!.agent, asked!.binding.agent]).toEqual(['agent', null]);
    const nonces = new MemoryNonceStore();
    const signed = signAnswer(SECRET, asked!, { effect: 'allow' });
    const replay = (r: ApprovalRequest) => verifyAnswer(SECRET, signed, r, nonces);
    const atAgent = await refundAs(registry, { ...who, agent: 'agent' }, replay);
    expect(atAgent.content).toMatch(/the approval was given for no agent and agent "agent" asks now/);
    expect((await refundAs(registry, who, replay)).status).toBe('ok');
    expect((await refundAs(registry, who, replay)).content).toMatch(/already used/);
    expect(ran).toEqual(['refund:o-1']);
  });

  it('the AI SDK\'s approval key of a context naming none is not that of the agent named "agent"', () => {
    const key = (agent: string | null) =>
      Buffer.from(approvalKeys(SECRET, { tenant: 'acme', caller: 'cy', agent }, () => 'p1')()).toString('hex');
    expect(key(null)).not.toBe(key('agent'));
    expect(key('agent')).toBe(key('agent'));
  });
});

describe('a resolved allowlist made without an agent', () => {
  it('binds no agent: an answer signed for the agent named "agent" does not run its call, nor the other way round', async () => {
    const unnamed = ToolAllowlist.resolve(['refund']);
    const named = ToolAllowlist.resolve(['refund'], { agent: 'agent' });
    const narrowed = named.narrowed(['refund']);
    expect([unnamed.agent, named.agent, narrowed.agent]).toEqual(['agent', 'agent', 'agent']);
    expect([unnamed, named, narrowed].map((allowlist) => boundAgentOf({ ...who, allowlist }))).toEqual([
      null,
      'agent',
      null,
    ]);
    for (const [from, to] of [
      [unnamed, named],
      [named, unnamed],
      [named, narrowed],
    ] as const) {
      const { registry, ran } = refundRegistry();
      let asked: ApprovalRequest | undefined;
      await refundAs(registry, { ...who, allowlist: from }, (r) => {
        asked = r;
        return { effect: 'pending' };
      });
      expect(asked!.agent).toBe('agent');
      const signed = signAnswer(SECRET, asked!, { effect: 'allow' });
      const result = await refundAs(registry, { ...who, allowlist: to }, (r) =>
        verifyAnswer(SECRET, signed, r, new MemoryNonceStore()),
      );
      expect(result.status).not.toBe('ok');
      expect(ran).toEqual([]);
      const again = await refundAs(registry, { ...who, allowlist: from }, (r) =>
        verifyAnswer(SECRET, signed, r, new MemoryNonceStore()),
      );
      expect(again.status).toBe('ok');
      expect(ran).toEqual(['refund:o-1']);
    }
  });
});
