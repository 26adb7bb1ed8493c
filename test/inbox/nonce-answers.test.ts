/**
 * Any truthy answer of the nonce store counted as fresh: with a store answering 'OK', one sign-in link
 * issued a session every time it was used, and a reminder was sent on every replica. Only `true` is fresh;
 * anything else that is not `false` is a store error (refused, fail closed). Over HTTP and the sweep.
 */
import { describe, expect, it } from 'vitest';
import { MemoryNonceStore } from '../../src/stores/index.js';
import { receiver, shop, startInbox } from './fixture.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach({ strict: true });

function tokenOf(link: string): string {
  return new URL(link).searchParams.get('token')!;
}

describe('only `true` from the nonce store is fresh', () => {
  for (const answer of ['OK', 1, 'true', {}, null] as const) {
    it(`a sign-in link against a store answering ${JSON.stringify(answer)} starts no session`, async () => {
      const { inbox, url } = await startInbox(cleanups, {
        nonces: { consume: async () => answer as unknown as boolean },
      });
      const token = tokenOf(inbox.link({ approver: 'ana@acme.example' }));
      const origin = new URL(url).origin;
      for (let i = 0; i < 3; i++) {
        const signIn = await fetch(`${url}/link`, {
          method: 'POST',
          headers: { origin },
          body: new URLSearchParams({ token }),
          redirect: 'manual',
        });
        // A store error: refused (the error page), no cookie.
        expect(signIn.status).toBe(500);
        expect(signIn.headers.get('set-cookie')).toBeNull();
        expect(await signIn.text()).toMatch(/nonce store/);
      }
    });
  }

  it('with a store that answers true then false, the link signs in once and is then "already used"', async () => {
    const { inbox, url } = await startInbox(cleanups, { nonces: new MemoryNonceStore() });
    const token = tokenOf(inbox.link({ approver: 'ana@acme.example' }));
    const post = () =>
      fetch(`${url}/link`, {
        method: 'POST',
        headers: { origin: new URL(url).origin },
        body: new URLSearchParams({ token }),
        redirect: 'manual',
      });
    expect((await post()).status).toBe(303);
    expect((await post()).status).toBe(410);
  });

  it('a reminder is not sent on a store answering "OK"; the sweep goes on and sends it once the store answers true', async () => {
    const hook = await receiver();
    cleanups.push(() => hook.close());
    const s = shop();
    let offset = 0;
    const real = new MemoryNonceStore();
    let broken = true;
    const { inbox } = await startInbox(cleanups, {
      nonces: {
        consume: (nonce: string, ttlMs: number) =>
          broken ? Promise.resolve('OK' as unknown as boolean) : real.consume(nonce, ttlMs),
      },
      webhooks: { acme: { url: hook.url, secret: 'webhook-secret-0123456789' } },
      reminders: { beforeExpiryMs: 60_000 },
      ttlMs: 120_000,
      now: () => Date.now() + offset,
    });
    await inbox.runner(s.runner).track(await s.run({ order: 'A-5', amount: 400 }));
    await hook.next(); // approval.requested
    offset = 61_000;
    await inbox.sweep();
    await inbox.sweep();
    await inbox.flush();
    expect(hook.received).toHaveLength(1);
    broken = false;
    await inbox.sweep();
    await inbox.sweep();
    await inbox.flush();
    expect(hook.received.map((r) => (JSON.parse(r.body) as { type: string }).type)).toEqual([
      'approval.requested',
      'approval.reminder',
    ]);
  });
});
