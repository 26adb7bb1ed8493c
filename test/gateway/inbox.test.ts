/**
 * The gateway's asks answered in the approval inbox, end to end: a real `toolgate gateway` process
 * (`--inbox sqlite:…`) in front of a real upstream that counts its executions, `toolgate serve` over the
 * same SQLite file, MCP SDK clients calling, approvers answering over HTTP (bearer + CSRF, as the page's
 * form does). The upstream runs an approved call exactly once, and never a denied or expired one.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ElicitRequestSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { runServe } from '../../src/cli/serve.js';
import { storePerson } from '../../src/gateway/approvals.js';
import { bindingOf, requestOf } from '../../src/gate/index.js';
import { createGateway } from '../../src/gateway/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';
import { MemoryApprovalStore, MemoryNonceStore } from '../../src/stores/memory.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import type { PendingRecord } from '../../src/stores/types.js';
import { INBOX_SECRET, JWT_SECRET, answerAs } from '../inbox/fixture.js';
import {
  auditLines,
  cleanupsAfterEach,
  inMemoryClient,
  ROOT,
  stdioUpstream,
  tempDir,
  text,
  writePolicy,
} from '../harness.js';

const BANK = join(ROOT, 'test/gateway/fixtures/bank-server.ts');
const MAIN = join(ROOT, 'src/cli/main.ts');
const cleanups = cleanupsAfterEach();

interface Setup {
  readonly dir: string;
  readonly ledger: string;
  readonly audit: string;
  readonly inboxUrl: string;
  readonly store: SqliteStores;
  paid(): string[];
  pending(): Promise<PendingRecord>;
  client(capabilities?: ConstructorParameters<typeof Client>[1]): Promise<Client>;
}

async function setup(approvals: Record<string, unknown> = {}): Promise<Setup> {
  const dir = tempDir('gw-inbox');
  const ledger = join(dir, 'ledger.txt');
  const audit = join(dir, 'audit.jsonl');
  const db = join(dir, 'approvals.db');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { bank: stdioUpstream(BANK, { BANK_LEDGER: ledger }) },
    },
    rules: [
      { name: 'ask-payments', tools: 'bank:pay', result: 'ask', reason: 'payments need a person' },
      { name: 'bank', namespace: 'bank', result: 'allow' },
    ],
    approvals: { approvers: { tenants: { '*': ['alice@example.com', 'bo@example.com'] } }, ...approvals },
  });
  // The inbox people open: `toolgate serve` over the SQLite file, approvers and time-out from the policy.
  let stop!: () => void;
  const inboxUrl = await new Promise<string>((resolve, reject) => {
    const args = ['--port', '0', '--store', `sqlite:${db}`, '--policy', policy, '--jwt-secret-env', 'JWT'];
    void runServe(args, {
      stdout: () => undefined,
      stderr: () => undefined,
      stop: new Promise<void>((r) => (stop = r)),
      onListening: resolve,
      env: { TOOLGATE_INBOX_SECRET: INBOX_SECRET, JWT: JWT_SECRET },
    }).then((code) => (code === 0 ? undefined : reject(new Error(`serve exited ${code}`))));
  });
  cleanups.push(() => stop());
  const store = new SqliteStores({ filename: db });
  cleanups.push(() => store.close());
  return {
    dir,
    ledger,
    audit,
    inboxUrl,
    store,
    paid: () => (existsSync(ledger) ? readFileSync(ledger, 'utf8').trim().split('\n').filter(Boolean) : []),
    pending: async () => {
      for (let i = 0; i < 3000; i++) {
        const [record] = await store.approvals.list({ status: 'pending' });
        if (record) return record;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error(`no pending approval in the store: ${JSON.stringify(await store.approvals.list())}`);
    },
    client: async (options = {}) => {
      const transport = new StdioClientTransport({
        command: process.execPath,
        args: [
          '--import',
          'tsx',
          MAIN,
          'gateway',
          '--policy',
          policy,
          '--audit',
          audit,
          '--inbox',
          `sqlite:${db}`,
          '--inbox-url',
          inboxUrl,
        ],
        stderr: 'pipe',
      });
      const client = new Client({ name: 'agent', version: '1.0.0' }, options);
      await client.connect(transport);
      cleanups.push(() => client.close());
      return client;
    },
  };
}

/** The audit file's tool record (written just after the call's answer: waited for). */
async function toolRecord(file: string): Promise<Record<string, unknown> | undefined> {
  const isTool = (r: Record<string, unknown>) => r['type'] === 'tool';
  return (await auditLines(file, (all) => all.some(isTool))).find(isTool);
}

describe('the gateway asks the inbox', { timeout: 180_000 }, () => {
  it('the call waits, a person approves in the inbox, the upstream runs it once; a second answer changes nothing', async () => {
    const s = await setup();
    const seen: { url?: string; mode?: string }[] = [];
    const client = await s.client({ capabilities: { elicitation: { url: {} } } });
    client.setRequestHandler(ElicitRequestSchema, (request) => {
      seen.push(request.params as { url?: string; mode?: string });
      return { action: 'accept' };
    });
    const call = client.callTool({ name: 'bank:pay', arguments: { to: 'ana', amount: 40 } });
    const record = await s.pending();
    expect(record).toMatchObject({ source: 'gateway', canonical: 'bank:pay', parameters: { to: 'ana', amount: 40 } });
    expect(s.paid()).toEqual([]); // nothing ran while it waits
    // A person not named as an approver cannot answer (to them the request does not exist); an approver can.
    expect(await answerAs(s.inboxUrl, record.id, 'mallory@example.com', { effect: 'allow' })).toBe(404);
    expect(await answerAs(s.inboxUrl, record.id, 'alice@example.com', { effect: 'allow' })).toBe(200);
    expect(text(await call)).toBe('paid 40 to ana');
    expect(await answerAs(s.inboxUrl, record.id, 'bo@example.com', { effect: 'allow' })).toBe(409);
    expect(s.paid()).toEqual(['ana:40']);
    // The client was told where to answer, by URL elicitation, pointing at the card.
    expect(seen).toEqual([
      expect.objectContaining({ mode: 'url', url: `${s.inboxUrl}/#a-${encodeURIComponent(record.id)}` }),
    ]);
    const tool = await toolRecord(s.audit);
    expect(tool).toMatchObject({
      status: 'ok',
      decision: { effect: 'allow', asked: 'gateway' },
      approval: { id: record.id, state: 'approved', approver: 'alice@example.com' },
    });
    // The same call again is a new request: it asks anew and does not run on the old answer.
    const again = client.callTool({ name: 'bank:pay', arguments: { to: 'ana', amount: 40 } });
    const second = await s.pending();
    expect(second.id).not.toBe(record.id);
    expect(await answerAs(s.inboxUrl, second.id, 'bo@example.com', { effect: 'deny', reason: 'once is enough' })).toBe(
      200,
    );
    const refused = (await again) as CallToolResult;
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('once is enough');
    expect(s.paid()).toEqual(['ana:40']);
  });

  it('an approval with edited arguments runs the edited call (through the gate again); without elicitation, progress says where', async () => {
    const s = await setup();
    const client = await s.client();
    const progress: string[] = [];
    const call = client.callTool({ name: 'bank:pay', arguments: { to: 'ana', amount: 400 } }, undefined, {
      onprogress: (p) => progress.push(p.message ?? ''),
    });
    const record = await s.pending();
    expect(
      await answerAs(s.inboxUrl, record.id, 'alice@example.com', {
        effect: 'allow',
        arguments: JSON.stringify({ to: 'ana', amount: 40 }),
      }),
    ).toBe(200);
    expect(text(await call)).toBe('paid 40 to ana');
    expect(s.paid()).toEqual(['ana:40']);
    expect(progress.join('\n')).toContain(`waits for a person's approval at ${s.inboxUrl}/#a-`);
    // remember run/session is not offered for gateway approvals: the gateway does not remember.
    const next = client.callTool({ name: 'bank:pay', arguments: { to: 'bo', amount: 1 } });
    const pending = await s.pending();
    expect(await answerAs(s.inboxUrl, pending.id, 'alice@example.com', { effect: 'allow', remember: 'session' })).toBe(
      400,
    );
    expect(await answerAs(s.inboxUrl, pending.id, 'alice@example.com', { effect: 'deny' })).toBe(200);
    expect(((await next) as CallToolResult).isError).toBe(true);
    expect(s.paid()).toEqual(['ana:40']);
  });

  it('unanswered, the request expires: the call is refused and a late answer is refused too', async () => {
    const s = await setup({ timeoutSeconds: 1 });
    const client = await s.client();
    const call = client.callTool({ name: 'bank:pay', arguments: { to: 'eve', amount: 5 } });
    const record = await s.pending();
    const result = (await call) as CallToolResult;
    expect(result.isError).toBe(true);
    expect(text(result)).toContain('timed out');
    expect(await answerAs(s.inboxUrl, record.id, 'alice@example.com', { effect: 'allow' })).toBe(410);
    expect(s.paid()).toEqual([]);
    expect(await toolRecord(s.audit)).toMatchObject({
      status: 'refused',
      approval: { id: record.id, state: 'denied' },
    });
  });
});

describe('attacks on the approval paths', { timeout: 120_000 }, () => {
  it('a call cancelled while it waits is not run when it is approved afterwards', async () => {
    const dir = tempDir('gw-inbox');
    const ledger = join(dir, 'ledger.txt');
    const set = parsePolicy(
      stringify({
        version: 1,
        rules: [
          { name: 'ask-payments', tools: 'bank:pay', result: 'ask' },
          { name: 'bank', namespace: 'bank', result: 'allow' },
        ],
      }),
    ).policy!;
    const asked: ((answer: { effect: 'allow' }) => void)[] = [];
    const gateway = await createGateway({
      policy: set,
      upstreams: {
        bank: { stdio: stdioUpstream(BANK, { BANK_LEDGER: ledger }) },
      },
      inbox: { ask: () => new Promise((answer) => asked.push(answer)) },
    });
    cleanups.push(() => gateway.close());
    const client = await inMemoryClient(cleanups, gateway);
    const controller = new AbortController();
    const call = client.callTool({ name: 'bank:pay', arguments: { to: 'eve', amount: 9 } }, undefined, {
      signal: controller.signal,
    });
    await expect.poll(() => asked.length).toBe(1);
    controller.abort();
    await expect(call).rejects.toThrow();
    asked[0]!({ effect: 'allow' });
    expect(text(await client.callTool({ name: 'bank:balance', arguments: {} }))).toBe('1000');
    expect(existsSync(ledger)).toBe(false);
  });

  it('a retry (--approvals-postgres mode) never runs the original arguments on an approval of edited ones', async () => {
    const store = new MemoryApprovalStore();
    const secret = 'a-secret-of-sixteen-bytes';
    const person = storePerson({ store, nonces: new MemoryNonceStore(), secret }, { agent: 'a' }, () => undefined);
    // The request the gate binds to each call: the retry is a new call of the same caller, tool and arguments.
    const request = (callId: string) =>
      requestOf(
        new TextEncoder().encode(secret),
        bindingOf({
          owner: { kind: 'session', id: 'cy' },
          agent: 'a',
          callId,
          tool: 'bank:pay',
          args: { to: 'eve', amount: 900 },
          rule: 'ask-payments',
          policyVersion: 'v1',
          caller: 'cy',
          tenant: null,
        }),
        {
          toolName: 'bank:pay',
          parameters: { to: 'eve', amount: 900 },
          agent: 'a',
          runId: null,
          reason: 'payments need a person',
        },
      );
    expect(await person.ask(request('c1'))).toMatchObject({ effect: 'deny', waiting: expect.any(String) }); // stored
    const [pending] = await store.list({ status: 'pending' });
    expect(
      await store.answer(pending!.id, { effect: 'allow', approver: 'alice', arguments: { to: 'eve', amount: 9 } }),
    ).toBe(true);
    const retried = await person.ask(request('c2'));
    expect(retried).toMatchObject({ effect: 'deny', reason: expect.stringMatching(/edited arguments/) });
  });
});
