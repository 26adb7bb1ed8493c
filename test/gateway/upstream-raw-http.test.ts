// The fast path's raw requests to a Streamable HTTP upstream (src/gateway/upstream-raw-http.ts): the
// headers the SDK's transport would send, the answer read as JSON or as an SSE stream however it is cut
// (CRLF, a CR at a chunk's end, events split anywhere, multi-line data, comments, other event names), every
// message handed to onmessage in order, and the SDK transport's failures: a non-2xx status, an unexpected
// content type, a stream that ends without the answer. Anything but a raw request goes through the SDK.
import { type IncomingMessage, type ServerResponse } from 'node:http';
import { SdkError, SdkHttpError, type JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { MAX_RAW_ANSWER, rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach, forwardHttp, loopbackServer } from '../harness.js';
import { floodPast } from './fixtures/raw-recorder.js';

const cleanups = cleanupsAfterEach();

async function upstream(
  answer: (req: IncomingMessage, body: Record<string, unknown>, res: ServerResponse) => void,
): Promise<{ url: URL; seen: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[] }> {
  const seen: { headers: IncomingMessage['headers']; body: Record<string, unknown> }[] = [];
  const url = await loopbackServer(
    cleanups,
    (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>;
        seen.push({ headers: req.headers, body });
        answer(req, body, res);
      });
    },
    '/mcp',
  );
  return { url, seen };
}

const RAW = { jsonrpc: '2.0', id: 'toolgate-raw:1', method: 'tools/call', params: { name: 'echo' } } as JSONRPCMessage;
const ANSWER = { jsonrpc: '2.0', id: 'toolgate-raw:1', result: { content: [{ type: 'text', text: 'é ok' }] } };
const PROGRESS = { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 't', progress: 1 } };

async function sent(url: URL, headers?: Record<string, string>) {
  const transport = rawHttpTransport(url, headers);
  const messages: unknown[] = [];
  const errors: unknown[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = (e) => errors.push(e);
  await transport.start();
  cleanups.push(() => transport.close());
  const outcome = await transport.send(RAW).then(
    () => 'resolved',
    (error: unknown) => error,
  );
  return { outcome, messages, errors };
}

/** `text` written in pieces of `size` bytes (a multi-byte character may be cut). */
function inPieces(res: ServerResponse, text: string, size: number): void {
  const bytes = Buffer.from(text);
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  let at = 0;
  const next = (): void => {
    if (at >= bytes.length) return void res.end();
    res.write(bytes.subarray(at, at + size));
    at += size;
    setTimeout(next, 1);
  };
  next();
}

describe('RawHttpTransport: the fast path’s requests to an HTTP upstream', () => {
  it('sends the SDK transport’s headers and reads an SSE answer however it is cut', async () => {
    const stream =
      `: keepalive\r\n\r\nevent: message\r\ndata: ${JSON.stringify(PROGRESS)}\r\n\r\n` +
      `event: other\ndata: {"ignored":true}\n\nid: 7\nretry: 10\ndata: \n\n` +
      `data: ${JSON.stringify(ANSWER).slice(0, 17)}\ndata:${JSON.stringify(ANSWER).slice(17)}\r\n\r\n`;
    for (const size of [1, 2, 3, 7, 64, 10_000]) {
      const { url, seen } = await upstream((_req, _body, res) => inPieces(res, stream, size));
      const { outcome, messages } = await sent(url, { 'x-team': 'a', Accept: 'application/json' });
      expect(outcome, `pieces of ${size}`).toBe('resolved');
      // Multi-line data joins with a newline, which JSON reads as whitespace only where the cut fell
      // outside a string: the cut above falls between tokens.
      expect(messages, `pieces of ${size}`).toEqual([PROGRESS, ANSWER]);
      expect(seen[0]!.headers['x-team']).toBe('a');
      expect(seen[0]!.headers['accept']).toBe('application/json, text/event-stream');
      expect(seen[0]!.headers['content-type']).toBe('application/json');
      expect(seen[0]!.body).toEqual(RAW);
    }
  });

  it('reads a JSON answer (one message or several)', async () => {
    const { url } = await upstream((_req, _body, res) =>
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8' }).end(JSON.stringify([PROGRESS, ANSWER])),
    );
    const { outcome, messages } = await sent(url);
    expect(outcome).toBe('resolved');
    expect(messages).toEqual([PROGRESS, ANSWER]);
  });

  it('fails as the SDK transport does: a status, a content type, an answer stream without the answer', async () => {
    const gone = await upstream((_req, _body, res) =>
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":"Session not found"}'),
    );
    const a = await sent(gone.url);
    expect(a.outcome).toBeInstanceOf(SdkHttpError);
    expect(String((a.outcome as Error).message)).toBe('Error POSTing to endpoint: {"error":"Session not found"}');
    expect(a.errors).toHaveLength(1);
    expect(gone.seen).toHaveLength(1);
    const odd = await upstream((_req, _body, res) => res.writeHead(200, { 'content-type': 'text/plain' }).end('hi'));
    expect(String(((await sent(odd.url)).outcome as Error).message)).toContain('Unexpected content type: text/plain');
    const short = await upstream((_req, _body, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end(`data: ${JSON.stringify(PROGRESS)}\n\n`),
    );
    const c = await sent(short.url);
    expect(c.outcome).toBeInstanceOf(SdkError);
    expect(String((c.outcome as Error).message)).toContain('outcome is unknown');
    expect(c.messages).toEqual([PROGRESS]);
  });

  it('resumes a resumable stream closed before its answer (GET Last-Event-ID); the call is POSTed once', async () => {
    const gets: (string | undefined)[] = [];
    const { url, seen } = await upstream((_req, _body, res) =>
      res.writeHead(200, { 'content-type': 'text/event-stream' }).end('id: e1\nretry: 20\ndata: \n\n'),
    );
    // The same server answers the GET (no body): wrap its handler.
    const server = await loopbackServer(
      cleanups,
      (req, res) => {
        if (req.method === 'GET') {
          gets.push(req.headers['last-event-id'] as string | undefined);
          res
            .writeHead(200, { 'content-type': 'text/event-stream' })
            .end(`id: e2\ndata: ${JSON.stringify(ANSWER)}\n\n`);
          return;
        }
        forwardHttp(new URL(url), req, res);
      },
      '/mcp',
    );
    const transport = rawHttpTransport(server);
    const messages: unknown[] = [];
    transport.onmessage = (m) => messages.push(m);
    await transport.start();
    cleanups.push(() => transport.close());
    await transport.send(RAW);
    for (let tries = 0; messages.length === 0 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 20));
    expect(messages).toEqual([ANSWER]);
    expect(gets).toEqual(['e1']);
    expect(seen).toHaveLength(1);
  });

  it('a message that is not JSON-RPC is an error of the transport; the stream goes on', async () => {
    const { url } = await upstream((_req, _body, res) =>
      res
        .writeHead(200, { 'content-type': 'text/event-stream' })
        .end(`data: {"not":"rpc"}\n\ndata: not json\n\ndata: ${JSON.stringify(ANSWER)}\n\n`),
    );
    const { outcome, messages, errors } = await sent(url);
    expect(outcome).toBe('resolved');
    expect(messages).toEqual([ANSWER]);
    expect(errors).toHaveLength(2);
  });

  it('an answer over MAX_RAW_ANSWER (one endless SSE line, or a JSON body) fails the call and closes the request', async () => {
    for (const type of ['text/event-stream', 'application/json']) {
      let closed = false;
      const { url } = await upstream((_req, _body, res) => {
        res.on('close', () => (closed = true));
        res.writeHead(200, { 'content-type': type });
        if (type === 'text/event-stream') res.write('data: ');
        floodPast(res, MAX_RAW_ANSWER, type === 'application/json' ? ' ' : 'x');
      });
      const { outcome, errors } = await sent(url);
      expect(outcome, type).toBeInstanceOf(SdkError);
      expect(String((outcome as Error).message), type).toContain(`over ${MAX_RAW_ANSWER} bytes`);
      expect(errors, type).toHaveLength(1);
      for (let tries = 0; !closed && tries < 100; tries++) await new Promise((r) => setTimeout(r, 10));
      expect(closed, type).toBe(true);
    }
  });

  it('a raw request the gateway stops (notifications/cancelled naming it) has its POST closed, quietly', async () => {
    let closed = false;
    const cancels: unknown[] = [];
    const { url } = await upstream((_req, body, res) => {
      if (body['method'] === 'notifications/cancelled') {
        cancels.push(body);
        return void res.writeHead(202).end();
      }
      res.on('close', () => (closed = true));
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify(PROGRESS)}\n\n`); // and never the answer
    });
    const transport = rawHttpTransport(url);
    const messages: unknown[] = [];
    const errors: unknown[] = [];
    transport.onmessage = (m) => messages.push(m);
    transport.onerror = (e) => errors.push(e);
    await transport.start();
    cleanups.push(() => transport.close());
    const posted = transport.send(RAW).then(
      () => 'resolved',
      (error: unknown) => error,
    );
    for (let tries = 0; messages.length === 0 && tries < 100; tries++) await new Promise((r) => setTimeout(r, 10));
    const cancel = {
      jsonrpc: '2.0',
      method: 'notifications/cancelled',
      params: { requestId: 'toolgate-raw:1', reason: 'timed out' },
    } as JSONRPCMessage;
    await transport.send(cancel);
    expect(await posted).toBe('resolved');
    for (let tries = 0; !closed && tries < 100; tries++) await new Promise((r) => setTimeout(r, 10));
    expect(closed).toBe(true);
    expect(cancels).toEqual([cancel]);
    expect(messages).toEqual([PROGRESS]);
    expect(errors).toEqual([]);
  });
});
