/**
 * Escalation locked out the approvers the policy names: with only tool lists, `escalateTo` became a `*`
 * tenant list that every request then had to pass too, so once the reminder was due the tool's own
 * approvers got 404 (the inbox's /link and /answer routes, over HTTP).
 */
import { describe, expect, it } from 'vitest';
import { answerAs, shop, startInbox } from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

/** GET /link?token=… for a link made for `approver` on approval `id`: the status the approver gets. */
async function linkStatus(url: string, token: string): Promise<number> {
  return (await fetch(`${url}/link?token=${encodeURIComponent(token)}`)).status;
}

function tokenOf(link: string): string {
  return new URL(link).searchParams.get('token')!;
}

describe('escalation adds approvers, never takes the named ones away', () => {
  it('a tool list and escalateTo: once the reminder is due, the tool’s approvers still see and answer it; the escalation approver may too', async () => {
    const s = shop();
    let offset = 0;
    const { inbox, url } = await startInbox(cleanups, {
      approvers: { tools: { refund: ['fin@acme.example'] } },
      reminders: { beforeExpiryMs: 60_000, escalateTo: ['boss@acme.example'] },
      ttlMs: 120_000,
      now: () => Date.now() + offset,
    });
    const tracked = await inbox.runner(s.runner).track(await s.run({ order: 'A-7', amount: 400 }));
    const [record] = await inbox.store.list();
    const link = (approver: string) => tokenOf(inbox.link({ approver, approval: record!.id }));
    // Before the reminder: the named approver only.
    expect(await linkStatus(url, link('fin@acme.example'))).toBe(200);
    expect(await linkStatus(url, link('boss@acme.example'))).toBe(404);

    offset = 61_000; // the reminder is due: escalated
    await inbox.sweep();
    expect(await linkStatus(url, link('fin@acme.example'))).toBe(200);
    expect(await linkStatus(url, link('boss@acme.example'))).toBe(200);
    // Someone neither list names still gets nothing.
    expect(await linkStatus(url, link('eve@acme.example'))).toBe(404);
    expect(await answerAs(url, record!.id, 'eve@acme.example', { effect: 'allow' })).toBe(404);
    // The tool's approver answers it, after the escalation.
    expect(await answerAs(url, record!.id, 'fin@acme.example', { effect: 'allow' })).toBe(200);
    expect((await tracked.done).status).toBe('completed');
    expect(s.refunds).toEqual(['A-7:400']);
    expect((await inbox.store.get(record!.id))?.answer?.approver).toBe('fin@acme.example');
  });

  it('four eyes and the tenant binding still hold for the tool’s approvers after escalation', async () => {
    const s = shop();
    let offset = 0;
    const { inbox, url } = await startInbox(cleanups, {
      approvers: { tools: { refund: ['fin@acme.example', 'cy'] }, fourEyes: true },
      reminders: { beforeExpiryMs: 60_000, escalateTo: ['boss@acme.example'] },
      ttlMs: 120_000,
      now: () => Date.now() + offset,
    });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-8', amount: 400 }, 'cy'));
    const [record] = await inbox.store.list();
    offset = 61_000;
    await inbox.sweep();
    // cy asked for it: named on the tool's list, but four eyes keeps refusing them.
    expect(await answerAs(url, record!.id, 'cy', { effect: 'allow' })).toBe(403);
    // A link bound to another tenant shows nothing, even to a named approver.
    const globex = tokenOf(inbox.link({ approver: 'fin@acme.example', approval: record!.id, tenants: ['globex'] }));
    expect(await linkStatus(url, globex)).toBe(404);
  });

  it('a request no list applies to (nobody could answer it) is answerable by the escalation approvers once due', async () => {
    const s = shop();
    let offset = 0;
    const { inbox, url } = await startInbox(cleanups, {
      approvers: { tenants: { globex: ['gus@globex.example'] } },
      reminders: { beforeExpiryMs: 60_000, escalateTo: ['boss@acme.example'] },
      ttlMs: 120_000,
      now: () => Date.now() + offset,
    });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-9', amount: 400 }));
    const [record] = await inbox.store.list();
    const link = (approver: string) => tokenOf(inbox.link({ approver, approval: record!.id }));
    expect(await linkStatus(url, link('boss@acme.example'))).toBe(404);
    offset = 61_000;
    await inbox.sweep();
    expect(await linkStatus(url, link('boss@acme.example'))).toBe(200);
    expect(await linkStatus(url, link('gus@globex.example'))).toBe(404);
  });
});
