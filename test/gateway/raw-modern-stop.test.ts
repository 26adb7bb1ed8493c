// A raw 2026-07-28 request to an HTTP upstream (upstream-raw.ts through upstream-raw-http.ts) is sent with no
// signal of its own and stopped by id (STOP_RAW: issue 25.3, no AbortController a call), and is stopped as the
// signal it had before stopped it: the caller's signal aborting or its timeout closes its POST, and a stream it
// resumes is neither begun nor left open. Each case is run both ways: the transport as it is (stopped by id), and
// the same transport seen without STOP_RAW (a plain `send`: its own AbortController as the request's signal).
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { describe, expect, it, vi } from 'vitest';
import { RawRequests, type ModernWire } from '../../src/gateway/upstream-raw.js';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, modernMeta } from '../harness.js';
import { seenUpstream } from './fixtures/seen-upstream.js';
import { RAW_TOOL } from './fixtures/raw-recorder.js';

const cleanups = cleanupsAfterEach();

const upstream = (answer: Parameters<typeof seenUpstream>[1]) => seenUpstream(cleanups, answer);

/** The envelope a 2026-07-28 request carries (its version key is what makes it one), the result as it came. */
const WIRE: ModernWire = {
  envelope: (message) =>
    ({ ...message, params: { ...message.params, _meta: modernMeta({}, '2026-07-28') } }) as JSONRPCMessage,
  result: (_method, raw) => raw,
};

const ways = ['by id', 'by signal'] as const;

async function connect(url: URL, way: (typeof ways)[number]) {
  const transport = rawHttpTransport(url);
  transport.onerror = () => undefined;
  await transport.start();
  cleanups.push(() => transport.close());
  // Seen without STOP_RAW: the raw request makes its own signal, as every transport's did before.
  const seenBy: Transport =
    way === 'by id' ? transport : ({ send: (m, o) => transport.send(m, o as never) } as Transport);
  const raw = new RawRequests(() => seenBy);
  transport.onmessage = (message) => void raw.take(message);
  return { transport, raw };
}

const wait = async (until: () => boolean, ms = 3000): Promise<void> => {
  for (let t = 0; !until() && t < ms / 10; t++) await new Promise((r) => setTimeout(r, 10));
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const call = (raw: RawRequests, options: { timeout?: number; signal?: AbortSignal }) =>
  raw.callTool({ name: 'echo', arguments: {} }, RAW_TOOL, options, WIRE).then(
    () => 'answered',
    (error: Error) => `failed: ${error.message}`,
  );

describe('a raw 2026-07-28 request over HTTP is stopped as its signal stopped it', () => {
  it('is sent with no request signal (no AbortController made for it); the plain transport gets one', async () => {
    const { url } = await upstream((_req, res) =>
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ jsonrpc: '2.0', id: 'toolgate-raw:1', result: { content: [], resultType: 'complete' } })),
    );
    const { transport, raw } = await connect(url, 'by id');
    const send = vi.spyOn(transport, 'send');
    expect(await call(raw, {})).toBe('answered');
    expect(send).toHaveBeenCalledTimes(1);
    expect(send.mock.calls[0]![1]).toBeUndefined();
  });

  it('the caller’s signal aborting, or the timeout, closes its POST (the call fails at once)', async () => {
    const results: Record<string, unknown> = {};
    for (const way of ways)
      for (const how of ['signal', 'timeout'] as const) {
        // The upstream holds the answer: only the gateway can end the POST.
        const { url, seen } = await upstream((_req, res) =>
          res.writeHead(200, { 'content-type': 'text/event-stream' }),
        );
        const { raw } = await connect(url, way);
        const stop = new AbortController();
        const outcome = call(raw, how === 'signal' ? { signal: stop.signal } : { timeout: 150 });
        await wait(() => seen.length === 1);
        await sleep(50);
        if (how === 'signal') stop.abort(new Error('the client went away'));
        const failed = await outcome;
        await wait(() => seen[0]!.closed);
        results[`${way} ${how}`] = { failed, posts: seen.length, closed: seen[0]!.closed };
      }
    expect(results['by signal signal']).toEqual({ failed: expect.stringMatching(/^failed: /), posts: 1, closed: true });
    expect(results['by signal timeout']).toEqual({ failed: 'failed: Request timed out', posts: 1, closed: true });
    expect(results['by id signal']).toEqual(results['by signal signal']);
    expect(results['by id timeout']).toEqual(results['by signal timeout']);
  });

  it('stopped while its stream waits to be resumed: no GET; stopped with the GET open: the GET closed', async () => {
    const results: Record<string, unknown> = {};
    for (const way of ways)
      for (const when of ['before the GET', 'with the GET open'] as const) {
        // The POST's stream names an event id and ends without the answer; the GET that resumes it is held open.
        const retry = when === 'before the GET' ? 300 : 20;
        const { url, seen } = await upstream((req, res) => {
          if (req.method === 'POST')
            return void res
              .writeHead(200, { 'content-type': 'text/event-stream' })
              .end(`retry: ${retry}\nid: e1\ndata: \n\n`);
          res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': held\n\n');
        });
        const { raw } = await connect(url, way);
        const stop = new AbortController();
        const outcome = call(raw, { signal: stop.signal });
        await wait(() => seen.length === 1 && seen[0]!.closed);
        if (when === 'with the GET open') await wait(() => seen.some((s) => s.method === 'GET'));
        stop.abort(new Error('the client went away'));
        const failed = await outcome;
        await sleep(retry + 300);
        const gets = seen.filter((s) => s.method === 'GET');
        results[`${way} ${when}`] = { failed, gets: gets.length, open: gets.filter((s) => !s.closed).length };
      }
    expect(results['by signal before the GET']).toEqual({
      failed: expect.stringMatching(/^failed: /),
      gets: 0,
      open: 0,
    });
    expect(results['by signal with the GET open']).toEqual({
      failed: expect.stringMatching(/^failed: /),
      gets: 1,
      open: 0,
    });
    expect(results['by id before the GET']).toEqual(results['by signal before the GET']);
    expect(results['by id with the GET open']).toEqual(results['by signal with the GET open']);
  });
});
