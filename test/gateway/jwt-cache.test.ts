/**
 * jwtAuthenticator keeps a verified token until its `exp` (issue 25: a signature check per request cost
 * more than the gateway's own work): the second request with the token gets the same frozen answer without
 * a verification, a token past its `exp` is refused again, and a token differing by one character is
 * verified (and refused) on its own.
 */
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
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
    const token = await sign(1);
    await expect(authenticate(token)).resolves.toMatchObject({ clientId: 'alice' });
    await new Promise((resolve) => setTimeout(resolve, 2100));
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
});
