// Issue 22 (and 21): the gateway's `/approvals` answered through THE approver check, through the real
// `toolgate gateway` processes on one PostgreSQL store. On b5c000b a token holding the approver scope but not
// named in the policy's `approvals:` list (finance only) approved a refund of 5000 and it ran, and the same
// token listed and answered another tenant's request in the shared store.
import { mkdtempSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { PG_URL } from '../stores/servers.js';
import { jwksIssuer, spawnGateway, type SpawnedGateway } from './fixtures/spawn.js';

const RECORDING = join(process.cwd(), 'test/gateway/fixtures/recording-server.ts');
const cleanups: (() => Promise<unknown> | void)[] = [];
afterAll(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});
const text = (r: unknown) => ((r as CallToolResult).content[0] as { text: string }).text;

describe(
  "the gateway's /approvals: the policy's approvers, four eyes and the gateway's tenant",
  { timeout: 240_000 },
  () => {
    it('an approver not named cannot approve a refund of 5000; another tenant’s request is neither listed nor answerable', async () => {
      const dir = realpathSync(mkdtempSync(join(tmpdir(), 'toolgate-approvers-')));
      const record = join(dir, 'received.jsonl');
      writeFileSync(record, '');
      const refunds = () =>
        readFileSync(record, 'utf8')
          .split('\n')
          .filter((l) => l.includes('"refund"')).length;
      const policy = join(dir, 'policy.yaml');
      writeFileSync(
        policy,
        stringify({
          version: 1,
          gateway: {
            upstreams: {
              rec: { command: process.execPath, args: ['--import', 'tsx', RECORDING], env: { RECORD: record } },
            },
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
        }),
      );
      const idp = await jwksIssuer();
      cleanups.push(() => idp.close());
      const env = { TOOLGATE_APPROVAL_SECRET: 'a shared approval key of the replicas' };
      const start = async (tenant: string): Promise<SpawnedGateway> => {
        const g = await spawnGateway(
          policy,
          [
            '--tenant',
            tenant,
            '--stateless',
            '--jwks-url',
            idp.jwksUrl,
            '--jwt-issuer',
            idp.issuer,
            '--approvals-postgres',
            PG_URL,
          ],
          env,
        );
        cleanups.push(() => g.stop());
        return g;
      };
      const [acme, globex] = await Promise.all([start('acme'), start('globex')]);
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
      const approvals = async (gateway: SpawnedGateway, sub: string, id?: string, effect?: 'allow' | 'deny') => {
        const headers = {
          authorization: `Bearer ${await token(gateway, sub, 'toolgate:approve')}`,
          'content-type': 'application/json',
        };
        const url = new URL(id === undefined ? '/approvals' : `/approvals/${encodeURIComponent(id)}`, gateway.url);
        const res = await fetch(
          url,
          id === undefined ? { headers } : { method: 'POST', headers, body: JSON.stringify({ effect }) },
        );
        return { status: res.status, body: (await res.json()) as { pending?: { id: string }[] } };
      };
      const refund = { name: 'rec:refund', arguments: { order: 'A-1042', amount: 5000 } };

      // alice asks at acme: the call waits for a person.
      const alice = await mcp(acme, 'alice');
      const asked = text(await alice.callTool(refund));
      const id = /request ([^\s,)]+)/.exec(asked)?.[1];
      expect(asked, asked).toMatch(/waits for a person's approval/);
      expect(id).toBeDefined();

      // mallory holds the approver scope but is not named for refunds: it does not exist for her.
      expect((await approvals(acme, 'mallory')).body.pending?.map((p) => p.id)).not.toContain(id);
      expect((await approvals(acme, 'mallory', id!, 'allow')).status).toBe(404);
      expect(text(await alice.callTool(refund))).toMatch(/waits for a person's approval/);
      expect(refunds()).toBe(0);

      // bob asks at globex (the same store): acme's finance approver neither sees nor answers it.
      const bob = await mcp(globex, 'bob');
      const bobs = /request ([^\s,)]+)/.exec(text(await bob.callTool(refund)))?.[1];
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
  },
);
