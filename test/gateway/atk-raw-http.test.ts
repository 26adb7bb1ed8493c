// Attacks on the raw POST of a 2026-07-28 request (src/gateway/upstream-raw-http.ts), each compared with the
// SDK's transport on the same node:http fetch (TOOLGATE_GATEWAY_FAST_PATH=off: httpUpstreamTransport).
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { httpUpstreamTransport } from '../../src/gateway/upstream-fetch.js';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, modernMeta } from '../harness.js';
import { seenUpstream } from './fixtures/seen-upstream.js';

const cleanups = cleanupsAfterEach();

const upstream = (answer: Parameters<typeof seenUpstream>[1]) => seenUpstream(cleanups, answer);

const CALL = {
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'echo', arguments: { text: 'x' }, _meta: modernMeta({}, '2026-07-28') },
} as JSONRPCMessage;

const ANSWER = { jsonrpc: '2.0', id: 7, result: { content: [{ type: 'text', text: 'ok' }], resultType: 'complete' } };

const sides = {
  raw: (url: URL): Transport => rawHttpTransport(url),
  sdk: (url: URL): Transport => httpUpstreamTransport(url),
};

async function send(make: (url: URL) => Transport, url: URL, signal?: AbortSignal) {
  const transport = make(url);
  const messages: unknown[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = () => undefined;
  await transport.start();
  cleanups.push(() => transport.close());
  const outcome = await transport.send(CALL, signal ? { requestSignal: signal } : undefined).then(
    () => 'resolved',
    () => 'rejected',
  );
  return { outcome, messages };
}

const wait = async (until: () => boolean, ms = 3000): Promise<void> => {
  for (let t = 0; !until() && t < ms / 10; t++) await new Promise((r) => setTimeout(r, 10));
};

describe('attack: a JSON batch with one malformed member', () => {
  it('the SDK refuses the whole batch (no answer reaches the Client); the raw POST does the same', async () => {
    for (const batch of [
      [ANSWER, { jsonrpc: '2.0', method: 'notifications/message', params: 7 }],
      [{ jsonrpc: '1.0', id: 9 }, ANSWER],
    ]) {
      const { url } = await upstream((_req, res) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(batch)),
      );
      const sdk = await send(sides.sdk, url);
      const raw = await send(sides.raw, url);
      expect(sdk).toEqual({ outcome: 'rejected', messages: [] });
      expect(raw).toEqual(sdk);
    }
  });
});

describe('attack: a resumable stream of a cancelled request', () => {
  it('no GET is left open for a request its caller stopped (the SDK closes it with the request)', async () => {
    const results: Record<string, { gets: number; open: number }> = {};
    for (const side of ['sdk', 'raw'] as const) {
      // The POST's stream names an event id and ends without the answer; the GET that resumes it is held open.
      const { url, seen } = await upstream((req, res) => {
        if (req.method === 'POST')
          return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('retry: 50\nid: e1\ndata: \n\n');
        res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': held\n\n');
      });
      const stop = new AbortController();
      const sent = await send(sides[side], url, stop.signal);
      expect(sent.messages).toEqual([]);
      await wait(() => seen.some((s) => s.method === 'GET'));
      stop.abort();
      await new Promise((r) => setTimeout(r, 300));
      const gets = seen.filter((s) => s.method === 'GET');
      results[side] = { gets: gets.length, open: gets.filter((s) => !s.closed).length };
    }
    expect(results['sdk']).toEqual({ gets: 1, open: 0 });
    expect(results['raw']).toEqual(results['sdk']);
  });

  it('a request stopped before its stream is resumed sends no GET (as the SDK)', async () => {
    const results: Record<string, number> = {};
    for (const side of ['sdk', 'raw'] as const) {
      const { url, seen } = await upstream((req, res) => {
        if (req.method === 'POST')
          return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('retry: 200\nid: e1\ndata: \n\n');
        res.writeHead(200, { 'content-type': 'text/event-stream' }).write(': held\n\n');
      });
      const stop = new AbortController();
      await send(sides[side], url, stop.signal);
      stop.abort();
      await new Promise((r) => setTimeout(r, 500));
      results[side] = seen.filter((s) => s.method === 'GET' && !s.closed).length;
    }
    expect(results['sdk']).toBe(0);
    expect(results['raw']).toBe(results['sdk']);
  });
});

describe('attack: an upstream that makes the resumed stream reconnect at once, for ever', () => {
  it('stops reconnecting when the request is stopped (as the SDK does)', async () => {
    const results: Record<string, number> = {};
    for (const side of ['sdk', 'raw'] as const) {
      // Every stream names an event id, asks for no delay and ends without the answer.
      const { url, seen } = await upstream((_req, res) =>
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end('retry: 0\nid: e1\ndata: \n\n'),
      );
      const stop = new AbortController();
      await send(sides[side], url, stop.signal);
      await wait(() => seen.filter((s) => s.method === 'GET').length >= 3);
      stop.abort();
      await new Promise((r) => setTimeout(r, 100));
      const after = seen.length;
      await new Promise((r) => setTimeout(r, 300));
      results[side] = seen.length - after;
    }
    expect(results['sdk']).toBe(0);
    expect(results['raw']).toBe(0);
  });
});

describe('attack: an event id on an event without data', () => {
  it('is no resumption point (the SDK never sees it): the stream fails the call, no GET', async () => {
    const results: Record<string, { outcome: string; gets: number }> = {};
    for (const side of ['sdk', 'raw'] as const) {
      const { url, seen } = await upstream((req, res) => {
        if (req.method === 'POST')
          return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('retry: 20\nid: e1\n\n');
        res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify(ANSWER)}\n\n`);
      });
      const { outcome } = await send(sides[side], url);
      await new Promise((r) => setTimeout(r, 300));
      results[side] = { outcome, gets: seen.filter((s) => s.method === 'GET').length };
    }
    // The SDK resolves the send (its stream-end callback fails the call) and resumes nothing.
    expect(results['sdk']!.gets).toBe(0);
    expect(results['raw']!.gets).toBe(0);
  });
});
