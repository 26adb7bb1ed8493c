// An approval is bound to the agent of the call it was asked for. Through a real `toolgate gateway` process
// serving `/mcp/<agent>` (each route its own agent and allowlist) on the shared PostgreSQL approval store:
// before the agent was part of the binding, a person's answer to alice's refund asked on `/mcp/ops` was spent
// by alice's identical refund on `/mcp/helper` (the same subject, tool, arguments, rule and policy version),
// and it ran there under an agent nobody approved.
import { describe, expect, it } from 'vitest';
import type { ApprovalBinding } from '../../src/contracts/approval.js';
import { requestIdOf } from '../../src/gate/index.js';
import { storePerson } from '../../src/gateway/approvals.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { refundGateway, refundRequest, requestId } from './fixtures/approval-routes.js';
import { cleanupsAfterEach, text } from '../harness.js';

const cleanups = cleanupsAfterEach();

describe('the gateway: an approval counts for the agent (route) it was asked on only', { timeout: 240_000 }, () => {
  it("an answer to agent ops's call is not spent by the same subject's identical call on agent helper's route", async () => {
    // Two agents, each its own route and allowlist; the one rule asks for both (the same rule name).
    const { client, answer, refunds, refund } = await refundGateway(
      'approval-agent',
      { ops: { tools: ['rec:refund'] }, helper: { tools: ['rec:refund'] } },
      cleanups,
    );
    const ops = await client('/mcp/ops');
    const helper = await client('/mcp/helper');
    const asked = text(await ops.callTool(refund));
    expect(asked).toMatch(/waits for a person's approval/);
    const id = requestId(asked)!;
    expect(id).toBeDefined();
    expect(await answer(id)).toBe(200);

    // The same subject's identical call on the other agent's route: not approved there, asked afresh.
    const elsewhere = text(await helper.callTool(refund));
    expect(elsewhere, elsewhere).toMatch(/waits for a person's approval/);
    const helperId = requestId(elsewhere);
    expect(helperId).toBeDefined();
    expect(helperId).not.toBe(id);
    expect(refunds()).toBe(0);

    // The agent it was asked for: allowed once, and the approval is then used up.
    const ran = await ops.callTool(refund);
    expect(ran.isError, text(ran)).not.toBe(true);
    expect(refunds()).toBe(1);
    const again = text(await ops.callTool(refund));
    expect(again).toMatch(/waits for a person's approval/);
    expect(refunds()).toBe(1);
    // helper's own request still waits for its own answer.
    expect(text(await helper.callTool(refund))).toContain(`request ${helperId}`);
    expect(refunds()).toBe(1);
  });
});

describe("the stores' person (storePerson): the route's agent, and records stored before the agent was bound", () => {
  const secret = 'a-secret-of-sixteen-bytes';
  const key = new TextEncoder().encode(secret);
  const request = (agent: string | null, callId: string) => refundRequest(key, agent, callId, agent ?? 'gateway');

  it("refuses (throws: the call is denied) a request bound to another agent than the route's", async () => {
    const stores = new SqliteStores();
    cleanups.push(() => stores.close());
    const person = storePerson(
      { store: stores.approvals, nonces: stores.nonces, secret },
      { agent: 'helper' },
      () => undefined,
    );
    await expect(person.ask(request('ops', 'c1'))).rejects.toThrow(
      `the approval request is bound to the agent "ops", not to this route's agent "helper"; refused`,
    );
    expect(await stores.approvals.list({})).toEqual([]);
  });

  it('an answered record whose binding has no agent (stored before) is spent by no call: the call is asked afresh', async () => {
    const stores = new SqliteStores();
    cleanups.push(() => stores.close());
    // The record as an older gateway stored it: its binding without `agent`, its id the MAC of that binding.
    const { agent: _agent, ...old } = request('ops', 'c0').binding;
    const oldId = requestIdOf(key, old as unknown as ApprovalBinding);
    const shown = request('ops', 'c0');
    await stores.approvals.put({
      ...shown,
      id: oldId,
      binding: old as unknown as ApprovalBinding,
      source: 'gateway',
      createdAt: Date.now(),
      expiresAt: old.expiresAt,
      status: 'pending',
      answer: null,
      answeredAt: null,
    });
    expect(await stores.approvals.answer(oldId, { effect: 'allow', approver: 'finance' })).toBe(true);
    const stored = (await stores.approvals.get(oldId))!;
    expect('agent' in stored.binding).toBe(false);

    for (const agent of ['ops', 'helper']) {
      const notes: string[] = [];
      const person = storePerson({ store: stores.approvals, nonces: new MemoryNonceStore(), secret }, { agent }, (n) =>
        notes.push(n.state),
      );
      const asked = request(agent, `c-${agent}`);
      expect(await person.ask(asked)).toMatchObject({ effect: 'deny', waiting: expect.stringContaining(asked.id) });
      expect(notes).toEqual(['asked']);
    }
    // Listed by creation time: both asked within one millisecond may come in either order.
    const pending = await stores.approvals.list({ status: 'pending' });
    expect(pending.map((r) => [r.agent, r.binding.agent]).sort()).toEqual([
      ['helper', 'helper'],
      ['ops', 'ops'],
    ]);
  });
});
