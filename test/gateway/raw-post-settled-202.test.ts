/**
 * A raw POST settled on a `202` head (upstream-raw-post.ts): its answer is closed unless it is complete once the
 * bytes that brought the head are read — on both clients (the own client on `http:`, node:http when a configured
 * header keeps the request on it, as on `https:`). A chunked body whose framing trickles on (a chunk extension,
 * trailers) holds no socket; a complete empty body (`Content-Length: 0`, or `0\r\n\r\n` with the head) keeps its
 * connection for the next call.
 */
import { describe, expect, it } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { rawCaller, rawTcpUpstream } from './fixtures/raw-tcp-upstream.js';

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
  const { url, open, connections } = await rawTcpUpstream(cleanups, (socket) => {
    socket.write(answer);
    if (drip === undefined) return;
    const trickle = setInterval(() => socket.write(drip), 50);
    socket.on('close', () => clearInterval(trickle));
    cleanups.push(() => clearInterval(trickle));
  });
  const { send } = await rawCaller(cleanups, url, headers);
  const settled: string[] = [];
  for (let i = 1; i <= 5; i++) {
    settled.push(await send(i));
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 300));
  return { settled, connections: connections(), held: open.size };
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
