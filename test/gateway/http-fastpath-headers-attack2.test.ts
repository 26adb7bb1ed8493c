// Header smuggling against the HTTP fast path (http-fast.ts's asTheSdkTakesIt): raw header lists no fetch
// writes (duplicates, case variants, media-type parameters and odd Accept lists) sent with the fast path on
// and off; the status and whether the call ran upstream must be the same.
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { httpGateway } from './fixtures/http-fast.js';
import { recordingHttpUpstream } from './fixtures/recording-http.js';

const cleanups = cleanupsAfterEach();

/** One POST with `raw` headers (name, value, name, value…) as written; its status and body. */
function post(url: URL, raw: string[], body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const headers = ['host', url.host, ...raw, 'content-length', String(Buffer.byteLength(body))];
    const req = request(url, { method: 'POST', headers });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
    });
    req.end(body);
  });
}

const BASE = ['accept', 'application/json, text/event-stream', 'content-type', 'application/json'];

async function opened(url: URL): Promise<{ session: string }> {
  const init = JSON.stringify({
    jsonrpc: '2.0',
    id: 0,
    method: 'initialize',
    params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'wire', version: '1' } },
  });
  const session = await new Promise<string>((resolve, reject) => {
    const req = request(url, { method: 'POST', headers: ['host', url.host, ...BASE] });
    req.on('error', reject);
    req.on('response', (res) => {
      res.resume();
      resolve(String(res.headers['mcp-session-id']));
    });
    req.end(init);
  });
  await post(url, [...BASE, 'mcp-session-id', session], '{"jsonrpc":"2.0","method":"notifications/initialized"}');
  return { session };
}

const CASES: readonly [string, (session: string) => string[]][] = [
  ['two equal session ids', (s) => [...BASE, 'mcp-session-id', s, 'Mcp-Session-Id', s]],
  [
    'two protocol versions',
    (s) => [...BASE, 'mcp-session-id', s, 'mcp-protocol-version', '2025-11-25', 'MCP-Protocol-Version', '2025-11-25'],
  ],
  [
    'upper-case media type',
    (s) => ['accept', 'application/json, text/event-stream', 'Content-Type', 'APPLICATION/JSON', 'mcp-session-id', s],
  ],
  [
    'a charset and a stray ;',
    (s) => [
      'accept',
      'application/json, text/event-stream',
      'content-type',
      'application/json; charset=latin1;',
      'mcp-session-id',
      s,
    ],
  ],
  [
    'a quoted media type',
    (s) => ['accept', 'application/json, text/event-stream', 'content-type', '"application/json"', 'mcp-session-id', s],
  ],
  [
    'json in a parameter',
    (s) => [
      'accept',
      'application/json, text/event-stream',
      'content-type',
      'text/plain; x=application/json',
      'mcp-session-id',
      s,
    ],
  ],
  ['two equal Content-Types', (s) => [...BASE, 'content-type', 'application/json', 'mcp-session-id', s]],
  [
    'Accept split in two',
    (s) => [
      'accept',
      'application/json',
      'Accept',
      'text/event-stream',
      'content-type',
      'application/json',
      'mcp-session-id',
      s,
    ],
  ],
  [
    'Accept with q=0',
    (s) => [
      'accept',
      'application/json;q=0, text/event-stream;q=0',
      'content-type',
      'application/json',
      'mcp-session-id',
      s,
    ],
  ],
  [
    'Accept upper-case',
    (s) => ['accept', 'APPLICATION/JSON, TEXT/EVENT-STREAM', 'content-type', 'application/json', 'mcp-session-id', s],
  ],
  ['an empty protocol version', (s) => [...BASE, 'mcp-session-id', s, 'mcp-protocol-version', '']],
];

describe('header smuggling: the same with the fast path on and off', { timeout: 120_000 }, () => {
  it('every case answers the same status and runs the same calls', async () => {
    const runs: unknown[][] = [];
    for (const fast of [true, false]) {
      const upstream = await recordingHttpUpstream();
      cleanups.push(() => upstream.close());
      const { url } = await httpGateway(cleanups, upstream, fast);
      const { session } = await opened(url);
      const run: unknown[] = [];
      for (const [name, headers] of CASES) {
        const before = upstream.received.length;
        const body = JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'tools/call',
          params: { name: 'rec:refund', arguments: { order: name, amount: 1 } },
        });
        const answer = await post(url, headers(session), body);
        run.push([name, answer.status, upstream.received.length - before]);
      }
      runs.push(run);
    }
    expect(runs[0]).toEqual(runs[1]);
    // Some variants are served (upper-case media type, a charset, Accept split or weighted): the test bites.
    expect((runs[0] as [string, number, number][]).filter(([, status]) => status === 200).length).toBeGreaterThan(2);
  });
});
