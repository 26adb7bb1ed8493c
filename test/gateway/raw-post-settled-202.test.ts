/**
 * A raw POST settled on a `202` head (upstream-raw-post.ts): its answer is closed unless it is complete once the
 * bytes that brought the head are read — on both clients (the own client on `http:`, node:http when a configured
 * header keeps the request on it, as on `https:`). A chunked body whose framing trickles on (a chunk extension,
 * trailers) holds no socket; a complete empty body (`Content-Length: 0`, or `0\r\n\r\n` with the head) keeps its
 * connection for the next call.
 */
import { createServer, type Socket } from 'node:net';
import type { JSONRPCMessage } from '@modelcontextprotocol/client';
import { describe, expect, it } from 'vitest';
import { rawHttpTransport } from '../../src/gateway/upstream-raw-http.js';
import { cleanupsAfterEach } from '../harness.js';

const cleanups = cleanupsAfterEach();

const clients = [
  ['the own client', undefined],
  ['node:http', { 'proxy-connection': 'keep-alive' }],
] as const;

/** Five raw calls to an upstream answering each with `answer` (then `drip` every 50 ms): connections made, held. */
async function fiveCalls(
  headers: Readonly<Record<string, string>> | undefined,
  answer: string,
  drip: string | undefined,
): Promise<{ settled: string[]; connections: number; held: number }> {
  const open = new Set<Socket>();
  let connections = 0;
  const server = createServer((socket) => {
    connections++;
    open.add(socket);
    socket.on('close', () => open.delete(socket));
    socket.on('error', () => {});
    let held = '';
    socket.on('data', (chunk: Buffer) => {
      held += chunk.toString('latin1');
      // The request's head and its body (a Content-Length's worth after the head).
      const at = held.indexOf('\r\n\r\n');
      const length = Number(/content-length: (\d+)/i.exec(held)?.[1] ?? 0);
      if (at === -1 || held.length < at + 4 + length) return;
      held = held.slice(at + 4 + length);
      socket.write(answer);
      if (drip === undefined) return;
      const trickle = setInterval(() => socket.write(drip), 50);
      socket.on('close', () => clearInterval(trickle));
      cleanups.push(() => clearInterval(trickle));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanups.push(() => {
    for (const socket of open) socket.destroy();
    return new Promise<void>((r) => server.close(() => r()));
  });
  const port = (server.address() as { port: number }).port;
  const transport = rawHttpTransport(new URL(`http://127.0.0.1:${port}/mcp`), headers);
  transport.onerror = () => {};
  await transport.start();
  cleanups.push(() => transport.close());
  const settled: string[] = [];
  for (let i = 1; i <= 5; i++) {
    const message = { jsonrpc: '2.0', id: `toolgate-raw:${i}`, method: 'tools/call', params: { name: 'echo' } };
    settled.push(
      await transport.send(message as JSONRPCMessage).then(
        () => 'resolved',
        (error: unknown) => (error as Error).message,
      ),
    );
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 300));
  return { settled, connections, held: open.size };
}

const resolved = ['resolved', 'resolved', 'resolved', 'resolved', 'resolved'];

describe('a raw POST settled on a 202', () => {
  it.each(clients)('%s: a chunk extension trickled after the head holds no socket', async (_, headers) => {
    const got = await fiveCalls(headers, 'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0;x=', 'a');
    expect(got.settled).toEqual(resolved);
    expect(got.held).toBeLessThanOrEqual(1);
  });

  it.each(clients)('%s: trailers trickled after the last chunk hold no socket', async (_, headers) => {
    const got = await fiveCalls(
      headers,
      'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n',
      'x: y\r\n',
    );
    expect(got.settled).toEqual(resolved);
    expect(got.held).toBeLessThanOrEqual(1);
  });

  it.each(clients)('%s: a complete empty chunked body keeps its connection', async (_, headers) => {
    const got = await fiveCalls(
      headers,
      'HTTP/1.1 202 Accepted\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n',
      undefined,
    );
    expect(got.settled).toEqual(resolved);
    expect(got.connections).toBe(1);
  });

  it.each(clients)('%s: Content-Length: 0 keeps its connection', async (_, headers) => {
    const got = await fiveCalls(headers, 'HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n', undefined);
    expect(got.settled).toEqual(resolved);
    expect(got.connections).toBe(1);
  });
});
