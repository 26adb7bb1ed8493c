// An approval is bound to the agent of the call it was asked for — by NAME, and a call that names no agent is
// bound to the gate's default name `agent` (agentNameOf). So a policy that declares an agent named `agent`
// has two routes that bind the same agent: `/mcp/agent` (the declared agent, its own allowlist) and `/mcp`
// (no agent: every tool the token's scopes give). A person's answer to alice's refund asked on `/mcp/agent`
// is spent by alice's identical refund on `/mcp`, where it runs. In process, likewise: a context with no
// agent spends an answer signed for the agent named `agent`.
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { ApprovalRequest } from '../../src/contracts/approval.js';
import type { GateContext } from '../../src/contracts/gate.js';
import type { Route, RoutePerson } from '../../src/contracts/route.js';
import { readCall } from '../../src/formats/index.js';
import { signAnswer, verifyAnswer } from '../../src/gate/approval.js';
import { dispatchCalls } from '../../src/gate/dispatch.js';
import { environmentOf } from '../../src/gate/environment.js';
import { PermissionPolicy, ToolRegistry, type ToolResult } from '../../src/index.js';
import { MemoryNonceStore } from '../../src/stores/memory.js';
import { PG_URL } from '../stores/servers.js';
import { jwksIssuer, spawnGateway } from '../gateway/fixtures/spawn.js';
import { cleanupsAfterEach, emptyFile, RECORDING, stdioUpstream, tempDir, text, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();
const requestId = (said: string) => /request ([0-9a-f]{64})/.exec(said)?.[1];

describe('an approval asked for the agent named "agent" is not spent by a call that names no agent', () => {
  it('in process: a context without an agent does not spend an answer signed for agent "agent"', async () => {
    const SECRET = new TextEncoder().encode('the route owner secret, 16+');
    const ran: string[] = [];
    const registry = new ToolRegistry({ confusables: 'off' });
    registry.register({
      name: 'refund',
      parameters: z.object({ order: z.string() }),
      execute: ({ order }) => void ran.push(`refund:${String(order)}`),
    });
    registry.setPermissionPolicy(
      new PermissionPolicy({
        rules: [{ name: 'refunds', tools: ['refund'], result: 'ask', reason: 'refunds need a person' }],
        version: 'p1',
      }),
    );
    const refundAs = async (context: GateContext, ask: RoutePerson['ask']): Promise<ToolResult> => {
      const route: Route = { name: 'adapter', grouped: false, person: { approvals: { secret: SECRET }, ask } };
      const [result] = (await dispatchCalls(
        [readCall({ id: 'c1', name: 'refund', arguments: { order: 'o-1' } })],
        context,
        environmentOf(registry),
        route,
      )) as ToolResult[];
      return result as ToolResult;
    };
    const who = { tenant: { id: 'acme' }, caller: { id: 'cy' } };
    let asked: ApprovalRequest | undefined;
    await refundAs({ ...who, agent: { name: 'agent', tools: ['refund'] } }, (r) => {
      asked = r;
      return { effect: 'pending' };
    });
    const signed = signAnswer(SECRET, asked!, { effect: 'allow', approver: 'ann' });
    const nonces = new MemoryNonceStore();
    const replay = (r: ApprovalRequest) => verifyAnswer(SECRET, signed, r, nonces);

    // No agent named: not the agent the person approved.
    const unnamed = await refundAs(who, replay);
    expect(unnamed.status, unnamed.content as string).toBe('refused');
    expect(ran).toEqual([]);
    // The agent it was asked for still runs once.
    expect((await refundAs({ ...who, agent: { name: 'agent', tools: ['refund'] } }, replay)).status).toBe('ok');
    expect(ran).toEqual(['refund:o-1']);
  });

  it(
    "the gateway: an answer to alice's refund on /mcp/agent is not spent by her identical refund on /mcp",
    { timeout: 240_000 },
    async () => {
      const dir = tempDir('atk-agent-default');
      const record = emptyFile(dir, 'received.jsonl');
      const policy = writePolicy(dir, {
        gateway: { upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) }, pin: 'off' },
        // A declared agent that happens to be named `agent` (the gate's name for a call that names none).
        agents: { agent: { tools: ['rec:refund'] } },
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
      const client = async (path: string) => {
        const c = new Client({ name: `alice${path.replace(/\//g, '-')}`, version: '1.0.0' });
        const authorization = `Bearer ${await idp.sign({ sub: 'alice', aud, scope: 'refunds' })}`;
        await c.connect(
          new StreamableHTTPClientTransport(new URL(path, gateway.url), {
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
      const refund = { name: 'rec:refund', arguments: { order: `A-${randomUUID()}`, amount: 5000 } };

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
