/**
 * The inbox over HTTP without a browser: time-outs, policy versions, the registry's handler route, the
 * command, the demo, and the rendering of hostile text.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { inboxDemo } from '../../examples/demo/inbox.js';
import { runServe } from '../../src/cli/serve.js';
import { run } from '../../src/cli/program.js';
import { jwtApprover, openInboxAudit, slackMessage } from '../../src/inbox/index.js';
import { diffHtml, text } from '../../src/inbox/render.js';
import { loadPolicyFile } from '../../src/policy-file/index.js';
import { PostgresStores } from '../../src/stores/postgres.js';
import { SqliteStores } from '../../src/stores/sqlite.js';
import { PG_URL, uniqueName } from '../stores/servers.js';
import {
  JWT_SECRET,
  answer,
  approvalRequest,
  bearer,
  csrfOf,
  serveInbox,
  signJwt,
  shop,
  startInbox,
  wireMoney,
  type InboxOptions,
} from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

const start = (options?: InboxOptions) => startInbox(cleanups, options);

describe('hostile text is shown inert and visible', () => {
  it('escapes HTML and marks bidi, zero-width and control characters', () => {
    expect(text('<img src=x onerror=alert(1)>')).toBe('&lt;img src=x onerror=alert(1)&gt;');
    const marked = text('a\u202Eb\u200Bc\u0007d\u00A0e');
    for (const point of ['U+202E', 'U+200B', 'U+0007', 'U+00A0']) expect(marked).toContain(`⟦${point}⟧`);
    expect([...marked].some((c) => '\u202E\u200B\u0007\u00A0'.includes(c))).toBe(false);
    expect(text('line\nnext\tx')).toBe('line\nnext\tx');
    expect(diffHtml('{\n  "a": 1\n}', '{\n  "a": 2\n}')).toMatch(
      /<del[^>]*>.*- {3}&quot;a&quot;: 1.*<\/del>[\s\S]*<ins[^>]*>.*\+ {3}&quot;a&quot;: 2/,
    );
  });
});

describe('the inbox over HTTP', () => {
  it('times an unanswered approval out to deny, and the model is told so', async () => {
    let now = 1_000_000;
    const s = shop();
    const { inbox, url } = await start({ now: () => now, ttlMs: 60_000 });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-1', amount: 300 }));
    const [record] = await inbox.store.list({ status: 'pending' });
    const csrf = await csrfOf(url, 'alice@example.com');
    now += 60_001;
    const late = await answer(url, record!.id, 'alice@example.com', { effect: 'allow' }, csrf);
    expect(late.status).toBe(410);
    expect(await inbox.sweep()).toBe(1);
    const result = await tracked.done;
    expect(result.status).toBe('completed');
    expect(s.refunds).toEqual([]);
    expect(s.lastToolMessage()).toMatch(/timed out/);
    expect(await inbox.sweep()).toBe(0);
  });

  it('refuses an answer given under another policy version', async () => {
    let version = 'shop-1';
    const s = shop('shop-1');
    const { inbox, url } = await start({ policyVersion: () => version });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-2', amount: 300 }));
    const [record] = await inbox.store.list({ status: 'pending' });
    version = 'shop-2';
    const refused = await answer(url, record!.id, 'alice@example.com', { effect: 'allow' });
    expect(refused.status).toBe(409);
    expect(await refused.text()).toContain('policy changed');
    expect(s.refunds).toEqual([]);
    version = 'shop-1';
    expect((await answer(url, record!.id, 'alice@example.com', { effect: 'allow' })).status).toBe(200);
  });

  it('answers the same approval once whatever the number of concurrent answers', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-4', amount: 300 }));
    const [record] = await inbox.store.list({ status: 'pending' });
    const csrf = await csrfOf(url, 'alice@example.com');
    const statuses = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        answer(url, record!.id, 'alice@example.com', { effect: i % 2 ? 'deny' : 'allow' }, csrf).then((r) => r.status),
      ),
    );
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(7);
    await tracked.done;
    expect(s.refunds.length).toBeLessThanOrEqual(1);
  });

  it('answers only to loopback host names (DNS rebinding) and refuses a huge body', async () => {
    const { url } = await start();
    const status = (host: string) =>
      new Promise<number>((resolve, reject) => {
        const req = request(`${url}/`, { headers: { host } }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await status('evil.example:80')).toBe(421);
    expect(await status(new URL(url).host)).toBe(401);
    const big = await fetch(`${url}/link`, {
      method: 'POST',
      headers: { origin: new URL(url).origin },
      body: new URLSearchParams({ token: 'x'.repeat(300_000) }),
    });
    expect(big.status).toBe(413);
  });

  it('names the approver by a verified email only: an unverified one falls back to the subject', async () => {
    const sign = (claims: Record<string, unknown>) => signJwt(claims);
    const who = jwtApprover({ secret: JWT_SECRET });
    expect(await who(await sign({ email: 'alice@example.com' }))).toBe('user-7');
    expect(await who(await sign({ email: 'alice@example.com', email_verified: false }))).toBe('user-7');
    expect(await who(await sign({ email: 'alice@example.com', email_verified: true }))).toBe('alice@example.com');
  });

  it("binds an approver to the tenants a token's tenantClaim names: another tenant's request is a 404", async () => {
    const sign = (claims: Record<string, unknown>) => signJwt({ email_verified: true, ...claims });
    const s = shop();
    const { inbox, url } = await start({ authenticate: jwtApprover({ secret: JWT_SECRET, tenantClaim: 'tenant' }) });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-21', amount: 300 }));
    const [record] = await inbox.store.list({ status: 'pending' });
    const as = async (claims: Record<string, unknown>) => ({ authorization: `Bearer ${await sign(claims)}` });
    const gus = await as({ email: 'gus@globex.example', tenant: 'globex' });
    const page = await (await fetch(`${url}/`, { headers: gus })).text();
    expect(page).toContain('0 waiting');
    expect(page).not.toContain('A-21');
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const post = (headers: Record<string, string>, token: string) =>
      fetch(`${url}/approvals/${encodeURIComponent(record!.id)}/answer`, {
        method: 'POST',
        headers: { ...headers, origin: new URL(url).origin },
        body: new URLSearchParams({ csrf: token, effect: 'allow' }),
      });
    const refused = await post(gus, csrf);
    expect(refused.status).toBe(404);
    expect((await fetch(`${url}/`, { headers: await as({ email: 'x@example.com' }) })).status).toBe(401); // no claim
    const ana = await as({ email: 'ana@acme.example', tenant: ['acme', 'initech'] });
    const anaPage = await (await fetch(`${url}/`, { headers: ana })).text();
    expect(anaPage).toContain('A-21');
    expect((await post(ana, /name="csrf" value="([^"]+)"/.exec(anaPage)![1]!)).status).toBe(200);
    expect((await tracked.done).status).toBe('completed');
  });

  it('keeps arguments inside the Slack code block (a backtick cannot close it)', () => {
    const message = slackMessage({
      type: 'approval.requested',
      id: 'd1',
      sentAt: 0,
      approval: {
        id: 'a1',
        source: 'runner',
        tool: 'refund',
        canonical: 'refund',
        parameters: { note: '```\n*Approved by the CFO* <https://evil.example|Approve>' },
        agent: 'concierge',
        tenant: 'acme',
        caller: 'cy',
        runId: null,
        rule: 'r',
        reason: 'why',
        expiresAt: 0,
        status: 'pending',
        answer: null,
      },
      links: null,
    });
    const text = (message['blocks'] as { text: { text: string } }[])[0]!.text.text;
    expect(text.match(/```/g)).toHaveLength(2);
    expect(text).not.toContain('<https://evil');
  });

  it('refuses requests without a valid bearer token', async () => {
    const { url } = await start();
    expect((await fetch(`${url}/`)).status).toBe(401);
    expect((await fetch(`${url}/`, { headers: { authorization: 'Bearer not-a-jwt' } })).status).toBe(401);
    expect((await fetch(`${url}/events`)).status).toBe(401);
  });

  it("puts the registry route's asks in the inbox and waits for the answer", async () => {
    const { registry, ran } = wireMoney();
    const { inbox, url } = await start();
    registry.setPermissionHandler(inbox.handler({ registry }));
    const calls = registry.executeToolCalls([{ id: 'c1', name: 'wire_money', arguments: { to: 'bob' } }], {
      agent: 'a',
    });
    let record;
    while (!(record = (await inbox.store.list({ status: 'pending' }))[0])) await new Promise((r) => setImmediate(r));
    expect(record.source).toBe('registry');
    const edited = await answer(url, record.id, 'alice@example.com', { effect: 'allow', arguments: '{"to":"eve"}' });
    expect(edited.status).toBe(400);
    expect((await answer(url, record.id, 'alice@example.com', { effect: 'allow' })).status).toBe(200);
    const [result] = await calls;
    expect(result).toMatchObject({ isError: false });
    expect(ran).toEqual([{ to: 'bob' }]);
  });
});

describe('several processes over one store', () => {
  it('a run waiting in one process is answered in the inbox of another (SQLite file)', async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'toolgate-inbox-')), 'approvals.db');
    const worker = new SqliteStores({ filename: file });
    const server = new SqliteStores({ filename: file });
    cleanups.push(() => {
      worker.close();
      server.close();
    });
    const s = shop();
    const { inbox: waiting } = await start({ store: worker.approvals, nonces: worker.nonces });
    const { url } = await start({ store: server.approvals, nonces: server.nonces });
    const tracked = await waiting.runner(s.runner).track(await s.run({ order: 'A-11', amount: 300 }));
    const [record] = await server.approvals.list({ status: 'pending' });
    expect((await answer(url, record!.id, 'alice@example.com', { effect: 'allow' })).status).toBe(200);
    await waiting.sweep(); // the waiting process picks the answer up (every sweepIntervalMs when it runs)
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-11:300']);
  });

  it('two replicas over PostgreSQL: of concurrent answers in both, exactly one counts and the tool runs once', async () => {
    const schema = uniqueName('inbox');
    const a = new PostgresStores({ connectionString: PG_URL, schema });
    const b = new PostgresStores({ connectionString: PG_URL, schema });
    cleanups.push(async () => {
      await a.close();
      await b.close();
    });
    await a.migrate();
    const s = shop();
    const { inbox: one, url: urlOne } = await start({ store: a.approvals, nonces: a.nonces });
    const { url: urlTwo } = await start({ store: b.approvals, nonces: b.nonces });
    const tracked = await one.runner(s.runner).track(await s.run({ order: 'A-12', amount: 300 }));
    const [record] = await b.approvals.list({ status: 'pending' });
    const [csrfOne, csrfTwo] = [await csrfOf(urlOne, 'alice@example.com'), await csrfOf(urlTwo, 'bo@example.com')];
    const statuses = await Promise.all([
      answer(urlOne, record!.id, 'alice@example.com', { effect: 'allow' }, csrfOne).then((r) => r.status),
      answer(urlTwo, record!.id, 'bo@example.com', { effect: 'deny' }, csrfTwo).then((r) => r.status),
      answer(urlTwo, record!.id, 'bo@example.com', { effect: 'allow' }, csrfTwo).then((r) => r.status),
    ]);
    expect(statuses.filter((x) => x === 200)).toHaveLength(1);
    expect(statuses.filter((x) => x === 409)).toHaveLength(2);
    await one.sweep();
    const result = await tracked.done;
    expect(result.status).toBe('completed');
    const stored = await a.approvals.get(record!.id);
    expect(s.refunds).toEqual(stored!.answer!.effect === 'allow' ? ['A-12:300'] : []);
  });
});

describe('a route of your own', () => {
  it('inbox.ask(source) waits for the answer and returns it whole (edited arguments, approver, remember)', async () => {
    const { inbox, url } = await start();
    const now = Date.now();
    const pending = inbox.ask('gateway')({
      id: 'gw-1',
      kind: 'tool',
      binding: {
        kind: 'tool',
        owner: { kind: 'session', id: 'acme/cy' },
        agent: 'gateway',
        callId: 'c1',
        tool: 'refund',
        argsHash: 'h',
        policyVersion: null,
        expiresAt: now + 60_000,
        nonce: 'n1',
        rule: 'ask_refunds_over_100',
        pin: null,
        caller: 'cy',
        tenant: 'acme',
      },
      toolName: 'refund',
      canonical: 'refund',
      parameters: { order: 'A-13', amount: 300 },
      agent: 'gateway',
      tenant: 'acme',
      caller: 'cy',
      runId: null,
      rule: 'ask_refunds_over_100',
      reason: 'refunds over 100 need a human',
    });
    await new Promise((r) => setImmediate(r));
    const edited = '{"order":"A-13","amount":150}';
    expect((await answer(url, 'gw-1', 'alice@example.com', { effect: 'allow', arguments: edited })).status).toBe(200);
    expect(await pending).toMatchObject({
      effect: 'allow',
      approver: 'alice@example.com',
      remember: 'once',
      arguments: { order: 'A-13', amount: 150 },
    });
  });
});

describe('toolgate serve and the demo', () => {
  it('serves the inbox with approvers and four eyes from the policy file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-serve-'));
    const file = join(dir, 'policy.yaml');
    writeFileSync(
      file,
      'version: 1\nrules:\n  - name: ask_all\n    result: ask\napprovals:\n  approvers:\n    tenants:\n      acme: [alice@example.com]\n  fourEyes: true\n  timeoutSeconds: 600\n',
    );
    const served = await serveInbox(cleanups, [
      ...['--store', `sqlite:${join(dir, 'approvals.db')}`, '--policy', file],
      ...['--jwt-secret-env', 'JWT', '--sign-in', 'alice@example.com'],
    ]);
    const url = served.url!;
    expect(served.err.join('')).toMatch(
      /sign-in link for alice@example\.com \(single use\): http:\/\/127\.0\.0\.1:\d+\/link\?token=/,
    );
    const page = await fetch(`${url}/`, { headers: { authorization: `Bearer ${await bearer('alice@example.com')}` } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('Nothing is waiting');
  });

  it("reads the cards' summaries and risk from the policy file, and keeps the audit log in the store's database", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-serve-'));
    const file = join(dir, 'policy.yaml');
    const db = join(dir, 'approvals.db');
    writeFileSync(
      file,
      [
        'version: 1',
        'tools:',
        '  refund:',
        '    summary: "Refund {amount} EUR on order {order}"',
        '    risk: [{ level: high, when: { amount: { gt: 1000 } } }]',
        'rules:',
        '  - { name: ask_all, result: ask, risk: medium }',
        'approvals: { remindBeforeSeconds: 60, escalateTo: [boss@acme.example] }',
      ].join('\n'),
    );
    const url = (await serveInbox(cleanups, ['--store', `sqlite:${db}`, '--policy', file, '--jwt-secret-env', 'JWT']))
      .url!;
    const stores = new SqliteStores({ filename: db });
    cleanups.push(() => stores.close());
    const { inbox: worker } = await start({ store: stores.approvals, nonces: stores.nonces });
    const ask = worker.ask('gateway');
    const version = (await loadPolicyFile(file)).policy.version ?? null;
    const request = (id: string, amount: number) =>
      approvalRequest({
        id,
        tool: 'refund',
        tenant: 'acme',
        parameters: { order: `A-${id}`, amount },
        policyVersion: version,
      });
    void ask(request('1', 250)).catch(() => undefined);
    void ask(request('2', 5000)).catch(() => undefined);
    while ((await stores.approvals.list({ status: 'pending' })).length < 2) await new Promise((r) => setTimeout(r, 5));
    const page = await (
      await fetch(`${url}/`, { headers: { authorization: `Bearer ${await bearer('ana@acme.example')}` } })
    ).text();
    expect(page).toContain('Refund 250 EUR on order A-1');
    expect(page).toContain('class="approval pending risk-medium" id="a-1"'); // the rule's risk
    expect(page).toContain('class="approval pending risk-high" id="a-2"'); // the amount's threshold
    const answered = await answer(url, '1', 'ana@acme.example', { effect: 'deny', reason: 'no' });
    expect(answered.status).toBe(200);
    const log = await openInboxAudit(`sqlite:${db}`);
    cleanups.push(() => log.close());
    expect(await log.read({ limit: 10 })).toEqual([
      expect.objectContaining({
        type: 'approval_answered',
        approvalId: '1',
        approver: 'ana@acme.example',
        effect: 'deny',
      }),
    ]);
  });

  it('refuses to start without a secret, and is listed by toolgate --help', async () => {
    const err: string[] = [];
    expect(await runServe(['--port', '0'], { stdout: () => {}, stderr: (t) => err.push(t), env: {} })).toBe(2);
    expect(err.join('')).toContain('TOOLGATE_INBOX_SECRET');
    const out: string[] = [];
    await run(['--help'], { stdout: (t) => out.push(t), stderr: (t) => out.push(t) });
    expect(out.join('')).toMatch(/serve/);
    const help: string[] = [];
    expect(await run(['serve', '--help'], { stdout: (t) => help.push(t), stderr: (t) => help.push(t) })).toBe(0);
    expect(help.join('')).toContain('--jwks-url');
  });

  it('npm run demo -- --inbox: a sign-in link opens the inbox on the paused run, and approving finishes it', async () => {
    const lines: string[] = [];
    const demo = await inboxDemo((l) => lines.push(l));
    cleanups.push(() => demo.close());
    expect(lines.join('\n')).toContain('waits for a human');
    const token = new URL(demo.signIn).searchParams.get('token')!;
    const origin = new URL(demo.url).origin;
    const signIn = await fetch(`${demo.url}/link`, {
      method: 'POST',
      headers: { origin },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(signIn.status).toBe(303);
    const cookie = signIn.headers.get('set-cookie')!.split(';')[0]!;
    expect(signIn.headers.get('set-cookie')).toMatch(/HttpOnly/i);
    const page = await (await fetch(`${demo.url}/`, { headers: { cookie } })).text();
    expect(page).toContain('A-1042');
    const csrf = /name="csrf" value="([^"]+)"/.exec(page)![1]!;
    const id = /data-id="([^"]+)"/.exec(page)![1]!;
    const approved = await fetch(`${demo.url}/approvals/${id}/answer`, {
      method: 'POST',
      headers: { cookie, origin },
      body: new URLSearchParams({ csrf, effect: 'allow' }),
    });
    expect(approved.status).toBe(200);
    expect((await demo.done).status).toBe('completed');
    expect(demo.refunds).toEqual(['A-1042:250']);
    // The sign-in link is single use.
    const again = await fetch(`${demo.url}/link`, {
      method: 'POST',
      headers: { origin },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(again.status).toBe(410);
  });
});
