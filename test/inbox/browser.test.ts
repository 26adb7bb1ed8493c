/**
 * The inbox end to end in headless Chromium (Debian's /usr/bin/chromium through playwright-core): a paused
 * AgentRunner run is answered in the browser and the run completes with the tool executed once.
 */
import { mkdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { webhookSignature, type InboxAuditRecord } from '../../src/inbox/index.js';
import { browserPerFile, counted, open, see, signedIn as signedInTo } from './browser-fixture.js';
import { bearer, receiver, shop, startInbox, type InboxOptions } from './fixture.js';

const { browser, cleanups } = browserPerFile();

const start = (options?: InboxOptions) => startInbox(cleanups, options);

const signedIn = (subject: string, viewport = { width: 1100, height: 900 }) =>
  signedInTo(browser(), cleanups, subject, { viewport });

describe('the inbox in a browser', () => {
  it('shows a paused run, approves it, and the run completes with the tool executed once; a second click and a second tab run nothing more', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const runs = inbox.runner(s.runner, { registry: s.registry });
    const context = await signedIn('alice@example.com');
    const page = await open(context, url);
    await see(page.locator('.count')).toBe('0 waiting');

    // Live: the approval appears in the open page without a reload (server-sent events).
    const tracked = await runs.track(await s.run({ order: 'A-1042', amount: 250 }));
    const card = page.locator('article.approval.pending');
    await card.waitFor();
    // The card leads with what is decided (issue 27): the summary, then the tool it runs.
    await see(card.locator('h2')).toBe('refund · order A-1042 · amount 250');
    await see(card.locator('.tool strong')).toBe('refund');
    await see(card).toContain('refunds over 100 need a human');
    await see(card).toContain('ask_refunds_over_100');
    await see(card).toContain('acme');
    await see(card).toContain('cy');
    await card.locator('details.json summary').click(); // the JSON is on demand beside the table
    await see(card.locator('.args')).toContain('"amount": 250');
    await card.locator('details.trace summary').click();
    await see(card.locator('details.trace')).toContain('deny_huge_refunds');

    // A second tab that shows the form as it was (no script, so no live update removes the button).
    const stale = await browser().newContext({
      extraHTTPHeaders: { authorization: `Bearer ${await bearer('alice@example.com')}` },
      javaScriptEnabled: false,
    });
    cleanups.push(() => stale.close());
    const secondTab = await open(stale, url);
    await secondTab.locator('article.approval.pending').waitFor();

    const [record] = await inbox.store.list({ status: 'pending' });
    await card.getByRole('button', { name: 'Approve refund', exact: true }).click();
    await see(page.getByRole('status')).toContain('Approved');
    const result = await tracked.done;
    expect(result.status).toBe('completed');
    expect(s.refunds).toEqual(['A-1042:250']);

    // The same form posted again (a second click that got through) and the stale second tab: refused.
    const csrf = await secondTab.locator('input[name=csrf]').first().inputValue();
    const again = await context.request.post(`${url}/approvals/${encodeURIComponent(record!.id)}/answer`, {
      form: { effect: 'allow', csrf },
      headers: { origin: new URL(url).origin },
    });
    expect(again.status()).toBe(409);
    await secondTab.getByRole('button', { name: 'Approve refund', exact: true }).click();
    await see(secondTab.getByRole('alert')).toContain('already answered');
    expect(s.refunds).toEqual(['A-1042:250']);

    // The answered approval shows who answered and what the gate did.
    await page.goto(`${url}/`);
    const done = page.locator('article.approval.answered');
    await see(done).toContain('Approved by alice@example.com');
    await see(done.locator('.outcome')).toContain('ran');
  });

  it('a deny reaches the model with its reason', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const runs = inbox.runner(s.runner);
    const tracked = await runs.track(await s.run({ order: 'A-7', amount: 300 }));
    const page = await open(await signedIn('alice@example.com'), url);
    const card = page.locator('article.approval.pending');
    await card.getByLabel(/Reason/).fill('the customer already got a voucher');
    await card.getByRole('button', { name: 'Deny' }).click();
    await see(page.getByRole('status')).toContain('Denied');
    const result = await tracked.done;
    expect(result.status).toBe('completed');
    expect(s.refunds).toEqual([]);
    expect(s.lastToolMessage()).toContain('the customer already got a voucher');
    expect(s.lastToolMessage()).toMatch(/refused/i);
  });

  it('edited arguments are shown as a diff and pass the whole gate again: a rule that forbids them refuses the call', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const runs = inbox.runner(s.runner);
    const tracked = await runs.track(await s.run({ order: 'A-9', amount: 200 }));
    const page = await open(await signedIn('alice@example.com'), url);
    const card = page.locator('article.approval.pending');
    await card.getByText('Approve with edited arguments').click();
    await card.getByLabel('Arguments (JSON object)').fill('{"order": "A-9", "amount": 5000}');
    await card.getByRole('button', { name: 'Review the edited call' }).click();
    await see(page.locator('.diff del')).toContain('"amount": 200');
    await see(page.locator('.diff ins')).toContain('"amount": 5000');
    await page.getByRole('button', { name: 'Approve the edited call' }).click();
    await see(page.getByRole('status')).toContain('Approved with edited arguments');
    const result = await tracked.done;
    expect(result.status).toBe('completed');
    expect(s.refunds).toEqual([]);
    expect(s.lastToolMessage()).toContain('deny_huge_refunds');
    await page.goto(`${url}/`);
    await see(page.locator('article.approval.answered .outcome')).toContain('refused');
  });

  it('edited arguments the policy allows run once, with the edits', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-10', amount: 200 }));
    const page = await open(await signedIn('alice@example.com'), url);
    const card = page.locator('article.approval.pending');
    await card.getByText('Approve with edited arguments').click();
    await card.getByLabel('Arguments (JSON object)').fill('{"order": "A-10", "amount": 150}');
    await card.getByRole('button', { name: 'Review the edited call' }).click();
    await page.getByRole('button', { name: 'Approve the edited call' }).click();
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-10:150']);
  });

  it('shows HTML and bidi overrides in arguments inert and visible (and takes the screenshot for the docs)', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const runs = inbox.runner(s.runner, { registry: s.registry });
    await runs.track(await s.run({ order: 'A-1042', amount: 250, note: 'customer called twice' }, 'cy', 'run-2f9c41'));
    const evil = '<img src=x onerror="window.__pwned=1">';
    // A second runner: one inbox can follow several.
    const t = shop();
    await inbox
      .runner(t.runner, { registry: t.registry })
      .track(await t.run({ order: `invoice\u202Egpj.exe`, amount: 120, note: `${evil}\u200Bok` }, 'dee', 'run-8b07d3'));
    const context = await signedIn('alice@example.com');
    const page = await context.newPage();
    const pwned: string[] = [];
    page.on('dialog', (d) => {
      pwned.push(d.message());
      void d.dismiss();
    });
    const response = await page.goto(`${url}/`);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    const cards = page.locator('article.approval.pending');
    await counted(cards).toBe(2);
    const bad = cards.filter({ hasText: 'dee' });
    await bad.locator('details.json summary').click();
    await see(bad.locator('.args')).toContain(evil.replace(/"/g, '\\"'));
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
    await see(bad.locator('mark.hidden-char').first()).toBe('⟦U+202E⟧');
    await see(bad.locator('.args mark.hidden-char[title*="ZERO WIDTH SPACE"]')).toBe('⟦U+200B⟧');
    await see(bad.locator('.warn').first()).toContain('hidden or direction-changing characters');
    // No bidi control reaches the page's text: what is read is what is stored, in order.
    expect(await bad.locator('.args').innerText()).not.toMatch(/[\u202A-\u202E\u2066-\u2069\u200B]/);
    expect(pwned).toEqual([]);
    mkdirSync('docs', { recursive: true });
    await page.screenshot({ path: 'docs/inbox.png', fullPage: true });
  });

  it('a signed link answers once: a replayed link executes nothing more', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-3', amount: 400 }));
    const [record] = await inbox.store.list({ status: 'pending' });
    const link = inbox.link({ approver: 'bob@example.com', approval: record!.id, effect: 'allow' });
    expect(link.startsWith(url)).toBe(true);
    const context = await browser().newContext(); // no bearer: the link is the credential
    context.setDefaultTimeout(8000);
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(link);
    await page.locator('article.approval details.json summary').click();
    await see(page.locator('article.approval .args')).toContain('"amount": 400');
    await counted(page.getByRole('button', { name: 'Deny' })).toBe(0);
    await page.getByRole('button', { name: 'Approve' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-3:400']);

    const replay = await context.newPage();
    await replay.goto(link);
    await see(replay.locator('form.answer')).toContain('no longer waiting');
    await counted(replay.getByRole('button', { name: 'Approve' })).toBe(0);
    const token = new URL(link).searchParams.get('token')!;
    const direct = await context.request.post(`${url}/link`, { form: { token, effect: 'allow' } });
    expect(direct.status()).toBe(410);
    expect(s.refunds).toEqual(['A-3:400']);

    // A forged link (another approval id under the same MAC) is refused.
    const [body, mac] = token.split('.');
    const claims = JSON.parse(Buffer.from(body!, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${Buffer.from(JSON.stringify({ ...claims, nonce: 'other' })).toString('base64url')}.${mac}`;
    const refused = await context.request.post(`${url}/link`, { form: { token: forged, effect: 'allow' } });
    expect(refused.status()).toBe(403);
  });

  it('notifies a webhook with a correctly signed payload, retrying after a failure, and a Slack message with approve / deny links', async () => {
    const hook = await receiver([500]);
    const slack = await receiver();
    cleanups.push(
      () => hook.close(),
      () => slack.close(),
    );
    const s = shop();
    const { inbox } = await start({
      webhooks: {
        acme: [
          { url: hook.url, secret: 'webhook-secret-0123456789' },
          { url: slack.url, secret: 'slack-secret-0123456789ab', format: 'slack', approver: 'ops-channel' },
        ],
      },
      retryDelaysMs: [10, 10],
    });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-5', amount: 500 }));
    const got = await hook.next();
    const [t, v1] = String(got.headers['x-toolgate-signature']).split(',');
    const timestamp = Number(t!.slice(2));
    expect(`${t},${v1}`).toBe(webhookSignature('webhook-secret-0123456789', timestamp, got.body));
    expect(webhookSignature('another-secret-0123456789', timestamp, got.body)).not.toBe(`${t},${v1}`);
    const payload = JSON.parse(got.body) as {
      type: string;
      approval: { tool: string; parameters: unknown; tenant: string; caller: string };
      links: { approve: string; deny: string };
    };
    expect(payload.type).toBe('approval.requested');
    expect(payload.approval).toMatchObject({
      tool: 'refund',
      parameters: { order: 'A-5', amount: 500 },
      tenant: 'acme',
      caller: 'cy',
    });
    const reports = await inbox.flush();
    expect(reports.find((r) => r.url === hook.url)).toMatchObject({ ok: true, attempts: 2 });

    const message = JSON.parse((await slack.next()).body) as {
      text: string;
      blocks: { type: string; elements?: { url: string; text: { text: string } }[] }[];
    };
    expect(message.text).toContain('refund');
    const buttons = message.blocks.find((b) => b.type === 'actions')!.elements!;
    expect(buttons.map((b) => b.text.text)).toEqual(['Approve', 'Deny', 'Open the inbox']);
    // The Slack deny link works (as the channel's approver) and the run is told.
    const context = await browser().newContext();
    cleanups.push(() => context.close());
    const page = await context.newPage();
    await page.goto(buttons[1]!.url);
    await page.getByLabel(/Reason/).fill('not today');
    await page.getByRole('button', { name: 'Deny' }).click();
    await see(page.getByRole('status')).toContain('Denied');
  });

  it('refuses an approver who is not named, the requester under four eyes, and a form without the CSRF token', async () => {
    const s = shop();
    const audits: InboxAuditRecord[] = [];
    const { inbox, url } = await start({
      approvers: { tenants: { acme: ['alice@example.com', 'cy'] }, fourEyes: true },
      audit: { write: (r) => void audits.push(r) },
    });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-6', amount: 600 }, 'cy'));
    // The requester sees their own request but may not answer it (four eyes): the card says so, without
    // buttons, and a post of theirs is refused.
    const cyContext = await signedIn('cy');
    const cy = await open(cyContext, url);
    await see(cy.locator('article.approval.pending .cannot')).toContain('four eyes');
    await counted(cy.locator('article.approval.pending button.allow')).toBe(0);
    const [asked] = await inbox.store.list({ status: 'pending' });
    const own = await cyContext.request.post(`${url}/approvals/${encodeURIComponent(asked!.id)}/answer`, {
      form: { effect: 'allow', csrf: await cy.locator('input[name=csrf]').first().inputValue() },
      headers: { origin: new URL(url).origin },
    });
    expect(own.status()).toBe(403);
    expect(await own.text()).toContain('four eyes');
    // Someone not named for the tenant does not even see it, and a post of theirs is refused.
    const mallory = await signedIn('mallory@example.com');
    const malloryPage = await open(mallory, url);
    await see(malloryPage.locator('.count')).toBe('0 waiting');
    const [record] = await inbox.store.list({ status: 'pending' });
    const denied = await mallory.request.post(`${url}/approvals/${encodeURIComponent(record!.id)}/answer`, {
      form: {
        effect: 'allow',
        csrf: await malloryPage
          .locator('input[name=csrf]')
          .first()
          .inputValue()
          .catch(() => ''),
      },
      headers: { origin: new URL(url).origin },
    });
    // To them it does not exist (issue 21 item 5: a 404 that says nothing about it, not a 403).
    expect(denied.status()).toBe(404);
    expect(await denied.text()).not.toContain('A-6');
    const alice = await signedIn('alice@example.com');
    const noToken = await alice.request.post(`${url}/approvals/${encodeURIComponent(record!.id)}/answer`, {
      form: { effect: 'allow' },
    });
    expect(noToken.status()).toBe(403);
    const page = await open(alice, url);
    const csrf = await page.locator('input[name=csrf]').first().inputValue();
    const crossSite = await alice.request.post(`${url}/approvals/${encodeURIComponent(record!.id)}/answer`, {
      form: { effect: 'allow', csrf },
      headers: { origin: 'http://evil.example' },
    });
    expect(crossSite.status()).toBe(403);
    expect(s.refunds).toEqual([]);
    // Keyboard only: tab to Approve and press Enter.
    const approve = page
      .locator('article.approval.pending')
      .getByRole('button', { name: 'Approve refund', exact: true });
    for (let i = 0; i < 40 && !(await approve.evaluate((b) => b.matches(':focus'))); i++)
      await page.keyboard.press('Tab');
    await page.keyboard.press('Enter');
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-6:600']);
    expect(audits.filter((a) => a.type === 'approval_answered')).toEqual([
      expect.objectContaining({ approver: 'alice@example.com', effect: 'allow', via: 'bearer', tool: 'refund' }),
    ]);
    expect(audits.filter((a) => a.type === 'approval_answer_refused').map((a) => a.approver)).toEqual(
      expect.arrayContaining(['mallory@example.com', 'cy']),
    );
  });

  it('is readable on a phone: no horizontal scrolling, labelled controls', async () => {
    const s = shop();
    const { inbox, url } = await start();
    await inbox
      .runner(s.runner)
      .track(await s.run({ order: 'A-1042-with-a-rather-long-order-reference', amount: 250 }));
    const page = await open(await signedIn('alice@example.com', { width: 375, height: 740 }), url);
    await page.locator('article.approval.pending').waitFor();
    const widths = await page.evaluate<number[]>('[document.documentElement.scrollWidth, window.innerWidth]');
    expect(widths[0]).toBeLessThanOrEqual(widths[1]!);
    for (const label of ['this call only', 'for this run', 'for this session', /Reason/])
      await counted(page.getByLabel(label)).toBe(1);
  });
});
