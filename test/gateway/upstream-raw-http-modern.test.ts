// The raw POST of a 2026-07-28 request the SDK Client sends (src/gateway/upstream-raw-http.ts, issue 25.3):
// the headers the SDK's transport derives from the body, the answer handed on without the SDK's schema (its
// key order kept, which the schema's copy would change), a 400 carrying the request's JSON-RPC error handed
// on as that error (another body fails the send), the request's signal closing the POST quietly, the size
// cap; and what goes the SDK's way: a name the SDK base64-encodes, per-request headers, a 2025 request.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { SdkError, SdkHttpError, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { MAX_RAW_ANSWER, rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, loopbackServer, modernMeta } from '../harness.js';
import { floodPast } from './fixtures/raw-recorder.js';

const cleanups = cleanupsAfterEach();

async function upstream(answer: (body: Record<string, unknown>, res: ServerResponse) => void) {
  const seen: { raw: string[]; body: Record<string, unknown>; closed: boolean }[] = [];
  const url = await loopbackServer(
    cleanups,
    (req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const one = { raw: req.rawHeaders, body: JSON.parse(Buffer.concat(chunks).toString('utf8')), closed: false };
        seen.push(one);
        res.on('close', () => (one.closed = true));
        answer(one.body, res);
      });
    },
    '/mcp',
  );
  return { url, seen };
}

const call = (name: string, version = '2026-07-28'): JSONRPCMessage =>
  ({
    jsonrpc: '2.0',
    id: 7,
    method: 'tools/call',
    params: { name, arguments: { text: 'x' }, _meta: modernMeta({}, version) },
  }) as JSONRPCMessage;

/** The answer as an upstream orders its members (the SDK's schema would give `jsonrpc`, `id`, `result`). */
const ANSWER = {
  result: {
    content: [{ type: 'text', text: 'ok' }],
    resultType: 'complete',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'up', version: '1' } },
  },
  jsonrpc: '2.0',
  id: 7,
};

async function send(
  url: URL,
  message: JSONRPCMessage,
  options?: Parameters<ReturnType<typeof rawHttpTransport>['send']>[1],
) {
  const transport = rawHttpTransport(url, { 'X-Team': 'a' });
  const messages: unknown[] = [];
  const errors: unknown[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = (e) => errors.push(e);
  await transport.start();
  cleanups.push(() => transport.close());
  const outcome = await transport.send(message, options).then(
    () => 'resolved',
    (error: unknown) => error,
  );
  return { outcome, messages, errors };
}

/** Header names and values as sent, lower-cased names, without Host and Connection. */
const headersOf = (raw: string[]) => {
  const out: [string, string][] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!['host', 'connection'].includes(raw[i]!.toLowerCase())) out.push([raw[i]!.toLowerCase(), raw[i + 1]!]);
  return out;
};

describe('RawHttpTransport: 2026-07-28 requests of the SDK Client', () => {
  it('POSTs with the SDK transport’s body-derived headers and hands the answer on as it came', async () => {
    const { url, seen } = await upstream((_body, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ANSWER)),
    );
    const { outcome, messages, errors } = await send(url, call('echo'));
    expect(outcome).toBe('resolved');
    expect(errors).toEqual([]);
    // Not copied by the SDK's schema: the upstream's member order is kept.
    expect(JSON.stringify(messages[0])).toBe(JSON.stringify(ANSWER));
    expect(seen[0]!.body).toEqual(call('echo'));
    expect(Object.fromEntries(headersOf(seen[0]!.raw))).toEqual({
      'x-team': 'a',
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': 'echo',
      'content-length': String(Buffer.byteLength(JSON.stringify(call('echo')))),
    });
  });

  it('goes the SDK’s way for a name it encodes, per-request headers, a 2025 envelope', async () => {
    const { url, seen } = await upstream((_body, res) =>
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(ANSWER)),
    );
    for (const [message, options] of [
      [call('é')],
      [call(' echo')],
      [call('echo'), { headers: { 'mcp-param-text': 'x' } }],
      [call('echo', '2025-11-25')],
    ] as const) {
      const { outcome, messages } = await send(url, message, options);
      expect(outcome).toBe('resolved');
      // The SDK's schema copied it (members in its order).
      expect(Object.keys(messages[0] as object)).toEqual(['jsonrpc', 'id', 'result']);
    }
    expect(headersOf(seen[0]!.raw)).toContainEqual(['mcp-name', `=?base64?${Buffer.from('é').toString('base64')}?=`]);
    expect(headersOf(seen[2]!.raw)).toContainEqual(['mcp-param-text', 'x']);
  });

  it('a 400 with the request’s JSON-RPC error is that error; another 400 fails the send', async () => {
    const error = { jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'bad' } };
    const mine = await upstream((_body, res) =>
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error)),
    );
    const a = await send(mine.url, call('echo'));
    expect(a.outcome).toBe('resolved');
    expect(a.messages).toEqual([error]);
    expect(a.errors).toEqual([]);
    const other = await upstream((_body, res) =>
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ ...error, id: 8 })),
    );
    const b = await send(other.url, call('echo'));
    expect(b.outcome).toBeInstanceOf(SdkHttpError);
    expect(b.messages).toEqual([]);
    expect(b.errors).toHaveLength(1);
  });

  it('the request’s signal closes its POST quietly (before it is sent: nothing is sent)', async () => {
    const { url, seen } = await upstream((_body, res) => res.writeHead(200, { 'content-type': 'text/event-stream' }));
    const stop = new AbortController();
    const pending = send(url, call('echo'), { requestSignal: stop.signal });
    for (let tries = 0; seen.length === 0 && tries < 200; tries++) await new Promise((r) => setTimeout(r, 10));
    stop.abort();
    const { outcome, errors } = await pending;
    expect(outcome).toBe('resolved');
    expect(errors).toEqual([]);
    for (let tries = 0; !seen[0]!.closed && tries < 200; tries++) await new Promise((r) => setTimeout(r, 10));
    expect(seen[0]!.closed).toBe(true);
    const before = await send(url, call('echo'), { requestSignal: AbortSignal.abort() });
    expect(before.outcome).toBe('resolved');
    expect(seen).toHaveLength(1);
  });

  it('an answer over MAX_RAW_ANSWER fails the call and closes the request', async () => {
    const { url, seen } = await upstream((_body, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      floodPast(res, MAX_RAW_ANSWER, ' ');
    });
    const { outcome } = await send(url, call('echo'));
    expect(outcome).toBeInstanceOf(SdkError);
    expect(String((outcome as Error).message)).toContain(`over ${MAX_RAW_ANSWER} bytes`);
    for (let tries = 0; !seen[0]!.closed && tries < 200; tries++) await new Promise((r) => setTimeout(r, 10));
    expect(seen[0]!.closed).toBe(true);
  });
});
