// The bench's own HTTP shape (bench/gateway.ts, issue 25.3) takes the gateway's HTTP fast path: an SDK v1
// client in a 2025-11-25 session calling `leg:echo` of the legacy fixture served over HTTP, without
// authentication and with a JWT — every call is answered by http-fast.ts (its counter moves by one per
// call), sent raw upstream, and answers as the upstream does. With the fast path off none is. A slow call's
// headers go ~250 ms after it was taken (one shared timer for every held answer), on both paths alike.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { jwtAuthenticator } from '../../src/gateway/auth.js';
import { httpFastPathTaken } from '../../src/gateway/http-fast.js';
import { cleanupsAfterEach, fastPathFor, gatewayOverHttp, tempDir, text, writePolicy } from '../harness.js';
import { httpGateway, open } from './fixtures/http-fast.js';
import { recordingHttpUpstream } from './fixtures/recording-http.js';
import { httpFixture, LEGACY } from '../mcp/fixtures/processes.js';

const cleanups = cleanupsAfterEach();
const SECRET = 'the bench test secret, 32 bytes or more';

async function benchGateway(fast: boolean, jwt: boolean) {
  const upstream = await httpFixture(LEGACY);
  cleanups.push(() => upstream.stop());
  fastPathFor(cleanups, fast);
  // The bench's policy (bench/gateway.ts: one HTTP upstream, pins off, everything allowed); the token's scope
  // names the tool (the CLI maps the bench's `bench` scope to it).
  const policy = writePolicy(tempDir('http-bench-shape'), {
    gateway: { upstreams: { leg: { url: upstream.url.href } }, pin: 'off' },
    rules: [{ name: 'all', result: 'allow' }],
  });
  const { url } = await gatewayOverHttp(cleanups, policy, {
    http: () =>
      jwt ? { authenticate: jwtAuthenticator({ secret: SECRET }), audience: false } : { authenticate: null },
  });
  const token = await new SignJWT({ sub: 'bench', scope: 'leg:echo' })
    .setProtectedHeader({ alg: 'HS256' })
    .setIssuedAt()
    .setExpirationTime('1h')
    .sign(new TextEncoder().encode(SECRET));
  const client = new Client({ name: 'bench-2025', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(
      url,
      jwt ? { requestInit: { headers: { authorization: `Bearer ${token}` } } } : undefined,
    ),
  );
  cleanups.push(() => client.close());
  return client;
}

describe('the bench’s HTTP request takes the fast path', () => {
  for (const jwt of [false, true])
    it(`every leg:echo of a 2025-11-25 session is answered by the fast path${jwt ? ', with a JWT' : ''}`, async () => {
      const client = await benchGateway(true, jwt);
      const before = httpFastPathTaken();
      for (let i = 0; i < 20; i++)
        expect(text(await client.callTool({ name: 'leg:echo', arguments: { text: 'bench' } }))).toBe('echo: bench');
      expect(httpFastPathTaken() - before).toBe(20);
    });

  it('with the fast path off, the same calls answer alike and none is taken', async () => {
    const client = await benchGateway(false, false);
    const before = httpFastPathTaken();
    for (let i = 0; i < 5; i++)
      expect(text(await client.callTool({ name: 'leg:echo', arguments: { text: 'bench' } }))).toBe('echo: bench');
    expect(httpFastPathTaken()).toBe(before);
  });
});

describe('a slow call’s headers are not held past 250 ms', () => {
  for (const fast of [true, false])
    it(`two slow calls 100 ms apart each get their headers ~250 ms after their own start (fast path ${fast ? 'on' : 'off'})`, async () => {
      const upstream = await recordingHttpUpstream(900);
      cleanups.push(() => upstream.close());
      const { url } = await httpGateway(cleanups, upstream, fast);
      const session = await open(url);
      const slow = async (id: number) => {
        const started = performance.now();
        const response = await fetch(url, {
          method: 'POST',
          headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...session },
          body: JSON.stringify({
            jsonrpc: '2.0',
            id,
            method: 'tools/call',
            params: { name: 'rec:slow', arguments: {} },
          }),
        });
        const headed = performance.now() - started;
        const body = await response.text();
        return { headed, answered: performance.now() - started, status: response.status, body };
      };
      const first = slow(1);
      await new Promise((r) => setTimeout(r, 100));
      const outcomes = await Promise.all([first, slow(2)]);
      for (const { headed, answered, status, body } of outcomes) {
        expect(status).toBe(200);
        expect(headed).toBeGreaterThanOrEqual(230);
        expect(headed).toBeLessThan(700);
        expect(answered).toBeGreaterThan(850);
        expect(body).toContain('"result"');
      }
    });
});
