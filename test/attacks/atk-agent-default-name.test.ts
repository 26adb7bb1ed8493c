// An approval is bound to the agent of the call it was asked for — by NAME, and a call that names no agent is
// bound to the gate's default name `agent` (agentNameOf). So a policy that declares an agent named `agent`
// has two routes that bind the same agent: `/mcp/agent` (the declared agent, its own allowlist) and `/mcp`
// (no agent: every tool the token's scopes give). A person's answer to alice's refund asked on `/mcp/agent`
// is spent by alice's identical refund on `/mcp`, where it runs. In process, likewise: a context with no
// agent spends an answer signed for the agent named `agent`.
import { describe, expect, it } from 'vitest';
import type { ApprovalRequest } from '../../src/contracts/approval.js';
import type { GateContext } from '../../src/contracts/gate.js';
import type { RoutePerson } from '../../src/contracts/route.js';
import { signAnswer, verifyAnswer } from '../../src/gate/approval.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { refundAs, refundRegistry, SECRET } from '../gate/fixtures/refund.js';
import { refundGateway, requestId } from '../gateway/fixtures/approval-routes.js';
import { cleanupsAfterEach, text } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('an approval asked for the agent named "agent" is not spent by a call that names no agent', () => {
  it('in process: a context without an agent does not spend an answer signed for agent "agent"', async () => {
    const { registry, ran } = refundRegistry();
    const refundIn = (context: GateContext, ask: RoutePerson['ask']) => refundAs(registry, context, ask);
    const who = { tenant: { id: 'acme' }, caller: { id: 'cy' } };
    let asked: ApprovalRequest | undefined;
    await refundIn({ ...who, agent: { name: 'agent', tools: ['refund'] } }, (r) => {
      asked = r;
      return { effect: 'pending' };
    });
    const signed = signAnswer(SECRET, asked!, { effect: 'allow', approver: 'ann' });
    const nonces = new MemoryNonceStore();
    const replay = (r: ApprovalRequest) => verifyAnswer(SECRET, signed, r, nonces);

    // No agent named: not the agent the person approved.
    const unnamed = await refundIn(who, replay);
    expect(unnamed.status, unnamed.content as string).toBe('refused');
    expect(ran).toEqual([]);
    // The agent it was asked for still runs once.
    expect((await refundIn({ ...who, agent: { name: 'agent', tools: ['refund'] } }, replay)).status).toBe('ok');
    expect(ran).toEqual(['refund:o-1']);
  });

  it(
    "the gateway: an answer to alice's refund on /mcp/agent is not spent by her identical refund on /mcp",
    { timeout: 240_000 },
    async () => {
      // A declared agent that happens to be named `agent` (the gate's name for a call that names none).
      const { client, answer, refunds, refund } = await refundGateway(
        'atk-agent-default',
        { agent: { tools: ['rec:refund'] } },
        cleanups,
      );

      const declared = await client('/mcp/agent');
      const unnamed = await client('/mcp');
      const asked = text(await declared.callTool(refund));
      expect(asked).toMatch(/waits for a person's approval/);
      const id = requestId(asked)!;
      expect(await answer(id)).toBe(200);

      // The same subject's identical call on the route that names no agent: asked afresh, nothing runs.
      const elsewhere = text(await unnamed.callTool(refund));
      expect(refunds(), elsewhere).toBe(0);
      expect(elsewhere).toMatch(/waits for a person's approval/);
      expect(requestId(elsewhere)).not.toBe(id);

      // The route it was asked on: allowed once.
      const ran = await declared.callTool(refund);
      expect(ran.isError, text(ran)).not.toBe(true);
      expect(refunds()).toBe(1);
    },
  );
});
