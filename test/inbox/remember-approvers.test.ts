/**
 * The inbox's answers that outlive one call — remember for the run, for the session, or once — and the
 * approvers named by tool in a policy file's `approvals:` section (read by `toolgate serve`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createInbox, type Inbox } from '../../src/inbox/index.js';
import { AgentRunner, PermissionPolicy, PermissionResult, ToolRegistry, defineTool } from '../../src/index.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { ScriptedModel } from '../../src/runner/index.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import type { PendingRecord } from '../../src/stores/types.js';
import {
  answerAs,
  approvalRequest,
  serveInbox,
  concierge,
  INBOX_SECRET,
  RUNNER_SECRET,
  shop,
  startInbox,
  type InboxOptions,
} from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

const start = (options?: InboxOptions) => startInbox(cleanups, options);

async function pendings(inbox: Inbox): Promise<PendingRecord[]> {
  return inbox.store.list({ status: 'pending' });
}

/** A runner whose model asks for the same refund twice in one run, then ends. */
function twice() {
  const refunds: string[] = [];
  const registry = new ToolRegistry();
  registry.register(
    defineTool({
      name: 'refund',
      description: 'Refund an order',
      parameters: {
        type: 'object',
        properties: { order: { type: 'string' }, amount: { type: 'number' } },
        required: ['order', 'amount'],
      },
      execute: (a) => {
        refunds.push(`${String(a['order'])}:${String(a['amount'])}`);
        return 'refunded';
      },
    }),
  );
  registry.setPermissionPolicy(
    new PermissionPolicy({
      version: 'twice-1',
      rules: [{ name: 'ask_refunds', tools: ['refund'], result: PermissionResult.ASK, reason: 'refunds need a human' }],
    }),
  );
  const call = { name: 'refund', arguments: { order: 'B-1', amount: 300 } };
  const model = new ScriptedModel([
    { toolCalls: [{ id: 'c1', ...call }] },
    { toolCalls: [{ id: 'c2', ...call }] },
    { text: 'done' },
  ]);
  const runner = new AgentRunner({ registry, model, secret: RUNNER_SECRET, handler: () => 'pending' });
  return { runner, refunds };
}

describe('remember the answer', () => {
  it('for the run: the same call later in the run is not asked again', async () => {
    const { inbox, url } = await start();
    const t = twice();
    const tracked = await inbox.runner(t.runner).track(await t.runner.run(concierge, 'go', { caller: { id: 'cy' } }));
    const [first, ...others] = await pendings(inbox);
    expect(others).toEqual([]);
    expect(await answerAs(url, first!.id, 'alice@example.com', { effect: 'allow', remember: 'run' })).toBe(200);
    expect((await tracked.done).status).toBe('completed');
    expect(t.refunds).toEqual(['B-1:300', 'B-1:300']); // the second call ran on the remembered answer
    expect(await pendings(inbox)).toEqual([]);
  });

  it('once: the same call later in the run is asked again', async () => {
    const { inbox, url } = await start();
    const t = twice();
    const tracked = await inbox.runner(t.runner).track(await t.runner.run(concierge, 'go', { caller: { id: 'cy' } }));
    const [first] = await pendings(inbox);
    expect(await answerAs(url, first!.id, 'alice@example.com', { effect: 'allow', remember: 'once' })).toBe(200);
    let second: PendingRecord | undefined;
    while (!(second = (await pendings(inbox))[0])) await new Promise((r) => setTimeout(r, 5));
    expect(second.id).not.toBe(first!.id);
    expect(t.refunds).toEqual(['B-1:300']);
    expect(await answerAs(url, second.id, 'alice@example.com', { effect: 'deny' })).toBe(200);
    expect((await tracked.done).status).toBe('completed');
    expect(t.refunds).toEqual(['B-1:300']);
  });

  it("for the session: the caller's next run is not asked again; another caller's is, and so is a run-scoped answer's next run", async () => {
    const { inbox, url } = await start();
    const s = shop();
    const runs = inbox.runner(s.runner);
    const one = await runs.track(await s.run({ order: 'A-1', amount: 300 }, 'cy'));
    const [record] = await pendings(inbox);
    expect(await answerAs(url, record!.id, 'alice@example.com', { effect: 'allow', remember: 'session' })).toBe(200);
    expect((await one.done).status).toBe('completed');
    // Same caller (session), a new run: runs without a new approval.
    const two = await s.run({ order: 'A-1', amount: 300 }, 'cy');
    expect(two.status).toBe('completed');
    expect(s.refunds).toEqual(['A-1:300', 'A-1:300']);
    // Another caller is another session: asked again. Other arguments: asked again.
    expect((await s.run({ order: 'A-1', amount: 300 }, 'dee')).status).toBe('paused');
    expect((await s.run({ order: 'A-2', amount: 300 }, 'cy')).status).toBe('paused');

    // A run-scoped answer does not carry over to the caller's next run.
    const r = shop();
    const rr = inbox.runner(r.runner);
    const first = await rr.track(await r.run({ order: 'C-1', amount: 300 }, 'fay'));
    const waiting = (await pendings(inbox)).find((p) => p.canonical === 'refund' && p.caller === 'fay')!;
    expect(await answerAs(url, waiting.id, 'alice@example.com', { effect: 'allow', remember: 'run' })).toBe(200);
    expect((await first.done).status).toBe('completed');
    expect((await r.run({ order: 'C-1', amount: 300 }, 'fay')).status).toBe('paused');
  });
});

describe('approvers by tool (the policy file, read by toolgate serve)', () => {
  it("a tool's approvers list must name the approver, besides the tenant's; tools without a list take the tenant's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-approvers-'));
    const policy = join(dir, 'policy.yaml');
    const db = join(dir, 'approvals.db');
    writeFileSync(
      policy,
      [
        'version: 1',
        'rules:',
        '  - { name: ask_all, result: ask }',
        'approvals:',
        '  approvers:',
        "    tenants: { acme: [ana@acme.example, fin@acme.example], '*': [ops@example.com] }",
        '    tools: { Refund: [fin@acme.example] }',
      ].join('\n'),
    );
    const args = ['--store', `sqlite:${db}`, '--policy', policy, '--jwt-secret-env', 'JWT'];
    const url = (await serveInbox(cleanups, args)).url!;
    const stores = new SqliteStores({ filename: db });
    cleanups.push(() => stores.close());
    const waiting = createInbox({
      secret: INBOX_SECRET,
      store: stores.approvals,
      nonces: stores.nonces,
      sweepIntervalMs: 0,
    });
    cleanups.push(() => waiting.close());
    const ask = waiting.ask('gateway');
    const version = (await loadPolicyFile(policy)).policy.version ?? null;
    // The version `toolgate serve` reads from the file: an answer under another one is refused (409).
    const request = (id: string, tool: string, tenant: string) =>
      approvalRequest({ id, tool, tenant, ttlMs: 60_000, policyVersion: version });
    const refund = ask(request('r1', 'refund', 'acme'));
    const search = ask(request('s1', 'search', 'acme'));
    const other = ask(request('o1', 'refund', 'globex'));
    while ((await stores.approvals.list({ status: 'pending' })).length < 3) await new Promise((r) => setTimeout(r, 5));
    // refund at acme: the tenant list AND the tool list must both name the approver; to anyone else the
    // request does not exist (404, issue 21 item 5: it was a 403 that confirmed it).
    expect(await answerAs(url, 'r1', 'ana@acme.example', { effect: 'allow' })).toBe(404);
    expect(await answerAs(url, 'r1', 'ops@example.com', { effect: 'allow' })).toBe(404);
    expect(await answerAs(url, 'r1', 'fin@acme.example', { effect: 'allow' })).toBe(200);
    // search has no tool list: the tenant's applies.
    expect(await answerAs(url, 's1', 'ana@acme.example', { effect: 'deny' })).toBe(200);
    // refund at another tenant: the '*' list and the tool list; nobody is on both.
    expect(await answerAs(url, 'o1', 'fin@acme.example', { effect: 'allow' })).toBe(404);
    expect(await answerAs(url, 'o1', 'ops@example.com', { effect: 'allow' })).toBe(404);
    await waiting.sweep();
    expect(await refund).toMatchObject({ effect: 'allow', approver: 'fin@acme.example' });
    expect(await search).toMatchObject({ effect: 'deny', approver: 'ana@acme.example' });
    expect((await stores.approvals.get('o1'))?.status).toBe('pending');
    void other.catch(() => undefined);
  });
});
