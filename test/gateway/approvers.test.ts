// Issue 22 (and 21): the gateway's `/approvals` answered through THE approver check, through the real
// `toolgate gateway` processes on one PostgreSQL store. On b5c000b a token holding the approver scope but not
// named in the policy's `approvals:` list (finance only) approved a refund of 5000 and it ran, and the same
// token listed and answered another tenant's request in the shared store. Also: a pending ask was worded
// "the approver denied the call" to the client and in the audit, and a reason given with a denial was lost.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { describe, expect, it } from 'vitest';
import { PG_URL } from '../stores/servers.js';
import { jwksIssuer, spawnGateway, type SpawnedGateway } from './fixtures/spawn.js';
import { cleanupsAfterEach, emptyFile, RECORDING, stdioUpstream, tempDir, text, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();
const requestId = (said: string) => /request ([^\s,)]+)/.exec(said)?.[1];

/** Two gateways (tenants acme and globex) on one PostgreSQL store, and how to talk to them. */
async function twoTenants(audit?: string) {
  const dir = tempDir('approvers');
  const record = emptyFile(dir, 'received.jsonl');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { rec: stdioUpstream(RECORDING, { RECORD: record }) },
      pin: 'off',
    },
    tenants: { acme: { tools: ['rec:refund'] }, globex: { tools: ['rec:refund'] } },
    scopes: { refunds: ['rec:refund'] },
    rules: [
      {
        name: 'big-refunds',
        tools: 'rec:refund',
        when: { amount: { gt: 1000 } },
        result: 'ask',
        reason: 'finance approves refunds over 1000',
      },
      { name: 'rest', result: 'allow' },
    ],
    approvals: { approvers: { tools: { 'rec:refund': ['finance@acme.example'] } }, fourEyes: true },
  });
  const idp = await jwksIssuer();
  cleanups.push(() => idp.close());
  const start = async (tenant: string | null, auditFile?: string): Promise<SpawnedGateway> => {
    const flags = [
      ...(tenant === null ? [] : ['--tenant', tenant]),
      '--stateless',
      '--jwks-url',
      idp.jwksUrl,
      '--jwt-issuer',
      idp.issuer,
    ];
    flags.push('--approvals-postgres', PG_URL, ...(auditFile !== undefined ? ['--audit', auditFile] : []));
    const g = await spawnGateway(policy, flags, { TOOLGATE_APPROVAL_SECRET: 'a shared approval key of the replicas' });
    cleanups.push(() => g.stop());
    return g;
  };
  const [acme, globex] = await Promise.all([start('acme', audit), start('globex')]);
  const token = (gateway: SpawnedGateway, sub: string, scope: string) =>
    idp.sign({ sub, aud: gateway.url.href, scope });
  const mcp = async (gateway: SpawnedGateway, sub: string) => {
    const client = new Client({ name: sub, version: '1.0.0' });
    const authorization = `Bearer ${await token(gateway, sub, 'refunds')}`;
    await client.connect(
      new StreamableHTTPClientTransport(gateway.url, { requestInit: { headers: { authorization } } }),
    );
    cleanups.push(() => client.close());
    for (let tries = 0; !(await client.listTools()).tools.some((t) => t.name === 'rec:refund'); tries++) {
      if (tries > 300) throw new Error(`the upstream did not come up:\n${gateway.stderr()}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    return client;
  };
  const approvals = async (gateway: SpawnedGateway, sub: string, id?: string, effect?: string, reason?: string) => {
    const headers = {
      authorization: `Bearer ${await token(gateway, sub, 'toolgate:approve')}`,
      'content-type': 'application/json',
    };
    const url = new URL(id === undefined ? '/approvals' : `/approvals/${encodeURIComponent(id)}`, gateway.url);
    const init = id === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify({ effect, reason }) };
    const res = await fetch(url, init);
    return { status: res.status, body: (await res.json()) as { pending?: { id: string }[] } };
  };
  const refunds = () =>
    readFileSync(record, 'utf8')
      .split('\n')
      .filter((l) => l.includes('"refund"')).length;
  const refund = { name: 'rec:refund', arguments: { order: 'A-1042', amount: 5000 } };
  return { acme, globex, mcp, approvals, refund, refunds, start };
}

describe(
  "the gateway's /approvals: the policy's approvers, four eyes, the gateway's tenant",
  { timeout: 240_000 },
  () => {
    it('an approver not named cannot approve a refund of 5000; another tenant’s request is neither listed nor answerable', async () => {
      const { acme, globex, mcp, approvals, refund, refunds } = await twoTenants();
      // alice asks at acme: the call waits for a person.
      const alice = await mcp(acme, 'alice');
      const asked = text(await alice.callTool(refund));
      const id = requestId(asked);
      expect(asked, asked).toMatch(/waits for a person's approval/);
      expect(id).toBeDefined();

      // mallory holds the approver scope but is not named for refunds: it does not exist for her.
      expect((await approvals(acme, 'mallory')).body.pending?.map((p) => p.id)).not.toContain(id);
      expect((await approvals(acme, 'mallory', id!, 'allow')).status).toBe(404);
      expect(text(await alice.callTool(refund))).toMatch(/waits for a person's approval/);
      expect(refunds()).toBe(0);

      // bob asks at globex (the same store): acme's finance approver neither sees nor answers it.
      const bob = await mcp(globex, 'bob');
      const bobs = requestId(text(await bob.callTool(refund)));
      expect(bobs).toBeDefined();
      const listed = (await approvals(acme, 'finance@acme.example')).body.pending?.map((p) => p.id);
      expect(listed).toContain(id);
      expect(listed).not.toContain(bobs);
      expect((await approvals(acme, 'finance@acme.example', bobs!, 'allow')).status).toBe(404);
      expect(text(await bob.callTool(refund))).toMatch(/waits for a person's approval/);

      // alice cannot answer her own (four eyes); finance can, and the refund runs once.
      expect((await approvals(acme, 'alice', id!, 'allow')).status).not.toBe(200);
      expect((await approvals(acme, 'finance@acme.example', id!, 'allow')).status).toBe(200);
      expect((await alice.callTool(refund)).isError).not.toBe(true);
      expect(refunds()).toBe(1);
    });

    it('a gateway serving no tenant neither lists nor answers a tenant’s request in the shared store', async () => {
      const { acme, mcp, approvals, refund, refunds, start } = await twoTenants();
      const plain = await start(null);
      const alice = await mcp(acme, 'alice');
      const id = requestId(text(await alice.callTool(refund)));
      expect(id).toBeDefined();
      // Before the fix: acme's request was listed at the tenant-less gateway, and its answer accepted.
      const listed = (await approvals(plain, 'finance@acme.example')).body.pending?.map((p) => p.id);
      expect(listed).toBeDefined();
      expect(listed).not.toContain(id);
      expect((await approvals(plain, 'finance@acme.example', id!, 'allow')).status).toBe(404);
      expect(text(await alice.callTool(refund))).toMatch(/waits for a person's approval/);
      expect(refunds()).toBe(0);
      // The tenant-less gateway's own request (no tenant): listed there, not at acme.
      const carol = await mcp(plain, 'carol');
      const own = requestId(text(await carol.callTool(refund)));
      expect(own).toBeDefined();
      expect((await approvals(plain, 'finance@acme.example')).body.pending?.map((p) => p.id)).toContain(own);
      expect((await approvals(acme, 'finance@acme.example')).body.pending?.map((p) => p.id)).not.toContain(own);
    });

    it('a pending ask is worded as waiting, and where; a reason given with a denial reaches the client', async () => {
      const audit = join(tempDir('approvers-audit'), 'audit.jsonl');
      const { acme, mcp, approvals, refund, refunds } = await twoTenants(audit);
      const records = () =>
        readFileSync(audit, 'utf8')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { type: string; decision?: { reason: string }; approval?: { state: string } })
          .filter((r) => r.type === 'tool');
      const alice = await mcp(acme, 'alice');
      const first = text(await alice.callTool(refund));
      const id = requestId(first)!;
      const again = text(await alice.callTool(refund));
      for (const said of [first, again]) {
        expect(said).toMatch(/waits for a person's approval in the shared approval store as request/);
        expect(said).not.toMatch(/denied/);
      }
      const [asked, pending] = records().slice(-2);
      expect(asked).toMatchObject({ approval: { id, state: 'asked' } });
      expect(pending).toMatchObject({ approval: { id, state: 'pending' } });
      for (const r of [asked!, pending!]) {
        expect(r.decision!.reason).toMatch(/waits for a person's approval .*request .* has not run/);
        expect(r.decision!.reason).not.toMatch(/denied/);
      }
      // finance denies with a reason: the client is told it.
      expect(
        (await approvals(acme, 'finance@acme.example', id, 'deny', 'over the quarterly refund budget')).status,
      ).toBe(200);
      const denied = text(await alice.callTool(refund));
      expect(denied).toMatch(/the approver denied the call: over the quarterly refund budget/);
      expect(refunds()).toBe(0);
    });
  },
);
