/**
 * The inbox as an operations team uses it (issue 27's expectations), in headless Chromium: what is decided
 * at a glance (summary, risk, the canonical name, the buttons above the fold on a phone), answering in
 * place, a live list and tab title, expiry, filters and search, reminders and escalation, and
 * accessibility. The "Answered" history across a restart is in browser-history.test.ts. These tests take
 * the docs' screenshots (list, card, phone).
 */
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import type { InboxAuditRecord } from '../../src/inbox/index.js';
import { parsePolicy } from '../../src/policy-file/index.js';
import { policyCards } from '../../src/policy-file/load.js';
import type { Answer } from '../../src/stores/types.js';
import { browserPerFile, counted, open, see, signedIn } from './browser-fixture.js';
import { approvalRequest, receiver, shop, startInbox, type InboxOptions } from './fixture.js';

const { browser: browserOf, cleanups } = browserPerFile();
const start = (options?: InboxOptions) => startInbox(cleanups, options);
const as = (subject: string | null, options?: Parameters<typeof signedIn>[3]) =>
  signedIn(browserOf(), cleanups, subject, options);

const POLICY = `version: 1
tools:
  refund:
    summary: "Refund {amount} EUR on order {order}"
    risk:
      - { level: medium, when: { amount: { gt: 200 } } }
      - { level: high, when: { amount: { gt: 500 } } }
  wire_money:
    summary: "Wire {amount} {currency} to {iban}"
rules:
  - { name: ask_refunds_over_100, tools: [refund], result: ask, risk: low }
  - { name: ask_wires, tools: [wire_money], result: ask, risk: high }
`;

function cards() {
  const parsed = parsePolicy(POLICY);
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  return policyCards(parsed.policy.data);
}

let seq = 0;
/** An approval put through `inbox.ask` (the gateway's route), as any route of your own would. */
function ask(
  inbox: Awaited<ReturnType<typeof start>>['inbox'],
  request: {
    tool: string;
    canonical?: string;
    tenant: string;
    caller?: string;
    agent?: string;
    rule?: string;
    params: Record<string, unknown>;
    ttlMs?: number;
  },
): { id: string; answer: Promise<Answer> } {
  const id = `ops-${++seq}`;
  const canonical = request.canonical ?? request.tool;
  const rule = request.rule ?? (canonical === 'refund' ? 'ask_refunds_over_100' : 'ask_wires');
  const { params, ...rest } = request;
  const answer = inbox.ask('gateway', { ttlMs: request.ttlMs ?? 600_000 })(
    approvalRequest({ ...rest, id, canonical, rule, parameters: params }),
  );
  answer.catch(() => undefined);
  return { id, answer };
}

async function waitFor(inbox: Awaited<ReturnType<typeof start>>['inbox'], n: number): Promise<void> {
  await expect.poll(async () => (await inbox.store.list({ status: 'pending' })).length).toBe(n);
}

/** The little of the DOM these tests read in the page (the tests are compiled without the DOM library). */
interface Node {
  readonly parentElement: Node | null;
  readonly style: { color: string };
  appendChild(node: Node): void;
}
interface Dom {
  getComputedStyle(node: unknown): {
    color: string;
    backgroundColor: string;
    outlineStyle: string;
    outlineWidth: string;
  };
  document: { body: Node; querySelector(selector: string): Node | null; createElement(tag: string): Node };
}

/** WCAG contrast of an element's text against the first opaque background behind it. */
async function contrastOf(page: Page, selector: string): Promise<number> {
  return page
    .locator(selector)
    .first()
    .evaluate((el) => {
      const rgb = (c: string) => (c.match(/[\d.]+/g) ?? []).map(Number);
      const lum = ([r, g, b]: number[]) => {
        const f = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
        return 0.2126 * f(r!) + 0.7152 * f(g!) + 0.0722 * f(b!);
      };
      const css = (globalThis as unknown as Dom).getComputedStyle;
      let bg: number[] = [255, 255, 255];
      for (let n: Node | null = el as unknown as Node; n; n = n.parentElement) {
        const c = rgb(css(n).backgroundColor);
        if (c.length === 3 || (c.length === 4 && c[3]! > 0.5)) {
          bg = c.slice(0, 3);
          break;
        }
      }
      const fg = rgb(css(el).color).slice(0, 3);
      const [a, b] = [lum(fg), lum(bg)].sort((x, y) => y - x);
      return (a! + 0.05) / (b! + 0.05);
    });
}

describe('what is decided, first', () => {
  it('on a 375 px phone the summary and the buttons are above the fold (and the phone screenshot)', async () => {
    const s = shop();
    const { inbox, url } = await start({ cards: cards() });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-1042', amount: 250, note: 'customer called twice' }));
    const page = await open(await as('ana@acme.example', { viewport: { width: 375, height: 667 } }), url);
    const card = page.locator('article.approval.pending');
    await see(card.locator('h2')).toBe('Refund 250 EUR on order A-1042');
    await see(card.locator('button.allow')).toBe('Approve refund');
    for (const part of [card.locator('h2'), card.locator('button.allow'), card.locator('button.deny')]) {
      const box = (await part.boundingBox())!;
      expect(box.y + box.height).toBeLessThanOrEqual(667);
      expect(box.x + box.width).toBeLessThanOrEqual(375);
    }
    const widths = await page.evaluate<number[]>('[document.documentElement.scrollWidth, window.innerWidth]');
    expect(widths[0]).toBeLessThanOrEqual(widths[1]!);
    await page.screenshot({ path: 'docs/inbox-phone.png' });
  });

  it('labels a high-risk card, shows the canonical name beside the name asked, and warns of hidden characters in the summary (the card screenshot)', async () => {
    const { inbox, url } = await start({ cards: cards() });
    const wire = ask(inbox, {
      tool: 'Wire_Money',
      canonical: 'wire_money',
      tenant: 'acme',
      params: { amount: 9800, currency: 'EUR', iban: 'DE89 3704 0044 0532 0130 00', memo: 'invoice 7' },
    });
    const small = ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-1', amount: 120 } });
    const tricky = ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-2\u202E<b>x</b>', amount: 900 } });
    await waitFor(inbox, 3);
    const page = await open(await as('ana@acme.example'), url);
    const high = page.locator(`#a-${wire.id}`);
    await see(high.locator('.risk')).toContain('High risk');
    expect(await high.getAttribute('class')).toContain('risk-high');
    await see(high.locator('h2')).toBe('Wire 9800 EUR to DE89 3704 0044 0532 0130 00');
    await see(high.locator('.tool')).toBe('Asked as Wire_Money · runs wire_money');
    await see(high.locator('button.allow')).toBe('Approve wire_money');
    await see(page.locator(`#a-${small.id} .risk`)).toContain('Low risk');
    // The template's values are escaped: markup from the arguments stays text, a bidi override is marked.
    const bad = page.locator(`#a-${tricky.id}`);
    await see(bad.locator('.risk')).toContain('High risk'); // the amount's threshold over the rule's low
    await see(bad.locator('h2')).toContain('<b>x</b>');
    expect(await bad.locator('h2 b').count()).toBe(0);
    await see(bad.locator('h2 mark.hidden-char')).toBe('⟦U+202E⟧');
    await see(bad.locator('.warn').first()).toContain('tool name or summary');
    await high.screenshot({ path: 'docs/inbox-card.png' });
  });
});

describe('answer in place', () => {
  it('approves without leaving the list: the list updates, the audit is written once, a deny is not in the success colour, remembering for the session asks first', async () => {
    const s = shop();
    const audits: InboxAuditRecord[] = [];
    const { inbox, url } = await start({ cards: cards(), audit: { write: (r) => void audits.push(r) } });
    const runs = inbox.runner(s.runner);
    const first = await runs.track(await s.run({ order: 'A-1', amount: 250 }, 'cy', 'run-1'));
    const second = await runs.track(await s.run({ order: 'A-2', amount: 300 }, 'dee', 'run-2'));
    const page = await open(await as('ana@acme.example'), url);
    await page.evaluate(() => ((globalThis as { __stay?: number }).__stay = 1));
    await counted(page.locator('article.approval.pending')).toBe(2);
    await expect.poll(() => page.title()).toBe('Approvals (2) · toolgate');

    const one = page.locator('article.approval.pending').filter({ hasText: 'A-1' });
    await one.getByRole('button', { name: 'Approve refund' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await first.done).status).toBe('completed');
    await counted(page.locator('article.approval.pending')).toBe(1);
    await see(page.locator('article.approval.answered')).toContain('Approved by ana@acme.example');
    await see(page.locator('.count')).toBe('1 waiting');
    await expect.poll(() => page.title()).toBe('Approvals (1) · toolgate');
    expect(await page.evaluate(() => (globalThis as { __stay?: number }).__stay)).toBe(1); // no page load
    expect(audits.filter((a) => a.type === 'approval_answered')).toHaveLength(1);

    // Remember for the session: a confirmation naming what it lets through comes first.
    const two = page.locator('article.approval.pending');
    await two.getByLabel('for this session').check();
    await two.getByRole('button', { name: 'Approve refund' }).click();
    const confirm = two.locator('.confirm-session');
    await see(confirm).toContain('Every later call of refund with these same arguments by dee');
    await confirm.getByRole('button', { name: 'Cancel' }).click();
    await two.getByLabel('this call only').check();
    // Deny in place: the outcome is not shown in the success colour.
    await two.getByLabel(/Reason/).fill('duplicate order');
    await two.getByRole('button', { name: 'Deny' }).click();
    await see(page.getByRole('status')).toContain('Denied');
    const colours = await page.evaluate(() => {
      const { document, getComputedStyle } = globalThis as unknown as Dom;
      const flash = document.querySelector('#flash h2')!;
      const probe = document.createElement('span');
      probe.style.color = 'var(--ok)';
      document.body.appendChild(probe);
      return [getComputedStyle(flash).color, getComputedStyle(probe).color];
    });
    expect(colours[0]).not.toBe(colours[1]);
    expect((await second.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-1:250']);
    await see(page.locator('.count')).toBe('0 waiting');
    expect(audits.filter((a) => a.type === 'approval_answered')).toHaveLength(2);
  });

  it('remembers for the session once confirmed', async () => {
    const s = shop();
    const { inbox, url } = await start();
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-9', amount: 300 }));
    const page = await open(await as('ana@acme.example'), url);
    const card = page.locator('article.approval.pending');
    await card.getByLabel('for this session').check();
    await card.getByRole('button', { name: 'Approve refund' }).click();
    await card.getByRole('button', { name: 'Yes, remember for the session' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    expect((await s.run({ order: 'A-9', amount: 300 })).status).toBe('completed'); // not asked again
  });
});

describe('a live list', () => {
  it('new approvals appear, the tab title counts them, the live region announces a summary; deadlines are absolute too', async () => {
    const { inbox, url } = await start({ cards: cards() });
    const page = await open(await as('ana@acme.example'), url);
    await expect.poll(() => page.locator('body').getAttribute('data-live')).toBe('on');
    const first = ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-5', amount: 150 } });
    await counted(page.locator('article.approval.pending')).toBe(1);
    await expect.poll(() => page.title()).toBe('Approvals (1) · toolgate');
    await see(page.locator('#announce')).toBe('1 new approval: Refund 150 EUR on order A-5');
    ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-6', amount: 160 } });
    ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-7', amount: 170 } });
    await counted(page.locator('article.approval.pending')).toBe(3);
    await expect.poll(() => page.title()).toBe('Approvals (3) · toolgate');
    await see(page.locator('#announce')).toMatch(/^[23] new approvals$/);
    // The live region says what is new, not the whole list.
    expect((await page.locator('#announce').innerText()).length).toBeLessThan(80);
    const record = await inbox.store.get(first.id);
    const deadline = page.locator(`#a-${first.id} time.deadline`);
    expect(await deadline.getAttribute('datetime')).toBe(new Date(record!.expiresAt).toISOString());
    await see(deadline).toMatch(/\d{1,2}:\d{2}/);
  });

  it('a card that expires while open turns expired and loses its buttons', async () => {
    // The page's clock and the inbox's are the test's: a minute passes in both without waiting for it. (With
    // the inbox's real clock, any refresh landing after the fast-forward — a new approval, or the one the event
    // stream's `ready` asks for, late on a loaded machine — brought the card back from the inbox as pending and
    // the page's skew back to the real time: the card did not expire for a real minute; the A-9 below forces it.)
    let passed = 0;
    const { inbox, url } = await start({ now: () => Date.now() + passed });
    ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-8', amount: 150 }, ttlMs: 60_000 });
    const page = await (await as('ana@acme.example')).newPage();
    await page.clock.install({ time: Date.now() });
    await page.goto(`${url}/`);
    const card = page.locator('article.approval', { hasText: 'A-8' });
    await counted(card.locator('button.allow')).toBe(1);
    await see(card.locator('.countdown')).toMatch(/^in (1 min|\d+ s)$/);
    passed = 61_000;
    await page.clock.fastForward(61_000);
    // A refresh after the minute (a new approval arrives): the list from the inbox keeps the card expired.
    ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-9', amount: 20 }, ttlMs: 600_000 });
    await counted(page.locator('article.approval', { hasText: 'A-9' }).locator('button.allow')).toBe(1);
    await expect.poll(() => card.getAttribute('class'), { timeout: 10_000 }).toContain('expired');
    await counted(card.locator('button')).toBe(0);
    await see(card.locator('.state')).toContain('Expired');
    await expect.poll(() => page.title()).toBe('Approvals (1) · toolgate');
  });
});

describe('find and filter', () => {
  it('filters by tenant, tool, caller, risk and age, searches, sorts by deadline, and has a compact view (the list screenshot)', async () => {
    const { inbox, url } = await start({ cards: cards() });
    const a = ask(inbox, {
      tool: 'refund',
      tenant: 'acme',
      caller: 'cy',
      params: { order: 'A-1', amount: 150 },
      ttlMs: 900_000,
    });
    const b = ask(inbox, {
      tool: 'refund',
      tenant: 'globex',
      caller: 'gil',
      params: { order: 'G-7', amount: 700 },
      ttlMs: 300_000,
    });
    const c = ask(inbox, {
      tool: 'wire_money',
      tenant: 'globex',
      caller: 'gil',
      params: { amount: 9800, currency: 'EUR', iban: 'DE89 3704 0044 0532 0130 00' },
      ttlMs: 600_000,
    });
    await waitFor(inbox, 3);
    const page = await open(await as('ana@acme.example'), url);
    const cardsOnPage = page.locator('article.approval.pending');
    await counted(cardsOnPage).toBe(3);
    const ids = async () => cardsOnPage.evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));

    await page.getByText('Filter, search and sort').click();
    await page.getByLabel('Tenant').selectOption('globex');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(ids).toEqual([b.id, c.id]);
    await see(page.locator('.count')).toBe('2 of 3 waiting');
    await page.getByLabel('Tool').selectOption('refund');
    await page.getByRole('button', { name: 'Apply' }).click();
    await expect.poll(ids).toEqual([b.id]);

    await page.goto(`${url}/?q=${encodeURIComponent('DE89 3704')}`);
    await expect.poll(ids).toEqual([c.id]);
    await page.goto(`${url}/?risk=high`);
    await expect.poll(ids).toEqual([b.id, c.id]);
    await page.goto(`${url}/?caller=cy`);
    await expect.poll(ids).toEqual([a.id]);
    await page.goto(`${url}/?age=5`);
    await expect.poll(ids).toEqual([]);
    await see(page.locator('.empty')).toContain('Nothing waiting matches these filters');

    await page.goto(`${url}/?sort=deadline`);
    await expect.poll(ids).toEqual([b.id, c.id, a.id]);
    await page.goto(`${url}/?sort=deadline&view=compact`);
    await expect.poll(ids).toEqual([b.id, c.id, a.id]);
    expect(await page.locator('#approvals').getAttribute('class')).toContain('compact');
    await expect.poll(() => page.locator(`#a-${a.id} dl.facts`).isVisible()).toBe(false);
    await expect.poll(() => page.locator(`#a-${a.id} button.allow`).isVisible()).toBe(true);
    // The filters stay as chosen while the list updates live.
    ask(inbox, { tool: 'refund', tenant: 'acme', params: { order: 'A-3', amount: 120 }, ttlMs: 100_000 });
    await counted(cardsOnPage).toBe(4);
    expect((await ids())[0]).not.toBe(a.id);
    await page.getByText('Filter, search and sort').click();
    await page.screenshot({ path: 'docs/inbox-list.png', fullPage: true });
  });
});

describe('reminders before expiry', () => {
  it('a reminder goes to the webhook before the request expires, once, and escalates to a second approver who may then answer', async () => {
    const slack = await receiver();
    cleanups.push(() => slack.close());
    const s = shop();
    let offset = 0; // the inbox's clock, moved on instead of waiting a minute
    const { inbox, url } = await start({
      approvers: { tenants: { acme: ['ana@acme.example'] } },
      webhooks: { acme: { url: slack.url, secret: 'slack-secret-0123456789ab', format: 'slack' } },
      reminders: { beforeExpiryMs: 60_000, escalateTo: ['boss@acme.example'] },
      ttlMs: 120_000,
      now: () => Date.now() + offset,
    });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-4', amount: 400 }));
    const requested = JSON.parse((await slack.next()).body) as { text: string };
    expect(requested.text).toMatch(/^Approval needed/);
    // Before the reminder is due, the escalation approver does not see the request, and nothing is sent.
    const boss = await open(await as('boss@acme.example'), url);
    await see(boss.locator('.count')).toBe('0 waiting');
    expect(await inbox.sweep()).toBe(0);
    await new Promise((r) => setTimeout(r, 200));
    expect(slack.received).toHaveLength(1);

    offset = 61_000; // 59 s before the expiry: the reminder is due
    await inbox.sweep();
    const reminder = JSON.parse((await slack.next()).body) as {
      text: string;
      blocks: { type: string; elements?: { url: string; text: { text: string } }[] }[];
    };
    expect(reminder.text).toMatch(/^Reminder, expires \d{4}-\d{2}-\d{2} \d{2}:\d{2} UTC: refund/);
    await inbox.sweep();
    await new Promise((r) => setTimeout(r, 200));
    expect(slack.received).toHaveLength(2); // once
    const approveUrl = reminder.blocks.find((b) => b.type === 'actions')!.elements![0]!.url;
    const token = new URL(approveUrl).searchParams.get('token')!;
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString())).toMatchObject({
      approver: 'boss@acme.example',
    });
    // Escalated: the second approver sees it now, and the reminder's link answers it.
    await boss.reload();
    await see(boss.locator('.count')).toBe('1 waiting');
    const page = await (await as(null)).newPage();
    await page.goto(approveUrl);
    await page.getByRole('button', { name: 'Approve refund' }).click();
    await see(page.getByRole('status')).toContain('Approved');
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-4:400']);
    expect((await inbox.store.list())[0]!.answer?.approver).toBe('boss@acme.example');
  });
});

describe('accessibility', () => {
  it('keyboard only: skip link, filters, answering; focus visible; contrast ≥ 4.5:1 in light and dark; dark mode from prefers-color-scheme', async () => {
    const s = shop();
    const { inbox, url } = await start({ cards: cards() });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-1', amount: 900 }));
    for (const scheme of ['dark', 'light'] as const) {
      const page = await open(await as('ana@acme.example', { colorScheme: scheme }), url);
      await page.locator('article.approval.pending').waitFor();
      const background = await page.evaluate(() => {
        const { document, getComputedStyle } = globalThis as unknown as Dom;
        return getComputedStyle(document.body).backgroundColor;
      });
      expect(background).toBe(scheme === 'dark' ? 'rgb(13, 17, 23)' : 'rgb(255, 255, 255)');
      for (const selector of [
        'article.approval h2',
        'article.approval .state',
        'article.approval .tool',
        'article.approval dt',
        'article.approval .risk',
        'article.approval button.allow',
        'article.approval button.deny',
        '.count',
        'header.top a',
        '.filters summary',
      ])
        expect(await contrastOf(page, selector), `${scheme}: ${selector}`).toBeGreaterThanOrEqual(4.5);
      if (scheme === 'light') {
        const focused = () => page.evaluate('document.activeElement && document.activeElement.textContent');
        await page.keyboard.press('Tab');
        expect(await focused()).toBe('Skip to the approvals');
        // The filters open from the keyboard too.
        for (let i = 0; i < 10 && (await focused()) !== 'Filter, search and sort'; i++)
          await page.keyboard.press('Tab');
        await page.keyboard.press('Enter');
        await expect.poll(() => page.locator('details.filters').getAttribute('open')).not.toBeNull();
        const approve = page.locator('article.approval.pending button.allow');
        for (let i = 0; i < 60 && !(await approve.evaluate((b) => b.matches(':focus'))); i++)
          await page.keyboard.press('Tab');
        expect(await approve.evaluate((b) => b.matches(':focus-visible'))).toBe(true);
        const outline = await approve.evaluate((b) => {
          const style = (globalThis as unknown as Dom).getComputedStyle(b);
          return [style.outlineStyle, style.outlineWidth];
        });
        expect(outline[0]).toBe('solid');
        expect(parseFloat(outline[1]!)).toBeGreaterThanOrEqual(2);
        await page.keyboard.press('Enter');
        await see(page.getByRole('status')).toContain('Approved');
      }
    }
    expect((await tracked.done).status).toBe('completed');
  });
});
