/**
 * Attack (atk-http7, 2026-12-06) on ba8c72a (a raw 2026-07-28 request over HTTP stopped by id, STOP_RAW): what
 * stops a resumption of a request's stream is kept in the transport's `#resumptions` until the request settles
 * (RAW_SETTLED drops it). An upstream that answers a call on another call's stream, then ends the call's own
 * stream with an event id and no answer, has the POST ask for a resumption after its request had settled: the
 * entry was made then and never dropped (one AbortController a call, for the transport's life: 25 of 50 calls
 * in the first run). The GET that resumes such a stream is sent as before the merge (and as the SDK path sends
 * it: nobody stops it); only what the transport keeps for it is the leak. Seen from outside: STOP_RAW of a
 * settled request's id still closed that GET.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { RawRequests, STOP_RAW, type ModernWire } from '../../src/gateway/upstream-raw.js';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, loopbackServer, modernMeta } from '../harness.js';
import { RAW_TOOL } from '../gateway/fixtures/raw-recorder.js';

const cleanups = cleanupsAfterEach();

const WIRE: ModernWire = {
  envelope: (message) =>
    ({ ...message, params: { ...message.params, _meta: modernMeta({}, '2026-07-28') } }) as JSONRPCMessage,
  result: (_method, raw) => raw,
};

const answer = (id: string): string =>
  `data: ${JSON.stringify({ jsonrpc: '2.0', id, result: { content: [], resultType: 'complete' } })}\n\n`;

const wait = async (until: () => boolean, ms = 3000): Promise<void> => {
  for (let t = 0; !until() && t < ms / 10; t++) await new Promise((r) => setTimeout(r, 10));
};

describe('a raw 2026-07-28 request over HTTP answered on another stream', () => {
  it('keeps nothing of it once settled: STOP_RAW of its id stops nothing', async () => {
    const gets: { closed: boolean }[] = [];
    const url = await loopbackServer(
      cleanups,
      (req: IncomingMessage, res: ServerResponse) => {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          if (req.method === 'GET') {
            const one = { closed: false };
            gets.push(one);
            res.on('close', () => (one.closed = true));
            return void res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': held\n\n');
          }
          const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { id: string }).id;
          const n = Number(id.split(':')[1]);
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          // An odd call's stream names an event id and ends, without its answer, once its even partner's stream
          // carried that answer (and its own).
          if (n % 2 === 1) {
            res.write(`id: e${n}\nretry: 10\ndata: \n\n`);
            setTimeout(() => res.end(), 100);
          } else res.end(answer(`toolgate-raw:${n - 1}`) + answer(id));
        });
      },
      '/mcp',
    );
    const transport = rawHttpTransport(url);
    transport.onerror = () => undefined;
    await transport.start();
    cleanups.push(() => transport.close());
    const raw = new RawRequests(() => transport);
    transport.onmessage = (message) => void raw.take(message);
    const outcomes = await Promise.all(
      Array.from({ length: 10 }, () =>
        raw.callTool({ name: 'echo', arguments: {} }, RAW_TOOL, {}, WIRE).then(
          () => 'answered',
          (error: Error) => `failed: ${error.message}`,
        ),
      ),
    );
    expect(outcomes).toEqual(Array.from({ length: 10 }, () => 'answered'));
    // The odd calls' streams are resumed (as before, and as the SDK path resumes them), and held by the upstream.
    await wait(() => gets.length === 5);
    expect(gets.length).toBe(5);
    // Every call settled: the transport holds nothing that stops any of them.
    for (let n = 1; n <= 10; n++) transport[STOP_RAW](`toolgate-raw:${n}`);
    await new Promise((r) => setTimeout(r, 200));
    expect(gets.filter((g) => g.closed).length).toBe(0);
  });
});
