/**
 * upstream-raw-http.ts's raw POST takes its request options from `requestTarget(url)` (issue 25: fewer keys
 * for every request to copy) instead of the whole of `urlToHttpOptions(url)`: the request it sends is the
 * same, byte for byte (request line, Host, authorization from the URL's credentials, every header), for
 * random upstream URLs — hosts (names, IPv4, IPv6), ports, paths, queries, fragments, credentials.
 */
import { request, type RequestOptions } from 'node:http';
import { Duplex } from 'node:stream';
import { urlToHttpOptions } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { agents } from '../../src/gateway/upstream-fetch.js';
import { requestTarget } from '../../src/gateway/upstream-raw-http.js';

/** The bytes a request with these options writes (its connection a stream that keeps them, never answered). */
function sent(options: RequestOptions, headers: Record<string, string>, body: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = new Duplex({
      read() {},
      write(chunk: Buffer, _encoding, done) {
        chunks.push(Buffer.from(chunk));
        done();
      },
      writev(parts, done) {
        for (const part of parts) chunks.push(Buffer.from(part.chunk as Buffer));
        done();
      },
    });
    // No agent: the connection is the stream (both sides alike); the agent's own options are compared apart.
    const req = request({ ...options, agent: undefined, headers, createConnection: () => socket as never });
    req.on('error', reject);
    req.end(body, () => {
      const text = Buffer.concat(chunks).toString('latin1');
      req.destroy();
      resolve(text);
    });
  });
}

const HOSTS = [
  '127.0.0.1',
  'localhost',
  'upstream.example.com',
  '[::1]',
  '[fe80::1]',
  'xn--bcher-kva.example',
  'A.Example.COM',
];

const url = fc
  .record({
    https: fc.boolean(),
    host: fc.constantFrom(...HOSTS),
    port: fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined }),
    path: fc.array(fc.constantFrom('mcp', 'a b', 'ü', '%2F', '..', '.', 'x;y', ''), { maxLength: 4 }),
    query: fc.option(fc.constantFrom('a=1', 'q=%20&b', '', 'x=ü'), { nil: undefined }),
    hash: fc.option(fc.constantFrom('frag', '', 'a#b'), { nil: undefined }),
    user: fc.option(fc.constantFrom('u', 'user:pa ss', 'a%40b:c', ':only'), { nil: undefined }),
  })
  .map(({ https, host, port, path, query, hash, user }) => {
    const text = `${https ? 'https' : 'http'}://${user !== undefined ? `${user}@` : ''}${host}${port !== undefined ? `:${port}` : ''}/${path.join('/')}${query !== undefined ? `?${query}` : ''}${hash !== undefined ? `#${hash}` : ''}`;
    return new URL(text);
  });

describe('requestTarget: the raw POST sends what the whole urlToHttpOptions sent', () => {
  it('the same bytes on the wire for random upstream URLs', async () => {
    const headers = {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-session-id': 's-1',
      'content-length': '13',
    };
    const body = Buffer.from('{"jsonrpc":1}');
    await fc.assert(
      fc.asyncProperty(url, async (u) => {
        const agent = agents[u.protocol as 'http:' | 'https:'];
        const before: RequestOptions = { ...urlToHttpOptions(u), method: 'POST', agent };
        const after = requestTarget(u);
        expect(after.agent).toBe(agent);
        expect(after.method).toBe('POST');
        // Over https the request is made by https.request with these options; its bytes are http's.
        const plain = (o: RequestOptions): RequestOptions => ({ ...o, protocol: 'http:' });
        expect(await sent(plain(after), headers, body)).toBe(await sent(plain(before), headers, body));
        // Every key the request reads is the same; what is left out is only what it never reads.
        for (const key of ['protocol', 'hostname', 'host', 'port', 'path', 'auth', 'defaultPort', 'socketPath'])
          expect((after as Record<string, unknown>)[key]).toStrictEqual((before as Record<string, unknown>)[key]);
        for (const key of Object.keys(before))
          if (!(key in after)) expect(['href', 'pathname', 'search', 'hash']).toContain(key);
      }),
      { numRuns: 300 },
    );
  });
});
