// An approval is bound to the agent of the call it was asked for. Through a real `toolgate gateway` process
// serving `/mcp/<agent>` (each route its own agent and allowlist) on the shared PostgreSQL approval store:
// before the agent was part of the binding, a person's answer to alice's refund asked on `/mcp/ops` was spent
// by alice's identical refund on `/mcp/helper` (the same subject, tool, arguments, rule and policy version),
// and it ran there under an agent nobody approved.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import type { ApprovalBinding } from '../../src/contracts/approval.js';
import { bindingOf, requestIdOf, requestOf } from '../../src/gate/index.js';
import { storePerson } from '../../src/gateway/approvals.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { PG_URL } from '../stores/servers.js';
import { jwksIssuer, spawnGateway } from './fixtures/spawn.js';
import { cleanupsAfterEach, emptyFile, RECORDING, stdioUpstream, tempDir, text, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();
const requestId = (said: string) => /request ([0-9a-f]{64})/.exec(said)?.[1];

describe('the gateway: an approval counts for the agent (route) it was asked on only', { timeout: 240_000 }, () => {
  it("an answer to agent ops's call is not spent by the same subject's identical call on agent helper's route", async () => {
    const dir = tempDir('approval-agent');
    const record = emptyFile(dir, 'received.jsonl');
    const policy = writePolicy(dir, {
      gateway: { upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) }, pin: 'off' },
      // Two agents, each its own route and allowlist; the one rule asks for both (the same rule name).
      agents: { ops: { tools: ['rec:refund'] }, helper: { tools: ['rec:refund'] } },
      scopes: { refunds: ['rec:refund'] },
      rules: [
        { name: 'refunds', tools: 'rec:refund', result: 'ask', reason: 'finance approves refunds' },
        { name: 'rest', result: 'allow' },
      ],
      approvals: { approvers: { tools: { 'rec:refund': ['finance@example.com'] } } },
    });
    const idp = await jwksIssuer();
    cleanups.push(() => idp.close());
    const gateway = await spawnGateway(
      policy,
      ['--stateless', '--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.issuer, '--approvals-postgres', PG_URL],
      { TOOLGATE_APPROVAL_SECRET: 'a shared approval key of the replicas' },
    );
    cleanups.push(() => gateway.stop());
    const aud = gateway.url.href;
    const client = async (agent: string) => {
      const c = new Client({ name: `alice-${agent}`, version: '1.0.0' });
      const authorization = `Bearer ${await idp.sign({ sub: 'alice', aud, scope: 'refunds' })}`;
      await c.connect(
        new StreamableHTTPClientTransport(new URL(`/mcp/${agent}`, gateway.url), {
          requestInit: { headers: { authorization } },
        }),
      );
      cleanups.push(() => c.close());
      for (let tries = 0; !(await c.listTools()).tools.some((t) => t.name === 'rec:refund'); tries++) {
        if (tries > 300) throw new Error(`the upstream did not come up:\n${gateway.stderr()}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      return c;
    };
    const answer = async (id: string) => {
      const t = await idp.sign({ sub: 'finance@example.com', aud, scope: 'toolgate:approve' });
      const res = await fetch(new URL(`/approvals/${id}`, gateway.url), {
        method: 'POST',
        headers: { authorization: `Bearer ${t}`, 'content-type': 'application/json' },
        body: JSON.stringify({ effect: 'allow' }),
      });
      return res.status;
    };
    const refunds = () =>
      readFileSync(record, 'utf8')
        .split('\n')
        .filter((l) => l.includes('"refund"')).length;
    // Arguments of this run only: the shared store may hold other runs' requests for the same policy.
    const refund = { name: 'rec:refund', arguments: { order: `A-${randomUUID()}`, amount: 5000 } };

    const ops = await client('ops');
    const helper = await client('helper');
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
  const request = (agent: string | null, callId: string) =>
    requestOf(
      key,
      bindingOf({
        owner: { kind: 'session', id: 'alice' },
        agent,
        callId,
        tool: 'rec:refund',
        args: { order: 'A-1', amount: 5000 },
        rule: 'refunds',
        policyVersion: 'v1',
        caller: 'alice',
        tenant: null,
      }),
      {
        toolName: 'rec:refund',
        parameters: { order: 'A-1', amount: 5000 },
        agent: agent ?? 'gateway',
        runId: null,
        reason: 'asks',
      },
    );

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
    const pending = await stores.approvals.list({ status: 'pending' });
    expect(pending.map((r) => [r.agent, r.binding.agent])).toEqual([
      ['ops', 'ops'],
      ['helper', 'helper'],
    ]);
  });
});
