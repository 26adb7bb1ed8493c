/**
 * Issue 27's defects, each reproduced in headless Chromium as an approver meets it; each test failed before
 * its fix. Live updates after a (re)connect, the base path's own root, hidden characters in the edit box,
 * another tenant's request, `toolgate serve --jwks-url` without an audience, the `*` webhook's links, an
 * unverified email as the approver's name, the session cookie behind TLS, and two approvers at once.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { createServer as createHttpServer, request as httpRequest } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { beforeAll, describe, expect, it } from 'vitest';
import { createInbox, jwtApprover, type InboxAuditRecord } from '../../src/inbox/index.js';
import { browserPerFile, counted, open, see, signedIn, tapEvents } from './browser-fixture.js';
import {
  INBOX_SECRET,
  JWT_SECRET,
  receiver,
  serveInbox,
  shop,
  signJwt,
  startInbox,
  type InboxOptions,
} from './fixture.js';

const { browser: browserOf, cleanups } = browserPerFile();
const start = (options?: InboxOptions) => startInbox(cleanups, options);
const as = (subject: string | null, options?: Parameters<typeof signedIn>[3]) =>
  signedIn(browserOf(), cleanups, subject, options);

describe('live updates survive a (re)connect', () => {
  async function downAndUp() {
    const s = shop();
    const inbox = createInbox({
      secret: INBOX_SECRET,
      authenticate: jwtApprover({ secret: JWT_SECRET }),
      sweepIntervalMs: 0,
    });
    cleanups.push(() => inbox.close());
    let server = await inbox.listen();
    const port = Number(new URL(server.url).port);
    cleanups.push(() => server.close());
    const page = await open(await as('ana@acme.example'), server.url);
    await see(page.locator('.count')).toBe('0 waiting');
    await page.waitForTimeout(1000); // the page's stream is connected
    return {
      page,
      /** The server goes away (a restart, a proxy's idle timeout). */
      down: () => server.close(),
      up: async () => {
        server = await inbox.listen({ port });
      },
      arrive: async () => {
        await inbox.runner(s.runner).track(await s.run({ order: 'A-1', amount: 250 }));
      },
    };
  }

  it("an approval put while the stream is down shows once it reconnects (the page refreshes on the stream's ready)", async () => {
    const { page, down, up, arrive } = await downAndUp();
    await down();
    await arrive();
    await up();
    await see(page.locator('.count')).toBe('1 waiting');
    await counted(page.locator('article.approval.pending')).toBe(1);
  });

  it('the page says when the stream is down, and stops saying so once it is back', async () => {
    const { page, down, up } = await downAndUp();
    await down();
    await see(page.locator('#live-status')).toContain('reconnecting');
    await up();
    await expect.poll(() => page.locator('#live-status').isVisible(), { timeout: 10_000 }).toBe(false);
    expect(await page.locator('body').getAttribute('data-live')).toBe('on');
  });
});

describe('--base-path', () => {
  it('serves its own root, and every link the inbox makes lands on the list (sign-in, title, back, webhook)', async () => {
    const hook = await receiver();
    cleanups.push(() => hook.close());
    const s = shop();
    const { inbox, url } = await start({
      basePath: '/approvals',
      webhooks: { acme: { url: hook.url, secret: 'webhook-secret-0123456789' } },
    });
    expect(url).toMatch(/\/approvals$/);
    // Without script: the answer is a page of its own, with its "Back to the inbox" link.
    const page = await (await as(null, { javaScriptEnabled: false })).newPage();
    await page.goto(inbox.link({ approver: 'ana@acme.example' }));
    await page.getByRole('button', { name: 'Sign in' }).click();
    await see(page.locator('.count')).toBe('0 waiting');
    expect(new URL(page.url()).pathname).toBe('/approvals/');
    for (const path of ['/approvals', '/approvals/']) {
      const response = await page.goto(`${new URL(url).origin}${path}`);
      expect(response?.status()).toBe(200);
    }
    await inbox.runner(s.runner).track(await s.run({ order: 'A-2', amount: 250 }));
    await page.reload();
    await page
      .locator('article.approval.pending')
      .getByRole('button', { name: /^Approve/ })
      .first()
      .click();
    await page.getByRole('link', { name: 'Back to the inbox' }).click();
    await see(page.locator('.count')).toBe('0 waiting');
    await page.getByRole('link', { name: 'toolgate approvals' }).click();
    await see(page.locator('.count')).toBe('0 waiting');
    const payload = JSON.parse((await hook.next()).body) as { links: { open: string } };
    expect(new URL(payload.links.open).pathname).toBe('/approvals/');
    await page.goto('about:blank');
    const opened = await page.goto(payload.links.open);
    expect(opened?.status()).toBe(200);
  });

  it('toolgate serve --base-path prints an address that opens the inbox', async () => {
    const served = await serveInbox(cleanups, ['--store', 'memory', '--base-path', '/approvals', '--sign-in', 'ana']);
    const [url, out] = [served.url!, served.err];
    const printed = /toolgate inbox on (\S+)/.exec(out.join(''))![1]!;
    expect(printed).toBe(`${url}/`);
    const link = /single use\): (\S+)/.exec(out.join(''))![1]!;
    const page = await (await as(null)).newPage();
    expect((await page.goto(printed))?.status()).toBe(401); // the sign-in page, not 404
    await page.goto(link);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await see(page.locator('.count')).toBe('0 waiting');
  });
});

describe('the edit box', () => {
  it('shows bidi and zero-width characters escaped (\\u202e), and an unchanged box approves the call as asked', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const tracked = await inbox
      .runner(s.runner)
      .track(await s.run({ order: 'invoice\u202Egpj.exe', amount: 120, note: 'pay\u200Bpal' }));
    const page = await open(await as('ana@acme.example'), url);
    const card = page.locator('article.approval.pending');
    await card.getByText('Approve with edited arguments').click();
    const box = card.getByLabel('Arguments (JSON object)');
    const value = await box.inputValue();
    expect(value).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B-\u200F\u2060\uFEFF]/);
    expect(value).toContain('invoice\\u202egpj.exe');
    expect(value).toContain('pay\\u200bpal');
    await card.getByRole('button', { name: 'Review the edited call' }).click();
    await page.getByRole('button', { name: 'Approve the edited call' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['invoice\u202Egpj.exe:120']);
  });
});

describe("another tenant's request", () => {
  it('is unreadable everywhere: not streamed, not listed, 404 on /edit, on link pages and on a refused answer', async () => {
    const s = shop();
    const { inbox, url } = await start({
      approvers: { tenants: { acme: ['ana@acme.example'], globex: ['gus@globex.example'] } },
    });
    const ana = await open(await as('ana@acme.example'), url);
    const gusContext = await as('gus@globex.example');
    const gus = await open(gusContext, url);
    const anaEvents = await tapEvents(ana);
    const gusEvents = await tapEvents(gus);
    const tracked = await inbox
      .runner(s.runner)
      .track(await s.run({ order: 'A-77', amount: 900, note: 'IBAN DE89370400440532013000' }));
    const [record] = await inbox.store.list({ status: 'pending' });
    const id = record!.id;
    await expect.poll(async () => (await anaEvents()).changed.join(' '), { timeout: 10_000 }).toContain(id);
    await new Promise((r) => setTimeout(r, 300));
    expect((await gusEvents()).changed.join(' ')).not.toContain(id);
    await see(gus.locator('.count')).toBe('0 waiting');

    const origin = new URL(url).origin;
    const csrf = await gus.locator('input[name=csrf]').first().inputValue();
    const edit = await gusContext.request.post(`${url}/approvals/${encodeURIComponent(id)}/edit`, {
      form: { csrf, arguments: '{"order":"A-77","amount":1}' },
      headers: { origin },
    });
    expect(edit.status()).toBe(404);
    expect(await edit.text()).not.toContain('DE89');

    const linkPage = await (await as(null)).newPage();
    const shown = await linkPage.goto(inbox.link({ approver: 'gus@globex.example', approval: id }));
    expect(shown?.status()).toBe(404);
    expect(await linkPage.content()).not.toContain('DE89');

    await ana
      .locator('article.approval.pending')
      .getByRole('button', { name: /^Approve/ })
      .first()
      .click();
    await see(ana.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    const late = await gusContext.request.post(`${url}/approvals/${encodeURIComponent(id)}/answer`, {
      form: { csrf, effect: 'allow' },
      headers: { origin },
    });
    expect(late.status()).toBe(404);
    const text = await late.text();
    expect(text).not.toContain('ana@acme.example');
    expect(text).not.toContain('already answered');
    await gus.reload();
    expect(await gus.content()).not.toContain(id);
  });
});

describe('toolgate serve --jwks-url', () => {
  async function identityProvider() {
    const { publicKey, privateKey } = await generateKeyPair('RS256');
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
    const server = createHttpServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
    const sign = (audience: string) =>
      new SignJWT({ email: 'ana@acme.example', email_verified: true })
        .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
        .setIssuer('https://id.example')
        .setAudience(audience)
        .setSubject('ana')
        .setExpirationTime('1h')
        .sign(privateKey);
    return { jwks: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`, sign };
  }

  const serve = async (args: string[]) => {
    const served = await serveInbox(cleanups, ['--store', 'memory', ...args]);
    return { ...served, err: served.err.join('') };
  };

  it('refuses to start without --audience and --issuer; with them, a token for another application is refused', async () => {
    const idp = await identityProvider();
    const bare = await serve(['--jwks-url', idp.jwks]);
    expect(bare.code).toBe(2);
    expect(bare.err).toMatch(/--audience/);
    const noIssuer = await serve(['--jwks-url', idp.jwks, '--audience', 'inbox']);
    expect(noIssuer.code).toBe(2);
    expect(noIssuer.err).toMatch(/--issuer/);

    const strict = await serve(['--jwks-url', idp.jwks, '--issuer', 'https://id.example', '--audience', 'inbox']);
    expect(strict.url).not.toBeNull();
    const other = await (await as(null, { token: await idp.sign('another-app') })).newPage();
    expect((await other.goto(`${strict.url}/`))?.status()).toBe(401);
    const mine = await (await as(null, { token: await idp.sign('inbox') })).newPage();
    expect((await mine.goto(`${strict.url}/`))?.status()).toBe(200);
    await see(mine.locator('.who')).toContain('ana@acme.example');
  });

  it('--any-audience is explicit and warns', async () => {
    const idp = await identityProvider();
    const loose = await serve(['--jwks-url', idp.jwks, '--issuer', 'https://id.example', '--any-audience']);
    expect(loose.url).not.toBeNull();
    expect(loose.err).toMatch(/warning: .*any audience/i);
    const page = await (await as(null, { token: await idp.sign('another-app') })).newPage();
    expect((await page.goto(`${loose.url}/`))?.status()).toBe(200);
  });
});

describe('the * webhook', () => {
  it("its Approve link names the hook, not the request's tenant, and answers only where the approver rules name the hook", async () => {
    const hook = await receiver();
    cleanups.push(() => hook.close());
    const s = shop();
    const { inbox } = await start({
      approvers: { tenants: { acme: ['webhook:acme', 'ana@acme.example'] } },
      webhooks: { '*': { url: hook.url, secret: 'webhook-secret-0123456789' } },
    });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-3', amount: 400 }));
    const payload = JSON.parse((await hook.next()).body) as { links: { approve: string } };
    const token = new URL(payload.links.approve).searchParams.get('token')!;
    const claims = JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()) as { approver: string };
    expect(claims.approver).toBe('webhook:*');
    const page = await (await as(null)).newPage();
    const shown = await page.goto(payload.links.approve);
    expect(shown?.status()).toBe(404);
    await counted(page.getByRole('button', { name: /Approve/ })).toBe(0);
    const posted = await page.request.post(new URL('link', payload.links.approve.replace(/link\?.*$/, '')).href, {
      form: { token, effect: 'allow' },
      headers: { origin: new URL(payload.links.approve).origin },
    });
    expect(posted.status()).toBe(404);
    expect(s.refunds).toEqual([]);
    expect((await inbox.store.list({ status: 'pending' })).length).toBe(1);
  });
});

describe('jwtApprover with claim email', () => {
  it('refuses an unverified email whenever the claim is email, not only by default (and so does --claim email)', async () => {
    const sign = (claims: Record<string, unknown>) => signJwt(claims);
    const { url } = await start({ authenticate: jwtApprover({ secret: JWT_SECRET, claim: 'email' }) });
    const unverified = await (await as(null, { token: await sign({ email: 'ana@acme.example' }) })).newPage();
    expect((await unverified.goto(`${url}/`))?.status()).toBe(401);
    const verified = await (
      await as(null, { token: await sign({ email: 'ana@acme.example', email_verified: true }) })
    ).newPage();
    expect((await verified.goto(`${url}/`))?.status()).toBe(200);

    const served = await serveInbox(cleanups, ['--store', 'memory', '--jwt-secret-env', 'JWT', '--claim', 'email']);
    expect((await unverified.goto(`${served.url}/`))?.status()).toBe(401);
  });
});

describe('the session cookie behind a TLS proxy', () => {
  let tls: { key: string; cert: string };
  beforeAll(() => {
    const dir = mkdtempSync(join(tmpdir(), 'toolgate-tls-'));
    execFileSync(
      'openssl',
      ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1'].concat([
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem'),
      ]),
      { stdio: 'ignore' },
    );
    tls = { key: readFileSync(join(dir, 'key.pem'), 'utf8'), cert: readFileSync(join(dir, 'cert.pem'), 'utf8') };
  });

  it('is Secure whenever the public URL is https', async () => {
    let target = 0;
    const proxy: HttpsServer = createHttpsServer(tls, (req, res) => {
      const upstream = httpRequest(
        { host: '127.0.0.1', port: target, path: req.url, method: req.method, headers: req.headers },
        (up) => {
          res.writeHead(up.statusCode ?? 502, up.headers);
          up.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    cleanups.push(
      () =>
        new Promise<void>((r) => {
          proxy.closeAllConnections();
          proxy.close(() => r());
        }),
    );
    const publicUrl = `https://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    const { inbox, url } = await start({ publicUrl });
    target = Number(new URL(url).port);
    const page = await (await as(null, { ignoreHTTPSErrors: true })).newPage();
    const link = inbox.link({ approver: 'ana@acme.example' });
    expect(link.startsWith(publicUrl)).toBe(true);
    await page.goto(link);
    const signIn = page.waitForResponse((r) => r.request().method() === 'POST' && r.url().includes('/link'));
    await page.getByRole('button', { name: 'Sign in' }).click();
    const cookie = (await (await signIn).headerValue('set-cookie')) ?? '';
    expect(cookie).toMatch(/toolgate_inbox=/);
    expect(cookie).toMatch(/;\s*Secure/i);
    await see(page.locator('.count')).toBe('0 waiting');
  });
});

describe('two approvers answering at once', () => {
  it('approval_answered is written once, for the answer the store accepted; the other is approval_answer_refused', async () => {
    const s = shop();
    const audits: InboxAuditRecord[] = [];
    // An audit store that takes a moment to write (a remote one): both answers are in flight together.
    const { inbox, url } = await start({
      audit: { write: (r) => new Promise<void>((done) => setTimeout(() => (audits.push(r), done()), 250)) },
    });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-4', amount: 300 }));
    // Plain forms (no script): neither page's live update takes the other's button away before its click.
    const ana = await open(await as('ana@acme.example', { javaScriptEnabled: false }), url);
    const bo = await open(await as('bo@acme.example', { javaScriptEnabled: false }), url);
    const approve = (page: typeof ana) =>
      page
        .locator('article.approval.pending')
        .getByRole('button', { name: /^Approve/ })
        .first()
        .click();
    await counted(ana.locator('article.approval.pending')).toBe(1);
    await counted(bo.locator('article.approval.pending')).toBe(1);
    await Promise.all([approve(ana), approve(bo)]);
    const answers = () => audits.filter((a) => a.type !== 'approval_outcome');
    await expect.poll(() => answers().length, { timeout: 10_000 }).toBe(2);
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-4:300']);
    const answered = audits.filter((a) => a.type === 'approval_answered');
    expect(answered).toHaveLength(1);
    const stored = await inbox.store.get(answered[0]!.approvalId);
    expect(answered[0]!.approver).toBe(stored!.answer!.approver);
    expect(audits.filter((a) => a.type === 'approval_answer_refused')).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 400));
    expect(answers()).toHaveLength(2);
  });
});
