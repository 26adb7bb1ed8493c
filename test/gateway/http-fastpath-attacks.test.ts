// Attacks on the gateway's fast path over Streamable HTTP (src/gateway/http-fast.ts, upstream-raw-http.ts),
// spoken byte for byte to an in-process gateway in front of a recording 2025-era HTTP upstream: bodies no
// client library writes (duplicate keys, `__proto__`, odd `_meta`, ids and arguments of the wrong type, a
// notification-shaped call, batches, the gateway's own `toolgate-raw:` ids), headers the SDK transport
// refuses (Accept, two Content-Types, a bogus protocol version), another session's id, another subject's
// session, no token, a body over the bound, a cancellation naming another session's call. Each is sent with
// the fast path on and with it off: the answers are the same (status, content type, messages), a refused
// call never reaches the upstream on either, and the upstream receives the same on both.
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { recordingHttpUpstream } from './fixtures/recording-http.js';
import { httpGateway, normal, open, post } from './fixtures/http-fast.js';

const cleanups = cleanupsAfterEach();

const callOf = (id: unknown, name: string, args: unknown, extra: Record<string, unknown> = {}): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args }, ...extra });

/** The odd requests, as raw bodies and headers. */
const ODD: readonly { readonly name: string; readonly body: string; readonly headers?: Record<string, string> }[] = [
  { name: 'allowed echo', body: callOf(1, 'rec:echo', { text: 'hi' }) },
  { name: 'denied refund', body: callOf(2, 'rec:refund', { order: 'X', amount: 500 }) },
  {
    name: 'duplicate name key (the last wins for every reader)',
    body: '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"rec:echo","name":"rec:refund","arguments":{"order":"D","amount":900}}}',
  },
  {
    name: '__proto__ in the arguments',
    body: '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"rec:refund","arguments":{"__proto__":{"amount":1},"order":"P","amount":700}}}',
  },
  { name: 'arguments an array', body: callOf(5, 'rec:refund', ['P', 700]) },
  { name: 'arguments a string', body: callOf(6, 'rec:echo', 'hi') },
  { name: 'id null', body: callOf(null, 'rec:refund', { order: 'N', amount: 700 }) },
  { name: 'id a float', body: callOf(1.5, 'rec:echo', { text: 'f' }) },
  { name: 'id an object', body: callOf({ a: 1 }, 'rec:echo', { text: 'o' }) },
  { name: "the gateway's own id", body: callOf('toolgate-raw:1', 'rec:echo', { text: 'raw' }) },
  {
    name: 'a call without an id (a notification)',
    body: JSON.stringify({
      jsonrpc: '2.0',
      method: 'tools/call',
      params: { name: 'rec:refund', arguments: { order: 'Q', amount: 5 } },
    }),
  },
  { name: 'jsonrpc 1.0', body: callOf(7, 'rec:echo', { text: 'v1' }).replace('"2.0"', '"1.0"') },
  { name: 'an extra top-level key', body: callOf(8, 'rec:echo', { text: 'x' }, { extra: true }) },
  {
    name: '_meta with more than a progress token',
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/call',
      params: { name: 'rec:echo', arguments: { text: 'm' }, _meta: { progressToken: 1, other: 2 } },
    }),
  },
  {
    name: 'a progress token of the wrong type',
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 10,
      method: 'tools/call',
      params: { name: 'rec:echo', arguments: { text: 'm' }, _meta: { progressToken: { a: 1 } } },
    }),
  },
  {
    name: 'a task',
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 11,
      method: 'tools/call',
      params: { name: 'rec:echo', arguments: { text: 't' }, task: { ttl: 1000 } },
    }),
  },
  {
    name: 'a batch with a denied refund',
    body: `[${callOf(12, 'rec:refund', { order: 'BB', amount: 800 })},${callOf(13, 'rec:echo', { text: 'b' })}]`,
  },
  {
    name: 'a denied read',
    body: JSON.stringify({ jsonrpc: '2.0', id: 14, method: 'resources/read', params: { uri: 'docs://secret/keys' } }),
  },
  {
    name: 'a denied read, encoded',
    body: JSON.stringify({ jsonrpc: '2.0', id: 15, method: 'resources/read', params: { uri: 'docs://secret/%6Beys' } }),
  },
  {
    name: 'a read with an extra key',
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 16,
      method: 'resources/read',
      params: { uri: 'docs://public/readme', x: 1 },
    }),
  },
  { name: 'no SSE in Accept', body: callOf(17, 'rec:echo', { text: 'a' }), headers: { accept: 'application/json' } },
  {
    name: 'a text Content-Type',
    body: callOf(18, 'rec:echo', { text: 'c' }),
    headers: { 'content-type': 'text/plain' },
  },
  {
    name: 'a bogus protocol version',
    body: callOf(19, 'rec:echo', { text: 'v' }),
    headers: { 'mcp-protocol-version': '1999-01-01' },
  },
  {
    name: 'a cancellation with an id (a request, to the SDK)',
    body: JSON.stringify({ jsonrpc: '2.0', id: 21, method: 'notifications/cancelled', params: { requestId: 1 } }),
  },
  { name: 'a limit past its max', body: callOf(20, 'rec:echo', { text: 'l' }) },
];

const withoutId = (r: Record<string, unknown>) => {
  const { id: _id, ...rest } = r;
  return rest;
};

describe('attacks on the fast path over Streamable HTTP', { timeout: 120_000 }, () => {
  it('odd bodies and headers: the same answers with the fast path on and off; refused calls never reach the upstream', async () => {
    const runs = [];
    for (const fast of [true, false]) {
      const upstream = await recordingHttpUpstream();
      cleanups.push(() => upstream.close());
      const { url } = await httpGateway(cleanups, upstream, fast);
      const headers = await open(url);
      const answers: unknown[] = [];
      // Five echoes are allowed (the limit), then refused: the allowed echo's row is sent six times.
      for (let i = 0; i < 5; i++) await post(url, callOf(100 + i, 'rec:echo', { text: `fill${i}` }), headers);
      for (const odd of ODD)
        answers.push([odd.name, normal(await post(url, odd.body, { ...headers, ...odd.headers }))]);
      runs.push({ answers, received: upstream.received.map(withoutId), raw: upstream.received.map((r) => r['id']) });
    }
    const [fast, sdk] = runs as [(typeof runs)[0], (typeof runs)[0]];
    for (let i = 0; i < ODD.length; i++) expect(fast.answers[i], ODD[i]!.name).toEqual(sdk.answers[i]);
    expect(fast.received).toEqual(sdk.received);
    for (const run of runs) {
      expect(run.received.some((r) => (r['amount'] as number) > 100)).toBe(false);
      expect(run.received.some((r) => String(r['uri']).includes('secret'))).toBe(false);
      expect(run.received.filter((r) => r['name'] === 'echo')).toHaveLength(5);
    }
    expect(fast.raw.some((id) => String(id).startsWith('toolgate-raw:'))).toBe(true);
  });

  it("another session's id, another subject's session, no token, an oversized body: refused before anything runs", async () => {
    for (const fast of [true, false]) {
      const upstream = await recordingHttpUpstream();
      cleanups.push(() => upstream.close());
      const { url } = await httpGateway(cleanups, upstream, fast, () => ({
        audience: false,
        authenticate: async (token: string) => {
          if (token !== 'alice' && token !== 'mallory') throw new Error('unknown token');
          // Mallory's token covers the echo; Alice's covers nothing (the caller layer refuses her every call).
          return { token, clientId: token, scopes: token === 'mallory' ? ['rec:echo'] : [] };
        },
      }));
      const alice = await open(url, 'alice');
      const mallory = await open(url, 'mallory');
      const refund = callOf(1, 'rec:refund', { order: 'M', amount: 5 });
      // Mallory in Alice's session.
      const stolen = await post(url, refund, { ...alice, authorization: 'Bearer mallory' });
      expect(stolen.status).toBe(403);
      // A session id no one was given.
      const made = await post(url, refund, { ...alice, 'mcp-session-id': '00000000-0000-4000-8000-000000000000' });
      expect(made.status).toBe(404);
      // No token, a wrong token.
      const { authorization: _a, ...bare } = alice;
      expect((await post(url, refund, bare)).status).toBe(401);
      expect((await post(url, refund, { ...alice, authorization: 'Bearer eve' })).status).toBe(401);
      // A body over the bound.
      const big = callOf(2, 'rec:echo', { text: 'x'.repeat(4 * 1024 * 1024 + 10) });
      expect((await post(url, big, alice)).status).toBe(413);
      // Alice in her own session: refused by her token's scopes, on both paths.
      const hers = await post(url, callOf(4, 'rec:echo', { text: 'alice' }), alice);
      expect(JSON.stringify(hers.messages)).toContain("the caller's scopes do not cover it");
      expect(upstream.received).toEqual([]);
      // Each in its own session is served.
      const mine = await post(url, callOf(3, 'rec:echo', { text: 'mallory' }), mallory);
      expect(mine.status).toBe(200);
      expect(JSON.stringify(mine.messages)).toContain('echo: mallory');
      expect(upstream.received.map((r) => r['id'])).toEqual([fast ? 'toolgate-raw:1' : expect.any(Number)]);
    }
  });

  it("a cancellation naming another session's call stops nothing", async () => {
    const upstream = await recordingHttpUpstream(1200);
    cleanups.push(() => upstream.close());
    const { url } = await httpGateway(cleanups, upstream, true);
    const a = await open(url);
    const b = await open(url);
    const slow = post(url, callOf(42, 'rec:slow', {}), a);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const cancel = JSON.stringify({
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 42, reason: 'not mine' },
    });
    expect((await post(url, cancel, b)).status).toBe(202);
    const answer = await slow;
    expect(JSON.stringify(answer.messages)).toContain('slow done');
    expect(upstream.received.some((r) => r['name'] === 'slow:cancelled')).toBe(false);
  });
});
