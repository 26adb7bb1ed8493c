/**
 * Bearer tokens without `exp` at the real `toolgate gateway --http --jwks-url`: refused (401 naming the
 * missing expiry; jose checks `exp` only when present, so such a token was accepted forever) unless the
 * owner gives `--jwt-allow-no-exp`. A token with `exp` is accepted either way.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { spawnGateway } from './fixtures/spawn.js';
import { cleanupsAfterEach, RECORDING, stdioUpstream, tempDir, writePolicy } from '../harness.js';

const cleanups = cleanupsAfterEach();

async function issuer() {
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const server = createServer((req, res) => {
    if (req.url === '/jwks')
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const iss = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sign = (claims: Record<string, unknown>, exp: boolean) => {
    const jwt = new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: 'k1' }).setIssuer(iss).setIssuedAt();
    return (exp ? jwt.setExpirationTime('10m') : jwt).sign(privateKey);
  };
  return { iss, jwksUrl: `${iss}/jwks`, sign };
}

async function start(extra: string[]) {
  const dir = tempDir('jwt-exp');
  const policy = writePolicy(dir, {
    gateway: {
      upstreams: { rec: stdioUpstream(RECORDING, { RECORD: join(dir, 'r') }) },
      pin: 'off',
    },
    rules: [{ name: 'rest', result: 'allow' }],
  });
  const idp = await issuer();
  const g = await spawnGateway(policy, ['--stateless', '--jwks-url', idp.jwksUrl, '--jwt-issuer', idp.iss, ...extra]);
  cleanups.push(() => g.stop());
  const list = async (token: string) => {
    const res = await fetch(g.url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${token}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2025-11-25',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
    });
    return { status: res.status, text: await res.text(), challenge: res.headers.get('www-authenticate') ?? '' };
  };
  return { g, idp, list };
}

describe('bearer tokens without exp', { timeout: 120_000 }, () => {
  it('are refused with a 401 naming the missing expiry; a token with exp is served', async () => {
    const { g, idp, list } = await start([]);
    const aud = g.url.href;
    const none = await list(await idp.sign({ sub: 'alice', aud }, false));
    expect(none.status).toBe(401);
    const said = (JSON.parse(none.text) as { error_description: string }).error_description;
    expect(said).toMatch(/no expiry \("exp" claim\).*--jwt-allow-no-exp/);
    expect(none.challenge).toMatch(/invalid_token/);
    const ok = await list(await idp.sign({ sub: 'alice', aud }, true));
    expect(ok.status, ok.text).toBe(200);
  });

  it('are accepted with --jwt-allow-no-exp', async () => {
    const { g, idp, list } = await start(['--jwt-allow-no-exp']);
    const none = await list(await idp.sign({ sub: 'alice', aud: g.url.href }, false));
    expect(none.status, none.text).toBe(200);
  });
});
