// A malicious or odd HTTP upstream against the fast path's raw requests (upstream-raw-http.ts): each answer
// stream is read by RawHttpTransport and by the SDK's own StreamableHTTPClientTransport; both must hand on
// the same messages (the SDK reads the stream through TextDecoderStream, which drops a leading BOM, and
// eventsource-parser, which ignores an `id` holding NUL). The cases that held from the start are kept:
// an answer under another id, an event after the answer, CR line ends, an unfinished last event.
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StreamableHTTPClientTransport, type JSONRPCMessage, type Transport } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach();

const RAW = { jsonrpc: '2.0', id: 'toolgate-raw:1', method: 'tools/call', params: { name: 'echo' } } as JSONRPCMessage;
const ANSWER = { jsonrpc: '2.0', id: 'toolgate-raw:1', result: { content: [{ type: 'text', text: 'ok' }] } };

async function upstream(
  stream: string,
  type: string | string[] = 'text/event-stream',
): Promise<{ url: URL; gets: (string | undefined)[] }> {
  const gets: (string | undefined)[] = [];
  const server = createServer((req, res: ServerResponse) => {
    if (req.method === 'GET') {
      gets.push(req.headers['last-event-id'] as string | undefined);
      return void res
        .writeHead(200, { 'content-type': 'text/event-stream' })
        .end(`data: ${JSON.stringify(ANSWER)}\n\n`);
    }
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': type }).end(stream));
  });
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  cleanups.push(() => new Promise<void>((done) => (server.closeAllConnections(), server.close(() => done()))));
  return { url: new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`), gets };
}

async function read(transport: Transport): Promise<unknown[]> {
  const messages: unknown[] = [];
  transport.onmessage = (m) => messages.push(m);
  transport.onerror = () => undefined;
  await transport.start();
  cleanups.push(() => transport.close());
  await transport.send(RAW).catch(() => undefined);
  await new Promise((resolve) => setTimeout(resolve, 300));
  return messages;
}

describe('an HTTP upstream’s odd answer streams: the raw reader hands on what the SDK’s does', () => {
  const STREAMS: readonly [string, string, (string | string[])?][] = [
    // Two Content-Types: the SDK's web Headers join them (no media type: refused), Node keeps the first.
    ['two Content-Types', JSON.stringify(ANSWER), ['application/json', 'text/event-stream']],
    // A JSON answer: the SDK reads it with Response.json(), whose UTF-8 decode drops a BOM.
    ['a JSON answer after a BOM', `\uFEFF${JSON.stringify(ANSWER)}`, 'application/json'],
    ['the answer without its blank line', `data: ${JSON.stringify(ANSWER)}\n`],
    ['the answer without its newline', `data: ${JSON.stringify(ANSWER)}`],
    ['CR line ends', `event: message\rdata: ${JSON.stringify(ANSWER)}\r\r`],
    ['an event named Message', `event: Message\ndata: ${JSON.stringify(ANSWER)}\n\n`],
    ['a data line with two spaces', `data:  ${JSON.stringify(ANSWER)}\n\n`],
    [
      'an answer under an id not asked, then the stream ends',
      `data: ${JSON.stringify({ ...ANSWER, id: 'toolgate-raw:9' })}\n\n`,
    ],
    [
      'an event after the answer',
      `data: ${JSON.stringify(ANSWER)}\n\ndata: ${JSON.stringify({ ...ANSWER, id: 7 })}\n\n`,
    ],
    ['a BOM before the answer', `\uFEFFdata: ${JSON.stringify(ANSWER)}\n\n`],
    ['a NUL in an event id, then the stream closes (resumed)', 'id: a\0b\nretry: 10\ndata: \n\n'],
  ];
  for (const [name, stream, type] of STREAMS)
    it(name, async () => {
      const raw = await upstream(stream, type);
      const sdk = await upstream(stream, type);
      const viaRaw = await read(rawHttpTransport(raw.url));
      const viaSdk = await read(new StreamableHTTPClientTransport(sdk.url));
      expect({ messages: viaRaw, gets: raw.gets }, name).toEqual({ messages: viaSdk, gets: sdk.gets });
    });
});
