/**
 * jwtAuthenticator keeps a verified token until its `exp` (issue 25: a signature check per request cost
 * more than the gateway's own work): the second request with the token gets the same frozen answer without
 * a verification, a token past its `exp` is refused again, and a token differing by one character is
 * verified (and refused) on its own. The cache is bounded (the oldest token goes first), and with a remote
 * key set a token is kept no longer than jose keeps the set: a key withdrawn from it is refused then.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { decodeJwt, exportJWK, generateKeyPair, SignJWT, type JWK } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { jwtAuthenticator } from '../../src/gateway/auth.js';

async function keys() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const sign = (expSeconds: number | null, sub = 'alice') => {
    const jwt = new SignJWT({ scope: 'fs:read' }).setProtectedHeader({ alg: 'RS256' }).setSubject(sub).setIssuedAt();
    return (expSeconds === null ? jwt : jwt.setExpirationTime(Math.floor(Date.now() / 1000) + expSeconds)).sign(
      privateKey,
    );
  };
  return { publicKey, sign };
}

describe('jwtAuthenticator: verification cached per token until its expiry', () => {
  it('answers a known token with the same frozen result, and verifies every other token', async () => {
    const { publicKey, sign } = await keys();
    const authenticate = jwtAuthenticator({ jwk: { ...(await exportJWK(publicKey)), alg: 'RS256' } });
    const token = await sign(600);
    const first = await authenticate(token);
    const second = await authenticate(token);
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.clientId).toBe('alice');
    expect(first.scopes).toEqual(['fs:read']);
    // One character of the signature changed: not the cached token, verified and refused.
    const i = token.length - 3;
    const edited = `${token.slice(0, i)}${token[i] === 'A' ? 'B' : 'A'}${token.slice(i + 1)}`;
    await expect(authenticate(edited)).rejects.toThrow();
    // Another token of the same subject is verified on its own (another object).
    const other = await sign(600);
    if (other !== token) expect(await authenticate(other)).not.toBe(first);
  });

  it('refuses a cached token once its exp has passed', async () => {
    const { publicKey, sign } = await keys();
    const authenticate = jwtAuthenticator({ jwk: { ...(await exportJWK(publicKey)), alg: 'RS256' } });
    // Three seconds ahead (a second ahead expired before the first check on a loaded machine: the exp is in
    // whole seconds, so "+1" can be a few milliseconds away); then wait until that second has passed.
    const token = await sign(3);
    await expect(authenticate(token)).resolves.toMatchObject({ clientId: 'alice' });
    const { exp } = decodeJwt(token);
    await new Promise((resolve) => setTimeout(resolve, exp! * 1000 - Date.now() + 100));
    await expect(authenticate(token)).rejects.toThrow(/exp/);
  });

  it('verifies a token without exp every time (allowed by allowNoExp)', async () => {
    const { publicKey, sign } = await keys();
    const authenticate = jwtAuthenticator({
      jwk: { ...(await exportJWK(publicKey)), alg: 'RS256' },
      allowNoExp: true,
    });
    const token = await sign(null);
    const first = await authenticate(token);
    expect(await authenticate(token)).not.toBe(first);
  });

  it('keeps at most 10,000 tokens: the oldest is verified again', async () => {
    const secret = 'a shared secret of the bench, long enough for HS256';
    const authenticate = jwtAuthenticator({ secret });
    const key = new TextEncoder().encode(secret);
    const exp = Math.floor(Date.now() / 1000) + 600;
    const sign = (sub: string) =>
      new SignJWT({}).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setExpirationTime(exp).sign(key);
    const oldest = await sign('u0');
    const first = await authenticate(oldest);
    expect(await authenticate(oldest)).toBe(first);
    for (let i = 1; i <= 10_000; i++) await authenticate(await sign(`u${i}`));
    // 10,001 tokens seen: the first is no longer kept, so it is verified again (a new answer, equal).
    const again = await authenticate(oldest);
    expect(again).not.toBe(first);
    expect(again).toEqual(first);
  }, 60_000);

  describe('with a remote key set (jwksUrl)', () => {
    afterEach(() => vi.useRealTimers());

    it('refuses a cached token once its key is withdrawn from the set and jose has fetched the set again (10 minutes)', async () => {
      const a = await generateKeyPair('RS256');
      const b = await generateKeyPair('RS256');
      const jwk = async (key: Parameters<typeof exportJWK>[0], kid: string): Promise<JWK> => ({
        ...(await exportJWK(key)),
        kid,
        alg: 'RS256',
        use: 'sig',
      });
      let keys = [await jwk(a.publicKey, 'a')];
      let fetched = 0;
      const server = createServer((_req, res) => {
        fetched++;
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys }));
      });
      await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`;
        const authenticate = jwtAuthenticator({ jwksUrl: url });
        const token = await new SignJWT({ scope: 'fs:read' })
          .setProtectedHeader({ alg: 'RS256', kid: 'a' })
          .setSubject('alice')
          .setExpirationTime('1h')
          .sign(a.privateKey);
        const first = await authenticate(token);
        expect(await authenticate(token)).toBe(first);
        expect(fetched).toBe(1);
        // Key a withdrawn (b replaces it): within jose's 10 minutes nothing refetches the set, the cache holds.
        keys = [await jwk(b.publicKey, 'b')];
        vi.useFakeTimers({ toFake: ['Date'], now: Date.now() + 9 * 60_000 });
        expect(await authenticate(token)).toBe(first);
        // Past 10 minutes: verified again, the set fetched again, key a is gone — refused.
        vi.setSystemTime(Date.now() + 2 * 60_000);
        await expect(authenticate(token)).rejects.toThrow();
        expect(fetched).toBe(2);
      } finally {
        await new Promise<void>((done) => server.close(() => done()));
      }
    });
  });
});
